#!/usr/bin/env bash
# XRay sleds on bare-metal AArch64 (sleds/aarch64, crate flightrec-sleds-aarch64):
# host tests of its sled map reader and sled encoder; then the example firmware
# (examples/aarch64-sleds), built with -Zinstrument-xray=always for the firmware
# crate only, runs under QEMU virt (Cortex-A53), patches its sleds, records every
# call into a flightrec ring and flushes it over the PL011 as link frames;
# `flightrec recv` rebuilds the trace, `flightrec verify` and llvm-xray judge it,
# and llvm-xray names the functions from the firmware's own sled map.
# Run from the repository root.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
need_apt=()
command -v qemu-system-aarch64 >/dev/null 2>&1 || need_apt+=(qemu-system-arm)
command -v llvm-xray >/dev/null 2>&1 || need_apt+=(llvm)
if ((${#need_apt[@]})); then
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
rustup +nightly target list --installed | grep -qx aarch64-unknown-none ||
  rustup +nightly target add aarch64-unknown-none

sleds=sleds/aarch64
fw=examples/aarch64-sleds
elf=$fw/target/aarch64-unknown-none/release/flightrec-aarch64-sleds
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "--- the runtime's map reader and sled encoder, on the host"
(
  cd "$sleds"
  cargo fmt -- --check
  cargo test -q
  cargo clippy -q --all-targets -- -D warnings
  # The target side (trampolines, patcher) compiles for the firmware target.
  cargo +nightly build -q --target aarch64-unknown-none
)

echo "--- build the firmware, only its own crate instrumented"
(
  cd "$fw"
  cargo +nightly fmt --all -- --check
  cargo +nightly rustc -q --release -- -Zinstrument-xray=always
)
cargo build -q -p flightrec-cli --bin flightrec
flightrec=target/debug/flightrec
sleds_in_map=$(llvm-xray extract "$elf" | grep -c 'kind: ')
tail_exits=$(llvm-xray extract "$elf" | grep -c 'kind: tail-exit' || true)
echo "$sleds_in_map sleds in the firmware's map, $tail_exits tail-exit"
# `scaled_sum` ends in `become`: its exit is a tail-exit sled.
[[ $tail_exits -ge 1 ]] || { echo "no tail-exit sled in the map"; exit 1; }

echo "--- run it under QEMU virt, the UART into a file"
start=$(date +%s.%N)
set +e
timeout 120 qemu-system-aarch64 -machine virt -cpu cortex-a53 -smp 1 -m 128M \
  -display none -monitor none -serial "file:$work/wire.bin" \
  -semihosting-config enable=on,target=native -kernel "$elf" 2>"$work/qemu.err"
status=$?
set -e
end=$(date +%s.%N)
if [[ $status -ne 0 ]]; then
  # 2: no ring, 3: no sled map, 4: a sled could not be patched, 101: panic,
  # 124: timeout.
  echo "QEMU or the firmware failed (status $status)"
  cat "$work/qemu.err"
  exit 1
fi

echo "--- receive and judge"
"$flightrec" recv "$work/wire.bin" -q -o "$work/out"
trace=$work/out/source-1.xray
"$flightrec" verify "$trace"
llvm-xray fdr-dump --verify "$trace" >/dev/null
llvm-xray convert --output-format=yaml "$trace" >"$work/llvm.yaml"
"$flightrec" convert "$trace" --format yaml -o "$work/ours.yaml"
cmp "$work/llvm.yaml" "$work/ours.yaml"
llvm-xray account -m "$elf" -format=csv "$trace" >"$work/account.csv"
# Calls per function, by the names llvm-xray reads from the firmware's sled map
# and symbols: 300 iterations; fib(3 + i % 5) makes 5, 9, 15, 25, 41 calls; the
# checksum's closure runs once per sample (32); scaled_sum tail-calls sum_from,
# whose closure runs once per sample.
count() {
  # The name is the last field, quoted (none of these has a comma).
  awk -F, -v f="\"$1\"" '$NF == f { print $2 }' "$work/account.csv"
}
check() {
  local got
  got=$(count "$1")
  [[ "$got" == "$2" ]] || {
    echo "$1: $got calls, expected $2"
    cat "$work/account.csv"
    exit 1
  }
}
check flightrec_aarch64_sleds::run 1
check flightrec_aarch64_sleds::sensor_read 300
check flightrec_aarch64_sleds::filter 300
check flightrec_aarch64_sleds::checksum 300
check 'flightrec_aarch64_sleds::checksum::{closure#0}' 9600
check flightrec_aarch64_sleds::fib 5700
check flightrec_aarch64_sleds::scaled_sum 300
check flightrec_aarch64_sleds::sum_from 300
check 'flightrec_aarch64_sleds::sum_from::{closure#0}' 9600
# Every tail exit recorded: one per scaled_sum call.
tail_records=$(grep -c 'kind: function-tail-exit' "$work/ours.yaml" || true)
[[ $tail_records == 300 ]] || { echo "$tail_records tail-exit records, expected 300"; exit 1; }
functions=$(($(wc -l <"$work/account.csv") - 1))
records=$(grep -c 'kind: function-' "$work/ours.yaml")
awk -v b="$(stat -c %s "$work/wire.bin")" -v r="$records" -v f="$functions" -v s="$start" -v e="$end" 'BEGIN {
  printf "%d functions traced, %d records, %d wire bytes (%.2f per record), QEMU run %.1f s\n", f, r, b, b / r, e - s;
}'
echo "aarch64 sleds end to end: ok"
