/* stream.c - a client byte stream over TCP, plain or TLS, with deadlines.
 * Depends on: stream.h, net.h.
 *
 * The socket is non-blocking; every wait is a poll() bounded by the
 * caller's absolute deadline, the TLS handshake included. A name that is
 * not a numeric address is looked up with getaddrinfo_a, so a slow DNS
 * server cannot outlast the deadline either. TLS verifies the server's
 * certificate (chain and name) against the system store or opts.ca_file;
 * only opts.insecure turns that off. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "stream.h"
#include "net.h"

static int numeric_family(const char *host)
{
	unsigned char tmp[sizeof(struct in6_addr)];
	if (inet_pton(AF_INET, host, tmp) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, host, tmp) == 1)
		return AF_INET6;
	return 0;
}

static void addr_string(const struct addrinfo *ai, char *out, size_t outsz)
{
	out[0] = '\0';
	if (getnameinfo(ai->ai_addr, ai->ai_addrlen, out, (socklen_t)outsz, NULL, 0,
	                NI_NUMERICHOST) != 0)
		out[0] = '\0';
}

int dt_resolve(const char *host, double deadline, char *out, size_t outsz,
               char *err, size_t errsz)
{
	struct gaicb *req;
	struct gaicb *list[1];
	struct addrinfo *hints;
	int rc;
	if (numeric_family(host) != 0 || strcmp(host, "localhost") == 0) {
		snprintf(out, outsz, "%s", strcmp(host, "localhost") == 0 ? "127.0.0.1" : host);
		return DT_OK;
	}
	/* Heap, not stack: if the lookup cannot be cancelled at the deadline,
	 * the resolver thread still writes here, and it is left to it. */
	req = calloc(1, sizeof *req + sizeof *hints + strlen(host) + 1);
	if (req == NULL) {
		snprintf(err, errsz, "out of memory");
		return DT_ENOMEM;
	}
	hints = (struct addrinfo *)(req + 1);
	hints->ai_family = AF_UNSPEC;
	hints->ai_socktype = SOCK_STREAM;
	req->ar_name = strcpy((char *)(hints + 1), host);
	req->ar_request = hints;
	list[0] = req;
	rc = getaddrinfo_a(GAI_NOWAIT, list, 1, NULL);
	if (rc != 0) {
		snprintf(err, errsz, "cannot look up %s: %s", host, gai_strerror(rc));
		free(req);
		return DT_ECONNECT;
	}
	for (;;) {
		const struct gaicb *wait[1];
		struct timespec ts, *tsp = NULL;
		int ms = dt_poll_ms(deadline);
		wait[0] = req;
		if (ms >= 0) {
			ts.tv_sec = ms / 1000;
			ts.tv_nsec = (long)(ms % 1000) * 1000000L;
			tsp = &ts;
		}
		rc = gai_error(req);
		if (rc != EAI_INPROGRESS)
			break;
		if (ms == 0) {
			if (gai_cancel(req) == EAI_CANCELED || gai_error(req) != EAI_INPROGRESS) {
				if (req->ar_result != NULL)
					freeaddrinfo(req->ar_result);
				free(req);
			}
			/* else: still running; the request is left to the resolver */
			snprintf(err, errsz, "timed out looking up %s", host);
			return DT_ETIMEOUT;
		}
		gai_suspend(wait, 1, tsp);
	}
	if (rc != 0 || req->ar_result == NULL) {
		snprintf(err, errsz, "cannot look up %s: %s", host, gai_strerror(rc));
		if (req->ar_result != NULL)
			freeaddrinfo(req->ar_result);
		free(req);
		return DT_ECONNECT;
	}
	addr_string(req->ar_result, out, outsz);
	freeaddrinfo(req->ar_result);
	free(req);
	if (out[0] == '\0') {
		snprintf(err, errsz, "cannot look up %s", host);
		return DT_ECONNECT;
	}
	return DT_OK;
}

/* Connects a non-blocking socket to addr:port. */
static int tcp_connect(const char *addr, int port, double deadline, int *fdp,
                       char *err, size_t errsz)
{
	struct addrinfo hints, *res = NULL;
	char portstr[16];
	int fd, rc, soerr = 0;
	socklen_t sl = sizeof soerr;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | AI_NUMERICHOST;
	snprintf(portstr, sizeof portstr, "%d", port);
	rc = getaddrinfo(addr, portstr, &hints, &res);      /* owns: res */
	if (rc != 0) {
		snprintf(err, errsz, "cannot use address %s: %s", addr, gai_strerror(rc));
		return DT_ECONNECT;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errsz, "socket: %s", strerror(errno));
		freeaddrinfo(res);
		return DT_ESYSTEM;
	}
	rc = connect(fd, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	if (rc != 0 && errno != EINPROGRESS) {
		snprintf(err, errsz, "%s", strerror(errno));
		close(fd);
		return DT_ECONNECT;
	}
	if (rc != 0) {
		rc = dt_wait_fd(fd, POLLOUT, deadline);
		if (rc == 0) {
			snprintf(err, errsz, "timed out connecting");
			close(fd);
			return DT_ETIMEOUT;
		}
		if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0) {
			snprintf(err, errsz, "%s", strerror(rc < 0 ? errno : soerr));
			close(fd);
			return DT_ECONNECT;
		}
	}
	*fdp = fd;
	return DT_OK;
}

/* The last OpenSSL error as text (and the queue cleared). */
static void ssl_why(char *err, size_t errsz, const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[200];
	if (e != 0) {
		ERR_error_string_n(e, buf, sizeof buf);
		snprintf(err, errsz, "%s: %s", what, buf);
	} else {
		snprintf(err, errsz, "%s", what);
	}
	ERR_clear_error();
}

/* Waits as SSL asks after a WANT_READ / WANT_WRITE. */
static int ssl_wait(dt_stream *s, int sslerr, double deadline)
{
	short ev = sslerr == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN;
	return dt_wait_fd(s->fd, ev, deadline);
}

static int tls_start(dt_stream *s, const dt_tls_opts *tls, double deadline,
                     char *err, size_t errsz)
{
	SSL_CTX *ctx;
	SSL *ssl;
	const char *name = tls->server_name;
	ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL) {
		ssl_why(err, errsz, "cannot create a TLS context");
		return DT_ECONNECT;
	}
	s->ctx = ctx;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (tls->insecure) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	} else {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		if (tls->ca_file != NULL) {
			if (SSL_CTX_load_verify_locations(ctx, tls->ca_file, NULL) != 1) {
				ssl_why(err, errsz, "cannot read the CA file");
				return DT_ECONNECT;
			}
		} else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
			ssl_why(err, errsz, "cannot load the system's certificates");
			return DT_ECONNECT;
		}
	}
	ssl = SSL_new(ctx);
	if (ssl == NULL) {
		ssl_why(err, errsz, "cannot create a TLS connection");
		return DT_ECONNECT;
	}
	s->ssl = ssl;
	SSL_set_mode(ssl, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (name != NULL && name[0] != '\0') {
		if (numeric_family(name) == 0)
			SSL_set_tlsext_host_name(ssl, name);      /* SNI: names only */
		if (!tls->insecure) {
			X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
			X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
			if (numeric_family(name) != 0 ? X509_VERIFY_PARAM_set1_ip_asc(param, name) != 1
			    : X509_VERIFY_PARAM_set1_host(param, name, 0) != 1) {
				snprintf(err, errsz, "cannot check the certificate against %s", name);
				return DT_ECONNECT;
			}
		}
	}
	if (SSL_set_fd(ssl, s->fd) != 1) {
		ssl_why(err, errsz, "cannot attach TLS to the socket");
		return DT_ECONNECT;
	}
	for (;;) {
		int rc = SSL_connect(ssl), e;
		if (rc == 1)
			return DT_OK;
		e = SSL_get_error(ssl, rc);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			int w = ssl_wait(s, e, deadline);
			if (w == 0) {
				snprintf(err, errsz, "timed out in the TLS handshake");
				return DT_ETIMEOUT;
			}
			if (w > 0)
				continue;
		}
		if (SSL_get_verify_result(ssl) != X509_V_OK) {
			snprintf(err, errsz, "TLS handshake failed: certificate verify failed (%s)",
			         X509_verify_cert_error_string(SSL_get_verify_result(ssl)));
			ERR_clear_error();
		} else {
			ssl_why(err, errsz, "TLS handshake failed");
		}
		return DT_ECONNECT;
	}
}

int dt_stream_open(dt_stream *s, const char *host, int port, const dt_tls_opts *tls,
                   double deadline, char *err, size_t errsz)
{
	char addr[INET6_ADDRSTRLEN + 8];
	int rc;
	s->fd = -1;
	s->ssl = s->ctx = NULL;
	rc = dt_resolve(host, deadline, addr, sizeof addr, err, errsz);
	if (rc != DT_OK)
		return rc;
	rc = tcp_connect(addr, port, deadline, &s->fd, err, errsz);
	if (rc != DT_OK)
		return rc;
	if (tls != NULL && tls->on) {
		rc = tls_start(s, tls, deadline, err, errsz);
		if (rc != DT_OK) {
			dt_stream_close(s);
			return rc;
		}
	}
	return DT_OK;
}

int dt_stream_write(dt_stream *s, const char *buf, size_t len, double deadline,
                    char *err, size_t errsz)
{
	size_t sent = 0;
	while (sent < len) {
		if (s->ssl != NULL) {
			int n = SSL_write((SSL *)s->ssl, buf + sent,
			                  (int)(len - sent > 1 << 30 ? 1 << 30 : len - sent));
			if (n > 0) {
				sent += (size_t)n;
				continue;
			}
			n = SSL_get_error((SSL *)s->ssl, n);
			if (n == SSL_ERROR_WANT_READ || n == SSL_ERROR_WANT_WRITE) {
				if (ssl_wait(s, n, deadline) == 0) {
					snprintf(err, errsz, "timed out sending the request");
					return DT_ETIMEOUT;
				}
				continue;
			}
			ssl_why(err, errsz, "sending the request failed");
			return DT_ECONNECT;
		} else {
			ssize_t n = send(s->fd, buf + sent, len - sent, MSG_NOSIGNAL);
			if (n > 0) {
				sent += (size_t)n;
			} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
				if (dt_wait_fd(s->fd, POLLOUT, deadline) == 0) {
					snprintf(err, errsz, "timed out sending the request");
					return DT_ETIMEOUT;
				}
			} else {
				snprintf(err, errsz, "sending the request: %s", strerror(errno));
				return DT_ECONNECT;
			}
		}
	}
	return DT_OK;
}

ssize_t dt_stream_read(dt_stream *s, char *buf, size_t cap, double deadline,
                       int *code, char *err, size_t errsz)
{
	for (;;) {
		if (s->ssl != NULL) {
			int n = SSL_read((SSL *)s->ssl, buf, (int)(cap > 1 << 30 ? 1 << 30 : cap));
			if (n > 0)
				return n;
			n = SSL_get_error((SSL *)s->ssl, n);
			if (n == SSL_ERROR_ZERO_RETURN)
				return 0;
			if (n == SSL_ERROR_WANT_READ || n == SSL_ERROR_WANT_WRITE) {
				if (ssl_wait(s, n, deadline) == 0) {
					*code = DT_ETIMEOUT;
					snprintf(err, errsz, "timed out reading the response");
					return -1;
				}
				continue;
			}
			if (n == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
				ERR_clear_error();
				return 0;           /* closed without close_notify: the end */
			}
			*code = DT_ECONNECT;
			ssl_why(err, errsz, "reading the response failed");
			return -1;
		} else {
			ssize_t n = recv(s->fd, buf, cap, 0);
			if (n >= 0)
				return n;
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
				if (dt_wait_fd(s->fd, POLLIN, deadline) == 0) {
					*code = DT_ETIMEOUT;
					snprintf(err, errsz, "timed out reading the response");
					return -1;
				}
				continue;
			}
			*code = DT_ECONNECT;
			snprintf(err, errsz, "reading the response: %s", strerror(errno));
			return -1;
		}
	}
}

void dt_stream_close(dt_stream *s)
{
	if (s->ssl != NULL)
		SSL_free((SSL *)s->ssl);
	if (s->ctx != NULL)
		SSL_CTX_free((SSL_CTX *)s->ctx);
	if (s->fd >= 0)
		close(s->fd);
	s->ssl = s->ctx = NULL;
	s->fd = -1;
}
