/* pipe.h - the transport over a spawned browser's fds 3 and 4.
 * Depends on: transport.h, ring.h. Used by: process.c (core.process.spawn). */
#ifndef DT_PIPE_H
#define DT_PIPE_H

#include "transport.h"
#include "ring.h"

/* Takes wfd, rfd and errfd (may be -1); takes its own reference on ring. */
dt_transport *dt_pipe_new(int wfd, int rfd, int errfd, dt_ring *ring, long pid);

#endif
