-- Unit: rt/wait, the one way the library waits (a descriptor, a child's
-- end, a condition), with a deadline and a task's cancel, inside tasks and
-- outside them.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local wait = require "devtools_tools.rt.wait"

local now = core.now

local function child(seconds)
  return assert(core.process.spawn({ "/bin/sh", "-c", "sleep " .. seconds }))
end

describe("rt/wait", function()
  after_each(function() dt.use_loop(nil) end)

  it("waits for a child's end outside a task, and says when the deadline came first", function()
    local p = child(0.2)
    assert.is_false(wait.exit(p, now() + 0.05))
    assert.is_true(p:running())
    assert.is_true(wait.exit(p, now() + 10))
    assert.is_false(p:running())
    assert.is_true(wait.exit(p, now()))            -- ended already: at once
    p:close()
  end)

  it("inside a task, suspends it on the loop: other tasks run meanwhile", function()
    local p = child(0.2)
    local order = {}
    local a = dt.async(function()
      local ok = wait.exit(p, now() + 10)
      order[#order + 1] = "exit"
      return ok
    end)
    local b = dt.async(function() order[#order + 1] = "other" end)
    assert.same({ true }, { a:wait(10) })
    b:wait(10)
    assert.same({ "other", "exit" }, order)
    p:close()
  end)

  it("a cancelled task's wait raises cancelled", function()
    local p = child(5)
    local t = dt.async(function() return wait.exit(p, now() + 10) end)
    t:cancel()
    local ok, err = pcall(t.wait, t, 10)
    assert.is_false(ok)
    assert.equal("cancelled", err.code)
    p:close(0)
  end)

  it("waits for a descriptor (the child's pidfd), and for a condition another task makes true", function()
    local p = child(0.1)
    local fd = p:exit_fd()
    if fd then
      assert.is_false(wait.fds(fd, nil, now() + 0.01))
      assert.is_true(wait.fds(fd, nil, now() + 10))
    end
    p:close()
    local flag = false
    local waiter = dt.async(function() return wait.condition(function() return flag end, now() + 10) end)
    local setter = dt.async(function()
      wait.condition(function() return false end, now() + 0.05)   -- (a while later)
      flag = true
    end)
    assert.same({ true }, { waiter:wait(10) })
    setter:wait(10)
    assert.is_false(wait.condition(function() return false end, now() + 0.02))
    assert.equal("bad_argument", select(2, pcall(wait.fds, nil, nil, now())).code)
  end)
end)
