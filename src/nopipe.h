/* nopipe.h - a write that may raise SIGPIPE (nopipe.c). Include after the
 * file's feature macro (sigset_t is POSIX).
 *
 *   dt_nopipe np;
 *   dt_nopipe_begin(&np);
 *   ... the writes ...
 *   dt_nopipe_end(&np, raised);
 *
 * raised > 0 when a write failed with EPIPE, < 0 when unknown (another
 * library wrote: OpenSSL, libwebsockets), 0 when none failed so. Keeps
 * errno. The host's disposition of SIGPIPE is never changed. */
#ifndef DT_NOPIPE_H
#define DT_NOPIPE_H

#include <signal.h>

typedef struct dt_nopipe {
	sigset_t old;
	int was_pending;
	int saved_errno;
} dt_nopipe;

void dt_nopipe_begin(dt_nopipe *s);
void dt_nopipe_end(dt_nopipe *s, int raised);

#endif
