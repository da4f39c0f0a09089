#!/usr/bin/env bash
# make bench: runs the benchmarks (bench/run.mjs) against the programs of an
# optimised build. Usage: bench/run.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build/bench}" && pwd)
for tool in wrk node; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is missing (scripts/install-deps.sh bench)" >&2; exit 1; }
done
[[ -d $here/peers/node_modules/@modelcontextprotocol/server ]] ||
  { echo "bench: the TypeScript peers are missing (scripts/install-deps.sh bench)" >&2; exit 1; }
# Every listen stream of the memory benchmark is a socket at both ends.
ulimit -n 8192 2>/dev/null || true
exec node "$here/run.mjs" "$build"
