#!/usr/bin/env bash
# The Cortex-M0 firmware example (examples/firmware-microbit: thumbv6m, QEMU
# `microbit`, nRF51822) end to end, over its UART and over RTT: a 16-bit hardware
# timer (TIMER1) is the clock through flightrec's TimerClock, and TIMER0's
# interrupt, a real NVIC interrupt marked #[flightrec::instrument] above
# #[interrupt], records into its own ring. The firmware prints the calls it made
# and the interrupts it took (semihosting stderr); the traces must hold exactly
# those: `flightrec verify`, `llvm-xray fdr-dump --verify`, the function records
# plus the records the target dropped, and `llvm-xray account -m` with the names
# `flightrec names --elf` writes, call for call per function. The RTT run is read
# by `flightrec recv --gdb` through QEMU's GDB stub and must make the same calls,
# in the same order, in thread mode. Run from the repository root.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
need_apt=()
command -v qemu-system-arm >/dev/null 2>&1 || need_apt+=(qemu-system-arm)
command -v llvm-xray >/dev/null 2>&1 || need_apt+=(llvm)
if ((${#need_apt[@]})); then
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
rustup target list --installed | grep -qx thumbv6m-none-eabi || rustup target add thumbv6m-none-eabi

fw=examples/firmware-microbit
work=$(mktemp -d)
qemu_pid=""
cleanup() {
  [[ -n $qemu_pid ]] && kill "$qemu_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "--- build the firmware (UART and RTT) and flightrec"
(
  cd "$fw"
  cargo build -q --release
  cp target/thumbv6m-none-eabi/release/flightrec-firmware-microbit "$work/uart.elf"
  cargo build -q --release --features rtt
  cp target/thumbv6m-none-eabi/release/flightrec-firmware-microbit "$work/rtt.elf"
)
cargo build -q -p flightrec-cli --bin flightrec
flightrec=$(pwd)/target/debug/flightrec
qemu=(qemu-system-arm -machine microbit -display none -monitor none
  -semihosting-config enable=on,target=native -icount shift=4)

# Judges the traces in DIR against the calls the firmware printed in DIR.qemu and
# the names of ELF; writes DIR.calls (thread mode's calls, in order).
judge() {
  local dir=$1 elf=$2 line
  line=$(grep '^calls: ' "$dir.qemu") || { echo "the firmware printed no counts"; cat "$dir.qemu"; exit 1; }
  read -r _ _ sensor _ filter _ checksum _ fib _ timer <<<"$line"
  "$flightrec" verify "$dir/source-1.xray" "$dir/source-2.xray"
  for f in "$dir/source-1.xray" "$dir/source-2.xray"; do
    llvm-xray fdr-dump --verify "$f" >/dev/null
    llvm-xray convert --output-format=yaml "$f" >"$f.yaml"
  done
  # Every call is an enter and an exit record; the target counted what it dropped.
  local expected=$((2 * (sensor + filter + checksum + fib)))
  local kept dropped irq_kept irq_dropped
  kept=$(grep -c 'kind: function-' "$dir/source-1.xray.yaml")
  irq_kept=$(grep -c 'kind: function-' "$dir/source-2.xray.yaml")
  dropped=$(sed -n 's/^  source 1: .*target dropped \([0-9]*\) records.*/\1/p' "$dir.recv")
  irq_dropped=$(sed -n 's/^  source 2: .*target dropped \([0-9]*\) records.*/\1/p' "$dir.recv")
  echo "thread mode: $kept records kept + $dropped dropped, the firmware made $expected"
  echo "TIMER0: $irq_kept records kept + $irq_dropped dropped, the firmware took $timer interrupts"
  [[ $((kept + dropped)) -eq $expected ]] || { echo "thread mode: the records do not add up"; exit 1; }
  [[ $((irq_kept + irq_dropped)) -eq $((2 * timer)) ]] || { echo "TIMER0: the records do not add up"; exit 1; }
  [[ $dropped -eq 0 && $irq_dropped -eq 0 ]] || { echo "records dropped on a blocking link"; exit 1; }
  [[ $timer -gt 100 ]] || { echo "only $timer timer interrupts"; exit 1; }
  # Names from the ELF, judged by llvm-xray: the exact call count per function.
  "$flightrec" names --elf "$elf" -o "$dir.names" 2>"$dir.names.err"
  [[ -s $dir.names.err ]] && { cat "$dir.names.err"; exit 1; }
  : >"$dir.counts"
  for f in "$dir/source-1.xray" "$dir/source-2.xray"; do
    llvm-xray account -m "$dir.names" -format=csv "$f" | tail -n +2 |
      awk -F, '{ gsub(/"/, "", $10); print $10, $2 }' >>"$dir.counts"
  done
  sort -o "$dir.counts" "$dir.counts"
  local c=flightrec_firmware_microbit
  printf '%s\n' "$c::TIMER0 $timer" "$c::checksum $checksum" "$c::fib $fib" "$c::filter $filter" \
    "$c::sensor_read $sensor" >"$dir.expected"
  diff "$dir.expected" "$dir.counts" || { echo "llvm-xray account -m: the counts differ from the firmware's"; exit 1; }
  llvm-xray stack -m "$dir.names" "$dir/source-1.xray" >"$dir.stack1"
  llvm-xray stack -m "$dir.names" "$dir/source-2.xray" >"$dir.stack2"
  grep -q "$c::fib" "$dir.stack1" || { echo "llvm-xray stack -m: no fib"; exit 1; }
  grep -q "$c::TIMER0" "$dir.stack2" || { echo "llvm-xray stack -m: no TIMER0"; exit 1; }
  grep '^  - {' "$dir/source-1.xray.yaml" | sed -E 's/, tsc: [0-9]+//' >"$dir.calls"
}

echo "--- the UART: QEMU's serial piped into flightrec recv"
set +e
timeout 120 "${qemu[@]}" -serial stdio -kernel "$work/uart.elf" 2>"$work/uart.qemu" |
  "$flightrec" recv - -q -o "$work/uart" --elf "$work/uart.elf" 2>"$work/uart.recv"
status=("${PIPESTATUS[@]}")
set -e
cat "$work/uart.recv"
[[ ${status[0]} -eq 0 ]] || { echo "QEMU or the firmware failed (status ${status[0]})"; cat "$work/uart.qemu"; exit 1; }
[[ ${status[1]} -eq 0 ]] || { echo "flightrec recv reported damage or failed (status ${status[1]})"; exit 1; }
judge "$work/uart" "$work/uart.elf"

echo "--- RTT: QEMU's GDB stub read by flightrec recv --gdb"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
timeout 120 "${qemu[@]}" -serial null -gdb "tcp:127.0.0.1:$port" -S -kernel "$work/rtt.elf" \
  >"$work/rtt.qemu" 2>&1 &
qemu_pid=$!
set +e
timeout 120 "$flightrec" recv -q --gdb "127.0.0.1:$port" --elf "$work/rtt.elf" -o "$work/rtt" 2>"$work/rtt.recv"
recv_status=$?
wait "$qemu_pid"
qemu_status=$?
qemu_pid=""
set -e
cat "$work/rtt.recv"
[[ $qemu_status -eq 0 ]] || { echo "QEMU or the firmware failed (status $qemu_status)"; cat "$work/rtt.qemu"; exit 1; }
[[ $recv_status -eq 0 ]] || { echo "flightrec recv --gdb reported damage or failed (status $recv_status)"; exit 1; }
judge "$work/rtt" "$work/rtt.elf"
cmp "$work/uart.calls" "$work/rtt.calls" ||
  { echo "thread mode's calls differ between the UART and RTT runs"; exit 1; }
echo "thread mode: the same calls, in the same order, over the UART and over RTT"

echo "firmware-microbit end to end: ok"
