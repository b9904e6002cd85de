/* http.c - core.http_get: one plain HTTP/1.1 GET on a socket, for
 * /json/version (dt.connect resolving a browser's WebSocket address).
 * Depends on: net.h (and base.h through it). */
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
#include "dt.h"

#define HTTP_MAX_HEAD ((size_t)64 * 1024)
#define HTTP_MAX_BODY ((size_t)1024 * 1024)

/* Connects to host:port by the first address that takes the connection.
 * Returns the socket, or -1 with *code and err set. */
static int http_connect(const char *host, int port, double deadline, int *code,
                        char *err, size_t errsz)
{
	struct addrinfo hints, *res = NULL, *ai;
	char portstr[16];
	int fd = -1, rc;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	/* Only numeric addresses and localhost: no DNS lookups here. */
	hints.ai_flags = AI_NUMERICSERV | (strcmp(host, "localhost") == 0 ? 0 : AI_NUMERICHOST);
	snprintf(portstr, sizeof portstr, "%d", port);
	*code = DT_ECONNECT;
	rc = getaddrinfo(host, portstr, &hints, &res);      /* owns: res */
	if (rc != 0) {
		snprintf(err, errsz, "cannot use host %s: %s", host, gai_strerror(rc));
		return -1;
	}
	snprintf(err, errsz, "no address to connect to");
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		int soerr = 0;
		socklen_t sl = sizeof soerr;
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			snprintf(err, errsz, "socket: %s", strerror(errno));
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (errno == EINPROGRESS) {
			rc = dt_wait_fd(fd, POLLOUT, deadline);
			if (rc == 0) {
				*code = DT_ETIMEOUT;
				snprintf(err, errsz, "timed out connecting");
				close(fd);
				fd = -1;
				break;
			}
			if (rc > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0
			    && soerr == 0)
				break;
			errno = rc < 0 ? errno : soerr;
		}
		snprintf(err, errsz, "%s", strerror(errno));
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd >= 0)
		*code = DT_OK;
	return fd;
}

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

/* core.http_get(host, port, path [, deadline]) -> status, body | nil, message, code
 * A plain HTTP/1.1 GET with "Connection: close" and no Origin header; the
 * body is read by Content-Length, chunks or until the server closes, and
 * may not exceed 1 MiB. */
static int l_http_get(lua_State *L)
{
	const char *host = luaL_checkstring(L, 1);
	int port = dt_check_port(L, 2);
	const char *path = luaL_checkstring(L, 3);
	double deadline = dt_optdeadline(L, 4);
	char peer[96], err[256], req[2048], val[64];
	dt_buf in = {NULL, 0, 0};
	size_t reqlen, sent = 0, head = 0, body_len = 0, want = (size_t)-1;
	int fd, code = DT_OK, status = 0, chunked = 0, eof = 0;

	luaL_argcheck(L, path[0] == '/' && strpbrk(path, " \r\n") == NULL, 3,
	              "path must start with '/' and hold no spaces or line breaks");
	luaL_argcheck(L, strpbrk(host, " \r\n/") == NULL, 1, "bad host");
	dt_format_peer(peer, sizeof peer, host, port);
	reqlen = (size_t)snprintf(req, sizeof req,
		"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nAccept: */*\r\n\r\n", path, peer);
	luaL_argcheck(L, reqlen < sizeof req, 3, "path too long");

	fd = http_connect(host, port, deadline, &code, err, sizeof err);
	if (fd < 0) {
		char msg[400];
		snprintf(msg, sizeof msg, "%s %s: %s", code == DT_ETIMEOUT ? "timed out connecting to"
		         : "cannot connect to", peer, err);
		return dt_push_fail(L, code, msg);
	}
	while (sent < reqlen) {
		ssize_t n = send(fd, req + sent, reqlen - sent, MSG_NOSIGNAL);
		if (n > 0) {
			sent += (size_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
			if (dt_wait_fd(fd, POLLOUT, deadline) == 0) {
				code = DT_ETIMEOUT;
				snprintf(err, sizeof err, "timed out sending the request");
				goto done;
			}
		} else {
			code = DT_ECONNECT;
			snprintf(err, sizeof err, "sending the request: %s", strerror(errno));
			goto done;
		}
	}

	/* Read until the headers and the body they announce are in, or EOF. */
	while (!eof && (head == 0 || in.len < want)) {
		ssize_t n;
		if (dt_buf_reserve(&in, 65536) != 0) {
			code = DT_ENOMEM;
			snprintf(err, sizeof err, "out of memory reading the response");
			goto done;
		}
		n = recv(fd, in.data + in.len, in.cap - in.len - 1, 0);
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
					    && has_token_ci(val, "chunked"))
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
					if (status == 204 || status == 304 || (status >= 100 && status < 200))
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
		} else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
			int rc = dt_wait_fd(fd, POLLIN, deadline);
			if (rc == 0) {
				code = DT_ETIMEOUT;
				snprintf(err, sizeof err, "timed out reading the response");
				goto done;
			}
		} else {
			code = DT_ECONNECT;
			snprintf(err, sizeof err, "reading the response: %s", strerror(errno));
			goto done;
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
	close(fd);
	if (code != DT_OK) {
		char msg[400];
		dt_buf_free(&in);
		snprintf(msg, sizeof msg, "GET http://%s%s: %s", peer, path, err);
		return dt_push_fail(L, code, msg);
	}
	lua_pushinteger(L, status);
	lua_pushlstring(L, in.data + head, body_len);
	dt_buf_free(&in);
	return 2;
}

void dt_http_open(lua_State *L)
{
	lua_pushcfunction(L, l_http_get);
	lua_setfield(L, -2, "http_get");
}
