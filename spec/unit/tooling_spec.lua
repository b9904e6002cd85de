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
    dir = assert(core.fs.mkdtemp("devtools_tools-totals-"))
    path = dir .. "/totals"
  end)
  after_each(function() core.fs.rmtree(dir) end)

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

describe("run-specs.sh's output", function()
  local dir
  before_each(function() dir = assert(core.fs.mkdtemp("devtools_tools-files-")) end)
  after_each(function() core.fs.rmtree(dir) end)

  -- runs run-specs.sh on the given arguments (spec files named by their
  -- base name, in dir), not recorded in the total of a make test this spec
  -- may run in; returns its lines and exit status
  local function run_specs(args)
    local out, rc = H.sh("env -u SPEC_TOTALS SPEC_JOBS=2 sh tools/run-specs.sh "
      .. args:gsub("(%S+_spec%.lua)", dir .. "/%1"))
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    return lines, rc, out
  end

  -- the line of each file, by the file's name and label
  local function file_lines(lines)
    local t = {}
    for _, l in ipairs(lines) do
      local name = l:match("^%S*/([%w_]+_spec%.lua %[%w+%]) +%d+ passed")
        or l:match("^%S*/([%w_]+_spec%.lua) +%d+ passed")
        or l:match("^%S*/([%w_]+_spec%.lua) +busted printed no summary")
      if name and not t[name] then t[name] = l end
    end
    return t
  end

  it("is one line per spec file as it ends, the failures' details, the slowest and one count at the end", function()
    write(dir .. "/a_spec.lua", 'it("passes", function() end)\nit("passes too", function() end)\n')
    write(dir .. "/b_spec.lua", 'it("fails", function() assert.equal(1, 2) end)\npending("later")\n')
    local lines, rc, out = run_specs("lua5.4 /usr/bin/busted " .. H.build .. " a_spec.lua b_spec.lua")
    assert.are.equal(1, rc)
    local files = file_lines(lines)
    assert.matches("a_spec%.lua +2 passed, 0 failed +[%d.]+ s$", files["a_spec.lua"])
    assert.matches("b_spec%.lua +0 passed, 1 failed, 1 skipped +[%d.]+ s$", files["b_spec.lua"])
    assert.truthy(out:find("Failure -> " .. dir .. "/b_spec.lua @ 1\nfails\n", 1, true))
    assert.is_nil(out:find("successes /", 1, true))          -- busted's own count is not shown
    -- the slowest files (here both), each line as it was shown and its CPU
    -- seconds, then the files' CPU in all, before the count
    assert.are.equal("the ten slowest files (wall clock, then CPU):", lines[#lines - 4])
    local slow, cpu = {}, 0
    for i = #lines - 3, #lines - 2 do
      local l, c = lines[i]:match("^  (.*)  cpu +([%d.]+) s$")
      assert.is_string(l, lines[i])
      slow[#slow + 1], cpu = l, cpu + c
    end
    table.sort(slow)
    assert.matches("^spec files: %d+ s of CPU$", lines[#lines - 1])
    assert.near(cpu, tonumber(lines[#lines - 1]:match("(%d+) s")), 1)
    local shown = { files["a_spec.lua"], files["b_spec.lua"] }
    table.sort(shown)
    assert.are.same(shown, slow)
    assert.are.equal("2 passed, 1 failed, 1 skipped", lines[#lines])
    assert.is_nil(out:find("+++", 1, true))
  end)

  it("counts a file whose busted crashed or printed no summary as a failure, and shows its end", function()
    write(dir .. "/a_spec.lua", 'it("passes", function() end)\n')
    write(dir .. "/c_spec.lua", 'it("exits", function() print("on its way out"); os.exit(3) end)\n')
    write(dir .. "/d_spec.lua", 'it("passes", function() end)\n')
    local lines, rc, out = run_specs("lua5.4 /usr/bin/busted " .. H.build .. " a_spec.lua c_spec.lua d_spec.lua")
    assert.are.equal(1, rc)
    assert.matches("c_spec%.lua +busted printed no summary %(exit status 3%)$", file_lines(lines)["c_spec.lua"])
    assert.truthy(out:find(dir .. "/c_spec.lua: busted printed no summary (exit status 3); its last lines:\n"
      .. "on its way out\n", 1, true))
    assert.are.equal("2 passed, 1 failed", lines[#lines])
  end)

  it("runs the files of a second interpreter beside the first, counting each spec once", function()
    write(dir .. "/a_spec.lua", 'it("passes", function() end)\n')
    write(dir .. "/j_spec.lua", 'it("passes", function() end)\nit("needs 5.4", function() assert.is_nil(jit) end)\n')
    local lines, rc, out = run_specs("lua5.4 /usr/bin/busted " .. H.build .. " a_spec.lua j_spec.lua"
      .. " --also 'luajit -joff' build/luajit j_spec.lua")
    assert.are.equal(1, rc)
    local files = file_lines(lines)
    assert.matches("j_spec%.lua +2 passed, 0 failed +[%d.]+ s$", files["j_spec.lua"])
    assert.matches("j_spec%.lua %[luajit%] +1 passed, 1 failed +[%d.]+ s$", files["j_spec.lua [luajit]"])
    assert.truthy(out:find("== " .. dir .. "/j_spec.lua [luajit]: 1 failed\n", 1, true))
    -- the spec that failed under LuaJIT only moves from passed to failed
    assert.are.equal("2 passed, 1 failed", lines[#lines])
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

describe("src/dt.h's map of the C core", function()
  -- The table in dt.h's opening comment: file, includes, uses, what, in
  -- fixed columns; a row may go on over lines that leave "file" blank.
  local function read_map()
    local f = assert(io.open("src/dt.h"))
    local text = f:read("*a")
    f:close()
    local rows, last, inside = {}, nil, false
    for line in text:gmatch("[^\n]*") do
      if line:match("^ %*   file%s+includes%s+uses%s+what") then
        inside = true
      elseif inside then
        if not line:match("^ %*   ") then break end
        local body = line:sub(6)
        local file = body:sub(1, 14):match("^(%S*)")
        local function words(s, t)
          for w in s:gmatch("%S+") do if w ~= "-" then t[w] = true end end
        end
        if file ~= "" then
          last = { includes = {}, uses = {} }
          rows[file] = last
        end
        words(body:sub(15, 46), last.includes)
        words(body:sub(47, 80), last.uses)
      end
    end
    return rows
  end

  local function keys(t)
    local out = {}
    for k in pairs(t) do out[#out + 1] = k end
    table.sort(out)
    return out
  end

  local map = read_map()
  local files = {}
  for name in require("lfs").dir("src") do
    if name:match("%.[ch]$") then files[#files + 1] = name end
  end
  table.sort(files)

  it("has a row for every file in src/, and none for a file that is not there", function()
    assert.same(files, keys(map))
  end)

  it("lists the headers each file includes", function()
    for _, name in ipairs(files) do
      local f = assert(io.open("src/" .. name))
      local got = {}
      for inc in f:read("*a"):gmatch('#include "([^"]+)"') do got[inc] = true end
      f:close()
      assert.same(keys(got), keys(map[name].includes), name)
    end
  end)

  it("lists the files whose functions each object file calls, and they make no circle", function()
    local obj = H.build .. "/obj/"
    local defined, needs = {}, {}
    for _, name in ipairs(files) do
      local base = name:match("^(.*)%.c$")
      if base then
        local p = assert(io.popen("nm -g --defined-only " .. obj .. base .. ".o"))
        for sym in p:read("*a"):gmatch("%x+ [TDBR] (%S+)") do defined[sym] = base end
        p:close()
        p = assert(io.popen("nm -u " .. obj .. base .. ".o"))
        needs[base] = {}
        for sym in p:read("*a"):gmatch("U (%S+)") do needs[base][sym] = true end
        p:close()
      end
    end
    local uses = {}
    for base, syms in pairs(needs) do
      local t = {}
      for sym in pairs(syms) do
        local from = defined[sym]
        if from and from ~= base then t[from] = true end
      end
      uses[base] = t
      assert.same(keys(t), keys(map[base .. ".c"].uses), base .. ".c")
    end
    -- no circle: a depth-first walk meets no file still on its way
    local state = {}
    local function walk(f, path)
      assert.is_true(state[f] ~= 1, "a circle: " .. table.concat(path, " -> ") .. " -> " .. f)
      if state[f] then return end
      state[f] = 1
      path[#path + 1] = f
      for g in pairs(uses[f] or {}) do walk(g, path) end
      path[#path] = nil
      state[f] = 2
    end
    for f in pairs(uses) do walk(f, {}) end
  end)
end)
