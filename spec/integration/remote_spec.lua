-- Remote browsers: dt.connect over https:// and wss:// with headers, against
-- real headless Chromium behind spec/support/tls_proxy (TLS with a
-- certificate from a CA this spec makes, and a required Authorization
-- header): what a hosted endpoint looks like. Everything is on 127.0.0.1.
local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local R = require "support.remote_helper"

local TOKEN = "Bearer s3cret-token"

describe("remote browsers over TLS", function()
  local chrome, cport, certs, proxy, pport, wspath

  setup(function()
    chrome, cport = R.chromium()
    certs = R.certificates()
    proxy, pport = R.proxy(certs, cport, "Authorization: " .. TOKEN)
    local status, body = core.http.get("127.0.0.1", cport, "/json/version", core.now() + 10)
    assert(status == 200, body)
    wspath = body:match('"webSocketDebuggerUrl"%s*:%s*"ws://[^/"]+(/[^"]+)"')
    assert(wspath, body)
  end)

  teardown(function()
    if proxy then R.stop(proxy) end
    if chrome then R.stop(chrome, 2) end
    if certs then core.fs.rmtree(certs.dir) end
  end)

  local function https(path) return "https://localhost:" .. pport .. (path or "") end
  local function wss() return "wss://localhost:" .. pport .. wspath end

  local function expect_error(code, pattern, fn, ...)
    local ok, err = pcall(fn, ...)
    assert.is_false(ok, "expected an error")
    assert.is_true(dt.is_error(err), tostring(err))
    assert.are.equal(code, err.code, tostring(err))
    if pattern then assert.matches(pattern, err.message) end
    return err
  end

  it("attaches through https:// with the header and the spec's CA, and drives a page", function()
    local b = dt.connect(https(), { ca_file = certs.ca, headers = { Authorization = TOKEN },
      timeout = 20 })
    finally(function() b:close() end)
    assert.matches("^Chrome/", b:version().product)
    local page = b:new_page("about:blank")
    assert.are.equal(42, page:evaluate("6 * 7"))
    page:close()
  end)

  it("attaches through wss:// directly", function()
    local b = dt.connect(wss(), { ca_file = certs.ca, headers = { Authorization = TOKEN },
      timeout = 20 })
    finally(function() b:close() end)
    assert.is_table(b:pages())
  end)

  it("is refused without the required header, on /json/version and on the handshake", function()
    local e = expect_error("connect_failed", "401", dt.connect, https(), { ca_file = certs.ca, timeout = 10 })
    assert.are.equal(401, e.details.status)
    e = expect_error("connect_failed", "401", dt.connect, wss(), { ca_file = certs.ca, timeout = 10 })
    assert.are.equal(401, e.details.status)
    expect_error("connect_failed", "401", dt.connect, wss(),
      { ca_file = certs.ca, headers = { Authorization = "Bearer wrong" }, timeout = 10 })
    -- in a task the handshake runs on the loop: the same error
    local task = dt.async(function() return dt.connect(wss(), { ca_file = certs.ca, timeout = 10 }) end)
    local ok, te = pcall(task.wait, task, 15)
    assert.is_false(ok)
    assert.are.equal("connect_failed", te.code)
    assert.are.equal(401, te.details.status)
  end)

  it("refuses a certificate from another CA, or from no trusted CA, with connect_failed", function()
    local opts = { headers = { Authorization = TOKEN }, timeout = 10 }
    opts.ca_file = certs.other_ca
    expect_error("connect_failed", "certificate verify failed", dt.connect, https(), opts)
    expect_error("connect_failed", "certificate verify failed", dt.connect, wss(), opts)
    opts.ca_file = nil                      -- the system store knows nothing of our CA
    expect_error("connect_failed", "certificate verify failed", dt.connect, https(), opts)
    expect_error("connect_failed", "certificate verify failed", dt.connect, wss(), opts)
  end)

  it("refuses a certificate for another name (127.0.0.1 is not in it)", function()
    local opts = { ca_file = certs.ca, headers = { Authorization = TOKEN }, timeout = 10 }
    expect_error("connect_failed", "mismatch", dt.connect, "https://127.0.0.1:" .. pport, opts)
    expect_error("connect_failed", "certificate verify failed", dt.connect,
      "wss://127.0.0.1:" .. pport .. wspath, opts)
  end)

  it("accepts any certificate only with insecure = true", function()
    local b = dt.connect(wss(), { insecure = true, headers = { Authorization = TOKEN }, timeout = 20 })
    b:close()
    b = dt.connect("https://127.0.0.1:" .. pport, { insecure = true,
      headers = { Authorization = TOKEN }, timeout = 20 })
    b:close()
  end)

  it("checks its options", function()
    expect_error("bad_argument", "header", dt.connect, wss(), { headers = { ["Bad Name"] = "x" } })
    expect_error("bad_argument", "line breaks", dt.connect, wss(),
      { headers = { Authorization = "a\r\nX-Injected: 1" } })
    expect_error("bad_argument", "ca_file", dt.connect, wss(), { ca_file = 42 })
    expect_error("bad_argument", "expected", dt.connect, "ftp://localhost:1/")
  end)

  it("still refuses a non-loopback host without allow_remote", function()
    expect_error("connect_failed", "allow_remote", dt.connect, "wss://browser.example:443/devtools/browser/x",
      { headers = { Authorization = TOKEN } })
  end)

  it("reports disconnected when the remote end goes away mid-call", function()
    local p2, port2 = R.proxy(certs, cport, nil)
    local b = dt.connect("https://localhost:" .. port2, { ca_file = certs.ca, timeout = 20 })
    local pid2 = p2:pid()
    finally(function() b:close(); R.stop(p2, 0, pid2) end)
    local page = b:new_page("about:blank")
    -- a call that cannot finish by itself: the task sends it and waits
    local t = dt.async(function()
      return page:evaluate("new Promise(() => {})", { timeout = 20 })
    end)
    assert.is_false(t.done)
    p2:close(0)               -- SIGTERM: the front and its connections die
    local ok, err = pcall(t.wait, t, 20)
    assert.is_false(ok)
    assert.are.equal("disconnected", err.code, tostring(err))
    -- the browser itself is fine: a new connection to it works
    local b2 = dt.connect("http://127.0.0.1:" .. cport, { timeout = 20 })
    assert.matches("^Chrome/", b2:version().product)
    b2:close()
  end)

  describe("inside tasks", function()
    it("attaches over https and wss on the loop, and refuses what it refuses outside", function()
      local t = dt.async(function()
        local b = dt.connect(https(), { ca_file = certs.ca, headers = { Authorization = TOKEN },
          timeout = 20 })
        local page = b:new_page("about:blank")
        local v = page:evaluate("6 * 7")
        b:close()
        local b2 = dt.connect(wss(), { ca_file = certs.ca, headers = { Authorization = TOKEN },
          timeout = 20 })
        local n = #b2:pages()
        b2:close()
        return v, n
      end)
      local v = t:wait(60)
      assert.are.equal(42, v)
      local function fails(url, opts)
        local tk = dt.async(function() return dt.connect(url, opts) end)
        local ok, err = pcall(tk.wait, tk, 30)
        assert.is_false(ok)
        return err
      end
      local e = fails(https(), { ca_file = certs.ca, timeout = 10 })
      assert.are.equal("connect_failed", e.code, tostring(e))
      assert.matches("401", e.message)
      e = fails(wss(), { ca_file = certs.ca, timeout = 10 })
      assert.are.equal("connect_failed", e.code, tostring(e))
      assert.matches("401", e.message)
      e = fails(wss(), { ca_file = certs.other_ca, headers = { Authorization = TOKEN }, timeout = 10 })
      assert.are.equal("connect_failed", e.code, tostring(e))
      assert.matches("certificate verify failed", e.message)
      assert.is_nil(e.message:find("unreadable", 1, true))
      e = fails(https(), { ca_file = certs.other_ca, headers = { Authorization = TOKEN }, timeout = 10 })
      assert.are.equal("connect_failed", e.code, tostring(e))
      assert.matches("certificate", e.message)
    end)

    it("never holds the loop while a handshake waits", function()
      local ws_helper = require "support.ws_helper"
      for _, scheme in ipairs({ "https", "wss" }) do
        local silent, port = ws_helper.silent_listener()   -- accepts, never answers
        local stuck = dt.async(function()
          return dt.connect(scheme .. "://localhost:" .. port .. "/devtools/browser/x",
            { ca_file = certs.ca, timeout = 1 })
        end)
        local ticks = dt.async(function()
          for _ = 1, 5 do dt.sleep(0) end             -- (turns of the loop, no time)
          return "ran"
        end)
        assert.are.equal("ran", ticks:wait(10))
        assert.is_false(stuck.done, scheme)           -- still waiting for its handshake
        local ok, err = pcall(stuck.wait, stuck, 10)
        silent:close()
        assert.is_false(ok)
        assert.are.equal("timeout", err.code, tostring(err))
      end
    end)
  end)
end)
