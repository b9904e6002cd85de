-- report.lua: aligned plain-text tables for the example recipes.
--
--   local report = require "report"
--   report.table({ "key", "hits" }, { { "/api/reps", 3 }, { "/api/products", 1 } })
--
-- Numbers are right-aligned, everything else left-aligned. Nothing here
-- knows about devtools_tools: copy it along with the recipes.

local M = {}

local function cell(v)
  if v == nil then return "" end
  if type(v) == "number" then
    if v == math.floor(v) and math.abs(v) < 1e15 then return string.format("%d", v) end
    return string.format("%.2f", v)
  end
  if type(v) == "boolean" then return tostring(v) end
  if type(v) == "userdata" then return "null" end
  if type(v) == "table" then return "{...}" end
  return tostring(v)
end

-- Renders rows (lists of values) under headers; returns the text.
function M.format(headers, rows)
  local widths, text, right = {}, {}, {}
  for i, h in ipairs(headers) do widths[i] = #h end
  for r, row in ipairs(rows) do
    text[r] = {}
    for i = 1, #headers do
      local s = cell(row[i])
      text[r][i] = s
      if type(row[i]) == "number" then right[i] = true end
      if #s > widths[i] then widths[i] = #s end
    end
  end
  local function line(values, is_header)
    local parts = {}
    for i, v in ipairs(values) do
      local pad = string.rep(" ", widths[i] - #v)
      parts[i] = (right[i] and not is_header) and (pad .. v) or (v .. pad)
    end
    return "  " .. table.concat(parts, "  "):gsub("%s+$", "")
  end
  local out = { line(headers, true) }
  local rule = {}
  for i = 1, #headers do rule[i] = string.rep("-", widths[i]) end
  out[#out + 1] = "  " .. table.concat(rule, "  ")
  for _, r in ipairs(text) do out[#out + 1] = line(r) end
  return table.concat(out, "\n")
end

function M.table(headers, rows)
  print(M.format(headers, rows))
end

-- Money in integer cents -> "59.97" ("-0.05" for -5)
function M.money(cents)
  local a = math.abs(cents)
  return string.format("%s%d.%02d", cents < 0 and "-" or "", math.floor(a / 100), a % 100)
end

function M.section(title)
  print("")
  print("== " .. title)
end

return M
