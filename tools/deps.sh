#!/bin/sh
# deps.sh - make sure the Debian packages the build, tests and demo need are
# installed. As root it installs what is missing with apt-get; otherwise it
# prints the command to run and fails.
set -u
PKGS="gcc make pkg-config lua5.4 liblua5.4-dev lua5.1 liblua5.1-0-dev luajit libluajit-5.1-dev \
libwebsockets-dev libpcre2-dev libsqlite3-dev lua-cjson lua-busted chromium"
# json_spec builds a comma-decimal locale with localedef from these sources
PKGS="$PKGS locales"
# the sample app's server (jansson), its spec (sqlite3 shell, LuaSocket)
PKGS="$PKGS libjansson-dev sqlite3 lua-socket luarocks"
# the Neovim plugin's spec drives Debian's headless Neovim
PKGS="$PKGS neovim"
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
