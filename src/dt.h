/* dt.h - the parts of devtools_tools.core, for core.c only.
 *
 * Who depends on whom. "includes" lists the project headers a file
 * includes (each includes only what it uses); "uses" the other .c files
 * whose functions it calls (what the linker joins). There is no circle.
 * spec/unit/tooling_spec.lua checks this table against the #include lines and
 * against the symbols each object file takes from the others: keep it
 * true when a file changes.
 *
 *   file          includes                        uses                              what
 *   compat.h      -                               -                                 Lua 5.1/5.4 polyfills
 *   base.h        compat.h                        -                                 shared types, codes, helpers
 *   nopipe.h      -                               -                                 writes without SIGPIPE
 *   ring.h        base.h                          -                                 stderr ring
 *   json.h        base.h                          -                                 JSON codec
 *   transport.h   base.h                          -                                 Transport class
 *   pipe.h        transport.h ring.h              -                                 pipe transport (and
 *                                                                                   over a socket)
 *   net.h         base.h                          -                                 sockets
 *   tls.h         base.h                          -                                 TLS clients
 *   http.h        base.h                          -                                 HTTP responses
 *   fs.h          base.h                          -                                 temp dirs
 *   dt.h          base.h                          -                                 this list of *_open
 *   clock.c       base.h                          -                                 deadlines, monotonic clock
 *   buf.c         base.h                          -                                 growable byte buffer
 *   codes.c       dt.h                            -                                 failure codes, nil/message/code
 *   class.c       base.h                          -                                 userdata classes, core.<part>
 *   nopipe.c      nopipe.h                        -                                 writes without SIGPIPE
 *   ring.c        ring.h                          -                                 stderr ring
 *   json.c        json.h dt.h                     buf class clock codes             core.json
 *   transport.c   transport.h dt.h                class clock codes                 Transport methods
 *   pipe.c        pipe.h nopipe.h                 buf clock nopipe ring transport   --remote-debugging-pipe
 *   net.c         net.h                           clock                             port, peer, wait on an fd
 *   tls.c         tls.h net.h                     clock                             name lookup, OpenSSL
 *   ws.c          transport.h net.h tls.h         buf class clock codes net nopipe  core.ws
 *                 nopipe.h dt.h                   tls transport
 *   http.c        net.h http.h tls.h nopipe.h     buf class clock codes net nopipe  core.http
 *                 dt.h                            tls
 *   cdp_decode.c  transport.h json.h dt.h         clock codes json transport        transport:recv_cdp
 *   fs.c          fs.h nopipe.h dt.h              class codes nopipe                core.fs, Lock, TermMode
 *   process.c     pipe.h ring.h fs.h dt.h         class clock codes fs pipe ring    core.process, Process
 *                                                 transport
 *   regex.c       dt.h                            buf class codes                   core.regex
 *   base64.c      dt.h                            class                             core.base64
 *   poll.c        dt.h                            -                                 core.poll
 *   fdio.c        nopipe.h dt.h                   class codes nopipe                core.fd: read, write...
 *   digest.c      dt.h                            class codes                       core.digest: sha256
 *   signal.c      dt.h                            class codes                       core.signal
 *   unix.c        pipe.h dt.h                     class clock codes pipe transport  core.unix: Unix sockets,
 *                                                                                   peer uids, Listener
 *   core.c        dt.h                            base64 cdp_decode clock codes     luaopen: every *_open
 *                                                 digest fdio fs http json poll
 *                                                 process regex signal transport
 *                                                 unix ws
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
void dt_fdio_open(lua_State *L);         /* fdio.c: reads and writes that never wait */
void dt_digest_open(lua_State *L);       /* digest.c: core.digest.sha256 */
void dt_signal_open(lua_State *L);       /* signal.c: TERM, HUP, INT for a program's own clean-up */
void dt_unix_open(lua_State *L);         /* unix.c: Unix sockets, who is at the other end */

#endif
