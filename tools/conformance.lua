-- conformance.lua - runs the official JSON-Schema-Test-Suite (draft-07)
-- against devtools_tools.schema and prints "N passed, N failed" per folder.
--
-- usage: lua5.4 tools/conformance.lua BUILD_DIR SUITE_DIR [-v] [filter]
--   SUITE_DIR holds tests/draft7/ and remotes/ (a checkout of
--   https://github.com/json-schema-org/JSON-Schema-Test-Suite);
--   -v lists every failing test; filter keeps files whose path contains it.
-- Remote $refs to http://localhost:1234/... are served from SUITE_DIR/remotes
-- through the schema loader; nothing touches the network. The suite is read
-- with plain dt.json.decode (nothing marked), and a case passes only when
-- both engines (generated and closures) give the expected verdict and the
-- same errors.

local build, suite = arg[1], arg[2]
if not build or not suite then
  io.stderr:write("usage: lua5.4 tools/conformance.lua BUILD_DIR SUITE_DIR [-v] [filter]\n")
  os.exit(2)
end
local verbose, filter = false, nil
for i = 3, #arg do
  if arg[i] == "-v" then verbose = true else filter = arg[i] end
end

package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./" .. build .. "/?.so;" .. package.cpath

local schema = require "devtools_tools.schema"

local json = require "devtools_tools.base.json"
local decode = json.decode

-- Plain dt.json.decode, nothing marked: a decoded {} is an object and a
-- decoded [] an array, as the validator sees them.

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

local remotes = suite .. "/remotes/"
local function loader(uri)
  local rel = uri:match("^http://localhost:1234/(.*)$")
  if not rel or rel:find("..", 1, true) then return nil end
  local s = read(remotes .. rel)
  return s and decode(s) or nil
end

local folders = { "draft7", "draft7/optional", "draft7/optional/format" }
local total_failed = 0

for _, folder in ipairs(folders) do
  local dir = suite .. "/tests/" .. folder
  local passed, failed = 0, 0
  for _, name in ipairs(list(dir)) do
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
          local good, why = false, nil
          if not ok then
            why = "compile: " .. tostring(validator)
          elseif not ok2 then
            why = "compile (closures): " .. tostring(closures)
          else
            local rok, valid, errs1 = pcall(validator, case.data)
            local rok2, valid2, errs = pcall(closures, case.data)
            if not rok then
              why = "error: " .. tostring(valid)
            elseif not rok2 then
              why = "error (closures): " .. tostring(valid2)
            elseif valid ~= case.valid then
              why = "expected " .. tostring(case.valid) .. ", got " .. tostring(valid)
            elseif valid2 ~= valid then
              why = "generated check and closures disagree"
            elseif differ(errs1, errs) then
              why = "generated check and closures report different errors: " .. differ(errs1, errs)
            elseif not valid and (type(errs) ~= "table" or not errs[1]
                                  or errs[1].message == "is invalid") then
              why = "invalid, but no error explains why"
            else
              good = true
            end
          end
          if good then
            fp = fp + 1
          else
            ff = ff + 1
            if verbose then
              print(("  FAIL %s: %s / %s: %s"):format(path, group.description,
                                                     case.description, why))
            end
          end
        end
      end
      passed, failed = passed + fp, failed + ff
      if verbose or folder ~= "draft7" then
        print(("  %s: %d passed, %d failed"):format(path, fp, ff))
      end
    end
  end
  print(("%s: %d passed, %d failed"):format(folder, passed, failed))
  if folder == "draft7" then total_failed = failed end
end

if schema._codegen_failures > 0 then
  print(("generated checks that failed to load: %d (%s)"):format(
    schema._codegen_failures, tostring(schema._codegen_error)))
  total_failed = total_failed + 1
end

-- The required tests decide the exit status; optional ones are reported.
os.exit(total_failed == 0 and 0 or 1)
