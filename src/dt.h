/* dt.h - what the C files of devtools_tools.core share.
 *
 * Nothing here is exported from the shared object: only luaopen_* is
 * (see the visibility flags in the Makefile). */
#ifndef DT_H
#define DT_H

#include <stddef.h>
#include "compat.h"

/* Registry names of our metatables. */
#define DT_ARRAY_MT     "devtools_tools.array"      /* marks JSON arrays */
#define DT_TRANSPORT_MT "devtools_tools.Transport"
#define DT_PROCESS_MT   "devtools_tools.Process"
#define DT_REGEX_MT     "devtools_tools.Regex"

/* JSON null: a light userdata holding NULL, the same value as cjson.null. */
#define dt_pushnull(L) lua_pushlightuserdata((L), NULL)

/* ---- time: absolute deadlines on CLOCK_MONOTONIC, in seconds ---------- */
/* A deadline < 0 means "no deadline" (wait forever). */
double dt_now(void);
/* Milliseconds for poll() until deadline: -1 for no deadline, else >= 0,
 * rounded up so that poll never returns just before the deadline. */
int dt_poll_ms(double deadline);
/* Reads an optional deadline argument (nil or number). */
double dt_optdeadline(lua_State *L, int arg);

/* ---- growable byte buffer --------------------------------------------- */
typedef struct dt_buf {
	char *data;     /* owned; NULL when empty and never grown */
	size_t len;     /* bytes used */
	size_t cap;     /* bytes allocated */
} dt_buf;
int dt_buf_reserve(dt_buf *b, size_t extra);     /* 0 ok, -1 out of memory */
void dt_buf_free(dt_buf *b);
/* Gives back a buffer that one large message left big (transport.c). */
void dt_buf_trim(dt_buf *b);

/* ---- runtime failure codes (the fixed vocabulary seen from Lua) -------- */
enum {
	DT_OK = 0,
	DT_ETIMEOUT,        /* "timeout" */
	DT_ECLOSED,         /* "closed" */
	DT_ETOOLARGE,       /* "too_large" */
	DT_ECONNECT,        /* "connect_failed" */
	DT_ESPAWN           /* "spawn_failed" */
};
const char *dt_code_name(int code);

/* ---- transports -------------------------------------------------------- */
typedef struct dt_transport dt_transport;

typedef struct dt_transport_ops {
	const char *kind;                       /* "pipe", "websocket", ... */
	/* Send one message, waiting for the write until deadline. A message
	 * that could not be written in time stays queued and goes out later. */
	int (*send)(dt_transport *t, const char *msg, size_t len, double deadline);
	/* Wait for the next complete message. On DT_OK, *msg and *len point
	 * into memory the transport owns, valid until its next call. */
	int (*recv)(dt_transport *t, double deadline, const char **msg, size_t *len);
	int (*fd)(dt_transport *t);             /* for foreign event loops; -1 if closed */
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
} dt_transport_ops;

struct dt_transport {
	const dt_transport_ops *ops;
	size_t limit;           /* largest message accepted either way, bytes */
	int closed;             /* set once close ran or the peer went away */
	char err[256];          /* message of the last failure */
	/* On too_large from recv: the first bytes of the dropped message, so
	 * the caller can tell whose reply it was ({"id":N,...). */
	char head[64];
	size_t head_len;
};

#define DT_DEFAULT_LIMIT ((size_t)256 * 1024 * 1024)

/* Wraps a heap transport in a new userdata (pushed); takes ownership. */
void dt_transport_push(lua_State *L, dt_transport *t);
/* Records an error message in t->err and returns code. */
int dt_transport_fail(dt_transport *t, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The pipe transport over a spawned browser's fds 3 and 4 (pipe.c). */
typedef struct dt_ring dt_ring;
dt_transport *dt_pipe_new(int wfd, int rfd, int errfd, dt_ring *ring, long pid);

/* ---- stderr ring: the last bytes a child wrote, shared and refcounted -- */
struct dt_ring {
	int refs;
	size_t cap, start, len;
	char *data;
};
dt_ring *dt_ring_new(size_t cap);
void dt_ring_ref(dt_ring *r);
void dt_ring_unref(dt_ring *r);
void dt_ring_push(dt_ring *r, const char *p, size_t n);
/* Reads what fd has now (non-blocking) into the ring; returns -1 on EOF. */
int dt_ring_drain(dt_ring *r, int fd);
void dt_ring_pushlua(lua_State *L, const dt_ring *r);

/* ---- JSON (json.c) ----------------------------------------------------- */
#define DT_JSON_MAX_DEPTH 1000
/* Decodes s[0..len) and pushes the value; returns 1. On error pushes
 * nothing, writes a message to err and returns 0. */
int dt_json_decode(lua_State *L, const char *s, size_t len, int max_depth,
                   char *err, size_t errsz);
/* The same for a CDP message, with ids the stack index of a table (or 0).
 * When the message's "id" comes before its "result", is a key of ids with
 * a true value, and result.result.value is a string, that string does not
 * become a Lua string: its text is set aside, unescaped, in a userdata.
 * Then pushes the message, the table that lacks "value" and the text, and
 * returns 3; else as dt_json_decode (1 or 0). The text does not point into
 * s, so s may go before dt_json_decode_aside. */
int dt_json_decode_cdp(lua_State *L, const char *s, size_t len, int ids,
                       char *err, size_t errsz);
/* Stack: table text. Decodes the text into table.json, or on failure sets
 * table.json_error to why it is not JSON; gives back the text's pages as
 * it goes and pops both. */
void dt_json_decode_aside(lua_State *L);

/* ---- the parts of the module, each adds its functions to the table on top */
void dt_json_open(lua_State *L);
void dt_regex_open(lua_State *L);
void dt_transport_open(lua_State *L);
void dt_process_open(lua_State *L);
void dt_ws_open(lua_State *L);
void dt_fs_open(lua_State *L);
void dt_poll_open(lua_State *L);
int dt_rmtree(const char *path);      /* 0 ok, -1 with errno */

#endif
