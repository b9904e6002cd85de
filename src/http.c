/* http.c - one plain HTTP/1.1 GET on a socket, for /json/version
 * (dt.connect resolving a browser's WebSocket address).
 *
 * The request is a state machine (connect, send, receive) that never
 * blocks on its own: core.http_get runs it to the end, waiting on its
 * socket until the deadline; core.http_start hands it to an event loop,
 * which watches fds() and calls step() when the socket is ready.
 * Depends on: net.h (and base.h through it). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
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

/* Does the header value hold token, in any case? (Transfer codings are
 * case-insensitive: "Chunked" is chunked.) */
static int has_token_ci(const char *val, const char *token)
{
	size_t n = strlen(token);
	for (; *val != '\0'; val++)
		if (strncasecmp(val, token, n) == 0)
			return 1;
	return 0;
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

/* ---- the request ------------------------------------------------------------ */

#define HTTP_MT "devtools_tools.HttpRequest"

enum { H_CONNECT, H_SEND, H_RECV, H_DONE, H_FAILED };

typedef struct http_req {
	int state;
	int fd;                     /* the socket, or -1 */
	struct addrinfo *res;       /* owned: the addresses to try; NULL once done */
	struct addrinfo *cur;       /* the one being tried */
	double deadline;            /* of the whole request; < 0: none */
	char peer[96];              /* "host:port" */
	char path[1024];
	char req[2048];
	size_t reqlen, sent;
	dt_buf in;                  /* owned: the response */
	size_t head, want, body_len;
	int chunked, eof, status;
	int code;                   /* once failed */
	char err[256];              /* why connecting failed (the last address's) */
	char msg[1400];             /* the message, once failed */
} http_req;

static void req_release(http_req *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	if (h->res != NULL)
		freeaddrinfo(h->res);               /* frees: res */
	h->res = h->cur = NULL;
}

/* Fails while connecting: "cannot connect to" / "timed out connecting to". */
static int conn_fail(http_req *h, int code, const char *err)
{
	snprintf(h->msg, sizeof h->msg, "%s %s: %s", code == DT_ETIMEOUT
	         ? "timed out connecting to" : "cannot connect to", h->peer, err);
	h->code = code;
	h->state = H_FAILED;
	req_release(h);
	dt_buf_free(&h->in);
	return 0;
}

static int get_fail(http_req *h, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int get_fail(http_req *h, int code, const char *fmt, ...)
{
	char err[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, sizeof err, fmt, ap);
	va_end(ap);
	snprintf(h->msg, sizeof h->msg, "GET http://%s%s: %s", h->peer, h->path, err);
	h->code = code;
	h->state = H_FAILED;
	req_release(h);
	dt_buf_free(&h->in);
	return 0;
}

/* Starts connecting to h->cur or the addresses after it. Returns the
 * events to wait for, or 0 when failed. */
static int try_connect(http_req *h)
{
	for (; h->cur != NULL; h->cur = h->cur->ai_next) {
		struct addrinfo *ai = h->cur;
		h->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (h->fd < 0) {
			snprintf(h->err, sizeof h->err, "socket: %s", strerror(errno));
			continue;
		}
		if (connect(h->fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			h->state = H_SEND;
			return POLLOUT;
		}
		if (errno == EINPROGRESS) {
			h->state = H_CONNECT;
			return POLLOUT;
		}
		snprintf(h->err, sizeof h->err, "%s", strerror(errno));
		close(h->fd);
		h->fd = -1;
	}
	return conn_fail(h, DT_ECONNECT, h->err);
}

/* Checks the response once it is in (EOF or complete). Returns 0. */
static int finish(http_req *h)
{
	if (h->head == 0 || (h->want != (size_t)-1 && h->in.len < h->want))
		return get_fail(h, DT_ECONNECT, "the connection closed before the whole response came");
	h->body_len = (h->want != (size_t)-1 ? h->want : h->in.len) - h->head;
	if (h->chunked) {
		int rc = dechunk(h->in.data + h->head, h->in.len - h->head, 1, &h->body_len);
		if (rc == -2)
			h->body_len = HTTP_MAX_BODY + 1;          /* reported below */
		else if (rc != 1)
			return get_fail(h, DT_ECONNECT, "malformed or cut chunked body");
	}
	if (h->body_len > HTTP_MAX_BODY)
		return get_fail(h, DT_ETOOLARGE, "the response body is over the limit of %zu bytes",
		                HTTP_MAX_BODY);
	h->state = H_DONE;
	req_release(h);
	return 0;
}

/* Reads the status line and the headers that frame the body. Returns 1,
 * or 0 after failing. */
static int parse_head(http_req *h, size_t from)
{
	char val[64];
	char *e = memmem(h->in.data + from, h->in.len - from, "\r\n\r\n", 4);
	if (e == NULL) {
		if (h->in.len > HTTP_MAX_HEAD)
			return get_fail(h, DT_ETOOLARGE, "the response headers are over %zu bytes",
			                HTTP_MAX_HEAD);
		return 1;
	}
	h->head = (size_t)(e - h->in.data) + 4;
	h->status = parse_status(h->in.data, h->head);
	if (h->status < 100)
		return get_fail(h, DT_ECONNECT, "the answer is not HTTP");
	if (find_header(h->in.data, h->head, "Transfer-Encoding", val, sizeof val)
	    && has_token_ci(val, "chunked")) {
		h->chunked = 1;
	} else if (find_header(h->in.data, h->head, "Content-Length", val, sizeof val)) {
		unsigned long long cl = strtoull(val, NULL, 10);
		if (cl > HTTP_MAX_BODY)
			return get_fail(h, DT_ETOOLARGE, "the response body of %llu bytes "
			                "is over the limit of %zu bytes", cl, HTTP_MAX_BODY);
		h->want = h->head + (size_t)cl;
	}
	if (h->status == 204 || h->status == 304 || (h->status >= 100 && h->status < 200))
		h->want = h->head;
	return 1;
}

/* Does what can be done now, never waiting. Returns the events the socket
 * must be ready for before more can be done, or 0 when done or failed. */
static int step_io(http_req *h)
{
	for (;;) {
		ssize_t n;
		switch (h->state) {
		case H_CONNECT: {
			struct pollfd p;
			int soerr = 0;
			socklen_t sl = sizeof soerr;
			p.fd = h->fd;
			p.events = POLLOUT;
			p.revents = 0;
			if (poll(&p, 1, 0) <= 0)
				return POLLOUT;
			if (getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0) {
				h->state = H_SEND;
				break;
			}
			snprintf(h->err, sizeof h->err, "%s", strerror(soerr ? soerr : errno));
			close(h->fd);
			h->fd = -1;
			h->cur = h->cur->ai_next;           /* the next address, if any */
			if (try_connect(h) == 0)
				return 0;
			break;
		}
		case H_SEND:
			if (h->res != NULL) {               /* connected: the list is done with */
				freeaddrinfo(h->res);           /* frees: res */
				h->res = h->cur = NULL;
			}
			if (h->sent == h->reqlen) {
				h->state = H_RECV;
				break;
			}
			n = send(h->fd, h->req + h->sent, h->reqlen - h->sent, MSG_NOSIGNAL);
			if (n > 0)
				h->sent += (size_t)n;
			else if (n < 0 && errno == EINTR)
				;
			else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return POLLOUT;
			else
				return get_fail(h, DT_ECONNECT, "sending the request: %s", strerror(errno));
			break;
		case H_RECV:
			/* Until the headers and the body they announce are in, or EOF. */
			if (h->eof || (h->head > 0 && h->in.len >= h->want))
				return finish(h);
			if (dt_buf_reserve(&h->in, 65536) != 0)
				return get_fail(h, DT_ENOMEM, "out of memory reading the response");
			n = recv(h->fd, h->in.data + h->in.len, h->in.cap - h->in.len - 1, 0);
			if (n > 0) {
				size_t from = h->in.len > 3 ? h->in.len - 3 : 0;
				h->in.len += (size_t)n;
				h->in.data[h->in.len] = '\0';   /* the parsers may run to a NUL */
				if (h->head == 0 && !parse_head(h, from))
					return 0;
				/* (chunk framing may add to the payload) */
				if (h->head > 0 && h->in.len - h->head > HTTP_MAX_BODY * (h->chunked ? 4 : 1))
					return get_fail(h, DT_ETOOLARGE, "the response body is over the "
					                "limit of %zu bytes", HTTP_MAX_BODY);
				if (h->chunked && dechunk(h->in.data + h->head, h->in.len - h->head, 0,
				                          &h->body_len) != 0)
					return finish(h);           /* complete, or malformed */
			} else if (n == 0) {
				h->eof = 1;
			} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
				return POLLIN;
			} else if (errno != EINTR) {
				return get_fail(h, DT_ECONNECT, "reading the response: %s", strerror(errno));
			}
			break;
		default:
			return 0;
		}
	}
}

/* Runs the request until it is done or failed, or until wait_deadline
 * (then it is still going). The request's own deadline fails it. */
static void run(http_req *h, double wait_deadline)
{
	for (;;) {
		double d = wait_deadline;
		int ev = step_io(h);
		if (ev == 0)
			return;
		if (h->deadline >= 0 && dt_now() >= h->deadline) {
			if (h->state == H_CONNECT)
				conn_fail(h, DT_ETIMEOUT, "timed out connecting");
			else if (h->state == H_SEND)
				get_fail(h, DT_ETIMEOUT, "timed out sending the request");
			else
				get_fail(h, DT_ETIMEOUT, "timed out reading the response");
			return;
		}
		if (h->deadline >= 0 && (d < 0 || h->deadline < d))
			d = h->deadline;
		if (d >= 0 && d != h->deadline && dt_now() >= d)
			return;                             /* the caller's wait is over */
		dt_wait_fd(h->fd, (short)ev, d);
	}
}

static http_req *check_req(lua_State *L)
{
	return (http_req *)luaL_checkudata(L, 1, HTTP_MT);
}

/* Pushes a new request userdata for host:port path, started; raises on
 * bad arguments. Returns NULL (with nil, message, code pushed instead)
 * when it failed at once. */
static http_req *start(lua_State *L)
{
	const char *host = luaL_checkstring(L, 1);
	int port = dt_check_port(L, 2);
	const char *path = luaL_checkstring(L, 3);
	double deadline = dt_optdeadline(L, 4);
	struct addrinfo hints;
	char portstr[16];
	http_req *h;
	int rc;

	luaL_argcheck(L, path[0] == '/' && strpbrk(path, " \r\n") == NULL, 3,
	              "path must start with '/' and hold no spaces or line breaks");
	luaL_argcheck(L, strpbrk(host, " \r\n/") == NULL, 1, "bad host");
	luaL_argcheck(L, strlen(path) < sizeof h->path, 3, "path too long");
	h = (http_req *)lua_newuserdata(L, sizeof *h);       /* ... h */
	memset(h, 0, sizeof *h);
	h->fd = -1;
	h->want = (size_t)-1;
	h->deadline = deadline;
	luaL_getmetatable(L, HTTP_MT);
	lua_setmetatable(L, -2);                             /* __gc frees what h owns */
	dt_format_peer(h->peer, sizeof h->peer, host, port);
	snprintf(h->path, sizeof h->path, "%s", path);
	h->reqlen = (size_t)snprintf(h->req, sizeof h->req,
		"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nAccept: */*\r\n\r\n",
		path, h->peer);
	luaL_argcheck(L, h->reqlen < sizeof h->req, 3, "path too long");

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	/* Only numeric addresses and localhost: no DNS lookups here. */
	hints.ai_flags = AI_NUMERICSERV | (strcmp(host, "localhost") == 0 ? 0 : AI_NUMERICHOST);
	snprintf(portstr, sizeof portstr, "%d", port);
	rc = getaddrinfo(host, portstr, &hints, &h->res);    /* owns: res */
	if (rc != 0) {
		char err[200];
		h->res = NULL;
		snprintf(err, sizeof err, "cannot use host %s: %s", host, gai_strerror(rc));
		conn_fail(h, DT_ECONNECT, err);
	} else {
		snprintf(h->err, sizeof h->err, "no address to connect to");
		h->cur = h->res;
		try_connect(h);
	}
	if (h->state == H_FAILED) {
		lua_pop(L, 1);
		dt_push_fail(L, h->code, h->msg);
		return NULL;
	}
	return h;
}

/* Pushes the outcome of a finished request: status, body | nil, message, code. */
static int push_result(lua_State *L, http_req *h)
{
	if (h->state == H_FAILED)
		return dt_push_fail(L, h->code, h->msg);
	lua_pushinteger(L, h->status);
	lua_pushlstring(L, h->in.data + h->head, h->body_len);
	return 2;
}

/* core.http_get(host, port, path [, deadline]) -> status, body | nil, message, code
 * A plain HTTP/1.1 GET with "Connection: close" and no Origin header; the
 * body is read by Content-Length, chunks or until the server closes, and
 * may not exceed 1 MiB. */
static int l_http_get(lua_State *L)
{
	http_req *h = start(L);                 /* ... h | ... nil msg code */
	int n;
	if (h == NULL)
		return 3;
	run(h, -1);                             /* to the end: h->deadline bounds it */
	n = push_result(L, h);
	req_release(h);
	dt_buf_free(&h->in);                    /* frees: the response, now, not at GC */
	return n;
}

/* core.http_start(host, port, path [, deadline]) -> HttpRequest | nil, message, code
 * The same GET for an event loop: returns at once; watch req:fds() and
 * call req:step() when the socket is ready. The deadline covers it all. */
static int l_http_start(lua_State *L)
{
	http_req *h = start(L);
	if (h == NULL)
		return 3;
	run(h, 0);                              /* what can be done now */
	if (h->state == H_FAILED)               /* at once: as http_get says it */
		return dt_push_fail(L, h->code, h->msg);
	return 1;                               /* ... h */
}

/* req:step([wait_deadline]) -> status, body | false | nil, message, code
 * Does what can be done now (or waits until wait_deadline): false while the
 * request is still going, its outcome once finished (again on each call).
 * A request past its own deadline fails with "timeout". */
static int l_step(lua_State *L)
{
	http_req *h = check_req(L);
	double wait = lua_isnoneornil(L, 2) ? 0 : luaL_checknumber(L, 2);
	if (h->state != H_DONE && h->state != H_FAILED)
		run(h, wait);
	if (h->state == H_DONE || h->state == H_FAILED)
		return push_result(L, h);
	lua_pushboolean(L, 0);
	return 1;
}

/* req:fds() -> rfd | nil, wfd | nil: the socket, to watch for reading
 * (receiving) or writing (connecting, sending); both nil once finished. */
static int l_fds(lua_State *L)
{
	http_req *h = check_req(L);
	if (h->fd >= 0 && h->state == H_RECV)
		lua_pushinteger(L, h->fd);
	else
		lua_pushnil(L);
	if (h->fd >= 0 && (h->state == H_CONNECT || h->state == H_SEND))
		lua_pushinteger(L, h->fd);
	else
		lua_pushnil(L);
	return 2;
}

/* req:close(): drops the connection (and the response). Idempotent. */
static int l_close(lua_State *L)
{
	http_req *h = check_req(L);
	req_release(h);
	dt_buf_free(&h->in);                    /* frees: the response */
	if (h->state != H_DONE && h->state != H_FAILED) {
		h->state = H_FAILED;
		h->code = DT_ECLOSED;
		snprintf(h->msg, sizeof h->msg, "the request was closed");
	} else if (h->state == H_DONE) {
		h->state = H_FAILED;                /* the body is gone */
		h->code = DT_ECLOSED;
		snprintf(h->msg, sizeof h->msg, "the request was closed");
	}
	return 0;
}

static int l_tostring(lua_State *L)
{
	static const char *const names[] = { "connecting", "sending", "receiving", "done", "failed" };
	http_req *h = check_req(L);
	lua_pushfstring(L, "HttpRequest(GET http://%s%s, %s)", h->peer, h->path, names[h->state]);
	return 1;
}

void dt_http_open(lua_State *L)
{
	static const luaL_Reg methods[] = {
		{"step", l_step},
		{"fds", l_fds},
		{"close", l_close},
		{NULL, NULL}
	};
	static const luaL_Reg funcs[] = {
		{"http_get", l_http_get},
		{"http_start", l_http_start},
		{NULL, NULL}
	};
	static const dt_class cls = { HTTP_MT, methods, l_close, l_tostring, NULL };
	dt_class_register(L, &cls);
	luaL_setfuncs(L, funcs, 0);
}
