#!/bin/sh
# run-specs.sh LUA BUSTED BUILD [spec files...] - runs busted under the given
# interpreter and ends with one plain line: "N passed, N failed[, N skipped]".
set -u
lua=$1; busted=$2; build=$3; shift 3
out=$(mktemp)
trap 'rm -f "$out"' EXIT INT TERM
DEVTOOLS_TOOLS_BUILD=$build "$lua" "$busted" -o plainTerminal \
	--lpath='./lua/?.lua;./lua/?/init.lua;./spec/?.lua' \
	--cpath="./$build/?.so" "$@" 2>&1 | tee "$out"
rc=0
# busted prints "N successes / N failures / N errors / N pending : T seconds"
line=$(sed -n -E 's#^([0-9]+) success(es)? / ([0-9]+) failures? / ([0-9]+) errors? / ([0-9]+) pending.*#\1 \3 \4 \5#p' "$out" | tail -n 1)
if [ -z "$line" ]; then
	echo "0 passed, 1 failed (busted printed no summary)"
	exit 1
fi
set -- $line
failed=$(($2 + $3))
if [ "$4" -gt 0 ]; then
	echo "$1 passed, $failed failed, $4 skipped"
else
	echo "$1 passed, $failed failed"
fi
[ "$failed" -eq 0 ] && [ "$1" -gt 0 ] || rc=1
exit $rc
