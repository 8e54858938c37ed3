#!/usr/bin/env bash
# `flightrec convert --format perfetto` judged by Perfetto's own schema: a venv
# with the `perfetto` and `protobuf` packages from PyPI, then the test that parses
# every converted vector with perfetto_trace_pb2 and checks tracks, interned
# names and slice balance (cli/tests/tool_convert_scale.rs). Under CI=true that
# test fails instead of skipping when the venv is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."

command -v python3 >/dev/null 2>&1 && python3 -c 'import venv, ensurepip' 2>/dev/null || {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >/dev/null
}
venv="${CARGO_TARGET_DIR:-$PWD/target}/perfetto-venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2' 2>/dev/null ||
  "$venv/bin/pip" install -q perfetto==0.59.1 protobuf==7.36.2
export FLIGHTREC_PERFETTO_PYTHON="$venv/bin/python"
CI=true cargo test -q -p flightrec-cli --test tool_convert_scale -- perfetto_output_passes_perfettos_own_schema
