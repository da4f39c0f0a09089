#!/usr/bin/env bash
# A short, deterministic fuzz run for make check: 20,000 inputs from seed 1.
# Usage: smoke.sh FUZZER SCRATCH_DIR SEED_CORPUS_DIR
set -euo pipefail
bin=$1; scratch=$2; corpus=$3
mkdir -p "$scratch"
exec "$bin" -runs=20000 -max_len=65536 -seed=1 -print_final_stats=1 "$scratch" "$corpus"
