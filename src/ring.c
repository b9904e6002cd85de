/* ring.c - the stderr ring (see ring.h). Depends on: base.h. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "ring.h"

struct dt_ring {
	int refs;
	size_t cap, start, len;
	char *data;         /* owned */
};

dt_ring *dt_ring_new(size_t cap)
{
	dt_ring *r = calloc(1, sizeof *r);          /* owns: r, freed by the last unref */
	if (r == NULL)
		return NULL;
	r->data = malloc(cap > 0 ? cap : 1);        /* owns: r->data */
	if (r->data == NULL) {
		free(r);
		return NULL;
	}
	r->cap = cap > 0 ? cap : 1;
	r->refs = 1;
	return r;
}

void dt_ring_ref(dt_ring *r)
{
	if (r != NULL)
		r->refs++;
}

void dt_ring_unref(dt_ring *r)
{
	if (r != NULL && --r->refs == 0) {
		free(r->data);                          /* frees: r->data */
		free(r);                                /* frees: r */
	}
}

void dt_ring_push(dt_ring *r, const char *p, size_t n)
{
	size_t i;
	if (n >= r->cap) {                 /* keep only the tail */
		p += n - r->cap;
		n = r->cap;
	}
	for (i = 0; i < n; i++) {
		size_t at = (r->start + r->len) % r->cap;
		r->data[at] = p[i];
		if (r->len < r->cap)
			r->len++;
		else
			r->start = (r->start + 1) % r->cap;
	}
}

/* At most this much per call: a child that writes its stderr without end
 * must not keep the caller here past its deadline (poll says when there is
 * more). */
#define DRAIN_MAX ((size_t)256 * 1024)

int dt_ring_drain(dt_ring *r, int fd)
{
	char buf[4096];
	size_t taken = 0;
	while (taken < DRAIN_MAX) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n > 0) {
			if (r != NULL)
				dt_ring_push(r, buf, (size_t)n);
			taken += (size_t)n;
			continue;
		}
		if (n == 0)
			return -1;
		if (errno == EINTR)
			continue;
		return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
	}
	return 0;
}

void dt_ring_drain_fd(dt_ring *r, int *fd)
{
	if (*fd >= 0 && dt_ring_drain(r, *fd) < 0) {
		close(*fd);
		*fd = -1;
	}
}

void dt_ring_pushlua(lua_State *L, const dt_ring *r)
{
	luaL_Buffer b;
	size_t i;
	luaL_buffinit(L, &b);
	for (i = 0; r != NULL && i < r->len; i++)
		luaL_addchar(&b, r->data[(r->start + i) % r->cap]);
	luaL_pushresult(&b);
}
