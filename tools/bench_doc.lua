-- tools/bench_doc.lua: the figures of doc/performance.md, from the runs of
-- `make bench` that `make bench-doc` recorded.
--
--   lua5.4 tools/bench_doc.lua collect RUN.json...   writes doc/performance.json
--     (what the page shows of each run: its rows, notes, legend, machine)
--
-- tools/docs.lua renders the page's tables from that file (`make docs`);
-- this module does the rendering: the machine and the load each run saw,
-- and per row the median of the runs with the lowest and highest beside
-- it. It must never measure anything or state a figure of its own: every
-- number it writes comes from a run.

local M = {}

local fmt = string.format

M.PATH = "doc/performance.json"

local function json()
  return require "devtools_tools.base.json"
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

-- load(path) -> {runs = {run...}}; run: {meta, rows, legend, errors}
function M.load(path)
  return json().decode(read(path or M.PATH))
end

-- collect(files) -> the record make bench-doc writes: each run trimmed to
-- what the page shows
function M.collect(files)
  local runs = {}
  for i, path in ipairs(files) do
    local r = json().decode(read(path))
    if type(r.rows) ~= "table" or #r.rows == 0 then error(path .. ": no rows (did the bench run?)") end
    runs[i] = { meta = r.meta, rows = r.rows, legend = r.legend, errors = r.errors }
  end
  return { runs = runs }
end

-- A row's key: its metric with the numbers in it (which a run may put
-- there: "(1.6 of 2 cores busy)") left out, so rows of several runs match.
local function key(metric)
  return (metric:gsub("%d[%d.,]*", "#"))
end

-- "299 us" -> 299, "us"; "57000/s" -> 57000, "/s"; nil when it is no figure
local function figure(s)
  if type(s) ~= "string" then return nil end
  local n, unit = s:match("^(%-?[%d.]+)%s*(.-)$")
  n = tonumber(n)
  if not n then return nil end
  return n, unit
end

local function median(xs)
  local t = {}
  for i, x in ipairs(xs) do t[i] = x end
  table.sort(t)
  local n = #t
  if n == 0 then return nil end
  if n % 2 == 1 then return t[(n + 1) / 2] end
  return (t[n / 2] + t[n / 2 + 1]) / 2
end

-- The digits a figure was printed with, so the median and range read as
-- the runs did ("299", "1.8", "0.80").
local function decimals(s)
  local frac = s:match("^%-?%d+%.(%d+)")
  return frac and #frac or 0
end

local function num(n, d)
  return fmt("%." .. d .. "f", n)
end

-- combine(strings) -> "median (min-max) unit" when every run printed a
-- figure of one unit, the one string when all runs agree, else each
-- run's in turn
local function combine(strs)
  local ns, unit, d = {}, nil, 0
  local ok = #strs > 0
  for i, s in ipairs(strs) do
    local n, u = figure(s)
    if not n or (unit and u ~= unit) then ok = false break end
    unit = u
    ns[i] = n
    d = math.max(d, decimals(s))
  end
  if ok then
    local lo, hi = math.min(table.unpack(ns)), math.max(table.unpack(ns))
    local m = num(median(ns), d)
    local u = (unit == "" or unit:match("^[/%%]")) and unit or (" " .. unit)
    if #ns == 1 or lo == hi then return m .. u end
    return fmt("%s (%s-%s)%s", m, num(lo, d), num(hi, d), u)
  end
  local same = true
  for _, s in ipairs(strs) do same = same and s == strs[1] end
  if same then return strs[1] or "-" end
  return table.concat(strs, " / ")
end

local function cell(s)
  return (tostring(s):gsub("|", "\\|"):gsub("µ", "u"))
end

-- by_key(run) -> key -> the run's rows of that key, in order
local function by_key(run)
  local t = {}
  for _, row in ipairs(run.rows) do
    if not row.note then
      local k = key(row.metric)
      t[k] = t[k] or {}
      t[k][#t[k] + 1] = row
    end
  end
  return t
end

-- merged(runs) -> the rows of the run with the most, each with the strings
-- every run printed for it (the n-th row of a key is matched with each
-- run's n-th: "RSS after 1,000 calls" and "RSS after 10000 calls" share one)
local function merged(runs)
  local base = runs[1]
  for _, r in ipairs(runs) do if #r.rows > #base.rows then base = r end end
  local keyed = {}
  for i, r in ipairs(runs) do keyed[i] = by_key(r) end
  local seen = {}
  local out = {}
  for _, row in ipairs(base.rows) do
    if row.note then
      out[#out + 1] = { note = row.note }
    else
      local k = key(row.metric)
      seen[k] = (seen[k] or 0) + 1
      local m = { metric = row.metric, target = row.target, value = {}, floor = {}, ratio = {}, met = {} }
      for i = 1, #runs do
        local other = keyed[i][k] and keyed[i][k][seen[k]]
        if other then
          m.value[#m.value + 1] = other.value
          m.floor[#m.floor + 1] = other.floor
          m.ratio[#m.ratio + 1] = other.ratio
          m.met[#m.met + 1] = other.met
        end
      end
      out[#out + 1] = m
    end
  end
  return out
end

local function met(list)
  local yes, n = 0, 0
  for _, v in ipairs(list) do
    if v == "yes" or v == "NO" then
      n = n + 1
      if v == "yes" then yes = yes + 1 end
    end
  end
  if n == 0 then return "-" end
  if yes == n then return "yes" end
  if yes == 0 then return "no" end
  return fmt("in %d of %d runs", yes, n)
end

local function render_table(runs)
  local out = {
    "| what | value | floor | ratio | target | met |",
    "|---|---|---|---|---|---|",
  }
  local notes = {}
  for _, r in ipairs(merged(runs)) do
    if r.note then
      notes[#notes + 1] = r.note
    else
      out[#out + 1] = fmt("| %s | %s | %s | %s | %s | %s |", cell(r.metric:gsub("^%s+", "... ")),
        cell(combine(r.value)), cell(combine(r.floor)), cell(combine(r.ratio)),
        cell(r.target or "-"), met(r.met))
    end
  end
  if #notes > 0 then
    out[#out + 1] = ""
    out[#out + 1] = "Notes the bench printed (first run):"
    out[#out + 1] = ""
    for _, n in ipairs(notes) do out[#out + 1] = "- " .. cell(n) end
  end
  return table.concat(out, "\n")
end

local function list(xs, f)
  local t = {}
  for i, x in ipairs(xs) do t[i] = f(x) end
  return table.concat(t, ", ")
end

local function render_machine(runs)
  local m = runs[1].meta or {}
  local mc = m.machine or {}
  local first, last = m.started or "?", (runs[#runs].meta or {}).started or "?"
  local out = {}
  if #runs == 1 then
    out[#out + 1] = fmt("Measured by `make bench-doc`: one run of `make bench`, started %s (UTC), "
      .. "from commit %s.", first, mc.commit or "?")
  else
    out[#out + 1] = fmt("Measured by `make bench-doc`: %d runs of `make bench`, one after the other, "
      .. "started %s to %s (UTC), from commit %s.", #runs, first, last, mc.commit or "?")
  end
  out[#out + 1] = ""
  out[#out + 1] = fmt("- Machine: %s core%s (%s), %s.", tostring(mc.cores or "?"),
    mc.cores == 1 and "" or "s", mc.cpu or "CPU unknown", mc.kernel or "kernel unknown")
  out[#out + 1] = fmt("- Load average (1, 5, 15 minutes) as each run started: %s; as it ended: %s.",
    list(runs, function(r) return ((r.meta or {}).loadavg_at_start or "?"):match("^(%S+ %S+ %S+)") or "?" end),
    list(runs, function(r) return ((r.meta or {}).loadavg_at_end or "?"):match("^(%S+ %S+ %S+)") or "?" end))
  out[#out + 1] = fmt("- Browser: %s; %s.", m.product or "?", m.lua or "?")
  local failed = {}
  for i, r in ipairs(runs) do
    for _, e in ipairs(r.errors or {}) do failed[#failed + 1] = fmt("run %d: %s", i, e.section) end
  end
  if #failed > 0 then
    out[#out + 1] = "- Sections that failed to run: " .. table.concat(failed, "; ") .. "."
  end
  out[#out + 1] = ""
  if #runs == 1 then
    out[#out + 1] = "Each figure is that run's: one run gives no run-to-run range (`BENCH_RUNS`)."
  else
    out[#out + 1] = fmt("Each figure is the median of the %d runs, with the lowest and highest in "
      .. "brackets: the run-to-run range on this machine at that load.", #runs)
  end
  return table.concat(out, "\n")
end

local function render_legend(runs)
  local out = {}
  for _, l in ipairs(runs[1].legend or {}) do
    if l:match("^%s") and #out > 0 then
      out[#out] = out[#out] .. " " .. l:gsub("^%s+", "")
    else
      out[#out + 1] = l
    end
  end
  for i, l in ipairs(out) do out[i] = "- " .. l end
  return table.concat(out, "\n")
end

-- render(record, what) -> markdown: what is "machine", "table" or "legend"
function M.render(record, what)
  local runs = record.runs
  if type(runs) ~= "table" or #runs == 0 then error(M.PATH .. ": no runs") end
  if what == "machine" then return render_machine(runs) end
  if what == "table" then return render_table(runs) end
  if what == "legend" then return render_legend(runs) end
  error("bench: no part '" .. tostring(what) .. "' (machine, table, legend)")
end

local function main(argv)
  package.path = "./lua/?.lua;./lua/?/init.lua;./tools/?.lua;" .. package.path
  if argv[1] ~= "collect" or #argv < 2 then
    io.stderr:write("usage: lua5.4 tools/bench_doc.lua collect RUN.json...\n")
    return 2
  end
  local files = {}
  for i = 2, #argv do files[#files + 1] = argv[i] end
  local record = M.collect(files)
  local pretty = require "devtools_tools.present.pretty"
  local tmp = M.PATH .. ".tmp"
  local f = assert(io.open(tmp, "wb"))
  f:write(pretty.encode(record), "\n")
  f:close()
  assert(os.rename(tmp, M.PATH))
  io.stdout:write("wrote ", M.PATH, " (", #files, " runs)\n")
  return 0
end

if arg and arg[0] and arg[0]:match("bench_doc%.lua$") then
  os.exit(main(arg))
end

return M
