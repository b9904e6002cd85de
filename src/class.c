/* class.c - the one way a userdata class is registered, and the one way a
 * C file puts its functions in the module (core.json, core.fs, ...).
 *
 * Every class gets the same shape (LuaSocket, luv): a namespaced metatable
 * with __name, __index (its methods), __gc and __close (the same
 * idempotent close, or for __gc a variant that never waits on a peer) and
 * __tostring. Depends on:
 * base.h only. */
#include "base.h"

/* Stack: ... M. Sets M[name] to a table of funcs (core.json, core.fs, ...):
 * each C file's functions under one name, the Lua side's map of the core. */
void dt_open_part(lua_State *L, const char *name, const luaL_Reg *funcs)
{
	lua_newtable(L);                            /* ... M part */
	luaL_setfuncs(L, funcs, 0);
	lua_setfield(L, -2, name);                  /* ... M */
}

void dt_class_register(lua_State *L, const dt_class *c)
{
	int mt;
	luaL_newmetatable(L, c->name);              /* ... mt */
	mt = lua_gettop(L);
	lua_pushstring(L, c->name);
	lua_setfield(L, mt, "__name");
	lua_newtable(L);                            /* ... mt methods */
	lua_pushvalue(L, mt);                       /* ... mt methods mt */
	luaL_setfuncs(L, c->methods, 1);            /* ... mt methods */
	lua_setfield(L, mt, "__index");             /* ... mt */
	lua_pushvalue(L, mt);
	lua_pushcclosure(L, c->gc != NULL ? c->gc : c->close, 1);   /* ... mt gc */
	lua_setfield(L, mt, "__gc");
	lua_pushvalue(L, mt);
	lua_pushcclosure(L, c->close, 1);
	lua_setfield(L, mt, "__close");
	lua_pushvalue(L, mt);
	lua_pushcclosure(L, c->tostring, 1);
	lua_setfield(L, mt, "__tostring");
	lua_pop(L, 1);                              /* ... */
}
