/* codes.c - the one list of runtime failure codes, and how a failure is
 * handed to Lua: nil, message, code. Depends on: base.h only. */
#include <stdarg.h>
#include <stdio.h>

#include "dt.h"

static const char *const names[DT_NCODES] = {
	"ok",               /* DT_OK (never returned to Lua as a failure) */
	"timeout",          /* DT_ETIMEOUT */
	"closed",           /* DT_ECLOSED */
	"too_large",        /* DT_ETOOLARGE */
	"connect_failed",   /* DT_ECONNECT */
	"spawn_failed",     /* DT_ESPAWN */
	"bad_message",      /* DT_EBADMSG */
	"syntax",           /* DT_ESYNTAX */
	"too_deep",         /* DT_ETOODEEP */
	"bad_value",        /* DT_EBADVALUE */
	"no_memory",        /* DT_ENOMEM */
	"system",           /* DT_ESYSTEM */
	"interrupted",      /* DT_EINTR */
};

const char *dt_code_name(int code)
{
	if (code <= 0 || code >= DT_NCODES)
		return "system";
	return names[code];
}

int dt_push_fail(lua_State *L, int code, const char *msg)
{
	lua_pushnil(L);
	lua_pushstring(L, msg);
	lua_pushstring(L, dt_code_name(code));
	return 3;
}

int dt_push_failf(lua_State *L, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return dt_push_fail(L, code, msg);
}

void dt_codes_open(lua_State *L)
{
	int i;
	lua_createtable(L, 0, DT_NCODES);           /* M codes */
	for (i = 1; i < DT_NCODES; i++) {
		lua_pushstring(L, names[i]);
		lua_setfield(L, -2, names[i]);
	}
	lua_setfield(L, -2, "codes");               /* M */
}
