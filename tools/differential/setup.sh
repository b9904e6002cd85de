#!/bin/sh
# tools/differential/setup.sh: puts the differential run's npm packages
# (chrome-devtools-mcp, the MCP SDK, zod, zod-to-json-schema: package.json
# and package-lock.json here) into a cache directory outside the tree, with
# `npm ci`, and prints that directory. Reuses it while the lockfile is the
# same. A test tool: nothing of the library depends on it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${DIFF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/devtools_tools/differential}
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || {
	echo "make differential needs node (20.19 or later) and npm" >&2; exit 2; }
node -e 'const [a, b] = process.versions.node.split(".").map(Number);
	process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' || {
	echo "make differential needs node 20.19 or later (chrome-devtools-mcp 1.11), found $(node --version)" >&2; exit 2; }
want=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
stamp="$cache/.lock-sha256"
if [ -d "$cache/node_modules" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	echo "$cache"
	exit 0
fi
mkdir -p "$cache"
rm -f "$stamp"
cp "$here/package.json" "$here/package-lock.json" "$cache/"
(cd "$cache" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
echo "$want" > "$stamp"
echo "$cache"
