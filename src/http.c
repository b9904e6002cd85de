/* http.c - one HTTP/1.1 request on a socket, plain or over TLS: GET
 * /json/version (dt.connect resolving a browser's WebSocket address, also
 * https://), and WebDriver's commands (POST and DELETE with a JSON body).
 *
 * The request is a state machine (connect, TLS handshake, send, receive)
 * that never blocks on its own: core.http.get / core.http.request run it to
 * the end, waiting on its socket until the deadline; core.http.start hands
 * it to an event loop, which watches fds() and calls step() when the socket
 * is ready. Only a host given as a name is looked up first, within the
 * deadline (tls.c). Depends on: net.h, http.h, tls.h (base.h through them). */
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

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "net.h"
#include "http.h"
#include "tls.h"
#include "nopipe.h"
#include "dt.h"

/* Finds the value of header name (case-insensitive) in head[0..n); copies
 * it to val. Returns 1 if found, 2 if found but cut to fit val. */
int dt_http_find_header(const char *head, size_t n, const char *name, char *val, size_t valsz)
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
			int cut = k >= valsz;
			if (cut)
				k = valsz - 1;
			memcpy(val, v, k);
			val[k] = '\0';
			return cut ? 2 : 1;
		}
		p = eol < end ? eol : NULL;
	}
	return 0;
}

/* The status of "HTTP/1.x NNN ...", or -1. */
int dt_http_parse_status(const char *p, size_t n)
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

/* (see http.h) */
int dt_http_dechunk(char *p, size_t n, int decode, dt_chunks *at, size_t *out)
{
	size_t in = at->in, len = at->len;
	for (;;) {
		char *eol, *endp;
		unsigned long size;
		at->in = in;                           /* a chunk not yet complete starts here */
		at->len = len;
		eol = memchr(p + in, '\n', n - in);
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

enum { H_CONNECT, H_TLS, H_SEND, H_RECV, H_DONE, H_FAILED };

typedef struct http_req {
	int state;
	int fd;                     /* the socket, or -1 */
	struct addrinfo *res;       /* owned: the addresses to try; NULL once done */
	struct addrinfo *cur;       /* the one being tried */
	double deadline;            /* of the whole request; < 0: none */
	char peer[96];              /* "host:port" */
	char path[1024];
	char method[16];
	dt_buf out;                 /* owned: the request, head and body */
	size_t sent;
	int ev;                     /* what the socket must be ready for next */
	int tls;                    /* https */
	void *ssl, *ctx;            /* owned (SSL *, SSL_CTX *) while TLS is set up */
	int insecure;
	char server_name[256];      /* what the certificate must name */
	char ca_file[1024];         /* "" for the system store */
	dt_buf in;                  /* owned: the response */
	size_t head, want, body_len;
	dt_chunks chunks;           /* how far the chunked body was walked */
	int chunked, eof, status;
	int code;                   /* once failed */
	char err[256];              /* why connecting failed (the last address's) */
	char msg[1400];             /* the message, once failed */
} http_req;

static void req_release(http_req *h)
{
	dt_tls_free(&h->ssl, &h->ctx);              /* frees: ssl, ctx */
	dt_buf_free(&h->out);                       /* frees: the request */
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
	snprintf(h->msg, sizeof h->msg, "%s %s://%s%s: %s", h->method, h->tls ? "https" : "http",
	         h->peer, h->path, err);
	h->code = code;
	h->state = H_FAILED;
	req_release(h);
	dt_buf_free(&h->in);
	return 0;
}

/* The socket is connected: TLS next, or the request. Returns the events
 * to wait for, or 0 when failed. */
static int connected(http_req *h)
{
	char err[256];
	dt_tls_opts o;
	if (!h->tls) {
		h->state = H_SEND;
		return POLLOUT;
	}
	o.server_name = h->server_name;
	o.ca_file = h->ca_file[0] ? h->ca_file : NULL;
	o.insecure = h->insecure;
	if (dt_tls_client(h->fd, &o, &h->ssl, &h->ctx, err, sizeof err) != DT_OK)
		return conn_fail(h, DT_ECONNECT, err);
	h->state = H_TLS;
	return POLLOUT;
}

/* One OpenSSL step. OpenSSL writes to the socket with write(), which
 * raises SIGPIPE when the server is gone (plain sends use MSG_NOSIGNAL):
 * the host never sees it (nopipe.h). A read may write too (an alert). */
enum { TLS_CONNECT, TLS_WRITE, TLS_READ };
static int tls_op(http_req *h, int op, void *buf, int len)
{
	dt_nopipe np;
	int rc;
	dt_nopipe_begin(&np);
	if (op == TLS_CONNECT)
		rc = SSL_connect((SSL *)h->ssl);
	else if (op == TLS_WRITE)
		rc = SSL_write((SSL *)h->ssl, buf, len);
	else
		rc = SSL_read((SSL *)h->ssl, buf, len);
	dt_nopipe_end(&np, -1);
	return rc;
}

/* After an SSL call returned rc <= 0: the events to wait for, or 0 after
 * failing (what: which step). */
static int tls_wait(http_req *h, int rc, const char *what)
{
	char err[256];
	int e = SSL_get_error((SSL *)h->ssl, rc);
	if (e == SSL_ERROR_WANT_READ)
		return POLLIN;
	if (e == SSL_ERROR_WANT_WRITE)
		return POLLOUT;
	dt_tls_why(h->ssl, what, err, sizeof err);
	if (h->state == H_TLS)
		return conn_fail(h, DT_ECONNECT, err);
	return get_fail(h, DT_ECONNECT, "%s", err);
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
		if (connect(h->fd, ai->ai_addr, ai->ai_addrlen) == 0)
			return connected(h);
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
		dt_chunks from_start = {0, 0};
		int rc = dt_http_dechunk(h->in.data + h->head, h->in.len - h->head, 1, &from_start,
		                         &h->body_len);
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
	char *e;
again:
	e = memmem(h->in.data + from, h->in.len - from, "\r\n\r\n", 4);
	if (e == NULL) {
		if (h->in.len > HTTP_MAX_HEAD)
			return get_fail(h, DT_ETOOLARGE, "the response headers are over %zu bytes",
			                HTTP_MAX_HEAD);
		return 1;
	}
	h->head = (size_t)(e - h->in.data) + 4;
	h->status = dt_http_parse_status(h->in.data, h->head);
	if (h->status < 100)
		return get_fail(h, DT_ECONNECT, "the answer is not HTTP");
	if (h->status < 200 && h->status != 101) {
		/* An interim answer (100 Continue, 103 Early Hints): the final
		 * one follows. It is dropped and what came after it read again. */
		size_t rest = h->in.len - h->head;
		memmove(h->in.data, h->in.data + h->head, rest);
		h->in.len = rest;
		h->in.data[rest] = '\0';
		h->head = 0;
		h->status = 0;
		from = 0;
		goto again;
	}
	if (dt_http_find_header(h->in.data, h->head, "Transfer-Encoding", val, sizeof val)
	    && has_token_ci(val, "chunked")) {
		h->chunked = 1;
	} else {
		int found = dt_http_find_header(h->in.data, h->head, "Content-Length", val, sizeof val);
		if (found) {
			/* 1*DIGIT, all of it: a value cut or not a number would
			 * frame the body wrongly, and lose it silently */
			unsigned long long cl = 0;
			size_t i, n = strlen(val);
			if (found == 2 || n == 0 || strspn(val, "0123456789") != n)
				return get_fail(h, DT_EBADMSG, "the response's Content-Length is not a number: %s%s",
				                val, found == 2 ? "..." : "");
			for (i = 0; i < n && cl <= HTTP_MAX_BODY; i++)
				cl = cl * 10 + (unsigned long long)(val[i] - '0');
			if (cl > HTTP_MAX_BODY)
				return get_fail(h, DT_ETOOLARGE, "the response body of %s bytes "
				                "is over the limit of %zu bytes", val, HTTP_MAX_BODY);
			h->want = h->head + (size_t)cl;
		}
	}
	/* no body: these statuses, and any answer to HEAD (its headers
	 * describe the body a GET would get) */
	if (h->status == 204 || h->status == 304 || h->status == 101 || strcmp(h->method, "HEAD") == 0) {
		h->chunked = 0;
		h->want = h->head;
	}
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
				if (connected(h) == 0)
					return 0;
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
		case H_TLS: {
			int rc = tls_op(h, TLS_CONNECT, NULL, 0);
			if (rc == 1) {
				h->state = H_SEND;
				break;
			}
			return tls_wait(h, rc, "TLS handshake failed");
		}
		case H_SEND:
			if (h->res != NULL) {               /* connected: the list is done with */
				freeaddrinfo(h->res);           /* frees: res */
				h->res = h->cur = NULL;
			}
			if (h->sent == h->out.len) {
				h->state = H_RECV;
				break;
			}
			if (h->ssl != NULL) {
				size_t left = h->out.len - h->sent;
				int rc = tls_op(h, TLS_WRITE, h->out.data + h->sent,
				                (int)(left > 1 << 20 ? 1 << 20 : left));
				if (rc > 0)
					h->sent += (size_t)rc;
				else
					return tls_wait(h, rc, "sending the request");
				break;
			}
			n = send(h->fd, h->out.data + h->sent, h->out.len - h->sent, MSG_NOSIGNAL);
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
			if (h->ssl != NULL) {
				size_t room = h->in.cap - h->in.len - 1;
				int rc = tls_op(h, TLS_READ, h->in.data + h->in.len,
				                (int)(room > 1 << 20 ? 1 << 20 : room));
				if (rc > 0) {
					n = rc;
				} else {
					int e = SSL_get_error((SSL *)h->ssl, rc);
					if (e == SSL_ERROR_ZERO_RETURN
					    || (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)) {
						ERR_clear_error();
						n = 0;                  /* the end, with or without close_notify */
					} else {
						return tls_wait(h, rc, "reading the response");
					}
				}
			} else {
				n = recv(h->fd, h->in.data + h->in.len, h->in.cap - h->in.len - 1, 0);
			}
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
				if (h->chunked && dt_http_dechunk(h->in.data + h->head, h->in.len - h->head, 0,
				                          &h->chunks, &h->body_len) != 0)
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
		h->ev = ev;
		if (ev == 0)
			return;
		if (h->deadline >= 0 && dt_now() >= h->deadline) {
			if (h->state == H_CONNECT)
				conn_fail(h, DT_ETIMEOUT, "timed out connecting");
			else if (h->state == H_TLS)
				conn_fail(h, DT_ETIMEOUT, "timed out in the TLS handshake");
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

/* Appends n bytes to b; 0, or -1 out of memory. */
static int out_add(dt_buf *b, const char *p, size_t n)
{
	if (dt_buf_reserve(b, n) != 0)
		return -1;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

static int out_str(dt_buf *b, const char *p)
{
	return out_add(b, p, strlen(p));
}

#define TOKEN_CHARS "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/* Appends opts.headers (name -> value) to the request, refusing names that
 * are not tokens and values with line breaks (raises: h is on the stack
 * and its __gc frees what it holds). Returns 0, or -1 out of memory. */
static int add_headers(lua_State *L, int opts, http_req *h)
{
	int rc = 0;
	lua_getfield(L, opts, "headers");
	if (!lua_isnil(L, -1)) {
		int t = lua_gettop(L);
		luaL_argcheck(L, lua_istable(L, t), 4, "headers must be a table");
		lua_pushnil(L);
		while (rc == 0 && lua_next(L, t) != 0) {
			const char *name, *value;
			size_t nl, vl;
			luaL_argcheck(L, lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING,
			              4, "headers: names and values must be strings");
			name = lua_tolstring(L, -2, &nl);
			value = lua_tolstring(L, -1, &vl);
			luaL_argcheck(L, nl > 0 && strspn(name, TOKEN_CHARS) == nl, 4,
			              "headers: a name must be an HTTP token");
			luaL_argcheck(L, strlen(value) == vl && strpbrk(value, "\r\n") == NULL, 4,
			              "headers: a value must not hold line breaks or NUL");
			if (out_add(&h->out, name, nl) || out_str(&h->out, ": ")
			    || out_add(&h->out, value, vl) || out_str(&h->out, "\r\n"))
				rc = -1;
			lua_pop(L, 1);
		}
		if (rc != 0)
			lua_pop(L, 1);                      /* the key lua_next left */
	}
	lua_pop(L, 1);
	return rc;
}

/* A string field of opts (or NULL); raises if it is not a string. */
static const char *opt_string(lua_State *L, int opts, const char *key)
{
	const char *v = NULL;
	lua_getfield(L, opts, key);
	if (!lua_isnil(L, -1)) {
		if (lua_type(L, -1) != LUA_TSTRING)
			luaL_error(L, "bad argument #4 (%s must be a string)", key);
		v = lua_tostring(L, -1);
	}
	lua_pop(L, 1);                              /* still held by opts */
	return v;
}

/* Pushes a new request userdata for host:port path, started; raises on
 * bad arguments. Returns NULL (with nil, message, code pushed instead)
 * when it failed at once. Argument 4: the deadline, or a table of options
 * (deadline, method, body, content_type, headers, tls, server_name,
 * ca_file, insecure). */
static http_req *start(lua_State *L)
{
	const char *host = luaL_checkstring(L, 1);
	int port = dt_check_port(L, 2);
	const char *path = luaL_checkstring(L, 3);
	const char *method = "GET", *body = NULL, *ctype = NULL, *sname = NULL, *ca = NULL;
	size_t body_len = 0;
	double deadline = -1;
	int opts = 0;
	struct addrinfo hints;
	char portstr[16], addr[64], err[200], line[64];
	http_req *h;
	int rc;

	luaL_argcheck(L, path[0] == '/' && strpbrk(path, " \r\n") == NULL, 3,
	              "path must start with '/' and hold no spaces or line breaks");
	luaL_argcheck(L, strpbrk(host, " \r\n/") == NULL, 1, "bad host");
	luaL_argcheck(L, strlen(path) < sizeof h->path, 3, "path too long");
	if (lua_istable(L, 4)) {
		opts = 4;
		lua_getfield(L, 4, "deadline");
		if (!lua_isnil(L, -1))
			deadline = dt_checkdeadline(L, -1);
		lua_pop(L, 1);
		method = opt_string(L, 4, "method");
		if (method == NULL)
			method = "GET";
		lua_getfield(L, 4, "body");
		if (!lua_isnil(L, -1)) {
			luaL_argcheck(L, lua_type(L, -1) == LUA_TSTRING, 4, "body must be a string");
			body = lua_tolstring(L, -1, &body_len);
		}
		lua_pop(L, 1);                          /* still held by opts */
		ctype = opt_string(L, 4, "content_type");
		sname = opt_string(L, 4, "server_name");
		ca = opt_string(L, 4, "ca_file");
	} else {
		deadline = dt_optdeadline(L, 4);
	}
	luaL_argcheck(L, method[0] != '\0' && strlen(method) < 16
	              && strspn(method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == strlen(method), 4,
	              "method must be an upper-case token");
	luaL_argcheck(L, ctype == NULL || strpbrk(ctype, "\r\n") == NULL, 4, "bad content_type");
	luaL_argcheck(L, sname == NULL || strlen(sname) < 256, 4, "server_name too long");
	luaL_argcheck(L, ca == NULL || strlen(ca) < 1024, 4, "ca_file path too long");
	luaL_argcheck(L, body_len <= 64 * HTTP_MAX_BODY, 4, "body too large");

	h = (http_req *)lua_newuserdata(L, sizeof *h);       /* ... h */
	memset(h, 0, sizeof *h);
	h->fd = -1;
	h->want = (size_t)-1;
	h->deadline = deadline;
	luaL_getmetatable(L, HTTP_MT);
	lua_setmetatable(L, -2);                             /* __gc frees what h owns */
	dt_format_peer(h->peer, sizeof h->peer, host, port);
	snprintf(h->path, sizeof h->path, "%s", path);
	snprintf(h->method, sizeof h->method, "%s", method);
	if (opts) {
		lua_getfield(L, opts, "tls");
		h->tls = lua_toboolean(L, -1);
		lua_getfield(L, opts, "insecure");
		h->insecure = lua_toboolean(L, -1);
		lua_pop(L, 2);
		snprintf(h->server_name, sizeof h->server_name, "%s", sname != NULL ? sname : host);
		snprintf(h->ca_file, sizeof h->ca_file, "%s", ca != NULL ? ca : "");
	}

	/* The request: head, caller's headers, body. */
	if (out_str(&h->out, method) || out_str(&h->out, " ") || out_str(&h->out, path)
	    || out_str(&h->out, " HTTP/1.1\r\nHost: ") || out_str(&h->out, h->peer)
	    || out_str(&h->out, "\r\nConnection: close\r\nAccept: */*\r\n"))
		goto oom;
	if (body != NULL || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
		snprintf(line, sizeof line, "Content-Length: %zu\r\n", body_len);
		if (out_str(&h->out, line))
			goto oom;
		if (ctype != NULL && (out_str(&h->out, "Content-Type: ") || out_str(&h->out, ctype)
		                      || out_str(&h->out, "\r\n")))
			goto oom;
	}
	if (opts && add_headers(L, opts, h) != 0)
		goto oom;
	if (out_str(&h->out, "\r\n") || (body != NULL && out_add(&h->out, body, body_len)))
		goto oom;

	/* A name is looked up here, within the deadline; addresses at once. */
	rc = dt_resolve(host, deadline, addr, sizeof addr, err, sizeof err);
	if (rc != DT_OK) {
		conn_fail(h, rc, err);
	} else {
		memset(&hints, 0, sizeof hints);
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_flags = AI_NUMERICSERV | AI_NUMERICHOST;
		snprintf(portstr, sizeof portstr, "%d", port);
		rc = getaddrinfo(addr, portstr, &hints, &h->res);    /* owns: res */
		if (rc != 0) {
			h->res = NULL;
			snprintf(err, sizeof err, "cannot use host %s: %s", host, gai_strerror(rc));
			conn_fail(h, DT_ECONNECT, err);
		} else {
			snprintf(h->err, sizeof h->err, "no address to connect to");
			h->cur = h->res;
			h->ev = try_connect(h);
		}
	}
	if (h->state == H_FAILED) {
		lua_pop(L, 1);
		dt_push_fail(L, h->code, h->msg);
		return NULL;
	}
	return h;
oom:
	lua_pop(L, 1);                              /* h: its __gc frees the request */
	dt_push_fail(L, DT_ENOMEM, "out of memory for an HTTP request");
	return NULL;
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

/* core.http.get(host, port, path [, deadline]) -> status, body | nil, message, code
 * core.http.request(host, port, path [, opts]): the same function; opts:
 * deadline, method ("GET"), body (sent with Content-Length), content_type,
 * headers (name -> value), tls (https), server_name (what the certificate
 * must name; default host), ca_file (PEM; default the system store),
 * insecure (no certificate check). HTTP/1.1 with "Connection: close" and
 * no Origin header; the body is read by Content-Length, chunks or until
 * the server closes, and may not exceed 1 MiB. */
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

/* core.http.start(host, port, path [, deadline | opts]) -> HttpRequest | nil, message, code
 * The same request for an event loop: returns at once; watch req:fds() and
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
	double wait = lua_isnoneornil(L, 2) ? 0 : dt_checkdeadline(L, 2);
	if (h->state != H_DONE && h->state != H_FAILED)
		run(h, wait);
	if (h->state == H_DONE || h->state == H_FAILED)
		return push_result(L, h);
	lua_pushboolean(L, 0);
	return 1;
}

/* req:fds() -> rfd | nil, wfd | nil: the socket, to watch for reading
 * (receiving) or writing (connecting, sending; the TLS handshake either
 * way); both nil once finished. */
static int l_fds(lua_State *L)
{
	http_req *h = check_req(L);
	int going = h->fd >= 0 && h->state != H_DONE && h->state != H_FAILED;
	if (going && (h->ev & POLLIN))
		lua_pushinteger(L, h->fd);
	else
		lua_pushnil(L);
	if (going && (h->ev & POLLOUT))
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
	static const char *const names[] = { "connecting", "handshaking", "sending", "receiving",
	                                     "done", "failed" };
	http_req *h = check_req(L);
	lua_pushfstring(L, "HttpRequest(%s %s://%s%s, %s)", h->method, h->tls ? "https" : "http",
	                h->peer, h->path, names[h->state]);
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
		{"get", l_http_get},
		{"request", l_http_get},
		{"start", l_http_start},
		{NULL, NULL}
	};
	static const dt_class cls = { HTTP_MT, methods, l_close, l_tostring, NULL };
	dt_class_register(L, &cls);
	dt_open_part(L, "http", funcs);
}
