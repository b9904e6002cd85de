-- devtools_tools.mcp.hosts: what a URL's host is, read as the browser
-- reads it (WHATWG URL: percent-decoded, lower case, one trailing dot
-- dropped, IPv4 written in any of its forms - 2852039166, 0xA9FEA9FE,
-- 0251.0376.0251.0376 - and IPv6 with IPv4 mapped into it), and which
-- hosts devtools.navigate may load: a model that reads a page's text can
-- be talked into loading anything, and a URL of the cloud's metadata
-- service or of a machine on the private network turns the browser into
-- a way in.
--
-- Allowed: loopback (the developer's own app), public addresses and
-- names, the host of the page the server was started on, and the hosts
-- the user named (--allow-navigate). Refused: link-local addresses
-- (169.254.0.0/16 with the metadata services, fe80::/10), the private
-- networks (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7, fec0::/10),
-- 0.0.0.0/8 and ::, multicast and reserved addresses, and the metadata
-- services' names. A name is not resolved: one that a DNS server points
-- at a private address is not caught here (the browser resolves it).
--
-- It must never take a host for allowed that the browser reads as a
-- refused address, whatever the spelling.

local dt = require "devtools_tools"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local tonumber, type, ipairs, floor = tonumber, type, ipairs, math.floor
local lower, gsub, find, sub = string.lower, string.gsub, string.find, string.sub
local match, format = string.match, string.format
local concat = table.concat

local M = {}

local METADATA_NAMES = { ["metadata.google.internal"] = true, ["metadata.goog"] = true, ["metadata"] = true,
  ["instance-data"] = true, ["instance-data.ec2.internal"] = true, ["metadata.azure.internal"] = true }

-- ---- IPv4 (WHATWG's IPv4 parser) ---------------------------------------------------

local function ipv4_number(part)
  if part == "" then return nil end
  local h = match(part, "^0[xX](%x*)$")
  if h then return h == "" and 0 or tonumber(h, 16) end
  if find(part, "^0%d") then
    if find(part, "[89]") or not find(part, "^%d+$") then return nil end
    return tonumber(part, 8)
  end
  if find(part, "^%d+$") then return tonumber(part, 10) end
  return nil
end

-- ends_in_number(host): the browser reads it as IPv4 (or refuses it)
local function ends_in_number(host)
  local last = match(host, "([^.]*)$")
  return last ~= "" and (find(last, "^%d+$") ~= nil or find(last, "^0[xX]%x*$") ~= nil)
end

-- ipv4(host) -> {a, b, c, d} | nil, problem
local function ipv4(host)
  local parts = {}
  for p in (host .. "."):gmatch("([^.]*)%.") do parts[#parts + 1] = p end
  if #parts > 4 then return nil, "an IPv4 address of more than four parts" end
  local nums = {}
  for i, p in ipairs(parts) do
    local n = ipv4_number(p)
    if not n then return nil, "an IPv4 address with a part that is no number" end
    nums[i] = n
  end
  local last = nums[#nums]
  for i = 1, #nums - 1 do
    if nums[i] > 255 then return nil, "an IPv4 address with a part over 255" end
  end
  if last >= 256 ^ (5 - #nums) then return nil, "an IPv4 address out of range" end
  local v = last
  for i = 1, #nums - 1 do v = v + nums[i] * 256 ^ (4 - i) end
  return { floor(v / 16777216) % 256, floor(v / 65536) % 256, floor(v / 256) % 256, floor(v % 256) }
end

-- ---- IPv6 -----------------------------------------------------------------------

-- ipv6(text) -> a list of 8 numbers | nil
local function ipv6(s)
  local head, tail = s, nil
  local dc = find(s, "::", 1, true)
  if dc then
    head, tail = sub(s, 1, dc - 1), sub(s, dc + 2)
    if find(tail, "::", 1, true) then return nil end
  end
  local function split(t)
    local out = {}
    if t == "" then return out end
    for g in (t .. ":"):gmatch("([^:]*):") do out[#out + 1] = g end
    return out
  end
  local hs, ts = split(head), tail and split(tail) or {}
  local function read(list)
    local out = {}
    for i, g in ipairs(list) do
      if i == #list and find(g, ".", 1, true) then
        local v4 = find(g, "^%d+%.%d+%.%d+%.%d+$") and ipv4(g)
        if not v4 then return nil end
        out[#out + 1] = v4[1] * 256 + v4[2]
        out[#out + 1] = v4[3] * 256 + v4[4]
      else
        if not find(g, "^%x%x?%x?%x?$") then return nil end
        out[#out + 1] = tonumber(g, 16)
      end
    end
    return out
  end
  local a, b = read(hs), read(ts)
  if not a or not b then return nil end
  if dc then
    if #a + #b > 7 then return nil end
    for _ = 1, 8 - #a - #b do a[#a + 1] = 0 end
  elseif #a ~= 8 then
    return nil
  end
  for _, x in ipairs(b) do a[#a + 1] = x end
  return a
end

-- ---- hosts ------------------------------------------------------------------------

local function percent_decode(s)
  return (gsub(s, "%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

-- host(text) -> {kind = "ipv4" | "ipv6" | "name", text = canonical, v4 | v6} | nil, problem
function M.host(h)
  if h == nil or h == "" then return nil, "no host" end
  if sub(h, 1, 1) == "[" then
    local inner = match(h, "^%[([%x:.]+)%]$")
    local v6 = inner and ipv6(lower(inner))
    if not v6 then return nil, "a malformed IPv6 address" end
    local parts = {}
    for i, x in ipairs(v6) do parts[i] = format("%x", x) end
    return { kind = "ipv6", text = "[" .. concat(parts, ":") .. "]", v6 = v6 }
  end
  h = lower(percent_decode(h))
  if sub(h, -1) == "." and #h > 1 then h = sub(h, 1, -2) end
  if find(h, "[%z%s#%%/:<>%?@%[\\%]%^|]") then return nil, "a host with characters no host has" end
  if ends_in_number(h) then
    local v4, why = ipv4(h)
    if not v4 then return nil, why end
    return { kind = "ipv4", text = concat(v4, "."), v4 = v4 }
  end
  return { kind = "name", text = h }
end

-- parse(url) -> {scheme, host (as M.host), port, origin} | nil, problem;
-- for URLs with an authority (http, https, ws, ...)
function M.parse(url)
  if type(url) ~= "string" then return nil, "not a URL" end
  local scheme, rest = match(url, "^(%a[%w+.-]*):(.*)$")
  if not scheme then return nil, "no scheme" end
  scheme = lower(scheme)
  rest = gsub(rest, "\\", "/")                    -- as the browser reads a special scheme's
  local auth = match(rest, "^//([^/?#]*)")
  if not auth then return nil, "no host (want " .. scheme .. "://HOST/...)" end
  auth = match(auth, "^.*@(.*)$") or auth      -- (the last @ ends a user:password)
  local hosttext, port
  if sub(auth, 1, 1) == "[" then
    hosttext, port = match(auth, "^(%[[^%]]*%])(.*)$")
    if not hosttext then return nil, "a malformed IPv6 address" end
  else
    hosttext, port = match(auth, "^([^:]*)(.*)$")
  end
  if port ~= "" then
    local p = match(port, "^:(%d*)$")
    if not p then return nil, "a malformed port" end
    if p ~= "" and tonumber(p) > 65535 then return nil, "a port over 65535" end
    port = p ~= "" and tonumber(p) or nil
  else
    port = nil
  end
  local host, why = M.host(hosttext)
  if not host then return nil, why end
  return { scheme = scheme, host = host, port = port }
end

-- ---- what navigate may load ------------------------------------------------------

local function v4_class(a)
  local x, y = a[1], a[2]
  if x == 127 then return "loopback" end
  if x == 169 and y == 254 then
    return (a[3] == 169 and a[4] == 254) and "a cloud metadata address" or "a link-local address"
  end
  if x == 100 and y == 100 and a[3] == 100 and a[4] == 200 then return "a cloud metadata address" end
  if x == 10 or (x == 172 and y >= 16 and y <= 31) or (x == 192 and y == 168)
      or (x == 100 and y >= 64 and y <= 127) then
    return "a private network address"
  end
  if x == 0 then return "an unspecified address (0.0.0.0/8)" end
  if x >= 224 then return "a multicast or reserved address" end
  return "public"
end

local function v6_class(g)
  local zero6 = g[1] == 0 and g[2] == 0 and g[3] == 0 and g[4] == 0 and g[5] == 0
  if zero6 and g[6] == 0 and g[7] == 0 and g[8] == 1 then return "loopback" end
  if zero6 and g[6] == 0 and g[7] == 0 and g[8] == 0 then return "an unspecified address (::)" end
  if (zero6 and g[6] == 0xffff) or (g[1] == 0x64 and g[2] == 0xff9b and g[3] == 0 and g[4] == 0
      and g[5] == 0 and g[6] == 0) then
    return v4_class({ floor(g[7] / 256), g[7] % 256, floor(g[8] / 256), g[8] % 256 })
  end
  if g[1] >= 0xfe80 and g[1] <= 0xfebf then return "a link-local address" end
  if g[1] == 0xfd00 and g[2] == 0x0ec2 then return "a cloud metadata address" end
  if (g[1] >= 0xfc00 and g[1] <= 0xfdff) or (g[1] >= 0xfec0 and g[1] <= 0xfeff) then
    return "a private network address"
  end
  if g[1] >= 0xff00 then return "a multicast address" end
  return "public"
end

-- class(host) -> "loopback" | "public" | what makes it refused
function M.class(host)
  if host.kind == "ipv4" then return v4_class(host.v4) end
  if host.kind == "ipv6" then return v6_class(host.v6) end
  local name = host.text
  if name == "localhost" or sub(name, -10) == ".localhost" then return "loopback" end
  if METADATA_NAMES[name] then return "a cloud metadata service's name" end
  return "public"
end

-- allowed(url, opts) -> true | nil, why. opts.allow: a list of hosts
-- (--allow-navigate: names, addresses, each read as a host is); opts.own:
-- the host of the page served first (its own host is allowed).
function M.allowed(url, opts)
  local u, why = M.parse(url)
  if not u then return nil, why end
  local c = M.class(u.host)
  if c == "loopback" or c == "public" then return true end
  local allow = opts and opts.allow or {}
  for _, a in ipairs(allow) do
    local h = M.host(a)
    if h and h.text == u.host.text then return true end
  end
  local own = opts and opts.own
  if own and own.text == u.host.text then return true end
  return nil, u.host.text .. " is " .. c .. ": devtools.navigate loads it only when it is the host of"
    .. " the page this server was started on, or with --allow-navigate " .. u.host.text
end

return M
