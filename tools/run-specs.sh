#!/bin/sh
# run-specs.sh LUA BUSTED BUILD [spec files...] - runs busted under the given
# interpreter and ends with one plain line: "N passed, N failed[, N skipped]".
# VALGRIND, when set, is a command prefix (make valgrind sets it).
#   run-specs.sh --totals FILE  adds up the runs recorded in FILE (each run
#   appends "passed failed skipped" there when SPEC_TOTALS names it) and
#   prints the one line for all of them; fails if any failed or none ran.
set -u
if [ "${1:-}" = "--totals" ]; then
	[ -f "$2" ] || { echo "0 passed, 1 failed (no spec run recorded)"; exit 1; }
	awk '{p += $1; f += $2; s += $3} END {
		if (s > 0) printf "%d passed, %d failed, %d skipped\n", p, f, s
		else printf "%d passed, %d failed\n", p, f
		exit (f > 0 || p == 0) ? 1 : 0 }' "$2"
	exit $?
fi
lua=$1; busted=$2; build=$3; shift 3
out=$(mktemp)
rcfile=$(mktemp)
trap 'rm -f "$out" "$rcfile"' EXIT INT TERM
{
	DEVTOOLS_TOOLS_BUILD=$build ${VALGRIND:-} "$lua" "$busted" -o plainTerminal \
		--lpath='./lua/?.lua;./lua/?/init.lua;./spec/?.lua' \
		--cpath="./$build/?.so" "$@" 2>&1
	echo $? > "$rcfile"
} | tee "$out"
brc=$(cat "$rcfile")
# busted prints "N successes / N failures / N errors / N pending : T seconds"
line=$(sed -n -E 's#^([0-9]+) success(es)? / ([0-9]+) failures? / ([0-9]+) errors? / ([0-9]+) pending.*#\1 \3 \4 \5#p' "$out" | tail -n 1)
if [ -z "$line" ]; then
	echo "0 passed, 1 failed (busted printed no summary; exit status $brc)"
	[ -n "${SPEC_TOTALS:-}" ] && echo "0 1 0" >> "$SPEC_TOTALS"
	exit 1
fi
set -- $line
failed=$(($2 + $3))
if [ "$failed" -eq 0 ] && [ "$brc" -ne 0 ]; then
	# every spec passed but the run itself failed (valgrind, a crash at exit)
	failed=1
	echo "the run exited with status $brc although every spec passed"
fi
[ -n "${SPEC_TOTALS:-}" ] && echo "$1 $failed $4" >> "$SPEC_TOTALS"
if [ "$4" -gt 0 ]; then
	echo "$1 passed, $failed failed, $4 skipped"
else
	echo "$1 passed, $failed failed"
fi
[ "$failed" -eq 0 ] && [ "$1" -gt 0 ]
