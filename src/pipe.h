/* pipe.h - the transport over a spawned browser's fds 3 and 4, and the
 * same NUL-framed messages over one connected socket.
 * Depends on: transport.h, ring.h. Used by: process.c (core.process.spawn),
 * unix.c (core.unix). */
#ifndef DT_PIPE_H
#define DT_PIPE_H

#include "transport.h"
#include "ring.h"

/* Takes wfd, rfd and errfd (may be -1); takes its own reference on ring. */
dt_transport *dt_pipe_new(int wfd, int rfd, int errfd, dt_ring *ring, long pid);
/* Takes the connected socket fd (made non-blocking); peer is shown by
 * tostring (copied, cut to 111 bytes). NULL: out of memory (fd is the
 * caller's still). */
dt_transport *dt_pipe_new_socket(int fd, const char *peer);

#endif
