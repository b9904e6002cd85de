/* fs.c - files and directories: temporary directories (create one,
 * remove a tree), directories of private state (mkdirs), writing a file
 * whole, a lock taken with flock, what a path is and whose (lstat), a
 * mode changed, whether a descriptor is a terminal, how wide it is, and
 * its keys read one at a time (term_raw, for a line editor of the command
 * line).
 *
 * Used for the throw-away Chromium profile and the background browser's
 * record. Removal does not follow symlinks and stays on the directory it
 * was given. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "fs.h"
#include "nopipe.h"
#include "dt.h"

/* Removes everything below the directory open as dfd; closes dfd. */
static int rm_below(int dfd, int depth)
{
	DIR *d;
	struct dirent *e;
	int rc = 0;
	if (depth > 64) {
		close(dfd);
		errno = ELOOP;
		return -1;
	}
	d = fdopendir(dfd);                 /* owns: dfd from here on */
	if (d == NULL) {
		close(dfd);
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno != ENOENT)
				rc = -1;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), e->d_name,
			                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0 || rm_below(sub, depth + 1) != 0)
				rc = -1;
			if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0 && errno != ENOENT)
				rc = -1;
		} else if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno != ENOENT) {
			rc = -1;
		}
	}
	closedir(d);
	return rc;
}

int dt_rmtree(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (rm_below(fd, 0) != 0)
		return -1;
	if (rmdir(path) != 0 && errno != ENOENT)
		return -1;
	return 0;
}

/* core.fs.mkdtemp(prefix) -> path | nil, message
 * The path is absolute, a relative TMPDIR taken from the working
 * directory: it is recorded, and used later from other directories (a
 * background browser's profile, removed by a `browser stop` run
 * elsewhere). */
static int l_mkdtemp(lua_State *L)
{
	const char *prefix = luaL_optstring(L, 1, "devtools_tools-");
	const char *tmp = getenv("TMPDIR");
	char path[4096], cwd[4096];
	int n;
	if (strchr(prefix, '/') != NULL)
		return luaL_argerror(L, 1, "prefix must not contain '/'");
	if (tmp == NULL || tmp[0] == '\0')
		tmp = "/tmp";
	if (tmp[0] == '/')
		n = snprintf(path, sizeof path, "%s/%sXXXXXX", tmp, prefix);
	else if (getcwd(cwd, sizeof cwd) != NULL)
		n = snprintf(path, sizeof path, "%s/%s/%sXXXXXX", cwd, tmp, prefix);
	else {
		lua_pushnil(L);
		lua_pushfstring(L, "cannot create a temporary directory in %s: the working directory: %s",
		                tmp, strerror(errno));
		return 2;
	}
	if (n < 0 || n >= (int)sizeof path)
		return luaL_argerror(L, 1, "path too long");
	if (mkdtemp(path) == NULL) {
		lua_pushnil(L);
		lua_pushfstring(L, "cannot create a temporary directory in %s: %s",
		                tmp, strerror(errno));
		return 2;
	}
	lua_pushstring(L, path);
	return 1;
}

/* core.fs.rmtree(path) -> true | nil, message */
static int l_rmtree(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	if (path[0] == '\0' || strcmp(path, "/") == 0)
		return luaL_argerror(L, 1, "refusing to remove this path");
	if (dt_rmtree(path) != 0) {
		lua_pushnil(L);
		lua_pushfstring(L, "cannot remove %s: %s", path, strerror(errno));
		return 2;
	}
	lua_pushboolean(L, 1);
	return 1;
}

static int write_all(int fd, const char *data, size_t len)
{
	dt_nopipe np;
	dt_nopipe_begin(&np);               /* a FIFO whose reader left: EPIPE */
	while (len > 0) {
		ssize_t n = write(fd, data, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			dt_nopipe_end(&np, errno == EPIPE);
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	dt_nopipe_end(&np, 0);
	return 0;
}

/* core.fs.write_file(path, data [, mode]) -> true | nil, message
 * A regular file (or none yet) is replaced whole: the data goes to a new
 * file of a unique name beside it, renamed over it once complete (with
 * mode, e.g. 0600, it gets that mode, never more at any moment; else an
 * existing file's mode is kept and a new one gets 0666 less the umask).
 * Anything else at path (a symlink, a device such as /dev/null, a FIFO) is
 * written through, as a shell's `>` would: never replaced. A FIFO nobody
 * reads is an error at once, not a wait; a path with a NUL byte or too
 * long is an error too. */
static int l_write_file(lua_State *L)
{
	size_t len, plen;
	const char *path = luaL_checklstring(L, 1, &plen);
	const char *data = luaL_checklstring(L, 2, &len);
	lua_Integer want = luaL_optinteger(L, 3, -1);
	char tmp[4096];
	const char *slash;
	struct stat st;
	mode_t mode, mask;
	int fd, saved, fl, exists;
	if (strlen(path) != plen) {
		lua_pushnil(L);
		lua_pushliteral(L, "cannot write a path that holds a NUL byte");
		return 2;
	}
	exists = lstat(path, &st) == 0;
	if (exists && !S_ISREG(st.st_mode)) {
		/* O_NONBLOCK: a FIFO without a reader fails (ENXIO) instead of
		 * blocking in open; writes then block as usual */
		fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0) {
			if (errno == ENXIO && stat(path, &st) == 0 && S_ISFIFO(st.st_mode)) {
				lua_pushnil(L);
				lua_pushfstring(L, "cannot write %s: it is a FIFO that no process reads", path);
				return 2;
			}
			goto fail;
		}
		fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 || write_all(fd, data, len) != 0) {
			saved = errno;
			close(fd);
			errno = saved;
			goto fail;
		}
		if (close(fd) != 0)
			goto fail;
		lua_pushboolean(L, 1);
		return 1;
	}
	luaL_argcheck(L, want == -1 || (want >= 0 && want <= 07777), 3, "a mode from 0 to 07777");
	if (want >= 0) {
		mode = (mode_t)want;
	} else if (exists) {
		mode = st.st_mode & 07777;
	} else {
		mask = umask(0);
		umask(mask);
		mode = 0666 & ~mask;
	}
	slash = strrchr(path, '/');
	/* the temporary name: ".NAME.XXXXXX" beside it, NAME cut to 200 bytes
	 * (a name of up to 255 bytes is allowed, the temporary one too) */
	if (slash == NULL ? snprintf(tmp, sizeof tmp, ".%.200s.XXXXXX", path) >= (int)sizeof tmp
	    : snprintf(tmp, sizeof tmp, "%.*s.%.200s.XXXXXX", (int)(slash - path + 1), path,
	               slash + 1) >= (int)sizeof tmp) {
		errno = ENAMETOOLONG;
		goto fail;
	}
	fd = mkstemp(tmp);
	if (fd < 0)
		goto fail;
	if (write_all(fd, data, len) != 0 || fchmod(fd, mode) != 0) {
		saved = errno;
		close(fd);
		unlink(tmp);
		errno = saved;
		goto fail;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		saved = errno;
		unlink(tmp);
		errno = saved;
		goto fail;
	}
	lua_pushboolean(L, 1);
	return 1;
fail:
	lua_pushnil(L);
	lua_pushfstring(L, "cannot write %s: %s", path, strerror(errno));
	return 2;
}

/* core.fs.exists(path) -> boolean: something is there (a link is not followed) */
static int l_exists(lua_State *L)
{
	struct stat st;
	lua_pushboolean(L, lstat(luaL_checkstring(L, 1), &st) == 0);
	return 1;
}

/* core.fs.lstat(path) -> {type, mode, uid, nlink} | nil, message, code
 * What is at path, not following a link: type "file", "directory",
 * "link", "socket" or "other"; mode, the permission bits (07777); uid,
 * the owner's. Nothing there: nil, message, "closed"; another failure:
 * "system". */
static int l_lstat(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	struct stat st;
	const char *type;
	if (lstat(path, &st) != 0) {
		int e = errno;
		return dt_push_failf(L, e == ENOENT || e == ENOTDIR ? DT_ECLOSED : DT_ESYSTEM,
		                     "cannot look at %s: %s", path, strerror(e));
	}
	type = S_ISREG(st.st_mode) ? "file" : S_ISDIR(st.st_mode) ? "directory"
	     : S_ISLNK(st.st_mode) ? "link" : S_ISSOCK(st.st_mode) ? "socket" : "other";
	lua_createtable(L, 0, 4);
	lua_pushstring(L, type);
	lua_setfield(L, -2, "type");
	lua_pushinteger(L, (lua_Integer)(st.st_mode & 07777));
	lua_setfield(L, -2, "mode");
	lua_pushinteger(L, (lua_Integer)st.st_uid);
	lua_setfield(L, -2, "uid");
	lua_pushinteger(L, (lua_Integer)st.st_nlink);
	lua_setfield(L, -2, "nlink");
	return 1;
}

/* core.fs.chmod(path, mode) -> true | nil, message, code ("system"). A
 * link is not followed: refused. */
static int l_chmod(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	lua_Integer mode = luaL_checkinteger(L, 2);
	int fd, e;
	luaL_argcheck(L, mode >= 0 && mode <= 07777, 2, "a mode from 0 to 07777");
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);    /* owns: fd */
	if (fd < 0 || fchmod(fd, (mode_t)mode) != 0) {
		e = errno;
		if (fd >= 0)
			close(fd);
		return dt_push_failf(L, DT_ESYSTEM, "cannot change the mode of %s: %s", path, strerror(e));
	}
	close(fd);
	lua_pushboolean(L, 1);
	return 1;
}

/* core.fs.is_executable(path) -> boolean: a regular file we may execute */
static int l_is_executable(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	struct stat st;
	lua_pushboolean(L, stat(path, &st) == 0 && S_ISREG(st.st_mode)
	                   && access(path, X_OK) == 0);
	return 1;
}

/* core.fs.isatty(fd) -> boolean: descriptor fd is a terminal */
static int l_isatty(lua_State *L)
{
	lua_Integer fd = luaL_checkinteger(L, 1);
	lua_pushboolean(L, fd >= 0 && fd <= 1 << 20 && isatty((int)fd));
	return 1;
}

/* core.fs.term_size(fd) -> columns, rows | nil: the size of the terminal
 * descriptor fd is (nil: not a terminal, or one that tells no size) */
static int l_term_size(lua_State *L)
{
	lua_Integer fd = luaL_checkinteger(L, 1);
	struct winsize ws;
	if (fd < 0 || fd > 1 << 20 || ioctl((int)fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) {
		lua_pushnil(L);
		return 1;
	}
	lua_pushinteger(L, ws.ws_col);
	lua_pushinteger(L, ws.ws_row);
	return 2;
}

/* core.fs.mkdirs(path [, mode]) -> true | nil, message
 * Makes the directory and those above it that are missing, each with
 * mode (default 0700: the directories of a program's private state). A
 * directory already there is left as it is. */
static int l_mkdirs(lua_State *L)
{
	size_t len;
	const char *path = luaL_checklstring(L, 1, &len);
	lua_Integer mode = luaL_optinteger(L, 2, 0700);
	char buf[4096];
	size_t i;
	struct stat st;
	luaL_argcheck(L, mode >= 0 && mode <= 07777, 2, "a mode from 0 to 07777");
	if (len == 0 || len >= sizeof buf || strlen(path) != len)
		return luaL_argerror(L, 1, "a path, shorter than 4096 bytes, without NUL");
	memcpy(buf, path, len + 1);
	for (i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, (mode_t)mode) != 0 && errno != EEXIST)
			goto fail;
		buf[i] = path[i];
	}
	if (stat(path, &st) != 0)
		goto fail;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		goto fail;
	}
	lua_pushboolean(L, 1);
	return 1;
fail:
	lua_pushnil(L);
	lua_pushfstring(L, "cannot create the directory %s: %s", path, strerror(errno));
	return 2;
}

/* ---- Lock: one holder at a time, across processes ------------------------ */

#define DT_LOCK_MT "devtools_tools.Lock"

typedef struct {
	int fd;                 /* the locked file, or -1 once released */
} lock_t;

/* core.fs.lock(path) -> Lock | false | nil, message, code
 * Takes an exclusive lock (flock) on the file at path, created 0600 if
 * missing: false when another process (or another Lock here) holds it,
 * at once (the caller decides how long to try). The kernel releases it
 * when the holder ends, however it ends: a killed holder leaves no stale
 * lock. lock:release() (also __gc and __close) gives it back. */
static int l_lock(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	lock_t *lk;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);   /* owns: fd */
	if (fd < 0) {
		int e = errno;
		return dt_push_failf(L, DT_ESYSTEM, "cannot open the lock %s: %s", path, strerror(e));
	}
	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;
		if (e == EINTR)
			continue;
		close(fd);
		if (e == EWOULDBLOCK) {
			lua_pushboolean(L, 0);
			return 1;
		}
		return dt_push_failf(L, DT_ESYSTEM, "cannot lock %s: %s", path, strerror(e));
	}
	lk = (lock_t *)lua_newuserdata(L, sizeof *lk);
	lk->fd = fd;                                       /* owns: fd, now the lock's */
	luaL_getmetatable(L, DT_LOCK_MT);
	lua_setmetatable(L, -2);
	return 1;
}

static int l_lock_release(lua_State *L)
{
	lock_t *lk = (lock_t *)luaL_checkudata(L, 1, DT_LOCK_MT);
	if (lk->fd >= 0) {
		close(lk->fd);                                 /* frees: the lock with it */
		lk->fd = -1;
	}
	return 0;
}

static int l_lock_tostring(lua_State *L)
{
	lock_t *lk = (lock_t *)luaL_checkudata(L, 1, DT_LOCK_MT);
	lua_pushstring(L, lk->fd >= 0 ? "Lock(held)" : "Lock(released)");
	return 1;
}

/* ---- TermMode: a terminal read key by key, and put back ------------------- */

#define DT_TERM_MT "devtools_tools.TermMode"

typedef struct {
	int fd;                 /* the terminal, or -1 once restored */
	struct termios saved;   /* its settings before term_raw */
} term_t;

/* core.fs.term_raw(fd) -> TermMode | nil, message, code
 * Sets the terminal fd so that each key is read as it is typed: no line
 * buffering, no echo, and Ctrl-C, Ctrl-Z, Ctrl-\, Ctrl-S, Ctrl-Q, Ctrl-V
 * and CR arrive as bytes (no signal is sent, no flow is stopped); output
 * is left as it was (a newline still starts the next line).
 * mode:restore() (also __gc and __close) puts the settings back; it never
 * waits for output to drain. Installs no signal handler: a process killed
 * outright leaves the terminal as it was set, which shells put back. */
static int l_term_raw(lua_State *L)
{
	lua_Integer fd = luaL_checkinteger(L, 1);
	struct termios t;
	term_t *tm;
	luaL_argcheck(L, fd >= 0 && fd <= 1 << 20, 1, "not a file descriptor");
	if (tcgetattr((int)fd, &t) != 0) {
		int e = errno;
		return dt_push_failf(L, DT_ESYSTEM, "not a terminal: %s", strerror(e));
	}
	tm = (term_t *)lua_newuserdata(L, sizeof *tm);     /* ... mode */
	tm->fd = -1;
	tm->saved = t;
	luaL_getmetatable(L, DT_TERM_MT);
	lua_setmetatable(L, -2);
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG | IEXTEN);
	t.c_iflag &= ~(tcflag_t)(IXON | ICRNL | INLCR | IGNCR | BRKINT | ISTRIP);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	while (tcsetattr((int)fd, TCSANOW, &t) != 0) {
		int e = errno;
		if (e == EINTR)
			continue;
		return dt_push_failf(L, DT_ESYSTEM, "cannot set the terminal: %s", strerror(e));
	}
	tm->fd = (int)fd;                                  /* owns: restoring it */
	return 1;
}

static int l_term_restore(lua_State *L)
{
	term_t *tm = (term_t *)luaL_checkudata(L, 1, DT_TERM_MT);
	if (tm->fd >= 0) {
		while (tcsetattr(tm->fd, TCSANOW, &tm->saved) != 0 && errno == EINTR)
			;
		tm->fd = -1;
	}
	return 0;
}

static int l_term_tostring(lua_State *L)
{
	term_t *tm = (term_t *)luaL_checkudata(L, 1, DT_TERM_MT);
	if (tm->fd >= 0)
		lua_pushfstring(L, "TermMode(raw, fd %d)", tm->fd);
	else
		lua_pushliteral(L, "TermMode(restored)");
	return 1;
}

void dt_fs_open(lua_State *L)
{
	static const luaL_Reg lock_methods[] = {
		{"release", l_lock_release},
		{NULL, NULL}
	};
	static const dt_class lock_cls = { DT_LOCK_MT, lock_methods, l_lock_release, l_lock_tostring, NULL };
	static const luaL_Reg term_methods[] = {
		{"restore", l_term_restore},
		{NULL, NULL}
	};
	static const dt_class term_cls = { DT_TERM_MT, term_methods, l_term_restore, l_term_tostring, NULL };
	static const luaL_Reg funcs[] = {
		{"exists", l_exists},
		{"lstat", l_lstat},
		{"chmod", l_chmod},
		{"is_executable", l_is_executable},
		{"mkdtemp", l_mkdtemp},
		{"rmtree", l_rmtree},
		{"write_file", l_write_file},
		{"mkdirs", l_mkdirs},
		{"isatty", l_isatty},
		{"term_size", l_term_size},
		{"term_raw", l_term_raw},
		{"lock", l_lock},
		{NULL, NULL}
	};
	dt_class_register(L, &lock_cls);
	dt_class_register(L, &term_cls);
	dt_open_part(L, "fs", funcs);
}
