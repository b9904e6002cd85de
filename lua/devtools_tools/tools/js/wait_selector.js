// devtools_tools: waits in the page until the CSS selector sel matches an
// element (a MutationObserver: no polling), resolving true, or until ms
// milliseconds pass, resolving false; a selector the page cannot parse
// rejects with the page's SyntaxError. page:wait_for_selector
// (page/ready.lua) calls it through Runtime.callFunctionOn.
//
// What it must never do: leave its observer or timer behind.
function devtoolsWaitSelector(sel, ms) {
  return new Promise((resolve, reject) => {
    let obs, timer;
    const done = (v) => { if (obs) obs.disconnect(); clearTimeout(timer); resolve(v); };
    const look = () => {
      try { return document.querySelector(sel) !== null; } catch (e) { reject(e); return false; }
    };
    if (look()) return resolve(true);
    obs = new MutationObserver(() => { if (look()) done(true); });
    obs.observe(document, { childList: true, subtree: true, attributes: true });
    timer = setTimeout(() => done(false), ms);
  });
}
