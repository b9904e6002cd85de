#!/bin/sh
# tools/differential/run.sh LUA BUILD: `make differential`. Generates the
# pages (seeded), serves them on 127.0.0.1, runs the reference
# (chrome-devtools-mcp through the MCP SDK client) and our side (the Lua
# API) on them at once, one browser each, and compares.
#   DIFF_SEED   the seed (default: random; printed, and rerunning with it
#               makes the same pages)
#   DIFF_PAGES  how many pages (default 300); DIFF_FIRST the first page's
#               index (default 0): DIFF_FIRST=17 DIFF_PAGES=1 makes page 17 alone
# Pages and both sides' records stay in BUILD/differential/ for a look.
# Exits 1 on any divergence that doc/page-tools.md does not list as deliberate.
set -eu
lua=$1
build=$2
here=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s)
seed=${DIFF_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
pages=${DIFF_PAGES:-300}
first=${DIFF_FIRST:-0}
echo "differential: seed $seed, pages $first to $((first + pages - 1)) (DIFF_SEED=$seed make differential runs them again)"
DIFF_CACHE=$(sh "$here/setup.sh")
export DIFF_CACHE
dir=$build/differential
rm -rf "$dir"
mkdir -p "$dir/pages"
node "$here/generate.js" "$seed" "$first" "$pages" "$dir/pages"
server=
cleanup() { [ -z "$server" ] || kill "$server" 2>/dev/null || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM
: > "$dir/server.out"
"$build/support/static_server" --root "$dir/pages" --port 0 >> "$dir/server.out" 2>&1 &
server=$!
port=
i=0
while [ -z "$port" ] && [ $i -lt 100 ]; do
	port=$(sed -n 's/^port \([0-9]*\)$/\1/p' "$dir/server.out")
	[ -n "$port" ] || { sleep 0.05; i=$((i + 1)); }
done
[ -n "$port" ] || { echo "the static server did not start: $(cat "$dir/server.out")" >&2; exit 2; }
base=http://127.0.0.1:$port/
rs=0
os=0
node "$here/reference.js" "$dir/pages/plan.jsonl" "$base" "$dir/reference.jsonl" 2> "$dir/reference.err" &
ref=$!
"$lua" "$here/ours.lua" "$build" "$dir/pages/plan.jsonl" "$base" "$dir/ours.jsonl" 2> "$dir/ours.err" &
ours=$!
wait $ref || rs=$?
wait $ours || os=$?
[ $rs -eq 0 ] || { echo "the reference driver failed ($rs):" >&2; tail -n 20 "$dir/reference.err" >&2; }
[ $os -eq 0 ] || { echo "our driver failed ($os):" >&2; tail -n 20 "$dir/ours.err" >&2; }
st=0
node "$here/compare.js" "$seed" "$dir/pages/plan.jsonl" "$dir/reference.jsonl" "$dir/ours.jsonl" || st=$?
echo "differential: took $(($(date +%s) - t0)) s"
[ $rs -eq 0 ] && [ $os -eq 0 ] || exit 2
exit $st
