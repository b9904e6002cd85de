/* cdp_decode.c - the one C file that knows the shape of a CDP message.
 *
 * transport:recv_cdp(deadline [, ids]) is what the CDP layer (cdp.lua)
 * reads with: the next message decoded from JSON straight out of the
 * transport's receive buffer (no intermediate Lua string of it), and a
 * tool's JSON result decoded in place. It is added to the Transport
 * methods here, so transport.c stays a carrier of bytes.
 * Depends on: transport.h, json.h. */
#include "transport.h"
#include "json.h"
#include "dt.h"

#include <math.h>
#include <string.h>

#define EVENT_KEY_MAX 128

/* Stack: ... deadlines. For an event whose text starts with prefix (the
 * CDP layer's: what comes next is the event's key, up to the next quote)
 * and whose key is a key of deadlines with a number: pushes the key and
 * returns its deadline. Otherwise pushes nothing and returns -1. */
static double event_deadline(lua_State *L, int deadlines, const char *prefix, size_t n,
                             const char *msg, size_t len)
{
	const char *id, *q;
	double deadline = -1;
	if (n == 0 || len <= n || memcmp(msg, prefix, n) != 0)
		return -1;
	id = msg + n;
	q = memchr(id, '"', len - n < EVENT_KEY_MAX ? len - n : EVENT_KEY_MAX);
	if (q == NULL || memchr(id, '\\', (size_t)(q - id)) != NULL)
		return -1;
	lua_pushlstring(L, id, (size_t)(q - id));   /* ... id */
	lua_pushvalue(L, -1);                       /* ... id id */
	lua_rawget(L, deadlines);                   /* ... id deadlines[id] */
	if (lua_type(L, -1) == LUA_TNUMBER)
		deadline = lua_tonumber(L, -1);
	lua_pop(L, 1);                              /* ... id */
	if (deadline < 0)
		lua_pop(L, 1);                          /* ... */
	return deadline;
}

/* transport:recv_cdp([deadline [, ids [, deadlines [, prefix]]]]) -> message | nil, message, code [, head | id]
 * The next message, decoded; one that is not JSON gives "bad_message" (or
 * "no_memory"); other failures are recv's. ids: a table whose keys are
 * ids of replies that carry a JSON text as a string result
 * (Runtime.callFunctionOn / evaluate with returnByValue), each with true
 * or the deadline of the call waiting for it. For such a
 * reply, written {"id":N,"result":{"result":{"type":"string","value":
 * "<text>"}}} with "id" before "result", the text is decoded in place of
 * the string: result.result.json holds its value and there is no
 * result.result.value (no Lua string of the text is ever made, and the
 * receive buffer is gone before the text is decoded); a text that is not
 * JSON gives result.result.json_error, the decoder's message, instead.
 * Past that call's deadline (the reply may be large: 80 MB take seconds)
 * decoding stops: nil, message, "timeout", id (a reader's own timeout has
 * no id). deadlines: the same for any other reply, id -> its caller's
 * deadline; and for an event whose text starts with prefix (a string the
 * CDP layer gives: a WebMCP tool's result starts with its method and its
 * invocation id), the key written next, up to a quote -> the deadline of
 * the call waiting for it: Chromium writes that id first in the params,
 * before the output the page wrote, so the event is cut there too (nil,
 * message, "timeout", key). Any other message decodes as it is. The core
 * knows no CDP method: the prefix is the caller's. */
static int l_recv_cdp(lua_State *L)
{
	dt_transport *t = dt_transport_check(L, 1);
	double deadline = dt_optdeadline(L, 2);
	dt_json_aside aside = { "id", 0, { "result", "result", "value" }, 0, 0, -1 };
	const char *msg;
	size_t len;
	char err[200];
	int rc, n, code = DT_OK;
	double event = -1;
	const char *prefix = NULL;
	size_t plen = 0;
	if (!lua_isnoneornil(L, 3)) {
		luaL_checktype(L, 3, LUA_TTABLE);
		aside.gate = 3;
		if (!lua_isnoneornil(L, 4)) {
			luaL_checktype(L, 4, LUA_TTABLE);
			aside.deadlines = 4;
			prefix = luaL_optlstring(L, 5, NULL, &plen);
		}
	}
	if (t == NULL)
		return dt_push_fail(L, DT_ECLOSED, "transport is closed");
	t->head_len = 0;
	rc = t->ops->recv(t, deadline, &msg, &len);
	if (rc != DT_OK)
		return dt_transport_push_fail(L, t, rc);
	if (prefix != NULL)                         /* ... [event key] */
		event = event_deadline(L, aside.deadlines, prefix, plen, msg, len);
	n = dt_json_decode(L, msg, len, DT_JSON_MAX_DEPTH, aside.gate ? &aside : NULL, event,
	                   err, sizeof err, &code);
	dt_transport_release(t);                    /* msg is dangling from here */
	if (n == 3)                                 /* ... value tbl text */
		code = dt_json_decode_aside(L, aside.deadline, err, sizeof err); /* ... value */
	if (n > 0 && code == DT_OK)
		return 1;                               /* ... value */
	if (code == DT_ETIMEOUT) {                  /* only the reply's or event's deadline does it */
		if (n > 0)
			lua_pop(L, 1);                      /* ... [invocation id] */
		dt_push_fail(L, DT_ETIMEOUT, err);
		if (event >= 0) {
			lua_pushvalue(L, -4);               /* the invocation id */
			return 4;                           /* nil, message, "timeout", invocation id */
		}
		if (fabs(aside.gate_value) <= 9007199254740992.0 &&   /* our ids: integers */
		    aside.gate_value == (lua_Number)(lua_Integer)aside.gate_value)
			lua_pushinteger(L, (lua_Integer)aside.gate_value);
		else
			lua_pushnumber(L, aside.gate_value);
		/* nil, message, "timeout", id */
		return 4;
	}
	return dt_push_failf(L, code == DT_ENOMEM ? DT_ENOMEM : DT_EBADMSG,
	                     "message is not valid JSON: %s", err);
}

void dt_cdp_decode_open(lua_State *L)
{
	luaL_getmetatable(L, DT_TRANSPORT_MT);      /* M mt */
	lua_getfield(L, -1, "__index");             /* M mt methods */
	lua_pushcfunction(L, l_recv_cdp);
	lua_setfield(L, -2, "recv_cdp");
	lua_pop(L, 2);                              /* M */
}
