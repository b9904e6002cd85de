-- devtools_tools: script the developer tools web pages expose, from Lua.
--
-- The facade: it requires the pieces and exports a curated table. It does
-- not re-export raw core functions; everything a user can call raises
-- dt.Error objects (see README, "Errors and timeouts").

local core = require "devtools_tools.core"
local errors = require "devtools_tools.errors"
local json = require "devtools_tools.json"
local browser = require "devtools_tools.browser"

local dt = {
  _VERSION = "devtools_tools 0.1.0",
  launch = browser.launch,
  connect = browser.connect,
  Error = errors.Error,
  is_error = errors.is_error,
  null = core.null,
  array_mt = core.array_mt,
  array = json.array,
  json = { encode = json.encode, decode = json.decode, null = core.null,
    array = json.array, array_mt = core.array_mt },
}

return dt
