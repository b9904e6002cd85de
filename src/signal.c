/* signal.c - core.signal: SIGTERM, SIGHUP and SIGINT for a program that
 * owns its process (the command line, the MCP server on stdio), so that it
 * closes what it opened (a tab in a running browser, a launched browser
 * and its profile) before it exits. The library never calls this on its
 * own: what a host does on a signal is the host's.
 *
 * core.signal.catch(names [, raise]) -> fd
 *   From now on each signal named ("TERM", "HUP", "INT") is caught: its
 *   number goes down a pipe whose read end is fd (non-blocking,
 *   close-on-exec), for an event loop to watch (the MCP server), and with
 *   raise the Lua code of the main thread raises "interrupted!" at its
 *   next instruction, as lua.c does for SIGINT, for code that waits
 *   without a loop (a command's blocking call: the wait it is in returns
 *   on EINTR to Lua code; see DT_EINTR). The handler is reset as it runs
 *   (SA_RESETHAND), so a second signal of a kind has its default action:
 *   a clean-up that hangs can still be ended. A child started afterwards
 *   gets the default dispositions back at exec, as always.
 * core.signal.take() -> name | nil: the oldest caught signal not taken yet
 * core.signal.release(): the dispositions from before catch, the pipe
 *   closed (a test's clean-up, or before exec).
 *
 * Signals are the process's, so this state is too (one pipe, the saved
 * dispositions, the main thread to raise in): the one module-wide state of
 * the core, set only by a program's explicit catch. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "dt.h"

static const struct {
	const char *name;
	int signo;
} known[] = {
	{ "TERM", SIGTERM },
	{ "HUP", SIGHUP },
	{ "INT", SIGINT },
};
#define NKNOWN ((int)(sizeof known / sizeof known[0]))

static int pipe_r = -1, pipe_w = -1;
static struct sigaction saved[NKNOWN];
static int caught[NKNOWN];                       /* 1: ours is (or was) installed */
static volatile sig_atomic_t raising[NKNOWN];    /* raise on this one */
static lua_State *volatile raise_in;             /* the main thread */

static void stop_hook(lua_State *L, lua_Debug *ar)
{
	(void)ar;
	lua_sethook(L, NULL, 0, 0);
	luaL_error(L, "interrupted!");
}

static void on_signal(int signo)
{
	int e = errno, i;
	unsigned char b = (unsigned char)signo;
	if (pipe_w >= 0 && write(pipe_w, &b, 1) < 0) {
		/* a full pipe already holds more signals than anyone reads */
	}
	for (i = 0; i < NKNOWN; i++) {
		if (known[i].signo == signo && raising[i] && raise_in != NULL)
			lua_sethook(raise_in, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
	}
	errno = e;
}

static int set_flags(int fd, int fl)
{
	int f = fcntl(fd, F_GETFL);
	int d = fcntl(fd, F_GETFD);
	if (f < 0 || d < 0)
		return -1;
	if (fcntl(fd, F_SETFL, f | fl) < 0 || fcntl(fd, F_SETFD, d | FD_CLOEXEC) < 0)
		return -1;
	return 0;
}

static int index_of(lua_State *L, int arg, const char *name)
{
	int i;
	for (i = 0; i < NKNOWN; i++)
		if (strcmp(known[i].name, name) == 0)
			return i;
	return luaL_argerror(L, arg, lua_pushfstring(L, "unknown signal '%s' (TERM, HUP or INT)", name));
}

/* core.signal.catch(names [, raise]) -> fd | nil, message, "system" */
static int l_catch(lua_State *L)
{
	int want[NKNOWN] = { 0 };
	int raise = lua_toboolean(L, 2), i, n;
	luaL_checktype(L, 1, LUA_TTABLE);
	n = (int)dt_rawlen(L, 1);
	for (i = 1; i <= n; i++) {
		lua_rawgeti(L, 1, i);                   /* names raise name */
		want[index_of(L, 1, luaL_checkstring(L, -1))] = 1;
		lua_pop(L, 1);                          /* names raise */
	}
	if (pipe_r < 0) {
		int fds[2];
		if (pipe(fds) != 0)
			return dt_push_failf(L, DT_ESYSTEM, "pipe: %s", strerror(errno));
		if (set_flags(fds[0], O_NONBLOCK) != 0 || set_flags(fds[1], O_NONBLOCK) != 0) {
			int e = errno;
			close(fds[0]);
			close(fds[1]);
			return dt_push_failf(L, DT_ESYSTEM, "fcntl: %s", strerror(e));
		}
		pipe_r = fds[0];
		pipe_w = fds[1];
	}
#if LUA_VERSION_NUM >= 502
	lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);   /* ... main */
	raise_in = lua_tothread(L, -1);
	lua_pop(L, 1);                                            /* ... */
#else
	raise_in = L;           /* (LuaJIT's hooks are the whole state's) */
#endif
	for (i = 0; i < NKNOWN; i++) {
		struct sigaction sa;
		if (!want[i])
			continue;
		raising[i] = raise;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = SA_RESTART | SA_RESETHAND;
		if (sigaction(known[i].signo, &sa, caught[i] ? NULL : &saved[i]) != 0)
			return dt_push_failf(L, DT_ESYSTEM, "sigaction: %s", strerror(errno));
		caught[i] = 1;
	}
	lua_pushinteger(L, pipe_r);
	return 1;
}

/* core.signal.take() -> "TERM" | "HUP" | "INT" | nil */
static int l_take(lua_State *L)
{
	unsigned char b;
	ssize_t n;
	int i;
	if (pipe_r < 0)
		return 0;
	do
		n = read(pipe_r, &b, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		return 0;
	for (i = 0; i < NKNOWN; i++) {
		if (known[i].signo == b) {
			lua_pushstring(L, known[i].name);
			return 1;
		}
	}
	return 0;
}

/* core.signal.release() */
static int l_release(lua_State *L)
{
	int i;
	(void)L;
	for (i = 0; i < NKNOWN; i++) {
		if (caught[i]) {
			sigaction(known[i].signo, &saved[i], NULL);
			caught[i] = 0;
			raising[i] = 0;
		}
	}
	if (pipe_r >= 0) {
		close(pipe_r);
		close(pipe_w);
		pipe_r = pipe_w = -1;
	}
	return 0;
}

void dt_signal_open(lua_State *L)
{
	static const luaL_Reg funcs[] = {
		{"catch", l_catch},
		{"take", l_take},
		{"release", l_release},
		{NULL, NULL}
	};
	dt_open_part(L, "signal", funcs);
}
