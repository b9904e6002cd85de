/* stream.h - one client byte stream over TCP, plain or TLS (OpenSSL), with
 * deadlines: what http.c speaks HTTP over, and the bounded name lookup
 * ws.c uses before it hands an address to libwebsockets.
 * Depends on: base.h. */
#ifndef DT_STREAM_H
#define DT_STREAM_H

#include <sys/types.h>
#include "base.h"

typedef struct dt_tls_opts {
	int on;                     /* speak TLS */
	const char *server_name;    /* name the certificate must hold (and SNI) */
	const char *ca_file;        /* PEM file of trusted CAs; NULL: the system store */
	int insecure;               /* accept any certificate (only when asked) */
} dt_tls_opts;

typedef struct dt_stream {
	int fd;                     /* -1 when closed */
	void *ssl;                  /* SSL *, or NULL for plain TCP */
	void *ctx;                  /* SSL_CTX *, or NULL */
} dt_stream;

/* Resolves host (a numeric address, or a name looked up with a bounded
 * wait) to a numeric address string in out. Returns DT_OK, DT_ETIMEOUT or
 * DT_ECONNECT with err set. */
int dt_resolve(const char *host, double deadline, char *out, size_t outsz,
               char *err, size_t errsz);
/* Connects (and with tls->on, does the TLS handshake, verifying the
 * certificate unless insecure). Returns DT_OK or a code with err set. */
int dt_stream_open(dt_stream *s, const char *host, int port, const dt_tls_opts *tls,
                   double deadline, char *err, size_t errsz);
/* Writes all of buf. Returns DT_OK or a code with err set. */
int dt_stream_write(dt_stream *s, const char *buf, size_t len, double deadline,
                    char *err, size_t errsz);
/* Reads what is there (waiting for some): > 0 bytes, 0 at the end of the
 * stream, -1 with *code and err set. */
ssize_t dt_stream_read(dt_stream *s, char *buf, size_t cap, double deadline,
                       int *code, char *err, size_t errsz);
void dt_stream_close(dt_stream *s);

#endif
