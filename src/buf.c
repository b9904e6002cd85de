/* buf.c - the growable byte buffer every transport and codec uses.
 * Depends on: base.h only. */
#include <stdlib.h>

#include "base.h"

int dt_buf_reserve(dt_buf *b, size_t extra)
{
	size_t need, cap;
	char *p;
	if (extra > (size_t)-1 - b->len)
		return -1;
	need = b->len + extra;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < need)
		cap = cap > (size_t)-1 / 2 ? need : cap * 2;
	p = realloc(b->data, cap);          /* owns: b->data */
	if (p == NULL)
		return -1;
	b->data = p;
	b->cap = cap;
	return 0;
}

void dt_buf_free(dt_buf *b)
{
	free(b->data);                      /* frees: b->data */
	b->data = NULL;
	b->len = b->cap = 0;
}

#define TRIM_ABOVE ((size_t)4 << 20)

void dt_buf_trim(dt_buf *b)
{
	size_t cap;
	char *p;
	if (b->cap <= TRIM_ABOVE)
		return;
	if (b->len == 0) {
		dt_buf_free(b);                 /* frees: b->data */
		return;
	}
	if (b->len > b->cap / 4)
		return;
	cap = b->len < 32768 ? 65536 : 2 * b->len;
	p = realloc(b->data, cap);          /* owns: b->data (shrunk; NULL keeps the old block) */
	if (p != NULL) {
		b->data = p;
		b->cap = cap;
	}
}
