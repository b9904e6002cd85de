#!/bin/sh
# run-specs.sh LUA BUSTED BUILD [spec files...] [--also LUA BUILD [spec files...]]...
# runs each spec file in a busted of its own under the given interpreter
# (LUA may carry flags: "luajit -joff"), SPEC_JOBS files at a time (default:
# the number of cores plus one, as some of a browser spec's time is spent
# waiting; plus two kept 2 cores busier, 97 % against 85 %, but used 5-10 %
# more CPU and ended make test no surer sooner: 5:13 and 5:33 against 5:31
# and 5:37), the longest first (by their times in
# BUILD/spec-times, which each run updates; else by a guess from folder and
# size). Each --also adds a run of the same busted under another
# interpreter and build, whose files share the same slots and whose lines
# carry the interpreter's name (make test: the library's specs again under
# LuaJIT). Without spec files, a run takes every spec/**/*_spec.lua.
# Prints one line per spec file as it ends (tools/busted_files.lua), then the
# details of each failure, the ten slowest files, and one plain line: "N
# passed, N failed[, N skipped]", each spec counted once (the first run's
# counts, with a spec that fails only in a later run moved from passed to
# failed). A spec file that crashes or prints no summary counts as a failure.
# When SPEC_TOTALS names a file, the runs are appended to it instead of that
# line (see --totals), so that a caller can add runs of its own.
# VALGRIND, when set, is a command prefix (make valgrind sets it).
# SPEC_HELPER, when set, is a busted --helper file (make test-gc sets it).
#   run-specs.sh --totals FILE  prints the one line for all the runs recorded
#   in FILE, counting each spec once: the first run's counts, plus each spec
#   that failed only in a later run (the same specs under LuaJIT) moved from
#   passed to failed. Fails if any failed or none ran. Each run appends to
#   FILE: "C<TAB>passed failed skipped" and one "F<TAB>file<TAB>spec name"
#   per failure.
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

# The summary busted prints, "N successes / N failures / N errors / N
# pending : T seconds", as "passed errors+failures skipped" (nothing if none).
busted_counts() {
	sed -n -E 's#^([0-9]+) success(es)? / ([0-9]+) failures? / ([0-9]+) errors? / ([0-9]+) pending.*#\1 \3 \4 \5#p' "$1" |
		tail -n 1 | awk '{ print $1, $2 + $3, $4 }'
}

if [ "${1:-}" = "--job" ]; then
	# (internal) --job RUN N FILE: one spec file of run RUN, as job N; its
	# output goes to $SPEC_DIR/N.out and its exit status to N.rc; what it
	# printed before busted's summary (its line) is shown when it ends
	run=$2; n=$3; file=$4
	eval "lua=\$SPEC_LUA_$run; build=\$SPEC_BUILD_$run; label=\$SPEC_LABEL_$run"
	out=$SPEC_DIR/$n.out
	# Its CPU time, the processes it starts among it (browsers, servers,
	# commands): counted by a cpuacct cgroup of its own where one can be
	# made (root, cgroup v1: what outlives its parent is counted too), else
	# by what the shell's children used (times)
	cg=""
	acct=/sys/fs/cgroup/cpuacct
	if [ -w "$acct" ] && mkdir "$acct/dt-spec-$$" 2>/dev/null; then
		cg=$acct/dt-spec-$$
		echo $$ >"$cg/tasks" 2>/dev/null || { rmdir "$cg"; cg=""; }
	fi
	SPEC_LABEL=$label DEVTOOLS_TOOLS_BUILD=$build ${VALGRIND:-} $lua "$SPEC_BUSTED" -o tools/busted_files.lua \
		${SPEC_HELPER:+--helper="$SPEC_HELPER"} \
		--lpath='./lua/?.lua;./lua/?/init.lua;./spec/?.lua' \
		--cpath="./$build/?.so" "$file" >"$out" 2>&1 </dev/null
	rc=$?
	echo "$rc" >"$SPEC_DIR/$n.rc"
	if [ -n "$cg" ]; then
		awk '{ printf "%.1f\n", $1 / 1e9 }' "$cg/cpuacct.usage" >"$SPEC_DIR/$n.cpu"
		echo $$ >"$acct/tasks"
		# (its last processes may still be on their way out)
		i=0
		while ! rmdir "$cg" 2>/dev/null && [ $i -lt 10 ]; do sleep 0.1; i=$((i + 1)); done
	else
		# "0m1.5s 0m0.2s" (a file: times in a pipeline is a subshell's)
		times >"$SPEC_DIR/$n.times"
		sed -n 2p "$SPEC_DIR/$n.times" | awk '{ n = 0
			for (i = 1; i <= 2; i++) { split($i, t, "m"); n += t[1] * 60 + t[2] }
			printf "%.1f\n", n }' >"$SPEC_DIR/$n.cpu"
	fi
	if [ -n "$(busted_counts "$out")" ]; then
		shown=$(sed -E '/^[0-9]+ success(es)? \/ [0-9]+ failures? \/ /,$d' "$out")
	else
		shown=$(printf '%-44s busted printed no summary (exit status %s)' "$file${label:+ $label}" "$rc")
	fi
	printf '%s\n' "$shown" >"$SPEC_DIR/$n.line"
	printf '%s\n' "$shown"
	exit 0
fi

lua1=$1; busted=$2; build1=$3; shift 3
set -- "$lua1" "$build1" "$@"
nproc=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
jobs=${SPEC_JOBS:-$((nproc + 1))}
case $jobs in ''|*[!0-9]*|0) jobs=1 ;; esac     # (xargs -P 0 would start them all)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM
tab=$(printf '\t')

# The runs: SPEC_LUA_r, SPEC_BUILD_r, SPEC_LABEL_r (none for the first), and
# one "r<TAB>file" line per spec file in $dir/files.
runs=0
while [ $# -gt 0 ]; do
	runs=$((runs + 1))
	lua=$1; build=$2; shift 2
	label=""
	[ "$runs" -gt 1 ] && label="[$(basename "${lua%% *}")]"
	eval "SPEC_LUA_$runs=\$lua; SPEC_BUILD_$runs=\$build; SPEC_LABEL_$runs=\$label"
	export "SPEC_LUA_$runs" "SPEC_BUILD_$runs" "SPEC_LABEL_$runs"
	files=""
	while [ $# -gt 0 ] && [ "$1" != "--also" ]; do
		files="$files $1"; shift
	done
	[ $# -gt 0 ] && shift                            # (the --also)
	[ -n "$files" ] || files=$(find spec -name '*_spec.lua' | sort)
	for f in $files; do printf '%s\t%s\n' "$runs" "$f"; done >>"$dir/files"
done
[ -s "$dir/files" ] || { echo "0 passed, 1 failed (no spec file)"; exit 1; }

# The longest first, so that no long file starts last: by the time it took
# the last time (BUILD/spec-times, written below), else by a guess from its
# folder and size (an end-to-end spec runs a command, a Neovim or an MCP
# server per spec; an integration spec a browser per file; a unit spec
# neither).
times=$build1/spec-times
while IFS=$tab read -r run f; do
	eval "label=\$SPEC_LABEL_$run"
	t=$(awk -F '\t' -v k="$f${label:+ $label}" '$1 == k { print int($2 * 100) }' "$times" 2>/dev/null | tail -n 1)
	if [ -z "$t" ]; then
		case $f in
		*/e2e/*) w=3 ;;
		*/integration/*) w=6 ;;
		*) w=200 ;;
		esac
		t=$(($(wc -c <"$f") / w))
	fi
	printf '%s\t%s\t%s\n' "$t" "$run" "$f"
done <"$dir/files" | sort -t "$tab" -k1,1nr -k2,2n -k3,3 |
	awk -F '\t' '{ print $2, NR, $3 }' >"$dir/jobs"

export SPEC_DIR="$dir" SPEC_BUSTED="$busted"
xargs -P "$jobs" -L 1 sh "$0" --job <"$dir/jobs"

# Each run's counts and failures (the details busted printed after its
# summary), file by file.
totals=${SPEC_TOTALS:-$dir/totals}
status=0
sort -k1,1n -k3,3 "$dir/jobs" >"$dir/byfile"
r=1
while [ "$r" -le "$runs" ]; do
	eval "label=\$SPEC_LABEL_$r"
	p=0; fl=0; s=0
	while read -r run n f; do
		[ "$run" = "$r" ] || continue
		out=$dir/$n.out
		rc=$(cat "$dir/$n.rc" 2>/dev/null || echo "none")
		set -- $(busted_counts "$out")
		if [ $# -eq 0 ]; then
			echo
			echo "== $f${label:+ $label}: busted printed no summary (exit status $rc); its last lines:"
			tail -n 30 "$out"
			fl=$((fl + 1))
			continue
		fi
		p=$((p + $1)); s=$((s + $3))
		if [ "$2" -gt 0 ]; then
			fl=$((fl + $2))
			echo
			echo "== $f${label:+ $label}: $2 failed"
			sed -n -E '/^[0-9]+ success(es)? \/ [0-9]+ failures? \/ /,$p' "$out" | sed 1d
			# "Failure -> spec/x_spec.lua @ 12" or "Error -> ...", then the spec's name
			awk '/^(Failure|Error) -> / { sub(/^[A-Za-z]+ -> /, ""); sub(/ @ [0-9]+$/, ""); file = $0; getline
				printf "F\t%s\t%s\n", file, $0 }' "$out" >>"$dir/failures.$r"
		elif [ "$rc" != 0 ]; then
			# every spec passed but the run itself failed (valgrind, a crash at exit)
			echo "$f${label:+ $label}: the run exited with status $rc although every spec passed"
			fl=$((fl + 1))
		fi
	done <"$dir/byfile"
	printf 'C\t%s %s %s\n' "$p" "$fl" "$s" >>"$totals"
	{ [ "$fl" -gt 0 ] || { [ "$r" = 1 ] && [ "$p" = 0 ]; }; } && status=1
	[ -f "$dir/failures.$r" ] && cat "$dir/failures.$r" >>"$totals"
	r=$((r + 1))
done

# The ten slowest files (their lines end in "T s"); each file's time kept
# for the next run's order
while read -r run n f; do
	eval "label=\$SPEC_LABEL_$run"
	awk -v k="$f${label:+ $label}" -v cpu="$(cat "$dir/$n.cpu" 2>/dev/null)" \
		'/ passed, [0-9]+ failed/ && $NF == "s" { printf "%s\t%s\t%s\n", k, $(NF - 1), cpu }' "$dir/$n.line" 2>/dev/null
done <"$dir/byfile" >"$dir/times"
if [ -d "$build1" ]; then
	# (this run's times over the last ones, for files that are still there)
	# (file, wall seconds, CPU seconds)
	cat "$times" "$dir/times" 2>/dev/null | awk -F '\t' '{ t[$1] = $2 "\t" $3 } END { for (k in t) print k "\t" t[k] }' |
		while IFS=$tab read -r k t c; do
			if [ -f "${k%% *}" ]; then printf '%s\t%s\t%s\n' "$k" "$t" "$c"; fi
		done >"$times.tmp" && mv -f "$times.tmp" "$times"
fi
# (each with the CPU seconds its processes used, the browsers' among them)
echo "the ten slowest files (wall clock, then CPU):"
while read -r run n f; do
	awk -v cpu="$(cat "$dir/$n.cpu" 2>/dev/null)" '/ passed, [0-9]+ failed/ && $NF == "s" {
		printf "%s\t%s  cpu %6.1f s\n", $(NF - 1), $0, cpu }' "$dir/$n.line" 2>/dev/null
done <"$dir/byfile" | sort -t "$tab" -k1,1nr | head -n 10 | cut -f 2- | sed 's/^/  /'
cat "$dir"/*.cpu 2>/dev/null | awk '{ n += $1 } END { printf "spec files: %.0f s of CPU\n", n }'

if [ -z "${SPEC_TOTALS:-}" ]; then
	sh "$0" --totals "$totals"
	exit $?
fi
exit $status
