/* ring.h - the last bytes a child wrote to its stdout/stderr.
 *
 * A refcounted ring: the Process (process.c) creates it and holds one
 * reference; the pipe transport (pipe.c) holds another, because it is the
 * one waiting on the child's output while the Process is idle. Whoever
 * reads the child's stderr descriptor drains it into the ring.
 * Depends on: base.h. */
#ifndef DT_RING_H
#define DT_RING_H

#include "base.h"

typedef struct dt_ring dt_ring;

dt_ring *dt_ring_new(size_t cap);           /* one reference; NULL out of memory */
void dt_ring_ref(dt_ring *r);
void dt_ring_unref(dt_ring *r);             /* frees on the last one; NULL is fine */
void dt_ring_push(dt_ring *r, const char *p, size_t n);
/* Reads what the non-blocking fd has now into the ring (r may be NULL:
 * the bytes are dropped). Returns -1 on EOF or error, else 0. */
int dt_ring_drain(dt_ring *r, int fd);
/* Drains *fd into r; closes it and sets *fd = -1 on EOF. */
void dt_ring_drain_fd(dt_ring *r, int *fd);
/* Pushes the bytes held, oldest first. */
void dt_ring_pushlua(lua_State *L, const dt_ring *r);

#endif
