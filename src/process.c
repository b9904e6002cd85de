/* process.c - child processes: spawn by argv (no shell), wait with a
 * deadline, kill, reap, and remove the child's scratch directory.
 *
 * The child runs in a process group of its own, so that close() can end
 * the helpers Chromium forks (renderers, zygote) along with it. We learn of
 * the child's exit without reaping it (waitid WNOWAIT): the zombie keeps
 * its pid, and so its process group id, from being reused until we have
 * killed the group; only then is it reaped. The last-resort cleanup lives
 * here, on the userdata, because __gc on plain tables never runs on
 * LuaJIT/5.1.
 *
 * A child with a cleanup_dir (or opts.reaper) also gets a reaper: a small
 * /bin/sh, in a session of its own, that waits on a socket whose other end
 * only we hold. When we close the process we tell it "done" and it exits;
 * when our process ends any other way (SIGKILL included) it reads EOF,
 * kills the child's process group and whatever holds its output pipe, and
 * removes the directory. No signal handler is installed in the host.
 *
 * __gc never waits long: it kills the group at once (no grace), waits at
 * most GC_WAIT for the exit, and if the child is not gone by then leaves
 * the directory to the reaper and the zombie to the next spawn (or exit).
 * Depends on: pipe.h, ring.h, fs.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pipe.h"
#include "ring.h"
#include "fs.h"
#include "dt.h"

#define DT_PROCESS_MT "devtools_tools.Process"
#define GC_WAIT 0.2             /* seconds __gc waits for a killed child to exit */

extern char **environ;

typedef struct proc_s {
	pid_t pid;              /* 0 once reaped */
	int pidfd;              /* pollable exit notification, or -1 */
	int exited;             /* the child has exited (maybe not reaped) */
	int status_code;        /* exit code, or -1 */
	int status_signal;      /* terminating signal, or 0 */
	int errfd;              /* our copy of the stderr read end, or -1 */
	dt_ring *ring;          /* shared with the pipe transport; one ref */
	char *cleanup_dir;      /* owned; removed by close, or NULL */
	unsigned long err_ino;  /* inode of the child's stdout/stderr pipe */
	int reaper_fd;          /* our end of the reaper's socket, or -1 */
	struct proc_s *next_live;   /* in the list of children not closed yet */
} proc_t;

/* Children not closed yet. A program that ends with os.exit() (which
 * skips the collector) or exit() still ends them and removes their
 * directories: the list is walked by an atexit handler. */
static proc_t *live_list = NULL;
static pid_t live_owner = 0;    /* a forked child's exit must not end them */

static void live_add(proc_t *p)
{
	live_owner = getpid();
	p->next_live = live_list;
	live_list = p;
}

static void live_remove(proc_t *p)
{
	proc_t **pp;
	for (pp = &live_list; *pp != NULL; pp = &(*pp)->next_live) {
		if (*pp == p) {
			*pp = p->next_live;
			return;
		}
	}
}

static proc_t *check_proc(lua_State *L)
{
	return (proc_t *)luaL_checkudata(L, 1, DT_PROCESS_MT);
}

/* Children __gc killed but could not wait for: reaped at the next spawn
 * and at exit, so that no zombie stays for the program's life. */
#define MAX_ORPHANS 64
static pid_t orphans[MAX_ORPHANS];

static void reap_orphans(void)
{
	int i;
	for (i = 0; i < MAX_ORPHANS; i++)
		if (orphans[i] > 0 && waitpid(orphans[i], NULL, WNOHANG) != 0)
			orphans[i] = 0;     /* reaped, or not ours any more */
}

static void add_orphan(pid_t pid)
{
	int i;
	for (i = 0; i < MAX_ORPHANS; i++) {
		if (orphans[i] <= 0) {
			orphans[i] = pid;
			return;
		}
	}
}

#define sleep_ms dt_sleep_ms

/* Has the child exited? Records its status, does not reap. */
static int poll_exit(proc_t *p)
{
	siginfo_t info;
	if (p->exited || p->pid == 0)
		return 1;
	memset(&info, 0, sizeof info);
	if (waitid(P_PID, (id_t)p->pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
		if (errno == ECHILD) {          /* someone else reaped it */
			p->exited = 1;
			p->status_code = -1;
		}
		return p->exited;
	}
	if (info.si_pid != p->pid)
		return 0;
	p->exited = 1;
	if (info.si_code == CLD_EXITED) {
		p->status_code = info.si_status;
		p->status_signal = 0;
	} else {
		p->status_code = -1;
		p->status_signal = info.si_status;
	}
	return 1;
}

/* Waits for the exit until deadline (< 0: forever). Returns 1 if exited. */
static int wait_exit(proc_t *p, double deadline)
{
	while (!poll_exit(p)) {
		int ms = dt_poll_ms(deadline);
		if (ms == 0)
			return 0;
		dt_ring_drain_fd(p->ring, &p->errfd);
		if (p->pidfd >= 0) {
			struct pollfd fds[2];
			int n = 1;
			fds[0].fd = p->pidfd; fds[0].events = POLLIN;
			if (p->errfd >= 0) {
				fds[1].fd = p->errfd; fds[1].events = POLLIN; n = 2;
			}
			if (poll(fds, (nfds_t)n, ms) < 0 && errno != EINTR)
				sleep_ms(5);
		} else {
			sleep_ms(ms < 0 || ms > 5 ? 5 : ms);   /* no pidfd: short naps */
		}
	}
	return 1;
}

/* Chromium's crash handlers leave the process group (they call setsid) and
 * can outlive the browser. They inherit the child's stdout/stderr: any
 * process still writing into our pipe is one of ours, whatever its group. */
static void kill_pipe_holders(proc_t *p)
{
	DIR *d;
	struct dirent *e;
	char want[64], path[64], got[64];
	if (p->err_ino == 0 || (d = opendir("/proc")) == NULL)
		return;
	snprintf(want, sizeof want, "pipe:[%lu]", p->err_ino);
	while ((e = readdir(d)) != NULL) {
		ssize_t n;
		long pid = strtol(e->d_name, NULL, 10);
		if (pid <= 1 || pid == (long)getpid())
			continue;
		snprintf(path, sizeof path, "/proc/%ld/fd/2", pid);
		n = readlink(path, got, sizeof got - 1);
		if (n <= 0)
			continue;
		got[n] = '\0';
		if (strcmp(got, want) == 0)
			kill((pid_t)pid, SIGKILL);
	}
	closedir(d);
}

/* Ends the child: SIGTERM, then SIGKILL after grace seconds (grace < 0:
 * SIGKILL to the whole group at once), then the rest of its process group
 * and whatever else holds its output pipe; reaps it. Waits at most
 * kill_wait seconds for the exit after SIGKILL; returns 0 (not reaped) if
 * the child outlived that. Idempotent. */
static int end_child_within(proc_t *p, double grace, double kill_wait)
{
	if (p->pid == 0)
		return 1;
	if (!poll_exit(p)) {
		if (grace > 0) {
			kill(p->pid, SIGTERM);
			wait_exit(p, dt_now() + grace);
		}
		if (!poll_exit(p)) {
			if (grace < 0)
				kill(-p->pid, SIGKILL);
			kill(p->pid, SIGKILL);
			if (!wait_exit(p, dt_now() + kill_wait))
				return 0;
		}
	}
	/* The unreaped leader still holds the group id: no reuse is possible. */
	kill(-p->pid, SIGKILL);
	kill_pipe_holders(p);
	while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
		;
	p->pid = 0;
	if (p->pidfd >= 0) {
		close(p->pidfd);
		p->pidfd = -1;
	}
	if (p->errfd >= 0) {
		dt_ring_drain(p->ring, p->errfd);
		close(p->errfd);
		p->errfd = -1;
	}
	return 1;
}

static void end_child(proc_t *p, double grace)
{
	end_child_within(p, grace, 5.0);
}

/* Tells the reaper we cleaned up ourselves (done) or, with done 0, lets it
 * do the cleanup now; either way closes our end. */
static void release_reaper(proc_t *p, int done)
{
	if (p->reaper_fd < 0)
		return;
	if (done)
		(void)send(p->reaper_fd, "done\n", 5, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(p->reaper_fd);
	p->reaper_fd = -1;
}

static void remove_dir(proc_t *p)
{
	int i;
	if (p->cleanup_dir == NULL)
		return;
	/* Late writes from dying helpers can re-create files: try a few times. */
	for (i = 0; i < 20 && dt_rmtree(p->cleanup_dir) != 0; i++)
		sleep_ms(10);
	free(p->cleanup_dir);
	p->cleanup_dir = NULL;
}

/* ---- spawn -------------------------------------------------------------- */

/* fd moved to 10 or above; -1 (fd closed, errno kept) if it cannot be. */
static int fd_high(int fd)
{
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, 10);
	int e = errno;
	close(fd);
	errno = e;
	return hi;
}

static void close_all(int *fds, int n)
{
	int i;
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* The reaper's script. $1: the child's pid (its process group), $2: the
 * inode of its output pipe, $3: the directory to remove (may be empty).
 * The outer shell backgrounds the watcher and exits at once (we reap it
 * in start_reaper); the watcher is then nobody's child of ours. It reads
 * fd 3 (an explicit redirection: a background job's stdin is /dev/null):
 * a line means we cleaned up; EOF means we are gone. It then kills the
 * group and every process writing to the child's output pipe (Chromium's
 * crash handlers leave the group), and looks again, 0.1 s apart, until
 * none is left (50 looks at most): one of them may start another while a
 * look runs, with a pid the look has passed (pids wrap), which would then
 * write in the directory after it is removed. A look is one find(1) over
 * /proc/N/fd/2: a readlink per process forked hundreds of times per look
 * and took seconds on a loaded machine (the loop stays for a find without
 * -lname). The system's directories are added to PATH: the owner's may
 * lack them. */
static const char reaper_script[] =
	"( read -r line <&3 && exit 0\n"
	"  PATH=${PATH:+$PATH:}/usr/bin:/bin; n=0; find=0\n"
	"  command -v find >/dev/null 2>&1 && find /proc/self/fd/2 -maxdepth 0 -lname x >/dev/null 2>&1 && find=1\n"
	"  while :; do\n"
	"    kill -KILL -- \"-$1\" \"$1\" 2>/dev/null\n"
	"    found=0\n"
	"    if [ $find = 1 ]; then\n"
	"      list=$(find /proc/[0-9]*/fd/2 -maxdepth 0 -lname \"pipe:\\[$2\\]\" 2>/dev/null)\n"
	"    else\n"
	"      list=; for f in /proc/[0-9]*/fd/2; do\n"
	"        [ \"$(readlink \"$f\" 2>/dev/null)\" = \"pipe:[$2]\" ] && list=\"$list $f\"\n"
	"      done\n"
	"    fi\n"
	"    for f in $list; do p=${f#/proc/}; kill -KILL \"${p%%/*}\" 2>/dev/null; found=1; done\n"
	"    n=$((n+1))\n"
	"    [ $found = 1 ] && [ $n -lt 50 ] || break\n"
	"    sleep 0.1\n"
	"  done\n"
	"  [ -n \"$3\" ] || exit 0\n"
	"  i=0\n"
	"  while [ -e \"$3\" ] && [ $i -lt 50 ]; do\n"
	"    rm -rf -- \"$3\" 2>/dev/null; [ -e \"$3\" ] && sleep 0.1; i=$((i+1))\n"
	"  done ) 3<&3 &\n";

/* Starts the reaper for child pid. Returns our end of its socket, or -1
 * (no /bin/sh, out of descriptors: the atexit handler and __gc remain). */
static int start_reaper(pid_t pid, unsigned long ino, const char *dir)
{
	int sv[2];
	char pidstr[24], inostr[24];
	const char *cargs[8];
	char *args[8];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	pid_t sh;
	int err, i;
	if (access("/bin/sh", X_OK) != 0)
		return -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	snprintf(pidstr, sizeof pidstr, "%ld", (long)pid);
	snprintf(inostr, sizeof inostr, "%lu", ino);
	cargs[0] = "/bin/sh";
	cargs[1] = "-c";
	cargs[2] = reaper_script;
	cargs[3] = "devtools_tools-reaper";     /* $0 */
	cargs[4] = pidstr;
	cargs[5] = inostr;
	cargs[6] = dir != NULL ? dir : "";
	cargs[7] = NULL;
	for (i = 0; i < 8; i++) {
		/* exec takes char *const[]; it does not write through them. */
		union { const char *c; char *m; } u;
		u.c = cargs[i];
		args[i] = u.m;
	}
	{
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
		posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
		posix_spawn_file_actions_addclosefrom_np(&fa, 4);
#endif
		posix_spawnattr_init(&at);
		sigemptyset(&none);
		sigfillset(&all);
		posix_spawnattr_setsigmask(&at, &none);
		posix_spawnattr_setsigdefault(&at, &all);
		/* A session of its own: the terminal's ^C and hangup, sent to our
		 * process group, must not end it. */
#ifdef POSIX_SPAWN_SETSID
		posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
		                         | POSIX_SPAWN_SETSID);
#else
		posix_spawnattr_setpgroup(&at, 0);
		posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
		                         | POSIX_SPAWN_SETPGROUP);
#endif
		err = posix_spawn(&sh, "/bin/sh", &fa, &at, args, environ);
		posix_spawn_file_actions_destroy(&fa);
		posix_spawnattr_destroy(&at);
	}
	close(sv[1]);
	if (err != 0) {
		close(sv[0]);
		return -1;
	}
	/* The outer shell exits as soon as it has backgrounded the watcher. */
	while (waitpid(sh, NULL, 0) < 0 && errno == EINTR)
		;
	return sv[0];
}

/* opts.env: {NAME = value} added to (or replacing in) the environment.
 * Returns NULL when there is nothing to change; else a NULL-terminated
 * array. Leaves two values on the stack that keep it alive: the array's
 * userdata and a table anchoring the "NAME=value" strings. */
static char **build_env(lua_State *L, int opts)
{
	size_t n = 0, extra = 0, i, k = 0;
	int env, anchor;
	char **envp;
	if (!lua_istable(L, opts))
		return NULL;
	lua_getfield(L, opts, "env");                   /* ... env */
	if (!lua_istable(L, -1)) {
		lua_pop(L, 1);
		return NULL;
	}
	env = lua_gettop(L);
	lua_pushnil(L);
	while (lua_next(L, env)) {                      /* ... env k v */
		if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
			luaL_error(L, "opts.env must map names to strings");
		extra++;
		lua_pop(L, 1);
	}
	for (n = 0; environ[n] != NULL; n++)
		;
	envp = (char **)lua_newuserdata(L, sizeof(char *) * (n + extra + 1));  /* ... env ud */
	lua_newtable(L);                                /* ... env ud anchor */
	anchor = lua_gettop(L);
	for (i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t len = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		int replaced = 0;
		lua_pushnil(L);
		while (lua_next(L, env)) {                  /* ... k v */
			size_t klen;
			const char *key = lua_tolstring(L, -2, &klen);
			if (klen == len && memcmp(key, environ[i], len) == 0)
				replaced = 1;
			lua_pop(L, 1);                          /* ... k */
		}
		if (!replaced)
			envp[k++] = environ[i];
	}
	lua_pushnil(L);
	while (lua_next(L, env)) {                      /* ... k v */
		union { const char *c; char *m; } u;
		lua_pushvalue(L, -2);                       /* ... k v k */
		lua_pushliteral(L, "=");
		lua_pushvalue(L, -3);                       /* ... k v k "=" v */
		lua_concat(L, 3);                           /* ... k v "k=v" */
		u.c = lua_tostring(L, -1);
		envp[k++] = u.m;                            /* alive in anchor */
		lua_rawseti(L, anchor, (int)k);             /* ... k v */
		lua_pop(L, 1);                              /* ... k */
	}
	envp[k] = NULL;
	lua_remove(L, env);                             /* ... ud anchor */
	return envp;
}

/* core.process.spawn(argv [, opts]) -> Process [, Transport] | nil, message, code
 * argv: {path, arg1, ...}; path is executed as is (no PATH search, no
 * shell). opts: pipe (bool: give the child fds 3 and 4 as a CDP pipe and
 * return the Transport too), stderr_size (bytes of stderr to keep, default
 * 65536), cleanup_dir (removed when the process is closed, or by the reaper
 * if this program ends without closing it), reaper (start the reaper even
 * without a cleanup_dir), stdio (bool: the child's stdin and stdout are
 * pipes; a table {stdin = fd, stdout = fd} of our ends comes last, for
 * core.fd.write, core.fd.read and core.fd.close; stderr still goes to the
 * ring). Failures: "spawn_failed", "no_memory". */
static int l_spawn(lua_State *L)
{
	int argc, i, err, fa_made = 0;
	char **argv, **envp;
	int want_pipe = 0, want_reaper = 0, want_stdio = 0;
	int in[2] = {-1, -1}, out[2] = {-1, -1};
	size_t ring_size = 65536;
	const char *cleanup = NULL;
	int to_child[2] = {-1, -1}, from_child[2] = {-1, -1}, errp[2] = {-1, -1};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, def;
	pid_t pid;
	proc_t *p;
	dt_ring *ring;

	luaL_checktype(L, 1, LUA_TTABLE);
	argc = (int)dt_rawlen(L, 1);
	luaL_argcheck(L, argc >= 1, 1, "argv must hold at least the program path");
	if (lua_istable(L, 2)) {
		lua_getfield(L, 2, "pipe");
		want_pipe = lua_toboolean(L, -1);
		lua_getfield(L, 2, "stderr_size");
		if (!lua_isnil(L, -1)) {
			lua_Number n = luaL_checknumber(L, -1);
			luaL_argcheck(L, n >= 1 && n <= 1 << 30 && n == (lua_Number)(size_t)n, 2,
			              "stderr_size must be a whole number of bytes from 1 to 2^30");
			ring_size = (size_t)n;
		}
		lua_getfield(L, 2, "cleanup_dir");
		cleanup = lua_tostring(L, -1);         /* kept alive by opts */
		lua_getfield(L, 2, "reaper");
		want_reaper = lua_toboolean(L, -1);
		lua_getfield(L, 2, "stdio");
		want_stdio = lua_toboolean(L, -1);
		lua_pop(L, 5);
	}
	argv = (char **)lua_newuserdata(L, sizeof(char *) * (size_t)(argc + 1));
	for (i = 0; i < argc; i++) {
		lua_rawgeti(L, 1, i + 1);
		if (lua_type(L, -1) != LUA_TSTRING)
			return luaL_argerror(L, 1, "argv entries must be strings");
		{
			/* exec takes char *const[]; it does not write through them. */
			union { const char *c; char *m; } u;
			u.c = lua_tostring(L, -1);         /* kept alive by the argv table */
			argv[i] = u.m;
		}
		lua_pop(L, 1);
	}
	argv[argc] = NULL;
	envp = build_env(L, 2);                    /* owned by a userdata on the stack */
	reap_orphans();

	/* posix_spawn reports a failed exec on glibc, but not everywhere (not
	 * under valgrind, for one): check first, so the message is always ours. */
	if (access(argv[0], X_OK) != 0) {
		int e = errno;
		lua_pushnil(L);
		lua_pushfstring(L, "cannot run %s: %s", argv[0], strerror(e));
		lua_pushliteral(L, "spawn_failed");
		return 3;
	}
	ring = dt_ring_new(ring_size);             /* owns: one ref, given to p below */
	if (ring == NULL)
		return dt_push_fail(L, DT_ENOMEM, "out of memory for the child's output ring");
	if ((want_pipe && (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0))
	    || (want_stdio && (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0))
	    || pipe2(errp, O_CLOEXEC) != 0) {
		int e = errno;
		int fds[10] = {to_child[0], to_child[1], from_child[0], from_child[1], errp[0], errp[1],
		               in[0], in[1], out[0], out[1]};
		close_all(fds, 10);
		dt_ring_unref(ring);
		lua_pushnil(L);
		lua_pushfstring(L, "cannot create pipes: %s", strerror(e));
		lua_pushliteral(L, "spawn_failed");
		return 3;
	}
	/* Child ends go high first so that dup2 onto 3 and 4 cannot clobber
	 * (no descriptor free at 10 or above: the table is full). */
	if (want_stdio) {
		in[0] = fd_high(in[0]);
		out[1] = in[0] >= 0 ? fd_high(out[1]) : (close(out[1]), -1);
	}
	if (want_pipe) {
		to_child[0] = fd_high(to_child[0]);
		from_child[1] = to_child[0] >= 0 ? fd_high(from_child[1]) : (close(from_child[1]), -1);
	}
	if ((want_pipe && (to_child[0] < 0 || from_child[1] < 0)) || (want_stdio && (in[0] < 0 || out[1] < 0))) {
		int e = errno;
		int fds[10] = {to_child[0], to_child[1], from_child[0], from_child[1], errp[0], errp[1],
		               in[0], in[1], out[0], out[1]};
		close_all(fds, 10);
		dt_ring_unref(ring);
		lua_pushnil(L);
		lua_pushfstring(L, "cannot create pipes: no file descriptor free at 10 or above (%s)",
		                strerror(e));
		lua_pushliteral(L, "spawn_failed");
		return 3;
	}

	/* Each step says whether it could be recorded (out of memory): a
	 * child started without its descriptors would never answer. */
	err = posix_spawn_file_actions_init(&fa);
	fa_made = err == 0;
	if (err == 0)
		err = want_stdio ? posix_spawn_file_actions_adddup2(&fa, in[0], 0)
		                 : posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (err == 0)
		err = posix_spawn_file_actions_adddup2(&fa, want_stdio ? out[1] : errp[1], 1);
	if (err == 0)
		err = posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
	if (err == 0 && want_pipe)
		err = posix_spawn_file_actions_adddup2(&fa, to_child[0], 3);
	if (err == 0 && want_pipe)
		err = posix_spawn_file_actions_adddup2(&fa, from_child[1], 4);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
	/* Do not leak the embedding program's other descriptors. */
	if (err == 0)
		err = posix_spawn_file_actions_addclosefrom_np(&fa, want_pipe ? 5 : 3);
#endif
	if (err == 0)
		err = posix_spawnattr_init(&at);
	if (err == 0) {
		sigemptyset(&none);
		sigemptyset(&def);
		sigaddset(&def, SIGPIPE);      /* (a host may ignore it; the child must not) */
		sigaddset(&def, SIGCHLD);
		posix_spawnattr_setsigmask(&at, &none);
		posix_spawnattr_setsigdefault(&at, &def);
		posix_spawnattr_setpgroup(&at, 0);
		posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK
		                         | POSIX_SPAWN_SETSIGDEF);
		err = posix_spawn(&pid, argv[0], &fa, &at, argv, envp ? envp : environ);
		posix_spawnattr_destroy(&at);
	}
	if (fa_made)
		posix_spawn_file_actions_destroy(&fa);

	/* The parent keeps only its own ends. */
	{
		int fds[5] = {to_child[0], from_child[1], errp[1], in[0], out[1]};
		close_all(fds, 5);
	}
	if (err != 0) {
		int fds[5] = {to_child[1], from_child[0], errp[0], in[1], out[0]};
		close_all(fds, 5);
		dt_ring_unref(ring);
		lua_pushnil(L);
		lua_pushfstring(L, "cannot run %s: %s", argv[0], strerror(err));
		lua_pushliteral(L, "spawn_failed");
		return 3;
	}

	p = (proc_t *)lua_newuserdata(L, sizeof *p);          /* ... argv proc */
	memset(p, 0, sizeof *p);
	p->pid = pid;
	p->status_code = -1;
	p->ring = ring;                                       /* owns: the first ref */
	p->errfd = fcntl(errp[0], F_DUPFD_CLOEXEC, 0);        /* owns: our copy */
	{
		struct stat st;
		if (fstat(errp[0], &st) == 0)
			p->err_ino = (unsigned long)st.st_ino;
	}
	if (p->errfd >= 0)
		fcntl(p->errfd, F_SETFL, fcntl(p->errfd, F_GETFL) | O_NONBLOCK);
#ifdef SYS_pidfd_open
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#else
	p->pidfd = -1;
#endif
	p->reaper_fd = -1;
	if (cleanup != NULL)
		p->cleanup_dir = strdup(cleanup);                 /* owns: cleanup_dir */
	if (cleanup != NULL || want_reaper)
		p->reaper_fd = start_reaper(pid, p->err_ino, cleanup);  /* owns: reaper_fd */
	luaL_getmetatable(L, DT_PROCESS_MT);
	lua_setmetatable(L, -2);
	live_add(p);

	if (want_pipe) {
		/* The transport gets the stderr read end and its own ring ref. */
		dt_transport *t = dt_pipe_new(to_child[1], from_child[0], errp[0], ring, (long)pid);
		if (t == NULL) {
			int fds[5] = {to_child[1], from_child[0], errp[0], in[1], out[0]};
			close_all(fds, 5);
			end_child(p, 0);
			remove_dir(p);
			release_reaper(p, 1);
			live_remove(p);
			return dt_push_fail(L, DT_ENOMEM, "out of memory for the pipe transport");
		}
		dt_transport_push(L, t);                          /* ... argv proc tr */
	} else {
		close(errp[0]);
	}
	if (want_stdio) {
		lua_createtable(L, 0, 2);                         /* ... proc [tr] stdio */
		lua_pushinteger(L, in[1]);
		lua_setfield(L, -2, "stdin");
		lua_pushinteger(L, out[0]);
		lua_setfield(L, -2, "stdout");
	}
	return 1 + want_pipe + want_stdio;
}

/* ---- detached children ---------------------------------------------------- */

/* The descriptors above 2 but keep closed in a child about to exec,
 * without malloc (after fork in a threaded host only async-signal-safe
 * calls are allowed): close_range where the kernel has it, else one by
 * one up to maxfd. */
static void close_above_2(int keep, int maxfd)
{
	int fd;
#ifdef SYS_close_range
	if ((keep <= 3 || syscall(SYS_close_range, 3U, (unsigned)keep - 1U, 0U) == 0)
	    && syscall(SYS_close_range, (unsigned)(keep < 3 ? 3 : keep + 1), ~0U, 0U) == 0)
		return;
#endif
	for (fd = 3; fd < maxfd; fd++)
		if (fd != keep)
			close(fd);
}

/* What the helpers of spawn_detached tell us through a pipe: one record a
 * write (atomic: far below PIPE_BUF). */
typedef struct {
	char tag;               /* 'P': the program's pid; 'E': its exec failed */
	long value;             /* the pid, or errno */
} detach_note;

static void note(int fd, char tag, long value)
{
	detach_note n;
	memset(&n, 0, sizeof n);
	n.tag = tag;
	n.value = value;
	(void)!write(fd, &n, sizeof n);
}

/* core.process.spawn_detached(argv [, opts]) -> pid | nil, message, code
 * Starts argv[1] (no PATH search, no shell) as a process that is none of
 * ours: a grandchild in a session of its own, leading its own process
 * group (its pid is the group's id), so that neither our exit,
 * nor a signal to our process group or terminal, nor our reaping reaches
 * it; init reaps it. stdin is /dev/null; stdout and stderr go to
 * opts.output (a file, created 0600 or appended to) or /dev/null;
 * opts.env as for spawn. Returns its pid once it runs the program: a
 * failed exec is reported ("spawn_failed"), never the pid of a child that
 * could not start. Nothing is kept here: the caller records the pid. */
static int l_spawn_detached(lua_State *L)
{
	int argc, i, out, maxfd;
	char **argv, **envp;
	const char *output = NULL;
	int st[2];
	pid_t mid;
	long got_pid = 0, got_errno = 0;
	luaL_checktype(L, 1, LUA_TTABLE);
	argc = (int)dt_rawlen(L, 1);
	luaL_argcheck(L, argc >= 1, 1, "argv must hold at least the program path");
	if (lua_istable(L, 2)) {
		lua_getfield(L, 2, "output");
		output = lua_tostring(L, -1);          /* kept alive by opts */
		lua_pop(L, 1);
	}
	argv = (char **)lua_newuserdata(L, sizeof(char *) * (size_t)(argc + 1));
	for (i = 0; i < argc; i++) {
		union { const char *c; char *m; } u;
		lua_rawgeti(L, 1, i + 1);
		if (lua_type(L, -1) != LUA_TSTRING)
			return luaL_argerror(L, 1, "argv entries must be strings");
		u.c = lua_tostring(L, -1);             /* kept alive by the argv table */
		argv[i] = u.m;
		lua_pop(L, 1);
	}
	argv[argc] = NULL;
	envp = build_env(L, 2);                    /* owned by a userdata on the stack */
	if (envp == NULL)
		envp = environ;
	if (access(argv[0], X_OK) != 0) {
		int e = errno;
		return dt_push_failf(L, DT_ESPAWN, "cannot run %s: %s", argv[0], strerror(e));
	}
	/* Opened before fork: the child only dup2s it. */
	out = output != NULL ? open(output, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)
	      : open("/dev/null", O_WRONLY | O_CLOEXEC);          /* owns: out */
	if (out < 0) {
		int e = errno;
		return dt_push_failf(L, DT_ESPAWN, "cannot open %s: %s", output != NULL ? output : "/dev/null",
		                     strerror(e));
	}
	maxfd = (int)sysconf(_SC_OPEN_MAX);
	if (maxfd < 0 || maxfd > 65536)
		maxfd = 65536;
	if (pipe2(st, O_CLOEXEC) != 0) {                          /* owns: st */
		int e = errno;
		close(out);
		return dt_push_failf(L, DT_ESPAWN, "cannot create a pipe: %s", strerror(e));
	}
	mid = fork();
	if (mid < 0) {
		int e = errno;
		close(out);
		close(st[0]);
		close(st[1]);
		return dt_push_failf(L, DT_ESPAWN, "cannot fork: %s", strerror(e));
	}
	if (mid == 0) {
		/* The middle child: a new session, the grandchild, then gone.
		 * Only async-signal-safe calls from here on. */
		pid_t pid;
		close(st[0]);
		setsid();
		pid = fork();
		if (pid == 0) {
			sigset_t none;
			struct sigaction dfl;
			int sig, fd;
			/* its own process group (pgid = its pid), so that the group can
			 * be ended whole; in the middle's session, of which it is not
			 * the leader: it never gets a controlling terminal */
			(void)setpgid(0, 0);
			fd = open("/dev/null", O_RDONLY);
			if (fd < 0 || dup2(fd, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) {
				note(st[1], 'E', errno);
				_exit(127);
			}
			memset(&dfl, 0, sizeof dfl);
			dfl.sa_handler = SIG_DFL;
			for (sig = 1; sig < 65; sig++)
				(void)sigaction(sig, &dfl, NULL);   /* fails harmlessly for KILL, STOP */
			sigemptyset(&none);
			sigprocmask(SIG_SETMASK, &none, NULL);
			/* st[1] stays open (close-on-exec) to say why an exec failed */
			close_above_2(st[1], maxfd);
			execve(argv[0], argv, envp);
			note(st[1], 'E', errno);
			_exit(127);
		}
		if (pid > 0)
			note(st[1], 'P', (long)pid);
		_exit(pid > 0 ? 0 : 1);
	}
	close(out);
	close(st[1]);
	while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
		;
	/* Until EOF: every copy of the write end closes, the grandchild's with
	 * its exec (or its exit). */
	for (;;) {
		detach_note n;
		ssize_t r = read(st[0], &n, sizeof n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r != (ssize_t)sizeof n)
			break;
		if (n.tag == 'P')
			got_pid = n.value;
		else if (n.tag == 'E')
			got_errno = n.value;
	}
	close(st[0]);
	if (got_errno != 0)
		return dt_push_failf(L, DT_ESPAWN, "cannot run %s: %s", argv[0], strerror((int)got_errno));
	if (got_pid <= 0)
		return dt_push_failf(L, DT_ESPAWN, "cannot start %s: the middle process failed", argv[0]);
	lua_pushinteger(L, (lua_Integer)got_pid);
	return 1;
}

/* core.process.kill(pid, signal [, group]) -> true | nil, message, code
 * Sends "TERM", "KILL" or "INT" (0: none, only the check) to pid, or with
 * group to its process group. A pid that is gone is "closed"; pid must be
 * above 1 (never ourselves: a pid of ours is refused). */
static int l_kill_pid(lua_State *L)
{
	lua_Integer pid = luaL_checkinteger(L, 1);
	const char *name = lua_type(L, 2) == LUA_TNUMBER ? NULL : luaL_checkstring(L, 2);
	int group = lua_toboolean(L, 3);
	int sig;
	luaL_argcheck(L, pid > 1 && pid < (lua_Integer)1 << 31 && (pid_t)pid != getpid(), 1,
	              "a pid above 1, not our own");
	if (name == NULL) {
		luaL_argcheck(L, lua_tointeger(L, 2) == 0, 2, "a signal name, or 0");
		sig = 0;
	} else if (strcmp(name, "TERM") == 0) {
		sig = SIGTERM;
	} else if (strcmp(name, "KILL") == 0) {
		sig = SIGKILL;
	} else if (strcmp(name, "INT") == 0) {
		sig = SIGINT;
	} else {
		return luaL_argerror(L, 2, "TERM, KILL, INT or 0");
	}
	if (kill(group ? -(pid_t)pid : (pid_t)pid, sig) != 0) {
		int e = errno;
		return dt_push_failf(L, e == ESRCH ? DT_ECLOSED : DT_ESYSTEM, "cannot signal %d: %s",
		                     (int)pid, strerror(e));
	}
	lua_pushboolean(L, 1);
	return 1;
}

/* core.process.processes_with(text) -> {pid, ...}: the live processes (zombies
 * left out, ourselves too) whose command line (its arguments joined by
 * NUL bytes, one after the last) holds text. */
static int l_processes_with(lua_State *L)
{
	size_t tlen;
	const char *text = luaL_checklstring(L, 1, &tlen);
	DIR *d;
	struct dirent *e;
	char path[64], buf[8192];
	int n = 0;
	luaL_argcheck(L, tlen > 0, 1, "an empty text matches every process");
	lua_newtable(L);
	if ((d = opendir("/proc")) == NULL)
		return 1;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		int fd;
		ssize_t len;
		if (*end != '\0' || pid <= 1 || pid == (long)getpid())
			continue;
		snprintf(path, sizeof path, "/proc/%ld/stat", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		{
			char *close_paren = strrchr(buf, ')');   /* "pid (comm) S ..." */
			if (close_paren == NULL || close_paren[1] != ' ' || close_paren[2] == 'Z'
			    || close_paren[2] == 'X')
				continue;
		}
		snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof buf);
		close(fd);
		if (len <= 0 || (size_t)len < tlen)
			continue;
		if (memmem(buf, (size_t)len, text, tlen) != NULL) {
			lua_pushinteger(L, (lua_Integer)pid);
			lua_rawseti(L, -2, ++n);
		}
	}
	closedir(d);
	return 1;
}

/* ---- methods -------------------------------------------------------------- */

/* proc:pid() -> integer | nil once reaped */
static int l_pid(lua_State *L)
{
	proc_t *p = check_proc(L);
	if (p->pid == 0)
		lua_pushnil(L);
	else
		lua_pushinteger(L, p->pid);
	return 1;
}

/* proc:running() -> boolean */
static int l_running(lua_State *L)
{
	proc_t *p = check_proc(L);
	lua_pushboolean(L, p->pid != 0 && !poll_exit(p));
	return 1;
}

static int push_status(lua_State *L, proc_t *p)
{
	if (p->status_signal) {
		lua_pushliteral(L, "signal");
		lua_pushinteger(L, p->status_signal);
	} else {
		lua_pushliteral(L, "exit");
		lua_pushinteger(L, p->status_code);
	}
	return 2;
}

/* proc:wait([deadline]) -> "exit", code | "signal", signo | nil, message, "timeout"
 * Waits without reaping; close() reaps. wait(0) never blocks. */
static int l_wait(lua_State *L)
{
	proc_t *p = check_proc(L);
	double deadline = dt_optdeadline(L, 2);
	if (!wait_exit(p, deadline)) {
		lua_pushnil(L);
		lua_pushliteral(L, "timed out waiting for the process to exit");
		lua_pushliteral(L, "timeout");
		return 3;
	}
	return push_status(L, p);
}

/* proc:kill([grace]) -> "exit", code | "signal", signo
 * SIGTERM, SIGKILL after grace seconds (default 2), then the whole process
 * group; reaps. Does not remove cleanup_dir (close does). */
static int l_kill(lua_State *L)
{
	proc_t *p = check_proc(L);
	double grace = luaL_optnumber(L, 2, 2.0);
	end_child(p, grace);
	return push_status(L, p);
}

/* proc:exit_fd() -> fd | nil: a descriptor that becomes readable when
 * the child exits (a Linux pidfd), for event loops; nil where there is
 * none (kernel < 5.3, or once closed): then poll wait(0) on a timer. */
static int l_exit_fd(lua_State *L)
{
	proc_t *p = check_proc(L);
	if (p->pidfd < 0)
		lua_pushnil(L);
	else
		lua_pushinteger(L, p->pidfd);
	return 1;
}

/* proc:stderr() -> the last bytes the child wrote to stdout/stderr */
static int l_stderr(lua_State *L)
{
	proc_t *p = check_proc(L);
	dt_ring_drain_fd(p->ring, &p->errfd);
	dt_ring_pushlua(L, p->ring);
	return 1;
}

static void drop_ring(proc_t *p)
{
	if (p->ring != NULL) {
		dt_ring_unref(p->ring);
		p->ring = NULL;
	}
}

/* What is left is the reaper's, told to act now: the zombie of a child
 * killed but not gone yet (reaped at the next spawn, or exit) and the
 * directory. */
static void hand_to_reaper(proc_t *p)
{
	if (p->pid != 0) {
		add_orphan(p->pid);
		p->pid = 0;
	}
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
	if (p->errfd >= 0)
		close(p->errfd);
	p->errfd = -1;
	if (p->reaper_fd >= 0) {
		release_reaper(p, 0);           /* EOF: it kills and removes now */
		free(p->cleanup_dir);           /* frees: cleanup_dir (the reaper has its own) */
		p->cleanup_dir = NULL;
	}
}

/* proc:close([grace [, now]]): kill as above (default grace 2 s), reap,
 * remove cleanup_dir, dismiss the reaper. Idempotent. With now (for a
 * caller whose deadline has passed) and a reaper: SIGKILL to the group and
 * no waiting: a child not gone at once is reaped later and its directory
 * removed by the reaper, in the background (reaping a killed Chromium and
 * removing its profile take 50-300 ms). */
static int l_close(lua_State *L)
{
	proc_t *p = check_proc(L);
	double grace = luaL_optnumber(L, 2, 2.0);
	if (lua_toboolean(L, 3) && p->reaper_fd >= 0) {
		(void)end_child_within(p, -1, 0);   /* reaps it only if it is gone already */
		hand_to_reaper(p);
	} else {
		end_child(p, grace);
	}
	remove_dir(p);
	release_reaper(p, 1);
	live_remove(p);
	drop_ring(p);
	return 0;
}

/* __gc and __close: SIGKILL to the group at once; if the child is gone
 * within GC_WAIT, reap it and remove cleanup_dir (bounded retries);
 * otherwise leave the directory to the reaper (told to act now) and the
 * zombie to the next spawn or exit. Never blocks for long. */
static int l_gc(lua_State *L)
{
	proc_t *p = check_proc(L);
	if (p->pid != 0 && !end_child_within(p, -1, GC_WAIT))
		hand_to_reaper(p);
	remove_dir(p);
	release_reaper(p, 1);
	live_remove(p);
	drop_ring(p);
	return 0;
}

static int l_tostring(lua_State *L)
{
	proc_t *p = check_proc(L);
	if (p->pid == 0)
		lua_pushliteral(L, "Process(closed)");
	else
		lua_pushfstring(L, "Process(pid %d, %s)", (int)p->pid,
		                poll_exit(p) ? "exited" : "running");
	return 1;
}

static void end_all_at_exit(void)
{
	proc_t *p;
	if (getpid() != live_owner)
		return;
	while ((p = live_list) != NULL) {
		live_list = p->next_live;
		end_child(p, 0);
		remove_dir(p);
		release_reaper(p, 1);
	}
	reap_orphans();
}

/* core.process.euid() -> the user id this process acts as (whose files
 * and sockets are its own) */
static int l_euid(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)geteuid());
	return 1;
}

/* core.process.exe() -> the path of the program this process runs (its
 * interpreter: lua5.4, luajit, nvim...), or nil if the kernel will not say */
static int l_exe(lua_State *L)
{
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n <= 0 || (size_t)n >= sizeof buf - 1)
		lua_pushnil(L);
	else
		lua_pushlstring(L, buf, (size_t)n);
	return 1;
}

void dt_process_open(lua_State *L)
{
	static int registered = 0;
	if (!registered) {
		registered = 1;
		atexit(end_all_at_exit);
	}
	static const luaL_Reg methods[] = {
		{"pid", l_pid},
		{"running", l_running},
		{"wait", l_wait},
		{"kill", l_kill},
		{"stderr", l_stderr},
		{"exit_fd", l_exit_fd},
		{"close", l_close},
		{NULL, NULL}
	};
	static const luaL_Reg funcs[] = {
		{"spawn", l_spawn},
		{"spawn_detached", l_spawn_detached},
		{"kill", l_kill_pid},
		{"processes_with", l_processes_with},
		{"euid", l_euid},
		{"exe", l_exe},
		{NULL, NULL}
	};
	static const dt_class cls = { DT_PROCESS_MT, methods, l_gc, l_tostring, NULL };
	dt_class_register(L, &cls);

	dt_open_part(L, "process", funcs);

	/* (SIGPIPE: a write to a browser gone is an error we report, without
	 * changing the host's disposition of the signal: see nopipe.h.) */
}
