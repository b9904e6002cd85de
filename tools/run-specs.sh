#!/bin/sh
# run-specs.sh LUA BUSTED BUILD [spec files...] - runs busted under the given
# interpreter, one line per spec file as it ends (tools/busted_files.lua),
# and ends with one plain line: "N passed, N failed[, N skipped]" (not when
# SPEC_TOTALS records the run for a total: then --totals prints it).
# VALGRIND, when set, is a command prefix (make valgrind sets it).
# SPEC_HELPER, when set, is a busted --helper file (make test-gc sets it).
# LUA_FLAGS, when set, go to the interpreter before busted (make test gives
# LuaJIT -joff on the builds whose JIT miscompiles pairs(): see lua/devtools_tools/base/nojit.lua).
#   run-specs.sh --totals FILE  prints the one line for all the runs recorded
#   in FILE, counting each spec once: the first run's counts, plus each spec
#   that failed only in a later run (the same specs under LuaJIT) moved from
#   passed to failed. Fails if any failed or none ran. Each run appends to
#   FILE when SPEC_TOTALS names it: "C<TAB>passed failed skipped" and one
#   "F<TAB>file<TAB>spec name" per failure.
set -u
if [ "${1:-}" = "--totals" ]; then
	[ -f "$2" ] || { echo "0 passed, 1 failed (no spec run recorded)"; exit 1; }
	awk -F '\t' '
	$1 == "C" { runs++; split($2, n, " ")
		if (runs == 1) { p = n[1]; f = n[2]; s = n[3] } else { later_f[runs] = n[2] }
		next }
	$1 == "F" { key = $2 "\t" $3
		all[runs]++
		if (runs == 1) first[key] = 1
		else if (!(key in first) && !(key in seen)) { seen[key] = 1; named[runs]++ }
		next }
	END {
		moved = 0
		for (r = 2; r <= runs; r++) {
			# new names, and failures busted counted but printed no name for
			# (a run that crashed or printed no summary)
			moved += named[r] + (later_f[r] > all[r] ? later_f[r] - all[r] : 0)
		}
		p -= moved; if (p < 0) p = 0; f += moved
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
	DEVTOOLS_TOOLS_BUILD=$build ${VALGRIND:-} "$lua" ${LUA_FLAGS:-} "$busted" -o tools/busted_files.lua \
		${SPEC_HELPER:+--helper="$SPEC_HELPER"} \
		--lpath='./lua/?.lua;./lua/?/init.lua;./spec/?.lua' \
		--cpath="./$build/?.so" "$@" 2>&1
	echo $? > "$rcfile"
} | tee "$out" | grep --line-buffered -v -E '^[0-9]+ success(es)? / [0-9]+ failures? / '
# (busted's own count is read from $out below; what is shown is the
# per-file lines, the failures' details and this script's one line)
brc=$(cat "$rcfile")
# busted prints "N successes / N failures / N errors / N pending : T seconds"
line=$(sed -n -E 's#^([0-9]+) success(es)? / ([0-9]+) failures? / ([0-9]+) errors? / ([0-9]+) pending.*#\1 \3 \4 \5#p' "$out" | tail -n 1)
if [ -z "$line" ]; then
	echo "0 passed, 1 failed (busted printed no summary; exit status $brc)"
	[ -n "${SPEC_TOTALS:-}" ] && printf 'C\t0 1 0\n' >> "$SPEC_TOTALS"
	exit 1
fi
set -- $line
failed=$(($2 + $3))
if [ "$failed" -eq 0 ] && [ "$brc" -ne 0 ]; then
	# every spec passed but the run itself failed (valgrind, a crash at exit)
	failed=1
	echo "the run exited with status $brc although every spec passed"
fi
if [ -n "${SPEC_TOTALS:-}" ]; then
	printf 'C\t%s %s %s\n' "$1" "$failed" "$4" >> "$SPEC_TOTALS"
	# "Failure -> spec/x_spec.lua @ 12" or "Error -> ...", then the spec's name
	awk '/^(Failure|Error) -> / { sub(/^[A-Za-z]+ -> /, ""); sub(/ @ [0-9]+$/, ""); file = $0; getline
		printf "F\t%s\t%s\n", file, $0 }' "$out" >> "$SPEC_TOTALS"
fi
# Recorded for a total (make test): that line alone is printed, once, at the end.
if [ -z "${SPEC_TOTALS:-}" ]; then
	if [ "$4" -gt 0 ]; then
		echo "$1 passed, $failed failed, $4 skipped"
	else
		echo "$1 passed, $failed failed"
	fi
fi
[ "$failed" -eq 0 ] && [ "$1" -gt 0 ]
