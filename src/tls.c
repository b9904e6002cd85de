/* tls.c - bounded name lookups and OpenSSL client objects that verify the
 * server. Depends on: tls.h, net.h.
 *
 * A name that is not a numeric address is looked up with getaddrinfo_a, so
 * a slow DNS server cannot outlast the caller's deadline. A TLS client
 * checks the server's certificate chain against the system store or
 * opts.ca_file and its name against opts.server_name (an IP address is
 * checked as one); only opts.insecure turns that off. */
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

#include "tls.h"
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

int dt_tls_client(int fd, const dt_tls_opts *o, void **sslp, void **ctxp,
                  char *err, size_t errsz)
{
	SSL_CTX *ctx;
	SSL *ssl;
	const char *name = o->server_name;
	*sslp = *ctxp = NULL;
	ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL) {
		ssl_why(err, errsz, "cannot create a TLS context");
		return DT_ECONNECT;
	}
	*ctxp = ctx;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (o->insecure) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	} else {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		if (o->ca_file != NULL) {
			if (SSL_CTX_load_verify_locations(ctx, o->ca_file, NULL) != 1) {
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
	*sslp = ssl;
	SSL_set_mode(ssl, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
	if (name != NULL && name[0] != '\0') {
		if (numeric_family(name) == 0)
			SSL_set_tlsext_host_name(ssl, name);      /* SNI: names only */
		if (!o->insecure) {
			X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
			X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
			if (numeric_family(name) != 0 ? X509_VERIFY_PARAM_set1_ip_asc(param, name) != 1
			    : X509_VERIFY_PARAM_set1_host(param, name, 0) != 1) {
				snprintf(err, errsz, "cannot check the certificate against %s", name);
				return DT_ECONNECT;
			}
		}
	}
	if (SSL_set_fd(ssl, fd) != 1) {
		ssl_why(err, errsz, "cannot attach TLS to the socket");
		return DT_ECONNECT;
	}
	SSL_set_connect_state(ssl);
	return DT_OK;
}

void dt_tls_free(void **ssl, void **ctx)
{
	if (*ssl != NULL)
		SSL_free((SSL *)*ssl);
	if (*ctx != NULL)
		SSL_CTX_free((SSL_CTX *)*ctx);
	*ssl = *ctx = NULL;
}

void dt_tls_why(void *ssl, const char *what, char *err, size_t errsz)
{
	long v = ssl != NULL ? SSL_get_verify_result((SSL *)ssl) : X509_V_OK;
	if (v != X509_V_OK) {
		snprintf(err, errsz, "%s: certificate verify failed (%s)", what,
		         X509_verify_cert_error_string(v));
		ERR_clear_error();
	} else {
		ssl_why(err, errsz, what);
	}
}
