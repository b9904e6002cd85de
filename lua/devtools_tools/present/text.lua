-- devtools_tools.present.text: page text made safe and small for a person.
--
-- Everything a page sends is data: before it reaches a terminal or an
-- editor, control characters (escape sequences among them, C1 ones such as
-- U+009B CSI too) and the bidirectional overrides that reorder a line
-- (U+202A-202E, U+2066-2069) become "?", so a page can neither drive the
-- terminal nor disguise its text. Text is measured in the columns a
-- terminal gives it, cut without splitting a UTF-8 character, and bounded:
-- a long text shows its start and how much was left out.
--
-- It must never change what it is not asked to (a value that stays JSON is
-- escaped by present.pretty, not here), nor take more than linear time on
-- any input (the patterns here are never anchored at the end of a run).

local dt = require "devtools_tools"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local tostring, type, ipairs, byte, sub, rep, format =
      tostring, type, ipairs, string.byte, string.sub, string.rep, string.format

local M = {}

-- clean(s) -> one line of text: controls and bidi overrides as "?", line
-- breaks and tabs as spaces. nil shows as "". The characters are the
-- library's one list (dt.controls): most text holds none of them, and is
-- returned as it is after one look.
local controls = dt.controls
local function as_line(cp)
  if cp == 9 or cp == 10 or cp == 13 then return " " end
  return "?"
end

function M.clean(s)
  if s == nil then return "" end
  s = tostring(s)
  if not controls.has(s) then return s end
  return controls.clean(s, as_line)
end

-- clean_lines(s) -> the same, keeping line breaks (for a buffer or a
-- block of text shown whole)
local function as_lines(cp)
  if cp == 10 then return nil end
  if cp == 9 then return " " end
  return "?"
end

function M.clean_lines(s)
  if s == nil then return "" end
  s = tostring(s)
  if not controls.has(s) then return s end
  return controls.clean((s:gsub("\r\n", "\n")), as_lines)
end

-- rtrim(s) -> s without trailing white space, in linear time ("%s+$" is
-- tried from every position of a long run: quadratic).
function M.rtrim(s)
  local i = #s
  while i > 0 do
    local b = byte(s, i)
    if b == 32 or (b >= 9 and b <= 13) then i = i - 1 else break end
  end
  return sub(s, 1, i)
end

-- cut(s, n) -> the first n bytes of s, less a UTF-8 character the cut
-- would split.
function M.cut(s, n)
  if #s <= n then return s end
  s = sub(s, 1, n)
  local tail = s:match("[\192-\247][\128-\191]*$")
  if tail then
    local b = byte(tail, 1)
    local want = b >= 240 and 4 or b >= 224 and 3 or 2
    if #tail < want then s = sub(s, 1, #s - #tail) end
  end
  return s
end

-- bounded(s, limit) -> s when it has at most limit bytes, else its start
-- and "... (N more bytes)"; and the number of bytes left out (0 if none).
function M.bounded(s, limit)
  s = tostring(s)
  if #s <= limit then return s, 0 end
  local head = M.cut(s, limit)
  local more = #s - #head
  return head .. format("... (%d more bytes)", more), more
end

-- brief(s, n?) -> s, or its first n - 3 bytes and "..." (a shorter mark
-- than bounded's, for a value quoted inside a message)
function M.brief(s, n)
  n = n or 60
  if #s <= n then return s end
  return M.cut(s, n - 3) .. "..."
end

-- The columns a text takes on a terminal: one per character, two for the
-- wide ones of East Asian scripts (and emoji), none for combining marks,
-- zero-width characters and variation selectors; a byte that is no UTF-8
-- takes one.
local WIDE = { { 0x1100, 0x115F }, { 0x2E80, 0x303E }, { 0x3041, 0x33FF }, { 0x3400, 0x4DBF },
  { 0x4E00, 0x9FFF }, { 0xA000, 0xA4CF }, { 0xAC00, 0xD7A3 }, { 0xF900, 0xFAFF },
  { 0xFE30, 0xFE4F }, { 0xFF00, 0xFF60 }, { 0xFFE0, 0xFFE6 }, { 0x1F300, 0x1F64F },
  { 0x1F900, 0x1F9FF }, { 0x20000, 0x3FFFD } }
local ZERO = { { 0x0300, 0x036F }, { 0x200B, 0x200F }, { 0xFE00, 0xFE0F }, { 0xFE20, 0xFE2F } }

local function in_ranges(c, ranges)
  for i = 1, #ranges do
    local r = ranges[i]
    if c >= r[1] and c <= r[2] then return true end
  end
  return false
end

function M.width(s)
  local w, i, n = 0, 1, #s
  while i <= n do
    local b = byte(s, i)
    local len = b < 0x80 and 1 or b >= 0xF0 and b < 0xF8 and 4 or b >= 0xE0 and b < 0xF0 and 3
      or b >= 0xC2 and b < 0xE0 and 2 or 0
    local c = len == 1 and b or nil
    if len > 1 and i + len - 1 <= n then
      c = b % (len == 2 and 0x20 or len == 3 and 0x10 or 0x08)
      for j = i + 1, i + len - 1 do
        local cb = byte(s, j)
        if cb < 0x80 or cb > 0xBF then c = nil break end
        c = c * 64 + cb % 64
      end
    end
    if not c then
      w, i = w + 1, i + 1                                   -- not UTF-8: one column a byte
    else
      w = w + (in_ranges(c, ZERO) and 0 or in_ranges(c, WIDE) and 2 or 1)
      i = i + len
    end
  end
  return w
end

-- cut_columns(s, n) -> the start of s that takes at most n columns (a
-- character is never split), and the columns it takes
local function cut_columns(s, n)
  local w, i, len = 0, 1, #s
  while i <= len do
    local b = byte(s, i)
    local size = b < 0x80 and 1 or b >= 0xF0 and b < 0xF8 and 4 or b >= 0xE0 and b < 0xF0 and 3
      or b >= 0xC2 and b < 0xE0 and 2 or 1
    if i + size - 1 > len then size = 1 end
    local cw = M.width(sub(s, i, i + size - 1))
    if w + cw > n then break end
    w, i = w + cw, i + size
  end
  return sub(s, 1, i - 1), w
end

-- fit(s, cols) -> s when it takes at most cols columns, else its start
-- and "..." in cols columns (nil cols: s as it is)
function M.fit(s, cols)
  if not cols or M.width(s) <= cols then return s end
  if cols < 3 then return (cut_columns(s, cols)) end
  return (cut_columns(s, cols - 3)) .. "..."
end

-- pad(s, w) -> s and spaces up to w columns
function M.pad(s, w)
  local n = w - M.width(s)
  return n > 0 and (s .. rep(" ", n)) or s
end

-- first_sentence(s, max) -> the cleaned text up to its first sentence's
-- end, cut at max bytes with "..."
function M.first_sentence(s, max)
  s = M.clean(s)
  s = s:match("^(.-[^%.%s][^%.%s]%.)%s") or s
  if #s > max then s = M.cut(s, max - 3) .. "..." end
  return s
end

-- The edits between a and b: insertions, deletions, changes, and two
-- neighbours swapped ("lsit" is one edit from "list").
local function edits(a, b)
  local prev2, prev = nil, {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    local ai = byte(a, i)
    for j = 1, #b do
      local bj = byte(b, j)
      local v = prev[j - 1] + (ai == bj and 0 or 1)
      if prev[j] + 1 < v then v = prev[j] + 1 end
      if cur[j - 1] + 1 < v then v = cur[j - 1] + 1 end
      if prev2 and i > 1 and j > 1 and ai == byte(b, j - 1) and byte(a, i - 1) == bj
          and prev2[j - 2] + 1 < v then
        v = prev2[j - 2] + 1
      end
      cur[j] = v
    end
    prev2, prev = prev, cur
  end
  return prev[#b]
end

-- nearest(word, names) -> the name of the list a person most likely meant
-- by word (a "did you mean"), or nil when none is close: the only name
-- word begins with (3 letters at least), else the fewest edits away
-- (ignoring case; the first of equals), at most 2 and fewer than word has
-- letters. A word of more than 64 bytes is compared with nothing.
function M.nearest(word, names)
  if type(word) ~= "string" or #word > 64 then return nil end
  local w = word:lower()
  local best, best_d = nil, 3
  if #w >= 3 then
    for _, n in ipairs(names) do
      if n:lower():sub(1, #w) == w then
        if best then best = nil break end
        best = n
      end
    end
    if best then return best end
  end
  for _, n in ipairs(names) do
    local d = edits(w, n:lower())
    if d < best_d and d < #w then best, best_d = n, d end
  end
  return best
end

return M
