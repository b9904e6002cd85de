-- tools/fuzz/base64_target.lua: `make fuzz` cases for core.base64.decode
-- (src/base64.c), against a reference decoder in plain Lua (the one the
-- library used before the C one: slow, and simple enough to trust).
--
-- A case is random bytes encoded (with each padding), then sometimes with
-- line breaks put in, bytes flipped, inserted or cut, or "=" put anywhere;
-- or random text over an alphabet of base64 and its neighbours. Check: the
-- C decoder gives the same bytes as the reference, or fails where it does
-- with the same message. Generation must stay a pure function of the case's
-- generator (no pairs order, no clock).

local core = require "devtools_tools.core"

local T = { name = "base64", batch = 2000 }

local ref = require "support.base64_ref"      -- spec/support: the encoder the specs use too

local encode = ref.encode
local VALUE = {}
for i = 1, #ref.ALPHABET do VALUE[ref.ALPHABET:byte(i)] = i - 1 end

local NEAR = ref.ALPHABET .. "=\r\n -_.!\0\255"

-- reference(text) -> bytes | nil, message
local function reference(s)
  s = s:gsub("[\r\n]", "")
  local n = #s
  if n % 4 ~= 0 then return nil, "not base64 text at byte " .. n end
  local out = {}
  for i = 1, n, 4 do
    local b1, b2, b3, b4 = s:byte(i, i + 3)
    local v1, v2, v3, v4 = VALUE[b1], VALUE[b2], VALUE[b3], VALUE[b4]
    if not v1 or not v2 then return nil, "not base64 text at byte " .. i end
    local x = (v1 << 18) | (v2 << 12)
    if v4 then
      if not v3 then return nil, "not base64 text at byte " .. (i + 2) end
      x = x | (v3 << 6) | v4
      out[#out + 1] = string.char(x >> 16, (x >> 8) & 255, x & 255)
    elseif b4 == 61 and i + 3 == n then
      if v3 then
        x = x | (v3 << 6)
        out[#out + 1] = string.char(x >> 16, (x >> 8) & 255)
      elseif b3 == 61 then
        out[#out + 1] = string.char(x >> 16)
      else
        return nil, "not base64 text at byte " .. (i + 2)
      end
    else
      return nil, "not base64 text at byte " .. (i + 3)
    end
  end
  return table.concat(out)
end

function T.gen(r)
  if r:chance(0.2) then return { text = r:bytes(r:size(64), NEAR) } end
  local s = encode(r:bytes(r:size(r:chance(0.05) and 100000 or 300)))
  local k = r:int(0, 4)
  for _ = 1, (k == 0 and 0 or r:int(1, 3)) do
    local at = r:int(1, #s + 1)
    local kind = r:int(1, 5)
    if kind == 1 then s = s:sub(1, at - 1) .. r:pick({ "\n", "\r\n", "\r" }) .. s:sub(at)
    elseif kind == 2 then s = s:sub(1, at - 1) .. r:bytes(1, NEAR) .. s:sub(at + 1)
    elseif kind == 3 then s = s:sub(1, at - 1) .. r:bytes(r:int(1, 4), NEAR) .. s:sub(at)
    elseif kind == 4 then s = s:sub(1, at - 1) .. s:sub(at + r:int(1, 4))
    else s = s:sub(1, at - 1) .. "=" .. s:sub(at) end
  end
  return { text = s }
end

function T.show(c)
  local s = c.text
  if #s > 200 then return ("%d bytes: %q..."):format(#s, s:sub(1, 200)) end
  return ("%q"):format(s)
end

function T.run(c)
  local want, want_err = reference(c.text)
  local ok, got, got_err = pcall(core.base64.decode, c.text)
  if not ok then return "core.base64.decode raised: " .. tostring(got) end
  if want ~= got then
    return ("bytes differ: the reference gives %s, the C decoder %s"):format(
      want and (#want .. " bytes") or "nil", got and (#got .. " bytes") or "nil")
  end
  if want_err ~= got_err then
    return ("messages differ: %q against %q"):format(tostring(want_err), tostring(got_err))
  end
  return nil
end

return T
