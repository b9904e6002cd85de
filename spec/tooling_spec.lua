-- The project's own tools: the final line of `make test` (run-specs.sh
-- --totals), the package sets of tools/deps.sh against the README's install
-- lines, and a short round of the fuzzer (tools/fuzz.lua) on this build.

local H = require "helper"
local core = require "devtools_tools.core"

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

describe("run-specs.sh --totals", function()
  local dir, path
  before_each(function()
    dir = assert(core.mkdtemp("devtools_tools-totals-"))
    path = dir .. "/totals"
  end)
  after_each(function() core.rmtree(dir) end)

  -- Each scenario: the records two runs appended, the line and exit status.
  local cases = {
    { "both runs pass: each spec counted once",
      "C\t10 0 0\nC\t6 0 0\n", "10 passed, 0 failed", 0 },
    { "a spec failing only in the later run moves from passed to failed",
      "C\t10 0 0\nC\t5 1 0\nF\tspec/a_spec.lua\ta fails under LuaJIT\n", "9 passed, 1 failed", 1 },
    { "a spec failing in both runs counts once",
      "C\t9 1 0\nF\tspec/a_spec.lua\ta fails\nC\t5 1 0\nF\tspec/a_spec.lua\ta fails\n", "9 passed, 1 failed", 1 },
    { "failures the later run counted without names count too",
      "C\t10 0 0\nC\t0 1 0\n", "9 passed, 1 failed", 1 },
    { "skipped specs are shown only when there are some",
      "C\t10 0 2\nC\t6 0 0\n", "10 passed, 0 failed, 2 skipped", 0 },
    { "no spec passed is a failure",
      "C\t0 0 0\n", "0 passed, 0 failed", 1 },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      write(path, c[2])
      local out, rc = H.sh("sh tools/run-specs.sh --totals " .. path)
      assert.are.equal(c[3] .. "\n", out)
      assert.are.equal(c[4], rc)
    end)
  end

  it("fails when no run was recorded", function()
    local out, rc = H.sh("sh tools/run-specs.sh --totals " .. dir .. "/none")
    assert.matches("^0 passed, 1 failed", out)
    assert.are.equal(1, rc)
  end)
end)

describe("tools/deps.sh", function()
  local function list(set)
    local out, rc = H.sh("sh tools/deps.sh --list " .. set)
    assert.are.equal(0, rc, out)
    local pkgs = {}
    for p in out:gmatch("%S+") do pkgs[#pkgs + 1] = p end
    table.sort(pkgs)
    return pkgs
  end

  -- The packages of every "apt-get install" line in the README's Install
  -- section, line by line (a trailing backslash continues a line).
  local function readme_lines()
    local f = assert(io.open("README.md"))
    local text = f:read("a")
    f:close()
    local section = text:match("\n## Install\n(.-)\n## ")
    local lines = {}
    for line in (section:gsub("\\\n%s*", " ")):gmatch("[^\n]+") do
      local pkgs = line:match("^%s+apt%-get install (.*)$")
      if pkgs then
        local t = {}
        for p in pkgs:gmatch("%S+") do t[#t + 1] = p end
        table.sort(t)
        lines[#lines + 1] = t
      end
    end
    return lines
  end

  it("the README's install lines are its run, demo and test sets", function()
    assert.are.same({ list("run"), list("demo"), list("test") }, readme_lines())
  end)

  it("names a compiler, make and the sample app's libraries", function()
    local all = {}
    for _, set in ipairs({ "run", "demo", "test" }) do
      for _, p in ipairs(list(set)) do all[p] = (all[p] or 0) + 1 end
    end
    for _, p in ipairs({ "gcc", "make", "libjansson-dev", "libsqlite3-dev", "lua-luv", "neovim" }) do
      assert.is_not_nil(all[p], p)
    end
    for p, n in pairs(all) do assert.are.equal(1, n, p .. " is in more than one set") end
  end)

  it("refuses a set it does not know", function()
    local _, rc = H.sh("sh tools/deps.sh nonsense")
    assert.are.equal(2, rc)
  end)
end)

describe("tools/fuzz.lua", function()
  local function fuzz(env)
    return H.sh(env .. " DEVTOOLS_TOOLS_BUILD=" .. H.build .. " lua5.4 tools/fuzz.lua")
  end

  it("runs a seeded, bounded round and ends with its summary line", function()
    local out, rc = fuzz("FUZZ_SEED=7 FUZZ_ITERATIONS=30 FUZZ_TARGETS=json,schema")
    assert.are.equal(0, rc, out)
    assert.matches("seed 7", out)
    assert.matches("\n60 inputs tried, 0 crashes, 0 hangs, 0 failed checks\n$", out)
  end)

  it("runs one case again from its seed and number", function()
    local out, rc = fuzz("FUZZ_SEED=7 FUZZ_TARGETS=pipe FUZZ_CASE=3")
    assert.are.equal(0, rc, out)
    assert.matches("\n1 inputs tried, 0 crashes, 0 hangs, 0 failed checks\n$", out)
  end)

  it("refuses an unknown target and a FUZZ_CASE without one target", function()
    local out, rc = fuzz("FUZZ_TARGETS=nope FUZZ_ITERATIONS=1")
    assert.are.equal(2, rc)
    assert.matches("unknown target nope", out)
    out, rc = fuzz("FUZZ_CASE=1 FUZZ_ITERATIONS=1")
    assert.are.equal(2, rc)
    assert.matches("FUZZ_CASE needs", out)
  end)
end)
