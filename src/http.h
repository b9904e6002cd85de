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
/* Where a walk of a chunked body stopped: the offset of the next chunk's
 * size line, and the payload before it. {0, 0} at the start. */
typedef struct dt_chunks {
	size_t in, len;
} dt_chunks;
/* Walks a chunked body p[0..n) (NUL-terminated) from *at, and leaves *at at
 * the first chunk not yet complete: a body that comes in many reads is
 * walked once, not again from its start at each read. With decode (from
 * {0, 0} only), moves the payload to the front. Sets *out to the payload's
 * length once complete. Returns 1 when the body is complete, 0 when more is
 * needed, -1 when it is malformed, -2 when the payload is over
 * HTTP_MAX_BODY. */
int dt_http_dechunk(char *p, size_t n, int decode, dt_chunks *at, size_t *out);

#endif
