-- A reference base64 encoder for the specs and the fuzzer (tools/fuzz/
-- base64_target.lua): plain arithmetic, so it runs on Lua 5.1 and LuaJIT
-- too. The library only decodes (src/base64.c).

local R = {}

R.ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

-- encode(bytes) -> base64 text with "=" padding
function R.encode(s)
  local alpha, out = R.ALPHABET, {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local x = a * 65536 + (b or 0) * 256 + (c or 0)
    local q = {}
    for j = 4, 1, -1 do
      local v = x % 64
      q[j] = alpha:sub(v + 1, v + 1)
      x = (x - v) / 64
    end
    if not c then q[4] = "=" end
    if not b then q[3] = "=" end
    out[#out + 1] = table.concat(q)
  end
  return table.concat(out)
end

return R
