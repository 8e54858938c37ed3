#!/usr/bin/env bash
# Host tool on a desktop trace, the way a user runs it: the xray-host example traced
# through XRAY_OPTIONS, then `flightrec verify`, `dump` and `convert` finding the
# names file beside the trace, judged by llvm-xray with the same names file; and
# `| head` ending each command quietly with status 0. (The tests
# cli/tests/tool_*.rs run with the workspace tests.)
set -euo pipefail
cd "$(dirname "$0")/../.."

command -v llvm-xray >/dev/null 2>&1 || {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq llvm >/dev/null
}

cargo build -q -p flightrec-cli --bin flightrec
cargo build -q -p flightrec --example xray-host
bin="${CARGO_TARGET_DIR:-$PWD/target}/debug"
flightrec="$bin/flightrec"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

XRAY_OPTIONS="xray_mode=xray-fdr patch_premain=true xray_logfile_base=$out/xh-" \
XRAY_FDR_OPTIONS="func_duration_threshold_us=0 flightrec_mode=streaming" \
  "$bin/examples/xray-host" >"$out/run.log"
trace=$(sed -n 's/^trace: //p' "$out/run.log")
names=$(sed -n 's/^names: //p' "$out/run.log")
test "$names" = "$trace.names"

"$flightrec" verify "$trace"
"$flightrec" dump -v "$trace" >"$out/dump.txt" 2>"$out/dump.err"
grep -qx "flightrec: 4 names from $names (beside the trace)" "$out/dump.err"
grep -q '^<Function Enter: #[0-9]* (xray_host::parse) delta' "$out/dump.txt"
"$flightrec" dump --no-names "$trace" | cmp - <(llvm-xray fdr-dump "$trace")
"$flightrec" convert --format chrome "$trace" -o "$out/trace.json"
grep -q '"name":"handle_batch"' "$out/trace.json"
"$flightrec" convert --format yaml "$trace" >"$out/ours.yaml"
llvm-xray convert --output-format=yaml --symbolize --instr_map "$names" "$trace" >"$out/theirs.yaml"
cmp "$out/ours.yaml" "$out/theirs.yaml"
grep -q "function: 'xray_host::parse'" "$out/ours.yaml"
echo "host tool: $trace verified, dumped and converted with its names file"

# Outputs of megabytes, so the commands are still writing when `head` leaves.
for _ in $(seq 300); do cat testdata/trace2/det/status/event.txt; done >"$out/events.txt"
set +o pipefail
for cmd in "dump $trace" "convert --format yaml $trace" "convert --format chrome $trace" \
  "trace2 render --format event $out/events.txt"; do
  # shellcheck disable=SC2086
  "$flightrec" $cmd 2>"$out/pipe.err" | head -c 100 >/dev/null
  status=${PIPESTATUS[0]}
  if [ "$status" != 0 ] || [ -s "$out/pipe.err" ]; then
    echo "flightrec $cmd | head: status $status"; cat "$out/pipe.err"; exit 1
  fi
done
echo "host tool: every command stops quietly when its reader goes away"
