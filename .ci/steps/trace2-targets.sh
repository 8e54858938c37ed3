#!/usr/bin/env bash
# Trace2 settings and destinations end to end: git and flightrec's test-tool
# example run side by side with the same settings and config files. Their
# warnings and config errors on stderr, and the files they leave in directory
# targets (maxFiles and the discard sentinel), must be the same.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
if ! command -v git >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq git >/dev/null
fi

cargo build -q -p flightrec --example test-tool
tool="$(pwd)/${CARGO_TARGET_DIR:-target}/debug/examples/test-tool"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home"

# traced <git|tool> [VAR=VALUE...]: one traced run in a clean environment;
# prints its warnings, errors and fatal messages (not trace lines on stderr).
traced() {
  local who=$1
  shift
  local cmd=(git version)
  [ "$who" = tool ] && cmd=("$tool" trace2 001return 0)
  (cd "$work" && env -i PATH="$PATH" HOME="$work/home" LC_ALL=C GIT_CONFIG_NOSYSTEM=1 "$@" \
    "${cmd[@]}" 2>&1 >/dev/null) | grep -E '^(warning|error|fatal): ' || true
}

same() {
  local what=$1 g=$2 t=$3
  if [ "$g" != "$t" ]; then
    printf 'MISMATCH %s\n--- git\n%s\n--- flightrec\n%s\n' "$what" "$g" "$t"
    exit 1
  fi
}

checked=0
for setting in \
  "GIT_TRACE2=relative.txt" "GIT_TRACE2=10" "GIT_TRACE2_PERF=yes" "GIT_TRACE2_EVENT=2x" \
  "GIT_TRACE2=TRUE" "GIT_TRACE2=false" \
  "GIT_TRACE2_PERF=af_unix:" "GIT_TRACE2_PERF=af_unix:stream:" "GIT_TRACE2_EVENT=af_unix:dgram:" \
  "GIT_TRACE2_EVENT=af_unix:relative/sock" "GIT_TRACE2_EVENT=af_unix:seqpacket:/x" \
  "GIT_TRACE2_EVENT=af_unix:/nonexistent-sock" "GIT_TRACE2_EVENT=af_unix:dgram:/nonexistent-sock" \
  "GIT_TRACE2=/nonexistent-dir/x.txt" "GIT_TRACE2_EVENT=af_unix:/$(printf 's%.0s' $(seq 107))"; do
  for debug in "" "GIT_TRACE2_DST_DEBUG=1" "GIT_TRACE2_DST_DEBUG=true"; do
    # shellcheck disable=SC2086
    same "$setting $debug" "$(traced git $setting $debug)" "$(traced tool $setting $debug)"
    checked=$((checked + 1))
  done
done
echo "target values: $checked settings give git's warnings"

# maxfiles <existing files> <max> <var>: three runs each, listings and warnings.
maxfiles() {
  local nr=$1 max=$2 var=$3 who out=""
  for who in git tool; do
    local d="$work/mdir-$who"
    rm -rf "$d" && mkdir "$d"
    for i in $(seq "$nr"); do : >"$d/f$i"; done
    local run
    for run in 1 2 3; do
      out+="$who run $run: $(traced "$who" GIT_TRACE2_DST_DEBUG=1 GIT_TRACE2_MAX_FILES="$max" "$var=$d" |
        sed "s#$d#DIR#")"$'\n'
      out+="$(ls "$d" | sed -E 's/^[0-9]{8}T[0-9]{6}\.[0-9]{6}Z-(H[0-9a-f]{8}|Localhost)-P[0-9a-f]{8}$/SID/')"$'\n'
    done
    printf -v "res_$who" '%s' "${out//$who run/run}"
    out=""
  done
  same "maxFiles $nr of $max on $var" "$res_git" "$res_tool"
}
maxfiles 3 5 GIT_TRACE2_EVENT
maxfiles 2 5 GIT_TRACE2_EVENT
maxfiles 3 5 GIT_TRACE2
maxfiles 3 5 GIT_TRACE2_PERF
maxfiles 3 -1 GIT_TRACE2_EVENT
echo "maxFiles: git's listings and warnings"

# Config files: where each writes, and git's fatal config errors.
for who in git tool; do
  printf '[trace2]\n\tnormalTarget = %s/xdg-%s.txt\n' "$work" "$who" >"$work/xdg.cfg"
  mkdir -p "$work/home/.config/git"
  cp "$work/xdg.cfg" "$work/home/.config/git/config"
  printf '[include]\n\tpath = inc.cfg\n' >"$work/home/.gitconfig"
  printf '[trace2]\n\tperfTarget = %s/inc-%s.txt\n' "$work" "$who" >"$work/home/inc.cfg"
  traced "$who" >/dev/null
  test -s "$work/xdg-$who.txt" && test -s "$work/inc-$who.txt" ||
    { echo "$who did not write its config targets"; exit 1; }
done
rm -f "$work/home/.config/git/config" "$work/home/inc.cfg"
for body in '[trace2]\n\teventTarget\n' '[include]\n\tpath\n' '[trace2]\n\tperfTarget = 1\n[x\n'; do
  printf "$body" >"$work/home/.gitconfig"
  same "config error in $body" "$(traced git)" "$(traced tool)"
done
echo "config files: same targets and the same fatal messages"
