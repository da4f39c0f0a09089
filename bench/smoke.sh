#!/usr/bin/env bash
# ctest bench/smoke: runs every benchmark program once with tiny counts,
# without wrk or Node, to check that the harness works. It never looks at a
# timing -- make bench measures (see docs/benchmarks.md).
#
#   bench/smoke.sh BENCH_BIN_DIR
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
servers=()
cleanup() {
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# Every program prints one JSON object; check it has the expected key.
expect() { # expect KEY COMMAND...
  local key=$1; shift
  local out
  out=$("$@" | tail -n 1)
  [[ $out == "{"*"\"$key\":"* ]] || { echo "smoke: no $key from: $*: $out" >&2; exit 1; }
  echo "smoke: ok: $* -> $out"
}

# Starts a server that prints its URL first; stores the URL in $url.
start() { # start NAME COMMAND...
  local name=$1; shift
  "$@" >"$tmp/$name.out" &
  servers+=($!)
  for _ in $(seq 100); do
    url=$(head -n 1 "$tmp/$name.out" 2>/dev/null || true)
    [[ $url == http://* ]] && return 0
    sleep 0.05
  done
  echo "smoke: $name printed no URL" >&2
  exit 1
}

expect seal_ns "$bin/bench_mrtr" --rounds 20
expect calls_per_s "$bin/bench_client" --calls 20 --inflight 2 -- "$bin/bench_server" stdio
expect connects "$bin/bench_client" --connects 2 -- "$bin/bench_server" stdio
expect calls_per_s "$bin/bench_pipe_ceiling" --calls 300 --warmup 10
expect calls_per_s "$bin/bench_pipe_ceiling" --calls 300 --cpus one
expect calls_per_s "$bin/bench_pipe_ceiling" --calls 300 --spin-us 50
expect calls_per_s "$bin/bench_client" --calls 20 --spin-us -1 -- "$bin/bench_server" stdio --spin-us -1

start libmcp "$bin/bench_server" http --tools 3
for op in echo confirm list read; do
  expect calls_per_s "$bin/bench_client" --calls 4 --warmup 1 --op "$op" --http "$url"
done
expect connects "$bin/bench_client" --connects 2 --era auto --http "$url"
# echo_inline, what wrk calls with MCP_OP=echo_inline (bench/mcp_call.lua).
meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"smoke","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}'
out=$(curl -sS -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo_inline' \
  --data '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo_inline","arguments":{"text":"inline hello"},'"$meta"'}}' "$url")
[[ $out == *'"text":"inline hello"'* ]] || { echo "smoke: echo_inline said: $out" >&2; exit 1; }
echo "smoke: ok: echo_inline over HTTP"

# The server linked with the shared libmcp-server and libmcp (idle RSS rows).
for variant in server whole; do
  start "shared_$variant" "$bin/bench_server_$variant" http
  expect calls_per_s "$bin/bench_client" --calls 4 --warmup 1 --http "$url"
done

start mhd "$bin/bench_mhd_fixed"
out=$(curl -sS -X POST -H 'Content-Type: application/json' --data '{}' "$url")
[[ $out == *'"resultType":"complete"'* ]] || { echo "smoke: bench_mhd_fixed said: $out" >&2; exit 1; }
echo "smoke: ok: bench_mhd_fixed"
# --spread: connections handed to its two threads in turn; three of them,
# two requests each on keep-alive, all answered.
start mhd_spread "$bin/bench_mhd_fixed" --spread
for _ in 1 2 3; do
  out=$(curl -sS -X POST -H 'Content-Type: application/json' --data '{}' "$url" --next \
          -X POST -H 'Content-Type: application/json' --data '{}' "$url")
  [[ $(grep -o '"resultType":"complete"' <<<"$out" | wc -l) == 2 ]] ||
    { echo "smoke: bench_mhd_fixed --spread said: $out" >&2; exit 1; }
done
echo "smoke: ok: bench_mhd_fixed --spread"
start mhd_one "$bin/bench_mhd_fixed" --threads 1
out=$(curl -sS -X POST -H 'Content-Type: application/json' --data '{}' "$url")
[[ $out == *'"resultType":"complete"'* ]] || { echo "smoke: bench_mhd_fixed --threads 1 said: $out" >&2; exit 1; }
echo "smoke: ok: bench_mhd_fixed --threads 1"

expect per_stream_bytes "$bin/bench_memory" --calls 40 --warm 8 --streams 4 -- "$bin/bench_server" http
echo "smoke: all benchmark programs work"
