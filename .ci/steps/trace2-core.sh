#!/usr/bin/env bash
# Trace2 core: replay the trace2_format fuzz corpus with the plain libFuzzer
# binary (every seed must pass), then a short random run that starts from it.
# Run from the repository root.
set -euo pipefail
cd fuzz
cargo build -q --bin trace2_format
./target/debug/trace2_format -runs=0 corpus/trace2_format
# New inputs go to a scratch directory, not into the checked-in corpus.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
./target/debug/trace2_format -runs=3000 -max_len=1024 -seed=1 "$scratch" corpus/trace2_format 2>&1 | tail -n 1
