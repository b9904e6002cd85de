/* net.c - small helpers the socket code shares. Depends on: base.h. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "net.h"

int dt_check_port(lua_State *L, int arg)
{
	lua_Number n = luaL_checknumber(L, arg);
	luaL_argcheck(L, n >= 1 && n <= 65535 && n == (lua_Number)(int)n, arg,
	              "port must be an integer in 1..65535");
	return (int)n;
}

void dt_format_peer(char *buf, size_t n, const char *host, int port)
{
	if (strchr(host, ':') != NULL)
		snprintf(buf, n, "[%s]:%d", host, port);
	else
		snprintf(buf, n, "%s:%d", host, port);
}

int dt_wait_fd(int fd, short events, double deadline)
{
	struct pollfd p;
	int rc;
	p.fd = fd;
	p.events = events;
	do {
		p.revents = 0;
		rc = poll(&p, 1, dt_poll_ms(deadline));
	} while (rc < 0 && errno == EINTR);
	return rc < 0 ? -1 : rc > 0;
}
