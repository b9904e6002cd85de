/* ws.c - the WebSocket transport (libwebsockets). Depends on: transport.h,
 * net.h.
 *
 * Each connection has an lws context of its own, so that waiting on one
 * never services (or is delayed by) another, and closing one destroys
 * everything lws holds for it. lws calls back into our heap state (ws_t)
 * until its context is destroyed; the callbacks only move bytes between
 * lws and our buffers, never into Lua.
 *
 * Waiting: lws_service() in 4.1 ignores its timeout and blocks until socket
 * activity, so each wait arms an lws_sul timer at the caller's deadline
 * whose callback calls lws_cancel_service() to wake the poll.
 *
 * Receiving: the callback appends each fragment to one buffer holding a
 * queue of complete messages, each behind a small header, then the message
 * being received; bytes are copied once and never rescanned. A message over
 * the limit stops being buffered the moment it crosses it (memory stays
 * flat) and is queued as a marker, with its first bytes, that makes recv
 * return "too_large". Sending: messages are queued behind LWS_PRE bytes of
 * headroom and written in fragments of WS_FRAG bytes, one per WRITEABLE
 * callback, so a big message never makes lws copy it whole.
 *
 * lws 4.1.6 parses incoming frames one byte at a time (newer lws has a
 * block parser): about 6 ns a byte, most of the cost of a 64 MiB reply.
 * It holds a frame's payload back until its receive buffer is full, so a
 * frame head that declares an impossible length (more than WS_MAX_DECLARED)
 * is looked for after each turn of lws, not only when payload comes: such
 * a connection ends at once with "bad_message", where it would otherwise
 * wait for bytes no peer will send.
 *
 * Chromium answers 403 to any Origin header and 500 to a Host header that is
 * not an IP or localhost: we send no Origin and always set Host. Remote
 * endpoints (wss://, behind a proxy) may want more: opts.headers are added
 * to the handshake, and TLS is lws's (OpenSSL), verifying the server. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <libwebsockets.h>
#include <openssl/x509.h>

#include "transport.h"
#include "net.h"
#include "tls.h"
#include "nopipe.h"
#include "dt.h"

#define WS_FRAG ((size_t)256 * 1024)   /* bytes per outgoing fragment */
#define WS_RX_SIZE 65536                /* lws receive buffer per connection */
#define WS_CLOSE_WAIT 0.25              /* seconds close() waits for the close handshake */
/* The most a frame may say it carries. A frame over the size limit is
 * read through and dropped (too_large; the connection goes on), so a
 * real 300 MiB reply costs only that reply; but a frame of more than 1 TiB
 * comes from no browser, and reading it through at lws's 6 ns a byte
 * would take hours: the peer is broken or hostile. */
#define WS_MAX_DECLARED ((size_t)1 << 40)

enum { WS_CONNECTING, WS_OPEN, WS_GONE };

/* Bytes of a dropped message kept for the caller (dt_transport.head). */
#define RX_HEAD (sizeof(((dt_transport *)0)->head))

/* Header of one queued incoming message (stored unaligned, via memcpy). */
typedef struct {
	size_t len;         /* bytes that follow (of a dropped message: its head) */
	size_t dropped;     /* > 0: the message was this big and was dropped */
} rx_hdr;

typedef struct {
	dt_transport base;
	struct lws_context *ctx;    /* owned; NULL once closed */
	struct lws *wsi;            /* the connection while lws holds it, else NULL */
	lws_sorted_usec_list_t sul; /* wakes lws_service at a deadline */
	int state;
	int closing;                /* close(): send a close frame when writeable */
	char peer[96];              /* "host:port", for messages and __tostring */
	char why[200];              /* why the connection failed or ended */
	unsigned status;            /* HTTP status of a refused handshake, or 0 */
	dt_buf headers;             /* extra handshake headers: "name:\0value\0"... */
	int oom;                    /* the connection ended for want of memory */
	int opened;                 /* the handshake completed once */
	int fail_code;              /* why it is gone, when not DT_ECLOSED (or 0) */
	double connect_deadline;    /* async connect: the handshake's deadline, or -1 */

	dt_buf in;          /* [rx_hdr][bytes]... then the message being received */
	size_t in_start;    /* first queued message not yet handed out */
	size_t in_done;     /* end of the complete messages */
	size_t consumed;    /* bytes of the entry handed out last call */
	int receiving;      /* a header for the current message is at in_done */
	size_t dropped;     /* > 0 while dropping an over-limit message */

	dt_buf out;         /* LWS_PRE bytes of headroom, then queued bytes */
	size_t out_off;     /* next byte to hand to lws */
	dt_buf lens;        /* lengths (size_t) of the queued messages */
	size_t lens_head;   /* byte offset in lens of the message being written */
	size_t written;     /* bytes of that message already handed to lws */
} ws_t;

/* ---- waiting ------------------------------------------------------------ */

static void wake(lws_sorted_usec_list_t *sul)
{
	ws_t *w = lws_container_of(sul, ws_t, sul);
	lws_cancel_service(w->ctx);
}

static void gone(ws_t *w, const char *why);

/* A frame with `declared` bytes still to come (what its head declared,
 * less what lws has read of it): records why the connection must end when
 * that is more than any peer sends. Returns 1 then, else 0. */
static int impossible_frame(ws_t *w, size_t declared)
{
	if (declared <= WS_MAX_DECLARED)
		return 0;
	w->fail_code = DT_EBADMSG;
	snprintf(w->why, sizeof w->why, "%s declared a frame of more than 2^40 bytes "
	         "(%zu still to come): no peer sends that", w->peer, declared);
	return 1;
}

/* lws_service with SIGPIPE kept from the host: lws writes (TLS through
 * OpenSSL's write(), a close frame) inside it (see nopipe.h). Then the
 * frame being received is checked: lws says how much of it is still to
 * come as soon as its head is read, long before it hands over payload. */
static int service(ws_t *w, int timeout_ms)
{
	dt_nopipe np;
	int rc;
	dt_nopipe_begin(&np);
	rc = lws_service(w->ctx, timeout_ms);
	if (w->wsi != NULL && w->state == WS_OPEN
	    && impossible_frame(w, lws_remaining_packet_payload(w->wsi))) {
		struct lws *wsi = w->wsi;
		/* Closed now (we are outside lws's callbacks): CLOSED calls back,
		 * and gone() keeps the why set above. */
		lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
		if (w->wsi == wsi)              /* (compared, not used: it is freed) */
			gone(w, NULL);
	}
	dt_nopipe_end(&np, -1);
	return rc;
}

/* Services the connection until done(w) holds or the deadline passes.
 * Returns DT_OK or DT_ETIMEOUT. done must hold once the connection is gone
 * (or check the state itself), or this waits for the deadline. */
static int serve_until(ws_t *w, double deadline, int (*done)(ws_t *))
{
	int rc = DT_OK, armed = 0;
	while (!done(w)) {
		double left = deadline < 0 ? 1 : deadline - dt_now();
		if (w->state == WS_GONE && w->wsi == NULL) {
			/* nothing more can happen; let done() decide */
			break;
		}
		if (left <= 0) {
			service(w, -1);                   /* what is there now, no wait */
			if (!done(w))
				rc = DT_ETIMEOUT;
			break;
		}
		if (deadline >= 0) {
			/* Re-armed each round: a timer that fired early is gone. */
			lws_sul_schedule(w->ctx, 0, &w->sul, wake, (lws_usec_t)(left * 1e6) + 1);
			armed = 1;
		}
		if (service(w, 0) < 0) {
			w->state = WS_GONE;
			break;
		}
	}
	if (armed)
		lws_sul_cancel(&w->sul);
	return rc;
}

/* ---- receiving ------------------------------------------------------------ */

static void gone(ws_t *w, const char *why)
{
	if (w->why[0] == '\0' && why != NULL)
		snprintf(w->why, sizeof w->why, "%s", why);
	w->state = WS_GONE;
	w->wsi = NULL;
	w->base.closed = 1;
}

/* Queues a finished message (or its over-limit marker). */
static void finish_message(ws_t *w)
{
	rx_hdr h;
	h.len = w->in.len - w->in_done - sizeof h;
	h.dropped = w->dropped;
	memcpy(w->in.data + w->in_done, &h, sizeof h);
	w->in_done = w->in.len;
	w->receiving = 0;
	w->dropped = 0;
}

static int on_receive(ws_t *w, struct lws *wsi, const char *p, size_t n)
{
	size_t more = lws_remaining_packet_payload(wsi);
	if (more > WS_MAX_DECLARED - n && impossible_frame(w, n + more))
		return -1;                                  /* lws closes the connection */
	if (!w->receiving) {
		if (dt_buf_reserve(&w->in, sizeof(rx_hdr)) != 0)
			goto oom;
		w->in.len += sizeof(rx_hdr);       /* header written by finish_message */
		w->receiving = 1;
	}
	if (w->dropped > 0) {
		w->dropped += n;
	} else {
		size_t have = w->in.len - w->in_done - sizeof(rx_hdr);
		if (n > w->base.limit - have || have > w->base.limit) {
			/* Over the limit: keep only its head (so the caller can tell
			 * whose reply it was) and the count. */
			size_t keep = have < RX_HEAD ? have : RX_HEAD;
			size_t add = keep < RX_HEAD ? (RX_HEAD - keep < n ? RX_HEAD - keep : n) : 0;
			w->in.len = w->in_done + sizeof(rx_hdr) + keep;
			if (add > 0 && dt_buf_reserve(&w->in, add) == 0) {
				memcpy(w->in.data + w->in.len, p, add);
				w->in.len += add;
			}
			w->dropped = have + n;
		} else {
			/* The rest of this frame is known: reserve for it at once,
			 * as far as the limit allows. */
			size_t want = n, room = w->base.limit - have - n;
			want += more < room ? more : room;
			if (dt_buf_reserve(&w->in, want) != 0)
				goto oom;
			memcpy(w->in.data + w->in.len, p, n);
			w->in.len += n;
		}
	}
	if (lws_is_final_fragment(wsi) && more == 0)
		finish_message(w);
	return 0;
oom:
	snprintf(w->why, sizeof w->why, "out of memory receiving a message");
	w->oom = 1;
	return -1;                                  /* lws closes the connection */
}

/* ---- sending --------------------------------------------------------------- */

static int output_pending(const ws_t *w)
{
	return w->lens_head < w->lens.len;
}

/* Forgets every queued message (the headroom stays). A buffer one large
 * message grew is given back: lws copied what the socket did not take
 * (a 60 MB request kept 60 MB for the connection's life). */
static void reset_output(ws_t *w)
{
	w->out.len = w->out_off = LWS_PRE;
	w->lens.len = w->lens_head = 0;
	w->written = 0;
	dt_buf_trim(&w->out);
	dt_buf_trim(&w->lens);
}

/* Hands lws the next fragment of the head message. lws writes the frame
 * header into the LWS_PRE bytes before it (headroom, or bytes already
 * sent) and masks the payload in place; a part the socket does not take
 * is copied into lws's own buffer, so ours may move after this returns. */
static int on_writeable(ws_t *w, struct lws *wsi)
{
	size_t len, chunk;
	int flags;
	if (!output_pending(w)) {
		if (w->closing) {
			lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
			return -1;                  /* lws sends the close frame */
		}
		return 0;
	}
	memcpy(&len, w->lens.data + w->lens_head, sizeof len);
	chunk = len - w->written;
	if (chunk > WS_FRAG)
		chunk = WS_FRAG;
	flags = lws_write_ws_flags(LWS_WRITE_TEXT, w->written == 0,
	                           w->written + chunk == len);
	if (lws_write(wsi, (unsigned char *)w->out.data + w->out_off, chunk,
	              (enum lws_write_protocol)flags) < 0) {
		snprintf(w->why, sizeof w->why, "writing to %s failed", w->peer);
		return -1;
	}
	w->out_off += chunk;
	w->written += chunk;
	if (w->written == len) {
		w->lens_head += sizeof len;
		w->written = 0;
	}
	if (output_pending(w) || w->closing)
		lws_callback_on_writable(wsi);
	else
		reset_output(w);
	return 0;
}

/* ---- handshake headers --------------------------------------------------------- */

/* Adds the caller's headers (opts.headers) to the upgrade request. */
static int append_headers(ws_t *w, struct lws *wsi, unsigned char **p, size_t room)
{
	unsigned char *end = *p + room;
	size_t off = 0;
	while (off < w->headers.len) {
		const char *name = w->headers.data + off;
		const char *value = name + strlen(name) + 1;
		off = (size_t)(value - w->headers.data) + strlen(value) + 1;
		if (lws_add_http_header_by_name(wsi, (const unsigned char *)name,
		                                (const unsigned char *)value, (int)strlen(value),
		                                p, end) != 0) {
			snprintf(w->why, sizeof w->why, "the handshake headers do not fit");
			return -1;
		}
	}
	return 0;
}

/* Reads opts.headers (name -> value) into w->headers as "name:\0value\0"
 * pairs, refusing what would break the request. Raises on misuse (nothing
 * is allocated yet but w, which the caller frees on error: see below). */
static const char *read_headers(lua_State *L, int opts, dt_buf *out)
{
	const char *bad = NULL;
	lua_getfield(L, opts, "headers");
	if (lua_isnil(L, -1)) {
		lua_pop(L, 1);
		return NULL;
	}
	if (!lua_istable(L, -1)) {
		lua_pop(L, 1);
		return "headers must be a table";
	}
	lua_pushnil(L);
	while (bad == NULL && lua_next(L, -2) != 0) {
		size_t nl, vl;
		const char *name, *value;
		if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING) {
			bad = "headers: names and values must be strings";
		} else {
			name = lua_tolstring(L, -2, &nl);
			value = lua_tolstring(L, -1, &vl);
			if (nl == 0 || strspn(name, "!#$%&'*+-.^_`|~0123456789"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") != nl)
				bad = "headers: a name must be an HTTP token";
			else if (strlen(value) != vl || strpbrk(value, "\r\n") != NULL)
				bad = "headers: a value must not hold line breaks or NUL";
			else if (dt_buf_reserve(out, nl + vl + 3) != 0)
				bad = "out of memory";
			else {
				memcpy(out->data + out->len, name, nl);
				out->data[out->len + nl] = ':';
				out->data[out->len + nl + 1] = '\0';
				memcpy(out->data + out->len + nl + 2, value, vl + 1);
				out->len += nl + vl + 3;
			}
		}
		lua_pop(L, 1);
	}
	lua_pop(L, bad == NULL ? 1 : 2);
	return bad;
}

/* ---- the lws callback: moves bytes, never calls Lua ------------------------- */

static int ws_callback(struct lws *wsi, enum lws_callback_reasons reason,
                       void *user, void *in, size_t len)
{
	ws_t *w = (ws_t *)lws_context_user(lws_get_context(wsi));
	(void)user;
	if (w == NULL)
		return 0;
	switch (reason) {
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		w->wsi = wsi;
		w->state = WS_OPEN;
		w->opened = 1;
		if (output_pending(w))              /* queued while connecting (async) */
			lws_callback_on_writable(wsi);
		break;
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		w->status = lws_http_client_http_response(wsi);
		gone(w, in != NULL ? (const char *)in : "connection failed");
		break;
	case LWS_CALLBACK_OPENSSL_PERFORM_SERVER_CERT_VERIFICATION:
		/* user: the X509_STORE_CTX, in: the SSL, len: OpenSSL's verdict so
		 * far. Say why a certificate is refused (lws only reports "SSL err
		 * 1"); returning 0 keeps the verdict. */
		if (len == 0 && user != NULL && w->why[0] == '\0') {
			int e = X509_STORE_CTX_get_error((X509_STORE_CTX *)user);
			snprintf(w->why, sizeof w->why, "TLS handshake failed: certificate verify failed (%s)",
			         X509_verify_cert_error_string(e));
		}
		break;
	case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
		return append_headers(w, wsi, (unsigned char **)in, len);
	case LWS_CALLBACK_CLIENT_RECEIVE:
		return on_receive(w, wsi, (const char *)in, len);
	case LWS_CALLBACK_CLIENT_WRITEABLE:
		return on_writeable(w, wsi);
	case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
		if (len >= 2) {
			const unsigned char *c = (const unsigned char *)in;
			snprintf(w->why, sizeof w->why, "%s closed the connection (code %u)",
			         w->peer, (unsigned)(c[0] << 8 | c[1]));
		} else {
			snprintf(w->why, sizeof w->why, "%s closed the connection", w->peer);
		}
		break;
	case LWS_CALLBACK_CLIENT_CLOSED:
	case LWS_CALLBACK_WSI_DESTROY:
		if (wsi == w->wsi) {
			if (w->why[0] == '\0')
				snprintf(w->why, sizeof w->why, "the connection to %s was closed", w->peer);
			gone(w, NULL);
		}
		break;
	default:
		break;
	}
	return 0;
}

static const struct lws_protocols ws_protocols[] = {
	/* name, callback, per-session size, rx buffer, id, user, tx packet */
	{"devtools_tools", ws_callback, 0, WS_RX_SIZE, 0, NULL, WS_FRAG},
	{NULL, NULL, 0, 0, 0, NULL, 0}
};

/* ---- the transport ops ------------------------------------------------------- */

/* Why a connection that never opened failed: a code and a message. */
static int connect_failure(ws_t *w, char *msg, size_t n)
{
	if (w->state == WS_CONNECTING) {
		snprintf(msg, n, "timed out connecting to %s", w->peer);
		return DT_ETIMEOUT;
	}
	if (w->status != 0)
		snprintf(msg, n, "cannot connect to %s: the server answered HTTP %u (%s)",
		         w->peer, w->status, w->why);
	else
		snprintf(msg, n, "cannot connect to %s: %s", w->peer, w->why);
	return DT_ECONNECT;
}

/* An async connect: settles a handshake that failed or ran out of time
 * into WS_GONE with fail_code and why set. */
static void check_connect(ws_t *w)
{
	char msg[sizeof w->why];
	if (w->opened || w->fail_code != 0)
		return;
	if (w->state == WS_CONNECTING && w->connect_deadline >= 0
	    && dt_now() >= w->connect_deadline) {
		w->fail_code = connect_failure(w, msg, sizeof msg);
		memcpy(w->why, msg, sizeof msg);
		w->state = WS_GONE;
		w->base.closed = 1;                 /* ws_close destroys what lws holds */
	} else if (w->state == WS_GONE) {
		w->fail_code = connect_failure(w, msg, sizeof msg);
		memcpy(w->why, msg, sizeof msg);
	}
}

/* While connecting, no wait goes past the handshake's deadline. */
static double cap_deadline(const ws_t *w, double deadline)
{
	if (w->state == WS_CONNECTING && w->connect_deadline >= 0
	    && (deadline < 0 || w->connect_deadline < deadline))
		return w->connect_deadline;
	return deadline;
}

/* Async connect: drives the handshake until it ends or the deadline.
 * Returns DT_OK once open, DT_ETIMEOUT while still connecting, or the
 * failure (after dt_transport_fail). */
static int connecting(ws_t *w, double deadline);

static int fail_gone(ws_t *w)
{
	int code = w->fail_code ? w->fail_code : w->oom ? DT_ENOMEM : DT_ECLOSED;
	return dt_transport_fail(&w->base, code, "%s",
	                         w->why[0] ? w->why : "the connection is closed");
}

static int send_done(ws_t *w)
{
	return w->state == WS_GONE
	       || (!output_pending(w) && (w->wsi == NULL || !lws_partial_buffered(w->wsi)));
}

/* Bytes not yet handed to the socket; a part lws holds (it copies what
 * the socket did not take) counts as one byte: lws does not say how many. */
static size_t ws_queued(dt_transport *t)
{
	ws_t *w = (ws_t *)t;
	size_t n = w->out.len - w->out_off;
	if (n == 0 && w->wsi != NULL && w->state == WS_OPEN && lws_partial_buffered(w->wsi))
		n = 1;
	return n;
}

static int connect_done(ws_t *w)
{
	return w->state != WS_CONNECTING;
}

static int connecting(ws_t *w, double deadline)
{
	if (w->state == WS_CONNECTING)
		serve_until(w, cap_deadline(w, deadline), connect_done);
	check_connect(w);
	if (w->state == WS_OPEN)
		return DT_OK;
	if (w->state == WS_GONE)
		return fail_gone(w);
	return dt_transport_fail(&w->base, DT_ETIMEOUT, "still connecting to %s", w->peer);
}

static int ws_flush(dt_transport *t, double deadline)
{
	ws_t *w = (ws_t *)t;
	int rc;
	if (w->state == WS_CONNECTING) {
		rc = connecting(w, deadline);
		if (rc == DT_ETIMEOUT && output_pending(w))
			return dt_transport_fail(t, DT_ETIMEOUT,
				"timed out connecting to %s (%zu bytes still queued)", w->peer,
				w->out.len - w->out_off);
		if (rc != DT_OK)
			return rc;
	}
	if (w->state != WS_OPEN || w->wsi == NULL) {
		if (!output_pending(w))
			return DT_OK;           /* nothing to write: recv reports the end */
		reset_output(w);
		return fail_gone(w);
	}
	/* Take what has come in too (never waiting): flush serves both
	 * directions, as recv does, so a loop that calls it when the socket is
	 * readable or writable keeps the connection moving. */
	service(w, -1);
	if (w->state == WS_GONE && !output_pending(w))
		return DT_OK;                   /* recv reports the end */
	rc = serve_until(w, deadline, send_done);
	if (w->state == WS_GONE) {
		reset_output(w);
		return fail_gone(w);
	}
	if (rc == DT_ETIMEOUT)
		return dt_transport_fail(t, DT_ETIMEOUT,
			"timed out writing to %s (%zu bytes still queued)", w->peer,
			w->out.len - w->out_off);
	return DT_OK;
}

static int ws_send(dt_transport *t, const char *msg, size_t len, double deadline)
{
	ws_t *w = (ws_t *)t;
	if (w->state == WS_GONE || (w->state == WS_OPEN && w->wsi == NULL))
		return fail_gone(w);
	/* Drop what lws already took when it is most of the buffer. */
	if (w->out_off - LWS_PRE > (w->out.len - LWS_PRE) / 2) {
		memmove(w->out.data + LWS_PRE, w->out.data + w->out_off, w->out.len - w->out_off);
		w->out.len -= w->out_off - LWS_PRE;
		w->out_off = LWS_PRE;
		memmove(w->lens.data, w->lens.data + w->lens_head, w->lens.len - w->lens_head);
		w->lens.len -= w->lens_head;
		w->lens_head = 0;
	}
	if (dt_buf_reserve(&w->out, len) != 0 || dt_buf_reserve(&w->lens, sizeof len) != 0)
		return dt_transport_fail(t, DT_ENOMEM, "out of memory queueing %zu bytes", len);
	memcpy(w->out.data + w->out.len, msg, len);
	w->out.len += len;
	memcpy(w->lens.data + w->lens.len, &len, sizeof len);
	w->lens.len += sizeof len;
	if (w->state == WS_OPEN)            /* else ESTABLISHED asks for it */
		lws_callback_on_writable(w->wsi);
	return ws_flush(t, deadline);
}

/* Drops the entry handed out by the previous recv and compacts when the
 * dead prefix is large, so the buffer does not creep. */
static void settle(ws_t *w)
{
	if (w->consumed > 0) {
		w->in_start += w->consumed;
		w->consumed = 0;
	}
	if (w->in_start == w->in.len) {
		w->in.len = w->in_start = w->in_done = 0;
	} else if (w->in_start > 0 && w->in_start >= w->in.len / 2) {
		memmove(w->in.data, w->in.data + w->in_start, w->in.len - w->in_start);
		w->in.len -= w->in_start;
		w->in_done -= w->in_start;
		w->in_start = 0;
	}
	/* A large buffer left behind by one huge message is given back. */
	dt_buf_trim(&w->in);
}

static int recv_done(ws_t *w)
{
	return w->in_start < w->in_done || w->state == WS_GONE;
}

static int ws_recv(dt_transport *t, double deadline, const char **msg, size_t *len)
{
	ws_t *w = (ws_t *)t;
	int rc = DT_OK;
	settle(w);
	if (w->state == WS_CONNECTING) {
		rc = connecting(w, deadline);
		if (rc != DT_OK)
			return rc;
	}
	if (w->in_start == w->in_done && w->state != WS_GONE)
		rc = serve_until(w, deadline, recv_done);
	if (w->in_start < w->in_done) {
		rx_hdr h;
		memcpy(&h, w->in.data + w->in_start, sizeof h);
		w->consumed = sizeof h + h.len;
		if (h.dropped > 0) {
			t->head_len = h.len < RX_HEAD ? h.len : RX_HEAD;
			memcpy(t->head, w->in.data + w->in_start + sizeof h, t->head_len);
			return dt_transport_fail(t, DT_ETOOLARGE,
				"dropped a message of %zu bytes: over the limit of %zu bytes",
				h.dropped, t->limit);
		}
		*msg = w->in.data + w->in_start + sizeof h;
		*len = h.len;
		return DT_OK;
	}
	if (w->state == WS_GONE)
		return fail_gone(w);
	(void)rc;
	return dt_transport_fail(t, DT_ETIMEOUT, "timed out waiting for a message from %s", w->peer);
}

static void ws_release(dt_transport *t)
{
	settle((ws_t *)t);
}

static int ws_pending(dt_transport *t)
{
	ws_t *w = (ws_t *)t;
	return w->in_start + w->consumed < w->in_done;
}

/* The socket twice (read and write), no third. */
static void ws_fds(dt_transport *t, int fds[3])
{
	ws_t *w = (ws_t *)t;
	fds[0] = fds[1] = w->wsi != NULL ? (int)lws_get_socket_fd(w->wsi) : -1;
	fds[2] = -1;
}

static int close_done(ws_t *w)
{
	return w->wsi == NULL || w->state == WS_GONE;
}

static void ws_close(dt_transport *t)
{
	ws_t *w = (ws_t *)t;
	if (w->ctx != NULL) {
		if (w->wsi != NULL && w->state == WS_OPEN) {
			/* A close frame, and a short wait for the peer's answer. */
			reset_output(w);
			w->closing = 1;
			lws_callback_on_writable(w->wsi);
			serve_until(w, t->no_wait ? 0 : dt_now() + WS_CLOSE_WAIT, close_done);
		}
		dt_nopipe np;
		dt_nopipe_begin(&np);
		lws_context_destroy(w->ctx);        /* frees everything lws holds; calls back */
		dt_nopipe_end(&np, -1);
		w->ctx = NULL;
	}
	w->wsi = NULL;
	w->state = WS_GONE;
	t->closed = 1;
}

static void ws_destroy(dt_transport *t)
{
	ws_t *w = (ws_t *)t;
	dt_buf_free(&w->in);
	dt_buf_free(&w->out);
	dt_buf_free(&w->lens);
	dt_buf_free(&w->headers);
	free(w);
}

static int ws_state(dt_transport *t)
{
	ws_t *w = (ws_t *)t;
	if (w->state == WS_CONNECTING) {
		check_connect(w);
		if (w->state == WS_GONE)
			fail_gone(w);               /* t->err says why */
	}
	if (w->state == WS_CONNECTING)
		return DT_STATE_CONNECTING;
	if (w->state == WS_OPEN && w->wsi != NULL)
		return DT_STATE_OPEN;
	if (w->state == WS_GONE && t->err[0] == '\0')
		fail_gone(w);
	return DT_STATE_CLOSED;
}

static void ws_describe(dt_transport *t, char *buf, size_t n)
{
	ws_t *w = (ws_t *)t;
	snprintf(buf, n, "%s", w->peer);
}

static const dt_transport_ops ws_ops = {
	"websocket", ws_send, ws_recv, ws_flush, ws_queued, ws_fds, ws_pending,
	ws_close, ws_destroy, ws_describe, ws_release, ws_state
};

/* ---- core.ws.connect ----------------------------------------------------------- */

/* core.ws.connect(host, port, path [, opts]) -> Transport | nil, message, code
 * opts: deadline (absolute, core.now() clock), limit (bytes), host_header,
 * headers (name -> value, added to the handshake), tls (wss://: the
 * certificate is checked against the system store, or ca_file, and the
 * name in host_header, unless insecure), async (return at once a
 * transport in the "connecting" state, whose handshake recv/flush calls
 * drive when its fds are ready; opts.deadline bounds the handshake, and
 * its failure is then what they return). A host that is a name is looked
 * up first, within the deadline (at once for an address or localhost);
 * lws gets the address. */
static int l_ws_connect(lua_State *L)
{
	const char *host = luaL_checkstring(L, 1);
	int port = dt_check_port(L, 2);
	const char *path = luaL_checkstring(L, 3);
	const char *host_header = NULL, *ca_file = NULL, *bad = NULL;
	int tls = 0, insecure = 0, rc;
	char addr[64], err[200];
	dt_buf headers = {NULL, 0, 0};
	double deadline = -1;
	int async = 0;
	size_t limit = DT_DEFAULT_LIMIT;
	struct lws_context_creation_info info;
	struct lws_client_connect_info ci;
	struct lws *wsi;
	ws_t *w;

	luaL_argcheck(L, host[0] != '\0', 1, "host must not be empty");
	luaL_argcheck(L, path[0] == '/', 3, "path must start with '/'");
	if (!lua_isnoneornil(L, 4)) {
		luaL_checktype(L, 4, LUA_TTABLE);
		lua_getfield(L, 4, "deadline");                /* ... deadline */
		if (!lua_isnil(L, -1))
			deadline = dt_checkdeadline(L, -1);
		lua_getfield(L, 4, "limit");                   /* ... deadline limit */
		if (!lua_isnil(L, -1)) {
			lua_Number n = luaL_checknumber(L, -1);
			luaL_argcheck(L, n >= 1 && n <= 9007199254740992.0, 4, "limit out of range");
			limit = (size_t)n;
		}
		lua_getfield(L, 4, "host_header");             /* ... deadline limit hh */
		if (!lua_isnil(L, -1))
			host_header = luaL_checkstring(L, -1);     /* kept alive by opts */
		lua_getfield(L, 4, "ca_file");                 /* ... deadline limit hh ca */
		if (!lua_isnil(L, -1))
			ca_file = luaL_checkstring(L, -1);         /* kept alive by opts */
		lua_getfield(L, 4, "tls");
		tls = lua_toboolean(L, -1);
		lua_getfield(L, 4, "insecure");
		insecure = lua_toboolean(L, -1);
		lua_getfield(L, 4, "async");
		async = lua_toboolean(L, -1);
		lua_pop(L, 7);
		bad = read_headers(L, 4, &headers);            /* owns: headers */
		if (bad != NULL) {
			dt_buf_free(&headers);
			return luaL_argerror(L, 4, bad);
		}
	}
	rc = dt_resolve(host, deadline, addr, sizeof addr, err, sizeof err);
	if (rc != DT_OK) {
		dt_buf_free(&headers);
		return dt_push_failf(L, rc, "cannot connect to %s: %s", host, err);
	}

	w = calloc(1, sizeof *w);                          /* owns: w, freed by ws_destroy */
	if (w == NULL || dt_buf_reserve(&w->out, LWS_PRE) != 0) {
		free(w);
		dt_buf_free(&headers);
		return dt_push_fail(L, DT_ENOMEM, "out of memory for a websocket");
	}
	w->headers = headers;                              /* w owns the headers now */
	w->base.ops = &ws_ops;
	w->connect_deadline = deadline;
	w->base.limit = limit;
	w->state = WS_CONNECTING;
	reset_output(w);
	dt_format_peer(w->peer, sizeof w->peer, host, port);

	lws_set_log_level(0, NULL);                        /* before the context, or lws prints */
	memset(&info, 0, sizeof info);
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = ws_protocols;
	info.gid = -1;
	info.uid = -1;
	info.user = w;                                     /* the callback finds w here */
	info.fd_limit_per_thread = 16;                     /* one socket, the cancel pipe, spares */
	info.pt_serv_buf_size = WS_RX_SIZE;
	if (tls) {
		info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
		info.client_ssl_ca_filepath = ca_file;         /* NULL: the system store */
	}
	/* lws_create_context sets SIGPIPE to ignored, whatever the host had
	 * (a handler, the default): the host's disposition is put back. */
	{
		struct sigaction host_pipe;
		int saved = sigaction(SIGPIPE, NULL, &host_pipe) == 0;
		w->ctx = lws_create_context(&info);            /* owns: ctx, destroyed by ws_close */
		if (saved)
			sigaction(SIGPIPE, &host_pipe, NULL);
	}
	if (w->ctx == NULL) {
		ws_destroy(&w->base);
		return dt_push_fail(L, DT_ECONNECT, "cannot create a libwebsockets context");
	}

	memset(&ci, 0, sizeof ci);
	ci.context = w->ctx;
	ci.address = addr;                 /* looked up above, within the deadline */
	ci.port = port;
	ci.path = path;
	ci.host = host_header != NULL ? host_header : w->peer;  /* NULL would send "(null)" */
	ci.origin = NULL;                  /* Chromium answers 403 to any Origin */
	ci.protocol = NULL;                /* no Sec-WebSocket-Protocol */
	ci.local_protocol_name = ws_protocols[0].name;
	ci.ietf_version_or_minus_one = -1;
	if (tls) {
		/* The certificate must name the host of host_header (lws strips
		 * the port) and chain to a trusted CA, unless asked otherwise. */
		ci.ssl_connection = LCCSCF_USE_SSL;
		if (insecure)
			ci.ssl_connection |= LCCSCF_ALLOW_SELFSIGNED | LCCSCF_ALLOW_INSECURE
			                     | LCCSCF_ALLOW_EXPIRED | LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK;
	}
	wsi = lws_client_connect_via_info(&ci);
	if (wsi == NULL)
		gone(w, w->why[0] ? NULL : "libwebsockets could not start the connection");
	else if (w->state == WS_CONNECTING)
		w->wsi = wsi;

	if (async && w->state == WS_CONNECTING) {
		dt_transport_push(L, &w->base);                /* ... tr; owns: w */
		return 1;
	}
	if (w->state == WS_CONNECTING)
		serve_until(w, deadline, connect_done);
	if (w->state != WS_OPEN) {
		char msg[400];
		int code = connect_failure(w, msg, sizeof msg);
		ws_close(&w->base);
		ws_destroy(&w->base);                          /* frees: w */
		return dt_push_fail(L, code, msg);
	}
	w->why[0] = '\0';
	dt_transport_push(L, &w->base);                    /* ... tr; owns: w */
	return 1;
}

void dt_ws_open(lua_State *L)
{
	static const luaL_Reg funcs[] = {
		{"connect", l_ws_connect},
		{NULL, NULL}
	};
	dt_open_part(L, "ws", funcs);
}
