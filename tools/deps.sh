#!/bin/sh
# deps.sh [run|demo|test] - make sure the Debian packages a use needs are
# installed; each set includes the ones before it:
#   run   build the C module and drive Chromium (what a user of the library needs)
#   demo  adds the sample app's libraries (make demo, make app)
#   test  adds what the specs, make asan and make fuzz use (make test; the default)
# As root it installs what is missing with apt-get; otherwise it prints the
# command to run and fails.
#   deps.sh --list SET   prints the packages SET adds, one line
set -u
RUN="gcc make pkg-config lua5.4 liblua5.4-dev libwebsockets-dev libpcre2-dev libssl-dev chromium"
# the sample app's server: libwebsockets (above), SQLite and jansson
DEMO="libjansson-dev libsqlite3-dev"
# busted and its runtime; LuaJIT and the 5.1 headers (make LUA=luajit, the
# LuaJIT re-run); lua-cjson (its null is ours); LuaSocket (websocket specs,
# the fuzzer's fake server); sqlite3 (the app spec); luarocks (the packaging
# spec); locales (json_spec builds a comma-decimal locale); lua-luv and
# neovim (the event-loop and Neovim specs); openssl (the remote specs make
# their own CA) and chromium-driver (dt.webdriver's spec); jq and curl (the
# CI job of doc/cli.md, which doc_blocks_spec runs); lua-check (make lint);
# strace (the unix socket spec holds a listen() back with it)
TEST="lua-busted lua-cjson lua-socket luajit libluajit-5.1-dev lua5.1 liblua5.1-0-dev \
sqlite3 luarocks locales lua-luv neovim openssl chromium-driver jq curl lua-check strace"

if [ "${1:-}" = "--list" ]; then
	case "${2:-}" in
	run) echo "$RUN" ;;
	demo) echo "$DEMO" ;;
	test) echo "$TEST" ;;
	*) echo "usage: deps.sh --list run|demo|test" >&2; exit 2 ;;
	esac
	exit 0
fi
case "${1:-test}" in
run) PKGS="$RUN" ;;
demo) PKGS="$RUN $DEMO" ;;
test) PKGS="$RUN $DEMO $TEST" ;;
*) echo "usage: deps.sh [run|demo|test] | --list run|demo|test" >&2; exit 2 ;;
esac
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "missing Debian packages:$missing" >&2
	echo "install them with: sudo apt-get install -y$missing" >&2
	exit 1
fi
echo "installing missing Debian packages:$missing"
export DEBIAN_FRONTEND=noninteractive
# apt may be busy (unattended upgrades): wait for the lock rather than fail.
i=0
until apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq $missing >/dev/null; do
	i=$((i + 1))
	if [ $i -ge 20 ]; then echo "apt-get install failed:$missing" >&2; exit 1; fi
	sleep 5
done
