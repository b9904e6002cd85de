-- A busted output handler for `make test`: one line per spec file as it
-- ends (its name, what passed, failed and was skipped, and its time), in
-- place of busted's wall of dots; then busted's own summary and the
-- details of each failure, as plainTerminal writes them (tools/run-specs.sh
-- reads that summary line). Loaded with busted -o tools/busted_files.lua.
-- SPEC_LABEL, when set, follows the file's name (run-specs.sh names the
-- interpreter of a second run so).

local plain = require "busted.outputHandlers.plainTerminal"

-- Wall-clock seconds, as finely as this Lua gives them (LuaSocket is
-- there with busted; os.time otherwise).
local ok_socket, socket = pcall(require, "socket")
local wall = ok_socket and socket.gettime or os.time

return function(options)
  local busted = require "busted"
  options.deferPrint = true              -- (plainTerminal then prints no dot per test)
  local handler = plain(options)
  local file, started, counts
  local label = os.getenv("SPEC_LABEL") or ""
  if label ~= "" then label = " " .. label end

  local function test_end(_, _, status)
    if counts then counts[status] = (counts[status] or 0) + 1 end
    return nil, true
  end
  -- a file that failed to load, or a describe block's own failure
  local function failed()
    if counts then counts.error = (counts.error or 0) + 1 end
    return nil, true
  end
  local function file_start(element)
    file, started, counts = element.name, wall(), {}
    return nil, true
  end
  local function file_end()
    if not counts then return nil, true end
    local line = string.format("%-44s %4d passed, %d failed", tostring(file) .. label, counts.success or 0,
      (counts.failure or 0) + (counts.error or 0))
    if (counts.pending or 0) > 0 then line = line .. ", " .. counts.pending .. " skipped" end
    io.write(line, string.format("  %6.1f s\n", wall() - started))
    io.flush()
    counts = nil
    return nil, true
  end

  busted.subscribe({ "test", "end" }, test_end)
  busted.subscribe({ "error", "file" }, failed)
  busted.subscribe({ "failure", "file" }, failed)
  busted.subscribe({ "error", "describe" }, failed)
  busted.subscribe({ "failure", "describe" }, failed)
  busted.subscribe({ "file", "start" }, file_start)
  busted.subscribe({ "file", "end" }, file_end)
  return handler
end
