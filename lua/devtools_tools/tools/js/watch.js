// devtools_tools: counts the devtoolstooldiscovery listeners added to or
// removed from window, and, when Lua watches the page's tools
// (page:on("tools_changed")), tells it through a CDP binding. Installed
// once per document, as window.__devtools_tools_watch (not enumerable):
// by the discovery call (js/runtime.js reads the count: a call made after
// a change runs nothing), and, while Lua watches, at every document's
// start, before the page's own scripts.
//
// It wraps window's own addEventListener and removeEventListener, which
// call EventTarget.prototype's, looked up at each call, so a page that
// patches the prototype (zone.js does) keeps its patch; a window that has
// its own already is left alone (its changes are then not counted).
//
// What it must never do: change what a listener call does, throw out of
// one, or call the binding for any other event.
//
// The file is one function expression; Lua calls it with the binding's
// name, or null when it only counts.
(function watchDevtoolsTools(binding) {
  'use strict';
  const KEY = '__devtools_tools_watch';
  let w = window[KEY];
  if (!w || typeof w !== 'object') {
    const EVENT = 'devtoolstooldiscovery';
    const apply = Reflect.apply;
    const proto = EventTarget.prototype;
    let changes = 0;
    let tell;                      // the binding's name, once Lua watches
    w = {
      get changes() { return changes; },
      watch(name) { tell = name; },
    };
    for (const method of ['addEventListener', 'removeEventListener']) {
      if (Object.getOwnPropertyDescriptor(window, method)) continue;
      const counting = {
        [method](type, ...rest) {
          const target = this === undefined || this === null ? window : this;
          const result = apply(proto[method], target, [type, ...rest]);
          if (target === window) {
            try {
              if (String(type) === EVENT) {
                changes += 1;
                if (tell !== undefined && typeof window[tell] === 'function') window[tell](method);
              }
            } catch (_) { /* not a name, or no binding: counted or not, the call stands */ }
          }
          return result;
        },
      }[method];
      try {
        Object.defineProperty(window, method, { value: counting, writable: true, enumerable: false, configurable: true });
      } catch (_) { /* a window that takes no property */ }
    }
    try { Object.defineProperty(window, KEY, { value: w, enumerable: false, configurable: true }); } catch (_) { /* counted here only */ }
  }
  if (typeof binding === 'string') w.watch(binding);
  return w;
})
