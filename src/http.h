/* http.h - reading HTTP/1.1 responses (http.c), apart so that the
 * parsers can be read and tested on their own. Depends on: base.h. */
#ifndef DT_HTTP_H
#define DT_HTTP_H

#include "base.h"

#define HTTP_MAX_HEAD ((size_t)64 * 1024)
#define HTTP_MAX_BODY ((size_t)1024 * 1024)

/* Finds the value of header name (case-insensitive) in head[0..n); copies
 * it to val. Returns 1 if found. */
int dt_http_find_header(const char *head, size_t n, const char *name, char *val, size_t valsz);
/* The status of "HTTP/1.x NNN ...", or -1. */
int dt_http_parse_status(const char *p, size_t n);
/* Walks a chunked body p[0..n) (NUL-terminated). With decode, moves the
 * payload to the front and sets *out to its length. Returns 1 when the body
 * is complete, 0 when more is needed, -1 when it is malformed, -2 when the
 * payload is over HTTP_MAX_BODY. */
int dt_http_dechunk(char *p, size_t n, int decode, size_t *out);

#endif
