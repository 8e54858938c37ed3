#!/usr/bin/env bash
# Side-by-side comparison and instruction counts (benches/compare, benches/instructions):
# the compiler-rt loop builds and its trace passes llvm-xray, every subject of the
# comparison runs and checks that it recorded (a very short run: the figures are
# not used), and no hot path needs more instructions than its baseline allows.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
missing=()
command -v clang-14 >/dev/null 2>&1 || missing+=(clang-14)
ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.xray-x86_64.a >/dev/null 2>&1 ||
  missing+=(libclang-rt-14-dev)
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
command -v llvm-xray >/dev/null 2>&1 || missing+=(llvm)
if ((${#missing[@]})); then
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

echo "compiler-rt loop: build, run in FDR mode, judge the trace with llvm-xray"
CI=true cargo test -q -p flightrec-benches --test compiler_rt

echo "side-by-side comparison: one short round of every subject"
CI=true cargo bench -q -p flightrec-benches --bench compare -- --rounds 1 --batches 1 --calls 20000

echo "instruction counts against benches/instructions/baseline.txt"
CI=true cargo bench -q -p flightrec-benches --bench instructions
