// devtools_tools: has the page's main thread caught up? Resolves true once
// an idle callback runs (the tasks queued before it have run, and what
// they started - a request, a frame - has been told of before the
// answer), at most ms milliseconds from now; a page without
// requestIdleCallback gets a task instead. Called by page:settle
// (page/ready.lua) through Runtime.callFunctionOn, with ms.
//
// What it must never do: throw, or keep the page's thread.
function devtoolsIdle(ms) {
  return new Promise((resolve) => (typeof requestIdleCallback === 'function'
    ? requestIdleCallback(() => resolve(true), { timeout: ms })
    : setTimeout(() => resolve(true), 0)));
}
