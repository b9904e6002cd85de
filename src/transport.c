/* transport.c - the Lua face of every transport (pipe, websocket).
 *
 * A Transport userdata points at heap state (dt_transport) that the
 * transport's own code allocates and frees: libwebsockets may call back
 * into that state until its context is destroyed, so it must not live in
 * memory Lua's collector owns. close() is idempotent and is what __gc and
 * __close call. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt.h"

typedef struct {
	dt_transport *t;        /* owned; NULL once closed */
} tr_ud;

int dt_transport_fail(dt_transport *t, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->err, sizeof t->err, fmt, ap);
	va_end(ap);
	return code;
}

void dt_transport_push(lua_State *L, dt_transport *t)
{
	tr_ud *u = (tr_ud *)lua_newuserdata(L, sizeof *u);   /* ... ud */
	u->t = t;                                            /* owns: t */
	luaL_getmetatable(L, DT_TRANSPORT_MT);               /* ... ud mt */
	lua_setmetatable(L, -2);                             /* ... ud */
}

static tr_ud *check_ud(lua_State *L)
{
	return (tr_ud *)luaL_checkudata(L, 1, DT_TRANSPORT_MT);
}

/* Pushes nil, message, code and returns 3. */
static int push_fail(lua_State *L, const char *msg, int code)
{
	lua_pushnil(L);
	lua_pushstring(L, msg);
	lua_pushstring(L, dt_code_name(code));
	return 3;
}

static int push_closed(lua_State *L)
{
	return push_fail(L, "transport is closed", DT_ECLOSED);
}

/* transport:send(message [, deadline]) -> true | nil, message, code */
static int l_send(lua_State *L)
{
	tr_ud *u = check_ud(L);
	size_t len;
	const char *msg = luaL_checklstring(L, 2, &len);
	double deadline = dt_optdeadline(L, 3);
	int rc;
	if (u->t == NULL)
		return push_closed(L);
	if (len > u->t->limit) {
		char buf[160];
		snprintf(buf, sizeof buf, "message of %zu bytes is over the limit of %zu bytes",
		         len, u->t->limit);
		return push_fail(L, buf, DT_ETOOLARGE);
	}
	rc = u->t->ops->send(u->t, msg, len, deadline);
	if (rc != DT_OK)
		return push_fail(L, u->t->err, rc);
	lua_pushboolean(L, 1);
	return 1;
}

static void release(dt_transport *t)
{
	if (t->ops->release != NULL)
		t->ops->release(t);
}

/* transport:recv([deadline [, decode [, ids]]]) -> message | nil, message, code [, head]
 * On too_large, head holds the first bytes of the dropped message.
 * With decode true the JSON text is decoded straight from the receive
 * buffer (no intermediate Lua string); a message that is not JSON gives
 * code "bad_message". Either way the message is a copy by the time we
 * return, so the transport's buffer is released at once.
 * ids (with decode): a table whose keys are ids of replies that carry a
 * JSON text as a string result (Runtime.callFunctionOn / evaluate with
 * returnByValue). For such a reply, written {"id":N,"result":{"result":
 * {"type":"string","value":"<text>"}}}, the text is decoded in place of
 * the string: result.result.json holds its value and there is no
 * result.result.value (no Lua string of the text is ever made, and the
 * receive buffer is gone before the text is decoded); a text that is not
 * JSON gives result.result.json_error, the decoder's message, instead.
 * Any other message decodes as without ids. */
static int l_recv(lua_State *L)
{
	tr_ud *u = check_ud(L);
	double deadline = dt_optdeadline(L, 2);
	int decode = lua_toboolean(L, 3);
	int ids = 0;
	const char *msg;
	size_t len;
	int rc;
	if (!lua_isnoneornil(L, 4)) {
		luaL_checktype(L, 4, LUA_TTABLE);
		ids = 4;
	}
	if (u->t == NULL)
		return push_closed(L);
	u->t->head_len = 0;
	rc = u->t->ops->recv(u->t, deadline, &msg, &len);
	if (rc == DT_ETOOLARGE) {                 /* nil, message, code, head */
		push_fail(L, u->t->err, rc);
		lua_pushlstring(L, u->t->head, u->t->head_len);
		return 4;
	}
	if (rc != DT_OK)
		return push_fail(L, u->t->err, rc);
	if (!decode) {
		lua_pushlstring(L, msg, len);               /* ... message */
		release(u->t);
		return 1;
	} else {
		char err[200];
		int n = dt_json_decode_cdp(L, msg, len, ids, err, sizeof err);
		release(u->t);                              /* msg is dangling from here */
		if (n == 3)                                 /* ... value tbl text */
			dt_json_decode_aside(L);                /* ... value */
		if (n > 0)
			return 1;                               /* ... value */
		lua_pushnil(L);
		lua_pushfstring(L, "message is not valid JSON: %s", err);
		lua_pushliteral(L, "bad_message");
		return 3;
	}
}

/* transport:pending() -> true when a complete message is already buffered */
static int l_pending(lua_State *L)
{
	tr_ud *u = check_ud(L);
	lua_pushboolean(L, u->t != NULL && u->t->ops->pending(u->t));
	return 1;
}

/* transport:fd() -> descriptor to poll for readability, or nil once closed */
static int l_fd(lua_State *L)
{
	tr_ud *u = check_ud(L);
	int fd = u->t ? u->t->ops->fd(u->t) : -1;
	if (fd < 0)
		lua_pushnil(L);
	else
		lua_pushinteger(L, fd);
	return 1;
}

/* transport:limit([bytes]) -> bytes: the largest message either way */
static int l_limit(lua_State *L)
{
	tr_ud *u = check_ud(L);
	if (!lua_isnoneornil(L, 2)) {
		lua_Number n = luaL_checknumber(L, 2);
		luaL_argcheck(L, n >= 1 && n <= 9007199254740992.0, 2, "limit out of range");
		if (u->t != NULL)
			u->t->limit = (size_t)n;
	}
	if (u->t == NULL)
		return 0;
	lua_pushnumber(L, (lua_Number)u->t->limit);
	return 1;
}

/* transport:kind() -> "pipe" | "websocket" */
static int l_kind(lua_State *L)
{
	tr_ud *u = check_ud(L);
	if (u->t == NULL)
		lua_pushliteral(L, "closed");
	else
		lua_pushstring(L, u->t->ops->kind);
	return 1;
}

static int l_close(lua_State *L)
{
	tr_ud *u = check_ud(L);
	if (u->t != NULL) {
		dt_transport *t = u->t;
		u->t = NULL;
		t->ops->close(t);
		t->ops->destroy(t);           /* frees: t */
	}
	return 0;
}

static int l_tostring(lua_State *L)
{
	tr_ud *u = check_ud(L);
	if (u->t == NULL) {
		lua_pushliteral(L, "Transport(closed)");
	} else {
		char extra[128] = "";
		u->t->ops->describe(u->t, extra, sizeof extra);
		lua_pushfstring(L, "Transport(%s, %s%s%s)", u->t->ops->kind,
		                u->t->closed ? "peer gone" : "open",
		                extra[0] ? ", " : "", extra);
	}
	return 1;
}

/* ---- the stderr ring --------------------------------------------------- */

dt_ring *dt_ring_new(size_t cap)
{
	dt_ring *r = calloc(1, sizeof *r);          /* owns: r, freed by the last unref */
	if (r == NULL)
		return NULL;
	r->data = malloc(cap > 0 ? cap : 1);        /* owns: r->data */
	if (r->data == NULL) {
		free(r);
		return NULL;
	}
	r->cap = cap > 0 ? cap : 1;
	r->refs = 1;
	return r;
}

void dt_ring_ref(dt_ring *r)
{
	if (r != NULL)
		r->refs++;
}

void dt_ring_unref(dt_ring *r)
{
	if (r != NULL && --r->refs == 0) {
		free(r->data);
		free(r);
	}
}

void dt_ring_push(dt_ring *r, const char *p, size_t n)
{
	size_t i;
	if (n >= r->cap) {                 /* keep only the tail */
		p += n - r->cap;
		n = r->cap;
	}
	for (i = 0; i < n; i++) {
		size_t at = (r->start + r->len) % r->cap;
		r->data[at] = p[i];
		if (r->len < r->cap)
			r->len++;
		else
			r->start = (r->start + 1) % r->cap;
	}
}

#define TRIM_ABOVE ((size_t)4 << 20)

void dt_buf_trim(dt_buf *b)
{
	size_t cap;
	char *p;
	if (b->cap <= TRIM_ABOVE)
		return;
	if (b->len == 0) {
		dt_buf_free(b);                 /* frees: b->data */
		return;
	}
	if (b->len > b->cap / 4)
		return;
	cap = b->len < 32768 ? 65536 : 2 * b->len;
	p = realloc(b->data, cap);          /* owns: b->data (shrunk; NULL keeps the old block) */
	if (p != NULL) {
		b->data = p;
		b->cap = cap;
	}
}

void dt_ring_pushlua(lua_State *L, const dt_ring *r)
{
	luaL_Buffer b;
	size_t i;
	luaL_buffinit(L, &b);
	for (i = 0; r != NULL && i < r->len; i++)
		luaL_addchar(&b, r->data[(r->start + i) % r->cap]);
	luaL_pushresult(&b);
}

void dt_transport_open(lua_State *L)
{
	static const luaL_Reg methods[] = {
		{"send", l_send},
		{"recv", l_recv},
		{"pending", l_pending},
		{"fd", l_fd},
		{"limit", l_limit},
		{"kind", l_kind},
		{"close", l_close},
		{NULL, NULL}
	};
	luaL_newmetatable(L, DT_TRANSPORT_MT);       /* M mt */
	luaL_newlib(L, methods);                     /* M mt methods */
	lua_setfield(L, -2, "__index");              /* M mt */
	lua_pushcfunction(L, l_close);
	lua_setfield(L, -2, "__gc");
	lua_pushcfunction(L, l_close);
	lua_setfield(L, -2, "__close");
	lua_pushcfunction(L, l_tostring);
	lua_setfield(L, -2, "__tostring");
	lua_pushliteral(L, DT_TRANSPORT_MT);
	lua_setfield(L, -2, "__name");
	lua_pop(L, 1);                               /* M */
}
