#!/usr/bin/env bash
# Output size and time of `flightrec convert` on a Trace2 event stream whose
# `data` values are numbers (each also a value on a counter track), beside the
# same stream with values that are not numbers (no counter track), converted in
# the same run (docs/performance.md, "Counter tracks").
#
#   bash benches/convert-trace2-counters.sh SIZE_MB
#
# Makes DIR/counters-SIZE.json and DIR/text-SIZE.json: region_enter, data,
# region_leave on the main thread of process 4242 (as benches/convert-timeline.sh
# writes them), about SIZE MB each; the data value is `N` in the first and `nN`
# in the second. Then converts each to Chrome JSON and to Perfetto (release
# build, /usr/bin/time -v) and prints the wall time, peak RSS and output size.
set -euo pipefail
size=${1:?SIZE_MB}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${BENCH_DIR:-${TMPDIR:-/tmp}/flightrec-convert-counters}
mkdir -p "$dir"
cargo build --release -q -p flightrec-cli --bin flightrec --manifest-path "$root/Cargo.toml"
bin=${CARGO_TARGET_DIR:-$root/target}/release
for kind in counters text; do
  t2=$dir/$kind-$size.json
  [ -f "$t2" ] || python3 - "$t2" "$size" "$kind" <<'PY'
import sys
path, size, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
target = size * (1 << 20)
prefix = "" if kind == "counters" else "n"
sid = "20260101T000000.000000Z-Hbench-P00001092"
with open(path, "w") as f:
    written, us, n = 0, 1000, 0
    while written < target:
        def line(ev, extra):
            s, u = divmod(us, 1_000_000)
            return ('{"event":"%s","sid":"%s","thread":"main","time":"1970-01-01T%02d:%02d:%02d.%06dZ",'
                    '"file":"bench.c","line":1,%s}\n' % (ev, sid, s // 3600, s // 60 % 60, s % 60, u, extra))
        out = line("region_enter", '"nesting":1,"category":"bench","label":"step","msg":"step %d"' % n)
        us += 7
        out += line("data", '"t_abs":%.6f,"t_rel":0.000007,"nesting":2,"category":"bench","key":"n","value":"%s%d"' % (us / 1e6, prefix, n))
        us += 5
        out += line("region_leave", '"t_rel":0.000012,"nesting":1,"category":"bench","label":"step"')
        us += 9
        f.write(out)
        written += len(out)
        n += 1
PY
done

run() {
  local label=$1 out=$2
  shift 2
  /usr/bin/time -v "$@" -q -o "$out" 2>"$dir/time.txt" || { echo "$label: failed"; tail -3 "$dir/time.txt"; return; }
  local wall rss
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/time.txt")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
  printf '%-40s %10s %6d MiB %14d bytes\n' "$label" "$wall" $((rss / 1024)) "$(stat -c %s "$out")"
  rm -f "$out"
}

for kind in text counters; do
  t2=$dir/$kind-$size.json
  echo "$kind-$size.json: $(stat -c %s "$t2") bytes, $(wc -l <"$t2") events"
  run "$kind: --format chrome" "$dir/out.json" "$bin/flightrec" convert "$t2" --format chrome
  run "$kind: --format perfetto" "$dir/out.pftrace" "$bin/flightrec" convert "$t2" --format perfetto
done
