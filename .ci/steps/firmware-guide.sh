#!/usr/bin/env bash
# docs/firmware-guide.md's "Five minutes" is examples/firmware-guide, as a user
# writes it: every line of the section's snippets (Cargo.toml, .cargo/config.toml,
# build.rs, the statics in src/trace.rs, the calls in src/main.rs; the lines a
# doc test hides, starting with `#`, aside) must be in the crate's files. The
# crate is built with tracing (the default feature `trace`) and without it (the
# baseline: no flightrec.x, no flightrec), run under QEMU (`microbit`) with its
# UART piped into `flightrec recv --elf`, and judged: `flightrec verify`,
# `llvm-xray fdr-dump --verify`, and exactly one enter and one exit record per
# call the firmware counted, none dropped. Run from the repository root.
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

app=examples/firmware-guide
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "--- every line of the guide's \"Five minutes\" snippets is in $app"
# The fenced blocks between "## Five minutes" and the next "## " heading, but for
# the `sh` ones (host commands); one file per block.
awk -v dir="$work" '
  /^## Five minutes/ { on = 1; next }
  on && /^## / { exit }
  on && /^```/ && !grab { grab = 1; n++; skip = ($0 ~ /^```sh/); kind = ($0 ~ /^```rust/) ? "rust" : "toml"; next }
  on && /^```/ && grab { grab = 0; next }
  on && grab && !skip { print > (dir "/snippet" n "." kind) }
' docs/firmware-guide.md
files=("$app/Cargo.toml" "$app/.cargo/config.toml" "$app/build.rs" "$app/src/trace.rs" "$app/src/main.rs")
checked=0
for snippet in "$work"/snippet*.*; do
  snippet_kind=${snippet##*.}
  while IFS= read -r line; do
    line=$(sed 's/^ *//; s/ *$//' <<<"$line")
    # Blank lines, the lines a doc test hides, and the comment naming the file.
    [[ -z $line || $line == "#" || $line =~ ^(#|//)\ (Cargo\.toml|\.cargo/config\.toml|build\.rs|src/[a-z_]+\.rs)$ ]] && continue
    # A doc test's hidden lines (a TOML comment line is checked as it is).
    [[ $line == "# "* && $snippet_kind == rust ]] && continue
    grep -qF -- "$line" "${files[@]}" || { echo "the guide's line is in none of the crate's files: $line"; exit 1; }
    checked=$((checked + 1))
  done <"$snippet"
done
[[ $checked -gt 20 ]] || { echo "only $checked lines of the guide checked: the section moved?"; exit 1; }
echo "$checked lines of the guide found in the crate"

echo "--- build it with tracing and without (the same linker setup in both)"
(
  cd "$app"
  cargo build -q --release --no-default-features
  cp target/thumbv6m-none-eabi/release/flightrec-firmware-guide "$work/baseline.elf"
  cargo build -q --release
  cp target/thumbv6m-none-eabi/release/flightrec-firmware-guide "$work/trace.elf"
)
if command -v llvm-size >/dev/null 2>&1; then
  llvm-size "$work/baseline.elf" "$work/trace.elf"
fi
cargo build -q -p flightrec-cli --bin flightrec
flightrec=$(pwd)/target/debug/flightrec
qemu=(qemu-system-arm -machine microbit -display none -monitor none
  -semihosting-config enable=on,target=native -icount shift=4)

echo "--- the baseline runs and sends nothing"
timeout 120 "${qemu[@]}" -serial "file:$work/baseline.uart" -kernel "$work/baseline.elf" 2>"$work/baseline.qemu"
grep '^calls: ' "$work/baseline.qemu"
[[ ! -s $work/baseline.uart ]] || { echo "the build without tracing sent bytes"; exit 1; }

echo "--- the traced build under QEMU, its UART piped into flightrec recv"
set +e
timeout 120 "${qemu[@]}" -serial stdio -kernel "$work/trace.elf" 2>"$work/trace.qemu" |
  "$flightrec" recv - -q -o "$work/out" --elf "$work/trace.elf" 2>"$work/recv.txt"
status=("${PIPESTATUS[@]}")
set -e
cat "$work/recv.txt"
[[ ${status[0]} -eq 0 ]] || { echo "QEMU or the firmware failed (status ${status[0]})"; cat "$work/trace.qemu"; exit 1; }
[[ ${status[1]} -eq 0 ]] || { echo "flightrec recv reported damage or failed (status ${status[1]})"; exit 1; }
line=$(grep '^calls: ' "$work/trace.qemu") || { echo "the firmware printed no counts"; cat "$work/trace.qemu"; exit 1; }
cmp <(grep '^calls: ' "$work/baseline.qemu") <(echo "$line") ||
  { echo "the builds with and without tracing made different calls"; exit 1; }
read -r _ _ fib _ filter <<<"$line"
trace=$work/out/source-1.xray
"$flightrec" verify "$trace"
llvm-xray fdr-dump --verify "$trace" >/dev/null
llvm-xray convert --output-format=yaml "$trace" >"$trace.yaml"
kept=$(grep -c 'kind: function-' "$trace.yaml")
dropped=$(sed -n 's/^  source 1: .*target dropped \([0-9]*\) records.*/\1/p' "$work/recv.txt")
expected=$((2 * (fib + filter)))
echo "thread mode: $kept records kept + $dropped dropped, the firmware made $expected"
[[ $kept -eq $expected && $dropped -eq 0 ]] || { echo "the records do not add up"; exit 1; }
"$flightrec" names --elf "$work/trace.elf" -o "$work/names" --list | sort >"$work/names.txt"
cut -f2 "$work/names.txt" | grep -qx 'flightrec_firmware_guide::fib' || { echo "no name for fib"; cat "$work/names.txt"; exit 1; }

echo "firmware-guide: ok"
