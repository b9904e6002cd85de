-- tools/fuzz/mcp_target.lua: `make fuzz` cases for the MCP server
-- (devtools_tools.mcp): JSON-RPC frames as clients write them and as they
-- should not - ids of every kind (huge, 1e999, -0, escaped strings, not
-- UTF-8, null, objects), methods known and not, params of every shape,
-- bytes that are not UTF-8 anywhere, lone surrogates, batches under every
-- version, requests before and after initialize, notifications/cancelled
-- racing the requests it names (before, during and after them), mutated
-- and truncated texts, junk.
--
-- Each case serves a stand-in page (tools in Lua: instant, slow, failing,
-- a big string, lone surrogates) on a transport of the case's own, or on
-- the real stdio transport over pipes (its framing: CRLF, empty lines,
-- chunks cut anywhere); the frames go in with turns of the loop between
-- some of them, then the loop turns until every request has its answer.
-- Checks: every line written is UTF-8 and JSON, a response or a batch of
-- them; every request whose id can be read gets exactly one answer with
-- its id written as it was sent (a cancelled one at most one); an
-- answer carries no id that was not asked; nothing raises out of the
-- server. ctx.count("requests", n) tells the fuzzer how many requests
-- were checked, so its report says how many went unanswered (none).
-- Generation must stay a pure function of the case's generator.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local json = require "devtools_tools.base.json"
local mcp = require "devtools_tools.mcp"
local J = require "fuzz.json_target"

local T = { name = "mcp", batch = 60 }

T.SETTLE = 5          -- seconds the loop may turn for the answers of one case

local VERSIONS = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2026-07-28", "1999-01-01" }
local METHODS = { "ping", "tools/list", "tools/call", "tools/call", "tools/call", "initialize", "server/discover",
  "subscriptions/listen", "resources/list", "prompts/get", "", "tools/call\255", "pi\237\160\128ng", "\\u0000" }
local TOOLS = { "add", "wait", "boom", "big", "lone", "nope", "devtools.console", "devtools.navigate",
  "devtools.screenshot", "ad\255d", "w\192\128", "devtools.evaluate" }
local BAD = { "\255", "\192\128", "\237\160\128", "\244\144\128\128", "\128", "\195" }

-- ---- generation -------------------------------------------------------------------

-- An id: its text as written, and whether a response must carry it (a
-- string or a number whose text is UTF-8).
local function gen_id(r, n)
  local k = r:int(1, 14)
  if k <= 4 then return tostring(n), true end
  if k == 5 then return ('"id-%d"'):format(n), true end
  if k == 6 then return ('"\\u0065\\u%04x-%d"'):format(r:int(0x20, 0x7e), n), true end
  if k == 7 then return "1" .. ("0"):rep(18 + r:int(0, 3)) .. n, true end   -- past int64
  if k == 8 then return n == 3 and "1e999" or (n .. r:pick({ "e0", "e+2" })), true end  -- (1e999 once: inf)
  if k == 9 then return "-" .. n .. ".0", true end
  if k == 10 then return ('"\\ud800-%d"'):format(n), true end              -- an escaped lone surrogate
  if k == 11 then return ('"x%s%d"'):format(r:pick(BAD), n), false end     -- not UTF-8: id null
  if k == 12 then return r:pick({ "null", "{}", "[1]", "true" }), false end
  if k == 13 then return n == 2 and "-0" or ("-" .. n), true end
  return ('"%s%d"'):format(("é"):rep(r:int(1, 3)), n), true
end

local function gen_params(r, method, ids_so_far)
  local k = r:int(1, 12)
  if k == 1 then return nil end
  if k == 2 then return r:pick({ "[]", "[1,2]", '"x"', "3", "null" }) end
  local parts = {}
  if method == "initialize" or r:chance(0.1) then
    parts[#parts + 1] = '"protocolVersion":"' .. r:pick(VERSIONS) .. '"'
    parts[#parts + 1] = '"capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}'
  end
  if method == "tools/call" or r:chance(0.1) then
    local name = r:pick(TOOLS)
    parts[#parts + 1] = '"name":' .. (r:chance(0.05) and "7" or ('"' .. name .. '"'))
    local a = r:int(1, 6)
    if a == 1 then parts[#parts + 1] = '"arguments":{"a":' .. r:int(-5, 5) .. ',"b":2}'
    elseif a == 2 then parts[#parts + 1] = '"arguments":{"ms":' .. r:int(0, 40) .. '}'
    elseif a == 3 then parts[#parts + 1] = '"arguments":' .. r:pick({ "[]", '"x"', "null", "{}" })
    elseif a == 4 then parts[#parts + 1] = '"arguments":{"level":"' .. r:pick({ "error", "x\255" }) .. '"}'
    elseif a == 5 then parts[#parts + 1] = '"arguments":{"url":"' .. r:pick({ "http://169.254.169.254/",
        "about:blank", "file:///etc/passwd", "http://[::1", "http://2852039166/" }) .. '"}'
    end
  end
  if method == "subscriptions/listen" then
    parts[#parts + 1] = '"notifications":{"toolsListChanged":' .. r:pick({ "true", "false", "1" }) .. "}"
  end
  if r:chance(0.25) then
    local meta = {}
    if r:chance(0.6) then meta[#meta + 1] = '"io.modelcontextprotocol/protocolVersion":"'
      .. r:pick({ "2026-07-28", "2026-07-28", "2099-01-01", "2026\255" }) .. '"' end
    if r:chance(0.4) then meta[#meta + 1] = '"progressToken":' .. r:pick({ "1", '"t"', "{}", "1e999" }) end
    parts[#parts + 1] = '"_meta":{' .. table.concat(meta, ",") .. "}"
  end
  if r:chance(0.1) then parts[#parts + 1] = '"x":"' .. r:pick(BAD) .. '"' end
  if r:chance(0.1) and #ids_so_far > 0 then parts[#parts + 1] = '"id":' .. r:pick(ids_so_far) end
  return "{" .. table.concat(parts, ",") .. "}"
end

-- A request: {text, id (its text), answered (a response must carry id)}
local function gen_request(r, n, ids_so_far, method)
  method = method or r:pick(METHODS)
  local id, readable = gen_id(r, n)
  local members = { '"jsonrpc":"2.0"', '"id":' .. id, '"method":"' .. method .. '"' }
  local p = gen_params(r, method, ids_so_far)
  if p then members[#members + 1] = '"params":' .. p end
  if r:chance(0.03) then members[1] = '"jsonrpc":"1.0"' end
  -- (members in any order: the id after large params too)
  for i = #members, 2, -1 do
    local j = r:int(1, i)
    members[i], members[j] = members[j], members[i]
  end
  local text = "{" .. table.concat(members, r:pick({ ",", ", ", " ,\t" })) .. "}"
  local clean = readable and J.clean_string(method) and json.utf8_error(text) == nil
  return { text = text, id = id, must = clean, method = method }
end

local function gen_notification(r, ids_so_far)
  local k = r:int(1, 5)
  if k <= 3 and #ids_so_far > 0 then
    return { text = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":'
      .. r:pick(ids_so_far) .. ',"reason":"fuzz"}}', cancels = true }
  end
  if k == 4 then return { text = '{"jsonrpc":"2.0","method":"notifications/initialized"}' } end
  return { text = '{"jsonrpc":"2.0","method":"notifications/' .. r:pick({ "x", "progress", "cancelled" })
    .. '","params":' .. r:pick({ "{}", "[]", '{"requestId":null}', '{"requestId":"\255"}' }) .. "}" }
end

function T.gen(r)
  local c = { frames = {}, stdio = r:chance(0.3), turns = {} }
  local n, ids = 0, {}
  if r:chance(0.7) then
    n = n + 1
    local f = gen_request(r, n, ids, "initialize")
    c.frames[#c.frames + 1] = f
    ids[#ids + 1] = f.id
    if r:chance(0.8) then c.frames[#c.frames + 1] = gen_notification(r, {}) end
  end
  for _ = 1, r:int(1, 14) do
    local k = r:int(1, 20)
    local f
    if k <= 10 then
      n = n + 1
      f = gen_request(r, n, ids)
      ids[#ids + 1] = f.id
    elseif k <= 13 then
      f = gen_notification(r, ids)
    elseif k <= 16 then                          -- a batch
      local items, list = {}, {}
      for _ = 1, r:int(0, 4) do
        if r:chance(0.7) then
          n = n + 1
          local q = gen_request(r, n, ids)
          ids[#ids + 1] = q.id
          items[#items + 1] = q
        else
          items[#items + 1] = gen_notification(r, ids)
        end
      end
      for i, q in ipairs(items) do list[i] = q.text end
      f = { text = "[" .. table.concat(list, ",") .. "]", batch = items }
    elseif k <= 18 then                          -- a request's text mutated (it may stay valid: not counted)
      n = n + 1
      local q = gen_request(r, n, ids)
      f = { text = J.mutate(r, q.text) }
    elseif k == 19 then
      f = { text = r:bytes(r:size(200)) }
    else
      f = { text = (J.gen_text(r, 2)) }
    end
    c.frames[#c.frames + 1] = f
    if r:chance(0.3) then c.turns[#c.frames] = r:int(1, 4) end    -- the loop turns after it
  end
  if c.stdio then
    c.eol = r:pick({ "\n", "\r\n" })
    c.chunks = {}
    for i = 1, 30 do c.chunks[i] = r:pick({ 1, 2, 7, 64, 1000, 65536 }) end
    c.blank = r:chance(0.2)
  end
  return c
end

function T.show(c)
  local out = {}
  for i, f in ipairs(c.frames) do
    local s = f.text
    if #s > 600 then s = s:sub(1, 600) .. "... (" .. #s .. " bytes)" end
    out[i] = ("%2d %s%s"):format(i, s:gsub("[%z\1-\31\127-\255]", function(ch) return ("\\x%02x"):format(ch:byte()) end),
      c.turns[i] and ("  (then %d turns)"):format(c.turns[i]) or "")
  end
  return (c.stdio and ("over stdio, lines ending %q\n"):format(c.eol) or "in-process\n") .. table.concat(out, "\n")
end

-- ---- the stand-in page ------------------------------------------------------------

local function fake_page()
  local p = { url = "http://fuzz.test/" }
  local group = { name = "g", kind = "devtools", frame = { url = p.url, origin = "http://fuzz.test" } }
  local function tool(name, fn, schema)
    return { name = name, description = name, input_schema = schema or json.decode('{"type":"object"}'),
      group = group, kind = "devtools", call = function(_, args) return fn(args) end }
  end
  group.tools = {
    tool("add", function(a) return (tonumber(a.a) or 0) + (tonumber(a.b) or 0) end),
    tool("wait", function(a) dt.sleep(math.min(0.05, (tonumber(a.ms) or 0) / 1000)) return "waited" end),
    tool("boom", function() error(dt.new_error("tool_error", "it broke \255 \237\160\128"), 0) end),
    tool("big", function() return ("b"):rep(200000) end),
    tool("lone", function() return json.decode('"a\\ud800b"') end),
  }
  function p.discover() return { group }, {} end
  function p.on() return function() end end
  function p.wait_until(_, pred, opts)
    local deadline = dt.now() + (opts and opts.timeout or 30)
    while not pred() and dt.now() < deadline do dt.sleep(0.05) end
    return pred()
  end
  function p.navigate() end
  function p.reload() end
  function p.console_messages() return {} end
  function p.network_requests() return {} end
  function p.screenshot() return "iVBORw0KGgo=" end
  return p
end

-- ---- running ---------------------------------------------------------------------

local loop = dt.loop()

local function turn(n)
  for _ = 1, n do loop:step(0) end
end

-- The requests a frame holds: {id, must, cancelled?}, in order
local function requests_of(c)
  local out, by_id = {}, {}
  for _, f in ipairs(c.frames) do
    local items = f.batch or { f }
    for _, q in ipairs(items) do
      if q.id and q.must then
        local e = { id = q.id, method = q.method }
        out[#out + 1] = e
        by_id[q.id] = e
      end
      if q.cancels then
        local target = q.text:match('"requestId":(.-),"reason"')
        if target and by_id[target] then by_id[target].cancelled = true end
      end
    end
  end
  return out
end

-- The ids the answers carry, as written: answer text -> id text
local function ids_in(text, into, problems)
  local ok, v = pcall(json.decode, text)
  if not ok then problems[#problems + 1] = "a line that is not JSON: " .. text:sub(1, 200) return end
  if json.utf8_error(text) then problems[#problems + 1] = "a line that is not UTF-8: " .. text:sub(1, 200) return end
  local list = (json.kind(v) == "array") and v or { v }
  -- (the raw ids: each response object written as {"jsonrpc":"2.0","id":ID,...})
  local raws = {}
  for raw in text:gmatch('{"jsonrpc":"2%.0","id":(.-),"[re][er][sr][uo][lr]') do raws[#raws + 1] = raw end
  local k = 0
  for _, m in ipairs(list) do
    if type(m) ~= "table" or m.jsonrpc ~= "2.0" then
      problems[#problems + 1] = "a message without jsonrpc 2.0: " .. text:sub(1, 200)
    elseif m.method == nil then
      k = k + 1
      if (m.result == nil) == (m.error == nil) then
        problems[#problems + 1] = "a response with both or neither of result and error: " .. text:sub(1, 200)
      end
      local raw = raws[k]
      if raw == nil then
        problems[#problems + 1] = "a response whose id cannot be found: " .. text:sub(1, 200)
      elseif raw ~= "null" then
        into[raw] = (into[raw] or 0) + 1
      end
    end
  end
end

function T.run(c, ctx)
  local page = fake_page()
  local texts, handlers, closed = {}, nil, false
  local transport, feed, finish
  if c.stdio then
    -- the real transport: our input is cat's stdout, fed through its stdin
    local cat, fds = assert(core.process.spawn({ "/bin/cat" }, { stdio = true }))
    local out_proc, ofds = assert(core.process.spawn({ "/bin/cat" }, { stdio = true }))
    transport = mcp.stdio({ input = fds.stdout, output = ofds.stdin })
    local pending, ci = "", 0
    local buf = ""
    feed = function(text)
      pending = pending .. text:gsub("[\r\n]", " ") .. c.eol .. (c.blank and c.eol or "")
      while #pending > 0 do
        ci = ci % #c.chunks + 1
        local piece = pending:sub(1, c.chunks[ci])
        local n = core.fd.write(fds.stdin, piece)
        if not n or n == 0 then turn(1) else pending = pending:sub(n + 1) end
      end
    end
    local function drain()
      while true do
        local s = core.fd.read(ofds.stdout, 1 << 20)
        if not s or s == "" then break end
        buf = buf .. s
        local from = 1               -- (split with find: "([^\n]*)\n" is quadratic on a long last line)
        while true do
          local nl = buf:find("\n", from, true)
          if not nl then break end
          texts[#texts + 1] = buf:sub(from, nl - 1)
          from = nl + 1
        end
        buf = buf:sub(from)
      end
    end
    finish = function()
      drain()
      core.fd.close(fds.stdin)
      cat:close(0)
      out_proc:close(0)
      core.fd.close(fds.stdout)
      core.fd.close(ofds.stdin)
      core.fd.close(ofds.stdout)
    end
    c.drain = drain
  else
    transport = {
      start = function(_, h) handlers = h end,
      send = function(_, text) texts[#texts + 1] = text end,
      close = function() closed = true end,
    }
    feed = function(text) handlers.message(text) end
    finish = function() end
  end
  local server = mcp.serve(transport, { page = page, log = false, allow_eval = true, timeout = 5 })
  for i, f in ipairs(c.frames) do
    feed(f.text)
    if c.turns[i] then turn(c.turns[i]) end
  end
  local wanted = requests_of(c)
  local counts, problems = {}, {}
  local deadline = core.now() + T.SETTLE
  local function settled()
    if c.drain then c.drain() end
    counts, problems = {}, {}
    for _, t in ipairs(texts) do ids_in(t, counts, problems) end
    for _, q in ipairs(wanted) do
      if not q.cancelled and q.method ~= "subscriptions/listen" and not counts[q.id] then return false end
    end
    return true
  end
  while not settled() and core.now() < deadline do loop:step(0.01) end
  server:close("the case ended")
  turn(2)
  finish()
  if ctx and ctx.count then ctx.count("requests", #wanted) end
  if os.getenv("FUZZ_MCP_DEBUG") then for _, t in ipairs(texts) do io.stderr:write(t:sub(1, 300), "\n") end end
  if #problems > 0 then return problems[1] end
  local asked = {}
  for _, q in ipairs(wanted) do
    asked[q.id] = true
    local n = counts[q.id] or 0
    if n > 1 then return ("request %s answered %d times"):format(q.id, n) end
    if n == 0 and not q.cancelled and q.method ~= "subscriptions/listen" then
      if ctx and ctx.count then ctx.count("unanswered", 1) end
      return ("request %s (%s) unanswered"):format(q.id, tostring(q.method))
    end
  end
  -- (answers to ids the fuzzer did not count - mutated texts that stayed
  -- valid, unreadable ids - are allowed; but never two for one id)
  for id, n in pairs(counts) do
    if n > 1 and not id:find("^%-?0$") then
      local dup = 0
      for _, f in ipairs(c.frames) do if f.text:find('"id":' .. id, 1, true) then dup = dup + 1 end end
      if dup <= 1 and asked[id] then return ("id %s answered %d times"):format(id, n) end
    end
  end
  return nil
end

return T
