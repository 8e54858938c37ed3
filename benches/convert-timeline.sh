#!/usr/bin/env bash
# Wall time and peak RSS of `flightrec convert` merging several inputs into one
# timeline (docs/performance.md, "One timeline from several inputs"), beside the
# single-input conversion of one of them, measured in the same run.
#
#   bash benches/convert-timeline.sh SIZE_MB
#
# Makes DIR/trace-SIZE.xray with the gen-trace binary (flightrec-core's writer,
# 4 threads of process 4242), two `recv` directories holding a copy of it as a
# device's source (so each is a device of its own on the timeline), and a Trace2
# event stream of process 4242 (regions and data over the same span of time,
# about SIZE/4 MB). Then times, with /usr/bin/time -v, output to /dev/null:
# the single file alone, and all four inputs together, as Chrome and Perfetto.
set -euo pipefail
size=${1:?SIZE_MB}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${BENCH_DIR:-${TMPDIR:-/tmp}/flightrec-convert-timeline}
mkdir -p "$dir/dev-a" "$dir/dev-b"
cargo build --release -q -p flightrec-cli --bin flightrec --manifest-path "$root/Cargo.toml"
cargo build --release -q -p flightrec-benches --bin gen-trace --manifest-path "$root/Cargo.toml"
bin=${CARGO_TARGET_DIR:-$root/target}/release
trace=$dir/trace-$size.xray
[ -f "$trace" ] || "$bin/gen-trace" "$trace" "$size" 4
cp "$trace" "$dir/dev-a/source-1.xray"
cp "$trace" "$dir/dev-b/source-7.xray"
t2=$dir/trace2-$size.json
[ -f "$t2" ] || python3 - "$t2" "$size" <<'PY'
import sys
path, size = sys.argv[1], int(sys.argv[2])
target = size * (1 << 20) // 4
sid = "20260101T000000.000000Z-Hbench-P00001092"
with open(path, "w") as f:
    written, us, n = 0, 1000, 0
    while written < target:
        def line(ev, extra):
            s, u = divmod(us, 1_000_000)
            return ('{"event":"%s","sid":"%s","thread":"main","time":"1970-01-01T00:%02d:%02d.%06dZ",'
                    '"file":"bench.c","line":1,%s}\n' % (ev, sid, s // 60, s % 60, u, extra))
        out = line("region_enter", '"nesting":1,"category":"bench","label":"step","msg":"step %d"' % n)
        us += 7
        out += line("data", '"t_abs":%.6f,"t_rel":0.000007,"nesting":2,"category":"bench","key":"n","value":"%d"' % (us / 1e6, n))
        us += 5
        out += line("region_leave", '"t_rel":0.000012,"nesting":1,"category":"bench","label":"step"')
        us += 9
        f.write(out)
        written += len(out)
        n += 1
PY
echo "inputs: $(stat -c %s "$trace") bytes x3, trace2 $(stat -c %s "$t2") bytes"

run() {
  local label=$1
  shift
  /usr/bin/time -v "$@" >/dev/null 2>"$dir/time.txt" || { echo "$label: failed"; tail -3 "$dir/time.txt"; return; }
  local wall rss
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/time.txt")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
  printf '%-52s %10s %8d MiB\n' "$label" "$wall" $((rss / 1024))
}

all=("$trace" "$dir/dev-a" "$dir/dev-b" "$t2")
run "one file, chrome" "$bin/flightrec" convert -q --no-names --format chrome "$trace"
run "one file, perfetto" "$bin/flightrec" convert -q --no-names --format perfetto "$trace"
run "3 FDR sources + trace2, chrome" "$bin/flightrec" convert -q --no-names --format chrome "${all[@]}"
run "3 FDR sources + trace2, perfetto" "$bin/flightrec" convert -q --no-names --format perfetto "${all[@]}"
"$bin/flightrec" convert --no-names --format perfetto -o "$dir/out.pftrace" "${all[@]}" 2>&1 | tail -n 1
echo "merged perfetto: $(stat -c %s "$dir/out.pftrace") bytes"
rm -f "$dir/out.pftrace"
