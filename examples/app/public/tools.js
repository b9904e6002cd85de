// Northstar's developer tools: the three tool groups the page registers
// through `devtoolstooldiscovery` (app-debug, sales-dashboard, shop).
//
// Loaded by index.html right after app.js, and built only on what app.js
// exposes (window.app, window.store, window.apiCache): every tool runs the
// same code as the UI, so it sees what a user sees, planted bugs included.
(function () {
  'use strict';

  var app = window.app;
  var store = window.store;
  var apiCache = window.apiCache;
  var ready = app.ready;
  var STAGES = app.stages;
  var DB_TABLES = app.dbTables;
  var flagDetails = app.featureFlags;
  var setFlagOverride = app.setFeatureFlagOverride;
  var loadPipeline = app.loadPipeline;
  var reassignLead = app.reassignLead;
  var loadProducts = app.loadProducts;
  var addToCart = app.addToCart;
  var checkout = app.checkout;

  // Every tool waits for the session to load, then runs the same code as
  // the UI. Results are plain objects and arrays (no Map, no Date).
  function whenReady(fn) {
    return function (args) {
      return ready.then(function () { return fn(args || {}); });
    };
  }

  function plain(value) {
    return value === undefined ? null : JSON.parse(JSON.stringify(value));
  }

  function valueAtPath(root, path) {
    if (path === undefined || path === '') return root;
    var parts = path.split('.');
    var cur = root;
    for (var i = 0; i < parts.length; i++) {
      var key = parts[i];
      if (cur === null || typeof cur !== 'object' || !Object.prototype.hasOwnProperty.call(cur, key)) {
        var where = i ? '"' + parts.slice(0, i).join('.') + '"' : 'the state';
        var detail;
        if (cur === null || typeof cur !== 'object') {
          detail = where + ' is ' + (cur === null ? 'null' : 'a ' + typeof cur);
        } else {
          var keys = Object.keys(cur);
          detail = where + ' has no key "' + key + '"' + (keys.length
            ? ' (keys: ' + keys.slice(0, 20).join(', ') + (keys.length > 20 ? ', ...' : '') + ')'
            : ' (it is empty)');
        }
        throw new Error('No value at path "' + path + '": ' + detail);
      }
      cur = cur[key];
    }
    return cur;
  }

  var stateTools = {
    name: 'app-debug',
    description: 'Northstar internals for debugging: the API cache service, the global store, feature flags, and read-only database rows.',
    tools: [
      {
        name: 'getCacheStatistics',
        description: 'Statistics of the front-end API cache service that loads the sales pipeline and the product list: ' +
          'total hits and misses, hit rate, number of cached entries and bytes, invalidations, and for each URL key ' +
          'its hits, misses, size in bytes, whether it is cached now and when it was last fetched; plus the last 30 ' +
          'cache events (hit, miss, update, invalidate, invalidate-all). Reading it does not change it.',
        inputSchema: { type: 'object', properties: {}, additionalProperties: false },
        execute: whenReady(function () { return apiCache.statistics(); }),
      },
      {
        name: 'getGlobalState',
        description: 'Reads the app\'s global store (the same object as window.store.getState()). Without a path it returns ' +
          'the whole state: auth.user, cart.items (productId, name, qty, price in dollars) and cart.badgeCount (the number ' +
          'on the cart icon), flags, ui, dashboard, orders.last (the last order as the checkout panel computed it). With a ' +
          'dotted path such as "cart.items" or "cart.items.0.qty" it returns the value there, and fails with the keys ' +
          'available when the path does not exist.',
        inputSchema: {
          type: 'object',
          properties: {
            path: {
              type: 'string',
              pattern: '^[A-Za-z_$][\\w$]*(\\.[\\w$]+)*$',
              description: 'Dotted path into the state, e.g. "auth.user", "cart.items", "orders.last.totalCents". Array elements by index: "cart.items.0". Omit for the whole state.',
            },
          },
          additionalProperties: false,
        },
        execute: whenReady(function (args) { return plain(valueAtPath(store.getState(), args.path)); }),
      },
      {
        name: 'getFeatureFlags',
        description: 'The feature flags of this session (new-ui-enabled, beta-search-v2, experiment-group, log-level), ' +
          'each with its effective value and where that value comes from: "server" (chosen by the server for this user), ' +
          '"default" (the same for everyone) or "user" (overridden in this browser session), plus the server\'s value and a description.',
        inputSchema: { type: 'object', properties: {}, additionalProperties: false },
        execute: whenReady(function () {
          var user = store.getState().auth.user;
          return { sessionId: store.getState().auth.sessionId, userId: user && user.id, flags: flagDetails() };
        }),
      },
      {
        name: 'setFeatureFlagOverride',
        description: 'Overrides one feature flag for this browser session only (the server is not told), e.g. log-level ' +
          '"debug" to log every cache event to the console. Pass value null to drop the override. Returns the flag as getFeatureFlags shows it.',
        inputSchema: {
          type: 'object',
          properties: {
            name: { type: 'string', enum: ['beta-search-v2', 'experiment-group', 'log-level', 'new-ui-enabled'], description: 'Flag name.' },
            value: { type: ['boolean', 'string', 'null'], description: 'true/false for boolean flags, a string for the others, null to clear.' },
          },
          required: ['name', 'value'],
          additionalProperties: false,
        },
        execute: whenReady(function (args) { return setFlagOverride(args.name, args.value); }),
      },
      {
        name: 'queryDatabaseTable',
        description: 'Reads rows from the app\'s database through the read-only debug endpoint GET /api/debug/db-inspect, ' +
          'in primary-key order (afterId: only rows whose id is above it). Money columns are integer cents (orders: subtotal_cents, shipping_cents, tax_cents, ' +
          'total_cents). users is shown without password hashes. Returns {table, columns, rows}; fails with the server\'s message for a bad request.',
        inputSchema: {
          type: 'object',
          properties: {
            tableName: { type: 'string', enum: DB_TABLES, description: 'Table to read; only these tables are exposed.' },
            limit: { type: 'integer', minimum: 1, maximum: 100, default: 5, description: 'How many rows, from the lowest primary key (above afterId if given; default 5, at most 100).' },
            afterId: { type: 'integer', minimum: 0, maximum: 999999999, description: 'Only rows whose id is above this one (every table but feature_flags, which is ordered by name).' },
          },
          required: ['tableName'],
          additionalProperties: false,
        },
        execute: whenReady(function (args) {
          var limit = args.limit === undefined ? 5 : args.limit;
          var url = '/api/debug/db-inspect?table=' + encodeURIComponent(args.tableName) + '&limit=' + encodeURIComponent(limit) +
            (args.afterId === undefined ? '' : '&after=' + encodeURIComponent(args.afterId));
          return fetch(url, { headers: { Accept: 'application/json' } }).then(function (res) {
            return res.json().then(null, function () {
              throw new Error('db-inspect answered HTTP ' + res.status + ' with a body that is not JSON');
            }).then(function (body) {
              if (!res.ok) throw new Error('db-inspect refused the request (HTTP ' + res.status + '): ' + (body && body.error));
              return { table: body.table, columns: body.columns, rows: body.rows };
            });
          });
        }),
      },
    ],
  };

  var dashboardTools = {
    name: 'sales-dashboard',
    description: 'The sales pipeline screen: leads by stage and the reps who own them.',
    tools: [
      {
        name: 'getPipeline',
        description: 'The leads on the pipeline screen (id, company, stage, valueCents, repId, repName) and the reps ' +
          '(id, name, region), loaded through the API cache like the screen does (so it counts cache hits).',
        inputSchema: {
          type: 'object',
          properties: { stage: { type: 'string', enum: STAGES, description: 'Only leads in this stage.' } },
          additionalProperties: false,
        },
        execute: whenReady(function (args) {
          return loadPipeline().then(function (p) {
            return plain({
              reps: p.reps.map(function (r) { return { id: r.id, name: r.name, region: r.region }; }),
              leads: p.leads.filter(function (l) { return !args.stage || l.stage === args.stage; }),
            });
          });
        }),
      },
      {
        name: 'reassignLead',
        description: 'Moves a lead to another sales rep, exactly as choosing a rep in the lead\'s row does ' +
          '(POST /api/leads/<id>/assign, then the screen refreshes). Returns the updated lead.',
        inputSchema: {
          type: 'object',
          definitions: {
            leadId: { type: 'integer', minimum: 1, description: 'Lead id, the # column of the pipeline (101-120 in the seed data).' },
            repId: { type: 'integer', minimum: 1, description: 'Rep id (1-6 in the seed data); see getPipeline.' },
          },
          properties: {
            leadId: { $ref: '#/definitions/leadId' },
            repId: { $ref: '#/definitions/repId' },
          },
          required: ['leadId', 'repId'],
          additionalProperties: false,
        },
        execute: whenReady(function (args) { return reassignLead(args.leadId, args.repId).then(plain); }),
      },
    ],
  };

  var shopTools = {
    name: 'shop',
    description: 'The shop screen: products, the cart and checkout.',
    tools: [
      {
        name: 'listProducts',
        description: 'The products in the shop (id, sku, name, priceCents, stock), through the API cache.',
        inputSchema: { type: 'object', properties: {}, additionalProperties: false },
        execute: whenReady(function () { return loadProducts().then(plain); }),
      },
      {
        name: 'addToCart',
        description: 'Adds a product to the cart as the "Add to cart" button does; adding a product already in the cart ' +
          'raises its quantity. Returns the cart: items (productId, name, qty, price in dollars) and badgeCount, the number shown on the cart icon.',
        inputSchema: {
          type: 'object',
          definitions: {
            productId: { type: 'integer', minimum: 1, description: 'Product id (1-8 in the seed data); see listProducts.' },
            quantity: { type: 'integer', minimum: 1, maximum: 99, description: 'How many to add (default 1).' },
          },
          properties: {
            productId: { $ref: '#/definitions/productId' },
            qty: { $ref: '#/definitions/quantity' },
          },
          required: ['productId'],
          additionalProperties: false,
        },
        execute: whenReady(function (args) { return plain(addToCart(args.productId, args.qty)); }),
      },
      {
        name: 'clearCart',
        description: 'Empties the cart. Returns the empty cart.',
        inputSchema: { type: 'object', properties: {}, additionalProperties: false },
        execute: whenReady(function () {
          store.dispatch({ type: 'cart/clear' });
          return plain(store.getState().cart);
        }),
      },
      {
        name: 'checkout',
        description: 'Places the order for the current cart, as the Checkout button does (POST /api/orders), and ' +
          'returns it as the checkout panel shows it: orderId, items, and subtotal, tax (8% of goods), shipping ' +
          '(5.99 under 75.00, else free) and total, each in cents (subtotalCents...) and in dollars. Empties the cart.',
        inputSchema: { type: 'object', properties: {}, additionalProperties: false },
        execute: whenReady(function () { return checkout().then(plain); }),
      },
    ],
  };

  // Registered as soon as this script has run (before app.js boots, which
  // waits for DOMContentLoaded), so discovery finds the tools at once; each
  // tool waits for `ready` itself.
  window.addEventListener('devtoolstooldiscovery', function (event) {
    event.respondWith(stateTools);
    event.respondWith(dashboardTools);
    event.respondWith(shopTools);
  });
})();
