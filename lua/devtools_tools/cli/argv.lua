-- devtools_tools.cli.argv: the command line's words - the command, its
-- options (before or after it), its positional words and what follows
-- "--" - and the usage errors they can be (exit status 2).
--
-- It must never start anything, nor read anything but the words: every
-- usage error is found here or by the command before a browser starts.

local dt = require "devtools_tools"
local pargs = require "devtools_tools.present.args"
local def = require "devtools_tools.cli.definition"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local setmetatable, error, tonumber, pairs = setmetatable, error, tonumber, pairs

local M = {}

-- The metatable of usage errors: {message, cmd} (cmd: the command whose
-- --help the message points to).
M.Usage = {}

-- usage(message, cmd?): raises a usage error
function M.usage(msg, cmd)
  error(setmetatable({ message = msg, cmd = cmd }, M.Usage), 0)
end

local usage = M.usage

-- The options, as the command line's definition (cli/definition.lua)
-- declares them: those that take a value, the flags, the short names, and
-- those given any number of times (LIST_OPTS: opts[name] is the list of
-- all their values). A COMMA_OPTS value is a comma-separated list itself
-- (a JSON pointer of --ignore may hold a comma, and "" is the whole value).
M.VALUE_OPTS, M.FLAG_OPTS, M.LIST_OPTS, M.COMMA_OPTS = {}, {}, {}, {}
local SHORT = {}
for name, o in pairs(def.options()) do
  if o.arg then M.VALUE_OPTS[name] = true else M.FLAG_OPTS[name] = true end
  if o.list then M.LIST_OPTS[name] = true end
  if o.comma then M.COMMA_OPTS[name] = true end
  if o.short then SHORT[o.short:sub(2)] = name end
end

-- parse(argv, cmd) -> opts, positionals, rest (the words after "--", or nil)
function M.parse(argv, cmd)
  local opts, pos, rest = {}, {}, nil
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if rest then
      rest[#rest + 1] = a
    elseif a == "--" then
      rest = {}
    elseif a:sub(1, 2) == "--" then
      local name, value = a:match("^%-%-([%w-]+)=(.*)$")
      name = name or a:sub(3)
      if M.VALUE_OPTS[name] then
        if value == nil then
          i = i + 1
          value = argv[i]
          if value == nil then usage("--" .. name .. " needs a value", cmd) end
        end
        if value == "" and not (M.LIST_OPTS[name] and not M.COMMA_OPTS[name]) then
          usage("--" .. name .. " needs a value, not an empty one", cmd)
        end
        if M.LIST_OPTS[name] then
          local list = opts[name] or {}
          if M.COMMA_OPTS[name] then
            for v in value:gmatch("[^,]+") do list[#list + 1] = v end
          else
            list[#list + 1] = value
          end
          opts[name] = list
        else
          opts[name] = value
        end
      elseif M.FLAG_OPTS[name] and value == nil then
        opts[name] = true
      else
        usage("unknown option " .. a, cmd)
      end
    elseif a:match("^%-%a$") and SHORT[a:sub(2)] then
      opts[SHORT[a:sub(2)]] = true
    elseif a:match("^%-%a") then
      usage("unknown option " .. a, cmd)
    else
      pos[#pos + 1] = a
    end
    i = i + 1
  end
  if opts.timeout then
    local t = pargs.decimal(opts.timeout) and tonumber(opts.timeout)
    if not t or t <= 0 or t ~= t or t == math.huge then
      usage("--timeout needs a positive number of seconds (a finite one)", cmd)
    end
    opts.timeout = t
  end
  if opts.port then
    local n = opts.port:match("^%d+$") and tonumber(opts.port)
    if not n or n > 65535 then usage("--port needs a TCP port number from 0 to 65535 (0: any free one)", cmd) end
    opts.port = n
  end
  if opts.viewport then
    local w, h = opts.viewport:match("^(%d+)[xX](%d+)$")
    w, h = tonumber(w), tonumber(h)
    if not w or w < 100 or h < 100 or w > 10000 or h > 10000 then
      usage("--viewport needs WIDTHxHEIGHT in CSS pixels, each from 100 to 10000 (e.g. 1280x800)", cmd)
    end
    opts.viewport = { w, h }
  end
  return opts, pos, rest
end

-- The index of the first word of args, from index first, that is neither
-- an option nor an option's value (#args + 1 if none); the words in stop
-- end the search where they stand.
local function first_word(args, first, stop)
  local i = first
  while args[i] ~= nil and args[i]:sub(1, 1) == "-" and args[i] ~= "-" and not (stop and stop[args[i]]) do
    local name = args[i]:match("^%-%-([%w-]+)$")
    if name and M.VALUE_OPTS[name] then i = i + 1 end
    i = i + 1
  end
  return i
end

-- Options may come before the command too (`devtools-tools -q list URL`):
-- the command is the first word that is neither an option nor an option's
-- value; it is taken out and put first.
local NOT_BEFORE = { ["--"] = true, ["--version"] = true, ["--help"] = true, ["-h"] = true }
function M.split_command(argv)
  local i = first_word(argv, 1, NOT_BEFORE)
  if i == 1 then return argv end
  if argv[i] == nil or argv[i] == "--" then usage("options but no command") end
  local out = { argv[i] }
  for j = 1, #argv do if j ~= i then out[#out + 1] = argv[j] end end
  return out
end

-- has_scheme(s): a URL with its scheme (http://..., about:blank, data:...)
local function has_scheme(s)
  return s:match("^%a[%w+.-]*://") ~= nil or s:match("^about:") ~= nil or s:match("^data:") ~= nil
    or s:match("^blob:") ~= nil or s:match("^javascript:") ~= nil
end

-- looks_like_host(s): a URL without its scheme, as curl takes one: a host
-- with a port (example.com:8080), localhost, an IPv4 or [IPv6] address, or
-- a name with a dot and a path or a top-level domain of letters
-- (example.com, shop.test/cart), each maybe followed by a path
function M.looks_like_host(s)
  if s == nil or s:find("^[%-{]") or s:find("[%s=]") then return false end
  local host, tail = s:match("^([^/?#]*)(.*)$")
  if host:match("^%[[%x:.]+%]") then return true end
  local name, port = host:match("^(.-):(%d+)$")
  if port then return name ~= "" and name:match("^[%w.-]+$") ~= nil end
  if host:find(":", 1, true) then return false end
  if host == "localhost" or host:match("^%d+%.%d+%.%d+%.%d+$") then return true end
  return host:match("^[%w-]+%.[%w.-]*%a%a$") ~= nil or (tail ~= "" and host:match("^[%w-]+%.[%w.-]+$") ~= nil)
end

-- looks_like_url(s): a word that is a URL with its scheme (a lone word
-- of eval or screenshot is the expression or the file unless it has one)
function M.looks_like_url(s)
  return s ~= nil and has_scheme(s)
end

-- as_url(s) -> s, with http:// put first when it has no scheme (as curl
-- and httpie take `127.0.0.1:8080/path`)
function M.as_url(s)
  if s == nil or has_scheme(s) then return s end
  return "http://" .. s
end

return M
