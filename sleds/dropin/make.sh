#!/usr/bin/env bash
# Makes the drop-in XRay runtime for C and C++ programs: one relocatable object
# named libflightrec_sleds.a, which a linker always links whole (an archive's
# members are linked only when the program names one of their symbols, and an
# instrumented program names none), so that
#
#   clang -fxray-instrument -fnoxray-link-deps prog.c libflightrec_sleds.a
#
# (or `-L DIR -lflightrec_sleds` from a build system that only adds a library)
# traces with no other flag. From cargo's staticlib it keeps what the runtime
# reaches from its C API (`ld -r --gc-sections`), without debug info, and
# hides every symbol but the C API's `__xray_*` ones, so that a program that
# links another Rust staticlib has no duplicate symbols.
#
# Usage: make.sh [--debug] [OUT_DIR]   (default: TARGET_DIR/release/dropin, or
# TARGET_DIR/debug/dropin with --debug, an unoptimised runtime)
# Environment: CARGO (default cargo), CARGO_TARGET_DIR, LD (default ld),
# OBJCOPY (default objcopy).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
profile=release
if [[ ${1:-} == --debug ]]; then
  profile=debug
  shift
fi
cargo=${CARGO:-cargo}
ld=${LD:-ld}
objcopy=${OBJCOPY:-objcopy}

target_dir=$("$cargo" metadata --format-version 1 --no-deps --manifest-path "$root/Cargo.toml" |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
out=${1:-$target_dir/$profile/dropin}
flags=()
[[ $profile == release ]] && flags+=(--release)
"$cargo" build -q "${flags[@]}" --lib -p flightrec-sleds --manifest-path "$root/Cargo.toml"
archive=$target_dir/$profile/libflightrec_sleds.a

mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -g --defined-only "$archive" 2>/dev/null | awk '$3 ~ /^__xray_/ { print $3 }' | sort -u >"$tmp/api"
test -s "$tmp/api" || { echo "make.sh: no __xray_ symbols in $archive" >&2; exit 1; }
roots=()
while read -r sym; do roots+=(-u "$sym"); done <"$tmp/api"
"$ld" -r --gc-sections --strip-debug "${roots[@]}" -o "$tmp/runtime.o" "$archive"
# Renamed into place: a link running meanwhile reads the old file or the new.
"$objcopy" --keep-global-symbols="$tmp/api" "$tmp/runtime.o" "$out/.libflightrec_sleds.a.$$"
mv -f "$out/.libflightrec_sleds.a.$$" "$out/libflightrec_sleds.a"
echo "$out/libflightrec_sleds.a"
