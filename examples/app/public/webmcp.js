// Northstar's WebMCP tool (issue 14): the same app also registers a tool
// through the WebMCP page API, beside its devtoolstooldiscovery groups, so
// an agent (or devtools_tools with dt.launch{webmcp = true}) sees both kinds.
//
// The API is document.modelContext in Chromium 156 (behind
// --enable-features=WebMCP); other builds put it on navigator.modelContext.
// Without either, nothing is registered. Loaded with `defer`, after app.js.
(function () {
  'use strict';
  var mc = document.modelContext || navigator.modelContext;
  if (!mc || typeof mc.registerTool !== 'function' || !window.app) return;

  mc.registerTool({
    name: 'searchProducts',
    description: 'Searches the shop\'s products by name or SKU (case-insensitive substring) and returns at most ' +
      'limit matches as {products: [{id, sku, name, priceCents, stock}], total}. Read-only: it goes through ' +
      'the front-end API cache like the shop screen does.',
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 1, maxLength: 100, description: 'Text to look for in the name or SKU.' },
        limit: { type: 'integer', minimum: 1, maximum: 50, description: 'Most matches to return (default 10).' },
      },
      required: ['query'],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true },
    execute: function (input) {
      var q = String(input.query).toLowerCase();
      var limit = input.limit || 10;
      return window.app.ready.then(function () {
        return window.apiCache.get('/api/products');
      }).then(function (res) {
        var hits = res.products.filter(function (p) {
          return p.name.toLowerCase().indexOf(q) >= 0 || p.sku.toLowerCase().indexOf(q) >= 0;
        });
        return JSON.stringify({
          total: hits.length,
          products: hits.slice(0, limit).map(function (p) {
            return { id: p.id, sku: p.sku, name: p.name, priceCents: p.priceCents, stock: p.stock };
          }),
        });
      });
    },
  }).catch(function (err) {
    console.warn('[northstar] WebMCP registration failed:', err && err.message);
  });
})();
