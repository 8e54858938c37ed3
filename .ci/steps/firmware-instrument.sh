#!/usr/bin/env bash
# #[flightrec::instrument] on #![no_std] firmware (macros/firmware-check): builds
# for thumbv6m-none-eabi and thumbv7em-none-eabihf with flightrec.x linked, reads
# the names back from the ELF's .flightrec section with `flightrec names --elf`
# (every instrumented function and scope, no warning), and measures the flash
# one instrumented function adds (sixteen functions with and without the
# attribute, llvm-size). Fails when that passes FLASH_PER_FN_LIMIT bytes
# (default 24: 19.8 on thumbv6m, 18.0 on thumbv7em; ~230 bytes before the attribute
# called a shared record path). Then the same with feature `small-ids` (ids of 8
# bits from .flightrec.map): the names read back the same, every id below 256,
# and at most SMALL_IDS_LIMIT bytes per function (default 16, issue 13's goal).
# Run from the repository root.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
if ! command -v llvm-size >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq llvm >/dev/null
fi
for t in thumbv6m-none-eabi thumbv7em-none-eabihf; do
  rustup target list --installed | grep -qx "$t" || rustup target add "$t"
done

cargo build -q -p flightrec-cli --bin flightrec
flightrec=$(pwd)/target/debug/flightrec
fw=macros/firmware-check
limit=${FLASH_PER_FN_LIMIT:-24}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

small_limit=${SMALL_IDS_LIMIT:-16}
for t in thumbv6m-none-eabi thumbv7em-none-eabihf; do
 for features in instrument instrument,small-ids; do
  elf=$fw/target/$t/release/flightrec-firmware-check
  (cd "$fw" && cargo build -q --release --target "$t")
  cp "$elf" "$work/base.elf"
  (cd "$fw" && cargo build -q --release --target "$t" --features "$features")
  "$flightrec" names --elf "$elf" -o "$work/fw.names" --list >"$work/names.txt" 2>"$work/names.err"
  if [[ -s $work/names.err ]]; then
    cat "$work/names.err"
    exit 1
  fi
  # f0..f15, Filter::step, checked, sample (async), the scope `tail`, SysTick.
  n=$(wc -l <"$work/names.txt")
  [[ $n -eq 21 ]] || { echo "$t: $n names in .flightrec, expected 21"; cat "$work/names.txt"; exit 1; }
  for name in f15 step checked sample tail SysTick; do
    grep -q "	flightrec_firmware_check::$name	src/main.rs:" "$work/names.txt" ||
      { echo "$t: no name for $name"; exit 1; }
  done
  # The ids start at 1 and none is over 2^28.
  awk -F'\t' '$1 < 1 || $1 > 268435455 { bad = 1 } END { exit bad }' "$work/names.txt"
  # The names take no flash: .flightrec is not loaded.
  if llvm-readelf -S "$elf" | grep ' \.flightrec ' | grep -q ' A'; then
    echo "$t: .flightrec is a loaded section"
    exit 1
  fi
  lim=$limit
  if [[ $features == *small-ids* ]]; then
    lim=$small_limit
    # The ids are the id bytes' addresses: 1 to 21, each given once.
    awk -F'\t' '$1 < 1 || $1 > 255 || seen[$1]++ { bad = 1 } END { exit bad }' "$work/names.txt" ||
      { echo "$t: small ids out of range or given twice"; cat "$work/names.txt"; exit 1; }
    for s in .flightrec.id .flightrec.map; do
      if llvm-readelf -S "$elf" | grep " \\$s " | grep -q ' A'; then
        echo "$t: $s is a loaded section"
        exit 1
      fi
    done
  fi
  base=$(llvm-size "$work/base.elf" | tail -n 1 | awk '{ print $1 }')
  inst=$(llvm-size "$elf" | tail -n 1 | awk '{ print $1 }')
  per=$(awk -v a="$base" -v b="$inst" 'BEGIN { printf "%.1f", (b - a) / 16 }')
  echo "$t ($features): 16 functions instrumented: flash $base -> $inst bytes: $per bytes per function (limit $lim)"
  awk -v p="$per" -v l="$lim" 'BEGIN { exit !(p > l) }' && { echo "$t: over the limit"; exit 1; }
 done
done
echo "firmware instrument checks passed"
