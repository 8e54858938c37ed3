#!/usr/bin/env bash
# XRay FDR on desktop hosts: the example program traced through XRAY_OPTIONS in both
# modes, and its files judged by llvm-xray with the names file (the tests under
# std-shell/tests/xray_*.rs run with the workspace tests).
set -euo pipefail

command -v llvm-xray >/dev/null 2>&1 || {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq llvm >/dev/null
}

out=$(mktemp -d)
cargo build -q -p flightrec --example xray-host
for mode in flight-recorder streaming; do
  XRAY_OPTIONS="xray_mode=xray-fdr patch_premain=true verbosity=1 xray_logfile_base=$out/$mode-" \
  XRAY_FDR_OPTIONS="func_duration_threshold_us=0 flightrec_mode=$mode" \
    cargo run -q -p flightrec --example xray-host >"$out/$mode.log"
  trace=$(sed -n 's/^trace: //p' "$out/$mode.log")
  names=$(sed -n 's/^names: //p' "$out/$mode.log")
  test -s "$trace" && test -s "$names"
  llvm-xray fdr-dump --verify "$trace" >/dev/null
  llvm-xray convert --output-format=yaml "$trace" >/dev/null
  # Not -aggregate-threads: llvm-xray 14 aborts merging the call trees of threads
  # with four distinct outermost functions, which a trace that lost records has (docs/desktop-fdr.md).
  llvm-xray stack -k -per-thread-stacks -m "$names" "$trace" 2>/dev/null >"$out/$mode.stack"
  grep -q 'xray_host::parse' "$out/$mode.stack"
  llvm-xray account -k -m "$names" "$trace" 2>/dev/null >"$out/$mode.account"
  grep -q 'handle_batch' "$out/$mode.account"
  echo "xray-host ($mode): $trace verified, names resolved"
done
rm -rf "$out"
