/* transport.h - what a transport is, for the code that implements one
 * (pipe.c, ws.c) and the code that reads from one (transport.c, the Lua
 * face; cdp_decode.c, the CDP layer's decoding recv).
 *
 * A transport moves whole messages (bytes) with deadlines; it knows
 * nothing of what they mean. Depends on: base.h. */
#ifndef DT_TRANSPORT_H
#define DT_TRANSPORT_H

#include "base.h"

#define DT_TRANSPORT_MT "devtools_tools.Transport"
#define DT_DEFAULT_LIMIT ((size_t)256 * 1024 * 1024)

typedef struct dt_transport dt_transport;

typedef struct dt_transport_ops {
	const char *kind;                       /* "pipe", "websocket", ... */
	/* Send one message, waiting for the write until deadline. A message
	 * that could not be written in time stays queued and goes out later. */
	int (*send)(dt_transport *t, const char *msg, size_t len, double deadline);
	/* Wait for the next complete message. On DT_OK, *msg and *len point
	 * into memory the transport owns, valid until its next call. While it
	 * waits it also writes queued bytes (and drains the child's stderr). */
	int (*recv)(dt_transport *t, double deadline, const char **msg, size_t *len);
	/* Writes queued bytes until none is left (DT_OK), the deadline
	 * (DT_ETIMEOUT: the rest stays queued) or the peer is gone. */
	int (*flush)(dt_transport *t, double deadline);
	size_t (*queued)(dt_transport *t);      /* bytes queued, not yet written */
	/* What a foreign event loop watches: fds[0] readable means recv may
	 * have work, fds[1] is writable while bytes are queued, fds[2] (or -1)
	 * must be drained too (a child's stderr). -1 where closed. */
	void (*fds)(dt_transport *t, int fds[3]);
	/* Is a complete message already buffered (recv would not block)? */
	int (*pending)(dt_transport *t);
	void (*close)(dt_transport *t);         /* idempotent: releases OS resources */
	void (*destroy)(dt_transport *t);       /* frees the struct; close was called */
	/* Extra state for __tostring, e.g. "pid 4242" or "127.0.0.1:9222". */
	void (*describe)(dt_transport *t, char *buf, size_t n);
	/* The caller is done with the message the last recv handed out: drop
	 * it now rather than at the next recv, so that the buffer one large
	 * message grew is given back before the caller goes on. */
	void (*release)(dt_transport *t);
	/* DT_STATE_*; on CLOSED t->err says why. NULL: open until closed. */
	int (*state)(dt_transport *t);
} dt_transport_ops;

enum { DT_STATE_CONNECTING, DT_STATE_OPEN, DT_STATE_CLOSED };

struct dt_transport {
	const dt_transport_ops *ops;
	size_t limit;           /* largest message accepted either way, bytes */
	int closed;             /* set once close ran or the peer went away */
	int no_wait;            /* close must not wait on the peer (from __gc) */
	char err[256];          /* message of the last failure */
	/* On too_large from recv: the first bytes of the dropped message, so
	 * the caller can tell whose reply it was ({"id":N,...). */
	char head[64];
	size_t head_len;
};

/* Wraps a heap transport in a new userdata (pushed); takes ownership. */
void dt_transport_push(lua_State *L, dt_transport *t);
/* The open transport at stack index arg, or NULL once closed (raises if
 * arg is not a Transport). */
dt_transport *dt_transport_check(lua_State *L, int arg);
/* Records an error message in t->err and returns code. */
int dt_transport_fail(dt_transport *t, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Pushes nil, t->err, the code's name (and on too_large the head of the
 * dropped message); returns how many. */
int dt_transport_push_fail(lua_State *L, dt_transport *t, int code);
/* After a recv that returned DT_OK: lets the transport drop the message. */
void dt_transport_release(dt_transport *t);

#endif
