/* json.c - the JSON codec: wire bytes straight to Lua values and back.
 *
 * Why a direct codec and not libjansson 2.14 (the issue asked for a
 * well-kept library unless a clear reason was measured; see
 * bench/jansson_compare.c and `make bench-jansson` to reproduce):
 *  - it fails requirements outright: it rejects 18446744073709552000
 *    ("too big integer"; JSON_DECODE_INT_AS_REAL fixes that only by making
 *    every integer a float), rejects "\ud800" (which JSON.stringify emits
 *    for lone surrogates) and raw non-UTF-8 bytes in strings, cannot write
 *    shortest floats (0.1 -> 0.10000000000000001; JSON_REAL_PRECISION is
 *    one precision per dump, so 15 breaks 1/3 and 17 breaks 0.1), writes
 *    3.0 as "3.0", and refuses to dump the bytes of a lone surrogate;
 *  - it costs more: decoding 8.0 MB (109776 small records) into Lua tables
 *    through a jansson tree took 376-448 ms and 128.7 MB peak heap (the
 *    jansson parse alone 291-356 ms, 85.7 MB), against 99-108 ms and 43.9 MB
 *    for this one-pass decoder (lua-cjson: 120-128 ms, 43.9 MB): about x4
 *    the time and x2.9 the memory (3 runs, best of 5 each, on the 2-core VM).
 *
 * Value mapping (the Lua side documents it in lua/devtools_tools/json.lua):
 * objects <-> plain tables (an empty one marked JSON_OBJECT_MT), arrays <->
 * tables with metatable DT_ARRAY_MT (or plain sequences 1..n, or a
 * __jsontype of "array", when encoding; see table_kind), null <-> light userdata NULL,
 * integers stay integers on 5.3+. Numbers are read and written in the "C"
 * locale whatever the program's locale is.
 *
 * Both directions are iterative (no C recursion), so the only limit on
 * nesting is max_depth and the Lua stack (lua_checkstack failing reads as
 * too_deep); the per-level state beyond a small C array lives in a userdata,
 * and malloc'd memory is owned by a userdata with __gc, so a Lua error (out
 * of memory) in the middle leaks nothing.
 *
 * Large results (a tool's 8-50 MB of JSON) shaped what the decoder does:
 * each table is created at the size of the last one closed at its depth
 * (arrays of similar records), strings are unescaped into malloc'd scratch
 * freed when the decode ends, and a caller can have one string (a CDP reply's
 * JSON text: see dt_json_aside, and cdp_decode.c for the CDP rule) set aside
 * so that it is decoded without ever being a Lua string.
 *
 * Failures are codes of base.h: DT_ESYNTAX, DT_ETOODEEP, DT_EBADVALUE,
 * DT_ENOMEM for our own allocations (Lua's raise as Lua errors), and
 * DT_ETIMEOUT past a deadline (a CDP reply's: see dt_json_aside; the clock
 * is read every DT_JSON_CLOCK_STEP bytes, so decoding costs the same).
 *
 * The collector is left alone. With a small live heap it marks the value
 * being built at each doubling (about 40% of decoding 8 MB of records);
 * pausing it during the decode was tried: it cut the decode itself but
 * left one full mark of the new value for later, often as a single atomic
 * step of 40-60 ms at the caller's next allocation, for a net CPU saving of
 * only about 10%. */
#define _DEFAULT_SOURCE         /* madvise */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "json.h"
#include "dt.h"

#define JSONBUF_MT "devtools_tools.jsonbuf"
/* Marks a decoded empty object ({}), so that it stays distinct from a
 * decoded [] and from a Lua caller's ambiguous {}; __jsontype = "object". */
#define JSON_OBJECT_MT "devtools_tools.object"
#define SMALL_LEVELS 64         /* levels kept in a C array before spilling */

/* ---- the "C" locale, created once and never freed ---------------------- */

/* uselocale() switches only the calling thread, so a program that called
 * os.setlocale("de_DE") still gets '.' from snprintf/strtod inside. */
static locale_t c_locale(void)
{
	static locale_t cached;         /* owns: one locale object for the process */
	locale_t l = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
	if (l == (locale_t)0) {
		locale_t expected = (locale_t)0;
		l = newlocale(LC_ALL_MASK, "C", (locale_t)0);
		if (l == (locale_t)0)
			return l;
		if (!__atomic_compare_exchange_n(&cached, &expected, l, 0,
		                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			freelocale(l);          /* another thread won the race */
			l = expected;
		}
	}
	return l;
}

/* Runs strtod on a NUL-terminated token in the C locale. */
static double strtod_c(const char *s)
{
	locale_t c = c_locale(), old = (locale_t)0;
	double v;
	if (c != (locale_t)0)
		old = uselocale(c);
	v = strtod(s, NULL);
	if (c != (locale_t)0)
		uselocale(old);
	return v;
}

/* ---- character classes -------------------------------------------------- */

/* 8 bytes at a time: does any byte equal '"' or '\\', or is below 0x20
 * (and, for the encoder, at or above 0x80)? Exact as a yes/no answer. */
#define ONES  UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)
#define HASZERO(x) (((x) - ONES) & ~(x) & HIGHS)
#define HASLESS(x, n) (((x) - ONES * (n)) & ~(x) & HIGHS)

static int special8(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return (HASZERO(v ^ (ONES * '"')) | HASZERO(v ^ (ONES * '\\')) |
	        HASLESS(v, 0x20)) != 0;
}

static int special8_or_high(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return (HASZERO(v ^ (ONES * '"')) | HASZERO(v ^ (ONES * '\\')) |
	        HASLESS(v, 0x20) | (v & HIGHS)) != 0;
}

/* bytes that end a plain run in a JSON string being decoded */
#define DEC_SPECIAL(c) ((c) < 0x20 || (c) == '"' || (c) == '\\')
/* bytes that pass through the encoder unchanged */
#define ENC_PLAIN(c) ((c) >= 0x20 && (c) < 0x80 && (c) != '"' && (c) != '\\')

static int hexval(unsigned c)
{
	if (c - '0' < 10u)
		return (int)(c - '0');
	c |= 0x20;
	if (c - 'a' < 6u)
		return (int)(c - 'a' + 10);
	return -1;
}

/* Grows a userdata-backed array kept at stack slot `slot`: pushes a new
 * userdata, copies the old contents (which may live on the C stack) and
 * replaces the slot with it, so the old block becomes garbage. May raise
 * on out of memory, which leaks nothing. Needs 1 free stack slot. */
static void *grow_slot(lua_State *L, int slot, const void *old, size_t used,
                       size_t newsize)
{
	void *p = lua_newuserdata(L, newsize);   /* ... ud */
	if (used > 0)
		memcpy(p, old, used);
	lua_replace(L, slot);                    /* ... (slot = ud) */
	return p;
}

/* ======================================================================== */
/* Decoding                                                                  */
/* ======================================================================== */

typedef struct jdec {
	lua_State *L;
	const unsigned char *start, *end;
	int mt_slot;            /* stack slot: the array metatable */
	int scratch_slot;       /* stack slot: the box holding scratch, or nil */
	int levels_slot;        /* stack slot: userdata behind levels (when spilled) */
	dt_buf *box;            /* scratch: unescaped string bytes, malloc'd and
	                         * owned by a JSONBUF_MT userdata (its __gc frees
	                         * them if a Lua error cuts the decode short) */
	unsigned char *scratch; /* box->data, or NULL before the first need */
	size_t scratch_cap;     /* box->cap */
	int fixed;              /* scratch is a set-aside text sized to fit: never grown */
	/* One string set aside (dt_json_aside), or rule NULL */
	dt_json_aside *rule;
	int match;              /* levels of rule->path matched by the keys
	                         * of the open containers, 0..3 */
	int key_id;             /* the pending top-level key is rule->gate_key */
	int id_ok;              /* its value was a key of rule->gate */
	int aside;              /* the text was set aside */
	int tbl_slot;           /* stack slot: the table that lacks "value" */
	int text_slot;          /* stack slot: the jtext (userdata) holding the text */
	/* Decoding a set-aside text: pages before rel were given back */
	unsigned char *rel;     /* page-aligned; NULL when not releasing */
	int js_numbers;         /* an integer past 2^53 is the double JavaScript
	                         * reads (what a page's JSON.stringify meant) */
	/* A deadline (see dt_json_aside): the clock is read at check_at, which
	 * stays at end when there is none */
	double deadline;
	const unsigned char *check_at;
	int code;               /* DT_ESYNTAX, DT_ETOODEEP, DT_ENOMEM or DT_ETIMEOUT once failed */
	char *err;
	size_t errsz;
} jdec;

static void dec_fail(jdec *d, const unsigned char *p, const char *what)
{
	size_t off = (size_t)(p - d->start);
	d->code = DT_ESYNTAX;
	if (d->errsz == 0)
		return;
	if (p >= d->end)
		snprintf(d->err, d->errsz, "syntax error at byte offset %zu: %s (unexpected end of input)",
		         off, what);
	else if (*p >= 0x20 && *p < 0x7f)
		snprintf(d->err, d->errsz, "syntax error at byte offset %zu: %s (found '%c')",
		         off, what, *p);
	else
		snprintf(d->err, d->errsz, "syntax error at byte offset %zu: %s (found byte 0x%02X)",
		         off, what, *p);
}

/* Where to read the clock next: DT_JSON_CLOCK_STEP bytes after p, or never
 * (end: the checks are made where p < end) when less is left. */
static const unsigned char *next_check(const jdec *d, const unsigned char *p)
{
	return (size_t)(d->end - p) > DT_JSON_CLOCK_STEP ? p + DT_JSON_CLOCK_STEP : d->end;
}

/* At d->check_at: reads the clock and sets the next check. Past the
 * deadline: fails with DT_ETIMEOUT and returns 1. */
static int dec_late(jdec *d, const unsigned char *p)
{
	d->check_at = next_check(d, p);
	if (dt_now() <= d->deadline)
		return 0;
	d->code = DT_ETIMEOUT;
	if (d->errsz > 0)
		snprintf(d->err, d->errsz, "the deadline passed while decoding (%zu of %zu bytes done)",
		         (size_t)(p - d->start), (size_t)(d->end - d->start));
	return 1;
}

static const unsigned char *skip_ws(const unsigned char *p, const unsigned char *end)
{
	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

/* Pushes a new empty box: a userdata holding a dt_buf whose __gc frees
 * the bytes. Needs 2 free stack slots. */
static dt_buf *push_box(lua_State *L)
{
	dt_buf *b = lua_newuserdata(L, sizeof *b);      /* ... box */
	memset(b, 0, sizeof *b);
	luaL_getmetatable(L, JSONBUF_MT);               /* ... box bmt */
	lua_setmetatable(L, -2);                        /* ... box */
	return b;
}

/* Makes room for need bytes of scratch, keeping its contents. The bytes
 * are malloc'd, not a Lua userdata, so that growing leaves no garbage
 * behind (realloc, mremap for big blocks) and json_decode can free them the
 * moment it is done. Returns 0, or -1 after failing with DT_ENOMEM. */
static int scratch_reserve(jdec *d, size_t need)
{
	if (need <= d->scratch_cap)
		return 0;
	if (d->fixed)               /* cannot happen: the text was sized to its input */
		luaL_error(d->L, "JSON decoder: set-aside text overflow");
	if (d->box == NULL) {
		d->box = push_box(d->L);                    /* ... box */
		lua_replace(d->L, d->scratch_slot);         /* ... (slot = box) */
	}
	d->box->len = 0;
	if (dt_buf_reserve(d->box, need) != 0) {    /* owns: box->data, freed by json_decode or __gc */
		d->code = DT_ENOMEM;
		if (d->errsz > 0)
			snprintf(d->err, d->errsz, "out of memory for a JSON string of %zu bytes", need);
		return -1;
	}
	d->scratch = (unsigned char *)d->box->data;
	d->scratch_cap = d->box->cap;
	return 0;
}

/* ---- set-aside text: a tool result's JSON, unescaped, waiting to be decoded */

/* A plain full userdata: Lua owns it and frees it, and the collector counts
 * it as live while the text is decoded (as it counted the string it
 * replaces), which keeps the collector's pace during the decode as it was.
 * Its resident pages are given back as the decoder moves past them. */
typedef struct jtext {
	size_t len;             /* bytes of text */
	unsigned char data[];   /* room for the rest of the input: it bounds the text */
} jtext;

static size_t page_size(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	return pg > 0 ? (size_t)pg : 4096;
}

/* First page boundary at or after p. */
static unsigned char *page_up(unsigned char *p)
{
	size_t pg = page_size();
	return (unsigned char *)(((uintptr_t)p + pg - 1) / pg * pg);
}

/* Gives back the resident pages wholly inside [*from, to) and moves *from
 * to the end of the last one. The bytes there are ours and never read
 * again: MADV_DONTNEED is as if we zeroed them, whatever allocator Lua
 * uses, and pages touched again would just come back as zeros. */
static void release_pages(unsigned char **from, const unsigned char *to)
{
#ifdef MADV_DONTNEED
	size_t pg = page_size();
	if (to > *from) {
		size_t n = (size_t)(to - *from) / pg * pg;
		if (n > 0) {
			madvise(*from, n, MADV_DONTNEED);
			*from += n;
		}
	}
#else
	(void)from;
	(void)to;
#endif
}

/* Decoding a set-aside text: gives back the pages wholly before p, which
 * the decoder never reads again (values are copied out as they are read). */
static void release_before(jdec *d, const unsigned char *p)
{
	release_pages(&d->rel, p);
}

#define REL_STEP ((size_t)1 << 20)      /* give back pages a MiB at a time */

static long hex4(const unsigned char *p)
{
	int a = hexval(p[0]), b = hexval(p[1]), c = hexval(p[2]), e = hexval(p[3]);
	if ((a | b | c | e) < 0)
		return -1;
	return ((long)a << 12) | (b << 8) | (c << 4) | e;
}

/* p is just past the opening quote. Sets *out and *outlen to the string's
 * bytes (in the input when it has no escapes, else in scratch) and returns
 * the position after the closing quote, or NULL after dec_fail. */
static const unsigned char *dec_string_bytes(jdec *d, const unsigned char *p,
                                             const unsigned char **out, size_t *outlen)
{
	const unsigned char *run = p, *end = d->end;
	size_t n;

	while (end - p >= 8 && !special8(p))
		p += 8;
	while (p < end && !DEC_SPECIAL(*p))
		p++;
	if (p < end && *p == '"') {             /* the common case: no escapes */
		*out = run;
		*outlen = (size_t)(p - run);
		return p + 1;
	}

	/* escapes: unescape into scratch (never longer than the input) */
	n = 0;
	for (;;) {
		size_t len = (size_t)(p - run);
		unsigned long cp;
		long h;
		if (len > 0) {
			if (scratch_reserve(d, n + len + 8) != 0)
				return NULL;
			memcpy(d->scratch + n, run, len);
			n += len;
		}
		if (p >= end) {
			dec_fail(d, p, "unterminated string");
			return NULL;
		}
		if (p >= d->check_at && dec_late(d, p))
			return NULL;
		if (*p == '"')
			break;
		if (*p < 0x20) {
			dec_fail(d, p, "control character in a string");
			return NULL;
		}
		/* *p == '\\' */
		if (scratch_reserve(d, n + 8) != 0)
			return NULL;
		if (end - p < 2) {
			dec_fail(d, p + 1, "unterminated escape");
			return NULL;
		}
		switch (p[1]) {
		case '"': d->scratch[n++] = '"'; p += 2; break;
		case '\\': d->scratch[n++] = '\\'; p += 2; break;
		case '/': d->scratch[n++] = '/'; p += 2; break;
		case 'b': d->scratch[n++] = '\b'; p += 2; break;
		case 'f': d->scratch[n++] = '\f'; p += 2; break;
		case 'n': d->scratch[n++] = '\n'; p += 2; break;
		case 'r': d->scratch[n++] = '\r'; p += 2; break;
		case 't': d->scratch[n++] = '\t'; p += 2; break;
		case 'u':
			if (end - p < 6 || (h = hex4(p + 2)) < 0) {
				dec_fail(d, p, "bad \\u escape (want 4 hex digits)");
				return NULL;
			}
			cp = (unsigned long)h;
			p += 6;
			/* a high surrogate followed by a low one is one code point;
			 * anything else is kept as a lone surrogate */
			if (cp >= 0xD800 && cp < 0xDC00 && end - p >= 6 && p[0] == '\\' &&
			    p[1] == 'u' && (h = hex4(p + 2)) >= 0xDC00 && h < 0xE000) {
				cp = 0x10000 + ((cp - 0xD800) << 10) + ((unsigned long)h - 0xDC00);
				p += 6;
			}
			n += dt_put_utf8(d->scratch + n, cp);
			break;
		default:
			dec_fail(d, p + 1, "bad escape");
			return NULL;
		}
		run = p;
		while (end - p >= 8 && !special8(p))
			p += 8;
		while (p < end && !DEC_SPECIAL(*p))
			p++;
	}
	*out = d->scratch;
	*outlen = n;
	return p + 1;
}

/* p is just past the opening quote. Pushes the string and returns the
 * position after the closing quote, or NULL after dec_fail. */
static const unsigned char *dec_string(jdec *d, const unsigned char *p)
{
	const unsigned char *s;
	size_t n;
	p = dec_string_bytes(d, p, &s, &n);
	if (p != NULL)
		lua_pushlstring(d->L, (const char *)s, n);  /* ... str */
	return p;
}

/* The value of result.result.value in a wanted reply, a string: p is just
 * past its opening quote, the table holding it and the key "value" are on
 * top. Unescapes the text into a jtext of its own (sized by the rest of the
 * input, which bounds it) instead of pushing a string, and keeps the table
 * and the text in their slots. Returns as dec_string. */
static const unsigned char *dec_aside(jdec *d, const unsigned char *p)
{
	lua_State *L = d->L;
	const unsigned char *s;
	unsigned char *save = d->scratch;
	size_t n, save_cap = d->scratch_cap;
	size_t cap = (size_t)(d->end - p) + 8;
	jtext *t;
	lua_pop(L, 1);                                  /* ... obj (the key goes) */
	lua_pushvalue(L, -1);                           /* ... obj obj */
	lua_replace(L, d->tbl_slot);                    /* ... obj */
	t = lua_newuserdata(L, sizeof *t + cap);        /* ... obj text */
	lua_replace(L, d->text_slot);                   /* ... obj */
	t->len = 0;
	d->scratch = t->data;                           /* unescape straight into it */
	d->scratch_cap = cap;
	d->fixed = 1;
	p = dec_string_bytes(d, p, &s, &n);
	d->scratch = save;
	d->scratch_cap = save_cap;
	d->fixed = 0;
	if (p == NULL)
		return NULL;
	if (s != t->data)                               /* no escapes: still in the input */
		memcpy(t->data, s, n);
	t->len = n;
	d->aside = 1;
	return p;
}

/* Is the key on top lit? */
static int key_is(lua_State *L, const char *lit, size_t litlen)
{
	size_t n;
	const char *k = lua_tolstring(L, -1, &n);
	return n == litlen && memcmp(k, lit, n) == 0;
}

/* Tracks the keys that lead to the rule's path (and its top-level gate
 * key) while decoding with a set-aside rule. The key is on top. */
static void track_key(jdec *d, int depth)
{
	const char *want;
	if (depth > 3 || d->match < depth - 1)
		return;
	want = d->rule->path[depth - 1];
	d->match = key_is(d->L, want, strlen(want)) ? depth : depth - 1;
	if (depth == 1)
		d->key_id = key_is(d->L, d->rule->gate_key, strlen(d->rule->gate_key));
}

static const double pow10_exact[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
};

#define IS_DIGIT(c) ((unsigned)((c) - '0') < 10u)

/* Pushes the number starting at p; returns the position after it or NULL. */
static const unsigned char *dec_number(jdec *d, const unsigned char *p)
{
	const unsigned char *start = p, *end = d->end;
	uint64_t m = 0;         /* significant digits, at most 19 of them */
	int nd = 0;             /* digits in m, from the first non-zero one */
	int inexact = 0;        /* digits were left out of m */
	long e10 = 0;           /* value = m * 10^e10 (when !inexact) */
	int neg = 0, isfloat = 0;

	if (*p == '-') {
		neg = 1;
		p++;
	}
	if (p < end && *p == '0') {
		p++;
	} else if (p < end && IS_DIGIT(*p)) {
		do {
			if (nd < 19) {
				m = m * 10 + (unsigned)(*p - '0');
				nd++;
			} else {
				inexact = 1;
				e10++;
			}
			p++;
		} while (p < end && IS_DIGIT(*p));
	} else {
		dec_fail(d, p, "bad number");
		return NULL;
	}
	if (p < end && *p == '.') {
		isfloat = 1;
		p++;
		if (p >= end || !IS_DIGIT(*p)) {
			dec_fail(d, p, "bad number (digit expected after '.')");
			return NULL;
		}
		do {
			unsigned dg = (unsigned)(*p - '0');
			if (nd < 19) {
				m = m * 10 + dg;
				if (m != 0)
					nd++;
				e10--;
			} else if (dg != 0) {
				inexact = 1;
			}
			p++;
		} while (p < end && IS_DIGIT(*p));
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		long x = 0;
		int eneg = 0;
		isfloat = 1;
		p++;
		if (p < end && (*p == '+' || *p == '-')) {
			eneg = *p == '-';
			p++;
		}
		if (p >= end || !IS_DIGIT(*p)) {
			dec_fail(d, p, "bad number (digit expected in exponent)");
			return NULL;
		}
		do {
			if (x < 100000)
				x = x * 10 + (*p - '0');
			p++;
		} while (p < end && IS_DIGIT(*p));
		e10 += eneg ? -x : x;
	}
	if (p < end && (IS_DIGIT(*p) || *p == '.' || *p == 'e' || *p == 'E')) {
		dec_fail(d, p, "bad number");    /* e.g. a leading zero: 012 */
		return NULL;
	}

	if (!isfloat && !inexact && !(d->js_numbers && m > (UINT64_C(1) << 53))) {
		/* an integer literal: exact when it fits int64 ("-0" is a float,
		 * so that -0.0 round-trips) */
		if (neg ? (m <= (uint64_t)INT64_MAX + 1 && m != 0) : m <= (uint64_t)INT64_MAX) {
			int64_t v = neg ? (int64_t)(0 - m) : (int64_t)m;
#if LUA_VERSION_NUM >= 503
			lua_pushinteger(d->L, (lua_Integer)v);
#else
			lua_pushnumber(d->L, (lua_Number)v);    /* correctly rounded */
#endif
			return p;
		}
	}
#if FLT_EVAL_METHOD == 0
	/* Clinger's fast path: m and 10^|e10| are exact doubles, so one
	 * multiplication or division rounds correctly, as strtod would. */
	if (!inexact && m <= (UINT64_C(1) << 53) && e10 >= -22 && e10 <= 22) {
		double v = (double)m;
		v = e10 < 0 ? v / pow10_exact[-e10] : v * pow10_exact[e10];
		lua_pushnumber(d->L, (lua_Number)(neg ? -v : v));
		return p;
	}
#endif
	{
		char small[64];
		size_t len = (size_t)(p - start);
		char *tok = small;
		if (len >= sizeof small) {
			if (scratch_reserve(d, len + 1) != 0)
				return NULL;
			tok = (char *)d->scratch;
		}
		memcpy(tok, start, len);
		tok[len] = '\0';
		lua_pushnumber(d->L, (lua_Number)strtod_c(tok));
	}
	return p;
}

/* Per open container of the decoder. The two hints outlive the container:
 * they are the sizes of the last array and object closed at this depth, so
 * that the next one (arrays of similar records) is created at its final
 * size instead of growing through 1, 2, 4, ... with a rehash each time. A
 * hint is taken by at most one container before that container's own close
 * replaces it, so a misleading hint wastes at most about as many slots as
 * the input had values: bounded by a small multiple of the input size. */
typedef struct dlevel {
	lua_Integer n;          /* elements (array) or members (object) so far */
	int obj;                /* 1 for an object, 0 for an array */
	int hint_arr;           /* length of the last non-empty array closed here */
	int hint_obj;           /* members of the last non-empty object closed here */
} dlevel;

#define HINT_MAX (1 << 24)  /* keeps a hint an int and a table sane */

/* The whole decoder: one pass, one loop, no recursion. Each open container
 * sits on the Lua stack (objects also hold their pending key there);
 * lv[k] describes the container at depth k. On success the value is on top. */
static int dec_run(jdec *d, int max_depth)
{
	lua_State *L = d->L;
	const unsigned char *p = d->start, *end = d->end;
	dlevel small[SMALL_LEVELS];
	dlevel *lv = small;             /* lv[1..depth]; hints valid in lv[1..hi] */
	size_t lv_cap = SMALL_LEVELS;
	int depth = 0, hi = 0;

value:
	p = skip_ws(p, end);
	if (p >= end) {
		dec_fail(d, p, "value expected");
		return 0;
	}
	if (p >= d->check_at && dec_late(d, p))
		return 0;
	switch (*p) {
	case '{':
	case '[': {
		dlevel *l;
		int obj = *p == '{';
		if (depth >= max_depth || !lua_checkstack(L, 4)) {
			d->code = DT_ETOODEEP;
			if (d->errsz > 0)
				snprintf(d->err, d->errsz,
				         "nesting deeper than %d at byte offset %zu%s",
				         depth, (size_t)(p - d->start),
				         depth >= max_depth ? "" : " (the Lua stack is full)");
			return 0;
		}
		if ((size_t)depth + 1 >= lv_cap) {
			lv = grow_slot(L, d->levels_slot, lv, ((size_t)hi + 1) * sizeof *lv,
			               2 * lv_cap * sizeof *lv);
			lv_cap *= 2;
		}
		l = &lv[depth + 1];
		if (depth + 1 > hi) {
			l->hint_arr = l->hint_obj = 0;
			hi = depth + 1;
		}
		p = skip_ws(p + 1, end);
		if (p < end && *p == (obj ? '}' : ']')) {       /* empty: no hint taken */
			p++;
			lua_createtable(L, 0, 0);                   /* ... t */
			if (!obj)
				lua_pushvalue(L, d->mt_slot);           /* ... arr mt */
			else
				luaL_getmetatable(L, JSON_OBJECT_MT);   /* ... obj omt */
			lua_setmetatable(L, -2);                    /* ... t */
			goto value_done;
		}
		if (obj)
			lua_createtable(L, 0, l->hint_obj);         /* ... obj */
		else {
			lua_createtable(L, l->hint_arr, 0);         /* ... arr */
			lua_pushvalue(L, d->mt_slot);               /* ... arr mt */
			lua_setmetatable(L, -2);                    /* ... arr */
		}
		l->n = 0;
		l->obj = obj;
		depth++;
		if (obj)
			goto key;
		goto value;
	}
	case '"':
		if (d->match == 3 && depth == 3 && d->id_ok && !d->aside) {
			p = dec_aside(d, p + 1);                    /* ... obj */
			if (p == NULL)
				return 0;
			lv[depth].n++;
			goto member_done;
		}
		p = dec_string(d, p + 1);                       /* ... str */
		if (p == NULL)
			return 0;
		break;
	case 't':
		if (end - p < 4 || memcmp(p, "true", 4) != 0)
			goto bad_value;
		lua_pushboolean(L, 1);
		p += 4;
		break;
	case 'f':
		if (end - p < 5 || memcmp(p, "false", 5) != 0)
			goto bad_value;
		lua_pushboolean(L, 0);
		p += 5;
		break;
	case 'n':
		if (end - p < 4 || memcmp(p, "null", 4) != 0)
			goto bad_value;
		dt_pushnull(L);
		p += 4;
		break;
	case '-': case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		p = dec_number(d, p);                           /* ... num */
		if (p == NULL)
			return 0;
		break;
	default:
	bad_value:
		dec_fail(d, p, "value expected");
		return 0;
	}

value_done:                     /* a complete value is on top */
	if (depth == 0) {
		p = skip_ws(p, end);
		if (p < end) {
			dec_fail(d, p, "end of input expected after the value");
			return 0;
		}
		return 1;
	}
	if (d->key_id && depth == 1) {                      /* ... obj "id" v */
		d->key_id = 0;
		if (lua_type(L, -1) == LUA_TNUMBER) {
			lua_pushvalue(L, -1);                       /* ... obj "id" v v */
			lua_rawget(L, d->rule->gate);               /* ... obj "id" v ids[v] */
			d->id_ok = lua_toboolean(L, -1);
			if (lua_type(L, -1) != LUA_TNUMBER && d->rule->deadlines != 0) {
				lua_pop(L, 1);                          /* ... obj "id" v */
				lua_pushvalue(L, -1);                   /* ... obj "id" v v */
				lua_rawget(L, d->rule->deadlines);      /* ... obj "id" v deadlines[v] */
			}
			if (lua_type(L, -1) == LUA_TNUMBER) {       /* the owner's deadline */
				d->rule->gate_value = lua_tonumber(L, -2);
				d->deadline = d->rule->deadline = lua_tonumber(L, -1);
				d->check_at = next_check(d, p);
			}
			lua_pop(L, 1);                              /* ... obj "id" v */
		}
	}
	lv[depth].n++;
	if (lv[depth].obj)
		lua_rawset(L, -3);                              /* ... obj */
	else
		lua_rawseti(L, -2, lv[depth].n);                /* ... arr */
member_done:
	{
		dlevel *l = &lv[depth];
		p = skip_ws(p, end);
		if (p < end && *p == ',') {
			p++;
			if (l->obj)
				goto key;
			goto value;
		}
		if (p < end && *p == (l->obj ? '}' : ']')) {
			int h = l->n < HINT_MAX ? (int)l->n : HINT_MAX;
			if (l->obj)
				l->hint_obj = h;
			else
				l->hint_arr = h;
			p++;
			depth--;
			if (d->rel != NULL && p > d->rel && (size_t)(p - d->rel) >= REL_STEP)
				release_before(d, p);
			goto value_done;
		}
		dec_fail(d, p, l->obj ? "',' or '}' expected" : "',' or ']' expected");
		return 0;
	}

key:
	p = skip_ws(p, end);
	if (p >= end || *p != '"') {
		dec_fail(d, p, "string key expected");
		return 0;
	}
	p = dec_string(d, p + 1);                               /* ... obj key */
	if (p == NULL)
		return 0;
	if (d->rule != NULL)
		track_key(d, depth);
	p = skip_ws(p, end);
	if (p >= end || *p != ':') {
		dec_fail(d, p, "':' expected");
		return 0;
	}
	p++;
	goto value;
}

/* Decodes s[0..len): pushes the value and returns 1, or pushes nothing,
 * writes err and sets *code (DT_ESYNTAX, DT_ETOODEEP, DT_ENOMEM) and
 * returns 0. rule: see dt_json_aside (NULL: none); with a text set aside,
 * pushes the value, the table lacking path[2] and the text, and returns 3.
 * rel: page-aligned, inside s: s is ours and its pages from rel on may be
 * given back as decoding moves past them (NULL: s is left alone).
 * deadline: fail with DT_ETIMEOUT once the clock passes it (-1: none; a
 * rule may set one on its own). */
static int json_decode(lua_State *L, const char *s, size_t len, int max_depth,
                       char *err, size_t errsz, int *code, dt_json_aside *rule,
                       unsigned char *rel, double deadline, int js_numbers)
{
	jdec d;
	int base = lua_gettop(L), ok;
	if (max_depth < 0)
		max_depth = DT_JSON_MAX_DEPTH;
	luaL_checkstack(L, 10, "json decode");
	luaL_getmetatable(L, DT_ARRAY_MT);      /* ... mt */
	lua_pushnil(L);                         /* ... mt scratch */
	lua_pushnil(L);                         /* ... mt scratch levels */
	lua_pushnil(L);                         /* ... mt scratch levels tbl */
	lua_pushnil(L);                         /* ... mt scratch levels tbl text */
	memset(&d, 0, sizeof d);
	d.L = L;
	d.start = (const unsigned char *)s;
	d.end = d.start + len;
	d.mt_slot = base + 1;
	d.scratch_slot = base + 2;
	d.levels_slot = base + 3;
	d.tbl_slot = base + 4;
	d.text_slot = base + 5;
	d.rule = rule;
	if (rule != NULL) {
		rule->gate_value = 0;
		rule->deadline = -1;
	}
	d.rel = rel;
	d.js_numbers = js_numbers;
	d.deadline = deadline;
	d.check_at = deadline < 0 ? d.end : next_check(&d, d.start);
	d.err = err;
	d.errsz = errsz;
	ok = dec_run(&d, max_depth);            /* ... mt scratch levels tbl text [...] value */
	if (d.box != NULL)
		dt_buf_free(d.box);                 /* frees: the scratch bytes, now, not at the next GC */
	if (ok && d.aside) {
		lua_replace(L, base + 1);           /* ... value scratch levels tbl text [...] */
		lua_settop(L, base + 5);            /* ... value scratch levels tbl text */
		lua_replace(L, base + 3);           /* ... value scratch text tbl */
		lua_replace(L, base + 2);           /* ... value tbl text */
		return 3;
	}
	if (ok) {
		lua_replace(L, base + 1);           /* ... value scratch levels tbl text [...] */
		lua_settop(L, base + 1);            /* ... value */
	} else {
		lua_settop(L, base);                /* ... */
		if (code != NULL)
			*code = d.code ? d.code : DT_ESYNTAX;
	}
	return ok;
}

int dt_json_decode(lua_State *L, const char *s, size_t len, int max_depth,
                   dt_json_aside *aside, double deadline, char *err, size_t errsz,
                   int *code)
{
	if (aside != NULL && aside->gate < 0)
		aside->gate = lua_gettop(L) + aside->gate + 1;  /* absolute: the decoder pushes */
	if (aside != NULL && aside->deadlines < 0)
		aside->deadlines = lua_gettop(L) + aside->deadlines + 1;
	return json_decode(L, s, len, max_depth, err, errsz, code, aside, NULL, deadline, 1);
}

int dt_json_decode_aside(lua_State *L, double deadline, char *err, size_t errsz)
{
	jtext *t = lua_touserdata(L, -1);               /* ... tbl text */
	unsigned char *rel = page_up(t->data);
	char why[256];
	int code = DT_OK;
	int ok = json_decode(L, (const char *)t->data, t->len, DT_JSON_MAX_DEPTH,
	                     why, sizeof why, &code, NULL, rel, deadline, 1); /* ... tbl text [value] */
	/* The text is garbage now; give back what is still resident of a big
	 * one at once rather than at the next collection. */
	if (t->len >= REL_STEP)
		release_pages(&rel, t->data + t->len);
	if (ok) {
		lua_setfield(L, -3, "json");                /* ... tbl text */
	} else if (code == DT_ETIMEOUT) {
		if (errsz > 0)
			snprintf(err, errsz, "%s", why);
	} else {
		lua_pushstring(L, why);                     /* ... tbl text err */
		lua_setfield(L, -3, "json_error");          /* ... tbl text */
		code = DT_OK;
	}
	lua_pop(L, 2);                                  /* ... */
	return code;
}

/* ======================================================================== */
/* Encoding                                                                  */
/* ======================================================================== */

typedef struct jlevel {
	lua_Integer i;          /* elements written so far */
	lua_Integer n;          /* array length, or -1 for an object */
} jlevel;

typedef struct jenc {
	lua_State *L;
	dt_buf *b;              /* owned by a userdata with __gc on the stack */
	int mt_slot;            /* stack slot: the array metatable */
	int levels_slot;        /* stack slot: userdata behind levels (when spilled) */
	int code;               /* DT_EBADVALUE, DT_ETOODEEP or DT_ENOMEM once failed */
	int finite;             /* NaN and +-Infinity fail instead of writing null */
	int replace_surrogates; /* a lone surrogate written as U+FFFD, not \udXXX */
	char err[160];
} jenc;

static int enc_fail(jenc *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int enc_fail(jenc *e, int code, const char *fmt, ...)
{
	va_list ap;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->err, sizeof e->err, fmt, ap);
	va_end(ap);
	return 0;
}

/* Room for n more bytes: 1, or 0 after enc_fail on out of memory. */
static int need(jenc *e, size_t n)
{
	if (e->b->cap - e->b->len >= n)
		return 1;
	if (dt_buf_reserve(e->b, n) == 0)
		return 1;
	return enc_fail(e, DT_ENOMEM, "out of memory while encoding");
}

#define PUTC(b, c) ((b)->data[(b)->len++] = (char)(c))

static int put(jenc *e, const char *s, size_t n)
{
	if (!need(e, n))
		return 0;
	memcpy(e->b->data + e->b->len, s, n);
	e->b->len += n;
	return 1;
}

/* Writes v in decimal to the end of tmp[24]; returns the first char. */
static char *fmt_int(char tmp[24], int64_t v)
{
	char *q = tmp + 24;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do {
		*--q = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		*--q = '-';
	return q;
}

static int put_int(jenc *e, int64_t v)
{
	char tmp[24], *q = fmt_int(tmp, v);
	return put(e, q, (size_t)(tmp + 24 - q));
}

/* Shortest text for a finite, non-integral-or-huge double that reads back
 * equal. First the decimal m / 10^k with the fewest places k, m the integer
 * nearest x * 10^k, if it reads back as x: m and 10^k are exact doubles, so
 * strtod of that text rounds to the same double as the division m / 10^k
 * does. Else %.15g, %.16g, %.17g in the C locale. */
static int put_double(jenc *e, double x)
{
	char tmp[40];
	int k, len = 0;
	double ax = fabs(x);
	if (ax >= 1e-7 && ax < 1e15) {
		for (k = 1; k <= 15; k++) {
			double r = floor(ax * pow10_exact[k] + 0.5);   /* nearest m */
			if (r < 9007199254740992.0 && r / pow10_exact[k] == ax) {
				char itmp[24], *q = fmt_int(itmp, (int64_t)r);
				int nd = (int)(itmp + 24 - q), i;
				char *o = tmp;
				/* when rounding hid a smaller k (8.68842 found at
				 * k = 6 as 8688420), drop the zeros */
				while (k > 1 && q[nd - 1] == '0') {
					nd--;
					k--;
				}
				if (x < 0)
					*o++ = '-';
				if (nd <= k) {              /* 0.000ddd */
					*o++ = '0';
					*o++ = '.';
					for (i = nd; i < k; i++)
						*o++ = '0';
					memcpy(o, q, (size_t)nd);
					o += nd;
				} else {                    /* ddd.ddd */
					memcpy(o, q, (size_t)(nd - k));
					o += nd - k;
					*o++ = '.';
					memcpy(o, q + nd - k, (size_t)k);
					o += k;
				}
				return put(e, tmp, (size_t)(o - tmp));
			}
			if (r >= 9007199254740992.0)
				break;
		}
	}
	{
		locale_t c = c_locale(), old = (locale_t)0;
		int prec;
		if (c != (locale_t)0)
			old = uselocale(c);
		/* 15 digits carry any normal double whose shortest form is
		 * shorter (%g drops the zeros); a subnormal has fewer bits, so
		 * fewer digits may do (5e-324, not 4.94065645841247e-324) */
		for (prec = ax < DBL_MIN ? 1 : 15; prec <= 17; prec++) {
			len = snprintf(tmp, sizeof tmp, "%.*g", prec, x);
			if (prec == 17 || strtod(tmp, NULL) == x)
				break;
		}
		if (c != (locale_t)0)
			uselocale(old);
	}
	if (len < 0 || (size_t)len >= sizeof tmp)
		return enc_fail(e, DT_EBADVALUE, "cannot format number");
	return put(e, tmp, (size_t)len);
}

/* Integral floats below 2^63 are written with all their digits (exact, and
 * what JS does below 1e21): they read back as an integer equal to the float,
 * where JS's shortest-digits-then-zeros (7518160216544275000 for
 * 7518160216544275456.0) would read back as a different integer. */
static int enc_number(jenc *e, int idx)
{
	lua_State *L = e->L;
	double x;
#if LUA_VERSION_NUM >= 503
	if (lua_isinteger(L, idx))
		return put_int(e, (int64_t)lua_tointeger(L, idx));
#endif
	x = (double)lua_tonumber(L, idx);
	if (x != x || x - x != 0) {             /* NaN, +-Infinity: as JSON.stringify */
		if (e->finite)
			return enc_fail(e, DT_EBADVALUE, "%s is not a number JSON can hold",
			                x != x ? "NaN" : x > 0 ? "inf" : "-inf");
		return put(e, "null", 4);
	}
	if (x == floor(x) && fabs(x) < 9223372036854775808.0) {
		if (x == 0 && signbit(x))
			return put(e, "-0", 2);
		return put_int(e, (int64_t)x);      /* integral: no fraction, like JS */
	}
	return put_double(e, x);
}

static const char hexdig[] = "0123456789abcdef";

/* Writes s[0..len) as a JSON string. Valid UTF-8 passes through; the
 * 3-byte surrogate forms (ED A0..BF xx) become \udXXX so that a decoded
 * lone surrogate round-trips (or U+FFFD with replace_surrogates, for a
 * reader that refuses lone surrogates whole); anything else invalid is
 * bad_value. */
static int enc_string(jenc *e, const unsigned char *s, size_t len)
{
	dt_buf *b = e->b;
	size_t i = 0;
	if (!need(e, len + 2))
		return 0;
	PUTC(b, '"');
	for (;;) {
		size_t run = i;
		unsigned c;
		while (len - i >= 8 && !special8_or_high(s + i))
			i += 8;
		while (i < len && ENC_PLAIN(s[i]))
			i++;
		if (i > run && !put(e, (const char *)s + run, i - run))
			return 0;
		if (i >= len)
			break;
		if (!need(e, 12))
			return 0;
		c = s[i];
		if (c < 0x80) {
			PUTC(b, '\\');
			switch (c) {
			case '"': PUTC(b, '"'); break;
			case '\\': PUTC(b, '\\'); break;
			case '\b': PUTC(b, 'b'); break;
			case '\f': PUTC(b, 'f'); break;
			case '\n': PUTC(b, 'n'); break;
			case '\r': PUTC(b, 'r'); break;
			case '\t': PUTC(b, 't'); break;
			default:
				PUTC(b, 'u');
				PUTC(b, '0');
				PUTC(b, '0');
				PUTC(b, hexdig[c >> 4]);
				PUTC(b, hexdig[c & 15]);
			}
			i++;
			continue;
		}
		/* multi-byte sequence: check it */
		{
			size_t n, k;
			unsigned long cp;
			unsigned c1 = i + 1 < len ? s[i + 1] : 0;
			if (c >= 0xC2 && c <= 0xDF) {
				n = 2;
				cp = c & 0x1F;
			} else if (c >= 0xE0 && c <= 0xEF) {
				n = 3;
				cp = c & 0x0F;
				if ((c == 0xE0 && c1 < 0xA0))   /* overlong */
					goto invalid;
			} else if (c >= 0xF0 && c <= 0xF4) {
				n = 4;
				cp = c & 0x07;
				if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90))
					goto invalid;
			} else {
				goto invalid;
			}
			if (len - i < n)
				goto invalid;
			for (k = 1; k < n; k++) {
				if ((s[i + k] & 0xC0) != 0x80)
					goto invalid;
				cp = (cp << 6) | (s[i + k] & 0x3F);
			}
			if (cp >= 0xD800 && cp < 0xE000 && e->replace_surrogates) {
				PUTC(b, 0xEF);                  /* U+FFFD, what strict parsers take */
				PUTC(b, 0xBF);
				PUTC(b, 0xBD);
			} else if (cp >= 0xD800 && cp < 0xE000) {   /* a surrogate's own form */
				PUTC(b, '\\');
				PUTC(b, 'u');
				PUTC(b, 'd');
				PUTC(b, hexdig[(cp >> 8) & 15]);
				PUTC(b, hexdig[(cp >> 4) & 15]);
				PUTC(b, hexdig[cp & 15]);
			} else {
				memcpy(b->data + b->len, s + i, n);
				b->len += n;
			}
			i += n;
			continue;
		}
	invalid:
		return enc_fail(e, DT_EBADVALUE, "invalid UTF-8 in a string at byte offset %zu", i);
	}
	if (!need(e, 1))
		return 0;
	PUTC(b, '"');
	return 1;
}

/* The one decision of what a table is in JSON (json_kind below exposes it
 * to the validator). With a metatable: DT_ARRAY_MT, or __jsontype "array"
 * (dkjson's convention), is an array of elements 1..rawlen; __jsontype
 * "object" (JSON_OBJECT_MT, dkjson) is an object. Otherwise, keys exactly
 * 1..n with n > 0 make an array, no keys at all an empty table (written
 * as {}), anything else an object. Returns the array's length, KIND_OBJECT
 * or KIND_EMPTY. Needs 2 free stack slots; leaves the stack as it was. */
#define KIND_OBJECT (-1)
#define KIND_EMPTY (-2)
static lua_Integer table_kind(lua_State *L, int mt_slot)
{
	lua_Integer count = 0, max = 0;
	if (lua_getmetatable(L, -1)) {                  /* ... t mt */
		const char *jt;
		if (lua_rawequal(L, -1, mt_slot)) {
			lua_pop(L, 1);                          /* ... t */
			return (lua_Integer)dt_rawlen(L, -1);
		}
		int marked;                                 /* 1 array, -1 object, 0 neither */
		lua_pushliteral(L, "__jsontype");           /* ... t mt "__jsontype" */
		lua_rawget(L, -2);                          /* ... t mt jt */
		jt = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
		marked = strcmp(jt, "array") == 0 ? 1 : strcmp(jt, "object") == 0 ? -1 : 0;
		lua_pop(L, 2);                              /* ... t */
		if (marked > 0)
			return (lua_Integer)dt_rawlen(L, -1);
		if (marked < 0)
			return KIND_OBJECT;
	}
	lua_pushnil(L);                                 /* ... t nil */
	while (lua_next(L, -2)) {                       /* ... t k v */
		lua_Integer k;
		lua_pop(L, 1);                              /* ... t k */
#if LUA_VERSION_NUM >= 503
		if (!lua_isinteger(L, -1)) {
			lua_pop(L, 1);                          /* ... t */
			return KIND_OBJECT;
		}
		k = lua_tointeger(L, -1);
#else
		{
			double dk = lua_type(L, -1) == LUA_TNUMBER ? (double)lua_tonumber(L, -1) : 0.5;
			if (dk != floor(dk) || dk < 1 || dk > 9e15) {
				lua_pop(L, 1);                      /* ... t */
				return KIND_OBJECT;
			}
			k = (lua_Integer)dk;
		}
#endif
		if (k < 1) {
			lua_pop(L, 1);                          /* ... t */
			return KIND_OBJECT;
		}
		count++;
		if (k > max)
			max = k;
	}                                               /* ... t */
	if (count == 0)
		return KIND_EMPTY;
	return max == count ? count : KIND_OBJECT;
}

/* Writes the key at idx (string or integer) and the ':' after it. */
/* Is s[0..len) an integer as the encoder writes one (fmt_int: no sign but
 * '-', no leading zero, not "-0", within int64)? Then *v is it. */
static int int_name(const char *s, size_t len, int64_t *v)
{
	size_t i = s[0] == '-';
	uint64_t m = 0, lim = s[0] == '-' ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	if (i == len || len - i > 19 || (s[i] == '0' && len - i > 1) || (i == 1 && s[1] == '0'))
		return 0;
	for (; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';
		if (d > 9 || m > (lim - d) / 10)
			return 0;
		m = m * 10 + d;
	}
	*v = s[0] == '-' ? (int64_t)(0 - m) : (int64_t)m;
	return 1;
}

static int enc_key(jenc *e, int idx, int tidx)
{
	lua_State *L = e->L;
	int t = lua_type(L, idx);
	if (t == LUA_TSTRING) {
		size_t len;
		const char *s = lua_tolstring(L, idx, &len);    /* a string: no conversion */
		int64_t v;
		/* "1" beside the key 1 in one table: JSON would hold the name
		 * twice, and a reader keep either value. Looked at from the
		 * string's side, which is rare (and one test of its first byte). */
		if (len > 0 && (IS_DIGIT((unsigned char)s[0]) || s[0] == '-') && int_name(s, len, &v)
#if LUA_VERSION_NUM < 503
		    /* (a double past 2^53 is another integer's key: not this name) */
		    && v <= ((int64_t)1 << 53) && v >= -((int64_t)1 << 53)
#endif
		    ) {
			if (!lua_checkstack(L, 2))
				return enc_fail(e, DT_ENOMEM, "out of memory (Lua stack)");
#if LUA_VERSION_NUM >= 503
			lua_pushinteger(L, (lua_Integer)v);
#else
			lua_pushnumber(L, (lua_Number)v);
#endif
			lua_rawget(L, tidx < 0 ? tidx - 1 : tidx);      /* ... t[v] */
			if (!lua_isnil(L, -1)) {
				lua_pop(L, 1);
				return enc_fail(e, DT_EBADVALUE, "table has both the key %lld and the key \"%lld\"",
				                (long long)v, (long long)v);
			}
			lua_pop(L, 1);
		}
		if (!enc_string(e, (const unsigned char *)s, len))
			return 0;
	} else if (t == LUA_TNUMBER) {
		char tmp[24], *q;
		int64_t v;
#if LUA_VERSION_NUM >= 503
		if (!lua_isinteger(L, idx))
			return enc_fail(e, DT_EBADVALUE, "table key %.17g is neither a string nor an integer",
			                (double)lua_tonumber(L, idx));
		v = (int64_t)lua_tointeger(L, idx);
#else
		double dk = lua_tonumber(L, idx);
		if (dk != floor(dk) || dk >= 9223372036854775808.0 || dk < -9223372036854775808.0)
			return enc_fail(e, DT_EBADVALUE, "table key %.17g is neither a string nor an integer", dk);
		v = (int64_t)dk;
#endif
		q = fmt_int(tmp, v);
		if (!need(e, 28))
			return 0;
		PUTC(e->b, '"');
		memcpy(e->b->data + e->b->len, q, (size_t)(tmp + 24 - q));
		e->b->len += (size_t)(tmp + 24 - q);
		PUTC(e->b, '"');
	} else {
		return enc_fail(e, DT_EBADVALUE, "table key of type %s is neither a string nor an integer",
		                lua_typename(L, t));
	}
	if (!need(e, 1))
		return 0;
	PUTC(e->b, ':');
	return 1;
}

/* The whole encoder: the value to write is on top; one loop, no recursion.
 * Each open table sits on the Lua stack (an object also holds its lua_next
 * key there); lv[1..depth] tracks progress. Every finished value is popped,
 * so the stack ends as it started minus the value. */
static int enc_run(jenc *e, int max_depth)
{
	lua_State *L = e->L;
	jlevel small[SMALL_LEVELS];
	jlevel *lv = small;
	size_t lv_cap = SMALL_LEVELS;
	int depth = 0;

value:                          /* ... v */
	switch (lua_type(L, -1)) {
	case LUA_TNIL:              /* top level, or a hole in a marked array */
		if (!put(e, "null", 4))
			return 0;
		break;
	case LUA_TBOOLEAN:
		if (lua_toboolean(L, -1) ? !put(e, "true", 4) : !put(e, "false", 5))
			return 0;
		break;
	case LUA_TNUMBER:
		if (!enc_number(e, -1))
			return 0;
		break;
	case LUA_TSTRING: {
		size_t len;
		const char *s = lua_tolstring(L, -1, &len);
		if (!enc_string(e, (const unsigned char *)s, len))
			return 0;
		break;
	}
	case LUA_TLIGHTUSERDATA:
		if (lua_touserdata(L, -1) != NULL)
			return enc_fail(e, DT_EBADVALUE, "cannot encode a light userdata other than null");
		if (!put(e, "null", 4))
			return 0;
		break;
	case LUA_TTABLE: {
		lua_Integer n;
		if (depth >= max_depth || !lua_checkstack(L, 4))
			return enc_fail(e, DT_ETOODEEP, "nesting deeper than %d (a cycle?)%s", depth,
			                depth >= max_depth ? "" : " (the Lua stack is full)");
		if ((size_t)depth + 1 >= lv_cap) {
			lv = grow_slot(L, e->levels_slot, lv, lv_cap * sizeof *lv,
			               2 * lv_cap * sizeof *lv);
			lv_cap *= 2;
		}
		n = table_kind(L, e->mt_slot);
		if (n == KIND_EMPTY)
			n = KIND_OBJECT;                        /* a plain {} is written as {} */
		depth++;
		lv[depth].i = 0;
		lv[depth].n = n;
		if (!need(e, 1))
			return 0;
		if (n >= 0) {
			PUTC(e->b, '[');                        /* ... t */
		} else {
			PUTC(e->b, '{');
			lua_pushnil(L);                         /* ... t nil */
		}
		goto next;
	}
	default:
		return enc_fail(e, DT_EBADVALUE, "cannot encode a %s", luaL_typename(L, -1));
	}
	lua_pop(L, 1);              /* the finished value */

next:
	if (depth == 0)
		return 1;
	if (lv[depth].n >= 0) {                             /* ... arr */
		jlevel *l = &lv[depth];
		if (l->i < l->n) {
			if (l->i > 0) {
				if (!need(e, 1))
					return 0;
				PUTC(e->b, ',');
			}
			l->i++;
			lua_rawgeti(L, -1, l->i);                   /* ... arr v */
			goto value;
		}
		if (!need(e, 1))
			return 0;
		PUTC(e->b, ']');
	} else {                                            /* ... obj key */
		if (lua_next(L, -2)) {                          /* ... obj key v */
			if (lv[depth].i++ > 0) {
				if (!need(e, 1))
					return 0;
				PUTC(e->b, ',');
			}
			if (!enc_key(e, -2, -3))
				return 0;
			goto value;
		}                                               /* ... obj */
		if (!need(e, 1))
			return 0;
		PUTC(e->b, '}');
	}
	lua_pop(L, 1);              /* the finished table */
	depth--;
	goto next;
}

static int jsonbuf_gc(lua_State *L)
{
	dt_buf *b = lua_touserdata(L, 1);
	dt_buf_free(b);                 /* frees: b->data (idempotent) */
	return 0;
}

/* max_depth from an optional opts table at arg */
static int opt_max_depth(lua_State *L, int arg)
{
	lua_Number v = 0;
	int depth = DT_JSON_MAX_DEPTH;
	if (lua_isnoneornil(L, arg))
		return depth;
	luaL_checktype(L, arg, LUA_TTABLE);
	lua_getfield(L, arg, "max_depth");              /* ... md */
	if (!lua_isnil(L, -1)) {
		if (lua_type(L, -1) == LUA_TNUMBER)
			v = lua_tonumber(L, -1);
		if (lua_type(L, -1) != LUA_TNUMBER || v < 0 || v != floor(v))
			luaL_argerror(L, arg, "max_depth must be a non-negative integer");
		depth = v > INT_MAX - 1 ? INT_MAX - 1 : (int)v;
	}
	lua_pop(L, 1);                                  /* ... */
	return depth;
}

/* core.json.encode(value [, opts]) -> string | nil, message, code
 * opts: max_depth; finite (NaN and +-Infinity fail); replace_surrogates
 * (a lone surrogate is written as U+FFFD) */
static int l_json_encode(lua_State *L)
{
	jenc e;
	dt_buf *b;
	int max_depth = opt_max_depth(L, 2), ok;
	lua_settop(L, 2);                               /* v opts */
	luaL_getmetatable(L, DT_ARRAY_MT);              /* v opts mt */
	lua_pushnil(L);                                 /* v opts mt levels */
	b = lua_newuserdata(L, sizeof *b);              /* v opts mt levels buf */
	memset(b, 0, sizeof *b);
	luaL_getmetatable(L, JSONBUF_MT);               /* v opts mt levels buf bmt */
	lua_setmetatable(L, -2);                        /* v opts mt levels buf */
	memset(&e, 0, sizeof e);
	if (lua_istable(L, 2)) {
		lua_getfield(L, 2, "finite");               /* v opts mt levels buf f */
		e.finite = lua_toboolean(L, -1);
		lua_getfield(L, 2, "replace_surrogates");   /* v opts mt levels buf f r */
		e.replace_surrogates = lua_toboolean(L, -1);
		lua_pop(L, 2);                              /* v opts mt levels buf */
	}
	e.L = L;
	e.b = b;
	e.mt_slot = 3;
	e.levels_slot = 4;
	lua_pushvalue(L, 1);                            /* v opts mt levels buf v */
	ok = enc_run(&e, max_depth);                    /* v opts mt levels buf [...] */
	if (!ok) {
		dt_buf_free(b);                             /* frees: the partial text */
		return dt_push_fail(L, e.code ? e.code : DT_EBADVALUE, e.err);
	}
	lua_pushlstring(L, b->data ? b->data : "", b->len);   /* ... json */
	dt_buf_free(b);                                 /* frees: b->data; __gc does it on raise */
	return 1;
}

/* core.json.decode(string [, opts]) -> value | nil, message, code
 * opts: max_depth; js_numbers (an integer past 2^53 is read as JavaScript
 * reads it, a double: for text a page's JSON.stringify wrote, as the CDP
 * transports read every message) */
static int l_json_decode(lua_State *L)
{
	size_t len;
	const char *s = luaL_checklstring(L, 1, &len);
	int max_depth = opt_max_depth(L, 2);
	int js = 0;
	char err[256];
	int code = DT_OK;
	if (lua_istable(L, 2)) {
		lua_getfield(L, 2, "js_numbers");
		js = lua_toboolean(L, -1);
		lua_pop(L, 1);
	}
	if (json_decode(L, s, len, max_depth, err, sizeof err, &code, NULL, NULL, -1, js))
		return 1;                                   /* ... value */
	return dt_push_fail(L, code, err);
}

/* core.json.utf8_error(s) -> nil when s is UTF-8 as RFC 3629 has it (no
 * overlong form, no surrogate, nothing past U+10FFFF), else the 1-based
 * offset of the first byte that is not: what a JSON text must be before
 * anything of it is trusted (the decoder itself passes other bytes
 * through, as a page's strings may hold them). */
static int l_json_utf8_error(lua_State *L)
{
	size_t len, i = 0;
	const unsigned char *s = (const unsigned char *)luaL_checklstring(L, 1, &len);
	while (i < len) {
		unsigned c, c1;
		size_t n, k;
		uint64_t v;
		while (len - i >= 8 && (memcpy(&v, s + i, 8), (v & HIGHS) == 0))
			i += 8;
		if (i >= len)
			break;
		c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		c1 = i + 1 < len ? s[i + 1] : 0;
		if (c >= 0xC2 && c <= 0xDF)
			n = 2;
		else if (c >= 0xE0 && c <= 0xEF)
			n = 3;
		else if (c >= 0xF0 && c <= 0xF4)
			n = 4;
		else
			break;
		if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0) ||   /* overlong; surrogate */
		    (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90) ||   /* overlong; past U+10FFFF */
		    len - i < n)
			break;
		for (k = 1; k < n; k++)
			if ((s[i + k] & 0xC0) != 0x80)
				break;
		if (k < n)
			break;
		i += n;
	}
	if (i >= len)
		return 0;
	lua_pushinteger(L, (lua_Integer)i + 1);
	return 1;
}

/* core.json.kind(t) -> "array" | "object" | "empty": what the encoder
 * makes of table t (see table_kind); "empty" is a plain {}, written as {}
 * and, for the schema validator, either an empty array or an empty object. */
static int l_json_kind(lua_State *L)
{
	lua_Integer n;
	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 1);                               /* t */
	n = table_kind(L, lua_upvalueindex(1));
	lua_pushvalue(L, lua_upvalueindex(n == KIND_EMPTY ? 4 : n == KIND_OBJECT ? 3 : 2));
	return 1;                                       /* t kind */
}

void dt_json_open(lua_State *L)
{
	static const luaL_Reg funcs[] = {
		{"encode", l_json_encode},
		{"decode", l_json_decode},
		{"utf8_error", l_json_utf8_error},
		{NULL, NULL}
	};
	luaL_newmetatable(L, JSON_OBJECT_MT);           /* M omt */
	lua_pushliteral(L, "object");
	lua_setfield(L, -2, "__jsontype");
	lua_setfield(L, -2, "object_mt");               /* M */
	if (luaL_newmetatable(L, JSONBUF_MT)) {         /* M bmt */
		lua_pushcfunction(L, jsonbuf_gc);
		lua_setfield(L, -2, "__gc");
	}
	lua_pop(L, 1);                                  /* M */
	dt_open_part(L, "json", funcs);                 /* M (M.json: encode, decode) */
	lua_getfield(L, -1, "json");                    /* M json */
	luaL_getmetatable(L, DT_ARRAY_MT);              /* M json mt */
	lua_pushliteral(L, "array");
	lua_pushliteral(L, "object");
	lua_pushliteral(L, "empty");                    /* M json mt "array" "object" "empty" */
	lua_pushcclosure(L, l_json_kind, 4);            /* M json kind */
	lua_setfield(L, -2, "kind");                    /* M json */
	lua_pop(L, 1);                                  /* M */
}
