#!/usr/bin/env bash
# XRay sleds (sleds/, crate flightrec-sleds): C programs built with clang-14
# -fxray-instrument -fnoxray-link-deps link its staticlib in place of compiler-rt's
# runtime and their traces pass llvm-xray (custom and typed events and logged
# arguments included); patching while threads run; programs
# without sleds or with an unknown sled version run untraced with one message;
# with the default buffers a program keeps at least the records compiler-rt's
# own runtime keeps (run in a mount namespace with a TSC frequency file where
# the machine has none: needs root, as CI runs).
# Where a nightly toolchain is present, the Rust recipe (-Zinstrument-xray=always)
# records every function of the example and llvm-xray names them.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
missing=()
command -v clang-14 >/dev/null 2>&1 || missing+=(clang-14)
ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.xray-x86_64.a >/dev/null 2>&1 ||
  missing+=(libclang-rt-14-dev)
command -v llvm-xray >/dev/null 2>&1 || missing+=(llvm)
command -v objcopy >/dev/null 2>&1 || missing+=(binutils)
if ((${#missing[@]})); then
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

echo "C programs on the flightrec-sleds staticlib, judged by llvm-xray"
CI=true cargo test -q -p flightrec-sleds --test c_runtime

echo "Rust on nightly with -Zinstrument-xray=always"
CI=true cargo test -q -p flightrec-sleds --test rust_nightly
