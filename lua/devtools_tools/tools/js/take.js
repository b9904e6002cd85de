// devtools_tools: hands Lua the elements a result referred to (an array,
// returned as a remote object), and forgets them.
function takeDevtoolsElements(key) {
  const rt = window.__devtools_tools;
  return rt ? rt.take(key) : [];
}
