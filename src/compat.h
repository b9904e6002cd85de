/* compat.h - one place for the differences between Lua 5.1/LuaJIT and 5.4.
 *
 * Polyfills carry the dt_ prefix behind a #define, because LuaJIT already
 * exports some of the 5.2 names (luaL_setfuncs, luaL_newlib) and PUC 5.1 does
 * not: defining them unprefixed would clash at link or load time. */
#ifndef DT_COMPAT_H
#define DT_COMPAT_H

#include <lua.h>
#include <lauxlib.h>

#if LUA_VERSION_NUM < 502
#  define dt_rawlen(L, i) lua_objlen((L), (i))
#  ifndef luaL_newlib            /* PUC 5.1 only; LuaJIT 2.1 has these */
static inline void dt_setfuncs(lua_State *L, const luaL_Reg *l, int nup)
{
	luaL_checkstack(L, nup, "too many upvalues");
	for (; l->name != NULL; l++) {
		int i;
		for (i = 0; i < nup; i++)
			lua_pushvalue(L, -nup);
		lua_pushcclosure(L, l->func, nup);
		lua_setfield(L, -(nup + 2), l->name);
	}
	lua_pop(L, nup);
}
#    define luaL_setfuncs(L, l, n) dt_setfuncs((L), (l), (n))
#    define luaL_newlib(L, l) (lua_newtable(L), dt_setfuncs((L), (l), 0))
static inline void *dt_testudata(lua_State *L, int ud, const char *tname)
{
	void *p = lua_touserdata(L, ud);
	if (p != NULL && lua_getmetatable(L, ud)) {   /* ... mt */
		luaL_getmetatable(L, tname);             /* ... mt expected */
		if (!lua_rawequal(L, -1, -2))
			p = NULL;
		lua_pop(L, 2);
		return p;
	}
	return NULL;
}
#    define luaL_testudata(L, i, t) dt_testudata((L), (i), (t))
#  endif
#  define dt_isinteger(L, i) 0
#else
#  define dt_rawlen(L, i) lua_rawlen((L), (i))
#  define dt_isinteger(L, i) lua_isinteger((L), (i))
#endif

#endif
