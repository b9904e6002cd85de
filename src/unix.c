/* unix.c - core.unix: Unix stream sockets carrying NUL-framed messages
 * (the pipe transport's framing, pipe.c, over one socket), and who is at
 * the other end (SO_PEERCRED: the kernel's word for the peer's uid and
 * pid, which no peer can forge).
 *
 * The background browser's holder (browser/holder.lua) listens on one in
 * a 0700 directory and serves the browser's pipe to its clients; a client
 * connects with core.unix.connect. What the messages mean, and whom to
 * let in, is the Lua side's: this file moves bytes and tells facts.
 *
 * A path longer than sockaddr_un holds (107 bytes) is reached through its
 * directory: /proc/self/fd/N/NAME, N an O_PATH descriptor of the
 * directory (Linux resolves it as it would the path).
 * Depends on: pipe.h (the framing), dt.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "pipe.h"
#include "dt.h"

#define DT_LISTENER_MT "devtools_tools.Listener"

typedef struct {
	int fd;                 /* the listening socket, or -1 once closed */
	dev_t dev;              /* the socket file bound: removed on close */
	ino_t ino;              /* if it is still this one */
	char path[4096];
} listener_t;

/* Fills sa for path; a path too long for sun_path goes through an O_PATH
 * descriptor of its directory, left in *dirfd (close it after the call
 * that used sa; -1 when none was needed). 0, or -1 with errno set. */
static int address(const char *path, struct sockaddr_un *sa, int *dirfd)
{
	size_t len = strlen(path);
	const char *slash = strrchr(path, '/');
	char dir[4096];
	*dirfd = -1;
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	if (len < sizeof sa->sun_path) {
		memcpy(sa->sun_path, path, len + 1);
		return 0;
	}
	if (slash == NULL || slash == path || (size_t)(slash - path) >= sizeof dir) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	*dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);    /* owns: *dirfd */
	if (*dirfd < 0)
		return -1;
	if (snprintf(sa->sun_path, sizeof sa->sun_path, "/proc/self/fd/%d/%s", *dirfd, slash + 1)
	    >= (int)sizeof sa->sun_path) {
		close(*dirfd);
		*dirfd = -1;
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* Wraps the connected socket fd in a transport (pushed) followed by the
 * peer's uid and pid (SO_PEERCRED); returns 3, or a failure (fd closed).
 * path: what tostring shows, or NULL for "uid U pid P". */
static int push_connection(lua_State *L, int fd, const char *path)
{
	dt_transport *t;
	struct ucred cr;
	socklen_t n = sizeof cr;
	char peer[112];
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &n) != 0 || n != sizeof cr) {
		int e = errno;
		close(fd);
		return dt_push_failf(L, DT_ESYSTEM, "cannot tell who is at the other end of a socket: %s",
		                     strerror(e));
	}
	if (path != NULL)
		snprintf(peer, sizeof peer, "%s", path);
	else
		snprintf(peer, sizeof peer, "uid %lu pid %ld", (unsigned long)cr.uid, (long)cr.pid);
	t = dt_pipe_new_socket(fd, peer);            /* owns: fd, from here */
	if (t == NULL) {
		close(fd);
		return dt_push_fail(L, DT_ENOMEM, "out of memory for a socket transport");
	}
	dt_transport_push(L, t);                     /* ... tr */
	lua_pushinteger(L, (lua_Integer)cr.uid);     /* ... tr uid */
	lua_pushinteger(L, (lua_Integer)cr.pid);     /* ... tr uid pid */
	return 3;
}

/* core.unix.connect(path, deadline) -> Transport, uid, pid | nil, message, code
 * Connects to the socket at path; uid and pid: who listens there (the
 * caller decides whether to talk to it). A full backlog is waited out
 * until deadline ("timeout"); no socket there, nobody listening, or no
 * permission: "connect_failed". */
static int l_connect(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	double deadline = dt_checkdeadline(L, 2);
	struct sockaddr_un sa;
	int fd, dirfd, rc, e;
	if (address(path, &sa, &dirfd) != 0) {
		e = errno;
		return dt_push_failf(L, DT_ECONNECT, "cannot connect to %s: %s", path, strerror(e));
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);      /* owns: fd */
	if (fd < 0) {
		e = errno;
		if (dirfd >= 0)
			close(dirfd);
		return dt_push_failf(L, DT_ESYSTEM, "cannot make a socket: %s", strerror(e));
	}
	/* A blocking connect waits only while the listener's backlog is full:
	 * bounded by the send timeout, the time left. */
	for (;;) {
		int ms = dt_poll_ms(deadline);
		struct timeval tv;
		if (ms < 0) {
			tv.tv_sec = 0;
			tv.tv_usec = 0;                      /* no deadline: wait as long as it takes */
		} else {
			if (ms == 0)
				ms = 1;                          /* (0 would mean "forever") */
			tv.tv_sec = ms / 1000;
			tv.tv_usec = (ms % 1000) * 1000;
		}
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
		if (rc == 0 || errno != EINTR)
			break;
	}
	e = errno;
	if (dirfd >= 0)
		close(dirfd);
	if (rc != 0) {
		close(fd);
		if (e == EAGAIN || e == EWOULDBLOCK || e == EINPROGRESS)
			return dt_push_failf(L, DT_ETIMEOUT, "timed out connecting to %s", path);
		return dt_push_failf(L, DT_ECONNECT, "cannot connect to %s: %s", path, strerror(e));
	}
	{
		struct timeval none = {0, 0};
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
	}
	return push_connection(L, fd, path);
}

/* core.unix.listen(path) -> Listener | nil, message, code
 * A socket bound at path (nothing may be there: "system" otherwise),
 * 0600, listening. It is bound, made 0600 and listening under a name of
 * its own first, then linked at path: who sees path can connect at once
 * (a socket bound but not yet listening refuses). Its directory is what
 * keeps others out: the caller makes it 0700 and checks each peer's uid. */
static int l_listen(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	struct sockaddr_un sa;
	struct stat st;
	listener_t *l;
	char tmp[sizeof l->path + 32];
	int fd, dirfd, e;
	luaL_argcheck(L, strlen(path) < sizeof l->path, 1, "path too long");
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
	if (address(tmp, &sa, &dirfd) != 0) {
		e = errno;
		return dt_push_failf(L, DT_ESYSTEM, "cannot listen at %s: %s", path, strerror(e));
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);   /* owns: fd */
	if (fd < 0) {
		e = errno;
		if (dirfd >= 0)
			close(dirfd);
		return dt_push_failf(L, DT_ESYSTEM, "cannot make a socket: %s", strerror(e));
	}
	/* (a socket left at our name by a process of this pid killed before
	 * it linked: ours to remove; anything else there stays, and bind says) */
	if (lstat(tmp, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == geteuid())
		unlink(tmp);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		e = errno;
		if (dirfd >= 0)
			close(dirfd);
		close(fd);
		return dt_push_failf(L, DT_ESYSTEM, "cannot listen at %s: %s", path, strerror(e));
	}
	if (dirfd >= 0)
		close(dirfd);
	/* (fchmod does not reach a socket's file: the path does; the 0700
	 * directory keeps others out meanwhile) */
	if (chmod(tmp, 0600) != 0 || lstat(tmp, &st) != 0 || listen(fd, 64) != 0 || link(tmp, path) != 0) {
		e = errno;
		unlink(tmp);
		close(fd);
		return dt_push_failf(L, DT_ESYSTEM, "cannot listen at %s: %s", path, strerror(e));
	}
	unlink(tmp);
	l = (listener_t *)lua_newuserdata(L, sizeof *l);   /* ... l */
	l->fd = fd;                                        /* owns: fd, now l's */
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	snprintf(l->path, sizeof l->path, "%s", path);
	luaL_getmetatable(L, DT_LISTENER_MT);
	lua_setmetatable(L, -2);
	return 1;
}

static listener_t *check_listener(lua_State *L)
{
	return (listener_t *)luaL_checkudata(L, 1, DT_LISTENER_MT);
}

/* listener:accept() -> Transport, uid, pid | false | nil, message, code
 * The next connection waiting (false: none now; never waits), with who
 * made it. */
static int l_accept(lua_State *L)
{
	listener_t *l = check_listener(L);
	int fd, e;
	if (l->fd < 0)
		return dt_push_fail(L, DT_ECLOSED, "the listener is closed");
	do {
		fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);   /* owns: fd */
	} while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		e = errno;
		/* (a client that gave up before we took it is no failure) */
		if (e == EAGAIN || e == EWOULDBLOCK || e == ECONNABORTED) {
			lua_pushboolean(L, 0);
			return 1;
		}
		return dt_push_failf(L, DT_ESYSTEM, "accept on %s: %s", l->path, strerror(e));
	}
	return push_connection(L, fd, NULL);
}

/* listener:fd() -> the descriptor to poll for readability (nil once closed) */
static int l_fd(lua_State *L)
{
	listener_t *l = check_listener(L);
	if (l->fd < 0)
		lua_pushnil(L);
	else
		lua_pushinteger(L, l->fd);
	return 1;
}

/* listener:close(): stops listening and removes the socket file, if the
 * file at its path is still the one it bound. Idempotent; __gc and
 * __close too. */
static int l_close(lua_State *L)
{
	listener_t *l = check_listener(L);
	if (l->fd >= 0) {
		struct stat st;
		if (lstat(l->path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == l->dev
		    && st.st_ino == l->ino)
			unlink(l->path);
		close(l->fd);                                  /* frees: fd */
		l->fd = -1;
	}
	return 0;
}

static int l_tostring(lua_State *L)
{
	listener_t *l = check_listener(L);
	lua_pushfstring(L, "Listener(%s, %s)", l->path, l->fd >= 0 ? "listening" : "closed");
	return 1;
}

void dt_unix_open(lua_State *L)
{
	static const luaL_Reg methods[] = {
		{"accept", l_accept},
		{"fd", l_fd},
		{"close", l_close},
		{NULL, NULL}
	};
	static const dt_class cls = { DT_LISTENER_MT, methods, l_close, l_tostring, NULL };
	static const luaL_Reg funcs[] = {
		{"connect", l_connect},
		{"listen", l_listen},
		{NULL, NULL}
	};
	dt_class_register(L, &cls);
	dt_open_part(L, "unix", funcs);
}
