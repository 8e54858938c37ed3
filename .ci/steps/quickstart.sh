#!/usr/bin/env bash
# The README's first command: the quickstart example traces itself through the
# environment; its Trace2 files must hold what the job did and its FDR trace must
# load in llvm-xray with the names file beside it.
set -euo pipefail

out=$(mktemp -d)
report=$(cargo run -q -p flightrec --example quickstart -- "$out")
echo "$report"

perf="$out/trace2-perf.txt"
event="$out/trace2-event.jsonl"
grep -q '| region_enter |' "$perf"
grep -q '| thread_exit  |' "$perf"
grep -q '"event":"atexit"' "$event"
normal=$(cargo run -q -p flightrec-cli --bin flightrec -- trace2 render --format normal "$event")
grep -q ' exit elapsed:.* code:0$' <<<"$normal"

trace=$(find "$out" -name 'xray-log.quickstart.*' ! -name '*.names' | head -n 1)
test -n "$trace"
llvm-xray fdr-dump --verify "$trace" >/dev/null
stacks=$(llvm-xray stack -m "$trace.names" "$trace")
grep -q 'quickstart::mix' <<<"$stacks"
cargo run -q -p flightrec-cli --bin flightrec -- verify "$trace"
# The timeline the report suggests: both files on one clock, the workers joined
# with their FDR threads (no warning about either input).
timeline=$(cargo run -q -p flightrec-cli --bin flightrec -- convert "$trace" "$event" --format perfetto -o "$out/timeline.pftrace" 2>&1)
echo "$timeline"
grep -q 'converted 2 inputs' <<<"$timeline"
if grep -q 'warning' <<<"$timeline"; then echo "unexpected warning"; exit 1; fi
test -s "$out/timeline.pftrace"
echo "quickstart traces verified"
