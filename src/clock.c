/* clock.c - time as absolute deadlines on the monotonic clock.
 *
 * Every wait in the core takes a deadline computed once by the caller;
 * nothing restarts its own clock. Depends on: base.h only. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <time.h>

#include "base.h"

double dt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int dt_poll_ms(double deadline)
{
	double left;
	if (deadline != deadline)               /* NaN (refused where read): never wait */
		return 0;
	if (deadline < 0)
		return -1;
	left = deadline - dt_now();
	if (left <= 0)
		return 0;
	if (left > 86400.0)
		return 86400 * 1000;
	return (int)ceil(left * 1000.0);
}

double dt_checkdeadline(lua_State *L, int arg)
{
	double d = luaL_checknumber(L, arg);
	if (d != d)
		luaL_argerror(L, arg, "a deadline must be a number, not NaN");
	return d;
}

double dt_optdeadline(lua_State *L, int arg)
{
	if (lua_isnoneornil(L, arg))
		return -1;
	return dt_checkdeadline(L, arg);
}

void dt_sleep_ms(int ms)
{
	struct timespec ts;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}
