/* pipe.c - the transport over --remote-debugging-pipe.
 *
 * Chromium reads CDP from its fd 3 and writes to its fd 4; each message is
 * JSON followed by one NUL byte. Both our ends are non-blocking and every
 * wait is a poll() bounded by the caller's deadline: a browser that stops
 * reading (it does, for requests over its own limit) makes send() time out,
 * never block. While we wait on one direction we keep serving the other
 * (and drain the child's stderr into its ring), so pipelined requests cannot
 * deadlock against replies filling the other pipe.
 *
 * For a foreign event loop: fds() gives the reply pipe, the request pipe
 * and the stderr pipe; recv(0) and flush(0) serve whatever is ready and
 * never wait.
 *
 * The receive buffer is scanned for the terminator only over bytes not yet
 * scanned: rescanning from the start is quadratic on large messages.
 *
 * The same framing runs over one connected socket (dt_pipe_new_socket: a
 * Unix socket of unix.c, the background browser's holder and its
 * clients): one descriptor both ways, no stderr, and "the peer" where a
 * message would say "the browser".
 * Depends on: pipe.h (transport.h, ring.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pipe.h"
#include "nopipe.h"

typedef struct {
	dt_transport base;
	int wfd;            /* our end of the child's fd 3; -1 once closed */
	int rfd;            /* our end of the child's fd 4 */
	int errfd;          /* read end of the child's stderr, or -1 */
	dt_ring *ring;      /* shared with the Process; we hold one ref */
	long pid;
	dt_buf in;          /* received bytes; a message starts at in_start */
	size_t in_start;
	size_t scanned;     /* bytes after in_start known to hold no NUL */
	size_t consumed;    /* message handed out last call: drop it next call */
	int eof;            /* the child closed its end of fd 4 */
	int discarding;     /* dropping a message that went over the limit */
	size_t dropped;     /* bytes of that message dropped so far */
	char head[sizeof(((dt_transport *)0)->head)];   /* its first bytes, for */
	size_t head_len;                                /* the too_large at its end */
	dt_buf out;         /* queued bytes not yet written */
	size_t out_off;     /* first unwritten byte in out */
	int sock;           /* one socket: wfd == rfd, closed once */
	char peer[112];     /* for tostring: the socket's path or peer */
} pipe_t;

/* Who is at the other end, and what it closed, for messages. */
#define WHO(p) ((p)->sock ? "the peer" : "the browser")
#define GONE(p) ((p)->sock ? "the peer closed the connection" : "the browser closed the pipe")

/* Drops the bytes handed out by the previous recv and compacts when the
 * dead prefix is large, so the buffer does not creep. */
static void settle(pipe_t *p)
{
	if (p->consumed > 0) {
		p->in_start += p->consumed;
		p->consumed = 0;
		p->scanned = 0;
	}
	if (p->in_start == p->in.len) {
		p->in.len = p->in_start = 0;
	} else if (p->in_start > 0 && p->in_start >= p->in.len / 2) {
		memmove(p->in.data, p->in.data + p->in_start, p->in.len - p->in_start);
		p->in.len -= p->in_start;
		p->in_start = 0;
	}
	/* A large buffer left behind by one huge message is given back. */
	dt_buf_trim(&p->in);
}

/* One read of what is there now (one, so that recv scans and applies the
 * size limit between reads). Returns DT_OK, or after dt_transport_fail
 * DT_ENOMEM (the pipe is still fine) or DT_ECLOSED (a read error other
 * than EAGAIN). */
static int read_some(pipe_t *p)
{
	size_t room = p->in.len < (1u << 20) ? 65536 : p->in.len / 4;
	ssize_t n;
	if (dt_buf_reserve(&p->in, room) != 0)
		return dt_transport_fail(&p->base, DT_ENOMEM, "out of memory reading a message");
	do {
		n = read(p->rfd, p->in.data + p->in.len, p->in.cap - p->in.len);
	} while (n < 0 && errno == EINTR);
	if (n > 0)
		p->in.len += (size_t)n;
	else if (n == 0)
		p->eof = 1;
	else if (errno != EAGAIN && errno != EWOULDBLOCK) {
		return dt_transport_fail(&p->base, DT_ECLOSED, "reading from %s: %s",
		                         WHO(p), strerror(errno));
	}
	return DT_OK;
}

/* One write of what is queued: a socket's send says EPIPE without a
 * SIGPIPE (MSG_NOSIGNAL), a pipe's write needs nopipe.h around it. */
static ssize_t write_once(pipe_t *p)
{
	if (p->sock)
		return send(p->wfd, p->out.data + p->out_off, p->out.len - p->out_off, MSG_NOSIGNAL);
	return write(p->wfd, p->out.data + p->out_off, p->out.len - p->out_off);
}

/* Writes queued bytes until the pipe is full. Returns -1 if the pipe broke. */
static int write_some(pipe_t *p)
{
	dt_nopipe np;
	if (!p->sock)
		dt_nopipe_begin(&np);           /* a browser gone: EPIPE, not SIGPIPE */
	while (p->out_off < p->out.len) {
		ssize_t n = write_once(p);
		if (n > 0) {
			p->out_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!p->sock)
				dt_nopipe_end(&np, 0);
			return 0;
		}
		if (!p->sock)
			dt_nopipe_end(&np, n < 0 && errno == EPIPE);
		dt_transport_fail(&p->base, DT_ECLOSED, "writing to %s: %s",
		                  WHO(p), n < 0 ? strerror(errno) : "short write");
		return -1;
	}
	if (!p->sock)
		dt_nopipe_end(&np, 0);
	p->out.len = p->out_off = 0;
	if (p->out.cap > ((size_t)4 << 20))
		dt_buf_free(&p->out);
	return 0;
}

/* One poll over every fd we serve. want_read: poll the reply pipe. Returns
 * DT_OK after serving what was ready, DT_ETIMEOUT if nothing happened by the
 * deadline, DT_ECLOSED if the browser went away, DT_EINTR if a signal came
 * (a blocking read returns to Lua then: Ctrl-C's hook acts at once). */
static int pump(pipe_t *p, double deadline, int want_read)
{
	struct pollfd fds[3];
	int nfds = 0, ri = -1, wi = -1, ei = -1, rc;
	if (want_read && !p->eof) {
		ri = nfds;
		fds[nfds].fd = p->rfd; fds[nfds].events = POLLIN; nfds++;
	}
	if (p->out_off < p->out.len && p->wfd >= 0) {
		wi = nfds;
		fds[nfds].fd = p->wfd; fds[nfds].events = POLLOUT; nfds++;
	}
	if (p->errfd >= 0) {
		ei = nfds;
		fds[nfds].fd = p->errfd; fds[nfds].events = POLLIN; nfds++;
	}
	rc = poll(fds, (nfds_t)nfds, dt_poll_ms(deadline));
	if (rc < 0 && errno == EINTR)
		return DT_EINTR;
	if (rc < 0)
		return dt_transport_fail(&p->base, DT_ECLOSED, "poll: %s", strerror(errno));
	if (rc == 0)
		return DT_ETIMEOUT;
	if (ei >= 0 && fds[ei].revents)
		dt_ring_drain_fd(p->ring, &p->errfd);
	if (wi >= 0 && fds[wi].revents) {
		if (fds[wi].revents & (POLLERR | POLLHUP)) {
			p->base.closed = 1;
			return dt_transport_fail(&p->base, DT_ECLOSED, "%s", GONE(p));
		}
		if (write_some(p) != 0) {
			p->base.closed = 1;
			return DT_ECLOSED;
		}
	}
	if (ri >= 0 && fds[ri].revents) {
		rc = read_some(p);
		if (rc == DT_ECLOSED)
			p->base.closed = 1;
		return rc;
	}
	return DT_OK;
}

static int pipe_flush(dt_transport *t, double deadline);

static int pipe_send(dt_transport *t, const char *msg, size_t len, double deadline)
{
	pipe_t *p = (pipe_t *)t;
	if (p->wfd < 0 || t->closed)
		return dt_transport_fail(t, DT_ECLOSED, "%s", GONE(p));
	if (dt_buf_reserve(&p->out, len + 1) != 0)
		return dt_transport_fail(t, DT_ENOMEM, "out of memory queueing %zu bytes", len);
	memcpy(p->out.data + p->out.len, msg, len);      /* the message and its NUL */
	p->out.data[p->out.len + len] = '\0';
	p->out.len += len + 1;
	return pipe_flush(t, deadline);
}

static int pipe_recv(dt_transport *t, double deadline, const char **msg, size_t *len)
{
	pipe_t *p = (pipe_t *)t;
	int pumped = 0;
	settle(p);
	for (;;) {
		size_t from = p->in_start + p->scanned;
		char *nul = from < p->in.len
			? memchr(p->in.data + from, '\0', p->in.len - from) : NULL;
		if (nul != NULL) {
			size_t end = (size_t)(nul - p->in.data);
			if (p->discarding) {
				size_t total = p->dropped + (end - p->in_start);
				p->discarding = 0;
				p->dropped = 0;
				p->in_start = end + 1;
				p->scanned = 0;
				/* (the head kept when dropping began: the recv that
				 * ends the message may be a later one) */
				memcpy(t->head, p->head, p->head_len);
				t->head_len = p->head_len;
				return dt_transport_fail(t, DT_ETOOLARGE,
					"dropped a message of %zu bytes: over the limit of %zu bytes",
					total, t->limit);
			}
			if (end - p->in_start > t->limit) {     /* arrived whole, still too big */
				size_t total = end - p->in_start;
				t->head_len = total < sizeof t->head ? total : sizeof t->head;
				memcpy(t->head, p->in.data + p->in_start, t->head_len);
				p->in_start = end + 1;
				p->scanned = 0;
				return dt_transport_fail(t, DT_ETOOLARGE,
					"dropped a message of %zu bytes: over the limit of %zu bytes",
					total, t->limit);
			}
			*msg = p->in.data + p->in_start;
			*len = end - p->in_start;
			p->consumed = *len + 1;
			return DT_OK;
		}
		p->scanned = p->in.len - p->in_start;
		if (!p->discarding && p->scanned > t->limit) {
			p->discarding = 1;
			p->dropped = 0;
			p->head_len = p->scanned < sizeof p->head ? p->scanned : sizeof p->head;
			memcpy(p->head, p->in.data + p->in_start, p->head_len);
		}
		if (p->discarding) {
			p->dropped += p->in.len - p->in_start;
			p->in.len = p->in_start;
			p->scanned = 0;
		}
		if (p->eof || t->closed) {
			t->closed = 1;
			return dt_transport_fail(t, DT_ECLOSED, "%s", GONE(p));
		}
		{
			/* The deadline holds while bytes keep coming (a reply that
			 * streams, a child writing its stderr without end): after the
			 * first round, a deadline passed is a timeout. */
			int rc = pumped && dt_poll_ms(deadline) == 0 ? DT_ETIMEOUT : pump(p, deadline, 1);
			pumped = 1;
			if (rc == DT_ETIMEOUT)
				return dt_transport_fail(t, DT_ETIMEOUT, "timed out waiting for a message");
			if (rc == DT_EINTR)
				return dt_transport_fail(t, DT_EINTR, "interrupted by a signal");
			if (rc != DT_OK)
				return rc;
		}
	}
}

static int pipe_flush(dt_transport *t, double deadline)
{
	pipe_t *p = (pipe_t *)t;
	if (p->out_off < p->out.len && (p->wfd < 0 || t->closed))
		return dt_transport_fail(t, DT_ECLOSED, "%s", GONE(p));
	if (write_some(p) != 0) {
		t->closed = 1;
		return DT_ECLOSED;
	}
	for (int pumped = 0; p->out_off < p->out.len; pumped = 1) {
		/* Reads too: a browser blocked writing replies stops reading.
		 * (As in recv, a deadline passed after the first round is a
		 * timeout whatever keeps coming.) */
		int rc = pumped && dt_poll_ms(deadline) == 0 ? DT_ETIMEOUT : pump(p, deadline, 1);
		if (rc == DT_ETIMEOUT)
			return dt_transport_fail(t, DT_ETIMEOUT,
				"timed out writing to %s (%zu bytes still queued)",
				WHO(p), p->out.len - p->out_off);
		if (rc == DT_EINTR)
			continue;                           /* (a write is short: finish it) */
		if (rc != DT_OK)
			return rc;
	}
	return DT_OK;
}

static size_t pipe_queued(dt_transport *t)
{
	pipe_t *p = (pipe_t *)t;
	return p->out.len - p->out_off;
}

static void pipe_fds(dt_transport *t, int fds[3])
{
	pipe_t *p = (pipe_t *)t;
	fds[0] = p->eof ? -1 : p->rfd;
	fds[1] = p->wfd;
	fds[2] = p->errfd;
}

static void pipe_release(dt_transport *t)
{
	settle((pipe_t *)t);
}

static int pipe_pending(dt_transport *t)
{
	pipe_t *p = (pipe_t *)t;
	size_t from = p->in_start + p->consumed;
	return from < p->in.len && memchr(p->in.data + from, '\0', p->in.len - from) != NULL;
}

static void pipe_close(dt_transport *t)
{
	pipe_t *p = (pipe_t *)t;
	if (p->wfd >= 0)
		close(p->wfd);          /* the browser exits when its fd 3 closes */
	if (p->rfd >= 0 && !p->sock)
		close(p->rfd);          /* (a socket's is the same descriptor) */
	if (p->errfd >= 0) {
		dt_ring_drain(p->ring, p->errfd);   /* never blocks: non-blocking fd */
		close(p->errfd);
	}
	p->wfd = p->rfd = p->errfd = -1;
	t->closed = 1;
}

static void pipe_destroy(dt_transport *t)
{
	pipe_t *p = (pipe_t *)t;
	dt_buf_free(&p->in);
	dt_buf_free(&p->out);
	dt_ring_unref(p->ring);
	free(p);
}

static void pipe_describe(dt_transport *t, char *buf, size_t n)
{
	pipe_t *p = (pipe_t *)t;
	if (p->sock)
		snprintf(buf, n, "%s", p->peer);
	else
		snprintf(buf, n, "pid %ld", p->pid);
}

static const dt_transport_ops pipe_ops = {
	"pipe", pipe_send, pipe_recv, pipe_flush, pipe_queued, pipe_fds, pipe_pending,
	pipe_close, pipe_destroy, pipe_describe, pipe_release, NULL
};

static const dt_transport_ops socket_ops = {
	"unix", pipe_send, pipe_recv, pipe_flush, pipe_queued, pipe_fds, pipe_pending,
	pipe_close, pipe_destroy, pipe_describe, pipe_release, NULL
};

dt_transport *dt_pipe_new(int wfd, int rfd, int errfd, dt_ring *ring, long pid)
{
	pipe_t *p = calloc(1, sizeof *p);     /* owns: p, freed by pipe_destroy */
	if (p == NULL)
		return NULL;
	p->base.ops = &pipe_ops;
	p->base.limit = DT_DEFAULT_LIMIT;
	p->wfd = wfd;
	p->rfd = rfd;
	p->errfd = errfd;
	p->ring = ring;
	dt_ring_ref(ring);
	p->pid = pid;
	fcntl(wfd, F_SETFL, fcntl(wfd, F_GETFL) | O_NONBLOCK);
	fcntl(rfd, F_SETFL, fcntl(rfd, F_GETFL) | O_NONBLOCK);
	if (errfd >= 0)
		fcntl(errfd, F_SETFL, fcntl(errfd, F_GETFL) | O_NONBLOCK);
#ifdef F_SETPIPE_SZ
	/* Bigger pipes mean fewer wake-ups on large messages; best effort. */
	fcntl(rfd, F_SETPIPE_SZ, 1 << 20);
	fcntl(wfd, F_SETPIPE_SZ, 1 << 20);
#endif
	return &p->base;
}

dt_transport *dt_pipe_new_socket(int fd, const char *peer)
{
	pipe_t *p = calloc(1, sizeof *p);     /* owns: p, freed by pipe_destroy */
	if (p == NULL)
		return NULL;
	p->base.ops = &socket_ops;
	p->base.limit = DT_DEFAULT_LIMIT;
	p->wfd = p->rfd = fd;
	p->errfd = -1;
	p->sock = 1;
	p->pid = -1;
	snprintf(p->peer, sizeof p->peer, "%s", peer != NULL ? peer : "");
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return &p->base;
}
