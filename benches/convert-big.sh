#!/usr/bin/env bash
# Wall time and peak RSS of `flightrec convert|verify` beside llvm-xray 14 on the
# same generated FDR trace (docs/performance.md, "Converting big traces").
#
#   bash benches/convert-big.sh SIZE_MB [--no-llvm]
#
# Makes DIR/trace-SIZE.xray with the gen-trace binary (flightrec-core's writer,
# 4 threads), then times each command with /usr/bin/time -v, output to /dev/null.
# --no-llvm skips llvm-xray (for sizes it cannot hold in memory).
set -euo pipefail
size=${1:?SIZE_MB}
llvm=1
[ "${2:-}" = "--no-llvm" ] && llvm=0
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${BENCH_DIR:-${TMPDIR:-/tmp}/flightrec-convert-big}
mkdir -p "$dir"
cargo build --release -q -p flightrec-cli --bin flightrec --manifest-path "$root/Cargo.toml"
cargo build --release -q -p flightrec-benches --bin gen-trace --manifest-path "$root/Cargo.toml"
bin=${CARGO_TARGET_DIR:-$root/target}/release
trace=$dir/trace-$size.xray
[ -f "$trace" ] || "$bin/gen-trace" "$trace" "$size" 4
echo "trace: $(stat -c %s "$trace") bytes"

run() {
  local label=$1
  shift
  /usr/bin/time -v "$@" >/dev/null 2>"$dir/time.txt" || { echo "$label: failed"; tail -3 "$dir/time.txt"; return; }
  local wall rss
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/time.txt")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
  printf '%-40s %10s %8d MiB\n' "$label" "$wall" $((rss / 1024))
}

run "flightrec verify" "$bin/flightrec" verify -q "$trace"
run "flightrec convert --format yaml" "$bin/flightrec" convert -q --no-names --format yaml "$trace"
run "flightrec convert --format chrome" "$bin/flightrec" convert -q --no-names --format chrome "$trace"
run "flightrec convert --format perfetto" "$bin/flightrec" convert -q --no-names --format perfetto "$trace"
"$bin/flightrec" convert -q --no-names --format chrome -o "$dir/out.json" "$trace"
"$bin/flightrec" convert -q --no-names --format perfetto -o "$dir/out.pftrace" "$trace"
echo "chrome json: $(stat -c %s "$dir/out.json") bytes, perfetto: $(stat -c %s "$dir/out.pftrace") bytes"
rm -f "$dir/out.json" "$dir/out.pftrace"
if [ $llvm = 1 ]; then
  x=$(command -v llvm-xray-14 || command -v llvm-xray)
  run "llvm-xray fdr-dump --verify" "$x" fdr-dump --verify "$trace"
  run "llvm-xray convert --output-format=yaml" "$x" convert --output-format=yaml "$trace"
  run "llvm-xray convert --output-format=trace_event" "$x" convert --output-format=trace_event "$trace"
fi
