-- tools/fuzz/pipe_target.lua: `make fuzz` cases for the framing of the
-- pipe transport (NUL-terminated messages on the child's fd 4).
--
-- A fake peer (tools/fuzz/peer.lua, a child spawned as Chromium would be,
-- with core.process.spawn{pipe = true}) writes random messages - random bytes,
-- JSON texts, CDP replies carrying a JSON text as a string result - cut
-- into random chunks with random pauses, then exits cleanly, exits in the
-- middle of a message, or stays silent. The transport, sometimes with a
-- small limit and sometimes decoding, must hand out exactly those
-- messages (or too_large with the message's first bytes, or bad_message
-- for text that is not JSON), then "closed" or "timeout"; never a wrong
-- message, a crash or a wait past its deadline. The peer generates the
-- case again from (seed, case), so generation must never depend on pairs
-- order or the clock.

local core = require "devtools_tools.core"
local J = require "fuzz.json_target"

local T = { name = "pipe", batch = 25 }

-- payload(r, n) -> n bytes without NUL, cheap to make even when large
local function payload(r, n, alphabet)
  if n <= 256 then
    return (r:bytes(n, alphabet):gsub("%z", "\1"))
  end
  local block = (r:bytes(r:int(1, 256), alphabet):gsub("%z", "\1"))
  return block:rep(n // #block + 1):sub(1, n)
end

local function cdp_reply(r, id)
  local inner = r:chance(0.8) and (J.gen_text(r, 2)) or J.mutate(r, (J.gen_text(r, 2)))
  -- escaped by hand: a mutated text may hold bytes the encoder refuses
  local escaped = '"' .. inner:gsub('[%z\1-\31"\\]', function(ch)
    return ("\\u%04x"):format(ch:byte())
  end) .. '"'
  return ('{"id":%d,"result":{"result":{"type":"string","value":%s}}}'):format(id, escaped)
end

-- gen(r) -> case: messages, the bytes of a last unfinished one, chunk
-- sizes, pauses (chunk number -> ms), ending, limit, decode, ids
function T.gen(r)
  local c = { messages = {}, chunks = {}, pauses = {}, ids = {} }
  c.decode = r:chance(0.5)
  c.use_ids = c.decode and r:chance(0.5)
  for i = 1, r:int(0, 12) do
    local k = r:int(1, 10)
    local m
    if k <= 3 then m = payload(r, r:size(300))
    elseif k <= 5 then m = (J.gen_text(r, 0))
    elseif k <= 7 then
      m = cdp_reply(r, i)
      if r:chance(0.8) then c.ids[#c.ids + 1] = i end
    elseif k == 8 then m = payload(r, r:pick({ 4095, 4096, 4097, 65535, 65536, 65537, r:size(1 << 20) }))
    elseif k == 9 then m = payload(r, r:int(1 << 20, 3 << 20), '{}[]":,0123 abc\\')
    else m = "" end
    c.messages[i] = m
  end
  if r:chance(0.3) then c.limit = r:pick({ 1, 16, 63, 64, 65, 1000, 65536, 1 << 20 }) end
  local ending = r:int(1, 6)
  c.ending = ending <= 3 and "exit" or ending <= 5 and "partial" or "stay"
  if c.ending == "partial" then c.partial = payload(r, r:size(70000)) end
  local total = 1
  for _, m in ipairs(c.messages) do total = total + #m + 1 end
  total = total + #(c.partial or "")
  local left, n = total, 0
  while left > 0 do
    n = n + 1
    local size = r:chance(0.3) and r:int(1, 16) or r:size(1 << 18) + 1
    c.chunks[n] = size
    left = left - size
    if r:chance(0.02) then c.pauses[n] = r:int(1, 5) end
    if n > 400 then c.chunks[n + 1] = left; break end
  end
  return c
end

-- The bytes the peer writes.
function T.stream(c)
  local parts = {}
  for i, m in ipairs(c.messages) do parts[i] = m .. "\0" end
  parts[#parts + 1] = c.partial or ""
  return table.concat(parts)
end

local function show_bytes(s)
  if #s > 200 then return ("%q...(%d bytes)"):format(s:sub(1, 120), #s) end
  return ("%q"):format(s)
end

function T.show(c)
  local ms = {}
  for i, m in ipairs(c.messages) do ms[i] = show_bytes(m) end
  return ("%d messages [%s]; ending %s%s; %d chunks; limit %s; decode %s; ids %s"):format(#c.messages,
    table.concat(ms, ", "), c.ending, c.partial and (" after " .. #c.partial .. " bytes") or "",
    #c.chunks, tostring(c.limit), tostring(c.decode), c.use_ids and table.concat(c.ids, ",") or "none")
end

-- As the transports read CDP and a page's JSON text: an integer past 2^53
-- is the double JavaScript reads (core.json.decode's js_numbers).
local JS = { js_numbers = true }
local function decode_js(text)
  local v, err, code = core.json.decode(text, JS)
  if v == nil and code ~= nil then error(err, 0) end
  return v
end

-- The value recv_cdp(deadline, ids) must give for message m: as
-- json.decode gives it (with JavaScript's numbers), except that a reply
-- whose id is in ids and whose result.result.value is a string has .json
-- (the string decoded) or .json_error in place of .value.
local function expected_value(c, i, m, ids)
  local ok, v = pcall(decode_js, m)
  if not ok then return nil end
  local rr = type(v) == "table" and type(v.result) == "table" and type(v.result.result) == "table" and v.result.result
  if ids and rr and ids[v.id] and type(rr.value) == "string" and m:find('^{"id":') then
    local ok2, inner = pcall(decode_js, rr.value)
    rr.value = nil
    if ok2 then rr.json = inner else rr.json_error = true end
  end
  return true, v
end

-- Compares got with the expected value; json_error only needs to be a string.
local function same_value(want, got)
  local rr = type(want) == "table" and type(want.result) == "table" and type(want.result.result) == "table"
    and want.result.result
  if rr and rr.json_error then
    local grr = type(got) == "table" and type(got.result) == "table" and got.result.result
    if type(grr) ~= "table" or type(grr.json_error) ~= "string" then
      return false, "no json_error for a string result that is not JSON"
    end
    rr.json_error = grr.json_error
  end
  return J.deep_equal(want, got)
end

-- check_one(c, i, m, got, err, code, head, ids) -> failure or nil: what
-- recv gave for message i (m), against what it must give.
function T.check_one(c, i, m, got, err, code, head, ids)
  if #m > (c.limit or math.huge) then
    if code ~= "too_large" then
      return ("message %d (%d bytes, limit %d): expected too_large, got %s"):format(i, #m, c.limit,
        got and show_bytes(tostring(got)) or (tostring(code) .. ": " .. tostring(err)))
    end
    if type(head) ~= "string" or head ~= m:sub(1, #head) then
      return ("message %d: too_large with a head that does not start the message: %s"):format(i, tostring(head))
    end
    return nil
  end
  if not c.decode then
    if got ~= m then
      return ("message %d: got %s, sent %s"):format(i, got and show_bytes(got) or (tostring(code) .. ": " .. tostring(err)), show_bytes(m))
    end
    return nil
  end
  local is_json, want = expected_value(c, i, m, ids)
  if not is_json then
    if got ~= nil or code ~= "bad_message" then
      return ("message %d is not JSON: expected bad_message, got %s"):format(i, got and "a value" or tostring(code))
    end
    return nil
  end
  if got == nil then
    return ("message %d (%d bytes): expected it, got %s: %s"):format(i, #m, tostring(code), tostring(err))
  end
  local same, where = same_value(want, got)
  if not same then return ("message %d: decoded differently at %s"):format(i, where) end
  return nil
end

-- check_end(c, recv) -> failure or nil, once every message was read
function T.check_end(c, recv)
  if c.ending == "stay" then
    local got, _, code = recv(0.05)
    if got ~= nil or code ~= "timeout" then
      return "after the last message: expected timeout, got " .. tostring(got and show_bytes(got) or code)
    end
    return nil
  end
  local got, _, code = recv(15)
  if code == "too_large" and c.partial and #c.partial > (c.limit or math.huge) then
    got, _, code = recv(15)
  end
  if got ~= nil or code ~= "closed" then
    return ("after the peer went: expected closed, got %s"):format(got and show_bytes(tostring(got)) or tostring(code))
  end
  local _, _, again = recv(1)
  if again ~= "closed" then return "closed once, then " .. tostring(again) end
  return nil
end

function T.ids_of(c)
  if not c.use_ids then return nil end
  local ids = {}
  for _, id in ipairs(c.ids) do ids[id] = true end
  return ids
end

-- The transport's two ways of reading: raw text, or decoded as a CDP
-- message (with the in-place decoding of the replies named in ids).
local function recv(t, deadline, decode, ids)
  if decode then return t:recv_cdp(deadline, ids) end
  return t:recv(deadline)
end

-- Reads every message of the case from t, then its end.
function T.check_transport(c, t)
  local ids = T.ids_of(c)
  for i, m in ipairs(c.messages) do
    local t0 = core.now()
    local got, err, code, head = recv(t, t0 + 15, c.decode, ids)
    if core.now() - t0 > 16 then return ("message %d: recv overran its deadline"):format(i) end
    local failure = T.check_one(c, i, m, got, err, code, head, ids)
    if failure then return failure end
  end
  local failure = T.check_end(c, function(wait)
    local t0 = core.now()
    local got, err, code = recv(t, t0 + wait, c.decode, ids)
    if core.now() - t0 > wait + 1 then return nil, "overran", "recv overran its deadline" end
    return got, err, code
  end)
  if failure then return failure end
  if t:pending() then return "pending() is true with nothing left" end
  return nil
end

function T.run(c, ctx)
  local proc, t = core.process.spawn({ ctx.lua, ctx.dir .. "/fuzz/peer.lua", "pipe", tostring(ctx.seed),
    tostring(ctx.index) }, { pipe = true, env = { DEVTOOLS_TOOLS_BUILD = ctx.build } })
  if not proc then return "cannot start the peer: " .. tostring(t) end
  if c.limit then t:limit(c.limit) end
  local failure = T.check_transport(c, t)
  t:close()
  proc:close(0)
  return failure
end

return T
