/* http_request.c - core.http_request: one HTTP/1.1 request with any
 * method, a body and headers, plain or over TLS (stream.c), for https://
 * /json/version and WebDriver's JSON commands. It waits, bounded by the
 * deadline, in every step (name lookup, connect, TLS handshake, send,
 * receive); core.http_get (http.c) is the non-blocking GET for event loops.
 * Depends on: net.h, http.h, stream.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"
#include "http.h"
#include "stream.h"
#include "dt.h"

/* Pushes opts.headers (a table name -> value) as one string of
 * "Name: value\r\n" lines, refusing names that are not tokens and values
 * with line breaks. */
static void push_headers(lua_State *L, int opts)
{
	int acc;
	lua_pushliteral(L, "");
	acc = lua_gettop(L);
	lua_getfield(L, opts, "headers");
	if (!lua_isnil(L, -1)) {
		int t = lua_gettop(L);
		luaL_argcheck(L, lua_istable(L, t), opts, "headers must be a table");
		lua_pushnil(L);
		while (lua_next(L, t) != 0) {
			const char *name, *value;
			size_t nl, vl;
			luaL_argcheck(L, lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING,
			              opts, "headers: names and values must be strings");
			name = lua_tolstring(L, -2, &nl);
			value = lua_tolstring(L, -1, &vl);
			luaL_argcheck(L, nl > 0 && strspn(name, "!#$%&'*+-.^_`|~0123456789"
			              "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") == nl,
			              opts, "headers: a name must be an HTTP token");
			luaL_argcheck(L, strlen(value) == vl && strpbrk(value, "\r\n") == NULL, opts,
			              "headers: a value must not hold line breaks or NUL");
			lua_pushvalue(L, acc);
			lua_pushfstring(L, "%s: %s\r\n", name, value);
			lua_concat(L, 2);
			lua_replace(L, acc);
			lua_pop(L, 1);
		}
	}
	lua_pop(L, 1);                                  /* ... headers-string */
}

/* core.http_request(host, port, path [, opts]) -> status, body | nil, message, code
 * opts: method ("GET"), body (string, sent with Content-Length),
 * content_type, headers (name -> value), deadline, tls (https),
 * server_name (the name the certificate must hold; default host),
 * ca_file, insecure. HTTP/1.1 with "Connection: close" and no Origin
 * header; the body is read by Content-Length, chunks or until the server
 * closes, and may not exceed 1 MiB. */
static int l_http_request(lua_State *L)
{
	const char *host = luaL_checkstring(L, 1);
	int port = dt_check_port(L, 2);
	const char *path = luaL_checkstring(L, 3);
	const char *method = "GET", *body = NULL, *ctype = NULL;
	size_t body_sz = 0;
	double deadline = -1;
	dt_tls_opts tls;
	dt_stream st;
	char peer[96], err[256], val[64];
	const char *reqstr;
	size_t reqlen;
	dt_buf in = {NULL, 0, 0};
	size_t head = 0, body_len = 0, want = (size_t)-1;
	int code = DT_OK, status = 0, chunked = 0, eof = 0;

	memset(&tls, 0, sizeof tls);
	luaL_argcheck(L, path[0] == '/' && strpbrk(path, " \r\n") == NULL, 3,
	              "path must start with '/' and hold no spaces or line breaks");
	luaL_argcheck(L, strpbrk(host, " \r\n/") == NULL, 1, "bad host");
	lua_settop(L, 4);
	if (!lua_isnil(L, 4)) {
		luaL_checktype(L, 4, LUA_TTABLE);
		lua_getfield(L, 4, "method");
		if (!lua_isnil(L, -1))
			method = luaL_checkstring(L, -1);                 /* kept alive below */
		lua_getfield(L, 4, "body");
		if (!lua_isnil(L, -1))
			body = luaL_checklstring(L, -1, &body_sz);
		lua_getfield(L, 4, "content_type");
		if (!lua_isnil(L, -1))
			ctype = luaL_checkstring(L, -1);
		lua_getfield(L, 4, "deadline");
		if (!lua_isnil(L, -1))
			deadline = luaL_checknumber(L, -1);
		lua_getfield(L, 4, "tls");
		tls.on = lua_toboolean(L, -1);
		lua_getfield(L, 4, "server_name");
		if (!lua_isnil(L, -1))
			tls.server_name = luaL_checkstring(L, -1);
		lua_getfield(L, 4, "ca_file");
		if (!lua_isnil(L, -1))
			tls.ca_file = luaL_checkstring(L, -1);
		lua_getfield(L, 4, "insecure");
		tls.insecure = lua_toboolean(L, -1);
		/* the strings stay on the stack (slots 5..12) while we use them */
	}
	luaL_argcheck(L, strspn(method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == strlen(method)
	              && method[0] != '\0', 4, "method must be an upper-case token");
	luaL_argcheck(L, body_sz <= HTTP_MAX_BODY * 64, 4, "body too large");
	luaL_argcheck(L, ctype == NULL || strpbrk(ctype, "\r\n") == NULL, 4, "bad content_type");
	if (tls.on && tls.server_name == NULL)
		tls.server_name = host;
	dt_format_peer(peer, sizeof peer, host, port);

	if (lua_isnil(L, 4))
		lua_pushliteral(L, "");
	else
		push_headers(L, 4);                               /* ... headers */
	lua_pushfstring(L, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nAccept: */*\r\n",
	                method, path, peer);                  /* ... headers start */
	if (body != NULL || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
		lua_pushfstring(L, "Content-Length: %d\r\n", (int)body_sz);
		if (ctype != NULL)
			lua_pushfstring(L, "Content-Type: %s\r\n", ctype);
		else
			lua_pushliteral(L, "");
		lua_concat(L, 3);
	}
	lua_insert(L, -2);                                    /* ... start headers */
	lua_pushliteral(L, "\r\n");
	lua_concat(L, 3);                                     /* ... head */
	if (body != NULL) {
		lua_pushlstring(L, body, body_sz);
		lua_concat(L, 2);                                 /* ... request */
	}
	reqstr = lua_tolstring(L, -1, &reqlen);

	code = dt_stream_open(&st, host, port, &tls, deadline, err, sizeof err);
	if (code != DT_OK) {
		char msg[400];
		snprintf(msg, sizeof msg, "%s %s: %s", code == DT_ETIMEOUT ? "timed out connecting to"
		         : "cannot connect to", peer, err);
		return dt_push_fail(L, code, msg);
	}
	code = dt_stream_write(&st, reqstr, reqlen, deadline, err, sizeof err);
	if (code != DT_OK)
		goto done;

	/* Read until the headers and the body they announce are in, or EOF. */
	while (!eof && (head == 0 || in.len < want)) {
		ssize_t n;
		if (dt_buf_reserve(&in, 65536) != 0) {
			code = DT_ENOMEM;
			snprintf(err, sizeof err, "out of memory reading the response");
			goto done;
		}
		n = dt_stream_read(&st, in.data + in.len, in.cap - in.len - 1, deadline,
		                   &code, err, sizeof err);
		if (n > 0) {
			size_t from = in.len > 3 ? in.len - 3 : 0;
			in.len += (size_t)n;
			in.data[in.len] = '\0';       /* the parsers below may run to a NUL */
			if (head == 0) {
				char *e = memmem(in.data + from, in.len - from, "\r\n\r\n", 4);
				if (e != NULL) {
					head = (size_t)(e - in.data) + 4;
					status = dt_http_parse_status(in.data, head);
					if (status < 100) {
						code = DT_ECONNECT;
						snprintf(err, sizeof err, "the answer is not HTTP");
						goto done;
					}
					if (dt_http_find_header(in.data, head, "Transfer-Encoding", val, sizeof val)
					    && strstr(val, "chunked") != NULL)
						chunked = 1;
					else if (dt_http_find_header(in.data, head, "Content-Length", val, sizeof val)) {
						unsigned long long cl = strtoull(val, NULL, 10);
						if (cl > HTTP_MAX_BODY) {
							code = DT_ETOOLARGE;
							snprintf(err, sizeof err, "the response body of %llu bytes "
							         "is over the limit of %zu bytes", cl, HTTP_MAX_BODY);
							goto done;
						}
						want = head + (size_t)cl;
					}
					if (status == 204 || status == 304 || (status >= 100 && status < 200)
					    || strcmp(method, "HEAD") == 0)
						want = head;
				} else if (in.len > HTTP_MAX_HEAD) {
					code = DT_ETOOLARGE;
					snprintf(err, sizeof err, "the response headers are over %zu bytes",
					         HTTP_MAX_HEAD);
					goto done;
				}
			}
			/* (chunk framing may add to the payload) */
			if (head > 0 && in.len - head > HTTP_MAX_BODY * (chunked ? 4 : 1)) {
				code = DT_ETOOLARGE;
				snprintf(err, sizeof err, "the response body is over the limit of %zu bytes",
				         HTTP_MAX_BODY);
				goto done;
			}
			if (chunked && dt_http_dechunk(in.data + head, in.len - head, 0, &body_len) != 0)
				break;                     /* complete, or malformed: see below */
		} else if (n == 0) {
			eof = 1;
		} else {
			goto done;                     /* code and err set by the read */
		}
	}
	if (head == 0 || (want != (size_t)-1 && in.len < want)) {
		code = DT_ECONNECT;
		snprintf(err, sizeof err, "the connection closed before the whole response came");
		goto done;
	}
	body_len = (want != (size_t)-1 ? want : in.len) - head;
	if (chunked) {
		int rc = dt_http_dechunk(in.data + head, in.len - head, 1, &body_len);
		if (rc == -2) {
			body_len = HTTP_MAX_BODY + 1;          /* reported below */
		} else if (rc != 1) {
			code = DT_ECONNECT;
			snprintf(err, sizeof err, "malformed or cut chunked body");
			goto done;
		}
	}
	if (body_len > HTTP_MAX_BODY) {
		code = DT_ETOOLARGE;
		snprintf(err, sizeof err, "the response body is over the limit of %zu bytes",
		         HTTP_MAX_BODY);
		goto done;
	}
done:
	dt_stream_close(&st);
	if (code != DT_OK) {
		char msg[400];
		dt_buf_free(&in);
		snprintf(msg, sizeof msg, "%s %s://%s%s: %s", method, tls.on ? "https" : "http",
		         peer, path, err);
		return dt_push_fail(L, code, msg);
	}
	lua_pushinteger(L, status);
	lua_pushlstring(L, in.data + head, body_len);
	dt_buf_free(&in);
	return 2;
}

void dt_http_request_open(lua_State *L)
{
	lua_pushcfunction(L, l_http_request);
	lua_setfield(L, -2, "http_request");
}
