-- TLS in the C core without a browser: core.http.request (https, methods,
-- bodies, headers) and core.ws.connect{tls = true} through
-- spec/support/tls_proxy in front of spec/support/ws_server, with a CA this
-- spec makes. Part of `make asan` and `make valgrind` (no Chromium here).
local core = require "devtools_tools.core"
local cjson = require "cjson"
local R = require "support.remote_helper"
local ws_helper = require "support.ws_helper"

describe("TLS streams", function()
  local certs, server, sport, proxy, pport, open_proxy, oport

  setup(function()
    certs = R.certificates()
    server, sport = ws_helper.start()
    proxy, pport = R.proxy(certs, sport, "Authorization: Bearer t0ken")
    open_proxy, oport = R.proxy(certs, sport, nil)
  end)

  teardown(function()
    if proxy then R.stop(proxy) end
    if open_proxy then R.stop(open_proxy) end
    if server then ws_helper.stop(server) end
    if certs then core.fs.rmtree(certs.dir) end
  end)

  local function tls(extra)
    local o = { deadline = core.now() + 10, tls = true, server_name = "localhost",
      ca_file = certs.ca, headers = { Authorization = "Bearer t0ken" } }
    for k, v in pairs(extra or {}) do o[k] = v end
    if o.ca_file == false then o.ca_file = nil end     -- false: no CA file at all
    return o
  end

  it("GETs over https with the header, by Content-Length and by chunks", function()
    local status, body = core.http.request("127.0.0.1", pport, "/size/70000", tls())
    assert.are.equal(200, status)
    assert.are.equal(string.rep("x", 70000), body)
    status, body = core.http.request("localhost", pport, "/chunked/5000", tls())
    assert.are.equal(200, status)
    assert.are.equal(5000, #body)
    status, body = core.http.request("127.0.0.1", pport, "/json/version", tls())
    assert.are.equal(200, status)
    assert.is_string(cjson.decode(body).webSocketDebuggerUrl)
  end)

  it("runs an https request step by step for an event loop (http_start)", function()
    local req = assert(core.http.start("127.0.0.1", pport, "/size/200000", tls()))
    assert.matches("HttpRequest%(GET https://127.0.0.1:%d+/size/200000", tostring(req))
    -- until it is finished, there is always a descriptor to watch
    local status, body
    for _ = 1, 10000 do
      status, body = req:step(core.now() + 0.05)
      if status ~= false then break end
      local rfd, wfd = req:fds()
      assert.is_true(rfd ~= nil or wfd ~= nil)
    end
    assert.are.equal(200, status, body)
    assert.are.equal(200000, #body)
    assert.are.same({}, { req:fds() })          -- finished: nothing to watch
    req:close()
    -- a refused certificate ends the request the same way (at once, or
    -- at a later step: start does what it can without waiting)
    local ok, err, code = core.http.start("127.0.0.1", pport, "/size/3",
      tls({ ca_file = certs.other_ca }))
    req = ok
    for _ = 1, 10000 do
      if not req then break end
      ok, err, code = req:step(core.now() + 0.05)
      if ok ~= false then break end
    end
    assert.is_nil(ok)
    assert.are.equal("connect_failed", code)
    assert.matches("certificate verify failed", err)
  end)

  it("sends the method, the body and the headers as given", function()
    -- the open front forwards to ws_server, which answers 404 to what it
    -- does not serve; what matters is that the request got there whole
    local status = core.http.request("127.0.0.1", oport, "/json/version",
      tls({ method = "POST", body = '{"a":1}', content_type = "application/json",
        headers = { ["X-Test"] = "1" } }))
    assert.is_number(status)
    -- the guarded front sees the header or refuses
    status = core.http.request("127.0.0.1", pport, "/size/3", tls({ headers = {} }))
    assert.are.equal(401, status)
    status = core.http.request("127.0.0.1", pport, "/size/3",
      tls({ method = "DELETE", headers = { authorization = "Bearer t0ken" } }))
    assert.are.equal(200, status)
  end)

  it("refuses a certificate it cannot verify, and accepts it only when insecure", function()
    local ok, err, code = core.http.request("127.0.0.1", pport, "/size/3",
      tls({ ca_file = certs.other_ca }))
    assert.is_nil(ok)
    assert.are.equal("connect_failed", code)
    assert.matches("certificate verify failed", err)
    ok, err, code = core.http.request("127.0.0.1", pport, "/size/3",
      tls({ server_name = "127.0.0.1" }))
    assert.is_nil(ok)
    assert.are.equal("connect_failed", code)
    assert.matches("mismatch", err)
    ok, err, code = core.http.request("127.0.0.1", pport, "/size/3",
      tls({ ca_file = certs.dir .. "/missing.pem" }))
    assert.is_nil(ok, err)
    assert.are.equal("connect_failed", code)
    local status = core.http.request("127.0.0.1", pport, "/size/3",
      tls({ ca_file = false, insecure = true }))
    assert.are.equal(200, status)
  end)

  it("refuses bad options before anything is sent", function()
    assert.has_error(function()
      core.http.request("127.0.0.1", pport, "/", tls({ headers = { ["a b"] = "x" } }))
    end)
    assert.has_error(function()
      core.http.request("127.0.0.1", pport, "/", tls({ headers = { A = "x\r\nB: y" } }))
    end)
    assert.has_error(function()
      core.http.request("127.0.0.1", pport, "/", tls({ method = "get" }))
    end)
    assert.has_error(function()
      core.ws.connect("127.0.0.1", pport, "/", { headers = { ["a:b"] = "x" } })
    end)
  end)

  it("times out a TLS handshake nobody answers", function()
    local s, port = ws_helper.silent_listener()
    local t0 = core.now()
    local ok, _, code = core.http.request("127.0.0.1", port, "/", tls({ deadline = t0 + 0.3 }))
    s:close()
    assert.is_nil(ok)
    assert.are.equal("timeout", code)
  end)

  it("speaks wss with the header, echoes messages both ways", function()
    local t, err = core.ws.connect("127.0.0.1", pport, "/echo", { deadline = core.now() + 10,
      host_header = "localhost:" .. pport, tls = true, ca_file = certs.ca,
      headers = { Authorization = "Bearer t0ken" } })
    assert(t, err)
    local big = ws_helper.pattern(300000)
    assert.is_true(t:send(big, core.now() + 10))
    local got = assert(t:recv(core.now() + 10))
    assert.are.equal(#big, #got)
    assert.are.equal(big, got)
    t:close()
  end)

  it("refuses wss without the header, with another CA or another name", function()
    local base = { host_header = "localhost:" .. pport, tls = true, ca_file = certs.ca }
    local function try(extra)
      local o = { deadline = core.now() + 10 }
      for k, v in pairs(base) do o[k] = v end
      for k, v in pairs(extra) do o[k] = v end
      if o.ca_file == false then o.ca_file = nil end
      return core.ws.connect("127.0.0.1", pport, "/echo", o)
    end
    local t, err, code = try({})
    assert.is_nil(t)
    assert.are.equal("connect_failed", code)
    assert.matches("401", err)
    local _
    t, err, code = try({ headers = { Authorization = "Bearer t0ken" }, ca_file = certs.other_ca })
    assert.is_nil(t)
    assert.are.equal("connect_failed", code)
    assert.matches("certificate verify failed", err)
    t, _, code = try({ headers = { Authorization = "Bearer t0ken" },
      host_header = "127.0.0.1:" .. pport })
    assert.is_nil(t)
    assert.are.equal("connect_failed", code)
    t = assert(try({ headers = { Authorization = "Bearer t0ken" }, ca_file = false,
      insecure = true, host_header = "127.0.0.1:" .. pport }))
    t:close()
  end)
end)
