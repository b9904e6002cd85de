/* regex.c - ECMA-262 regular expressions (as JSON Schema `pattern` means
 * them) on top of PCRE2.
 *
 * JSON Schema says `pattern` is an ECMA-262 regular expression. Chrome
 * DevTools for agents validates with ajv 6, which compiles it as
 * `new RegExp(p)`: no flags, so the grammar of Annex B (web browsers'
 * legacy one) over UTF-16 units. ajv 8 compiles `new RegExp(p, "u")`;
 * both are here, by the flags argument ("" or "u").
 * PCRE2 differs from either dialect in many small ways, so a pattern is
 * never handed to PCRE2 as it is: a small recursive-descent parser checks
 * it against the ECMA-262 grammar and writes an equivalent PCRE2 pattern
 * that is pure ASCII:
 *   - `.` stops at all four line terminators, `$` only at the very end;
 *   - `\d` and `\w` stay ASCII, `\s` is ECMA's white space + line terminators
 *     (written out: PCRE2's `\s` is ASCII only, its UCP `\s` lacks U+FEFF);
 *   - `\cX`, `\0`, `\xHH`, `\uHHHH`, surrogate pairs and `\u{...}` become
 *     `\x{...}`; every literal that is not an ASCII letter or digit is written
 *     as an escape, so nothing can take on a PCRE2-only meaning;
 *   - `\p{...}` takes ECMA's General_Category names (`Letter`, `digit`),
 *     `gc=`, `sc=` and `scx=` (u flag);
 *   - named groups become plain groups and `\k<name>` a numbered
 *     back-reference (JS numbers named groups like the others);
 *   - `[]` never matches, `[^]` matches anything;
 *   - a lone surrogate (in the pattern, or in the subject as WTF-8) is one
 *     character, written as U+F0000-U+F07FF (see map_surrogate);
 *   - PCRE2-only syntax (`(?i)`, `(?#...)`, `(?P<n>...)`, possessive
 *     quantifiers) is an error, as it is in JavaScript.
 * Without the u flag (Annex B), a character is a UTF-16 unit: a code point
 * above U+FFFF, in the pattern or the subject, is its two surrogates, each
 * one character (`^.$` does not match an emoji, `^..$` does); and what is
 * not an escape stands for itself (`\-`, `\a`, `\p{L}` is `p{L}`, `\x4` is
 * `x4`), as do a `{` that is no quantifier, `}` and `]`; `\1`-`\7` beyond
 * the groups and `\0` begin an octal escape; `\c` not before a letter is a
 * backslash; `[\d-z]` is `\d`, `-` and `z`; a lookahead may be quantified.
 * A count above PCRE2's 65535 (`[\s\S]{0,100000}`) is written as nested
 * repeats (big_repeat). What PCRE2 cannot do is reported when compiling:
 * a lookbehind of variable length (`(?<=a+)`) is valid ECMA-262
 * (regex_check says so) but regex_compile fails on it, as on a count above
 * 65535 of a group that captures (`(a){70000}`), or of 10 digits.
 *
 * Lua API (added to the module table):
 *   core.regex.compile(pattern [, flags]) -> Regex | nil, message
 *   core.regex.check(pattern [, flags])   -> true | nil, message (syntax only)
 *     flags: nil or "" as `new RegExp(p)`, "u" as `new RegExp(p, "u")`
 *   Regex:test(subject) -> boolean | nil, message        (search anywhere)
 *   Regex:close(), __close, __gc (idempotent), __tostring
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "dt.h"

#define DT_REGEX_MT "devtools_tools.Regex"

#define MAX_NEST 256          /* deepest group nesting we parse */
#define MAX_REPEAT 65535      /* PCRE2's largest count in {} */
#define NEVER "(?!)"           /* what [] is written as (see quantifier) */
#define BIG_COUNT 1000000000L /* a count of 10 digits or more: never expanded */

/* ECMA-262 WhiteSpace and LineTerminator, as PCRE2 class items. */
#define WS_ITEMS "\\x{9}-\\x{d}\\x{20}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}" \
	"\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}"

typedef struct group_name {
	char *name;             /* owned: the name, its escapes decoded (UTF-8) */
	size_t len;
	int index;              /* its capture group number */
} group_name;

typedef struct translator {
	const unsigned char *s; /* the ECMA pattern (borrowed) */
	size_t n, i;            /* length, read position */
	dt_buf out;             /* owned: the PCRE2 pattern being written */
	int ngroups;            /* capture groups in the whole pattern */
	int opened;             /* capture groups opened so far */
	group_name *names;      /* owned: named groups, in order */
	int nnames, capnames;
	int nest;
	int unicode;            /* Unicode mode (the u flag), else Annex B's */
	unsigned char *units;   /* owned: the pattern as UTF-16 units, Annex B */
	dt_buf name;            /* owned: the group name read last (read_name) */
	pcre2_code *id_start;   /* owned: \p{ID_Start}, compiled on first need */
	pcre2_code *id_part;    /* owned: \p{ID_Continue}, likewise */
	pcre2_match_data *id_md;/* owned: for both */
	int failed;             /* out of memory or syntax error */
	char err[200];
} translator;

static void fail(translator *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(translator *t, const char *fmt, ...)
{
	va_list ap;
	if (t->failed)
		return;
	t->failed = 1;
	va_start(ap, fmt);
	vsnprintf(t->err, sizeof t->err, fmt, ap);
	va_end(ap);
}

static void emitn(translator *t, const char *p, size_t n)
{
	if (t->failed)
		return;
	if (dt_buf_reserve(&t->out, n + 1) != 0) {
		fail(t, "out of memory");
		return;
	}
	memcpy(t->out.data + t->out.len, p, n);
	t->out.len += n;
}

static void emit(translator *t, const char *p)
{
	emitn(t, p, strlen(p));
}

static void emitf(translator *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void emitf(translator *t, const char *fmt, ...)
{
	char tmp[64];
	int k;
	va_list ap;
	va_start(ap, fmt);
	k = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (k > 0)
		emitn(t, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

static int at_end(const translator *t)
{
	return t->i >= t->n;
}

static int peek(const translator *t)
{
	return t->i < t->n ? t->s[t->i] : -1;
}

static int peek_at(const translator *t, size_t k)
{
	return t->i + k < t->n ? t->s[t->i + k] : -1;
}

/* Decodes one UTF-8 code point at s[*i], advancing *i; -1 if invalid. */
static long utf8_next(const unsigned char *s, size_t n, size_t *i)
{
	unsigned c = s[*i];
	long cp;
	int extra, k;
	if (c < 0x80) {
		(*i)++;
		return (long)c;
	}
	if (c >= 0xc2 && c <= 0xdf) { extra = 1; cp = c & 0x1f; }
	else if (c >= 0xe0 && c <= 0xef) { extra = 2; cp = c & 0x0f; }
	else if (c >= 0xf0 && c <= 0xf4) { extra = 3; cp = c & 0x07; }
	else return -1;
	if (*i + (size_t)extra >= n)
		return -1;
	for (k = 1; k <= extra; k++) {
		unsigned d = s[*i + (size_t)k];
		if ((d & 0xc0) != 0x80)
			return -1;
		cp = (cp << 6) | (long)(d & 0x3f);
	}
	if ((extra == 2 && cp < 0x800) || (extra == 3 && (cp < 0x10000 || cp > 0x10ffff))
	    || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*i += (size_t)extra + 1;
	return cp;
}

/* Is s[i] the start of a surrogate's three bytes (ED A0-BF 80-BF), as our
 * JSON decoder keeps a lone one (WTF-8)? */
static int surrogate_at(const unsigned char *s, size_t n, size_t i)
{
	return s[i] == 0xed && i + 2 < n && (s[i + 1] & 0xe0) == 0xa0 && (s[i + 2] & 0xc0) == 0x80;
}

/* The surrogate whose three bytes start at s (surrogate_at said so). */
static long surrogate_unit(const unsigned char *s)
{
	return 0xd000 | ((long)(s[1] & 0x3f) << 6) | (s[2] & 0x3f);
}

/* A surrogate at s[*i], advancing *i: a high and a low one in a row
 * (CESU-8) are the code point they make, as our encoder sends them
 * ("\ud83d\udc32", one character to a page); one alone is returned as it
 * is (D800-DFFF). -1, *i unchanged, when there is none. */
static long surrogate_next(const unsigned char *s, size_t n, size_t *i)
{
	size_t k = *i;
	long hi, lo;
	if (!surrogate_at(s, n, k))
		return -1;
	hi = surrogate_unit(s + k);
	if (hi < 0xdc00 && surrogate_at(s, n, k + 3) && s[k + 4] >= 0xb0) {
		lo = surrogate_unit(s + k + 3);
		*i = k + 6;
		return 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
	}
	*i = k + 3;
	return hi;
}

/* utf8_next for the pattern's text, which may hold surrogates as our JSON
 * decoder keeps them (see surrogate_next). */
static long pattern_next(const unsigned char *s, size_t n, size_t *i)
{
	long cp = surrogate_next(s, n, i);
	return cp >= 0 ? cp : utf8_next(s, n, i);
}

static int is_hex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int hex_val(int c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	return c - 'A' + 10;
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int is_alnum(long c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_syntax_char(int c)
{
	return c != -1 && c != 0 && strchr("^$\\.*+?()[]{}|/", c) != NULL;
}

static int is_surrogate(long cp)
{
	return cp >= 0xd800 && cp <= 0xdfff;
}

/* A lone surrogate: JavaScript strings hold them, and our JSON decoder keeps
 * one as the three bytes ED A0-BF 80-BF (WTF-8), which PCRE2 refuses as
 * invalid UTF-8. A subject's are rewritten as U+F0000-U+F07FF (the first
 * 2048 code points of plane 15, all private use: F3 B0, the second byte
 * less 0x20, the third), and a pattern's surrogates are written as the same
 * code points, so `.`, `[^a]`, `\S` and `[\uD800-\uDFFF]` match one as
 * JavaScript's u-mode does. */
#define SURROGATE_BASE 0xf0000L

static long map_surrogate(long cp)
{
	return is_surrogate(cp) ? cp - 0xd800 + SURROGATE_BASE : cp;
}

/* The next character of the pattern (at t->i, advancing it): a code point
 * in Unicode mode, a UTF-16 unit in Annex B's (see split_units); -1 if
 * the text is not UTF-8. */
static long next_char(translator *t)
{
	if (!t->unicode && surrogate_at(t->s, t->n, t->i)) {
		long u = surrogate_unit(t->s + t->i);
		t->i += 3;
		return u;
	}
	return pattern_next(t->s, t->n, &t->i);
}

/* Without the u flag, JavaScript reads a pattern as UTF-16 units: a code
 * point above U+FFFF is two characters (`\u{1F432}+`'s text repeats only
 * its low half, `[\u{1F432}]` is a class of two). Such code points are
 * rewritten as their two surrogates, so that next_char reads one unit at a
 * time. Bytes that are not UTF-8 are kept, for the parser to refuse. */
static void split_units(translator *t)
{
	size_t i, k = 0, n = t->n;
	for (i = 0; i < n && t->s[i] < 0xf0; i++)
		;
	if (i == n)
		return;
	t->units = malloc(n + n / 2 + 4);       /* 4 bytes become 6 at most */
	if (t->units == NULL) {
		fail(t, "out of memory");
		return;
	}
	memcpy(t->units, t->s, i);
	k = i;
	while (i < n) {
		size_t j = i;
		long cp = t->s[i] >= 0xf0 ? utf8_next(t->s, n, &j) : -1;
		if (cp > 0xffff) {
			cp -= 0x10000;
			k += dt_put_utf8(t->units + k, (unsigned long)(0xd800 + (cp >> 10)));
			k += dt_put_utf8(t->units + k, (unsigned long)(0xdc00 + (cp & 0x3ff)));
			i = j;
		} else {
			t->units[k++] = t->s[i++];
		}
	}
	t->s = t->units;
	t->n = k;
}

/* ---- group names --------------------------------------------------------- */

static long unicode_escape(translator *t);

/* May cp begin (first) or continue a group name? As JavaScript's
 * identifiers: `$`, `_`, ID_Start, and then ID_Continue, U+200C and
 * U+200D. Beyond ASCII, PCRE2's Unicode tables answer, through two small
 * patterns compiled when a name first needs them. */
static int id_char(translator *t, long cp, int first)
{
	pcre2_code **code = first ? &t->id_start : &t->id_part;
	unsigned char u[4];
	int err;
	PCRE2_SIZE off;
	if (cp == '$' || cp == '_' || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z'))
		return 1;
	if (cp < 0x80)
		return !first && is_digit((int)cp);
	if (!first && (cp == 0x200c || cp == 0x200d))
		return 1;
	if (is_surrogate(cp) || cp > 0x10ffff)
		return 0;
	if (*code == NULL)
		*code = pcre2_compile((PCRE2_SPTR)(first ? "^\\p{ID_Start}" : "^\\p{ID_Continue}"),
		                      PCRE2_ZERO_TERMINATED, PCRE2_UTF, &err, &off, NULL);
	if (*code != NULL && t->id_md == NULL)
		t->id_md = pcre2_match_data_create(1, NULL);
	if (*code == NULL || t->id_md == NULL) {
		fail(t, "out of memory");
		return 0;
	}
	return pcre2_match(*code, u, dt_put_utf8(u, (unsigned long)cp), 0, 0, t->id_md, NULL) >= 0;
}

/* Reads `name>` at t->i (after `<`) into t->name, decoded: a `\u` escape
 * (`\uHHHH`, a pair of them, `\u{H...}`) and a surrogate pair in the text
 * are the code point they make, as JavaScript reads names in either mode
 * (`(?<a\u0062>x)` is named ab). Returns its length, 0 on error. */
static size_t read_name(translator *t)
{
	size_t start = t->i;
	t->name.len = 0;
	while (!at_end(t) && peek(t) != '>') {
		long cp;
		if (peek(t) == '\\') {
			if (peek_at(t, 1) != 'u') {
				fail(t, "invalid capture group name at offset %zu", start);
				return 0;
			}
			t->i += 2;
			cp = unicode_escape(t);
			if (cp < 0)
				return 0;
		} else {
			cp = pattern_next(t->s, t->n, &t->i);
		}
		if (cp < 0 || !id_char(t, cp, t->name.len == 0)) {
			fail(t, "invalid capture group name at offset %zu", start);
			return 0;
		}
		if (dt_buf_reserve(&t->name, 4) != 0) {
			fail(t, "out of memory");
			return 0;
		}
		t->name.len += dt_put_utf8((unsigned char *)t->name.data + t->name.len, (unsigned long)cp);
	}
	if (at_end(t) || t->name.len == 0) {
		fail(t, "invalid capture group name at offset %zu", start);
		return 0;
	}
	t->i++;                 /* the '>' */
	return t->name.len;
}

/* The group named as t->name holds; 0 if none is. */
static int find_name(const translator *t)
{
	int k;
	for (k = 0; k < t->nnames; k++)
		if (t->names[k].len == t->name.len && memcmp(t->names[k].name, t->name.data, t->name.len) == 0)
			return t->names[k].index;
	return 0;
}

/* First pass: counts capture groups and records the names, so that
 * back-references may point forward (as ECMA-262 allows). */
static void prescan(translator *t)
{
	size_t i = 0;
	int in_class = 0;
	while (i < t->n && !t->failed) {
		unsigned c = t->s[i];
		if (c == '\\') {
			i += 2;
			continue;
		}
		if (in_class) {
			if (c == ']')
				in_class = 0;
			i++;
			continue;
		}
		if (c == '[') {
			in_class = 1;
		} else if (c == '(') {
			if (i + 1 < t->n && t->s[i + 1] == '?') {
				if (i + 2 < t->n && t->s[i + 2] == '<' && i + 3 < t->n
				    && t->s[i + 3] != '=' && t->s[i + 3] != '!') {
					size_t len, save = t->i;
					char *name;
					t->ngroups++;
					t->i = i + 3;
					len = read_name(t);
					t->i = save;
					if (len == 0)
						return;
					if (find_name(t)) {
						fail(t, "duplicate capture group name '%.*s'", (int)len, t->name.data);
						return;
					}
					if (t->nnames == t->capnames) {
						int cap = t->capnames ? t->capnames * 2 : 8;
						group_name *p = realloc(t->names, (size_t)cap * sizeof *p);
						if (p == NULL) {      /* owns: t->names */
							fail(t, "out of memory");
							return;
						}
						t->names = p;
						t->capnames = cap;
					}
					name = malloc(len);             /* owns: t->names[k].name */
					if (name == NULL) {
						fail(t, "out of memory");
						return;
					}
					memcpy(name, t->name.data, len);
					t->names[t->nnames].name = name;
					t->names[t->nnames].len = len;
					t->names[t->nnames].index = t->ngroups;
					t->nnames++;
				}
			} else {
				t->ngroups++;
			}
		}
		i++;
	}
}

/* ---- escapes ---------------------------------------------------------------- */

/* Reads exactly 4 hex digits; -1 if they are not there. */
static long hex4(translator *t)
{
	long v = 0;
	int k;
	for (k = 0; k < 4; k++) {
		int c = peek_at(t, (size_t)k);
		if (!is_hex(c))
			return -1;
		v = v * 16 + hex_val(c);
	}
	t->i += 4;
	return v;
}

/* After `\u`: \uHHHH, a surrogate pair \uHHHH\uHHHH, or \u{H...}. */
static long unicode_escape(translator *t)
{
	long v;
	if (peek(t) == '{') {
		size_t start = ++t->i;
		v = 0;
		while (is_hex(peek(t))) {
			v = v * 16 + hex_val(peek(t));
			if (v > 0x10ffff) {
				fail(t, "\\u{...} escape above U+10FFFF at offset %zu", start);
				return -1;
			}
			t->i++;
		}
		if (t->i == start || peek(t) != '}') {
			fail(t, "invalid \\u{...} escape at offset %zu", start);
			return -1;
		}
		t->i++;
		return v;
	}
	v = hex4(t);
	if (v < 0) {
		fail(t, "invalid \\u escape at offset %zu", t->i);
		return -1;
	}
	if (v >= 0xd800 && v <= 0xdbff && peek(t) == '\\' && peek_at(t, 1) == 'u') {
		size_t save = t->i;
		long lo;
		t->i += 2;
		lo = hex4(t);
		if (lo >= 0xdc00 && lo <= 0xdfff)
			return 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
		t->i = save;
	}
	return v;
}

/* Annex B's LegacyOctalEscapeSequence, its first digit (0-7) read: up to
 * three octal digits, below 256 (`\400` is a space, then `0`). */
static long octal_escape(translator *t, int first)
{
	long v = first - '0';
	if (peek(t) >= '0' && peek(t) <= '7') {
		v = v * 8 + (peek(t) - '0');
		t->i++;
		if (v < 32 && peek(t) >= '0' && peek(t) <= '7') {
			v = v * 8 + (peek(t) - '0');
			t->i++;
		}
	}
	return v;
}

/* CharacterEscape after the backslash (at t->i): returns the code point,
 * or -1 (with t->failed set) if this is not a valid escape. Without the u
 * flag (Annex B), what is not an escape stands for itself (`\a` is `a`,
 * `\x4` is `x4`, `\u{41}` a `u` and a quantifier), `\1`-`\7` and `\0` begin
 * an octal escape, and `\c` before what is not a letter is a backslash. */
static long char_escape(translator *t, int in_class)
{
	int c = peek(t);
	size_t at = t->i - 1;
	t->i++;
	if (!t->unicode) {
		switch (c) {
		case 'c': {
			int l = peek(t);
			if ((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z')
			    || (in_class && (is_digit(l) || l == '_'))) {
				t->i++;
				return l % 32;
			}
			t->i--;         /* the backslash alone; `c` is read next */
			return '\\';
		}
		case '0': case '1': case '2': case '3':
		case '4': case '5': case '6': case '7':
			return octal_escape(t, c);
		case 'x':
			if (!(is_hex(peek(t)) && is_hex(peek_at(t, 1))))
				return 'x';
			break;
		case 'u': {
			long v = hex4(t);       /* a unit: pairs are two, as in the text */
			return v >= 0 ? v : 'u';
		}
		case 'k':
			if (t->nnames > 0) {    /* with named groups, \k must name one */
				fail(t, "invalid escape \\k at offset %zu", at);
				return -1;
			}
			return 'k';
		case -1:
			fail(t, "\\ at end of pattern");
			return -1;
		case 'f': case 'n': case 'r': case 't': case 'v':
			break;          /* as with the u flag */
		default: {
			long cp;
			t->i--;
			cp = next_char(t);
			if (cp < 0)
				fail(t, "pattern is not valid UTF-8");
			return cp;
		}
		}
	}
	switch (c) {
	case 'f': return 0x0c;
	case 'n': return 0x0a;
	case 'r': return 0x0d;
	case 't': return 0x09;
	case 'v': return 0x0b;
	case 'c': {
		int l = peek(t);
		if ((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z')) {
			t->i++;
			return l % 32;
		}
		fail(t, "invalid \\c escape at offset %zu", at);
		return -1;
	}
	case '0':
		if (is_digit(peek(t))) {
			fail(t, "invalid decimal escape at offset %zu", at);
			return -1;
		}
		return 0;
	case 'x':
		if (is_hex(peek(t)) && is_hex(peek_at(t, 1))) {
			long v = hex_val(peek(t)) * 16 + hex_val(peek_at(t, 1));
			t->i += 2;
			return v;
		}
		fail(t, "invalid \\x escape at offset %zu", at);
		return -1;
	case 'u':
		return unicode_escape(t);
	case '-':
		if (in_class)
			return '-';
		break;
	default:
		if (is_syntax_char(c))
			return c;
		break;
	}
	if (c == -1)
		fail(t, "\\ at end of pattern");
	else if (c < 0x80)
		fail(t, "invalid escape \\%c at offset %zu", c, at);
	else
		fail(t, "invalid escape at offset %zu", at);
	return -1;
}

/* General_Category values by their long names and aliases. */
static const char *const gc_names[][2] = {
	{"Other", "C"}, {"Control", "Cc"}, {"cntrl", "Cc"}, {"Format", "Cf"},
	{"Unassigned", "Cn"}, {"Private_Use", "Co"}, {"Surrogate", "Cs"},
	{"Letter", "L"}, {"Cased_Letter", "LC"}, {"Lowercase_Letter", "Ll"},
	{"Modifier_Letter", "Lm"}, {"Other_Letter", "Lo"},
	{"Titlecase_Letter", "Lt"}, {"Uppercase_Letter", "Lu"},
	{"Mark", "M"}, {"Combining_Mark", "M"}, {"Spacing_Mark", "Mc"},
	{"Enclosing_Mark", "Me"}, {"Nonspacing_Mark", "Mn"},
	{"Number", "N"}, {"Decimal_Number", "Nd"}, {"digit", "Nd"},
	{"Letter_Number", "Nl"}, {"Other_Number", "No"},
	{"Punctuation", "P"}, {"punct", "P"}, {"Connector_Punctuation", "Pc"},
	{"Dash_Punctuation", "Pd"}, {"Close_Punctuation", "Pe"},
	{"Final_Punctuation", "Pf"}, {"Initial_Punctuation", "Pi"},
	{"Other_Punctuation", "Po"}, {"Open_Punctuation", "Ps"},
	{"Symbol", "S"}, {"Currency_Symbol", "Sc"}, {"Modifier_Symbol", "Sk"},
	{"Math_Symbol", "Sm"}, {"Other_Symbol", "So"},
	{"Separator", "Z"}, {"Line_Separator", "Zl"},
	{"Paragraph_Separator", "Zp"}, {"Space_Separator", "Zs"},
	{NULL, NULL}
};

static const char *gc_short(const char *v, size_t len)
{
	int k;
	for (k = 0; gc_names[k][0] != NULL; k++) {
		const char *l = gc_names[k][0], *s = gc_names[k][1];
		if (strlen(l) == len && memcmp(l, v, len) == 0)
			return s;
		if (strlen(s) == len && memcmp(s, v, len) == 0)
			return s;
	}
	return NULL;
}

static int span_is(const char *p, size_t len, const char *lit)
{
	return strlen(lit) == len && memcmp(p, lit, len) == 0;
}

/* A General_Category by its short name, as PCRE2 class items or a class.
 * Lone surrogates are U+F0000-U+F07FF here (see map_surrogate), which
 * PCRE2 counts as private use: Cs is that range, Co the private-use ranges
 * without it (they are fixed by Unicode's stability policy). */
static void emit_gc(translator *o, int in_class, int neg, const char *gc)
{
	const char *items = NULL;
	if (strcmp(gc, "Cs") == 0)
		items = neg ? "\\x{0}-\\x{effff}\\x{f0800}-\\x{10ffff}" : "\\x{f0000}-\\x{f07ff}";
	else if (strcmp(gc, "Co") == 0)
		items = neg ? "\\x{0}-\\x{d7ff}\\x{f900}-\\x{f07ff}\\x{ffffe}-\\x{fffff}\\x{10fffe}-\\x{10ffff}"
		            : "\\x{e000}-\\x{f8ff}\\x{f0800}-\\x{ffffd}\\x{100000}-\\x{10fffd}";
	if (items == NULL)
		emitf(o, "\\%c{%s}", neg ? 'P' : 'p', gc);
	else if (in_class)
		emit(o, items);
	else {
		emit(o, "[");
		emit(o, items);
		emit(o, "]");
	}
}

/* After `\p` or `\P` (neg): reads {...} from t and writes the PCRE2 form
 * to o (t itself, or the buffer of a class being built). */
static void property_escape(translator *t, translator *o, int neg)
{
	size_t start, eq = 0, k;
	const char *p;
	size_t len;
	if (peek(t) != '{') {
		fail(t, "invalid property escape at offset %zu", t->i - 2);
		return;
	}
	start = ++t->i;
	while (!at_end(t) && peek(t) != '}') {
		int c = peek(t);
		if (c == '=' && eq == 0 && t->i > start)
			eq = t->i;
		else if (!(is_alnum(c) || c == '_')) {
			fail(t, "invalid property name at offset %zu", start);
			return;
		}
		t->i++;
	}
	if (at_end(t) || t->i == start || (eq && eq + 1 == t->i)) {
		fail(t, "invalid property name at offset %zu", start);
		return;
	}
	p = (const char *)t->s + start;
	len = t->i - start;
	t->i++;                 /* the '}' */
	if (eq) {
		size_t nlen = eq - start;
		const char *val = (const char *)t->s + eq + 1;
		size_t vlen = len - nlen - 1;
		if (span_is(p, nlen, "General_Category") || span_is(p, nlen, "gc")) {
			const char *s = gc_short(val, vlen);
			if (s == NULL) {
				fail(t, "unknown General_Category value '%.*s'", (int)vlen, val);
				return;
			}
			emit_gc(o, o != t, neg, s);
			return;
		}
		if (!(span_is(p, nlen, "Script") || span_is(p, nlen, "sc")
		      || span_is(p, nlen, "Script_Extensions") || span_is(p, nlen, "scx"))) {
			fail(t, "unknown property '%.*s'", (int)nlen, p);
			return;
		}
		emitf(o, "\\%c{", neg ? 'P' : 'p');
		emit(o, span_is(p, nlen, "Script") || span_is(p, nlen, "sc") ? "sc=" : "scx=");
		emitn(o, val, vlen);
		emit(o, "}");
		return;
	}
	if (span_is(p, len, "Assigned")) {
		emit(o, neg ? "\\p{Cn}" : "\\P{Cn}");
		return;
	}
	{
		const char *s = gc_short(p, len);
		if (s != NULL) {
			emit_gc(o, o != t, neg, s);
			return;
		}
		emitf(o, "\\%c{", neg ? 'P' : 'p');
		for (k = 0; k < len; k++)   /* a binary property: PCRE2 knows them */
			emitn(o, p + k, 1);
		emit(o, "}");
	}
}

/* ---- atoms ---------------------------------------------------------------- */

/* A literal code point (an item of a class, or not). */
static void emit_literal(translator *t, long cp)
{
	if (is_alnum(cp))
		emitf(t, "%c", (int)cp);
	else
		emitf(t, "\\x{%lx}", map_surrogate(cp));
}

static void disjunction(translator *t);

/* One class atom, at its character or backslash: returns its code point,
 * or -1 for a class escape (`\d`, `\s`, `\p{...}`), which is written to
 * body, or noted in *has_S for `\S` (2 in *has_S for `\s`, also
 * written). -1 with t->failed set on error. */
static long class_atom(translator *t, translator *body, int *has_S)
{
	long cp;
	if (peek(t) == '\\') {
		int c = peek_at(t, 1);
		t->i++;
		if (c == 'd' || c == 'D' || c == 'w' || c == 'W') {
			t->i++;
			emitf(body, "\\%c", c);
			return -1;
		}
		if (c == 's') {
			t->i++;
			emit(body, WS_ITEMS);
			*has_S |= 2;
			return -1;
		}
		if (c == 'S') {
			t->i++;
			*has_S |= 1;
			return -1;
		}
		if ((c == 'p' || c == 'P') && t->unicode) {
			t->i++;
			property_escape(t, body, c == 'P');
			return -1;
		}
		if (c == 'b') {
			t->i++;
			return 8;
		}
		return char_escape(t, 1);
	}
	cp = next_char(t);
	if (cp < 0)
		fail(t, "pattern is not valid UTF-8");
	return cp;
}

/* One character class, after its '['. Writes a PCRE2 class (or group). */
static void char_class(translator *t)
{
	translator body;        /* items are written into a second buffer */
	int neg = 0, has_S = 0, empty = 1;
	size_t open = t->i - 1;
	memset(&body, 0, sizeof body);
	if (peek(t) == '^') {
		neg = 1;
		t->i++;
	}
	for (;;) {
		long lo, hi;
		if (at_end(t)) {
			fail(t, "unterminated character class at offset %zu", open);
			break;
		}
		if (peek(t) == ']') {
			t->i++;
			break;
		}
		lo = class_atom(t, &body, &has_S);
		if (t->failed)
			break;
		empty = 0;
		/* a range? */
		if (peek(t) == '-' && peek_at(t, 1) != ']' && peek_at(t, 1) != -1) {
			t->i++;
			hi = class_atom(t, &body, &has_S);
			if (t->failed)
				break;
			if (lo < 0 || hi < 0) {
				if (t->unicode) {
					fail(t, "character class escape in a range at offset %zu", open);
					break;
				}
				/* Annex B: [\d-z] is \d, '-' and 'z' */
				if (lo >= 0)
					emit_literal(&body, lo);
				emit(&body, "\\x{2d}");
				if (hi >= 0)
					emit_literal(&body, hi);
				continue;
			}
			if (lo > hi) {
				fail(t, "range out of order in character class at offset %zu", open);
				break;
			}
			/* PCRE2 rejects surrogates in UTF mode: the part of the range
			 * below them, their part (mapped), the part above them */
			if (lo < 0xd800)
				emitf(&body, "\\x{%lx}-\\x{%lx}", lo, hi < 0xd800 ? hi : 0xd7ffL);
			if (lo <= 0xdfff && hi >= 0xd800)
				emitf(&body, "\\x{%lx}-\\x{%lx}", map_surrogate(lo < 0xd800 ? 0xd800L : lo),
				      map_surrogate(hi > 0xdfff ? 0xdfffL : hi));
			if (hi > 0xdfff)
				emitf(&body, "\\x{%lx}-\\x{%lx}", lo > 0xdfff ? lo : 0xe000L, hi);
			continue;
		}
		if (lo >= 0)
			emit_literal(&body, lo);
	}
	if (body.failed && !t->failed)
		fail(t, "%s", body.err);
	if (!t->failed) {
		const char *items = body.out.data ? body.out.data : "";
		int nitems = (int)body.out.len;
		/* one class where it can be: a repeat of one item may pass 65535
		 * (big_repeat), of a group it may not */
		if (empty || has_S == 3)    /* [^] and [\s\S]: anything; [] and [^\s\S]: nothing */
			emit(t, neg == empty ? "[\\x{0}-\\x{10ffff}]" : NEVER);
		else if (!(has_S & 1)) {
			emit(t, neg ? "[^" : "[");
			emitn(t, items, (size_t)nitems);
			emit(t, "]");
		} else if (nitems == 0) {
			emit(t, neg ? "[" WS_ITEMS "]" : "[^" WS_ITEMS "]");
		} else if (!neg) {          /* [a\S]: a, or anything but white space */
			emit(t, "(?:[");
			emitn(t, items, (size_t)nitems);
			emit(t, "]|[^" WS_ITEMS "])");
		} else {                    /* [^a\S]: white space that is not a */
			emit(t, "(?:(?![");
			emitn(t, items, (size_t)nitems);
			emit(t, "])[" WS_ITEMS "])");
		}
	}
	dt_buf_free(&body.out);
}

/* Reads a decimal number for a quantifier; -1 if none. One of 10 digits
 * or more is BIG_COUNT, which PCRE2 refuses with its own message. */
static long read_int(translator *t)
{
	long v = 0;
	if (!is_digit(peek(t)))
		return -1;
	while (is_digit(peek(t))) {
		v = v <= 99999999L ? v * 10 + (peek(t) - '0') : BIG_COUNT;
		t->i++;
	}
	return v;
}

/* Tries a {n}, {n,} or {n,m} quantifier at '{'; 1 if it was one. */
static int brace_quantifier(translator *t, long *lo, long *hi)
{
	size_t save = t->i;
	t->i++;
	*lo = read_int(t);
	*hi = *lo;
	if (*lo < 0)
		goto no;
	if (peek(t) == ',') {
		t->i++;
		*hi = read_int(t);   /* -1: no upper bound */
	}
	if (peek(t) != '}')
		goto no;
	t->i++;
	return 1;
no:
	t->i = save;
	return 0;
}

/* X{lo,hi} (hi -1: no bound) with a count above PCRE2's 65535, X being
 * the atom just written (t->out from at) and holding no capture group:
 * written as nested repeats of at most 65535, which match the same
 * strings (`^[\s\S]{0,100000}$`, a length check, is valid JavaScript).
 * Whether a match exists is all Regex:test asks, so a lazy repeat is
 * written as a greedy one. */
static void big_repeat(translator *t, size_t at, long lo, long hi)
{
	size_t n = t->out.len - at;
	char *x;
	long m;
	if (t->failed)  /* the atom failed: nothing was written (data may be NULL) */
		return;
	x = malloc(n + 1);
	if (x == NULL) {
		fail(t, "out of memory");
		return;
	}
	if (n > 0)
		memcpy(x, t->out.data + at, n);
	t->out.len = at;
	if (lo > MAX_REPEAT) {
		emit(t, "(?:");
		emitn(t, x, n);
		emitf(t, "{%d}){%ld}", MAX_REPEAT, lo / MAX_REPEAT);
	}
	if (lo % MAX_REPEAT != 0 || (lo > 0 && lo <= MAX_REPEAT)) {
		emitn(t, x, n);
		emitf(t, "{%ld}", lo > MAX_REPEAT ? lo % MAX_REPEAT : lo);
	}
	if (hi < 0) {
		emitn(t, x, n);
		emit(t, "*");
	} else if ((m = hi - lo) >= MAX_REPEAT) {
		/* m = k * 65535 + r: k full blocks and at most r, or fewer full
		 * blocks and at most 65534; no count has two ways, so a failing
		 * match tries each once (nested {0,65535} would try them all in
		 * pairs: past PCRE2's match limit at 100001 characters) */
		long k = m / MAX_REPEAT;
		emit(t, "(?:(?:");
		emitn(t, x, n);
		emitf(t, "{%d}){%ld}", MAX_REPEAT, k);
		emitn(t, x, n);
		emitf(t, "{0,%ld}|", m % MAX_REPEAT);
		if (k > 1) {
			emit(t, "(?:");
			emitn(t, x, n);
			emitf(t, "{%d}){0,%ld}", MAX_REPEAT, k - 1);
		}
		emitn(t, x, n);
		emitf(t, "{0,%d})", MAX_REPEAT - 1);
	} else if (m > 0) {
		emitn(t, x, n);
		emitf(t, "{0,%ld}", m);
	}
	free(x);
}

/* A quantifier on a lookahead (Annex B's QuantifiableAssertion), its
 * least count lo. An iteration that matches the empty string ends a
 * repeat in JavaScript, and a lookahead always does: with lo 0 the
 * lookahead is never kept (its groups stay unset: /^(?=(a))?\1a$/ does
 * not match "aa"), else it is tested once. PCRE2 would try it with and
 * without, and copies it for a count (`(?=a){65535}` was too large). */
static void assertion_quantifier(translator *t, long lo)
{
	if (lo == 0)
		emit(t, "{0}");
	if (peek(t) == '?')     /* lazy: the same */
		t->i++;
}

/* A quantifier on NEVER, the atom written from atom_at ([], [^\s\S]):
 * with a least count of 0 it matches the empty string, and is left out;
 * else it matches nothing, and is left alone. PCRE2 copies a group for a
 * count (`[]{65536}` was too large), and in a lookbehind a repeat is of
 * variable length. */
static void never_quantifier(translator *t, size_t atom_at, long lo)
{
	if (lo == 0)
		t->out.len = atom_at;
	if (peek(t) == '?')
		t->i++;
}

static int is_never(const translator *t, size_t atom_at)
{
	return !t->failed && t->out.len - atom_at == strlen(NEVER)
	       && memcmp(t->out.data + atom_at, NEVER, strlen(NEVER)) == 0;
}

/* An optional quantifier after an atom that may (q=1) or may not take one
 * (q=0), or a lookahead that may (q=2, Annex B); the atom was written
 * from t->out's offset atom_at, and opened capture groups while t->opened
 * was below `groups`. */
static void quantifier(translator *t, int quantifiable, size_t atom_at, int groups)
{
	int c = peek(t);
	long lo, hi;
	size_t at = t->i;
	if (c == '*' || c == '+' || c == '?') {
		if (!quantifiable) {
			fail(t, "nothing to repeat at offset %zu", at);
			return;
		}
		t->i++;
		if (quantifiable == 2) {
			assertion_quantifier(t, c == '+');
			return;
		}
		if (quantifiable == 1 && is_never(t, atom_at)) {
			never_quantifier(t, atom_at, c == '+');
			return;
		}
		emitf(t, "%c", c);
	} else if (c == '{') {
		if (!brace_quantifier(t, &lo, &hi)) {
			if (t->unicode)     /* Annex B: a `{` that is read next */
				fail(t, "lone '{' at offset %zu", at);
			return;
		}
		if (!quantifiable) {
			fail(t, "nothing to repeat at offset %zu", at);
			return;
		}
		if (hi >= 0 && hi < lo) {
			fail(t, "numbers out of order in {} quantifier at offset %zu", at);
			return;
		}
		if (quantifiable == 2) {
			assertion_quantifier(t, lo);
			return;
		}
		if (is_never(t, atom_at)) {
			never_quantifier(t, atom_at, lo);
			return;
		}
		if ((lo > MAX_REPEAT || hi > MAX_REPEAT) && lo < BIG_COUNT && hi < BIG_COUNT
		    && t->opened == groups) {
			big_repeat(t, atom_at, lo, hi);
			if (peek(t) == '?')
				t->i++;
			return;
		}
		if (hi < 0)
			emitf(t, "{%ld,}", lo);
		else if (hi == lo)
			emitf(t, "{%ld}", lo);
		else
			emitf(t, "{%ld,%ld}", lo, hi);
	} else {
		return;
	}
	if (peek(t) == '?') {   /* lazy */
		t->i++;
		emit(t, "?");
	}
}

/* One term: an assertion, or an atom with an optional quantifier. */
static void term(translator *t)
{
	int c = peek(t);
	size_t at = t->i, atom_at = t->out.len;
	int groups = t->opened;
	switch (c) {
	case '^':
		t->i++;
		emit(t, "^");
		quantifier(t, 0, 0, 0);
		return;
	case '$':
		t->i++;
		emit(t, "$");
		quantifier(t, 0, 0, 0);
		return;
	case '.':
		t->i++;
		emit(t, "[^\\n\\r\\x{2028}\\x{2029}]");
		break;
	case '[':
		t->i++;
		char_class(t);
		break;
	case '(': {
		int look = 0;
		t->i++;
		if (++t->nest > MAX_NEST) {
			fail(t, "groups nested too deeply");
			return;
		}
		if (peek(t) == '?') {
			int d = peek_at(t, 1);
			if (d == ':') {
				t->i += 2;
				emit(t, "(?:");
			} else if (d == '=' || d == '!') {
				t->i += 2;
				emitf(t, "(?%c", d);
				look = 1;
			} else if (d == '<' && (peek_at(t, 2) == '=' || peek_at(t, 2) == '!')) {
				emitf(t, "(?<%c", peek_at(t, 2));
				t->i += 3;
				look = 2;
			} else if (d == '<') {
				t->i += 2;
				if (read_name(t) == 0)
					return;
				t->opened++;
				emit(t, "(");
			} else {
				fail(t, "invalid group at offset %zu", at);
				return;
			}
		} else {
			t->opened++;
			emit(t, "(");
		}
		disjunction(t);
		if (t->failed)
			return;
		if (peek(t) != ')') {
			fail(t, "unterminated group at offset %zu", at);
			return;
		}
		t->i++;
		t->nest--;
		emit(t, ")");
		quantifier(t, look == 0 ? 1 : look == 1 && !t->unicode ? 2 : 0, atom_at, groups);  /* Annex B: (?=a)* */
		return;
	}
	case ')':
		fail(t, "unmatched ')' at offset %zu", at);
		return;
	case '*': case '+': case '?':
		fail(t, "nothing to repeat at offset %zu", at);
		return;
	case '{':
		{
			long lo, hi;
			if (brace_quantifier(t, &lo, &hi))
				fail(t, "nothing to repeat at offset %zu", at);
			else if (t->unicode)
				fail(t, "lone '{' at offset %zu", at);
			else {
				t->i++;
				emit_literal(t, '{');
				break;
			}
		}
		return;
	case '}': case ']':
		if (!t->unicode) {      /* Annex B: themselves */
			t->i++;
			emit_literal(t, c);
			break;
		}
		fail(t, "lone '%c' at offset %zu", c, at);
		return;
	case '\\': {
		int d = peek_at(t, 1);
		t->i++;
		if (d == 'b' || d == 'B') {
			t->i++;
			emitf(t, "\\%c", d);
			quantifier(t, 0, 0, 0);
			return;
		}
		if (d == 'd' || d == 'D' || d == 'w' || d == 'W') {
			t->i++;
			emitf(t, "\\%c", d);
		} else if (d == 's') {
			t->i++;
			emit(t, "[" WS_ITEMS "]");
		} else if (d == 'S') {
			t->i++;
			emit(t, "[^" WS_ITEMS "]");
		} else if ((d == 'p' || d == 'P') && t->unicode) {
			t->i++;
			property_escape(t, t, d == 'P');
		} else if (d >= '1' && d <= '9') {
			size_t digits = t->i;
			long n = read_int(t);
			if (n <= t->ngroups)
				emitf(t, "(?:\\g{%ld})", n);
			else if (t->unicode) {
				fail(t, "back-reference \\%ld to a missing group", n);
				return;
			} else {        /* Annex B: an octal escape, or 8 or 9 itself */
				t->i = digits + 1;
				emit_literal(t, d >= '8' ? d : octal_escape(t, d));
			}
		} else if (d == 'k' && (t->unicode || t->nnames > 0)) {
			size_t len;
			int idx;
			t->i++;
			if (peek(t) != '<') {
				fail(t, "invalid named reference at offset %zu", at);
				return;
			}
			t->i++;
			len = read_name(t);
			if (len == 0)
				return;
			idx = find_name(t);
			if (idx == 0) {
				fail(t, "reference to a missing group '%.*s'", (int)len, t->name.data);
				return;
			}
			emitf(t, "(?:\\g{%d})", idx);
		} else {
			long cp = char_escape(t, 0);
			if (cp < 0)
				return;
			emit_literal(t, cp);
		}
		break;
	}
	default: {
		long cp = next_char(t);
		if (cp < 0) {
			fail(t, "pattern is not valid UTF-8");
			return;
		}
		emit_literal(t, cp);
		break;
	}
	}
	quantifier(t, 1, atom_at, groups);
}

static void alternative(translator *t)
{
	while (!t->failed && !at_end(t) && peek(t) != '|' && peek(t) != ')')
		term(t);
}

static void disjunction(translator *t)
{
	alternative(t);
	while (!t->failed && peek(t) == '|') {
		t->i++;
		emit(t, "|");
		alternative(t);
	}
}

/* Translates s[0..n); on success t->out holds a NUL-terminated pattern.
 * The caller frees t->out and t->names either way. */
static int translate(translator *t, const char *s, size_t n, int unicode)
{
	memset(t, 0, sizeof *t);
	t->s = (const unsigned char *)s;
	t->n = n;
	t->unicode = unicode;
	if (!unicode)
		split_units(t);
	if (!t->failed)
		prescan(t);
	if (!t->failed)
		disjunction(t);
	if (!t->failed && !at_end(t))
		fail(t, "unmatched ')' at offset %zu", t->i);
	emitn(t, "", 1);        /* the terminating NUL */
	return !t->failed;
}

static void translator_free(translator *t)
{
	int k;
	dt_buf_free(&t->out);
	for (k = 0; k < t->nnames; k++)
		free(t->names[k].name);
	free(t->names);         /* owns: t->names */
	free(t->units);         /* owns: t->units */
	dt_buf_free(&t->name);
	pcre2_match_data_free(t->id_md);
	pcre2_code_free(t->id_start);
	pcre2_code_free(t->id_part);
	t->id_md = NULL;
	t->id_start = t->id_part = NULL;
	t->names = NULL;
	t->units = NULL;
}

/* ---- the Regex userdata ------------------------------------------------------ */

typedef struct dt_regex {
	pcre2_code *code;           /* owned; NULL once closed */
	pcre2_match_data *md;       /* owned; reused by every test */
	char *source;               /* owned: the ECMA pattern, for tostring */
	size_t srclen;
	int unicode;                /* compiled with the u flag */
	int jit;                    /* JIT-compiled: pcre2_jit_match may be used */
} dt_regex;

static void regex_release(dt_regex *r)
{
	pcre2_match_data_free(r->md);   /* NULL is fine */
	pcre2_code_free(r->code);
	free(r->source);
	r->md = NULL;
	r->code = NULL;
	r->source = NULL;
}

/* Every method has the metatable as upvalue 1: comparing with it is
 * cheaper than luaL_checkudata's registry lookup by name, and test() runs
 * once per validated string. */
static dt_regex *check_regex(lua_State *L)
{
	dt_regex *r = (dt_regex *)lua_touserdata(L, 1);
	if (r != NULL && lua_getmetatable(L, 1)) {         /* ... mt */
		int same = lua_rawequal(L, -1, lua_upvalueindex(1));
		lua_pop(L, 1);                                  /* ... */
		if (same)
			return r;
	}
	return (dt_regex *)luaL_checkudata(L, 1, DT_REGEX_MT);  /* raises */
}

/* The flags argument: none or "" (new RegExp(p)), or "u". */
static int check_flags(lua_State *L, int arg)
{
	const char *f = luaL_optstring(L, arg, "");
	if (f[0] == '\0')
		return 0;
	if (f[0] == 'u' && f[1] == '\0')
		return 1;
	return luaL_argerror(L, arg, "flags must be \"\" or \"u\"");
}

/* core.regex.compile(pattern [, flags]) -> Regex | nil, message, code
 * code: "syntax" (not an ECMA-262 pattern, or one PCRE2 cannot take) or
 * "no_memory". */
static int l_regex_compile(lua_State *L)
{
	size_t n;
	const char *s = luaL_checklstring(L, 1, &n);
	int unicode = check_flags(L, 2);
	translator t;
	dt_regex *r;
	int errcode, ok;
	PCRE2_SIZE erroff;
	char msg[sizeof t.err];
	/* The userdata first: nothing of ours is held while Lua may raise, and a
	 * half-made Regex is freed by its __gc. */
	r = (dt_regex *)lua_newuserdata(L, sizeof *r);     /* pat r */
	memset(r, 0, sizeof *r);
	luaL_getmetatable(L, DT_REGEX_MT);                 /* pat r mt */
	lua_setmetatable(L, -2);                           /* pat r */
	r->unicode = unicode;
	ok = translate(&t, s, n, unicode);
	if (ok)
		r->code = pcre2_compile((PCRE2_SPTR)t.out.data, t.out.len - 1,
		                        PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_MATCH_UNSET_BACKREF
		                        | PCRE2_NEVER_BACKSLASH_C, &errcode, &erroff, NULL);
	else
		memcpy(msg, t.err, sizeof msg);
	translator_free(&t);
	if (!ok)
		return dt_push_failf(L, strcmp(msg, "out of memory") == 0 ? DT_ENOMEM : DT_ESYNTAX,
		                     "invalid regular expression: %s", msg);
	if (r->code == NULL) {
		pcre2_get_error_message(errcode, (PCRE2_UCHAR *)msg, sizeof msg);
		return dt_push_failf(L, errcode == PCRE2_ERROR_NOMEMORY ? DT_ENOMEM : DT_ESYNTAX,
		                     "unsupported regular expression: %s", msg);
	}
	r->jit = pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE) == 0;  /* else interpreted */
	r->md = pcre2_match_data_create_from_pattern(r->code, NULL);   /* owns: r->md */
	r->source = malloc(n + 1);                                      /* owns: r->source */
	if (r->md == NULL || r->source == NULL) {
		regex_release(r);
		return dt_push_fail(L, DT_ENOMEM, "out of memory compiling a regular expression");
	}
	memcpy(r->source, s, n + 1);
	r->srclen = n;
	return 1;
}

/* core.regex.check(pattern [, flags]) -> true | nil, message, code
 * (as regex_compile) */
static int l_regex_check(lua_State *L)
{
	size_t n;
	const char *s = luaL_checklstring(L, 1, &n);
	int unicode = check_flags(L, 2);
	translator t;
	char msg[sizeof t.err];
	int ok = translate(&t, s, n, unicode);
	memcpy(msg, t.err, sizeof msg);
	translator_free(&t);
	if (ok) {
		lua_pushboolean(L, 1);
		return 1;
	}
	return dt_push_failf(L, strcmp(msg, "out of memory") == 0 ? DT_ENOMEM : DT_ESYNTAX,
	                     "invalid regular expression: %s", msg);
}

/* The subject as the compiled pattern reads it, in a userdata left on the
 * stack, or s itself when nothing needs rewriting (from: where its first
 * non-ASCII byte is). With the u flag, surrogates are read by
 * surrogate_next, and the lone ones are U+F0000-U+F07FF (see
 * map_surrogate). Without it, JavaScript sees UTF-16 units: every code
 * point above U+FFFF is its two surrogates, each written as its stand-in,
 * as a lone one is; no other code point above U+FFFF is left, so the
 * stand-ins mean nothing else. */
static const char *map_subject(lua_State *L, const char *s, size_t *n, size_t from, int unicode)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = from, k = 0, len = *n;
	unsigned char *out;
	while (i < len && !surrogate_at(u, len, i) && (unicode || u[i] < 0xf0))
		i++;
	if (i == len)
		return s;
	out = (unsigned char *)lua_newuserdata(L, 2 * len + 1);  /* 4 bytes become 8 at most */
	memcpy(out, s, i);
	k = i;
	while (i < len) {
		long cp;
		size_t j = i;
		if (!unicode && surrogate_at(u, len, i)) {      /* one unit, never a pair */
			cp = surrogate_unit(u + i);
			i += 3;
		} else if (!unicode && u[i] >= 0xf0 && (cp = utf8_next(u, len, &j)) > 0xffff) {
			i = j;
			cp -= 0x10000;
			k += dt_put_utf8(out + k, (unsigned long)map_surrogate(0xd800 + (cp >> 10)));
			cp = 0xdc00 + (cp & 0x3ff);
		} else if (unicode && (cp = surrogate_next(u, len, &i)) >= 0) {
			;               /* a pair's code point, or a lone one */
		} else {
			out[k++] = u[i++];
			continue;
		}
		k += dt_put_utf8(out + k, (unsigned long)map_surrogate(cp));
	}
	*n = k;
	return (const char *)out;
}

/* regex:test(subject) -> boolean | nil, message */
static int l_regex_test(lua_State *L)
{
	dt_regex *r = check_regex(L);
	size_t n, i = 0;
	const char *s = luaL_checklstring(L, 2, &n);
	int rc;
	if (r->code == NULL)
		return luaL_argerror(L, 1, "regex is closed");
	while (i < n && (unsigned char)s[i] < 0x80)
		i++;
	if (i == n && r->jit) {
		/* pcre2_jit_match skips pcre2_match's checks, the UTF-8 one
		 * included: an ASCII subject needs none, any other goes the long way */
		rc = pcre2_jit_match(r->code, (PCRE2_SPTR)s, n, 0, 0, r->md, NULL);
	} else {
		if (i < n)
			s = map_subject(L, s, &n, i, r->unicode);
		rc = pcre2_match(r->code, (PCRE2_SPTR)s, n, 0, 0, r->md, NULL);
	}
	if (rc == PCRE2_ERROR_JIT_STACKLIMIT)   /* retry without the JIT's small stack */
		rc = pcre2_match(r->code, (PCRE2_SPTR)s, n, 0, PCRE2_NO_JIT, r->md, NULL);
	if (rc >= 0) {
		lua_pushboolean(L, 1);
		return 1;
	}
	if (rc == PCRE2_ERROR_NOMATCH) {
		lua_pushboolean(L, 0);
		return 1;
	}
	{
		char msg[200];
		pcre2_get_error_message(rc, (PCRE2_UCHAR *)msg, sizeof msg);
		lua_pushnil(L);
		lua_pushfstring(L, "regex match failed: %s", msg);
		return 2;
	}
}

static int l_regex_close(lua_State *L)
{
	regex_release(check_regex(L));
	return 0;
}

static int l_regex_tostring(lua_State *L)
{
	dt_regex *r = check_regex(L);
	if (r->code == NULL)
		lua_pushliteral(L, "Regex(closed)");
	else {
		char buf[80];
		const char *fl = r->unicode ? "u" : "";
		if (r->srclen > 60)
			snprintf(buf, sizeof buf, "Regex(/%.57s.../%s)", r->source, fl);
		else
			snprintf(buf, sizeof buf, "Regex(/%s/%s)", r->source, fl);
		lua_pushstring(L, buf);
	}
	return 1;
}

void dt_regex_open(lua_State *L)
{
	static const luaL_Reg methods[] = {
		{"test", l_regex_test},
		{"close", l_regex_close},
		{NULL, NULL}
	};
	static const luaL_Reg funcs[] = {
		{"compile", l_regex_compile},
		{"check", l_regex_check},
		{NULL, NULL}
	};
	static const dt_class cls = { DT_REGEX_MT, methods, l_regex_close, l_regex_tostring, NULL };
	dt_class_register(L, &cls);                 /* methods see the metatable as upvalue 1 */
	dt_open_part(L, "regex", funcs);
}
