/* fdio.c - core.fd (read, write, close): bytes in and out of
 * a descriptor an event loop watches (a stdio server's stdin and stdout, a
 * child's pipes), never waiting.
 *
 * A descriptor's flags are never changed: O_NONBLOCK belongs to its open
 * file description, which it shares with whoever gave it to us (a
 * terminal, a shell's pipe, the MCP client's socket), and setting it would
 * change their reads and writes too. So a read takes only what the
 * descriptor holds now (a socket: MSG_DONTWAIT; else poll with no wait,
 * then one read, which a readable pipe or terminal answers at once), and
 * a write only what fits now (a
 * socket: MSG_DONTWAIT; else PIPE_BUF bytes at a time while poll says it
 * is writable, which for a pipe means that much fits). A descriptor read
 * by another process too may lose the bytes between the look and the
 * read: this is for descriptors one process reads. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nopipe.h"
#include "dt.h"

#define READ_MAX 65536                  /* bytes one read takes, on the C stack */

static int check_fd(lua_State *L, int arg)
{
	lua_Integer fd = luaL_checkinteger(L, arg);
	luaL_argcheck(L, fd >= 0 && fd <= INT_MAX, arg, "not a file descriptor");
	return (int)fd;
}

static int is_socket(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* ready(fd, events) -> 1 ready (or an error to be read), 0 not now, -1 poll failed */
static int ready(int fd, short events)
{
	struct pollfd p;
	int rc;
	p.fd = fd;
	p.events = events;
	p.revents = 0;
	do
		rc = poll(&p, 1, 0);
	while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -1;
	return rc > 0;
}

/* core.fd.read(fd [, max]) -> bytes | "" | nil, message, code
 * The bytes fd holds now, at most max (default and at most 65536: a
 * caller on a level-triggered loop is called again while more is there):
 * "" when there are none yet (never waits), "closed" at the end of the
 * input (or a peer that reset it), "system" for any other failure. */
static int l_fd_read(lua_State *L)
{
	char buf[READ_MAX];
	int fd = check_fd(L, 1);
	lua_Integer max = luaL_optinteger(L, 2, READ_MAX);
	ssize_t n;
	luaL_argcheck(L, max >= 1, 2, "max must be at least 1");
	if (max > READ_MAX)
		max = READ_MAX;
	if (is_socket(fd)) {
		do
			n = recv(fd, buf, (size_t)max, MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
	} else {
		/* Readable: a read takes what a pipe or terminal holds, or sees
		 * the end or an error at once. */
		int r = ready(fd, POLLIN);
		if (r < 0)
			return dt_push_failf(L, DT_ESYSTEM, "poll on fd %d: %s", fd, strerror(errno));
		if (r == 0) {
			lua_pushliteral(L, "");
			return 1;
		}
		do
			n = read(fd, buf, (size_t)max);
		while (n < 0 && errno == EINTR);
	}
	if (n > 0) {
		lua_pushlstring(L, buf, (size_t)n);
		return 1;
	}
	if (n == 0)
		return dt_push_fail(L, DT_ECLOSED, "end of input");
	if (errno == EAGAIN || errno == EWOULDBLOCK) {
		lua_pushliteral(L, "");
		return 1;
	}
	if (errno == ECONNRESET || errno == EPIPE)
		return dt_push_failf(L, DT_ECLOSED, "read: %s", strerror(errno));
	return dt_push_failf(L, DT_ESYSTEM, "read from fd %d: %s", fd, strerror(errno));
}

/* core.fd.write(fd, s [, from]) -> n | nil, message, code
 * Writes what fits now of s from byte from (1-based, default 1); n: how
 * many bytes went (0: none fit; write the rest when the loop says fd is
 * writable). "closed": the reader is gone (no SIGPIPE is raised). */
static int l_fd_write(lua_State *L)
{
	int fd = check_fd(L, 1);
	size_t len, done = 0;
	const char *s = luaL_checklstring(L, 2, &len);
	lua_Integer from = luaL_optinteger(L, 3, 1);
	int sock, failed = 0, e = 0;
	dt_nopipe np;
	luaL_argcheck(L, from >= 1 && (size_t)from <= len + 1, 3, "from is outside the string");
	s += from - 1;
	len -= (size_t)(from - 1);
	sock = is_socket(fd);
	if (!sock)                         /* (send's MSG_NOSIGNAL raises none) */
		dt_nopipe_begin(&np);
	while (done < len) {
		ssize_t n;
		if (sock) {
			n = send(fd, s + done, len - done, MSG_DONTWAIT | MSG_NOSIGNAL);
		} else {
			int r = ready(fd, POLLOUT);
			if (r <= 0) {
				if (r < 0) {
					failed = 1;
					e = errno;
				}
				break;
			}
			n = write(fd, s + done, len - done < PIPE_BUF ? len - done : PIPE_BUF);
		}
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		failed = 1;
		e = n < 0 ? errno : EIO;
		break;
	}
	if (!sock)
		dt_nopipe_end(&np, failed && e == EPIPE ? 1 : 0);
	if (failed && done == 0) {
		if (e == EPIPE || e == ECONNRESET)
			return dt_push_failf(L, DT_ECLOSED, "write: %s", strerror(e));
		return dt_push_failf(L, DT_ESYSTEM, "write to fd %d: %s", fd, strerror(e));
	}
	lua_pushinteger(L, (lua_Integer)done);
	return 1;
}

/* core.fd.close(fd) -> true | nil, message, code: closes a descriptor of
 * ours (a child's pipe end core.process.spawn{stdio = true} gave) */
static int l_fd_close(lua_State *L)
{
	int fd = check_fd(L, 1);
	if (close(fd) != 0 && errno != EINTR)
		return dt_push_failf(L, DT_ESYSTEM, "close fd %d: %s", fd, strerror(errno));
	lua_pushboolean(L, 1);
	return 1;
}

void dt_fdio_open(lua_State *L)
{
	static const luaL_Reg funcs[] = {
		{"read", l_fd_read},
		{"write", l_fd_write},
		{"close", l_fd_close},
		{NULL, NULL}
	};
	dt_open_part(L, "fd", funcs);
}
