#!/usr/bin/env bash
# make demo: the tour of libmcp, built in BUILD_DIR.
set -euo pipefail
build=${1:-build/release}
exec "$build/examples/protocol_tour"
