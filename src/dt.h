/* dt.h - the parts of devtools_tools.core, for core.c only.
 *
 * Who depends on whom (an arrow reads "includes the header of"); there is
 * no circle, and each file includes only what it uses:
 *
 *   core.c ──> dt.h (this list of *_open functions)
 *
 *   base.h        clock.c buf.c codes.c class.c    (depends on nothing)
 *   ring.h  ───> base.h                  ring.c      stderr ring
 *   json.h  ───> base.h                  json.c      JSON codec
 *   transport.h > base.h                 transport.c Transport class, raw recv
 *   pipe.h  ───> transport.h ring.h      pipe.c      --remote-debugging-pipe
 *   ws.c    ───> transport.h net.h tls.h             WebSocket (libwebsockets, TLS)
 *   net.h   ───> base.h                  net.c       port, peer, wait on an fd
 *   tls.h   ───> base.h                  tls.c       bounded name lookup, OpenSSL clients
 *   http.h  ───> base.h                              reading HTTP responses
 *   http.c  ───> net.h http.h tls.h                  one HTTP request, plain or TLS
 *   cdp_decode.c > transport.h json.h                transport:recv_cdp
 *   fs.h    ───> base.h                  fs.c        temp dirs, rmtree
 *   process.c ─> pipe.h ring.h fs.h                  Process class, spawn, reaper
 *   regex.c ───> base.h                              ECMA-262 regex (PCRE2)
 *   base64.c ──> base.h                              base64 text to bytes
 *
 * Every file that defines an *_open includes dt.h for its prototype (dt.h
 * itself needs only base.h).
 *
 * Each *_open adds its functions (and registers its classes) in the module
 * table on top of the stack. */
#ifndef DT_H
#define DT_H

#include "base.h"

void dt_codes_open(lua_State *L);        /* codes.c: core.codes */
void dt_json_open(lua_State *L);
void dt_regex_open(lua_State *L);
void dt_fs_open(lua_State *L);
void dt_transport_open(lua_State *L);
void dt_cdp_decode_open(lua_State *L);
void dt_process_open(lua_State *L);
void dt_ws_open(lua_State *L);
void dt_poll_open(lua_State *L);
void dt_http_open(lua_State *L);
void dt_base64_open(lua_State *L);

#endif
