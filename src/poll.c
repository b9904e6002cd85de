/* poll.c - core.poll, the one system call the built-in event loop makes.
 *
 * The Lua layer's built-in loop (lua/devtools_tools/loop.lua) watches the
 * transports' descriptors and its timers with this; a foreign loop (luv,
 * Neovim) never calls it. It only waits: it reads and writes nothing. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "dt.h"

#define POLL_MAX 1024

/* core.poll(fds, events, timeout) -> ready
 * fds: a list of descriptors; events: a list of the same length, each "r",
 * "w" or "rw"; timeout: seconds (nil or negative: forever).
 * ready: a table mapping the index of each descriptor that is ready to "r",
 * "w" or "rw" (an error or hang-up counts as readable: the reader then
 * learns why). An interrupted wait returns an empty table. */
static int l_poll(lua_State *L)
{
	struct pollfd stackfds[16];
	struct pollfd *p = stackfds;
	int n, i, rc, ms;
	double timeout;
	luaL_checktype(L, 1, LUA_TTABLE);
	luaL_checktype(L, 2, LUA_TTABLE);
	n = (int)dt_rawlen(L, 1);
	luaL_argcheck(L, n <= POLL_MAX, 1, "too many descriptors");
	timeout = luaL_optnumber(L, 3, -1);
	luaL_argcheck(L, timeout == timeout, 3, "timeout must be a number, not NaN");
	if (timeout < 0)
		ms = -1;
	else if (timeout > 86400.0)
		ms = 86400 * 1000;
	else
		ms = (int)(timeout * 1000.0 + 0.999);    /* round up: never wake early */
	if (n > (int)(sizeof stackfds / sizeof stackfds[0])) {
		p = (struct pollfd *)lua_newuserdata(L, (size_t)n * sizeof *p);  /* ... scratch */
	}
	for (i = 0; i < n; i++) {
		const char *ev;
		lua_rawgeti(L, 1, i + 1);                        /* ... fd */
		lua_rawgeti(L, 2, i + 1);                        /* ... fd ev */
		p[i].fd = (int)luaL_checkinteger(L, -2);
		ev = luaL_optstring(L, -1, "r");
		p[i].events = 0;
		if (strchr(ev, 'r') != NULL)
			p[i].events |= POLLIN;
		if (strchr(ev, 'w') != NULL)
			p[i].events |= POLLOUT;
		p[i].revents = 0;
		lua_pop(L, 2);                                   /* ... */
	}
	rc = poll(p, (nfds_t)n, ms);
	lua_createtable(L, 0, rc > 0 ? rc : 0);              /* ... ready */
	if (rc < 0) {
		if (errno == EINTR)
			return 1;
		return luaL_error(L, "poll: %s", strerror(errno));
	}
	for (i = 0; rc > 0 && i < n; i++) {
		int r = (p[i].revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL)) != 0;
		int w = (p[i].revents & POLLOUT) != 0;
		if (!r && !w)
			continue;
		lua_pushstring(L, r && w ? "rw" : r ? "r" : "w");  /* ... ready ev */
		lua_rawseti(L, -2, i + 1);                           /* ... ready */
	}
	return 1;
}

void dt_poll_open(lua_State *L)
{
	lua_pushcfunction(L, l_poll);
	lua_setfield(L, -2, "poll");
}
