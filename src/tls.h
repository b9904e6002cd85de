/* tls.h - what the socket code needs for TLS clients and names: a bounded
 * name lookup (ws.c and http.c hand an address on), and an OpenSSL client
 * object set up to verify the server (http.c drives its handshake and I/O
 * on its own non-blocking socket). Depends on: base.h. */
#ifndef DT_TLS_H
#define DT_TLS_H

#include "base.h"

typedef struct dt_tls_opts {
	const char *server_name;    /* name the certificate must hold (and SNI) */
	const char *ca_file;        /* PEM file of trusted CAs; NULL: the system store */
	int insecure;               /* accept any certificate (only when asked) */
} dt_tls_opts;

/* Resolves host (a numeric address, "localhost", or a name looked up with
 * a wait bounded by deadline) to a numeric address string in out. Returns
 * DT_OK, DT_ETIMEOUT or DT_ECONNECT with err set. */
int dt_resolve(const char *host, double deadline, char *out, size_t outsz,
               char *err, size_t errsz);
/* A client SSL object on socket fd, checking the server's certificate
 * (chain and name) unless insecure. *ssl and *ctx (SSL *, SSL_CTX *) are
 * the caller's to free with dt_tls_free. Returns DT_OK or DT_ECONNECT
 * with err set. */
int dt_tls_client(int fd, const dt_tls_opts *o, void **ssl, void **ctx,
                  char *err, size_t errsz);
void dt_tls_free(void **ssl, void **ctx);
/* Why a handshake (or read/write) failed, after SSL_get_error said so:
 * the verification result if the certificate was refused, else OpenSSL's
 * error queue (cleared). */
void dt_tls_why(void *ssl, const char *what, char *err, size_t errsz);

#endif
