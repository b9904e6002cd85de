-- devtools_tools.schema.uri: URI references for $id and $ref (RFC 3986).
--
-- Pure string functions: resolve a reference against a base, split off a
-- fragment, percent-decode a JSON pointer (or one of its tokens, strictly).
-- It must never touch the network or hold state.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local type, rawget, tonumber = type, rawget, tonumber
local concat = table.concat
local sfind, ssub, sgsub, smatch, schar = string.find, string.sub, string.gsub,
                                          string.match, string.char

local M = {}

local function split_uri(u)
  local scheme, rest = smatch(u, "^(%a[%w%+%-%.]*):(.*)$")
  if not scheme then rest = u end
  local frag, query, auth
  local h = sfind(rest, "#", 1, true)
  if h then frag = ssub(rest, h + 1); rest = ssub(rest, 1, h - 1) end
  local q = sfind(rest, "?", 1, true)
  if q then query = ssub(rest, q + 1); rest = ssub(rest, 1, q - 1) end
  if ssub(rest, 1, 2) == "//" then
    local s = sfind(rest, "/", 3, true)
    auth = ssub(rest, 3, s and s - 1 or -1)
    rest = s and ssub(rest, s) or ""
  end
  return scheme, auth, rest, query, frag
end

-- RFC 3986 section 5.2.4
local function remove_dots(input)
  local out = {}
  while input ~= "" do
    if ssub(input, 1, 3) == "../" then input = ssub(input, 4)
    elseif ssub(input, 1, 2) == "./" then input = ssub(input, 3)
    elseif ssub(input, 1, 3) == "/./" then input = ssub(input, 3)
    elseif input == "/." then input = "/"
    elseif ssub(input, 1, 4) == "/../" then input = ssub(input, 4); out[#out] = nil
    elseif input == "/.." then input = "/"; out[#out] = nil
    elseif input == "." or input == ".." then input = ""
    else
      local s = sfind(input, "/", 2, true)
      out[#out + 1] = s and ssub(input, 1, s - 1) or input
      input = s and ssub(input, s) or ""
    end
  end
  return concat(out)
end

-- RFC 3986 section 5.2.2: ref resolved against base.
local function resolve(base, ref)
  local rs, ra, rp, rq, rf = split_uri(ref)
  local ts, ta, tp, tq
  if rs then
    ts, ta, tp, tq = rs, ra, remove_dots(rp), rq
  else
    local bs, ba, bp, bq = split_uri(base)
    ts = bs
    if ra then
      ta, tp, tq = ra, remove_dots(rp), rq
    else
      ta = ba
      if rp == "" then
        tp, tq = bp, rq or bq
      else
        if ssub(rp, 1, 1) == "/" then
          tp = remove_dots(rp)
        elseif ba and bp == "" then
          tp = remove_dots("/" .. rp)
        else
          tp = remove_dots((smatch(bp, "^(.*/)") or "") .. rp)
        end
        tq = rq
      end
    end
  end
  local out = {}
  if ts then out[#out + 1] = ts .. ":" end
  if ta then out[#out + 1] = "//" .. ta end
  out[#out + 1] = tp
  if tq then out[#out + 1] = "?" .. tq end
  if rf then out[#out + 1] = "#" .. rf end
  return concat(out)
end

local function split_fragment(u)
  local h = sfind(u, "#", 1, true)
  if h then return ssub(u, 1, h - 1), ssub(u, h + 1) end
  return u, nil
end

local function pct_decode(s)
  return (sgsub(s, "%%(%x%x)", function(h) return schar(tonumber(h, 16)) end))
end

-- decode_component(s) -> s with every %XX decoded, or nil where
-- JavaScript's decodeURIComponent throws "URI malformed" (what ajv 6 does
-- to each token of a $ref's pointer): a "%" without two hex digits after
-- it, or escapes that are not the UTF-8 of one code point (cut short,
-- overlong, a surrogate, past U+10FFFF).
local function decode_component(s)
  if not sfind(s, "%", 1, true) then return s end
  local out, i, n = {}, 1, #s
  while i <= n do
    local p = sfind(s, "%", i, true)
    if not p then out[#out + 1] = ssub(s, i); break end
    out[#out + 1] = ssub(s, i, p - 1)
    local h = smatch(s, "^%%(%x%x)", p)
    if not h then return nil end
    local b = tonumber(h, 16)
    i = p + 3
    if b < 0x80 then
      out[#out + 1] = schar(b)
    else
      local len, cp, least
      if b >= 0xC0 and b < 0xE0 then len, cp, least = 2, b - 0xC0, 0x80
      elseif b >= 0xE0 and b < 0xF0 then len, cp, least = 3, b - 0xE0, 0x800
      elseif b >= 0xF0 and b < 0xF8 then len, cp, least = 4, b - 0xF0, 0x10000
      else return nil end
      out[#out + 1] = schar(b)
      for _ = 2, len do
        local c = smatch(s, "^%%(%x%x)", i)
        c = c and tonumber(c, 16)
        if not c or c < 0x80 or c >= 0xC0 then return nil end
        cp = cp * 64 + (c - 0x80)
        out[#out + 1] = schar(c)
        i = i + 3
      end
      if cp < least or cp > 0x10FFFF or (cp >= 0xD800 and cp <= 0xDFFF) then return nil end
    end
  end
  return concat(out)
end

-- The base URI inside a schema node, given the one around it. In draft-07
-- a $ref makes every sibling keyword, $id included, ignored.
local function inner_base(node, outer)
  if type(node) == "table" then
    local id = rawget(node, "$id")
    if type(id) == "string" and rawget(node, "$ref") == nil then
      return (split_fragment(resolve(outer, id)))
    end
  end
  return outer
end

M.resolve, M.split_fragment, M.pct_decode, M.decode_component, M.inner_base =
  resolve, split_fragment, pct_decode, decode_component, inner_base

return M
