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

# The fatal-signal handler's AArch64 stack switch, run under qemu-user: the
# flight-recorder test's signal scenarios built for aarch64-unknown-linux-gnu,
# each started as the test starts it (its children re-exec the test binary,
# which qemu-user without binfmt_misc cannot, so the scenario runs directly).
# The program must die of its own signal with the trace written and whole.
if ! command -v qemu-aarch64 >/dev/null 2>&1 || ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user gcc-aarch64-linux-gnu \
    libc6-dev-arm64-cross >/dev/null
fi
rustup target add aarch64-unknown-linux-gnu >/dev/null 2>&1 || true
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
bin=$(cargo test -q --target aarch64-unknown-linux-gnu -p flightrec --test xray_flight_recorder \
  --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
test -x "$bin"
for case in abort:134 abort-small-altstack:134 segv:139; do
  scenario=${case%%:*}
  want=${case##*:}
  dir=$(mktemp -d)
  status=0
  XRAY_TEST_CHILD=$scenario \
    XRAY_OPTIONS="xray_mode=xray-fdr patch_premain=true verbosity=1 xray_logfile_base=$dir/f-" \
    XRAY_FDR_OPTIONS=func_duration_threshold_us=0 \
    timeout 300 qemu-aarch64 -L /usr/aarch64-linux-gnu "$bin" scenario_child --exact --ignored \
    --nocapture --test-threads=1 >"$dir/out" 2>"$dir/err" || status=$?
  if [ "$status" != "$want" ]; then
    echo "aarch64 $scenario: exit $status, want $want" >&2
    cat "$dir/out" "$dir/err" >&2
    exit 1
  fi
  trace=$(sed -n "s/.*fatal signal; trace written to '\(.*\)'$/\1/p" "$dir/err")
  test -s "$trace" || { echo "aarch64 $scenario: no trace" >&2; cat "$dir/err" >&2; exit 1; }
  llvm-xray fdr-dump --verify "$trace" >/dev/null
  enters=$(llvm-xray convert --output-format=yaml "$trace" | grep -c 'kind: *function-enter' || true)
  if [ "$enters" -lt 60 ]; then
    echo "aarch64 $scenario: $enters function entries in $trace" >&2
    exit 1
  fi
  echo "aarch64 under qemu-user ($scenario): died of its own signal (exit $status), $enters entries verified"
  rm -rf "$dir"
done
