/* jansson_compare.c - is libjansson fit to be the codec of devtools_tools.core?
 *
 * Run with `make bench-jansson`. It checks, with libjansson itself, the
 * requirements the codec has to meet (big integer literals, lone
 * surrogates, raw non-UTF-8 bytes, shortest floats), then decodes an ~8 MB
 * JSON array of small records into Lua tables two ways and prints the best
 * time of several runs and the peak heap of each:
 *   direct   core.json.decode (our one-pass decoder, src/json.c)
 *   jansson  json_loadb into a jansson tree, then the tree into Lua tables
 *            (the cheapest way to build Lua values on top of jansson)
 * and, for reference, lua-cjson's decode when it can be required.
 *
 * Peak heap counts every byte the Lua state and jansson hold at once, through
 * a counting lua_Alloc and json_set_alloc_funcs, so it is exact and the same
 * on every run. This program embeds Lua 5.4 and links -ljansson; the library
 * itself links neither.
 *
 * usage: jansson_compare BUILD_DIR   (the dir holding devtools_tools/core.so) */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- counting allocators ------------------------------------------------ */

static size_t cur_bytes, peak_bytes;

static void count(ptrdiff_t delta)
{
	cur_bytes = (size_t)((ptrdiff_t)cur_bytes + delta);
	if (cur_bytes > peak_bytes)
		peak_bytes = cur_bytes;
}

static void *l_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	void *p;
	(void)ud;
	if (ptr == NULL)
		osize = 0;
	if (nsize == 0) {
		free(ptr);
		count(-(ptrdiff_t)osize);
		return NULL;
	}
	p = realloc(ptr, nsize);
	if (p != NULL)
		count((ptrdiff_t)nsize - (ptrdiff_t)osize);
	return p;
}

/* jansson's free gets no size, so each block carries its size in front */
typedef union { size_t n; long double ld; void *p; long long ll; } jhdr;

static void *j_malloc(size_t n)
{
	jhdr *h = malloc(sizeof *h + n);
	if (h == NULL)
		return NULL;
	h->n = n;
	count((ptrdiff_t)n);
	return h + 1;
}

static void j_free(void *p)
{
	jhdr *h;
	if (p == NULL)
		return;
	h = (jhdr *)p - 1;
	count(-(ptrdiff_t)h->n);
	free(h);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- jansson tree -> Lua values (same mapping as core.json.decode) ------ */

static void push_tree(lua_State *L, json_t *v, int mt)
{
	luaL_checkstack(L, 3, "deep");
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		const char *k;
		json_t *x;
		lua_createtable(L, 0, (int)json_object_size(v));        /* t */
		json_object_foreach(v, k, x) {
			lua_pushstring(L, k);                               /* t k */
			push_tree(L, x, mt);                                /* t k v */
			lua_rawset(L, -3);                                  /* t */
		}
		break;
	}
	case JSON_ARRAY: {
		size_t i, n = json_array_size(v);
		lua_createtable(L, (int)n, 0);                          /* t */
		lua_pushvalue(L, mt);
		lua_setmetatable(L, -2);
		for (i = 0; i < n; i++) {
			push_tree(L, json_array_get(v, i), mt);             /* t v */
			lua_rawseti(L, -2, (lua_Integer)i + 1);             /* t */
		}
		break;
	}
	case JSON_STRING:
		lua_pushlstring(L, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		lua_pushinteger(L, (lua_Integer)json_integer_value(v));
		break;
	case JSON_REAL:
		lua_pushnumber(L, json_real_value(v));
		break;
	case JSON_TRUE:
		lua_pushboolean(L, 1);
		break;
	case JSON_FALSE:
		lua_pushboolean(L, 0);
		break;
	default:
		lua_pushlightuserdata(L, NULL);
		break;
	}
}

/* ---- requirement checks ------------------------------------------------- */

static void check_load(const char *what, const char *text, size_t len)
{
	json_error_t e;
	json_t *v = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	if (v == NULL) {
		printf("  %-44s FAILS: %s\n", what, e.text);
		return;
	}
	printf("  %-44s ok\n", what);
	json_decref(v);
}

static void check_dump(const char *what, json_t *v, size_t flags, const char *want)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | flags);
	printf("  %-44s %s (got %s, want %s)\n", what,
	       s != NULL && strcmp(s, want) == 0 ? "ok" : "FAILS", s ? s : "an error", want);
	j_free(s);              /* json_dumps allocates through our j_malloc */
	json_decref(v);
}

static void requirements(void)
{
	printf("libjansson %s against the codec's requirements:\n", JANSSON_VERSION);
	check_load("decode 18446744073709552000 (JSON.stringify(2**64))",
	           "18446744073709552000", 20);
	check_load("decode \"\\ud800\" (a lone surrogate)", "\"\\ud800\"", 8);
	check_load("decode raw bytes FF FE inside a string", "\"\xff\xfe\"", 4);
	check_load("decode \"\\u0000\" (with JSON_ALLOW_NUL)", "\"\\u0000\"", 8);
	check_dump("encode 0.1 shortest (default flags)", json_real(0.1), 0, "0.1");
	check_dump("encode 1/3 shortest (default flags)", json_real(1.0 / 3), 0, "0.3333333333333333");
	check_dump("encode 1/3 with JSON_REAL_PRECISION(15)", json_real(1.0 / 3),
	           JSON_REAL_PRECISION(15), "0.3333333333333333");
	check_dump("encode 3.0 as 3 (like JS)", json_real(3.0), 0, "3");
	check_dump("encode bytes ED A0 80 as \"\\ud800\"",
	           json_stringn_nocheck("\xed\xa0\x80", 3), 0, "\"\\ud800\"");
}

/* ---- the decode benchmark ---------------------------------------------- */

static char *make_input(size_t target, size_t *len, int *records)
{
	size_t cap = target + 256, n = 0;
	char *s = malloc(cap);
	int i = 0;
	if (s == NULL)
		exit(1);
	s[n++] = '[';
	while (n < target) {
		n += (size_t)snprintf(s + n, cap - n,
		        "%s{\"id\":%d,\"name\":\"item %d\",\"price\":%d.5,\"tags\":[\"a\",\"b\"],\"ok\":true}",
		        i ? "," : "", i, i, i % 100);
		i++;
	}
	s[n++] = ']';
	s[n] = '\0';
	*len = n;
	*records = i;
	return s;
}

#define RUNS 5

typedef struct { double best; size_t peak; } result;

/* Each run starts from a fully collected state holding only the input
 * string; peak is measured above that baseline. */
static result run(lua_State *L, int (*once)(lua_State *, const char *, size_t, int),
                  const char *s, size_t len, int mt)
{
	result r = {1e9, 0};
	int i;
	for (i = 0; i < RUNS; i++) {
		double t0;
		size_t base;
		lua_gc(L, LUA_GCCOLLECT, 0);
		base = cur_bytes;
		peak_bytes = cur_bytes;
		t0 = now();
		if (!once(L, s, len, mt)) {
			fprintf(stderr, "decode failed: %s\n", lua_tostring(L, -1));
			exit(1);
		}
		t0 = now() - t0;
		if (t0 < r.best)
			r.best = t0;
		if (peak_bytes - base > r.peak)
			r.peak = peak_bytes - base;
		lua_pop(L, 1);
	}
	return r;
}

/* calls the function in global BENCH_FN with the input string */
static int once_lua(lua_State *L, const char *s, size_t len, int mt)
{
	(void)mt;
	lua_getglobal(L, "BENCH_FN");
	lua_getglobal(L, "BENCH_INPUT");
	(void)s;
	(void)len;
	if (lua_pcall(L, 1, 1, 0) != 0)
		return 0;
	return !lua_isnil(L, -1);
}

static int once_jansson(lua_State *L, const char *s, size_t len, int mt)
{
	json_error_t e;
	json_t *v = json_loadb(s, len, JSON_ALLOW_NUL, &e);
	if (v == NULL) {
		lua_pushstring(L, e.text);
		return 0;
	}
	push_tree(L, v, mt);
	json_decref(v);
	return 1;
}

static int once_jansson_parse_only(lua_State *L, const char *s, size_t len, int mt)
{
	json_error_t e;
	json_t *v = json_loadb(s, len, JSON_ALLOW_NUL, &e);
	(void)mt;
	if (v == NULL) {
		lua_pushstring(L, e.text);
		return 0;
	}
	json_decref(v);
	lua_pushboolean(L, 1);
	return 1;
}

static void report(const char *what, result r, size_t len)
{
	printf("  %-34s %7.1f ms  %6.1f MB/s  peak heap %6.1f MB\n", what, r.best * 1e3,
	       (double)len / r.best / 1e6, (double)r.peak / 1e6);
}

int main(int argc, char **argv)
{
	lua_State *L;
	size_t len;
	int records, mt;
	char *s;
	result direct, jt, jp;
	const char *build = argc > 1 ? argv[1] : "build/lua5.4";

	json_set_alloc_funcs(j_malloc, j_free);
	requirements();

	L = lua_newstate(l_alloc, NULL);
	luaL_openlibs(L);
	lua_pushfstring(L, "./%s/?.so;", build);
	lua_setglobal(L, "BENCH_CPATH");
	if (luaL_dostring(L, "package.cpath = BENCH_CPATH .. package.cpath\n"
	                     "CORE = require 'devtools_tools.core'\n"
	                     "local ok, cj = pcall(require, 'cjson')\n"
	                     "if ok then CJSON = cj.new() end") != 0) {
		fprintf(stderr, "%s\n", lua_tostring(L, -1));
		return 1;
	}
	luaL_getmetatable(L, "devtools_tools.array");
	mt = lua_gettop(L);

	s = make_input(8u * 1000 * 1000, &len, &records);
	lua_pushlstring(L, s, len);
	lua_setglobal(L, "BENCH_INPUT");
	printf("\ndecoding %.2f MB (%d records like {\"id\":1,\"name\":\"item 1\",...}) "
	       "into Lua tables, best of %d:\n", (double)len / 1e6, records, RUNS);

	lua_getglobal(L, "CORE");
	lua_getfield(L, -1, "json");
	lua_getfield(L, -1, "decode");
	lua_remove(L, -2);
	lua_setglobal(L, "BENCH_FN");
	lua_pop(L, 1);
	direct = run(L, once_lua, s, len, mt);
	jt = run(L, once_jansson, s, len, mt);
	jp = run(L, once_jansson_parse_only, s, len, mt);
	report("direct (core.json.decode)", direct, len);
	report("jansson tree -> Lua tables", jt, len);
	report("  of which jansson parse alone", jp, len);
	lua_getglobal(L, "CJSON");
	if (!lua_isnil(L, -1)) {
		result cj;
		lua_getfield(L, -1, "decode");
		lua_setglobal(L, "BENCH_FN");
		cj = run(L, once_lua, s, len, mt);
		report("lua-cjson decode (reference)", cj, len);
	}
	lua_pop(L, 1);
	printf("\njansson/direct: time x%.2f, peak heap x%.2f\n",
	       jt.best / direct.best, (double)jt.peak / (double)direct.peak);

	lua_close(L);
	free(s);
	return 0;
}
