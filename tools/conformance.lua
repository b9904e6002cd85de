-- conformance.lua - runs the official JSON-Schema-Test-Suite (draft-07)
-- against devtools_tools.schema: `make conformance`.
--
-- usage: lua5.4 tools/conformance.lua BUILD_DIR [-v] [--suite DIR] [--tolerated FILE] [filter]
--   --suite DIR holds tests/draft7/ and remotes/ (default
--   spec/json-schema-test-suite, the copy vendored at a pinned commit: see
--   its SOURCE);
--   --tolerated FILE lists the cases allowed to fail, each under its
--   reason (default spec/conformance-tolerated.txt; its header says how);
--   -v lists every failing case, tolerated ones too, and counts per file;
--   filter keeps files whose path contains it.
-- Remote $refs to http://localhost:1234/... are served from DIR/remotes
-- through the schema loader; nothing touches the network. The suite is read
-- with plain dt.json.decode (nothing marked: a decoded {} is an object and
-- a decoded [] an array, as the validator sees them), and a case passes
-- only when both engines (generated and closures) give the expected verdict
-- and the same errors.
-- Exits 1 on any failure the list does not tolerate (only a wrong verdict
-- can be: an error, or two engines that disagree, never is), on a listed
-- case that passes now, and on a listed case the suite does not hold: the
-- list says exactly what fails. Ends with one line:
-- "conformance: N passed, N tolerated, N new failures, N stale".

local build, verbose, filter
local suite, tolerated_file = "spec/json-schema-test-suite", "spec/conformance-tolerated.txt"
do
  local i = 1
  while i <= #arg do
    local a = arg[i]
    if a == "-v" then verbose = true
    elseif a == "--suite" then i = i + 1; suite = arg[i]
    elseif a == "--tolerated" then i = i + 1; tolerated_file = arg[i]
    elseif not build then build = a
    else filter = a end
    i = i + 1
  end
end
if not build or not suite or not tolerated_file then
  io.stderr:write("usage: lua5.4 tools/conformance.lua BUILD_DIR [-v] [--suite DIR] [--tolerated FILE] [filter]\n")
  os.exit(2)
end

package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./" .. build .. "/?.so;" .. package.cpath

local schema = require "devtools_tools.schema"
local json = require "devtools_tools.base.json"
local decode = json.decode

-- Same verdict and same errors, field by field (nil when they agree).
local FIELDS = { "path", "keyword", "message", "schema_path", "property", "received", "allowed" }
local function differ(a, b)
  if (a == nil) ~= (b == nil) then return "one engine gave no errors" end
  if a == nil then return nil end
  if #a ~= #b then return ("%d errors against %d"):format(#a, #b) end
  for i = 1, #a do
    for _, f in ipairs(FIELDS) do
      if a[i][f] ~= b[i][f] then
        return ("error %d, %s: %s against %s"):format(i, f, tostring(a[i][f]), tostring(b[i][f]))
      end
    end
  end
  return nil
end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

local function list(dir)
  local files = {}
  local p = io.popen("ls -1 '" .. dir .. "' 2>/dev/null")
  for name in p:lines() do
    if name:match("%.json$") then files[#files + 1] = name end
  end
  p:close()
  table.sort(files)
  return files
end

-- The tolerated cases: "FILE: GROUP / CASE" -> the reason of its block
-- ("= tag: why" lines open a block; "#" lines are comments).
local function read_tolerated(path)
  local text = read(path)
  if not text then
    io.stderr:write("conformance: cannot read " .. path .. "\n")
    os.exit(2)
  end
  local cases, order, reason = {}, {}, nil
  local n = 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if line:match("^= ") then
      reason = line:sub(3)
    elseif line ~= "" and not line:match("^#") then
      if not reason then
        io.stderr:write(("conformance: %s:%d: a case before any '= reason' line\n"):format(path, n))
        os.exit(2)
      end
      if cases[line] then
        io.stderr:write(("conformance: %s:%d: listed twice: %s\n"):format(path, n, line))
        os.exit(2)
      end
      cases[line] = reason
      order[#order + 1] = line
    end
  end
  return cases, order
end

local tolerated, tolerated_order = read_tolerated(tolerated_file)

local remotes = suite .. "/remotes/"
local function loader(uri)
  local rel = uri:match("^http://localhost:1234/(.*)$")
  if not rel or rel:find("..", 1, true) then return nil end
  local s = read(remotes .. rel)
  return s and decode(s) or nil
end

-- why(group compiled, case) -> nil when the case passes, else what went
-- wrong and whether that is only a wrong verdict
local function run_case(ok, validator, ok2, closures, case)
  if not ok then return "compile: " .. tostring(validator) end
  if not ok2 then return "compile (closures): " .. tostring(closures) end
  local rok, valid, errs1 = pcall(validator, case.data)
  local rok2, valid2, errs = pcall(closures, case.data)
  if not rok then return "error: " .. tostring(valid) end
  if not rok2 then return "error (closures): " .. tostring(valid2) end
  if valid2 ~= valid then return "generated check and closures disagree" end
  local d = differ(errs1, errs)
  if d then return "generated check and closures report different errors: " .. d end
  if valid ~= case.valid then
    return "expected " .. tostring(case.valid) .. ", got " .. tostring(valid), true
  end
  if not valid and (type(errs) ~= "table" or not errs[1] or errs[1].message == "is invalid") then
    return "invalid, but no error explains why"
  end
  return nil
end

local folders = { "draft7", "draft7/optional", "draft7/optional/format" }
local seen = {}
local total = { passed = 0, tolerated = 0, new = 0, stale = 0 }
local problems = {}

for _, folder in ipairs(folders) do
  local dir = suite .. "/tests/" .. folder
  local files = list(dir)
  if #files == 0 then
    io.stderr:write("conformance: no test files in " .. dir .. "\n")
    os.exit(2)
  end
  local passed, failed, tol = 0, 0, 0
  for _, name in ipairs(files) do
    local path = folder .. "/" .. name
    if not filter or path:find(filter, 1, true) then
      local groups = decode(assert(read(dir .. "/" .. name)))
      local fp, ff = 0, 0
      for _, group in ipairs(groups) do
        -- the generated engine and the closure engine must agree: verdicts and errors
        local ok, validator = pcall(schema.compile, group.schema, { loader = loader })
        local ok2, closures = pcall(schema.compile, group.schema,
                                    { loader = loader, closures = true })
        for _, case in ipairs(group.tests) do
          local key = ("%s: %s / %s"):format(path, group.description, case.description)
          seen[key] = true
          local why, verdict_only = run_case(ok, validator, ok2, closures, case)
          if why == nil then
            fp = fp + 1
            if tolerated[key] then
              total.stale = total.stale + 1
              problems[#problems + 1] = "  passes now, remove it from " .. tolerated_file .. ": " .. key
            end
          else
            ff = ff + 1
            if tolerated[key] and verdict_only then
              tol = tol + 1
              if verbose then print(("  tolerated %s: %s"):format(key, why)) end
            else
              total.new = total.new + 1
              problems[#problems + 1] = ("  FAIL %s: %s%s"):format(key, why,
                tolerated[key] and " (listed as tolerated, but only a wrong verdict can be)" or "")
            end
          end
        end
      end
      passed, failed = passed + fp, failed + ff
      if verbose then print(("  %s: %d passed, %d failed"):format(path, fp, ff)) end
    end
  end
  total.passed = total.passed + passed
  total.tolerated = total.tolerated + tol
  print(("%s: %d passed, %d failed%s"):format(folder, passed, failed,
        failed > 0 and (" (%d tolerated)"):format(tol) or ""))
end

if not filter then
  for _, key in ipairs(tolerated_order) do
    if not seen[key] then
      total.stale = total.stale + 1
      problems[#problems + 1] = "  names no case of the suite, remove it from " .. tolerated_file .. ": " .. key
    end
  end
end

if schema._codegen_failures > 0 then
  problems[#problems + 1] = ("  generated checks that failed to load: %d (%s)"):format(
    schema._codegen_failures, tostring(schema._codegen_error))
  total.new = total.new + 1
end

for _, p in ipairs(problems) do print(p) end
print(("conformance: %d passed, %d tolerated (%s), %d new failures, %d stale"):format(
  total.passed, total.tolerated, tolerated_file, total.new, total.stale))
os.exit((total.new == 0 and total.stale == 0) and 0 or 1)
