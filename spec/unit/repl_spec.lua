-- Unit: the REPL's line editor (cli.edit) fed bytes as a terminal sends
-- them, and its completer (cli.complete) on tools of our own making - what
-- Tab offers at each place of a line. The REPL itself runs in a real
-- terminal in spec/e2e/repl_spec.lua.

local dt = require "devtools_tools"
local edit = require "devtools_tools.cli.edit"
local complete = require "devtools_tools.cli.complete"

-- an editor whose terminal is a string
local function editor(opts)
  opts = opts or {}
  local screen = { out = "" }
  local ed = edit.new({ write = function(s) screen.out = screen.out .. s end,
    columns = function() return opts.columns or 80 end, complete = opts.complete, history = opts.history })
  ed:start("> ")
  return ed, screen
end

describe("the line editor", function()
  it("gives the line on Enter, after editing keys (arrows, Home, End, Backspace, Delete, words)", function()
    local ed = editor()
    assert.same({}, ed:feed("helo"))
    ed:feed("\27[D")              -- left
    ed:feed("l")
    assert.equal("hello", ed.buf)
    ed:feed("\1X\5Y")             -- Ctrl-A, Ctrl-E
    assert.equal("XhelloY", ed.buf)
    ed:feed("\127")               -- backspace
    ed:feed("\27[H\27[3~")        -- Home, Delete
    assert.equal("hello", ed.buf)
    ed:feed("\5 big world\23")    -- Ctrl-W: the word before
    assert.equal("hello big ", ed.buf)
    ed:feed("\21")                -- Ctrl-U
    assert.equal("", ed.buf)
    ed:feed("a b\27[1;5D\11")     -- Ctrl-Left, Ctrl-K
    assert.equal("a ", ed.buf)
    assert.same({ { "line", "a " } }, ed:feed("\r"))
  end)

  it("moves and deletes by character, not byte, in UTF-8", function()
    local ed = editor()
    ed:feed("héé")
    ed:feed("\127")
    assert.equal("hé", ed.buf)
    ed:feed("\27[D\27[D")
    assert.equal(0, ed.pos)
    ed:feed("\27[C")
    assert.equal(1, ed.pos)
    ed:feed("\27[C")
    assert.equal(3, ed.pos)
  end)

  it("keeps an escape sequence cut between two reads, and ignores one it does not know", function()
    local ed = editor()
    ed:feed("ab\27[")
    ed:feed("D")
    assert.equal(1, ed.pos)
    ed:feed("\27[99~x")
    assert.equal("axb", ed.buf)
  end)

  it("Ctrl-C is an interrupt; Ctrl-D on an empty line is the end, on text it deletes", function()
    local ed = editor()
    ed:feed("abc\1")
    assert.same({}, ed:feed("\4"))
    assert.equal("bc", ed.buf)
    assert.same({ { "interrupt" } }, ed:feed("\3"))
    ed:resume("> ")
    assert.same({ { "eof" } }, ed:feed("\4"))
  end)

  it("takes a paste whole, CR LF as one Enter, and keeps what comes after the line for later", function()
    local ed = editor()
    local ev = ed:feed("one\r\ntwo\rthree")
    assert.same({ { "line", "one" } }, ev)
    assert.equal("two\rthree", ed:take_rest())
    assert.equal("", ed:take_rest())
    ed:resume("> ")
    assert.same({ { "line", "x" } }, ed:feed("x\ry\r"))
    assert.same({ { "line", "y" } }, ed:resume("> "))
  end)

  it("never inserts a control byte", function()
    local ed = editor()
    ed:feed("a\0\2b\31c")
    assert.is_nil(ed.buf:find("[%z\1-\31]"))
  end)

  it("walks the history with Up and Down, keeping the line being typed", function()
    local ed = editor({ history = { "first", "second" } })
    ed:feed("new")
    ed:feed("\27[A")
    assert.equal("second", ed.buf)
    ed:feed("\27[A\27[A")
    assert.equal("first", ed.buf)
    ed:feed("\27[B\27[B")
    assert.equal("new", ed.buf)
    assert.is_true(ed:add_history("third"))
    assert.is_false(ed:add_history("third"))
    assert.is_false(ed:add_history("   "))
    assert.same({ "first", "second", "third" }, ed.history)
  end)

  it("draws the line on one row that scrolls: the cursor's column stays within the width", function()
    local ed, screen = editor({ columns = 20 })
    ed:feed(string.rep("x", 100))
    local last = screen.out:match("\r([^\r]*)\27%[K\r[^\r]*$")
    assert.equal("> " .. string.rep("x", 17), last)
    assert.matches("\27%[19C$", screen.out)
    ed:feed("\1")
    last = screen.out:match("\r([^\r]*)\27%[K\r[^\r]*$")
    assert.equal("> " .. string.rep("x", 17), last)
    assert.matches("\27%[2C$", screen.out)
  end)

  it("Tab: one choice is put in; several, their common start, then (Tab again) listed", function()
    local ed, screen = editor({ complete = function(line, pos)
      local w = line:sub(1, pos):match("(%w*)$")
      local all = { "getCacheStats", "getState", "other" }
      local out = {}
      for _, c in ipairs(all) do if c:sub(1, #w) == w then out[#out + 1] = c end end
      return pos - #w + 1, out
    end })
    ed:feed("x = oth\t")
    assert.equal("x = other", ed.buf)
    ed:feed("\21ge\t")
    assert.equal("get", ed.buf)
    screen.out = ""
    ed:feed("\t")
    assert.equal("get", ed.buf)
    assert.equal("\a", screen.out)
    ed:feed("\t")
    assert.matches("getCacheStats  getState", screen.out, 1, true)
  end)
end)

describe("completion", function()
  local tools = {
    { name = "getCacheStats", input_schema = { type = "object", properties = {} } },
    { name = "getState", input_schema = { type = "object", required = { "path" }, properties = {
      path = { type = "string", enum = { "cart.items", "user.name" } },
      depth = { type = "integer" }, ["odd key"] = { type = "string" },
      mode = { ["$ref"] = "#/definitions/mode" } },
      definitions = { mode = { enum = { "fast", "slow", 3 } } } } },
    { name = "odd name", input_schema = { type = "object" } },
    { name = "bad\27name", input_schema = { type = "object" } },
  }
  local env = { page = setmetatable({ url = "x" }, { __index = { call = function() end, close = function() end,
    _private = function() end } }), mine = 1 }
  local c = complete.new({ tools = function() return tools end, env = env,
    globals = { print = print, pairs = pairs, _G = _G, dt = dt } })

  local function at_end(line)
    local start, choices = c(line, #line)
    if not start then return nil end
    return line:sub(1, start - 1), choices
  end

  local cases = {
    { "getC", "", { "getCacheStats" } },
    { "x = getS", "x = ", { "getState" } },
    { "pr", "", { "print" } },
    { "mi", "", { "mine" } },
    { "getState{", "getState{", { "path = ", "depth = ", "mode = " } },
    { "getState{pa", "getState{", { "path = " } },
    { "getState({ de", "getState({ ", { "depth = " } },
    { 'getState{path = "cart.items", ', 'getState{path = "cart.items", ', { "depth = ", "mode = " } },
    { "getState{path = ", "getState{path = ", { '"cart.items"', '"user.name"' } },
    { 'getState{path = "u', "getState{path = ", { '"user.name"' } },
    { "getState{path = 'c", "getState{path = ", { "'cart.items'" } },
    { "getState{mode = ", "getState{mode = ", { '"fast"', '"slow"', "3" } },
    { 'page:call("getState", {p', 'page:call("getState", {', { "path = " } },
    { 'tools["getState"]{d', 'tools["getState"]{', { "depth = " } },
    { 'tools["od', "tools[", { '"odd name"]' } },
    { "tools.get", "tools.", { "getCacheStats", "getState" } },
    { "page:c", "page:", { "call", "close" } },
    { "page:_", "page:", {} },
    { "dt.tr", "dt.", { "trace" } },
    { "dt.trace.rep", "dt.trace.", { "replay" } },
    { ".de", "", { ".describe " } },
    { ".describe getS", ".describe ", { "getState" } },
  }
  for _, case in ipairs(cases) do
    it("after " .. case[1] .. ": " .. table.concat(case[3], " "), function()
      local before, choices = at_end(case[1])
      assert.equal(case[2], before)
      table.sort(choices)
      local want = { (table.unpack or unpack)(case[3]) }
      table.sort(want)
      assert.same(want, choices)
    end)
  end

  it("offers no name that holds a control character", function()
    local _, choices = at_end("ba")
    assert.same({}, choices)
    local _, names = at_end('tools["')
    for _, n in ipairs(names) do assert.is_nil(n:find("\27", 1, true)) end
  end)

  it("finds its choices among 1,000 tools (its time is make bench's row)", function()
    local many = {}
    for i = 1, 1000 do
      many[i] = { name = "tool" .. i, input_schema = { type = "object", properties = { ["key" .. i] = { type = "string" } } } }
    end
    local cc = complete.new({ tools = function() return many end, env = {}, globals = _G })
    local _, a = cc("tool99", 6)
    local _, b = cc("tool999{k", 9)
    assert.same({ "tool99", "tool990", "tool991", "tool992", "tool993", "tool994", "tool995", "tool996",
      "tool997", "tool998", "tool999" }, a)
    assert.same({ "key999 = " }, b)
  end)
end)
