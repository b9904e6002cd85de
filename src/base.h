/* base.h - the bottom layer of devtools_tools.core: what every other C
 * file may use. It depends on nothing of ours but compat.h.
 *
 *   clock.c   absolute deadlines on the monotonic clock
 *   buf.c     a growable byte buffer
 *   codes.c   the one list of failure codes seen from Lua, and the
 *             nil, message, code convention
 *   class.c   the one way a userdata class (metatable) is registered
 *
 * Nothing here is exported from the shared object: only luaopen_* is (see
 * the visibility flags in the Makefile). */
#ifndef DT_BASE_H
#define DT_BASE_H

#include <stddef.h>
#include "compat.h"

/* Registry name of the metatable that marks JSON arrays. */
#define DT_ARRAY_MT "devtools_tools.array"

/* JSON null: a light userdata holding NULL, the same value as cjson.null. */
#define dt_pushnull(L) lua_pushlightuserdata((L), NULL)

/* ---- clock.c: absolute deadlines on CLOCK_MONOTONIC, in seconds -------- */
/* A deadline < 0 means "no deadline" (wait forever); 0 (or any past time)
 * means "do what can be done now, never wait". */
double dt_now(void);
/* Milliseconds for poll() until deadline: -1 for no deadline, else >= 0,
 * rounded up so that poll never returns just before the deadline. */
int dt_poll_ms(double deadline);
/* Reads a deadline argument (a number, not NaN); the optional one takes nil
 * as "no deadline". */
double dt_checkdeadline(lua_State *L, int arg);
double dt_optdeadline(lua_State *L, int arg);
/* Sleeps ms milliseconds, restarting after signals. */
void dt_sleep_ms(int ms);

/* ---- buf.c: growable byte buffer ----------------------------------------- */
typedef struct dt_buf {
	char *data;     /* owned; NULL when empty and never grown */
	size_t len;     /* bytes used */
	size_t cap;     /* bytes allocated */
} dt_buf;
int dt_buf_reserve(dt_buf *b, size_t extra);     /* 0 ok, -1 out of memory */
void dt_buf_free(dt_buf *b);
/* Gives back a buffer that one large message left big. */
void dt_buf_trim(dt_buf *b);

/* ---- UTF-8 ------------------------------------------------------------------ */
/* Writes code point cp (at most U+10FFFF) as (generalized) UTF-8 at o,
 * returning its length: a surrogate gets its 3-byte form, as CESU-8 and
 * WTF-8 have it, so a lone "\ud800" is kept as ED A0 80. */
static inline size_t dt_put_utf8(unsigned char *o, unsigned long cp)
{
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xC0 | (cp >> 6));
		o[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xE0 | (cp >> 12));
		o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (unsigned char)(0xF0 | (cp >> 18));
	o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
	o[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

/* ---- codes.c: runtime failure codes ---------------------------------------- */
/* Every C function that fails at run time (not misuse, which raises) says
 * why with one of these; Lua sees the name. Out of memory is always
 * DT_ENOMEM, wherever it happens. lua/devtools_tools/errors.lua maps each
 * name to a dt.Error code (errors.from_c): keep the two lists in step. */
typedef enum dt_code {
	DT_OK = 0,
	DT_ETIMEOUT,        /* "timeout": the deadline passed first */
	DT_ECLOSED,         /* "closed": the peer or the object is gone */
	DT_ETOOLARGE,       /* "too_large": over a size limit */
	DT_ECONNECT,        /* "connect_failed": refused, handshake failed */
	DT_ESPAWN,          /* "spawn_failed": a child could not be started */
	DT_EBADMSG,         /* "bad_message": a message is not what its protocol says */
	DT_ESYNTAX,         /* "syntax": text is not JSON (or not a regex) */
	DT_ETOODEEP,        /* "too_deep": nesting over the limit (or a cycle) */
	DT_EBADVALUE,       /* "bad_value": a Lua value JSON cannot hold */
	DT_ENOMEM,          /* "no_memory": an allocation failed */
	DT_ESYSTEM,         /* "system": an operating system call failed */
	DT_EINTR,           /* "interrupted": a signal came while waiting (the
	                     * caller waits again: Lua code runs in between, so a
	                     * hook such as lua.c's for Ctrl-C acts at once) */
	DT_NCODES
} dt_code;
const char *dt_code_name(int code);
/* Pushes nil, msg, the code's name; returns 3. */
int dt_push_fail(lua_State *L, int code, const char *msg);
/* The same with a printf-style message. */
int dt_push_failf(lua_State *L, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- class.c: userdata classes ----------------------------------------------- */
typedef struct dt_class {
	const char *name;           /* registry key and __name, "devtools_tools.X" */
	const luaL_Reg *methods;    /* __index table; NULL-terminated */
	lua_CFunction close;        /* __close (and __gc when gc is NULL): idempotent */
	lua_CFunction tostring;     /* __tostring */
	lua_CFunction gc;           /* __gc, or NULL: never waits on I/O */
} dt_class;
/* Creates the metatable (with __name, __index, __gc, __close, __tostring).
 * Every method, close and tostring get the metatable as upvalue 1, so a
 * type check may compare against it without a registry lookup. */
void dt_class_register(lua_State *L, const dt_class *c);
/* Sets M[name] (M on top of the stack) to a table of funcs: the part of
 * the core one C file gives (core.json, core.fs, core.process...). */
void dt_open_part(lua_State *L, const char *name, const luaL_Reg *funcs);

#endif
