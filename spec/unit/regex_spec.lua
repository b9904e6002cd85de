-- regex_spec: ECMA-262 regular expressions in the C core
-- (core.regex.compile, core.regex.check, Regex:test/close). Scenario tables:
-- pattern, subject, expected answer; or pattern and the expected error.
-- Two dialects: with the u flag (new RegExp(p, "u"), as ajv 8 compiles a
-- `pattern`), and without (new RegExp(p), Annex B, as ajv 6 does, which is
-- what Chrome DevTools for agents validates with). The verdicts of the
-- tables without flags are V8's (node 20), written in.

local core = require("devtools_tools.core")

local function compile(p, flags)
  local r, err = core.regex.compile(p, flags == nil and "u" or flags)
  assert(r, "compile " .. p .. ": " .. tostring(err))
  return r
end

-- One spec per { pattern, subject, answer } case, the pattern compiled
-- with flags ("u", or nil: none, also checked as "").
local function it_answers(cases, flags)
  for _, c in ipairs(cases) do
    it(("/%s/%s on %q -> %s"):format(c[1], flags or "", c[2], tostring(c[3])), function()
      if flags == nil then assert.are.equal(c[3], compile(c[1], ""):test(c[2])) end
      assert.are.equal(c[3], assert(core.regex.compile(c[1], flags)):test(c[2]))
    end)
  end
end

-- One spec per pattern that regex_check and regex_compile refuse alike.
local function it_rejects(pats, flags)
  for _, p in ipairs(pats) do
    it(("rejects /%s/%s"):format(p, flags or ""), function()
      local ok, err = core.regex.check(p, flags)
      assert.is_nil(ok)
      assert.matches("^invalid regular expression: ", err)
      local r, err2 = core.regex.compile(p, flags)
      assert.is_nil(r)
      assert.are.equal(err, err2)
    end)
  end
end

describe("core.regex.compile(p, 'u') / Regex:test", function()
  -- { pattern, subject, matches? }
  local cases = {
    -- search anywhere, like RegExp.prototype.test
    { "b", "abc", true },
    { "^b", "abc", false },
    { "", "", true },
    -- $ only at the very end (no trailing-newline match as in PCRE or Python)
    { "^abc$", "abc", true },
    { "^abc$", "abc\n", false },
    -- . stops at all four line terminators
    { "^a.c$", "abc", true },
    { "^a.c$", "a\nc", false },
    { "^a.c$", "a\rc", false },
    { "^a.c$", "a\u{2028}c", false },
    { "^a.c$", "a\u{2029}c", false },
    { "^.$", "\u{1F432}", true },           -- one code point, not two halves
    -- control escapes
    { "^\\t$", "\t", true },
    { "^\\t$", "\\t", false },
    { "^\\n\\r\\f\\v$", "\n\r\f\v", true },
    { "^\\cC$", "\3", true },
    { "^\\cc$", "\3", true },
    { "^\\0$", "\0", true },
    { "^\\x41$", "A", true },
    { "^\\u0041$", "A", true },
    { "^\\u{1F432}$", "\u{1F432}", true },
    { "^\\uD83D\\uDC32$", "\u{1F432}", true }, -- a surrogate pair is one code point
    { "^\\uD83D$", "\u{1F432}", false },       -- a lone surrogate is not half of a pair
    -- lone surrogates, as our JSON decoder keeps them (ED A0-BF 80-BF): each is
    -- one code point, as in JavaScript's u-mode (was: every pattern failed)
    { "^a.b$", "a\xED\xA0\x80b", true },
    { "^a", "a\xED\xA0\x80", true },
    { "^[^<>]*$", "\xED\xB0\x80x", true },
    { "^\\S\\S$", "\xED\xA0\xBD\xED\xA0\x80", true },
    { "^\\uD83D$", "\xED\xA0\xBD", true },
    { "^\\uD83D$", "\xED\xA0\xBE", false },
    { "^[\\uD800-\\uDBFF]$", "\xED\xAF\xBF", true },
    { "^[\\uD800-\\uDBFF]$", "\xED\xB0\x80", false },
    { "^[\\u0000-\\uFFFF]$", "\xED\xB0\x80", true },
    { "^[\\uE000-\\uFFFF]$", "\xED\xB0\x80", false },
    { "^[^\\uD800]$", "\xED\xA0\x80", false },
    { "^\\p{Cs}$", "\xED\xA0\x80", true },
    { "^\\p{Co}$", "\xED\xA0\x80", false },
    { "^\\P{Co}$", "\xED\xA0\x80", true },
    { "^[\\p{Surrogate}]$", "\xED\xA0\x80", true },
    { "^\\p{Co}$", "\u{E000}", true },
    { "^.{3}$", "a\xED\xA0\x80b", true },
    { "^\\p{gc=Surrogate}$", "\xED\xA0\x80", true },
    -- a high and a low one in a row (CESU-8) are sent as the pair: one character
    { "^\\u{1F432}$", "\xED\xA0\xBD\xED\xB0\xB2", true },
    { "^a.b$", "a\xED\xA0\xBD\xED\xB0\xB2b", true },
    { "^..$", "\xED\xB0\xB2\xED\xA0\xBD", true },            -- low then high: two
    -- in the pattern's own text too (a schema decoded from JSON)
    { "^a\xED\xA0\x80b$", "a\xED\xA0\x80b", true },
    { "^[\xED\xA0\x80-\xED\xBF\xBF]$", "\xED\xB3\x80", true },
    { "^\xED\xA0\xBD\xED\xB0\xB2$", "\u{1F432}", true },
    { "^\\p{Cn}$", "\xED\xBF\xBF", false },                  -- Cs, not a noncharacter
    { "^\\P{Cn}$", "\xED\xBF\xBF", true },
    -- \d and \w are ASCII, \s is ECMA white space and line terminators
    { "^\\d$", "7", true },
    { "^\\d$", "\u{07C0}", false },          -- NKO DIGIT ZERO
    { "^\\D$", "\u{07C0}", true },
    { "^\\w$", "_", true },
    { "^\\w$", "\u{e9}", false },
    { "^\\W$", "\u{e9}", true },
    { "^\\s$", " ", true },
    { "^\\s$", "\u{a0}", true },
    { "^\\s$", "\u{feff}", true },
    { "^\\s$", "\u{2003}", true },
    { "^\\s$", "\u{2029}", true },
    { "^\\s$", "\1", false },
    { "^\\S$", "\u{2013}", true },
    { "^\\S$", "\u{feff}", false },
    { "\\bfoo\\b", "a foo b", true },
    { "\\bfoo\\b", "\u{e9}foo", true },     -- é is not a word character
    { "\\Bfoo", "afoo", true },
    -- character classes
    { "^[a-c]+$", "abcab", true },
    { "^[^a-c]$", "d", true },
    { "^[\\d-]+$", "1-2", true },
    { "^[\\-a]$", "-", true },
    { "^[\\s]$", "\u{3000}", true },
    { "^[\\S]$", " ", false },
    { "^[a\\S]$", "x", true },
    { "^[a\\S]$", " ", false },
    { "^[^a\\S]$", " ", true },
    { "^[^a\\S]$", "x", false },
    { "^[\\b]$", "\8", true },
    { "^[\\u0041-\\u0043]$", "B", true },
    { "^[\\u{1F400}-\\u{1F4FF}]$", "\u{1F432}", true },
    { "^[]$", "", false },                  -- [] matches nothing
    { "^[]$", "a", false },
    { "^[^]$", "\n", true },                -- [^] matches anything
    { "^[.]$", "x", false },
    { "^[$^]+$", "$^", true },
    -- Unicode properties, ECMA's names
    { "^\\p{L}+$", "\u{e9}t\u{e9}", true },
    { "^\\p{Letter}+$", "abc", true },
    { "^\\p{Lu}$", "a", false },
    { "^\\p{Uppercase_Letter}$", "\u{c9}", true },
    { "^\\p{digit}+$", "\u{09EA}\u{09E8}", true },  -- Bengali digits
    { "^\\P{digit}$", "a", true },
    { "^\\p{General_Category=Nd}$", "5", true },
    { "^\\p{gc=Lu}$", "A", true },
    { "^\\p{Script=Greek}$", "\u{3b1}", true },
    { "^\\p{sc=Greek}$", "a", false },
    { "^\\p{scx=Hira}$", "\u{3042}", true },
    { "^\\p{Any}$", "\u{10FFFF}", true },
    { "^\\p{ASCII}+$", "abc", true },
    { "^\\p{Alphabetic}$", "\u{e9}", true },
    { "^\\p{Assigned}$", "a", true },
    { "^\\P{Assigned}$", "a", false },
    { "^[\\p{L}\\d]+$", "a1\u{e9}", true },
    -- groups, alternatives, quantifiers, back-references
    { "^(ab)+$", "abab", true },
    { "^(?:ab|cd){2}$", "abcd", true },
    { "^a{2,3}$", "aaaa", false },
    { "^a{2,}$", "aaaa", true },
    { "^a+?b$", "aaab", true },
    { "^(a)\\1$", "aa", true },
    { "^(a)\\1$", "ab", false },
    { "^(?<x>a)\\k<x>$", "aa", true },
    { "^(?<x>a)(?<y>b)\\k<y>\\k<x>$", "abba", true },
    { "^\\1(a)$", "a", true },              -- a forward reference matches empty
    { "^(?:(a)|b)\\1$", "b", true },        -- so does one to a group that did not take part
    { "^(?=a)ab$", "ab", true },
    { "^(?!a)\\w$", "a", false },
    { "(?<=a)b", "ab", true },
    { "(?<!a)b", "ab", false },
    -- escaped syntax characters are literals
    { "^\\^\\$\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\/\\\\$", "^$.*+?()[]{}|/\\", true },
    -- literals that mean something to PCRE2 but not to ECMA-262
    { "^#x$", "#x", true },
    { "^a b$", "a b", true },
    { "^\u{1F432}*$", "\u{1F432}\u{1F432}", true },
    { "^\u{1F432}*$", "\u{1F409}", false },
  }
  it_answers(cases, "u")

  it("is case-sensitive (no flags)", function()
    assert.is_false(compile("^abc$"):test("ABC"))
  end)

  it("answers nil and a message for a subject that is not UTF-8", function()
    local ok, err = compile("a"):test("a\255")
    assert.is_nil(ok)
    assert.matches("UTF%-8", err)
  end)

  it("answers nil and a message when the match limit is exceeded", function()
    local ok, err = compile("^(a+)+$"):test(string.rep("a", 40) .. "b")
    assert.is_nil(ok)
    assert.matches("limit", err)
  end)

  it("raises for a subject that is not a string", function()
    local r = compile("a")
    assert.has_error(function() r:test({}) end)
    assert.has_error(function() r.test({}, "a") end)
  end)
end)

describe("core.regex.compile(p) without flags (Annex B) / Regex:test", function()
  -- { pattern, subject, what new RegExp(pattern).test(subject) answers in V8 }
  -- A character is a UTF-16 unit: an emoji is two, in the pattern and the
  -- subject alike; what is not an escape stands for itself.
  local cases = {
    { "^.$", "\u{1F432}", false },
    { "^..$", "\u{1F432}", true },
    { "^\u{1F432}$", "\u{1F432}", true },
    { "^[\u{1F432}]$", "\u{1F432}", false },
    { "^[\u{1F432}]$", "\xED\xA0\xBD", true },
    { "^[\u{1F432}]{2}$", "\u{1F432}", true },
    { "^\u{1F432}+$", "\u{1F432}\xED\xB0\xB2\xED\xB0\xB2", true },
    { "^\u{1F432}+$", "\u{1F432}\u{1F432}", false },
    { "^\\uD83D\\uDC32$", "\u{1F432}", true },
    { "^\\uD83D", "\u{1F432}", true },
    { "\\uDC32$", "\u{1F432}", true },
    { "^[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]$", "\u{1F432}", true },
    { "^\\S\\S$", "\u{1F432}", true },
    { "^[^a]$", "\u{1F432}", false },
    { "^\\W{2}$", "\u{1F432}", true },
    { "^.{3}$", "a\u{1F432}", true },
    { "^\\d{3}\\-\\d{4}$", "555-1234", true },
    { "^\\d{3}\\-\\d{4}$", "5551234", false },
    { "^[\\w\\-\\.]+@[\\w\\-]+\\.\\w+$", "a.b-c@d-e.fg", true },
    { "^\\a\\e\\z$", "aez", true },
    { "^\\_$", "_", true },
    { "^\\Z$", "Z", true },
    { "^\\A$", "A", true },
    { "^\\p{L}$", "p{L}", true },
    { "^\\p{L}$", "x", false },
    { "^\\pL$", "pL", true },
    { "^a]$", "a]", true },
    { "^}$", "}", true },
    { "^{$", "{", true },
    { "^a{$", "a{", true },
    { "^a{,3}$", "a{,3}", true },
    { "^a{1$", "a{1", true },
    { "^x{a}$", "x{a}", true },
    { "^\\u{3}$", "uuu", true },
    { "^\\u{61}$", "a", false },
    { "^\\u12$", "u12", true },
    { "^\\x4$", "x4", true },
    { "^\\xg0$", "xg0", true },
    { "^\\c1$", "\\c1", true },
    { "^\\c$", "\\c", true },
    { "^\\cJ$", "\x0a", true },
    { "^[\\c1]$", "\x11", true },
    { "^[\\c_]$", "\x1f", true },
    { "^[\\c*]$", "*", true },
    { "^[\\c*]$", "\\", true },
    { "^\\1$", "\x01", true },
    { "^\\12$", "\x0a", true },
    { "^\\400$", " 0", true },
    { "^\\08$", "\x008", true },
    { "^\\8$", "8", true },
    { "^\\9\\8$", "98", true },
    { "^(a)\\1$", "aa", true },
    { "^(a)\\2$", "a\x02", true },
    { "^(a)\\12$", "a\x0a", true },
    { "^\\k$", "k", true },
    { "^[\\k]$", "k", true },
    { "^(?<x>a)\\k<x>$", "aa", true },
    { "^[\\d-z]+$", "1-z", true },
    { "^[\\d-z]$", "m", false },
    { "^[a-\\d]$", "-", true },
    { "^[\\s-\\w]$", "-", true },
    { "^[\\d-a-z]$", "m", false },
    { "^[\\B]$", "B", true },
    { "^[\\8]$", "8", true },
    { "^[\\1]$", "\x01", true },
    { "^[\\p]$", "p", true },
    { "^[\\-]$", "-", true },
    { "^(?=a)*b$", "b", true },
    { "^(?!a){2}b$", "b", true },
    { "^a(?=b)?$", "a", true },
    -- a repeat ends at an iteration that matches the empty string, as a
    -- lookahead's always does: with a least count of 0 it is never kept
    -- (its group stays unset), else it is tested once (V8's verdicts)
    { "^(?=(a))?\\1a$", "aa", false },
    { "^(?=(a))?\\1a$", "a", true },
    { "^(?=(a)){0,2}\\1a$", "aa", false },
    { "^(?=(a))*?\\1$", "a", false },
    { "^(?=(a)){2}\\1a$", "aa", true },
    { "^(?=(a))+?\\1a$", "aa", true },
    { "^x(?!a)+y", "xy", true },
    { "^x(?!a)+y", "xay", false },
    { "^(?=a){65536}a$", "a", true },
    { "^(?=a){0,70000}b$", "b", true },
    { "^[^\\uD800]$", "\xED\xA0\x80", false },
    { "^\\ud83d$", "\xED\xA0\xBD", true },
    { "^a.b$", "a\xED\xA0\x80b", true },
  }
  it_answers(cases, nil)

  it("is the default: no flags argument, or nil, is Annex B", function()
    assert.is_true(assert(core.regex.compile("^\\-$")):test("-"))
    assert.is_true(assert(core.regex.compile("^\\-$", nil)):test("-"))
    assert.is_nil(core.regex.compile("^\\-$", "u"))
  end)

  it("refuses flags other than u", function()
    assert.has_error(function() core.regex.compile("a", "i") end)
    assert.has_error(function() core.regex.check("a", "uu") end)
  end)

  -- V8 refuses these without flags too
  local bad = { "\\", "a\\", "*a", "a**", "{1}", "a{2}{3}", "a{3,2}", "(?<=a)+", "^*", "$+", "\\b*", "\\B{2}", "[z-a]", "[\u{1F432}-\u{1F433}]", "(?<a>x)\\k", "(?<a>x)[\\k]", "(?<a>x)\\k<b>", "(?i)abc", "(?#c)", "(?P<n>x)", "(?<a>x)(?<a>y)", "(", ")", "[a", "(?<1a>x)" }
  it_rejects(bad, nil)

  -- and takes these, which the u flag refuses
  local good = { "\\-", "\\a", "]", "}", "{", "a{,3}", "\\k", "\\c1", "\\u{110000}x", "\\8", "[\\d-z]", "(?=a)*", "\\p{Foo=Bar}", "\\2(a)", "\\01", "\\u{}" }
  for _, p in ipairs(good) do
    it(("accepts /%s/"):format(p), function()
      assert.is_true(core.regex.check(p))
      assert.is_nil(core.regex.check(p, "u"))
    end)
  end
end)

describe("counts above PCRE2's 65535", function()
  -- valid JavaScript, and a length check people write: nested repeats of
  -- at most 65535 that match the same strings, for an atom without groups
  local cases = {
    { "^[\\s\\S]{0,100000}$", { [0] = true, [65535] = true, [65536] = true, [100000] = true,
      [100001] = false, [131071] = false } },
    { "^a{70000}$", { [69999] = false, [70000] = true, [70001] = false } },
    { "^a{70000,}$", { [69999] = false, [70000] = true, [200000] = true } },
    { "^a{70000,170000}?$", { [69999] = false, [70000] = true, [170000] = true, [170001] = false } },
    { "^a{0,196605}$", { [65535] = true, [131070] = true, [131071] = true, [196605] = true, [196606] = false } },
    { "^[^]{131070}$", { [131069] = false, [131070] = true, [131071] = false } },
    { "^(?:ab){0,3}a{65536}$", { [65535] = false, [65536] = true } },
    -- a class that matches nothing, repeated: left out with a least count
    -- of 0, else left alone (was: too large)
    { "^a[]{0,70000}$", { [1] = true, [2] = false } },
    { "^a[^\\s\\S]{0,131071}$", { [1] = true, [0] = false } },
    { "^a*[]{65536}", { [0] = false, [70000] = false } },
    { "^a*(?<=[]*a)$", { [0] = false, [1] = true, [2] = true } },
  }
  for _, c in ipairs(cases) do
    it(("/%s/ with and without the u flag"):format(c[1]), function()
      for _, flags in ipairs({ "", "u" }) do
        local r = compile(c[1], flags)
        for n, want in pairs(c[2]) do
          local got, err = r:test(string.rep("a", n))
          assert(got == want, ("/%s/%s on %d a: %s %s"):format(c[1], flags, n, tostring(got), tostring(err)))
        end
      end
    end)
  end

  it("leaves a group that captures to PCRE2, which refuses the count", function()
    local r, err = core.regex.compile("^(a){70000}$")
    assert.is_nil(r)
    assert.matches("^unsupported regular expression: number too big", err)
    assert.is_true(core.regex.check("^(a){70000}$"))
    assert.is_nil((core.regex.compile("a{12345678901}")))    -- 10 digits and more: left to PCRE2
  end)

  -- make fuzz, seed 1796525736817, schema case 10867: with the u flag, a
  -- class that failed before anything was written, then such a count
  -- (UBSan under make asan: NULL passed to memcpy)
  it("refuses a failed class followed by such a count, with the class's error", function()
    for _, p in ipairs({ "[\\w\\A{65535,140000}?", "[\\A{65536}", "[\\A{0,70000}" }) do
      local r, err, code = core.regex.compile(p, "u")
      assert.is_nil(r)
      assert.matches("invalid escape \\A at offset %d", err)
      assert.are.equal("syntax", code)
      assert.is_nil((core.regex.check(p, "u")))
    end
  end)
end)

describe("group names", function()
  -- { pattern, valid in V8 (the same with and without the u flag) }:
  -- JavaScript identifiers (ID_Start, then ID_Continue, $, _, U+200C/D),
  -- with \u escapes and surrogate pairs read as the code point they make
  local names = {
    { "(?<\\u{61}>x)\\k<a>", true }, { "(?<a\\u0062>x)\\k<ab>", true },
    { "(?<\\uD835\\uDC9C>x)", true }, { "(?<\u{1D49C}>x)\\k<\\u{1D49C}>", true },
    { "(?<a\u{200B}>x)", false }, { "(?<a\u{200C}>x)", true }, { "(?<\u{E9}>x)", true },
    { "(?<1>x)", false }, { "(?<a1>x)", true }, { "(?<\\ud835>x)", false }, { "(?<a\\x62>x)", false },
    { "(?<$>x)", true }, { "(?<a\\u{>x)", false }, { "(?<\u{660}>x)", false }, { "(?<a\u{660}>x)", true },
    { "(?<a>x)(?<\\u0061>y)", false },
  }
  for _, c in ipairs(names) do
    it(("%s /%s/ and /%s/u"):format(c[2] and "accepts" or "rejects", c[1], c[1]), function()
      assert.are.equal(c[2], core.regex.check(c[1]) == true)
      assert.are.equal(c[2], core.regex.check(c[1], "u") == true)
    end)
  end

  it("matches a back-reference by the decoded name", function()
    local r = compile("^(?<a\\u0062>x)\\k<ab>$", "")
    assert.is_true(r:test("xx"))
    assert.is_false(r:test("x"))
  end)
end)

describe("ECMA-262 syntax errors with the u flag", function()
  -- patterns PCRE2 would take (or read differently) that ECMA-262 rejects
  local bad = {
    "\\a", "\\e", "\\z", "\\Z", "\\A", "\\-", "\\_", "\\c1", "\\c", "\\x1", "\\xg0",
    "\\u12", "\\u{110000}", "\\u{}", "\\p{Foo=Bar}", "\\p{L", "\\pL", "\\k<x>", "\\k",
    "\\2(a)", "\\01",
    "(?P<name>x)", "(?P=n)", "(?#comment)a", "(?i)abc", "(?ims)abc", "(?|a)", "(?>a)",
    "(?<a>x)(?<a>y)", "(?<1a>x)", "(?<>x)",
    "^(abc]", "(", ")", "a)", "[a", "[z-a]", "[\\d-z]", "[a-\\w]",
    "*a", "a**", "a++", "a?+", "a{2}{3}", "{", "a{1", "a{,3}", "a{3,2}", "}", "]",
    "(?=a)*", "(?<=a)+", "^*", "$+", "\\b*",
    "\\", "a\\",
  }
  it_rejects(bad, "u")

  it("rejects a pattern that is not UTF-8", function()
    assert.is_nil(core.regex.check("a\255", "u"))
    assert.is_nil(core.regex.check("a\255"))
  end)

  it("names the offset of the problem", function()
    local _, err = core.regex.check("ab(c")
    assert.matches("offset 2", err)
  end)

  it("rejects nesting deeper than it parses, without crashing", function()
    local p = string.rep("(", 1000) .. "a" .. string.rep(")", 1000)
    assert.is_nil(core.regex.check(p))
  end)

  local good = {
    "(?<name>x)", "(?<n>a)\\k<n>", "(?<$_a1>x)", "[]", "[^]", "\\cA", "\\/",
    "[\\-]", "[-a]", "[a-]", "[--a]", "([abc])+\\s+$", "\\u{10FFFF}", "a{0}", "x|",
  }
  for _, p in ipairs(good) do
    it(("accepts /%s/u"):format(p), function()
      assert.is_true(core.regex.check(p, "u"))
    end)
  end

  it("checks a variable-length lookbehind as valid, which PCRE2 cannot compile", function()
    assert.is_true(core.regex.check("(?<=a+)b"))
    assert.is_true(core.regex.check("(?<=a+)b", "u"))
    local r, err = core.regex.compile("(?<=a+)b")
    assert.is_nil(r)
    assert.matches("^unsupported regular expression: .*lookbehind", err)
  end)

  it("raises for a pattern that is not a string", function()
    assert.has_error(function() core.regex.compile({}) end)
    assert.has_error(function() core.regex.check(nil) end)
  end)
end)

describe("Regex userdata", function()
  it("has a name, a state in tostring, and an idempotent close", function()
    local r = compile("^a+$")
    assert.are.equal("Regex(/^a+$/u)", tostring(r))
    assert.are.equal("Regex(/^a+$/)", tostring(compile("^a+$", "")))
    r:close()
    r:close()
    assert.are.equal("Regex(closed)", tostring(r))
    assert.has_error(function() r:test("a") end, nil)
  end)

  it("shortens a long pattern in tostring", function()
    local r = compile(string.rep("a", 100))
    assert.are.equal("Regex(/" .. string.rep("a", 57) .. ".../u)", tostring(r))
  end)

  it("is closed by __close and __gc", function()
    local mt = getmetatable(compile("a"))
    assert.are.equal("devtools_tools.Regex", mt.__name)
    assert.is_function(mt.__close)
    assert.is_function(mt.__gc)
    local r = compile("a")
    mt.__close(r)
    assert.are.equal("Regex(closed)", tostring(r))
  end)

  it("survives many compiles and collections", function()
    for i = 1, 2000 do
      local r = compile("^x" .. i .. "[a-z]*$")
      assert.is_true(r:test("x" .. i .. "abc"))
      if i % 3 == 0 then r:close() end
    end
    collectgarbage()
    collectgarbage()
  end)

  it("refuses a foreign userdata as self", function()
    local r = compile("a")
    assert.has_error(function() r.test(io.stdout, "a") end)
  end)
end)
