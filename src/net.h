/* net.h - small helpers the socket code shares (ws.c, http.c).
 * Depends on: base.h. */
#ifndef DT_NET_H
#define DT_NET_H

#include "base.h"

/* Reads the port argument: an integer in 1..65535 (raises otherwise). */
int dt_check_port(lua_State *L, int arg);
/* Formats "host:port", bracketing an IPv6 address. */
void dt_format_peer(char *buf, size_t n, const char *host, int port);
/* Waits for events on fd until deadline: 1 ready, 0 timed out, -1 error. */
int dt_wait_fd(int fd, short events, double deadline);

#endif
