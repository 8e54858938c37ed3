#!/usr/bin/env bash
# Fuzz targets (fuzz/, its own workspace; docs/fuzzing.md). Where a nightly toolchain
# is present, cargo-fuzz runs each target with coverage guidance for a short time
# (FUZZ_SECONDS, default 10), starting from its checked-in corpus: libFuzzer runs
# every corpus input first, so that is the corpus replay too (one build, not two).
# Without nightly, every corpus is replayed on stable and each target gets a short
# unguided random run instead.
#
# Built without AddressSanitizer (`-s none`; coverage guidance stays): the build
# takes a third of the time (2.6 against 7.8 minutes on the shared 2-core machine)
# and inputs run faster. The long runs (`fuzz/run-all.sh`) keep AddressSanitizer,
# and Miri checks the core's unsafe ring code in its own step.
set -euo pipefail
cd fuzz

targets=$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^flightrec-fuzz$')
for t in $targets; do
  test -d "corpus/$t" || { echo "no seed corpus for $t"; exit 1; }
done

if rustup toolchain list | grep -q '^nightly'; then
  if ! command -v cargo-fuzz >/dev/null 2>&1; then
    cargo install -q --locked cargo-fuzz
  fi
  secs=${FUZZ_SECONDS:-10}
  cargo +nightly fuzz build -s none
  for t in $targets; do
    echo "cargo fuzz run $t for ${secs}s (its corpus first)"
    # New inputs go to a scratch directory: the checked-in corpus stays as it is.
    # Its own TMPDIR, which must stay empty: a target leaves no files behind.
    scratch=$(mktemp -d)
    tmp=$(mktemp -d)
    TMPDIR=$tmp cargo +nightly fuzz run -s none "$t" "$scratch" "corpus/$t" -- \
      -max_total_time="$secs" -max_len=4096 -print_final_stats=1 2>&1 | tail -n 3
    if [ -n "$(ls -A "$tmp")" ]; then
      echo "$t left files in its TMPDIR: $(ls -A "$tmp")"
      exit 1
    fi
    rm -rf "$scratch" "$tmp"
  done
else
  echo "no nightly toolchain: replay every corpus on stable, then short unguided runs"
  cargo build -q --bins
  for t in $targets; do
    ./target/debug/"$t" -runs=0 "corpus/$t" 2>&1 | tail -n 1
    # New inputs go to a scratch directory: the checked-in corpus stays as it is.
    scratch=$(mktemp -d)
    ./target/debug/"$t" -runs=3000 -max_len=2048 -seed=1 "$scratch" "corpus/$t" 2>&1 | tail -n 1
    rm -rf "$scratch"
  done
fi
