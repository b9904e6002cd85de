/* core.c - luaopen_devtools_tools_core and the small shared helpers.
 *
 * The core owns bytes, processes and time; it knows nothing of CDP. Every
 * wait takes an absolute deadline (seconds on the monotonic clock, as
 * returned by core.now()), computed once by the caller. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dt.h"

double dt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int dt_poll_ms(double deadline)
{
	double left;
	if (deadline < 0)
		return -1;
	left = deadline - dt_now();
	if (left <= 0)
		return 0;
	if (left > 86400.0)
		return 86400 * 1000;
	return (int)ceil(left * 1000.0);
}

double dt_optdeadline(lua_State *L, int arg)
{
	if (lua_isnoneornil(L, arg))
		return -1;
	return luaL_checknumber(L, arg);
}

int dt_buf_reserve(dt_buf *b, size_t extra)
{
	size_t need, cap;
	char *p;
	if (extra > (size_t)-1 - b->len)
		return -1;
	need = b->len + extra;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < need)
		cap = cap > (size_t)-1 / 2 ? need : cap * 2;
	p = realloc(b->data, cap);          /* owns: b->data */
	if (p == NULL)
		return -1;
	b->data = p;
	b->cap = cap;
	return 0;
}

void dt_buf_free(dt_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

const char *dt_code_name(int code)
{
	switch (code) {
	case DT_ETIMEOUT: return "timeout";
	case DT_ECLOSED: return "closed";
	case DT_ETOOLARGE: return "too_large";
	case DT_ECONNECT: return "connect_failed";
	case DT_ESPAWN: return "spawn_failed";
	default: return "error";
	}
}

/* core.now() -> seconds on the monotonic clock */
static int l_now(lua_State *L)
{
	lua_pushnumber(L, dt_now());
	return 1;
}

/* core.sleep(seconds): sleeps, restarting after signals until done */
static int l_sleep(lua_State *L)
{
	double s = luaL_checknumber(L, 1);
	struct timespec ts;
	if (s <= 0)
		return 0;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	return 0;
}

__attribute__((visibility("default")))
int luaopen_devtools_tools_core(lua_State *L);

int luaopen_devtools_tools_core(lua_State *L)
{
	static const luaL_Reg funcs[] = {
		{"now", l_now},
		{"sleep", l_sleep},
		{NULL, NULL}
	};
	luaL_newlib(L, funcs);                    /* M */

	dt_pushnull(L);                           /* M null */
	lua_setfield(L, -2, "null");              /* M */

	/* The array marker: a metatable our codec sets on decoded arrays and
	 * honours when encoding. __jsontype lets dkjson agree with us. */
	luaL_newmetatable(L, DT_ARRAY_MT);        /* M mt */
	lua_pushliteral(L, "array");
	lua_setfield(L, -2, "__jsontype");
	lua_setfield(L, -2, "array_mt");          /* M */

	lua_pushliteral(L, "devtools_tools.core 0.1.0");
	lua_setfield(L, -2, "_VERSION");

	dt_json_open(L);
	dt_regex_open(L);
	dt_fs_open(L);
	dt_transport_open(L);
	dt_process_open(L);
	dt_ws_open(L);
	dt_poll_open(L);
	return 1;
}
