#!/usr/bin/env bash
# embassy's tasks on a timeline: builds the embassy application of
# examples/embassy-qemu (flightrec-embassy on embassy-executor 0.10's `trace`
# hooks), runs it under QEMU (lm3s6965evb) with its UART piped into `flightrec
# recv`, and judges the trace: `flightrec verify` and `llvm-xray fdr-dump
# --verify`/`account` on every file; `flightrec tasks` must give each task's
# spawns, ends and polls exactly as the application counted them (and one
# wake-up per poll), name every task and both executors from the ELF, and flag
# the task that blocks its executor (and no other); the instrumented call inside
# the consumer's polls is counted by llvm-xray. Then the backend's flash
# (llvm-size: the application with FDR + the link, and with the backend too;
# goal <= 2 KiB) and the backend's host test (embassy on platform-std).
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
for t in thumbv6m-none-eabi thumbv7m-none-eabi; do
  rustup target list --installed | grep -qx "$t" || rustup target add "$t"
done

app=examples/embassy-qemu
elf=$app/target/thumbv7m-none-eabi/release/flightrec-embassy-qemu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "--- the backend on a host executor (embassy's platform-std); built for thumbv6m (no compare-and-swap)"
cargo test -q -p flightrec-embassy
cargo build -q -p flightrec-embassy --target thumbv6m-none-eabi

echo "--- build the application (untraced, FDR + link, and with the embassy backend)"
(
  cd "$app"
  cargo build -q --release --no-default-features
  cp target/thumbv7m-none-eabi/release/flightrec-embassy-qemu "$work/baseline.elf"
  cargo build -q --release --no-default-features --features link
  cp target/thumbv7m-none-eabi/release/flightrec-embassy-qemu "$work/link.elf"
  cargo build -q --release
)
cargo build -q -p flightrec-cli --bin flightrec
flightrec=target/debug/flightrec

echo "--- run it under QEMU, the UART piped into flightrec recv"
set +e
timeout 300 qemu-system-arm -cpu cortex-m3 -machine lm3s6965evb -display none -monitor none \
  -serial stdio -semihosting-config enable=on,target=native -icount shift=4 -kernel "$elf" \
  2>"$work/qemu.err" | "$flightrec" recv - -q -o "$work/out" --elf "$elf" 2>"$work/recv.txt"
status=("${PIPESTATUS[@]}")
set -e
cat "$work/recv.txt"
# The poll and pass ids are the ELF's tasks and executors, not another build's.
if grep 'another build' "$work/recv.txt"; then
  echo "recv --elf takes the executor's ids for a mismatch"
  exit 1
fi
if [[ ${status[0]} -ne 0 ]]; then
  echo "QEMU or the application failed (status ${status[0]})"
  cat "$work/qemu.err"
  exit 1
fi
if [[ ${status[1]} -ne 0 ]]; then
  echo "flightrec recv reported damage or failed (status ${status[1]})"
  exit 1
fi
# recv reports what the target dropped per source: nothing may be lost.
if grep -E 'dropped [1-9]|overwrote [1-9]|failed to send [1-9]' "$work/recv.txt"; then
  echo "the target lost records"
  exit 1
fi
grep '^task ' "$work/qemu.err" >"$work/own.txt"
echo "the application's own counts:"
cat "$work/own.txt"
[[ $(wc -l <"$work/own.txt") -eq 6 ]] || { echo "expected 6 tasks' counts"; cat "$work/qemu.err"; exit 1; }

echo "--- judge the files"
files=("$work"/out/source-*.xray)
[[ ${#files[@]} -eq 3 ]] || { echo "expected 3 sources (thread mode, interrupt executor, SysTick): ${files[*]}"; exit 1; }
"$flightrec" verify "${files[@]}"
for f in "${files[@]}"; do
  llvm-xray fdr-dump --verify "$f" >/dev/null
  # Every poll and pass is a balanced pair: account takes the file as it is.
  llvm-xray account -format=csv "$f" >/dev/null
done
# The instrumented call inside the consumer's polls, by name (recv --elf).
crunch=$(llvm-xray account -m "$work/out/source-1.xray.names" -format=csv "$work/out/source-1.xray" |
  awk -F, '$10 ~ /::crunch"?$/ { print $2 }')
[[ $crunch -eq 64 ]] || { echo "crunch: $crunch calls, expected 64"; exit 1; }

echo "--- flightrec tasks"
"$flightrec" tasks --elf "$elf" "$work/out" | tee "$work/tasks.txt"
"$flightrec" tasks --csv --elf "$elf" "$work/out" >"$work/tasks.csv"
# The same summary from the files named one by one.
"$flightrec" tasks --csv --elf "$elf" "${files[@]}" | cmp - "$work/tasks.csv"
crate=flightrec_embassy_qemu
# task NAME polls=P spawns=S ends=E, as the application counts, against the
# summary's rows (task,executor,spawns,ends,polls,wakes,...,blocking,idle).
while read -r _ name polls spawns ends; do
  row=$(grep "^$crate::$name," "$work/tasks.csv") || { echo "no row for $crate::$name"; exit 1; }
  IFS=, read -r _ executor t_spawns t_ends t_polls t_wakes _ <<<"$row"
  [[ "polls=$t_polls spawns=$t_spawns ends=$t_ends" == "$polls $spawns $ends" ]] ||
    { echo "$name: the trace has polls=$t_polls spawns=$t_spawns ends=$t_ends, the application $polls $spawns $ends"; exit 1; }
  [[ "polls=$t_wakes" == "$polls" ]] || { echo "$name: $t_wakes wake-ups for $polls"; exit 1; }
  want=$crate::EXECUTOR
  [[ $name == fast ]] && want=$crate::EXECUTOR_FAST
  [[ $executor == "$want" ]] || { echo "$name: executor $executor, expected $want"; exit 1; }
done <"$work/own.txt"
[[ $(tail -n +2 "$work/tasks.csv" | wc -l) -eq 6 ]] || { echo "expected 6 tasks in the summary"; exit 1; }
# The task that blocks its executor (3 ms polls) is flagged, and no other.
blocking=$(awk -F, 'NR > 1 && $12 == 1 { print $1 }' "$work/tasks.csv")
[[ $blocking == "$crate::hog" ]] || { echo "flagged as blocking: '$blocking', expected $crate::hog"; exit 1; }
grep -q "^blocking: $crate::hog held its executor for" "$work/tasks.txt"
grep -qE "^executor $crate::EXECUTOR: [0-9]+ passes, busy [0-9]+ us, idle [0-9.]+ %$" "$work/tasks.txt"
grep -qE "^executor $crate::EXECUTOR_FAST: 101 passes" "$work/tasks.txt"

echo "--- the timeline through the existing converters, named by flightrec tasks --names-out"
"$flightrec" tasks --elf "$elf" --names-out "$work/tasks.names" "$work/out" >/dev/null
"$flightrec" convert --format chrome -q --names "$work/tasks.names" "$work/out" -o "$work/timeline.json"
"$flightrec" convert --format perfetto -q --names "$work/tasks.names" "$work/out" -o "$work/timeline.perfetto"
[[ -s $work/timeline.perfetto ]] || { echo "no Perfetto output"; exit 1; }
# One slice per poll, named by its task, as many as the application counted.
while read -r _ name polls _; do
  slices=$(grep -o "\"name\":\"$crate::$name\"" "$work/timeline.json" | wc -l)
  [[ "polls=$slices" == "$polls" ]] || { echo "$name: $slices slices in the timeline, the application $polls"; exit 1; }
done <"$work/own.txt"
slices=$(grep -o "\"name\":\"$crate::crunch\"" "$work/timeline.json" | wc -l)
[[ $slices -eq 64 ]] || { echo "crunch: $slices slices, expected 64"; exit 1; }

echo "--- the task timeline in Perfetto, judged by Perfetto's own schema"
# The venv of perfetto.sh (PyPI perfetto + protobuf).
command -v python3 >/dev/null 2>&1 && python3 -c 'import venv, ensurepip' 2>/dev/null || {
  apt-get update -qq
  apt-get install -y -qq python3 python3-venv >/dev/null
}
venv="${CARGO_TARGET_DIR:-$PWD/target}/perfetto-venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2' 2>/dev/null ||
  "$venv/bin/pip" install -q perfetto==0.59.1 protobuf==7.36.2
# Named from the ELF alone: the tasks by their pools (the executors keep
# their ids), then with the names of flightrec tasks --names-out (both).
for names in "--elf=$elf" "--names=$work/tasks.names"; do
  "$flightrec" convert --format perfetto -q "$names" "$work/out" -o "$work/tasks.perfetto"
  "$venv/bin/python" cli/tests/support/perfetto_check.py "$work/tasks.perfetto" >"$work/tasks.check.json"
  named_executors=0
  [[ $names == --names=* ]] && named_executors=1
  "$venv/bin/python" - "$work/tasks.check.json" "$work/own.txt" "$crate" "$named_executors" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
crate, named_executors = sys.argv[3], sys.argv[4] == "1"
tracks = {t["name"]: t for t in report["tracks"]}
def fail(msg):
    sys.exit(f"perfetto task timeline: {msg}; tracks: {sorted(tracks)}")
for line in open(sys.argv[2]):
    _, name, polls, spawns, ends = line.split()
    polls, spawns, ends = (int(x.split("=")[1]) for x in (polls, spawns, ends))
    task = f"{crate}::{name}"
    t = tracks.get(f"task {task}") or fail(f"no track for {task}")
    # One slice per poll, named by the task; every poll was woken first, so
    # each carries its wake-to-poll time.
    if t["counts"].get(task) != polls:
        fail(f"{task}: {t['counts'].get(task)} poll slices, the application {polls}")
    if t["args"].get("wake_to_poll_ns") != polls:
        fail(f"{task}: {t['args'].get('wake_to_poll_ns')} polls with wake_to_poll_ns of {polls}")
# The instrumented call nests under the consumer's polls, on its track.
if tracks[f"task {crate}::consumer"]["counts"].get(f"{crate}::crunch") != 64:
    fail("crunch is not 64 times on the consumer's track")
executors = [t for t in report["tracks"] if t["name"].startswith("executor ")]
if len(executors) != 2 or any(not t["slices"] for t in executors):
    fail("expected two executor tracks with their passes")
if named_executors:
    want = {f"executor {crate}::EXECUTOR", f"executor {crate}::EXECUTOR_FAST"}
    if {t["name"] for t in executors} != want:
        fail(f"executor tracks {[t['name'] for t in executors]}, expected {sorted(want)}")
# CPU load per executor: a counter under each executor's track, 0 to 100 %.
uuids = {t["uuid"] for t in executors}
loads = [t for t in report["tracks"] if t["name"] == "load %" and t["parent"] in uuids]
if len(loads) != 2 or any(not t["values"] for t in loads):
    fail("expected a load % counter with values for each executor")
if not all(0 <= v <= 100 for t in loads for _, v, _ in t["values"]):
    fail("a load value outside 0..100 %")
print(f"perfetto: {len([n for n in tracks if n.startswith('task ')])} task tracks, "
      f"{len(executors)} executors, {sum(len(t['values']) for t in loads)} load values")
PY
done

echo "--- the firmware guide's snippet is the example's code"
awk '/^## embassy/ { on = 1 } on && /```rust,ignore/ { grab = 1; next } grab && /```/ { exit } grab' \
  docs/firmware-guide.md | sed 's/^ *//' >"$work/snippet.txt"
[[ -s $work/snippet.txt ]] || { echo "no snippet found in the guide's embassy section"; exit 1; }
while read -r line; do
  grep -qF -- "$line" "$app/src/trace.rs" || { echo "the guide's line is not in $app/src/trace.rs: $line"; exit 1; }
done <"$work/snippet.txt"

echo "--- what the backend adds to the application (llvm-size, release build)"
llvm-size "$work/baseline.elf" "$work/link.elf" "$elf"
sizes() { llvm-size "$1" | tail -n 1 | awk '{ print $1 + $2, $2 + $3 }'; }
read -r b_flash b_ram < <(sizes "$work/baseline.elf")
read -r l_flash l_ram < <(sizes "$work/link.elf")
read -r t_flash t_ram < <(sizes "$elf")
echo "FDR rings + link (3 contexts): flash +$((l_flash - b_flash)) bytes, RAM +$((l_ram - b_ram)) bytes"
backend=$((t_flash - l_flash))
echo "the embassy backend over FDR + link: flash +$backend bytes (goal <= 2048), RAM +$((t_ram - l_ram)) bytes"
[[ $backend -le 2048 ]] || { echo "the backend costs $backend bytes of flash, over 2 KiB"; exit 1; }

echo "embassy: ok"
