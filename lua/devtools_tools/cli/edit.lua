-- devtools_tools.cli.edit: the REPL's line editor - one line of text,
-- edited on a terminal set to give keys one at a time (dt.term_raw), drawn
-- on one row that scrolls sideways (linenoise's way); history, and Tab
-- completion through a completer the caller gives.
--
-- It is fed bytes (feed) and answers with what happened - a line entered,
-- Ctrl-C, Ctrl-D on an empty line - and writes what the terminal must show
-- through the write function it was given: no descriptor, no loop and no
-- clock of its own, so the REPL's loop drives it and a spec can feed it.
--
-- Keys: printable text and UTF-8; Left/Right, Ctrl-B/F; Home/End,
-- Ctrl-A/E; Alt-B/F and Ctrl-Left/Right by word; Backspace, Delete,
-- Ctrl-D on text; Ctrl-K, Ctrl-U, Ctrl-W; Up/Down, Ctrl-P/N through the
-- history; Ctrl-L clears the screen; Tab completes (twice: the choices);
-- Enter; Ctrl-C; Ctrl-D on an empty line. Other keys and escape sequences
-- it does not know are ignored whole.
--
-- It must never write a byte of what it was fed that is a control
-- character (a page's tool name completed is cleaned by the completer,
-- and the line's own control bytes are never inserted), nor hold more
-- than MAX_LINE bytes of a line.

local dt = require "devtools_tools"
local text = require "devtools_tools.present.text"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local setmetatable, ipairs = setmetatable, ipairs
local byte, sub, find, concat = string.byte, string.sub, string.find, table.concat
local width = text.width

local M = {}

M.MAX_LINE = 64 * 1024       -- bytes one line may hold
M.HISTORY = 1000             -- lines the history keeps
M.LIST_MAX = 200             -- choices a double Tab lists at most

local Editor = {}
Editor.__index = Editor

-- new(opts) -> Editor. opts: write(s) (to the terminal), columns() (its
-- width, or nil), complete(line, pos) -> start, choices (see complete
-- below; optional), history (a list of lines, oldest first).
function M.new(opts)
  return setmetatable({ write = opts.write, columns = opts.columns or function() return 80 end,
    complete = opts.complete, history = opts.history or {}, prompt = "", buf = "", pos = 0,
    pending = "", hidx = nil, saved = nil, shown = false, stuck = false }, Editor)
end

-- ---- characters ------------------------------------------------------------------------

-- The byte length of the UTF-8 character starting at byte i of s.
local function char_len(s, i)
  local b = byte(s, i)
  if not b then return 0 end
  local n = b < 0x80 and 1 or b >= 0xF0 and 4 or b >= 0xE0 and 3 or b >= 0xC0 and 2 or 1
  if i + n - 1 > #s then n = #s - i + 1 end
  return n
end

-- The start of the character that ends at byte pos (pos >= 1).
local function char_start(s, pos)
  local i = pos
  while i > 1 do
    local b = byte(s, i)
    if b < 0x80 or b >= 0xC0 then break end
    i = i - 1
  end
  return i
end

local function is_word_byte(b)
  return b and (b >= 0x80 or (b >= 48 and b <= 57) or (b >= 65 and b <= 90) or (b >= 97 and b <= 122) or b == 95)
end

-- ---- drawing ---------------------------------------------------------------------------

-- refresh(): the prompt and the line, the cursor where it is; the line
-- scrolls so that the cursor stays on the row
-- (only the characters that fit are looked at: a key costs the same on a
-- line of any length)
function Editor:refresh()
  local cols = self.columns() or 80
  if cols < 10 then cols = 10 end
  local pw = width(self.prompt)
  local buf, pos = self.buf, self.pos
  local room = cols - pw - 1
  -- the characters left of the cursor that fit, from it
  local from, used = pos + 1, 0
  while from > 1 do
    local s = char_start(buf, from - 1)
    local w = s == from - 1 and byte(buf, s) < 0x80 and 1 or width(sub(buf, s, from - 1))
    if used + w > room then break end
    used, from = used + w, s
  end
  -- then those right of it
  local to, more = pos, used
  while to < #buf do
    local n = char_len(buf, to + 1)
    local w = n == 1 and byte(buf, to + 1) < 0x80 and 1 or width(sub(buf, to + 1, to + n))
    if more + w > room then break end
    more, to = more + w, to + n
  end
  local col = pw + used
  self.write("\r" .. self.prompt .. sub(buf, from, to) .. "\27[K\r" .. (col > 0 and ("\27[" .. col .. "C") or ""))
  self.shown = true
end

-- hide(): the row cleared (to write a line above the prompt), show() to
-- draw it again
function Editor:hide()
  if self.shown then
    self.write("\r\27[K")
    self.shown = false
  end
end

function Editor:show()
  self:refresh()
end

-- start(prompt): a new line to edit, drawn
function Editor:start(prompt)
  self.prompt, self.buf, self.pos, self.hidx, self.saved, self.stuck = prompt, "", 0, nil, nil, false
  self:refresh()
end

-- ---- editing ---------------------------------------------------------------------------

function Editor:insert(s)
  if #self.buf + #s > M.MAX_LINE then
    self.write("\a")
    return
  end
  self.buf = sub(self.buf, 1, self.pos) .. s .. sub(self.buf, self.pos + 1)
  self.pos = self.pos + #s
end

function Editor:left()
  if self.pos > 0 then self.pos = char_start(self.buf, self.pos) - 1 end
end

function Editor:right()
  if self.pos < #self.buf then self.pos = self.pos + char_len(self.buf, self.pos + 1) end
end

function Editor:backspace()
  if self.pos == 0 then return end
  local s = char_start(self.buf, self.pos)
  self.buf = sub(self.buf, 1, s - 1) .. sub(self.buf, self.pos + 1)
  self.pos = s - 1
end

function Editor:delete()
  if self.pos >= #self.buf then return end
  local n = char_len(self.buf, self.pos + 1)
  self.buf = sub(self.buf, 1, self.pos) .. sub(self.buf, self.pos + n + 1)
end

function Editor:word_left()
  local s, i = self.buf, self.pos
  while i > 0 and not is_word_byte(byte(s, i)) do i = i - 1 end
  while i > 0 and is_word_byte(byte(s, i)) do i = i - 1 end
  self.pos = i
end

function Editor:word_right()
  local s, i, n = self.buf, self.pos, #self.buf
  while i < n and not is_word_byte(byte(s, i + 1)) do i = i + 1 end
  while i < n and is_word_byte(byte(s, i + 1)) do i = i + 1 end
  self.pos = i
end

function Editor:kill_word()
  local p = self.pos
  self:word_left()
  self.buf = sub(self.buf, 1, self.pos) .. sub(self.buf, p + 1)
end

function Editor:history_move(d)
  local h = self.history
  if #h == 0 then return end
  local i = self.hidx
  if i == nil then
    if d > 0 then return end
    self.saved = self.buf
    i = #h + 1
  end
  i = i + d
  if i < 1 then i = 1 end
  if i > #h then
    self.hidx = nil
    self.buf = self.saved or ""
  else
    self.hidx = i
    self.buf = h[i]
  end
  self.pos = #self.buf
end

-- add_history(line): line becomes the newest entry (not twice in a row,
-- not an empty one); the oldest fall out past HISTORY
function Editor:add_history(line)
  local h = self.history
  if line:find("^%s*$") or h[#h] == line then return false end
  h[#h + 1] = line
  while #h > M.HISTORY do table.remove(h, 1) end
  return true
end

-- ---- completion ------------------------------------------------------------------------

local function common_prefix(list)
  local p = list[1]
  for i = 2, #list do
    local s = list[i]
    local n = 0
    while n < #p and n < #s and byte(p, n + 1) == byte(s, n + 1) do n = n + 1 end
    p = sub(p, 1, n)
  end
  -- never half a character
  if #p > 0 and byte(p, #p) >= 0x80 then
    local s = char_start(p, #p)
    if s + char_len(p, s) - 1 > #p then p = sub(p, 1, s - 1) end
  end
  return p
end

-- list(choices): the choices in columns below the line, then the line again
function Editor:list(choices)
  local cols = self.columns() or 80
  local n = #choices
  local shown = {}
  local w = 0
  for i = 1, n do
    if i > M.LIST_MAX then break end
    shown[i] = text.clean(choices[i])
    if width(shown[i]) > w then w = width(shown[i]) end
  end
  w = w + 2
  local per = math.max(1, math.floor(cols / w))
  local lines, row = {}, {}
  for i, c in ipairs(shown) do
    row[#row + 1] = i % per == 0 and c or text.pad(c, w)
    if i % per == 0 then
      lines[#lines + 1] = text.rtrim(concat(row))
      row = {}
    end
  end
  if #row > 0 then lines[#lines + 1] = text.rtrim(concat(row)) end
  if n > M.LIST_MAX then lines[#lines + 1] = "... and " .. (n - M.LIST_MAX) .. " more" end
  self.write("\r\n" .. concat(lines, "\r\n") .. "\r\n")
  self:refresh()
end

-- tab() -> true when it could put nothing more in among several choices
-- (so that the next Tab lists them): completes the text before the
-- cursor. The completer answers start (the byte where the text it
-- completes begins, 1-based) and the choices, each the whole text to put
-- from start to the cursor.
function Editor:tab()
  if not self.complete then
    self.write("\a")
    return false
  end
  local start, choices = self.complete(self.buf, self.pos)
  if not start or not choices or #choices == 0 then
    self.write("\a")
    return false
  end
  local typed = sub(self.buf, start, self.pos)
  local put = #choices == 1 and choices[1] or common_prefix(choices)
  if #put > #typed and sub(put, 1, #typed) == typed then
    self.buf = sub(self.buf, 1, start - 1) .. put .. sub(self.buf, self.pos + 1)
    self.pos = start - 1 + #put
    self:refresh()
    return false
  end
  -- nothing more to put in: the choices, at the second Tab in a row
  if #choices > 1 and self.stuck then
    self:list(choices)
  else
    self.write("\a")
  end
  return true
end

-- ---- keys ------------------------------------------------------------------------------

-- The escape sequences it knows: what they do.
local ESC = {
  ["[A"] = "up", ["[B"] = "down", ["[C"] = "right", ["[D"] = "left",
  ["[H"] = "home", ["[F"] = "end", ["OH"] = "home", ["OF"] = "end", ["OA"] = "up", ["OB"] = "down",
  ["OC"] = "right", ["OD"] = "left",
  ["[1~"] = "home", ["[7~"] = "home", ["[4~"] = "end", ["[8~"] = "end", ["[3~"] = "delete",
  ["[1;5C"] = "word_right", ["[1;5D"] = "word_left", ["[1;3C"] = "word_right", ["[1;3D"] = "word_left",
  ["b"] = "word_left", ["f"] = "word_right",
}

-- The length of the escape sequence at the start of s (after ESC), or 0
-- when s does not hold all of it yet.
local function esc_len(s)
  local c = sub(s, 1, 1)
  if c == "" then return 0 end
  if c == "[" then
    local e = find(s, "[\64-\126]", 2)
    return e or 0
  end
  if c == "O" then return #s >= 2 and 2 or 0 end
  return 1
end

local ACTIONS = {
  up = function(self) self:history_move(-1) end,
  down = function(self) self:history_move(1) end,
  left = Editor.left, right = Editor.right,
  home = function(self) self.pos = 0 end,
  ["end"] = function(self) self.pos = #self.buf end,
  delete = Editor.delete, word_left = Editor.word_left, word_right = Editor.word_right,
}

-- feed(bytes) -> list of events: {"line", text}, {"interrupt"}, {"eof"}.
-- After an event the editor stops taking keys until start() (the rest of
-- bytes is kept, for then).
function Editor:feed(s)
  local events = {}
  s = self.pending .. s
  self.pending = ""
  local i, n = 1, #s
  while i <= n do
    if self.done then
      self.pending = sub(s, i)
      break
    end
    local b = byte(s, i)
    local tab = false
    if b == 27 then
      local len = esc_len(sub(s, i + 1))
      if len == 0 then
        self.pending = sub(s, i)
        break
      end
      local act = ACTIONS[ESC[sub(s, i + 1, i + len)]]
      if act then act(self) self:refresh() end
      i = i + 1 + len
    elseif b == 13 or b == 10 then
      local line = self.buf
      self.pos = #self.buf
      self:refresh()
      self.write("\r\n")
      self.shown = false
      self.done = true
      events[#events + 1] = { "line", line }
      i = i + 1
      -- CR LF from a paste is one Enter
      if b == 13 and byte(s, i) == 10 then i = i + 1 end
    elseif b == 3 then
      self.pos = #self.buf
      self:refresh()
      self.write("^C\r\n")
      self.shown = false
      self.done = true
      events[#events + 1] = { "interrupt" }
      i = i + 1
    elseif b == 4 then
      if self.buf == "" then
        self.write("\r\n")
        self.shown = false
        self.done = true
        events[#events + 1] = { "eof" }
      else
        self:delete()
        self:refresh()
      end
      i = i + 1
    elseif b == 9 then
      tab = self:tab()
      i = i + 1
    else
      if b == 127 or b == 8 then self:backspace()
      elseif b == 1 then self.pos = 0
      elseif b == 5 then self.pos = #self.buf
      elseif b == 2 then self:left()
      elseif b == 6 then self:right()
      elseif b == 11 then self.buf = sub(self.buf, 1, self.pos)
      elseif b == 21 then self.buf = sub(self.buf, self.pos + 1); self.pos = 0
      elseif b == 23 then self:kill_word()
      elseif b == 16 then self:history_move(-1)
      elseif b == 14 then self:history_move(1)
      elseif b == 12 then self.write("\27[H\27[2J")
      elseif b >= 32 then
        -- a run of text (a paste) at once: up to the next control byte
        local e = find(s, "[%z\1-\31\127]", i)
        local piece = sub(s, i, (e or n + 1) - 1)
        self:insert(piece)
        i = i + #piece - 1
      end
      self:refresh()
      i = i + 1
    end
    self.stuck = tab
  end
  return events
end

-- take_rest() -> the bytes fed after the last event, which the editor
-- then forgets (the REPL hands them to the chunk that runs)
function Editor:take_rest()
  local rest = self.pending
  self.pending = ""
  return rest
end

-- resume(prompt) -> events: start(prompt), then what was fed after the
-- last event (keys typed ahead) taken as keys
function Editor:resume(prompt)
  self.done = false
  self:start(prompt)
  local rest = self.pending
  self.pending = ""
  if rest ~= "" then return self:feed(rest) end
  return {}
end

M.Editor = Editor
M.common_prefix = common_prefix

return M
