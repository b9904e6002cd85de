/* transport.c - the Lua face of every transport (pipe, websocket): raw
 * messages in and out, and what a foreign event loop needs.
 *
 * A Transport userdata points at heap state (dt_transport) that the
 * transport's own code allocates and frees: libwebsockets may call back
 * into that state until its context is destroyed, so it must not live in
 * memory Lua's collector owns. close() is idempotent and is what __gc and
 * __close call (close() and __close wait at most a quarter second for a
 * websocket's close handshake; __gc does not wait at all). Depends on: transport.h. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport.h"
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

dt_transport *dt_transport_check(lua_State *L, int arg)
{
	return ((tr_ud *)luaL_checkudata(L, arg, DT_TRANSPORT_MT))->t;
}

int dt_transport_push_fail(lua_State *L, dt_transport *t, int code)
{
	dt_push_fail(L, code, t->err);              /* nil, message, code */
	if (code == DT_ETOOLARGE) {
		lua_pushlstring(L, t->head, t->head_len);   /* ..., head */
		return 4;
	}
	return 3;
}

void dt_transport_release(dt_transport *t)
{
	if (t->ops->release != NULL)
		t->ops->release(t);
}

static int push_closed(lua_State *L)
{
	return dt_push_fail(L, DT_ECLOSED, "transport is closed");
}

/* transport:send(message [, deadline]) -> true | nil, message, code
 * A deadline of 0 (or past) writes what fits now and queues the rest. */
static int l_send(lua_State *L)
{
	tr_ud *u = check_ud(L);
	size_t len;
	const char *msg = luaL_checklstring(L, 2, &len);
	double deadline = dt_optdeadline(L, 3);
	int rc;
	if (u->t == NULL)
		return push_closed(L);
	if (len > u->t->limit)
		return dt_push_failf(L, DT_ETOOLARGE,
		                     "message of %zu bytes is over the limit of %zu bytes",
		                     len, u->t->limit);
	rc = u->t->ops->send(u->t, msg, len, deadline);
	if (rc != DT_OK)
		return dt_transport_push_fail(L, u->t, rc);
	lua_pushboolean(L, 1);
	return 1;
}

/* transport:recv([deadline]) -> message | nil, message, code [, head]
 * The next message as a string. On too_large, head holds the first bytes
 * of the dropped message. A deadline of 0 (or past) never waits: it
 * services both directions once and returns "timeout" if no message is
 * complete. The transport's buffer is released before we return. */
static int l_recv(lua_State *L)
{
	tr_ud *u = check_ud(L);
	double deadline = dt_optdeadline(L, 2);
	const char *msg;
	size_t len;
	int rc;
	/* The old recv(deadline, decode, ids): fail loudly, not with a string. */
	luaL_argcheck(L, lua_isnoneornil(L, 3), 3,
	              "recv takes only a deadline (decoding is recv_cdp(deadline, ids))");
	if (u->t == NULL)
		return push_closed(L);
	u->t->head_len = 0;
	rc = u->t->ops->recv(u->t, deadline, &msg, &len);
	if (rc != DT_OK)
		return dt_transport_push_fail(L, u->t, rc);
	lua_pushlstring(L, msg, len);               /* ... message */
	dt_transport_release(u->t);
	return 1;
}

/* transport:flush([deadline]) -> true | nil, message, code
 * Writes queued bytes until none is left, the deadline ("timeout": the
 * rest stays queued) or the peer is gone ("closed"). */
static int l_flush(lua_State *L)
{
	tr_ud *u = check_ud(L);
	double deadline = dt_optdeadline(L, 2);
	int rc;
	if (u->t == NULL)
		return push_closed(L);
	rc = u->t->ops->flush(u->t, deadline);
	if (rc != DT_OK)
		return dt_transport_push_fail(L, u->t, rc);
	lua_pushboolean(L, 1);
	return 1;
}

/* transport:queued() -> bytes queued and not yet written (0 once closed) */
static int l_queued(lua_State *L)
{
	tr_ud *u = check_ud(L);
	lua_pushnumber(L, u->t ? (lua_Number)u->t->ops->queued(u->t) : 0);
	return 1;
}

/* transport:pending() -> true when a complete message is already buffered */
static int l_pending(lua_State *L)
{
	tr_ud *u = check_ud(L);
	lua_pushboolean(L, u->t != NULL && u->t->ops->pending(u->t));
	return 1;
}

static void push_fd(lua_State *L, int fd)
{
	if (fd < 0)
		lua_pushnil(L);
	else
		lua_pushinteger(L, fd);
}

/* transport:fd() -> descriptor to poll for readability, or nil once closed */
static int l_fd(lua_State *L)
{
	tr_ud *u = check_ud(L);
	int fds[3] = {-1, -1, -1};
	if (u->t != NULL)
		u->t->ops->fds(u->t, fds);
	push_fd(L, fds[0]);
	return 1;
}

/* transport:fds() -> rfd, wfd, errfd: what an event loop watches.
 * rfd readable: call recv(0). wfd writable while queued() > 0: call
 * flush(0). errfd (pipe only: the child's stderr) readable: call recv(0),
 * which drains it (a child blocked on a full stderr stops answering).
 * Each is nil when closed or not there; a websocket gives its socket twice. */
static int l_fds(lua_State *L)
{
	tr_ud *u = check_ud(L);
	int fds[3] = {-1, -1, -1};
	if (u->t != NULL)
		u->t->ops->fds(u->t, fds);
	push_fd(L, fds[0]);
	push_fd(L, fds[1]);
	push_fd(L, fds[2]);
	return 3;
}

/* transport:state() -> "connecting" | "open" | "closed" [, why]
 * "connecting": an async websocket whose handshake recv/flush still drive.
 * "closed" with why: the peer went away, the handshake failed, or close(). */
static int l_state(lua_State *L)
{
	tr_ud *u = check_ud(L);
	int st;
	if (u->t == NULL) {
		lua_pushliteral(L, "closed");
		lua_pushliteral(L, "transport is closed");
		return 2;
	}
	if (u->t->ops->state != NULL)
		st = u->t->ops->state(u->t);
	else
		st = u->t->closed ? DT_STATE_CLOSED : DT_STATE_OPEN;
	if (st == DT_STATE_CONNECTING) {
		lua_pushliteral(L, "connecting");
		return 1;
	}
	if (st == DT_STATE_OPEN) {
		lua_pushliteral(L, "open");
		return 1;
	}
	lua_pushliteral(L, "closed");
	lua_pushstring(L, u->t->err[0] ? u->t->err : "the peer went away");
	return 2;
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

/* transport:kind() -> "pipe" | "websocket" | "closed" */
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

/* __gc: close without waiting on the peer (a websocket's close frame is
 * sent if the socket takes it now; no wait for the answer). */
static int l_gc(lua_State *L)
{
	tr_ud *u = check_ud(L);
	if (u->t != NULL)
		u->t->no_wait = 1;
	return l_close(L);
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

void dt_transport_open(lua_State *L)
{
	static const luaL_Reg methods[] = {
		{"send", l_send},
		{"recv", l_recv},
		{"flush", l_flush},
		{"queued", l_queued},
		{"pending", l_pending},
		{"fd", l_fd},
		{"fds", l_fds},
		{"limit", l_limit},
		{"kind", l_kind},
		{"state", l_state},
		{"close", l_close},
		{NULL, NULL}
	};
	static const dt_class cls = { DT_TRANSPORT_MT, methods, l_close, l_tostring, l_gc };
	dt_class_register(L, &cls);
}
