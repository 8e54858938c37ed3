#!/usr/bin/env bash
# The serial link end to end: builds the Cortex-M3 firmware example, runs it under
# QEMU (lm3s6965evb), pipes its UART into `flightrec recv`, and judges the result with
# `flightrec verify`, `llvm-xray` (with the function names `recv --elf` takes from
# the firmware's `.flightrec` section) and the expected record counts; its compact
# Trace2 events must come out as git's event lines. Then prints the flash and RAM
# flightrec adds to the firmware (llvm-size: without tracing, FDR + link, FDR + link
# + compact Trace2, FDR + link + Trace2 lines formatted on the firmware) and the
# link's wire cost per record.
# Run from the repository root.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
need_apt=()
command -v qemu-system-arm >/dev/null 2>&1 || need_apt+=(qemu-system-arm)
command -v llvm-xray >/dev/null 2>&1 || need_apt+=(llvm)
command -v llvm-size >/dev/null 2>&1 || need_apt+=(llvm)
if ((${#need_apt[@]})); then
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
rustup target list --installed | grep -qx thumbv7m-none-eabi || rustup target add thumbv7m-none-eabi

fw=examples/firmware-qemu
elf=$fw/target/thumbv7m-none-eabi/release/flightrec-firmware-qemu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "--- build the firmware (with and without flightrec)"
(
  cd "$fw"
  cargo build -q --release --no-default-features
  cp target/thumbv7m-none-eabi/release/flightrec-firmware-qemu "$work/baseline.elf"
  cargo build -q --release --no-default-features --features trace
  cp target/thumbv7m-none-eabi/release/flightrec-firmware-qemu "$work/fdr-only.elf"
  cargo build -q --release --no-default-features --features trace2-lines
  cp target/thumbv7m-none-eabi/release/flightrec-firmware-qemu "$work/trace2-lines.elf"
  cargo build -q --release
)
cargo build -q -p flightrec-cli --bin flightrec
flightrec=target/debug/flightrec

echo "--- run it under QEMU, the UART piped into flightrec recv"
start=$(date +%s.%N)
set +e
timeout 300 qemu-system-arm -cpu cortex-m3 -machine lm3s6965evb -display none -monitor none \
  -serial stdio -semihosting-config enable=on,target=native -icount shift=4 -kernel "$elf" \
  2>"$work/qemu.err" | tee "$work/wire.bin" | "$flightrec" recv - -q -o "$work/out" --elf "$elf" 2>"$work/recv.txt"
status=("${PIPESTATUS[@]}")
set -e
end=$(date +%s.%N)
cat "$work/recv.txt"
if [[ ${status[0]} -ne 0 ]]; then
  echo "QEMU or the firmware failed (status ${status[0]})"
  cat "$work/qemu.err"
  exit 1
fi
if [[ ${status[2]} -ne 0 ]]; then
  echo "flightrec recv reported damage or failed (status ${status[2]})"
  exit 1
fi

echo "--- judge the files"
"$flightrec" verify "$work/out/source-1.xray" "$work/out/source-2.xray"
for f in "$work/out/source-1.xray" "$work/out/source-2.xray"; do
  llvm-xray fdr-dump --verify "$f" >/dev/null
  llvm-xray convert --output-format=yaml "$f" >"$f.yaml"
  llvm-xray stack "$f" >/dev/null
  # Without names, as llvm-xray convert prints it (recv --elf wrote $f.names).
  "$flightrec" convert "$f" --format yaml --no-names -o "$f.ours.yaml"
  cmp "$f.yaml" "$f.ours.yaml"
done
# 3000 iterations of: main_loop, sensor_read, filter, checksum (2 records each) and
# fib(3 + i % 5), whose call counts are 5, 9, 15, 25, 41: 3000 * (8 + 2 * 19) records.
records=$(grep -c 'kind: function-' "$work/out/source-1.xray.yaml")
[[ $records -eq 138000 ]] || { echo "main: $records function records, expected 138000"; exit 1; }
irq=$(grep -c 'kind: function-enter' "$work/out/source-2.xray.yaml")
[[ $irq -gt 100 ]] || { echo "SysTick: only $irq handler entries"; exit 1; }
# The compact Trace2 events as git's event lines, strings from the ELF's
# .flightrec.trace2 section, times from the firmware clock (recv exits non-zero
# for an event it could not render).
t2="$work/out/trace2.txt"
sid='"sid":"20250101T000000.000000Z-Hqemu-P00000001","thread":"main","time":"1970-01-01T00:00:00.000000Z"'
grep -qx "{\"event\":\"version\",$sid,\"evt\":\"4\",\"exe\":\"0.1.0\"}" "$t2"
grep -qx "{\"event\":\"region_enter\",$sid,\"nesting\":1,\"category\":\"firmware\",\"label\":\"workload\"}" "$t2"
grep -qE "^\{\"event\":\"data\",$sid,\"t_abs\":0\.[0-9]{6},\"t_rel\":0\.[0-9]{6},\"nesting\":2,\"category\":\"firmware\",\"key\":\"iterations\",\"value\":\"3000\"\}$" "$t2"
grep -qE "^\{\"event\":\"data\",$sid,.*\"key\":\"clock\",\"value\":\"systick\"\}$" "$t2"
grep -qE "^\{\"event\":\"printf\",$sid,\"t_abs\":0\.[0-9]{6},\"msg\":\"workload done\"\}$" "$t2"
grep -qE "^\{\"event\":\"region_leave\",$sid,\"t_rel\":0\.[0-9]{6},\"nesting\":1,\"category\":\"firmware\",\"label\":\"workload\"\}$" "$t2"
grep -qE "^\{\"event\":\"exit\",$sid,\"t_abs\":0\.[0-9]{6},\"code\":0\}$" "$t2"
[[ $(wc -l <"$t2") -eq 7 ]] || { echo "trace2.txt: $(wc -l <"$t2") lines, expected 7"; cat "$t2"; exit 1; }
# The names recv wrote beside each trace (from the ELF), judged by llvm-xray:
# exact call counts per function; fib(3 + i % 5) is called 5, 9, 15, 25, 41 times.
for f in "$work/out/source-1.xray" "$work/out/source-2.xray"; do
  [[ -s $f.names ]] || { echo "recv --elf wrote no $f.names"; exit 1; }
  llvm-xray account -m "$f.names" -format=csv "$f" | tail -n +2 |
    awk -F, '{ gsub(/"/, "", $10); print $10, $2 }' >>"$work/counts.txt"
done
sort -o "$work/counts.txt" "$work/counts.txt"
printf '%s\n' "flightrec_firmware_qemu::checksum 3000" \
  "flightrec_firmware_qemu::fib $((600 * (5 + 9 + 15 + 25 + 41)))" \
  "flightrec_firmware_qemu::filter 3000" "flightrec_firmware_qemu::main_loop 3000" \
  "flightrec_firmware_qemu::on_tick $irq" "flightrec_firmware_qemu::sensor_read 3000" \
  >"$work/expected-counts.txt"
diff "$work/expected-counts.txt" "$work/counts.txt" || { echo "llvm-xray account -m: counts differ"; exit 1; }
llvm-xray stack -m "$work/out/source-1.xray.names" "$work/out/source-1.xray" >"$work/stack.txt"
grep -q "flightrec_firmware_qemu::fib" "$work/stack.txt"
"$flightrec" convert "$work/out/source-1.xray" --format chrome --elf "$elf" -o "$work/main.json"
grep -q '"name":"flightrec_firmware_qemu::fib"' "$work/main.json"
# A stream from another build (the baseline names no function) and a missing
# ELF: a warning naming the file, and the trace still converted with numeric ids.
"$flightrec" convert "$work/out/source-1.xray" --format yaml -q --elf "$work/baseline.elf" -o "$work/other.yaml" 2>"$work/other.err"
grep -q "not in the .flightrec section of $work/baseline.elf" "$work/other.err"
grep -q 'function: .#' "$work/other.yaml"
"$flightrec" dump "$work/out/source-2.xray" --elf "$work/none.elf" 2>"$work/none.err" >/dev/null
grep -q "warning: $work/none.elf: " "$work/none.err"
echo "main thread: $records records; SysTick handler: $irq entries; trace2: $(wc -l <"$work/out/trace2.txt") lines"

echo "--- the same firmware with ids of 8 bits and the promise of one core (features small-ids,"
echo "    unsafe-assume-single-core): the same names and counts"
(cd "$fw" && cargo build -q --release --features small-ids,unsafe-assume-single-core)
cp "$elf" "$work/small.elf"
# The promise took effect: the global recorder claims its slot without a
# load-exclusive, which the default build has.
claims() { llvm-objdump -d --disassemble-symbols=_flightrec_record_function "$1" | grep -c ldrex || true; }
[[ $(claims "$work/fdr-only.elf") -gt 0 && $(claims "$work/small.elf") -eq 0 ]] ||
  { echo "ldrex in the record path: default $(claims "$work/fdr-only.elf"), one core $(claims "$work/small.elf")"; exit 1; }
timeout 300 qemu-system-arm -cpu cortex-m3 -machine lm3s6965evb -display none -monitor none \
  -serial stdio -semihosting-config enable=on,target=native -icount shift=4 -kernel "$work/small.elf" \
  2>"$work/qemu-small.err" | "$flightrec" recv - -q -o "$work/small" --elf "$work/small.elf" 2>"$work/recv-small.txt" ||
  { cat "$work/recv-small.txt" "$work/qemu-small.err"; exit 1; }
cat "$work/recv-small.txt"
if grep -qi 'warning' "$work/recv-small.txt"; then
  echo "recv with small ids warned"
  exit 1
fi
: >"$work/counts-small.txt"
for f in "$work/small/source-1.xray" "$work/small/source-2.xray"; do
  "$flightrec" verify "$f" >/dev/null
  # Every id below 256: the function records' ids, as llvm-xray reads them.
  llvm-xray convert --output-format=yaml "$f" | awk '/func-id:/ { if ($NF + 0 > 255) bad = 1 } END { exit bad }' ||
    { echo "$f: an id above 255 with small ids"; exit 1; }
  llvm-xray account -m "$f.names" -format=csv "$f" | tail -n +2 |
    awk -F, '{ gsub(/"/, "", $10); print $10, $2 }' >>"$work/counts-small.txt"
done
sort -o "$work/counts-small.txt" "$work/counts-small.txt"
# The workload's counts exactly; the SysTick handler's depends on the timing
# (the smaller build runs faster), so only that it ran.
diff <(grep -v ::on_tick "$work/expected-counts.txt") <(grep -v ::on_tick "$work/counts-small.txt") ||
  { echo "small ids: counts differ"; exit 1; }
grep -qE '^flightrec_firmware_qemu::on_tick [1-9][0-9]*$' "$work/counts-small.txt" ||
  { echo "small ids: no SysTick entry named"; exit 1; }
[[ ! -e $work/out/no-ring.txt && ! -e $work/small/no-ring.txt ]] ||
  { echo "recv wrote no-ring.txt for a firmware whose every context has a ring"; exit 1; }

echo "--- SysTick's ring installed for the wrong priority (feature wrong-priority): recv names"
echo "    the context whose records found no ring, none charged to thread mode"
(cd "$fw" && cargo build -q --release --features wrong-priority)
cp "$elf" "$work/wrong.elf"
timeout 300 qemu-system-arm -cpu cortex-m3 -machine lm3s6965evb -display none -monitor none \
  -serial stdio -semihosting-config enable=on,target=native -icount shift=4 -kernel "$work/wrong.elf" \
  2>"$work/qemu-wrong.err" | "$flightrec" recv - -q -o "$work/wrong" --elf "$work/wrong.elf" 2>"$work/recv-wrong.txt" ||
  { cat "$work/recv-wrong.txt" "$work/qemu-wrong.err"; exit 1; }
cat "$work/recv-wrong.txt"
# Every SysTick entry and exit (an even count), by the ordinary drain: the
# firmware's idle loop never calls flush_all.
line='^interrupt priority 0x00 has no ring: [1-9][0-9]*[02468] records$'
[[ $(wc -l <"$work/wrong/no-ring.txt") -eq 1 ]] && grep -qE "$line" "$work/wrong/no-ring.txt" ||
  { echo "no-ring.txt does not name SysTick's priority:"; cat "$work/wrong/no-ring.txt"; exit 1; }
grep -qE "^flightrec recv: ${line#^}" "$work/recv-wrong.txt" || { echo "recv did not name the context on stderr"; exit 1; }
# Thread mode's trace is whole and carries no loss marker for them.
llvm-xray convert --output-format=yaml "$work/wrong/source-1.xray" >"$work/wrong.yaml"
[[ $(grep -c 'kind: function-' "$work/wrong.yaml") -eq 138000 ]] || { echo "wrong priority: main's records differ"; exit 1; }
"$flightrec" dump "$work/wrong/source-1.xray" >"$work/wrong.dump"
if grep -q 'lost' "$work/wrong.dump"; then
  echo "the records without a ring were charged to thread mode"; exit 1
fi
[[ ! -e $work/wrong/source-2.xray ]] || { echo "SysTick's ring got buffers at the wrong priority"; exit 1; }
(cd "$fw" && cargo build -q --release)

echo "--- what flightrec adds to the firmware (llvm-size, release build)"
llvm-size "$work/baseline.elf" "$work/fdr-only.elf" "$elf"
sizes() { llvm-size "$1" | tail -n 1 | awk '{ print $1 + $2, $2 + $3 }'; }
read -r b_flash b_ram < <(sizes "$work/baseline.elf")
read -r f_flash f_ram < <(sizes "$work/fdr-only.elf")
read -r t_flash t_ram < <(sizes "$elf")
read -r l_flash l_ram < <(sizes "$work/trace2-lines.elf")
echo "FDR rings + link: flash +$((f_flash - b_flash)) bytes, RAM +$((f_ram - b_ram)) bytes"
echo "FDR rings + link + compact Trace2 events: flash +$((t_flash - b_flash)) bytes, RAM +$((t_ram - b_ram)) bytes"
echo "FDR rings + link + Trace2 lines formatted on the firmware: flash +$((l_flash - b_flash)) bytes, RAM +$((l_ram - b_ram)) bytes"
t2_flash=$((t_flash - f_flash))
echo "compact Trace2 over FDR + link: flash +$t2_flash bytes (goal <= 6144); lines formatted on the firmware: +$((l_flash - f_flash)) bytes"
[[ $t2_flash -le 6144 ]] || { echo "compact Trace2 costs $t2_flash bytes of flash, over 6 KiB"; exit 1; }
# No floating point in the firmware, and no division in the compact Trace2 code.
if llvm-nm "$elf" | grep -qiE '__aeabi_[df]|divdf|muldf|adddf'; then
  echo "the firmware links floating point"; exit 1
fi
llvm-objdump -d --demangle "$elf" |
  awk '/^[0-9a-f]+ <.*>:$/ { inside = ($0 ~ /trace2|Trace2/) } inside' >"$work/trace2.s"
[[ -s $work/trace2.s ]] || { echo "no compact Trace2 code found in the firmware"; exit 1; }
if grep -qE 'div|__aeabi_l' "$work/trace2.s"; then
  echo "the compact Trace2 code divides:"; grep -E 'div|__aeabi_l' "$work/trace2.s"; exit 1
fi

echo "--- link cost"
bytes=$(stat -c %s "$work/wire.bin")
total=$((records + 2 * irq))
awk -v b="$bytes" -v r="$total" -v s="$start" -v e="$end" 'BEGIN {
  per = b / r;
  printf "%d wire bytes for %d records: %.2f bytes per record\n", b, r, per;
  printf "records per second a UART sustains (8N1, 10 bits per byte): 115200 baud: %.0f, 921600 baud: %.0f, 3 Mbaud: %.0f\n", 11520 / per, 92160 / per, 300000 / per;
  printf "this run: %.1f s of host time, %.0f records per second through QEMU and recv\n", e - s, r / (e - s);
}'
# The frame decoder's fuzz corpus is replayed by fuzz.sh with every other target.

echo "link end to end: ok"
