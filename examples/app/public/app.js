// Northstar sample app (issue 5): a sales dashboard and a shop on one page.
// The developer tools the page exposes through `devtoolstooldiscovery` are
// in tools.js, loaded right after this file, on what it exposes below.
//
// Plain script, no build step, no external URLs. Globals on purpose, as a
// debugging aid: window.apiCache, window.store, window.app.
//
// Two bugs are planted here for the demo workflows (README.md lists them):
// reassigning a lead throws the whole API cache away, and the cart badge
// counts line items instead of quantities.
(function () {
  'use strict';

  var STAGES = ['new', 'contacted', 'qualified', 'proposal', 'negotiation', 'won', 'lost'];
  var OPEN_STAGES = ['new', 'contacted', 'qualified', 'proposal', 'negotiation'];
  var DB_TABLES = ['feature_flags', 'leads', 'order_items', 'orders', 'products', 'reps', 'support_tickets', 'users'];
  // Shop terms, as printed on the checkout panel: tax on the goods, flat
  // shipping under the free-shipping threshold.
  var TAX_PERCENT = 8;
  var SHIPPING_CENTS = 599;
  var FREE_SHIPPING_FROM_CENTS = 7500;

  // ---------------------------------------------------------------- logging

  var LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };
  var log = {};
  ['debug', 'info', 'warn', 'error'].forEach(function (level) {
    log[level] = function () {
      var wanted = (store && store.getState().flags['log-level']) || 'warn';
      if (LEVELS[level] >= (LEVELS[wanted] || LEVELS.warn)) {
        var args = ['[northstar]'].concat(Array.prototype.slice.call(arguments));
        console[level].apply(console, args);
      }
    };
  });

  // -------------------------------------------------------------- HTTP JSON

  function requestJson(method, url, body) {
    var init = { method: method, headers: { Accept: 'application/json' } };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    return fetch(url, init).then(function (res) {
      return res.text().then(function (text) {
        var data = null;
        try {
          data = text ? JSON.parse(text) : null;
        } catch (e) {
          throw new Error(method + ' ' + url + ' answered HTTP ' + res.status + ' with a body that is not JSON');
        }
        if (!res.ok) {
          var err = new Error((data && data.error) || ('HTTP ' + res.status));
          err.status = res.status;
          throw err;
        }
        return { data: data, size: text.length };
      });
    });
  }

  var api = {
    get: function (url) { return requestJson('GET', url).then(function (r) { return r.data; }); },
    post: function (url, body) { return requestJson('POST', url, body).then(function (r) { return r.data; }); },
  };

  // -------------------------------------------------------- API cache service

  // Caches GET responses by URL. Statistics per key survive invalidation, so
  // a refetch shows up as a new miss on the same key.
  function createApiCache() {
    var entries = new Map();   // key -> { value, size, fetchedAt }
    var inflight = new Map();  // key -> Promise
    var keyStats = new Map();  // key -> { hits, misses, lastFetched, size }
    var totals = { hits: 0, misses: 0, invalidations: 0, entriesDropped: 0 };
    var recent = [];           // last 30 events, oldest first
    var lastInvalidation = null;

    function statsFor(key) {
      var s = keyStats.get(key);
      if (!s) {
        s = { hits: 0, misses: 0, lastFetched: null, size: 0 };
        keyStats.set(key, s);
      }
      return s;
    }

    function note(kind, key) {
      recent.push({ kind: kind, key: key, at: new Date().toISOString() });
      if (recent.length > 30) recent.shift();
      log.debug('cache', kind, key);
    }

    function get(key) {
      var s = statsFor(key);
      if (entries.has(key)) {
        totals.hits++;
        s.hits++;
        note('hit', key);
        return Promise.resolve(entries.get(key).value);
      }
      if (inflight.has(key)) {
        // Joining a request already on the wire costs no fetch: a hit.
        totals.hits++;
        s.hits++;
        note('hit', key);
        return inflight.get(key);
      }
      totals.misses++;
      s.misses++;
      note('miss', key);
      var p = requestJson('GET', key).then(function (r) {
        inflight.delete(key);
        var now = Date.now();
        entries.set(key, { value: r.data, size: r.size, fetchedAt: now });
        s.lastFetched = now;
        s.size = r.size;
        return r.data;
      }, function (err) {
        inflight.delete(key);
        throw err;
      });
      inflight.set(key, p);
      return p;
    }

    // Replaces one entry in place (no fetch).
    function update(key, fn) {
      var e = entries.get(key);
      if (!e) return false;
      e.value = fn(e.value);
      e.size = JSON.stringify(e.value).length;
      statsFor(key).size = e.size;
      note('update', key);
      return true;
    }

    function invalidate(key) {
      var had = entries.delete(key);
      totals.invalidations++;
      if (had) totals.entriesDropped++;
      lastInvalidation = { scope: key, entriesDropped: had ? 1 : 0, at: new Date().toISOString() };
      note('invalidate', key);
      return had;
    }

    function invalidateAll() {
      var n = entries.size;
      entries.clear();
      totals.invalidations++;
      totals.entriesDropped += n;
      lastInvalidation = { scope: '*', entriesDropped: n, at: new Date().toISOString() };
      note('invalidate-all', '*');
      return n;
    }

    function statistics() {
      var lookups = totals.hits + totals.misses;
      var bytes = 0;
      entries.forEach(function (e) { bytes += e.size; });
      var keys = [];
      keyStats.forEach(function (s, key) {
        keys.push({
          key: key,
          cached: entries.has(key),
          hits: s.hits,
          misses: s.misses,
          size: s.size,
          lastFetched: s.lastFetched === null ? null : new Date(s.lastFetched).toISOString(),
        });
      });
      keys.sort(function (a, b) { return a.key < b.key ? -1 : a.key > b.key ? 1 : 0; });
      return {
        hits: totals.hits,
        misses: totals.misses,
        hitRate: lookups ? Math.round(totals.hits / lookups * 1000) / 1000 : 0,
        entries: entries.size,
        bytes: bytes,
        invalidations: totals.invalidations,
        entriesDropped: totals.entriesDropped,
        lastInvalidation: lastInvalidation && Object.assign({}, lastInvalidation),
        keys: keys,
        recentEvents: recent.map(function (e) { return Object.assign({}, e); }),
      };
    }

    return {
      get: get,
      update: update,
      invalidate: invalidate,
      invalidateAll: invalidateAll,
      statistics: statistics,
      has: function (key) { return entries.has(key); },
    };
  }

  var apiCache = createApiCache();

  // ------------------------------------------------------------------ store

  function cartBadgeCount(items) {
    // Planted bug (README.md): counts line items, not the quantities in them.
    return items.length;
  }

  function initialState() {
    return {
      auth: { user: null, sessionId: null },
      cart: { items: [], badgeCount: 0 },
      flags: {},
      ui: { route: 'dashboard', search: '', busy: false, error: null },
      dashboard: { reps: 0, leads: 0, lastReassign: null },
      orders: { last: null, placedThisSession: 0 },
    };
  }

  function withCart(state, items) {
    return Object.assign({}, state, { cart: { items: items, badgeCount: cartBadgeCount(items) } });
  }

  function reducer(state, action) {
    switch (action.type) {
      case 'session/loaded':
        return Object.assign({}, state, {
          auth: { user: action.user, sessionId: action.sessionId },
          flags: action.flags,
        });
      case 'flags/changed':
        return Object.assign({}, state, { flags: action.flags });
      case 'cart/add': {
        var found = false;
        var items = state.cart.items.map(function (it) {
          if (it.productId !== action.item.productId) return it;
          found = true;
          return Object.assign({}, it, { qty: Math.min(99, it.qty + action.item.qty) });
        });
        if (!found) items = items.concat([action.item]);
        return withCart(state, items);
      }
      case 'cart/remove':
        return withCart(state, state.cart.items.filter(function (it) { return it.productId !== action.productId; }));
      case 'cart/clear':
        return withCart(state, []);
      case 'order/placed':
        return Object.assign(withCart(state, []), {
          orders: { last: action.order, placedThisSession: state.orders.placedThisSession + 1 },
        });
      case 'ui/route':
        return Object.assign({}, state, { ui: Object.assign({}, state.ui, { route: action.route }) });
      case 'ui/search':
        return Object.assign({}, state, { ui: Object.assign({}, state.ui, { search: action.search }) });
      case 'ui/busy':
        return Object.assign({}, state, { ui: Object.assign({}, state.ui, { busy: action.busy }) });
      case 'ui/error':
        return Object.assign({}, state, { ui: Object.assign({}, state.ui, { error: action.error }) });
      case 'dashboard/loaded':
        return Object.assign({}, state, {
          dashboard: Object.assign({}, state.dashboard, { reps: action.reps, leads: action.leads }),
        });
      case 'dashboard/reassigned':
        return Object.assign({}, state, {
          dashboard: Object.assign({}, state.dashboard, { lastReassign: action.change }),
        });
      default:
        return state;
    }
  }

  function createStore(reduce, state) {
    var listeners = [];
    return {
      getState: function () { return state; },
      dispatch: function (action) {
        if (!action || typeof action.type !== 'string') throw new Error('dispatch: action.type must be a string');
        state = reduce(state, action);
        listeners.slice().forEach(function (fn) { fn(state, action); });
        return action;
      },
      subscribe: function (fn) {
        listeners.push(fn);
        return function () { listeners = listeners.filter(function (f) { return f !== fn; }); };
      },
    };
  }

  var store = createStore(reducer, initialState());

  // ---------------------------------------------------------- feature flags

  // Values come from the server per user (GET /api/session); a developer can
  // override one for this browser session (sessionStorage) or by URL
  // (?flag.log-level=debug). Effective values are in store.getState().flags.
  var OVERRIDES_KEY = 'northstar.flagOverrides';
  var serverFlags = {};   // name -> { value, source, description, kind }

  function readOverrides() {
    var out = {};
    try {
      var saved = JSON.parse(sessionStorage.getItem(OVERRIDES_KEY) || '{}');
      if (saved && typeof saved === 'object') Object.assign(out, saved);
    } catch (e) { /* storage unavailable or corrupt: no overrides */ }
    new URLSearchParams(location.search).forEach(function (value, key) {
      if (key.indexOf('flag.') !== 0) return;
      var name = key.slice(5);
      var def = serverFlags[name];
      out[name] = def && def.kind === 'boolean' ? value === 'true' || value === '1' : value;
    });
    return out;
  }

  function flagDetails() {
    var overrides = readOverrides();
    var out = {};
    Object.keys(serverFlags).sort().forEach(function (name) {
      var f = serverFlags[name];
      var overridden = Object.prototype.hasOwnProperty.call(overrides, name);
      out[name] = {
        value: overridden ? overrides[name] : f.value,
        source: overridden ? 'user' : f.source,
        serverValue: f.value,
        serverSource: f.source,
        kind: f.kind,
        description: f.description,
      };
    });
    return out;
  }

  function effectiveFlags() {
    var details = flagDetails();
    var out = {};
    Object.keys(details).forEach(function (name) { out[name] = details[name].value; });
    return out;
  }

  function setFlagOverride(name, value) {
    if (!Object.prototype.hasOwnProperty.call(serverFlags, name)) {
      throw new Error('Unknown feature flag "' + name + '"; known flags: ' + Object.keys(serverFlags).sort().join(', '));
    }
    var kind = serverFlags[name].kind;
    if (value !== null && (kind === 'boolean' ? typeof value !== 'boolean' : typeof value !== 'string')) {
      throw new Error('Flag "' + name + '" takes a ' + kind + ' value (or null to clear the override)');
    }
    var saved = {};
    try { saved = JSON.parse(sessionStorage.getItem(OVERRIDES_KEY) || '{}') || {}; } catch (e) { saved = {}; }
    if (value === null) delete saved[name];
    else saved[name] = value;
    try { sessionStorage.setItem(OVERRIDES_KEY, JSON.stringify(saved)); } catch (e) { /* keep going */ }
    store.dispatch({ type: 'flags/changed', flags: effectiveFlags() });
    return flagDetails()[name];
  }

  // ------------------------------------------------------------- small DOM

  function $(sel) { return document.querySelector(sel); }

  function h(tag, attrs) {
    var el = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === 'text') el.textContent = v;
      else if (k === 'class') el.className = v;
      else if (k.indexOf('on') === 0) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    });
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined || c === false) continue;
      el.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return el;
  }

  function money(cents) {
    var sign = cents < 0 ? '-' : '';
    var abs = Math.abs(cents);
    var dollars = Math.floor(abs / 100).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
    return sign + '$' + dollars + '.' + String(abs % 100).padStart(2, '0');
  }

  function showStatus(message, kind) {
    var el = $('#status');
    el.textContent = message || '';
    el.className = 'status' + (kind === 'info' ? ' info' : '');
    el.hidden = !message;
  }

  function renderHeader(state) {
    var user = state.auth.user;
    $('#user-name').textContent = user ? user.name : 'Signing in...';
    $('#user-plan').textContent = user ? user.plan : '';
    $('#cart-badge').textContent = String(state.cart.badgeCount);
    document.body.classList.toggle('new-ui', state.flags['new-ui-enabled'] === true);
    document.querySelectorAll('.nav a').forEach(function (a) {
      a.classList.toggle('active', a.getAttribute('data-route') === state.ui.route);
    });
  }

  // ------------------------------------------------------- sales dashboard

  var pipeline = { reps: [], leads: [] };

  function pipelineKeys() {
    return ['/api/reps'].concat(STAGES.map(function (s) { return '/api/leads?stage=' + s; }));
  }

  function loadPipeline() {
    return Promise.all(pipelineKeys().map(function (k) { return apiCache.get(k); })).then(function (parts) {
      pipeline.reps = parts[0].reps;
      pipeline.leads = [];
      parts.slice(1).forEach(function (p) { pipeline.leads = pipeline.leads.concat(p.leads); });
      store.dispatch({ type: 'dashboard/loaded', reps: pipeline.reps.length, leads: pipeline.leads.length });
      return pipeline;
    });
  }

  function renderDashboard() {
    var openValue = 0;
    var byRep = {};
    pipeline.reps.forEach(function (r) { byRep[r.id] = { rep: r, open: 0, count: 0 }; });
    pipeline.leads.forEach(function (l) {
      if (OPEN_STAGES.indexOf(l.stage) < 0 || !byRep[l.repId]) return;
      byRep[l.repId].open += l.valueCents;
      byRep[l.repId].count++;
      openValue += l.valueCents;
    });
    $('#pipeline-summary').textContent = pipeline.leads.length + ' leads, ' + money(openValue) + ' open';

    var cards = $('#rep-cards');
    cards.textContent = '';
    pipeline.reps.forEach(function (r) {
      var s = byRep[r.id];
      cards.appendChild(h('div', { class: 'rep-card', 'data-rep-id': r.id },
        h('div', { class: 'name', text: r.name }),
        h('div', { class: 'muted small', text: r.region + ' - ' + s.count + (s.count === 1 ? ' open lead' : ' open leads') }),
        h('div', { class: 'value', text: money(s.open) })));
    });

    var tbody = $('#lead-table tbody');
    tbody.textContent = '';
    pipeline.leads.forEach(function (l) {
      var select = h('select', {
        'aria-label': 'Rep for lead ' + l.id,
        'data-lead-id': l.id,
        onchange: function (ev) {
          var repId = Number(ev.target.value);
          ev.target.closest('tr').classList.add('busy');
          reassignLead(l.id, repId).catch(function (err) { showStatus('Could not reassign: ' + err.message); renderDashboard(); });
        },
      });
      pipeline.reps.forEach(function (r) {
        select.appendChild(h('option', { value: r.id, selected: r.id === l.repId, text: r.name }));
      });
      tbody.appendChild(h('tr', { 'data-lead-id': l.id },
        h('td', { text: String(l.id) }),
        h('td', { text: l.company }),
        h('td', null, l.contactName, h('div', { class: 'muted small', text: l.email })),
        h('td', null, h('span', { class: 'stage stage-' + l.stage, text: l.stage })),
        h('td', { class: 'num', text: money(l.valueCents) }),
        h('td', null, select)));
    });
    renderCacheLine();
  }

  function renderCacheLine() {
    var s = apiCache.statistics();
    $('#cache-line').textContent = 'API cache: ' + s.entries + ' entries, ' + s.hits + ' hits, ' + s.misses +
      ' misses (hit rate ' + Math.round(s.hitRate * 100) + '%)';
  }

  // Moves a lead to another rep: the same path for the table's select and
  // for the reassignLead tool.
  function reassignLead(leadId, repId) {
    var before = pipeline.leads.filter(function (l) { return l.id === leadId; })[0];
    return api.post('/api/leads/' + leadId + '/assign', { repId: repId }).then(function (res) {
      var lead = res.lead;
      // Planted bug (README.md): the change touches one lead in one stage
      // list, but the whole cache is thrown away and every pipeline key is
      // fetched again (apiCache.update on that one key would do).
      apiCache.invalidateAll();
      return loadPipeline().then(function () {
        store.dispatch({
          type: 'dashboard/reassigned',
          change: { leadId: lead.id, fromRepId: before ? before.repId : null, toRepId: lead.repId, at: new Date().toISOString() },
        });
        renderDashboard();
        showStatus(lead.company + ' is now with ' + lead.repName + '.', 'info');
        return lead;
      });
    });
  }

  // ------------------------------------------------------------------- shop

  var products = [];

  function loadProducts() {
    return apiCache.get('/api/products').then(function (res) {
      products = res.products;
      return products;
    });
  }

  function productMatches(p, query, v2) {
    if (!query) return true;
    var q = query.toLowerCase();
    if (p.name.toLowerCase().indexOf(q) >= 0) return true;
    return v2 && (p.sku.toLowerCase().indexOf(q) >= 0 || p.description.toLowerCase().indexOf(q) >= 0);
  }

  // Money in cents, as the checkout panel shows it.
  function computeTotals(items) {
    var subtotal = 0;
    items.forEach(function (it) { subtotal += Math.round(it.price * 100) * it.qty; });
    var shipping = subtotal === 0 || subtotal >= FREE_SHIPPING_FROM_CENTS ? 0 : SHIPPING_CENTS;
    var tax = Math.round(subtotal * TAX_PERCENT / 100);
    return { subtotalCents: subtotal, taxCents: tax, shippingCents: shipping, totalCents: subtotal + tax + shipping };
  }

  function renderBanner(state) {
    var group = state.flags['experiment-group'];
    var text = group === 'variant-a' ? 'Free shipping on orders of $75 or more - you are close!'
      : group === 'variant-b' ? 'Spend $75, ship free. Tax is 8% of your goods.'
        : 'Orders of $75 or more ship free.';
    $('#shop-banner').textContent = text;
    $('#shop-banner').setAttribute('data-experiment-group', group || 'control');
  }

  function renderProducts(state) {
    var grid = $('#product-grid');
    var v2 = state.flags['beta-search-v2'] === true;
    grid.textContent = '';
    products.filter(function (p) { return productMatches(p, state.ui.search, v2); }).forEach(function (p) {
      var qty = h('input', { type: 'number', min: 1, max: 99, value: 1, 'aria-label': 'Quantity of ' + p.name });
      grid.appendChild(h('div', { class: 'product', 'data-product-id': p.id },
        h('div', { class: 'sku', text: p.sku }),
        h('strong', { text: p.name }),
        h('div', { class: 'muted small', text: p.description }),
        h('div', { class: 'price', text: money(p.priceCents) }),
        h('div', { class: 'buy' }, qty, h('button', {
          type: 'button',
          text: 'Add to cart',
          onclick: function () {
            try { addToCart(p.id, Number(qty.value)); } catch (err) { showStatus(err.message); }
          },
        }))));
    });
  }

  function renderCart(state) {
    var list = $('#cart-items');
    list.textContent = '';
    state.cart.items.forEach(function (it) {
      list.appendChild(h('li', { 'data-product-id': it.productId },
        h('span', null, it.qty + ' x ' + it.name),
        h('span', null, money(Math.round(it.price * 100) * it.qty),
          h('button', { type: 'button', class: 'remove', 'aria-label': 'Remove ' + it.name, text: 'x',
            onclick: function () { store.dispatch({ type: 'cart/remove', productId: it.productId }); } }))));
    });
    if (!state.cart.items.length) list.appendChild(h('li', { class: 'muted', text: 'Your cart is empty.' }));
    var t = computeTotals(state.cart.items);
    var dl = $('#cart-totals');
    dl.textContent = '';
    dl.appendChild(totalsList(t));
    $('#checkout').disabled = !state.cart.items.length || state.ui.busy;
  }

  function totalsList(t) {
    var frag = document.createDocumentFragment();
    [['Subtotal', money(t.subtotalCents)], ['Tax (' + TAX_PERCENT + '% of goods)', money(t.taxCents)],
      ['Shipping', t.shippingCents ? money(t.shippingCents) : 'Free'], ['Total', money(t.totalCents)]]
      .forEach(function (row, i) {
        frag.appendChild(h('dt', { class: i === 3 ? 'grand' : null, text: row[0] }));
        frag.appendChild(h('dd', { class: i === 3 ? 'grand' : null, 'data-total': ['subtotal', 'tax', 'shipping', 'total'][i], text: row[1] }));
      });
    return frag;
  }

  function renderConfirmation(order) {
    var box = $('#order-confirmation');
    box.textContent = '';
    if (!order) {
      box.hidden = true;
      return;
    }
    var dl = h('dl', { class: 'totals' });
    dl.appendChild(totalsList(order));
    box.appendChild(h('div', { 'data-order-id': order.orderId }, h('strong', { text: 'Order #' + order.orderId + ' placed.' }),
      ' Thank you!'));
    box.appendChild(dl);
    box.hidden = false;
  }

  function addToCart(productId, qty) {
    if (qty === undefined) qty = 1;
    if (!Number.isInteger(qty) || qty < 1 || qty > 99) throw new Error('qty must be an integer from 1 to 99');
    var p = products.filter(function (x) { return x.id === productId; })[0];
    if (!p) throw new Error('No product with id ' + productId + '; known ids: ' + products.map(function (x) { return x.id; }).join(', '));
    store.dispatch({ type: 'cart/add', item: { productId: p.id, name: p.name, qty: qty, price: p.priceCents / 100 } });
    renderConfirmation(null);
    showStatus('Added ' + qty + ' x ' + p.name + ' to the cart.', 'info');
    return store.getState().cart;
  }

  function checkout() {
    var items = store.getState().cart.items;
    if (!items.length) return Promise.reject(new Error('The cart is empty; add something first'));
    var totals = computeTotals(items);
    store.dispatch({ type: 'ui/busy', busy: true });
    return api.post('/api/orders', {
      items: items.map(function (it) { return { productId: it.productId, qty: it.qty }; }),
    }).then(function (res) {
      var order = {
        orderId: res.order.id,
        placedAt: res.order.createdAt,
        items: items.map(function (it) {
          return { productId: it.productId, name: it.name, qty: it.qty, price: it.price,
            lineTotalCents: Math.round(it.price * 100) * it.qty };
        }),
        subtotalCents: totals.subtotalCents,
        taxCents: totals.taxCents,
        shippingCents: totals.shippingCents,
        totalCents: totals.totalCents,
        subtotal: totals.subtotalCents / 100,
        tax: totals.taxCents / 100,
        shipping: totals.shippingCents / 100,
        total: totals.totalCents / 100,
      };
      store.dispatch({ type: 'order/placed', order: order });
      store.dispatch({ type: 'ui/busy', busy: false });
      renderConfirmation(order);
      showStatus('Order #' + order.orderId + ' placed: ' + money(order.totalCents) + '.', 'info');
      return order;
    }, function (err) {
      store.dispatch({ type: 'ui/busy', busy: false });
      showStatus('Checkout failed: ' + err.message);
      throw err;
    });
  }

  // ----------------------------------------------------------------- router

  function currentRoute() {
    var m = /^#\/(dashboard|shop)$/.exec(location.hash);
    return m ? m[1] : 'dashboard';
  }

  function showRoute() {
    var route = currentRoute();
    store.dispatch({ type: 'ui/route', route: route });
    $('#screen-dashboard').hidden = route !== 'dashboard';
    $('#screen-shop').hidden = route !== 'shop';
    var load = route === 'dashboard' ? loadPipeline().then(renderDashboard)
      : loadProducts().then(function () { renderProducts(store.getState()); renderCart(store.getState()); });
    return load.catch(function (err) {
      log.error('loading', route, err);
      showStatus('Could not load the ' + route + ': ' + err.message);
    });
  }

  // ------------------------------------------------------ support widget

  function mountSupportWidget(user) {
    // The widget lives on the other loopback name, so it is a different site
    // (and Chromium gives it its own process): 127.0.0.1 <-> localhost.
    var host = location.hostname === 'localhost' ? '127.0.0.1' : 'localhost';
    var src = location.protocol + '//' + host + (location.port ? ':' + location.port : '') +
      '/widget.html?user=' + encodeURIComponent(user.id);
    $('#support-dock').appendChild(h('iframe', { id: 'support-widget', title: 'Support', src: src }));
  }

  // ------------------------------------------------------------------ boot

  var resolveReady, rejectReady;
  var ready = new Promise(function (res, rej) { resolveReady = res; rejectReady = rej; });
  ready.catch(function () { /* reported by showStatus; tools report it again */ });

  function boot() {
    var user = new URLSearchParams(location.search).get('user');
    var url = '/api/session' + (user ? '?user=' + encodeURIComponent(user) : '');
    store.subscribe(function (state) {
      renderHeader(state);
      if (state.ui.route === 'shop') {
        renderBanner(state);
        renderProducts(state);
        renderCart(state);
      }
    });
    $('#search').addEventListener('input', function (ev) { store.dispatch({ type: 'ui/search', search: ev.target.value }); });
    $('#checkout').addEventListener('click', function () { checkout().catch(function () { /* shown */ }); });
    window.addEventListener('hashchange', showRoute);
    api.get(url).then(function (session) {
      serverFlags = session.flags;
      store.dispatch({ type: 'session/loaded', user: session.user, sessionId: session.sessionId, flags: effectiveFlags() });
      mountSupportWidget(session.user);
      log.info('session', session.sessionId, 'user', session.user.id);
      return Promise.all([showRoute(), loadProducts()]);
    }).then(function () {
      resolveReady();
    }, function (err) {
      showStatus('Could not start: ' + err.message);
      rejectReady(err);
    });
  }

  window.apiCache = apiCache;
  window.store = store;
  window.app = {
    ready: ready,
    reassignLead: reassignLead,
    addToCart: addToCart,
    checkout: checkout,
    computeTotals: computeTotals,
    featureFlags: flagDetails,
    setFeatureFlagOverride: setFlagOverride,
    // for tools.js, the page's developer tools
    loadPipeline: loadPipeline,
    loadProducts: loadProducts,
    stages: STAGES,
    dbTables: DB_TABLES,
  };

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
  else boot();
})();
