#!/usr/bin/env bash
# Cortex-M cost (benches/cortex-m): builds the bench firmware for thumbv6m-none-eabi
# and thumbv7em-none-eabihf (opt-level "s", fat LTO), executes its hot paths in
# Unicorn (as a Cortex-M0 and a Cortex-M4), counts instructions and modelled cycles,
# and fails when one rose more than 3 % above benches/cortex-m/baseline.txt (the
# user's-path rows `user_*` too: a build with feature `user-path`, src/user.rs, of
# `#[flightrec::instrument]` with the firmware guide's clocks and 4 x 512 B rings,
# and the link onto a UART data register beside the DMA hand-off); prints
# each entry's stack high-water mark (lowest SP of its run) and the stack bounds
# of the record path and the link from the machine code (stack.py), which fail
# if the runs went deeper than them or if they rose above the baseline. Then
# prints flash and RAM, with and without flightrec, of the bench firmware and of the
# firmware example (examples/firmware-qemu, thumbv7m and thumbv6m), their flash by
# crate and what FDR + the link add to the example, and
# fails when their rings or per-context recorders are not in .bss (zero_init.py),
# when FDR and the link bring in a 64-bit division routine, or when the core
# brings in a panic path (a bounds check, a slice index failure, core::fmt).
# Last, the stack that the example's record path and `flush_one` can take (fails
# above STACK_LIMIT bytes, 512 by default, or where there is no bound).
# `--update` rewrites the baseline instead of checking it. Run from the repository root.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
need_apt=()
command -v llvm-nm >/dev/null 2>&1 || need_apt+=(llvm)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv)
if ((${#need_apt[@]})); then
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
for t in thumbv6m-none-eabi thumbv7em-none-eabihf thumbv7m-none-eabi; do
  rustup target list --installed | grep -qx "$t" || rustup target add "$t"
done

# The emulator, the decoder and the ELF reader, pinned: counts must not move with them.
venv=target/cortex-m-venv
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import unicorn, capstone, elftools' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q unicorn==2.1.4 capstone==5.0.9 pyelftools==0.33
fi
py=$venv/bin/python

bench=benches/cortex-m
fw=examples/firmware-qemu
elf=release/flightrec-cortex-m-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "--- build the bench firmware (with and without flightrec)"
(
  cd "$bench"
  for t in thumbv6m-none-eabi thumbv7em-none-eabihf; do
    cargo build -q --release --target "$t" --no-default-features
    cp "target/$t/$elf" "$work/bench-none-$t.elf"
    cargo build -q --release --target "$t"
  done
  # The promise of one core changes nothing on thumbv6m (no compare-and-swap).
  t=thumbv7em-none-eabihf
  cargo build -q --release --target $t --target-dir target/one-core \
    --features unsafe-assume-single-core
  # The user's path (src/user.rs): `#[flightrec::instrument]`, the guide's clocks
  # and rings, with its own global recorder.
  for t in thumbv6m-none-eabi thumbv7em-none-eabihf; do
    cargo build -q --release --target $t --target-dir target/user --features user-path
  done
)

echo "--- instructions and cycles per operation against $bench/baseline.txt"
"$py" "$bench/run.py" "$bench/target/thumbv6m-none-eabi/$elf" \
  "$bench/target/thumbv7em-none-eabihf/$elf" \
  --one-core-v7em "$bench/target/one-core/thumbv7em-none-eabihf/release/flightrec-cortex-m-bench" \
  --user-v6m "$bench/target/user/thumbv6m-none-eabi/$elf" \
  --user-v7em "$bench/target/user/thumbv7em-none-eabihf/$elf" "$@"

echo "--- build the firmware example (with and without flightrec)"
(
  cd "$fw"
  cargo build -q --release --no-default-features
  cp target/thumbv7m-none-eabi/release/flightrec-firmware-qemu "$work/fw-none.elf"
  cargo build -q --release --no-default-features --features trace
  cp target/thumbv7m-none-eabi/release/flightrec-firmware-qemu "$work/fw-fdr.elf"
  cargo build -q --release --no-default-features --features trace2-lines
  cp target/thumbv7m-none-eabi/release/flightrec-firmware-qemu "$work/fw-lines.elf"
  cargo build -q --release
  cp target/thumbv7m-none-eabi/release/flightrec-firmware-qemu "$work/fw-full.elf"
  # The same workload for thumbv6m (Cortex-M0, the flash goal's target; built,
  # not run: QEMU's lm3s6965evb is a Cortex-M3).
  t=thumbv6m-none-eabi
  cargo build -q --release --target $t --no-default-features
  cp target/$t/release/flightrec-firmware-qemu "$work/fw6-none.elf"
  cargo build -q --release --target $t --no-default-features --features trace
  cp target/$t/release/flightrec-firmware-qemu "$work/fw6-fdr.elf"
  cargo build -q --release --target $t --no-default-features --features trace,crc-nibble
  cp target/$t/release/flightrec-firmware-qemu "$work/fw6-fdr-nibble.elf"
)

nm=$(command -v llvm-nm)
echo "--- the examples as a user builds them (release profile, default features; llvm-size)"
# firmware-microbit is the firmware guide's Cortex-M0 example (thumbv6m, 4 x 512 B
# rings, a 16-bit timer as the clock); firmware-qemu's default build was made above.
(cd examples/firmware-microbit && cargo build -q --release)
ub=examples/firmware-microbit/target/thumbv6m-none-eabi/release/flightrec-firmware-microbit
size=$(command -v llvm-size)
"$size" "$ub" "$work/fw-full.elf" "$work/fw6-fdr.elf" "$work/fw6-none.elf" "$work/fw-none.elf" |
  sed "s|$work/||; s|$ub|firmware-microbit (thumbv6m, default)|"
# The size of function $2 (a code symbol named $2 or ending in ::$2::h<hash>) in
# ELF $1, in bytes, or "-" (inlined into its callers).
fn_size() {
  local hex
  hex=$("$nm" -S -C "$1" |
    awk -v f="$2" '$3 ~ /^[tT]$/ && ($4 == f || $4 ~ ("::" f "::h[0-9a-f]+$")) { print $2; exit }')
  if [[ -n $hex ]]; then echo $((16#$hex)); else echo -; fi
}
echo "flash per instrumented function (its symbol's size; firmware-qemu with and without"
echo "the feature trace, which adds the attribute; '-' where the compiler inlined it):"
while read -r target none traced; do
  for f in sensor_read filter checksum fib on_tick; do
    echo "  $target $f: $(fn_size "$work/$none.elf" "$f") B untraced, $(fn_size "$work/$traced.elf" "$f") B instrumented"
  done
done <<'LIST'
thumbv6m fw6-none fw6-fdr
thumbv7m fw-none fw-fdr
LIST
echo "firmware-microbit's instrumented functions (thumbv6m, default build):"
for f in sensor_read filter checksum fib TIMER0; do
  echo "  $f: $(fn_size "$ub" "$f") B"
done

echo "--- the trace statics are zero-initialised (.bss, no flash image)"
for t in thumbv6m-none-eabi thumbv7em-none-eabihf; do
  "$py" "$bench/zero_init.py" "$bench/target/$t/$elf" CONTEXT_RING CONTEXTS
done
for build in fdr full; do
  "$py" "$bench/zero_init.py" "$work/fw-$build.elf" trace::MAIN trace::IRQ trace::TRACE
done

nm=$(command -v llvm-nm)
echo "--- no 64-bit division linked with FDR and the link (a library routine of ~870 B)"
for f in "$bench/target/thumbv6m-none-eabi/$elf" "$bench/target/thumbv7em-none-eabihf/$elf" "$work/fw-fdr.elf" "$work/fw6-fdr.elf"; do
  if "$nm" "$f" | grep -E ' (__aeabi_uldivmod|__aeabi_ldivmod|__udivmoddi4|__divmoddi4|__udivti3|__umodti3)$'; then
    echo "$f links a 64-bit division" >&2
    exit 1
  fi
done
echo "none"

echo "--- no panic path from the core (bounds checks, slice index failures, formatting)"
# The bench firmware has no panic path at all; the example's own `expect`s at
# start-up bring `unwrap_failed` and `panic_fmt`, nothing else may.
for f in "$bench/target/thumbv6m-none-eabi/$elf" "$bench/target/thumbv7em-none-eabihf/$elf"; do
  if "$nm" -C "$f" | grep -E ' core::panicking::| core::fmt::'; then
    echo "$f links a panic path" >&2
    exit 1
  fi
done
for f in "$work/fw-fdr.elf" "$work/fw-full.elf" "$work/fw6-fdr.elf"; do
  if "$nm" -C "$f" | grep -E 'panic_bounds_check|_fail$|_fail |core::fmt::' | grep -v 'core::result::unwrap_failed'; then
    echo "$f links a panic path of the core" >&2
    exit 1
  fi
done
echo "none"

echo "--- flash and RAM (release builds)"
"$py" "$bench/sizes.py" "$nm" \
  "bench firmware thumbv6m, floor only (no flightrec)=$work/bench-none-thumbv6m-none-eabi.elf" \
  "bench firmware thumbv6m, FDR rings + link=$bench/target/thumbv6m-none-eabi/$elf" \
  "bench firmware thumbv7em, floor only (no flightrec)=$work/bench-none-thumbv7em-none-eabihf.elf" \
  "bench firmware thumbv7em, FDR rings + link=$bench/target/thumbv7em-none-eabihf/$elf" \
  "firmware-qemu thumbv7m, no tracing=$work/fw-none.elf" \
  "firmware-qemu thumbv7m, FDR + link (trace)=$work/fw-fdr.elf" \
  "firmware-qemu thumbv7m, FDR + link + compact Trace2 (default)=$work/fw-full.elf" \
  "firmware-qemu thumbv7m, FDR + link + Trace2 lines formatted on the firmware (trace2-lines)=$work/fw-lines.elf" \
  "firmware-qemu thumbv6m, no tracing=$work/fw6-none.elf" \
  "firmware-qemu thumbv6m, FDR + link (trace)=$work/fw6-fdr.elf" \
  "firmware-qemu thumbv6m, FDR + link with the 64-byte CRC table (trace, crc-nibble)=$work/fw6-fdr-nibble.elf"

echo
echo "--- flash that FDR rings + the link add to the example (issue 13's goal: 3 KiB on thumbv6m)"
"$py" - "$work" <<'PY'
import sys
sys.path.insert(0, "benches/cortex-m")
from sizes import flash_ram
work = sys.argv[1]
for target, none, builds in [
    ("thumbv6m", "fw6-none", [("FDR + link", "fw6-fdr"), ("FDR + link, crc-nibble", "fw6-fdr-nibble")]),
    ("thumbv7m", "fw-none", [("FDR + link", "fw-fdr"), ("FDR + link + compact Trace2", "fw-full")]),
]:
    base = flash_ram(f"{work}/{none}.elf")[0]
    for name, elf in builds:
        print(f"{target}, {name}: +{flash_ram(f'{work}/{elf}.elf')[0] - base} B over no tracing ({base} B)")
PY

echo
echo "--- stack the example's record path and link take (from the machine code, benches/cortex-m/stack.py)"
# The most stack below the caller's SP that an instrumented function's record
# (`_flightrec_record_function`: the claim, a buffer switch, a loss marker) and
# the idle loop's `flush_one` can take, each with all it calls; run.py has
# checked the analysis against the depths the bench measures. Fails above
# STACK_LIMIT bytes, or where the code has no bound (recursion, a jump table).
limit=${STACK_LIMIT:-512}
for elf in fw6-fdr fw-fdr; do
  echo "$elf:"
  "$py" "$bench/stack.py" "$work/$elf.elf" _flightrec_record_function flush_one | tee "$work/stack.txt"
  if awk -v limit="$limit" '/ B at most/ { if ($2 + 0 > limit) bad = 1 } END { exit !bad }' "$work/stack.txt"; then
    echo "a path takes more than $limit B of stack" >&2
    exit 1
  fi
done
