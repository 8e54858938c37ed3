#!/usr/bin/env bash
# test-tool: git's Trace2 test helper (`test-tool trace2 ...`) rebuilt on flightrec's
# runtime, run the way git's t0211 runs it, with the real git as the judge of the
# session id and hierarchy it hands to an exec'd git. Then the test targets that
# replay git's t0210/t0211/t0212 scenarios and the runtime scenarios.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v git >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq git >/dev/null
fi

cargo build -q -p flightrec --example test-tool
tool="${CARGO_TARGET_DIR:-$PWD/target}/debug/examples/test-tool"
bin=$(mktemp -d)
work=$(mktemp -d)
trap 'rm -rf "$bin" "$work"' EXIT
ln -s "$tool" "$bin/test-tool"

(
  cd "$work"
  for v in $(env | sed -n 's/^\(GIT_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done
  PATH="$bin:$PATH" GIT_TRACE2_PERF="$work/trace.perf" GIT_TRACE2_PERF_BRIEF=1 \
    test-tool trace2 004child test-tool trace2 005exec version >/dev/null
)
# Columns: depth | thread | event | ... ; the exec'd git is depth 2 under two test-tools.
depths=$(awk -F' [|] ' '$3 ~ /^(version|cmd_name) *$/ {print $1 ":" $NF}' "$work/trace.perf")
expected="d0:$(cargo pkgid -p flightrec | sed 's/.*[#@]//')
d0:trace2 (trace2)
d1:$(cargo pkgid -p flightrec | sed 's/.*[#@]//')
d1:trace2 (trace2/trace2)
d2:$(git version | sed 's/^git version //')
d2:version (trace2/trace2/version)"
if [ "$depths" != "$expected" ]; then
  echo "unexpected trace:"; cat "$work/trace.perf"
  echo "got:"; echo "$depths"; echo "expected:"; echo "$expected"
  exit 1
fi
echo "test-tool: nested child and exec'd git traced at depths 0, 1, 2"

CI=true cargo test -q -p flightrec --test test_tool --test trace2_runtime
