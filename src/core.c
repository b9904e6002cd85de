/* core.c - luaopen_devtools_tools_core: opens the module, nothing else.
 *
 * The core owns bytes, processes and time; the one place that knows the
 * shape of a CDP message is cdp_decode.c, asked for by the CDP layer.
 * Every wait takes an absolute deadline (seconds on the monotonic clock,
 * as returned by core.now()), computed once by the caller. How the files
 * depend on each other is drawn in dt.h. */
#include "dt.h"

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
	double deadline = dt_now() + s;
	int ms;
	while (s > 0 && (ms = dt_poll_ms(deadline)) > 0)
		dt_sleep_ms(ms);
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

	dt_codes_open(L);
	dt_json_open(L);
	dt_regex_open(L);
	dt_fs_open(L);
	dt_transport_open(L);
	dt_cdp_decode_open(L);
	dt_process_open(L);
	dt_ws_open(L);
	dt_poll_open(L);
	dt_http_open(L);
	dt_base64_open(L);
	dt_fdio_open(L);
	dt_digest_open(L);
	dt_signal_open(L);
	dt_unix_open(L);
	return 1;
}
