-- devtools_tools.page.screenshot: page:screenshot{path=, full_page=, element=,
-- format=, quality=}, an image (PNG, JPEG or WebP) of the viewport, of the
-- whole document, or of one element (an Element a tool returned, or a CSS
-- selector), written to a file or returned as bytes.
--
-- Page holds a Camera (page.camera), which keeps what a capture reuses
-- (the isolated world devicePixelRatio is read in).
--
-- What it must never do: leave the page's viewport changed (the whole
-- document is captured with captureBeyondViewport, not by resizing), write
-- a partial file (bytes go to a temporary name, renamed when complete), or
-- run past the call's one deadline.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local options = require "devtools_tools.base.options"
local element = require "devtools_tools.tools.element"
local base64 = require "devtools_tools.base.base64"
local json = require "devtools_tools.base.json"
local remote = require "devtools_tools.wire.remote"

local raise = errors.raise
local type, math_max, math_min, error, setmetatable = type, math.max, math.min, error, setmetatable

local M = {}

local shot_opts = { path = "string", full_page = "boolean", element = true, timeout = true,
  base64 = "boolean", format = "string", quality = "number" }

-- The formats Page.captureScreenshot writes.
M.FORMATS = { png = true, jpeg = true, webp = true }

-- The box of a node in CSS pixels of the main frame's viewport.
local function box_of(quad)
  local xs = { quad[1], quad[3], quad[5], quad[7] }
  local ys = { quad[2], quad[4], quad[6], quad[8] }
  local x0, y0 = math_min(xs[1], xs[2], xs[3], xs[4]), math_min(ys[1], ys[2], ys[3], ys[4])
  local x1, y1 = math_max(xs[1], xs[2], xs[3], xs[4]), math_max(ys[1], ys[2], ys[3], ys[4])
  return x0, y0, x1 - x0, y1 - y0
end

-- The most pixels one capture may have (a 1 GiB bitmap): 16384 x 16384
-- and 780 x 200000 px pages are captured here; Chromium fails on more.
local MAX_PIXELS = 268435456

local function call(conn, method, params, session, deadline)
  return conn:await(conn:send(method, params, session, deadline), deadline, method)
end

local Camera = {}
Camera.__index = Camera
M.Camera = Camera

-- new(site) -> Camera: for the page whose site it is (page/site.lua)
function M.new(site)
  return setmetatable({ site = site, conn = site.conn, docs = site.docs, session = site.docs.session }, Camera)
end

local function element_clip(self, el, deadline, metrics)
  local conn, docs = self.conn, self.docs
  local params
  if element.is_element(el) then
    local ed = element.document_of(el)
    if not (ed and ed.site == self.site) then
      raise("bad_argument", "screenshot: the Element belongs to another page")
    end
    if element.stale(el) then error(errors.gone("screenshot: the Element"), 0) end
    local fr = docs.frames[ed.frame_id]
    if fr and fr.session and fr.session ~= self.session then
      raise("bad_argument", "screenshot: the Element lives in an out-of-process iframe; capture the page instead")
    end
    params = { backendNodeId = el.backend_node_id }
  elseif type(el) == "string" then
    -- Found by the page's querySelector, not the DOM domain: DOM.getDocument
    -- would make Chromium send an event for every later change of the
    -- document (50,000 appends then took 34 times as long)
    local q = call(conn, "Runtime.evaluate", { expression = "document.querySelector(" .. json.encode(el) .. ")",
      objectGroup = remote.object_group() }, self.session, deadline)
    if q.exceptionDetails then      -- a selector it cannot parse ("", "((")
      remote.release_thrown(conn, self.session, q)   -- (the SyntaxError, which Chromium keeps)
      raise("bad_argument", "screenshot: " .. json.encode(el) .. " is not a valid CSS selector")
    end
    local oid = q.result and q.result.objectId
    if not oid then raise("bad_argument", "screenshot: no element matches " .. json.encode(el)) end
    params = { objectId = oid }
  else
    raise("bad_argument", "screenshot: element must be an Element or a CSS selector, got " .. type(el))
  end
  local ok, box = errors.catch(call, conn, "DOM.getBoxModel", params, self.session, deadline)
  if params.objectId then conn:send_nowait("Runtime.releaseObject", { objectId = params.objectId }, self.session) end
  if not ok then
    if box.code == "protocol_error" then
      raise("bad_argument", "screenshot: the element has no box (not rendered): " .. box.message)
    end
    error(box, 0)
  end
  local x, y, w, h = box_of(box.model.border)
  if w <= 0 or h <= 0 then raise("bad_argument", "screenshot: the element has an empty box") end
  local vv = metrics.cssVisualViewport or {}
  return { x = x + (vv.pageX or 0), y = y + (vv.pageY or 0), width = w, height = h, scale = 1 }
end

-- device_ratio(page, deadline) -> devicePixelRatio, at least 1: the capture
-- has that many device px per CSS px on each side (3 under a phone's
-- emulation). Read in an isolated world of the main frame, made once per
-- document: the page's own window.devicePixelRatio is [Replaceable], so a
-- page could say 1 and have Chromium sent a capture 9 times the bound.
local function device_ratio(self, deadline)
  local conn, docs = self.conn, self.docs
  local fr = docs.frames[docs.main_frame]
  local w = self.world
  for _ = 1, 2 do
    if not (w and fr and w.loader == fr.loader_id) then
      local made = call(conn, "Page.createIsolatedWorld", { frameId = docs.main_frame,
        worldName = "devtools_tools" }, self.session, deadline)
      w = { loader = fr and fr.loader_id, id = made.executionContextId }
      self.world = w
    end
    local ok, r = errors.catch(call, conn, "Runtime.evaluate", { expression = "devicePixelRatio",
      contextId = w.id, returnByValue = true }, self.session, deadline)
    if ok then
      local v = r.result and r.result.value
      return (type(v) == "number" and v >= 1 and v < math.huge) and v or 1
    end
    if r.code ~= "protocol_error" then error(r, 0) end
    w = nil                      -- its document went away meanwhile: once more
  end
  return 1
end

-- camera:screenshot(opts?) -> the image's bytes (also written to opts.path
-- when given); with opts.base64 the image as base64 text, as Chromium sent
-- it (what an MCP image or a data: URL holds: no decoding and encoding
-- again). opts.format: "png" (default), "jpeg" or "webp"; opts.quality:
-- 0-100, for jpeg and webp (Chromium's default otherwise).
function Camera:screenshot(opts)
  opts = options.check(opts, shot_opts, "screenshot")
  self.site:check_open()
  if opts.full_page and opts.element ~= nil then
    raise("bad_argument", "screenshot: full_page and element exclude each other")
  end
  local format = opts.format or "png"
  if not M.FORMATS[format] then
    raise("bad_argument", "screenshot: format must be \"png\", \"jpeg\" or \"webp\", got \"" .. format .. "\"")
  end
  local q = opts.quality
  if q ~= nil and (format == "png" or q ~= q or q < 0 or q > 100 or q % 1 ~= 0) then
    raise("bad_argument", "screenshot: quality is an integer from 0 to 100, for jpeg and webp only")
  end
  local conn = self.conn
  local deadline = conn:deadline(opts)
  local params = { format = format, quality = q }
  if opts.full_page or opts.element ~= nil then
    local mid = conn:send("Page.getLayoutMetrics", nil, self.session, deadline)
    local dpr = device_ratio(self, deadline)
    local m = conn:await(mid, deadline, "Page.getLayoutMetrics")
    if opts.full_page then
      local size = m.cssContentSize or m.contentSize
      params.clip = { x = 0, y = 0, width = size.width, height = size.height, scale = 1 }
    else
      params.clip = element_clip(self, opts.element, deadline, m)
    end
    params.captureBeyondViewport = true
    -- Chromium fails to capture much more, and a few such tries end the
    -- whole browser (a 30000 x 200000 px page did, every other page with it)
    local c = params.clip
    if c.width * dpr * c.height * dpr > MAX_PIXELS then
      raise("too_large", ("screenshot: %s is %d x %d px%s, over the %d pixels one capture can hold;"
        .. " capture the viewport or an element"):format(opts.full_page and "the page" or "the element",
        math.ceil(c.width * dpr), math.ceil(c.height * dpr),
        dpr == 1 and "" or (" (%g device px per CSS px)"):format(dpr), MAX_PIXELS))
    end
  end
  local r = call(conn, "Page.captureScreenshot", params, self.session, deadline)
  local data = r.data or ""
  if opts.base64 and not opts.path then
    if type(data) ~= "string" or data:find("[^%w+/=]") then
      raise("protocol_error", "screenshot: Chromium's image is not base64 text")
    end
    return data
  end
  local png = base64.decode(data)
  if opts.path then
    -- a regular file is replaced whole (never half written), anything else
    -- at the path (a symlink, /dev/stdout, a FIFO) written through
    local ok, err = core.fs.write_file(opts.path, png)
    if not ok then raise("bad_argument", "screenshot: " .. err) end
  end
  if opts.base64 then return data end
  return png
end

return M
