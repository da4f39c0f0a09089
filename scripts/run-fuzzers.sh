#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR/fuzz for SECONDS each, starting
# from the committed seed corpus (fuzz/corpus/<target>/). New inputs go to a
# scratch corpus under build/, so the repository is never touched.
set -euo pipefail
build=${1:?build dir}; secs=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
status=0
for bin in "$build"/fuzz/fuzz_*; do
  [[ -x $bin ]] || continue
  name=$(basename "$bin")
  work="$build/fuzz-corpus/$name"; mkdir -p "$work"
  echo "== $name (${secs}s)"
  "$bin" -max_total_time="$secs" -max_len=65536 -print_final_stats=1 \
    "$work" "$root/fuzz/corpus/$name" || status=1
done
exit $status
