#!/usr/bin/env bash
# Fuzzes every cargo-fuzz target (or those named) for a given time, one at a time,
# then merges what the run found into the checked-in corpus and replays it.
#
#   fuzz/run-all.sh [SECONDS] [TARGET...]     (SECONDS per target, default 300)
#
# New inputs go to a scratch directory first; libFuzzer's `-merge=1` then adds to
# `corpus/<target>` only those that reach new coverage (FUZZ_MERGE=0: keep the
# corpus as it is). Each target runs with its own empty TMPDIR, which must still
# be empty afterwards: a target leaves no files behind. The last lines printed
# for each target are libFuzzer's final statistics (executions, exec/s) and its
# coverage (edges `cov`, features `ft`); a crash stops the script with the
# reproducer under fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")"

secs=${1:-300}
shift || true
targets=${*:-$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^flightrec-fuzz$')}
max_len=${FUZZ_MAX_LEN:-4096}

cargo +nightly fuzz --version >/dev/null 2>&1 || cargo install -q --locked cargo-fuzz

for t in $targets; do
  test -d "corpus/$t" || { echo "no seed corpus for $t" >&2; exit 1; }
  scratch=$(mktemp -d)
  tmp=$(mktemp -d)
  before=$(find "corpus/$t" -type f | wc -l)
  echo "=== $t: ${secs}s (corpus: $before inputs)"
  TMPDIR=$tmp cargo +nightly fuzz run "$t" "$scratch" "corpus/$t" -- \
    -max_total_time="$secs" -max_len="$max_len" -print_final_stats=1 \
    >"$scratch.log" 2>&1 || { tail -n 40 "$scratch.log"; exit 1; }
  grep -E '^#[0-9]+[[:space:]]+DONE' "$scratch.log" | tail -n 1 || true
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$scratch.log" || true
  if [ -n "$(ls -A "$tmp")" ]; then
    echo "$t left files in its TMPDIR:" >&2
    ls -A "$tmp" >&2
    exit 1
  fi
  if [ "${FUZZ_MERGE:-1}" != 0 ]; then
    TMPDIR=$tmp cargo +nightly fuzz run "$t" "corpus/$t" "$scratch" -- \
      -merge=1 -max_len="$max_len" >"$scratch.merge.log" 2>&1 ||
      { tail -n 20 "$scratch.merge.log"; exit 1; }
    echo "corpus: $before -> $(find "corpus/$t" -type f | wc -l) inputs after merging the new coverage"
  fi
  # Replay the (merged) corpus: every input still passes.
  TMPDIR=$tmp cargo +nightly fuzz run "$t" "corpus/$t" -- -runs=0 -max_len="$max_len" 2>&1 | tail -n 1
  rm -rf "$scratch" "$scratch.log" "$scratch.merge.log" "$tmp"
done
