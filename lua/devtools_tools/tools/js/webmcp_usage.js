// devtools_tools: what the page's own document says of WebMCP, for a tool
// that never came (page/ready.lua): is the page API on (document.modelContext),
// and do its inline scripts use it, naming the tool? -> [on, uses, named]
//
// What it must never do: run or change the page's scripts (only their text
// is read).
function devtoolsWebmcpUsage(name) {
  const on = typeof document.modelContext === 'object' || typeof navigator.modelContext === 'object';
  let uses = false, named = false;
  for (const s of Array.from(document.scripts)) {
    const t = s.src ? '' : String(s.text || '');
    if (t.includes('modelContext')) { uses = true; if (t.includes(name)) named = true; }
  }
  return [on, uses, named];
}
