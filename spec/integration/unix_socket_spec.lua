-- core.unix: Unix sockets carrying the pipe transport's NUL-framed
-- messages, the listener, and who is at the other end (SO_PEERCRED).
-- What the private background browser's holder and its clients stand on.

local core = require "devtools_tools.core"
local H = require "helper"

local function soon(s) return core.now() + (s or 5) end

describe("core.unix", function()
  local dir
  before_each(function() dir = assert(core.fs.mkdtemp("dt-unix-spec-")) end)
  after_each(function() core.fs.rmtree(dir) end)

  -- a listener at path, a client connected to it and the server's end
  local function pair(path)
    local l = assert(core.unix.listen(path))
    assert.is_false(l:accept())                           -- none waiting: never waits
    local c, uid, pid = core.unix.connect(path, soon())
    assert(c, uid)
    local s, suid, spid = l:accept()
    assert(s, suid)
    return l, c, s, { uid = uid, pid = pid, suid = suid, spid = spid }
  end

  it("frames messages both ways and tells each end who the other is", function()
    local path = dir .. "/s.sock"
    local l, c, s, who = pair(path)
    -- (bound and listening under a name of its own first, then linked at
    -- path: nothing else is left in the directory)
    assert.equal("s.sock\n", (H.sh("ls -A " .. dir)))
    -- the socket file: 0600
    local st = core.fs.lstat(path)
    assert.equal("socket", st.type)
    assert.equal(384, st.mode)
    assert.equal(core.process.euid(), st.uid)
    -- both ends: this process, this user
    assert.equal(core.process.euid(), who.uid)
    assert.equal(core.process.euid(), who.suid)
    assert.is_number(who.pid)
    assert.equal(who.pid, who.spid)
    for _, m in ipairs({ "hello", "", '{"id":1}', "\xff\xfe bytes" }) do
      assert.is_true(c:send(m, soon()))
      assert.equal(m, s:recv(soon()))
      assert.is_true(s:send(m .. "!", soon()))
      assert.equal(m .. "!", c:recv(soon()))
    end
    -- two messages in one write are two messages
    assert.is_true(c:send("one\0two", soon()))
    assert.equal("one", s:recv(soon()))
    assert.is_true(s:pending())
    assert.equal("two", s:recv(soon()))
    assert.equal("unix", c:kind())
    assert.equal(("Transport(unix, open, %s)"):format(path), tostring(c))
    assert.matches("^Transport%(unix, open, uid %d+ pid %d+%)$", tostring(s))
    local rfd, wfd, efd = c:fds()
    assert.equal(rfd, wfd)                                -- one socket both ways
    assert.is_nil(efd)
    -- an end that goes: the other's recv says closed, once the rest is read
    c:send("last", soon())
    c:close()
    c:close()
    assert.equal("last", s:recv(soon()))
    local none, why, code = s:recv(soon())
    assert.is_nil(none)
    assert.equal("closed", code)
    assert.equal("the peer closed the connection", why)
    assert.equal("closed", select(3, s:send("x", soon())))
    s:close()
    l:close()
    l:close()
    assert.matches("^Listener%(.*, closed%)$", tostring(l))
    assert.is_nil(l:fd())
    assert.equal("closed", select(3, l:accept()))
  end)

  it("carries 64 MiB each way", function()
    local l, c, s = pair(dir .. "/s.sock")
    local big = string.rep("abcdefgh", 8 * 1024 * 1024)
    -- (one process is both ends: what a send could not write stays
    -- queued, and goes out as the other end reads)
    local function across(writer, reader)
      assert.equal("timeout", select(3, writer:send(big, 0)))
      local deadline, got = soon(H.checked_malloc and 600 or 60), nil     -- (valgrind: slow)
      while not got and core.now() < deadline do
        core.poll({ reader:fd(), (select(2, writer:fds())) }, { "r", "w" }, 1)
        writer:flush(0)
        got = reader:recv(0)
      end
      return got
    end
    assert.is_true(across(c, s) == big)
    assert.is_true(across(s, c) == big)
    c:close(); s:close(); l:close()
  end)

  it("reaches a socket whose path is longer than sockaddr_un holds", function()
    local deep = dir .. "/" .. ("d"):rep(120)
    assert(core.fs.mkdirs(deep))
    local path = deep .. "/s.sock"
    assert.is_true(#path > 108)
    local l, c, s = pair(path)
    assert.equal("socket", core.fs.lstat(path).type)
    c:send("long", soon())
    assert.equal("long", s:recv(soon()))
    c:close(); s:close(); l:close()
    assert.is_false(core.fs.exists(path))
  end)

  it("is connectable the moment its path exists (a listen() held back: the path comes after)", function()
    -- A listener in a child whose listen() strace holds back 0.5 s: bound
    -- at the path first, the path would be there, refusing, meanwhile.
    local function which(name) return (assert((H.sh("command -v " .. name)):match("^(/%S+)"))) end
    local path = dir .. "/s.sock"
    local script = ("package.path = %q; package.cpath = %q\n"
      .. "local l = assert(require('devtools_tools.core').unix.listen(%q)); io.read('*a'); l:close()")
      :format(package.path, package.cpath, path)
    local child, io_ = core.process.spawn({ which("strace"), "-f", "-qq", "-o", "/dev/null",
      "-e", "trace=listen", "-e", "inject=listen:delay_enter=500000", which(H.lua),
      "-e", script }, { stdio = true })
    assert(child, io_)
    assert.is_true(H.wait_for(function() return core.fs.exists(path) end, 20))
    local c, why = core.unix.connect(path, soon())
    assert(c, why)
    c:close()
    assert.equal("s.sock\n", (H.sh("ls -A " .. dir)))   -- (its own name gone)
    core.fd.close(io_.stdin)                              -- its io.read ends: it closes, exits
    core.fd.close(io_.stdout)
    child:close(5)
    assert.equal("", (H.sh("ls -A " .. dir)))               -- closed: its file removed
  end)

  it("says why it cannot connect or listen", function()
    local none, why, code = core.unix.connect(dir .. "/nothing.sock", soon())
    assert.is_nil(none)
    assert.equal("connect_failed", code)
    assert.matches("No such file", why)
    -- a file that is no socket
    assert(core.fs.write_file(dir .. "/plain", "x"))
    none, why, code = core.unix.connect(dir .. "/plain", soon())
    assert.is_nil(none)
    assert.equal("connect_failed", code)
    assert.matches("refused", why)
    -- something already there
    none, why, code = core.unix.listen(dir .. "/plain")
    assert.is_nil(none)
    assert.equal("system", code)
    assert.matches("File exists", why)
    -- a socket nobody listens on any more (its listener gone, the file left)
    local l = assert(core.unix.listen(dir .. "/s.sock"))
    assert(os.rename(dir .. "/s.sock", dir .. "/kept.sock"))
    l:close()
    assert.is_true(core.fs.exists(dir .. "/kept.sock"))   -- not its file any more: left alone
    none, why, code = core.unix.connect(dir .. "/kept.sock", soon())
    assert.is_nil(none)
    assert.equal("connect_failed", code)
    assert.matches("refused", why)
  end)

  it("removes its socket file on close, not one put in its place", function()
    local path = dir .. "/s.sock"
    local l = assert(core.unix.listen(path))
    l:close()
    assert.is_false(core.fs.exists(path))
    l = assert(core.unix.listen(path))
    os.remove(path)
    assert(core.fs.write_file(path, "someone else's"))
    l:close()
    assert.is_true(core.fs.exists(path))
  end)

  it("lstat and chmod tell and change a path's type, mode and owner", function()
    assert(core.fs.write_file(dir .. "/f", "x", 420))     -- 0644
    local st = core.fs.lstat(dir .. "/f")
    assert.same({ type = "file", mode = 420, uid = core.process.euid(), nlink = 1 }, st)
    assert.is_true(core.fs.chmod(dir .. "/f", 384))
    assert.equal(384, core.fs.lstat(dir .. "/f").mode)
    assert.equal("directory", core.fs.lstat(dir).type)
    assert.equal(448, core.fs.lstat(dir).mode)            -- (mkdtemp: 0700)
    assert(os.execute("ln -s f " .. dir .. "/link"))
    assert.equal("link", core.fs.lstat(dir .. "/link").type)
    local ok, why, code = core.fs.chmod(dir .. "/link", 420)      -- a link is not followed
    assert.is_nil(ok)
    assert.equal("system", code)
    assert.matches("symbolic links", why)
    assert.equal(384, core.fs.lstat(dir .. "/f").mode)
    ok, why, code = core.fs.lstat(dir .. "/none")
    assert.is_nil(ok)
    assert.equal("closed", code)
    assert.matches("No such file", why)
    assert.is_string(core.process.exe())
    assert.truthy(core.process.exe():match("/[^/]+$"))
  end)

  if core.process.euid() == 0 and H.sh("id -u nobody 2>/dev/null") ~= "" then
    it("tells another user's connection by its uid", function()
      local path = dir .. "/s.sock"
      local l = assert(core.unix.listen(path))
      assert(os.execute("chmod 755 " .. dir .. " && chmod 666 " .. path))
      -- a client of uid nobody: python's, to stand on nothing of ours
      local child = assert(core.process.spawn({ "/bin/su", "nobody", "-s", "/bin/sh", "-c",
        ("exec python3 -c 'import socket,time; s=socket.socket(socket.AF_UNIX); s.connect(%q);"
          .. " s.sendall(b\"hi\\0\"); time.sleep(5)'"):format(path) }))
      local s, uid
      assert.is_true(H.wait_for(function()
        s, uid = l:accept()
        return s ~= false
      end, H.LONG))
      assert(s, uid)
      assert.equal(tonumber((H.sh("id -u nobody"))), uid)
      assert.equal("hi", s:recv(soon()))
      s:close(); l:close()
      child:close(0)
    end)
  end
end)
