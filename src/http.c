/* http.c - core.http_request (and core.http_get): one HTTP/1.1 request,
 * plain or over TLS, for /json/version (dt.connect resolving a browser's
 * WebSocket address) and WebDriver's JSON commands (POST, DELETE).
 * Depends on: net.h, stream.h (and base.h through them). */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "net.h"
#include "stream.h"
#include "dt.h"

#define HTTP_MAX_HEAD ((size_t)64 * 1024)
#define HTTP_MAX_BODY ((size_t)1024 * 1024)

/* Finds the value of header name (case-insensitive) in head[0..n); copies
 * it to val. Returns 1 if found. */
static int find_header(const char *head, size_t n, const char *name, char *val, size_t valsz)
{
	size_t nl = strlen(name);
	const char *p = memchr(head, '\n', n), *end = head + n;
	while (p != NULL && p + 1 < end) {
		const char *line = p + 1, *eol = memchr(line, '\n', (size_t)(end - line));
		if (eol == NULL)
			eol = end;
		if ((size_t)(eol - line) > nl && strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
			const char *v = line + nl + 1;
			size_t k;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			k = (size_t)(eol - v);
			while (k > 0 && (v[k - 1] == '\r' || v[k - 1] == ' ' || v[k - 1] == '\t'))
				k--;
			if (k >= valsz)
				k = valsz - 1;
			memcpy(val, v, k);
			val[k] = '\0';
			return 1;
		}
		p = eol < end ? eol : NULL;
	}
	return 0;
}

/* The status of "HTTP/1.x NNN ...", or -1. */
static int parse_status(const char *p, size_t n)
{
	size_t i = 8;
	int status = 0, digits = 0;
	if (n < 12 || memcmp(p, "HTTP/1.", 7) != 0 || p[i] != ' ')
		return -1;
	while (i < n && p[i] == ' ')
		i++;
	for (; i < n && digits < 3 && p[i] >= '0' && p[i] <= '9'; i++, digits++)
		status = status * 10 + (p[i] - '0');
	return digits == 3 ? status : -1;
}

/* Walks a chunked body p[0..n) (NUL-terminated). With decode, moves the
 * payload to the front and sets *out to its length. Returns 1 when the body
 * is complete, 0 when more is needed, -1 when it is malformed, -2 when the
 * payload is over HTTP_MAX_BODY. */
static int dechunk(char *p, size_t n, int decode, size_t *out)
{
	size_t in = 0, len = 0;
	for (;;) {
		char *eol = memchr(p + in, '\n', n - in), *endp;
		unsigned long size;
		if (eol == NULL)
			return 0;
		size = strtoul(p + in, &endp, 16);    /* stops at the line's CR, ';' or LF */
		if (endp == p + in)
			return -1;
		if (size > HTTP_MAX_BODY)
			return -2;
		in = (size_t)(eol - p) + 1;
		if (size == 0)
			break;                             /* trailers, if any, are ignored */
		if (size + 2 > n - in)
			return 0;
		if (decode)
			memmove(p + len, p + in, size);
		len += size;
		in += size;
		if (p[in] == '\r')
			in++;
		if (p[in] != '\n')
			return -1;
		in++;
		if (len > HTTP_MAX_BODY)
			return -2;
	}
	*out = len;
	return 1;
}

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
					status = parse_status(in.data, head);
					if (status < 100) {
						code = DT_ECONNECT;
						snprintf(err, sizeof err, "the answer is not HTTP");
						goto done;
					}
					if (find_header(in.data, head, "Transfer-Encoding", val, sizeof val)
					    && strstr(val, "chunked") != NULL)
						chunked = 1;
					else if (find_header(in.data, head, "Content-Length", val, sizeof val)) {
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
			if (chunked && dechunk(in.data + head, in.len - head, 0, &body_len) != 0)
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
		int rc = dechunk(in.data + head, in.len - head, 1, &body_len);
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

/* core.http_get(host, port, path [, deadline]): http_request with GET. */
static int l_http_get(lua_State *L)
{
	double deadline = dt_optdeadline(L, 4);
	lua_settop(L, 3);
	lua_createtable(L, 0, 1);
	if (deadline >= 0) {
		lua_pushnumber(L, deadline);
		lua_setfield(L, -2, "deadline");
	}
	return l_http_request(L);
}

void dt_http_open(lua_State *L)
{
	lua_pushcfunction(L, l_http_get);
	lua_setfield(L, -2, "http_get");
	lua_pushcfunction(L, l_http_request);
	lua_setfield(L, -2, "http_request");
}
