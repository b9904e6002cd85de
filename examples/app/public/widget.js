// Support widget (issue 5): embedded by the main page from the other loopback
// name, so it is cross-origin to the page and gets its own tool group. It
// talks only to its own origin and never to the parent page.
(function () {
  'use strict';

  var STATUSES = ['open', 'pending', 'closed', 'all'];
  // The page passes the signed-in user's id (this origin cannot read its cookie).
  var userId = new URLSearchParams(location.search).get('user') || '1';
  var state = { filter: 'open', tickets: [], lastSync: null, error: null, loads: 0 };

  function fetchTickets(status) {
    var url = '/api/support/tickets?user=' + encodeURIComponent(userId) + '&status=' + encodeURIComponent(status);
    return fetch(url, { headers: { Accept: 'application/json' } })
      .then(function (res) {
        return res.json().then(function (body) {
          if (!res.ok) throw new Error('support API refused the request (HTTP ' + res.status + '): ' + (body && body.error));
          return body.tickets;
        });
      });
  }

  function render() {
    var list = document.getElementById('tickets');
    list.textContent = '';
    if (state.error) {
      list.appendChild(el('li', 'error', 'Could not load tickets: ' + state.error));
    } else if (!state.tickets.length) {
      list.appendChild(el('li', 'empty', 'No ' + (state.filter === 'all' ? '' : state.filter + ' ') + 'tickets.'));
    }
    state.tickets.forEach(function (t) {
      var li = el('li', null, t.subject);
      li.setAttribute('data-ticket-id', t.id);
      li.appendChild(el('div', 'meta' + (t.priority === 'high' ? ' high' : ''),
        '#' + t.id + ' - ' + t.status + ' - ' + t.priority + ' - ' + t.createdAt));
      list.appendChild(li);
    });
    var open = state.filter === 'open' ? state.tickets.length : null;
    document.getElementById('unread').textContent = open ? '(' + open + ' open)' : '';
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text) e.textContent = text;
    return e;
  }

  function load(status) {
    state.filter = status;
    state.loads++;
    return fetchTickets(status).then(function (tickets) {
      state.tickets = tickets;
      state.error = null;
      state.lastSync = new Date().toISOString();
      render();
      return tickets;
    }, function (err) {
      state.error = err.message;
      render();
      throw err;
    });
  }

  var ready = load('open').catch(function () { /* shown in the widget */ });

  document.getElementById('filter').addEventListener('change', function (ev) {
    load(ev.target.value).catch(function () { /* shown */ });
  });

  var parentOrigin = location.ancestorOrigins && location.ancestorOrigins.length ? location.ancestorOrigins[0] : null;

  window.addEventListener('devtoolstooldiscovery', function (event) {
    event.respondWith({
      name: 'support-widget',
      description: 'The embedded support widget (a cross-origin frame): the signed-in customer\'s support tickets.',
      tools: [
        {
          name: 'getSupportTickets',
          description: 'The customer\'s support tickets with the given status (id, subject, status, priority, createdAt), ' +
            'fetched from the support API; the widget shows the same list.',
          inputSchema: {
            type: 'object',
            properties: {
              status: { type: 'string', enum: STATUSES, default: 'open', description: 'Ticket status to list (default "open"; "all" for every ticket).' },
            },
            additionalProperties: false,
          },
          execute: function (args) {
            var status = (args && args.status) || 'open';
            if (STATUSES.indexOf(status) < 0) return Promise.reject(new Error('status must be one of ' + STATUSES.join(', ')));
            return ready.then(function () { return load(status); }).then(function (tickets) {
              document.getElementById('filter').value = status;
              return { status: status, count: tickets.length, tickets: tickets };
            });
          },
        },
        {
          name: 'getWidgetStatus',
          description: 'The widget\'s own state: its origin, the page that embeds it, the status filter shown, ' +
            'how many tickets it shows, when it last synced and the last error.',
          inputSchema: { type: 'object', properties: {}, additionalProperties: false },
          execute: function () {
            return ready.then(function () {
              return {
                origin: location.origin,
                embeddedBy: parentOrigin,
                userId: Number(userId),
                filter: state.filter,
                ticketCount: state.tickets.length,
                loads: state.loads,
                lastSync: state.lastSync,
                error: state.error,
              };
            });
          },
        },
      ],
    });
  });
})();
