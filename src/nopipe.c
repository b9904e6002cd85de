/* nopipe.c - writes that cannot end the program with SIGPIPE, without
 * touching the host's disposition of it.
 *
 * A write to a pipe or socket whose reader is gone raises SIGPIPE, whose
 * default action ends the process. A library must not change what the
 * host does on a signal (ignoring it, as LuaSocket does, is inherited by
 * every program the host starts, and replaces a handler of the host's), so
 * the signal is blocked in the calling thread for the write and one the
 * write raised is taken back before the mask is restored: the write fails
 * with EPIPE, which the caller reports. One that was pending before is
 * left pending. libpq does the same. Depends on nothing of ours. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <time.h>

#include "nopipe.h"

void dt_nopipe_begin(dt_nopipe *s)
{
	sigset_t pipe_set, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	s->was_pending = 0;
	s->saved_errno = errno;
	pthread_sigmask(SIG_BLOCK, &pipe_set, &s->old);
	if (sigismember(&s->old, SIGPIPE) && sigpending(&pending) == 0)
		s->was_pending = sigismember(&pending, SIGPIPE) == 1;
	errno = s->saved_errno;
}

void dt_nopipe_end(dt_nopipe *s, int raised)
{
	int e = errno;
	if (!s->was_pending && raised != 0) {
		sigset_t pipe_set, pending;
		sigemptyset(&pipe_set);
		sigaddset(&pipe_set, SIGPIPE);
		if (raised > 0 || (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1)) {
			static const struct timespec zero = { 0, 0 };
			while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
				;
		}
	}
	pthread_sigmask(SIG_SETMASK, &s->old, NULL);
	errno = e;
}
