-- Unit: wire/endpoint, the one reader of an endpoint's URL and judge of a
-- loopback host (dt.connect and dt.webdriver both ask it).

local endpoint = require "devtools_tools.wire.endpoint"

describe("wire/endpoint", function()
  local urls = {
    { "http://127.0.0.1:9222", { "http", "127.0.0.1", 9222, "/" } },
    { "WS://LocalHost:9/devtools/browser/x", { "ws", "localhost", 9, "/devtools/browser/x" } },
    { "https://[::1]:443/wd/hub/", { "https", "::1", 443, "/wd/hub/" } },
    { "http://example.com/", { "http", "example.com", nil, "/" } },
    { "127.0.0.1:9222", nil },
    { "http://:9222", nil },
  }
  for _, c in ipairs(urls) do
    it("reads " .. c[1], function()
      local s, h, p, path = endpoint.parse(c[1])
      if c[2] then assert.same(c[2], { s, h, p, path }) else assert.is_nil(s) end
    end)
  end

  it("takes this machine's names and addresses as loopback, and nothing the resolver would look up", function()
    for _, h in ipairs({ "localhost", "::1", "127.0.0.1", "127.1.2.3", "127.255.255.255", "127.0.0.0" }) do
      assert.is_true(endpoint.is_loopback(h), h)
    end
    for _, h in ipairs({ "127.0.0.256", "127.01.0.1", "127.0.0.1.example.com", "128.0.0.1", "example.com",
        "0.0.0.0", "::2", "127.0.0" }) do
      assert.is_false(endpoint.is_loopback(h), h)
    end
  end)

  it("checks the caller's headers before they go on the wire", function()
    assert.same({ ["X-Token"] = "a b" }, endpoint.check_headers({ ["X-Token"] = "a b" }, "connect"))
    for _, h in ipairs({ { ["X T"] = "v" }, { X = "a\r\nB: c" }, { X = 5 }, "x" }) do
      local ok, e = pcall(endpoint.check_headers, h, "connect")
      assert.is_false(ok)
      assert.equal("bad_argument", e.code)
    end
  end)
end)
