#!/usr/bin/env bash
# The RTT link end to end: the core's RTT tests, then the Cortex-M3 firmware example
# built with its `rtt` feature runs under QEMU (lm3s6965evb) with QEMU's GDB stub,
# and `flightrec recv --gdb` reads the RTT up-channel through it. The files are
# judged as link.sh judges the UART's (`flightrec verify`, `llvm-xray fdr-dump
# --verify`, exact record counts), and the main thread's calls (function ids and
# kinds, in order) must be the same as over the UART. The channel's non-blocking
# mode runs too: the records kept and the records the target counted as dropped add
# up to the workload's, and the trace's loss markers to the dropped count. Prints
# the bytes per second through the GDB stub beside the UART's in the same run.
# Run from the repository root.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
need_apt=()
command -v qemu-system-arm >/dev/null 2>&1 || need_apt+=(qemu-system-arm)
command -v llvm-xray >/dev/null 2>&1 || need_apt+=(llvm)
if ((${#need_apt[@]})); then
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
rustup target list --installed | grep -qx thumbv7m-none-eabi || rustup target add thumbv7m-none-eabi

echo "--- the core's RTT control block and writer"
cargo test -q -p flightrec-core --features rtt --lib link::rtt
cargo test -q -p flightrec-core --features rtt --test rtt_threads
cargo test -q -p flightrec-core --features rtt --doc link::rtt
cargo test -q -p flightrec-core --features rtt --doc FirmwareGuide

fw=examples/firmware-qemu
elf=$fw/target/thumbv7m-none-eabi/release/flightrec-firmware-qemu
work=$(mktemp -d)
qemu_pid=""
cleanup() {
  [[ -n $qemu_pid ]] && kill "$qemu_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "--- build the firmware (UART and RTT variants) and flightrec"
(
  cd "$fw"
  cargo build -q --release
  cp target/thumbv7m-none-eabi/release/flightrec-firmware-qemu "$work/uart.elf"
  # A 4 KiB channel: fewer stops of the target per byte than the default 1 KiB.
  FLIGHTREC_RTT_BUFFER_SIZE=4096 cargo build -q --release --features rtt
  cp target/thumbv7m-none-eabi/release/flightrec-firmware-qemu "$work/rtt.elf"
  FLIGHTREC_RTT_BUFFER_SIZE=4096 cargo build -q --release --features rtt-nonblocking
  cp target/thumbv7m-none-eabi/release/flightrec-firmware-qemu "$work/rtt-nonblocking.elf"
)
cargo build -q -p flightrec-cli --bin flightrec
flightrec=target/debug/flightrec
qemu=(qemu-system-arm -cpu cortex-m3 -machine lm3s6965evb -display none -monitor none
  -semihosting-config enable=on,target=native -icount shift=4)

echo "--- the UART variant (the reference)"
start=$(date +%s.%N)
timeout 300 "${qemu[@]}" -serial stdio -kernel "$work/uart.elf" 2>"$work/uart-qemu.err" |
  "$flightrec" recv - -q -o "$work/uart" --elf "$work/uart.elf" 2>"$work/uart-recv.txt"
uart_end=$(date +%s.%N)
uart_bytes=$(awk '/^flightrec recv:/ { print $3 }' "$work/uart-recv.txt")
uart_secs=$(awk -v s="$start" -v e="$uart_end" 'BEGIN { print e - s }')

# Runs ELF under QEMU's GDB stub (halted until the client lets it run: -S) and
# receives its RTT channel with flightrec recv --gdb into DIR; fails on any error.
run_rtt() {
  local elf=$1 dir=$2 port recv_status qemu_status
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  timeout 300 "${qemu[@]}" -serial null -gdb "tcp:127.0.0.1:$port" -S -kernel "$elf" \
    >"$dir.qemu" 2>&1 &
  qemu_pid=$!
  set +e
  timeout 300 "$flightrec" recv -q --gdb "127.0.0.1:$port" --elf "$elf" -o "$dir" 2>"$dir.recv"
  recv_status=$?
  wait "$qemu_pid"
  qemu_status=$?
  qemu_pid=""
  set -e
  cat "$dir.recv"
  if [[ $qemu_status -ne 0 ]]; then
    echo "QEMU or the firmware failed (status $qemu_status)"
    cat "$dir.qemu"
    exit 1
  fi
  if [[ $recv_status -ne 0 ]]; then
    echo "flightrec recv --gdb reported damage or failed (status $recv_status)"
    exit 1
  fi
}

echo "--- the RTT variant under QEMU's GDB stub, read by flightrec recv --gdb"
start=$(date +%s.%N)
run_rtt "$work/rtt.elf" "$work/out"
rtt_end=$(date +%s.%N)

echo "--- judge the files"
"$flightrec" verify "$work/out/source-1.xray" "$work/out/source-2.xray"
for f in "$work/out/source-1.xray" "$work/out/source-2.xray" "$work/uart/source-1.xray"; do
  llvm-xray fdr-dump --verify "$f" >/dev/null
  llvm-xray convert --output-format=yaml "$f" >"$f.yaml"
done
# As link.sh: 3000 iterations of main_loop, sensor_read, filter, checksum and fib.
records=$(grep -c 'kind: function-' "$work/out/source-1.xray.yaml")
[[ $records -eq 138000 ]] || { echo "main: $records function records, expected 138000"; exit 1; }
irq=$(grep -c 'kind: function-enter' "$work/out/source-2.xray.yaml")
[[ $irq -gt 100 ]] || { echo "SysTick: only $irq handler entries"; exit 1; }
grep -q '"event":"version"' "$work/out/trace2.txt"
grep -q '"event":"exit"' "$work/out/trace2.txt"
calls() { grep '^  - {' "$1" | sed -E 's/, tsc: [0-9]+//'; }
calls "$work/uart/source-1.xray.yaml" >"$work/uart-calls.txt"
calls "$work/out/source-1.xray.yaml" >"$work/rtt-calls.txt"
cmp "$work/uart-calls.txt" "$work/rtt-calls.txt" ||
  { echo "the main thread's calls differ between the UART and RTT runs"; exit 1; }
echo "main thread: $records records, the same calls as over the UART; SysTick handler: $irq entries"

echo "--- non-blocking mode: what the channel had no room for is dropped and counted"
run_rtt "$work/rtt-nonblocking.elf" "$work/nb"
"$flightrec" verify "$work/nb/source-1.xray" "$work/nb/source-2.xray"
llvm-xray fdr-dump --verify "$work/nb/source-1.xray" >/dev/null
kept=$(llvm-xray convert --output-format=yaml "$work/nb/source-1.xray" | grep -c 'kind: function-')
dropped=$(sed -n 's/^  source 1: .*target dropped \([0-9]*\) records.*/\1/p' "$work/nb.recv")
# A run whose channel never filled has no loss marker: grep finds nothing.
marked=$("$flightrec" dump --no-names "$work/nb/source-1.xray" |
  { grep -o "flightrec: lost [0-9]* records" || true; } | awk '{ s += $3 } END { print s + 0 }')
echo "main thread: $kept records kept, $dropped dropped, $marked in the trace's loss markers"
[[ $((kept + dropped)) -eq 138000 ]] || { echo "kept + dropped is not 138000"; exit 1; }
[[ $marked -eq $dropped ]] || { echo "the loss markers do not add up to the dropped count"; exit 1; }

echo "--- throughput"
rtt_bytes=$(awk '/^flightrec recv:/ { print $3 }' "$work/out.recv")
awk -v b="$rtt_bytes" -v s="$start" -v e="$rtt_end" -v ub="$uart_bytes" -v us="$uart_secs" 'BEGIN {
  printf "RTT through the GDB stub: %d bytes in %.2f s: %.0f bytes/s (QEMU start to recv end)\n", b, e - s, b / (e - s);
  printf "UART (QEMU -serial stdio), same firmware and run: %d bytes in %.2f s: %.0f bytes/s\n", ub, us, ub / us;
}'

echo "rtt end to end: ok"
