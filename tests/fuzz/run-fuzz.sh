#!/usr/bin/env bash
# The element fuzzer on demand, for longer than the suite's 300 cases:
#   tests/fuzz/run-fuzz.sh [--iterations N | --seconds S] [--seed S] [--case K] [-v]
# (every option of element-fuzz.c; without one: 1000 cases). Builds it in
# $BUILD_DIR (default build/) with -Dsanitize-tests=true, which compiles the
# element and the engine with -fsanitize=address,undefined into the fuzzer,
# and runs it at the lowest priority. A failure prints the case's actions
# and the command that replays it.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}

if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dsanitize-tests=true
elif ! meson introspect "$build" --buildoptions \
    | python3 -c 'import json,sys; sys.exit(0 if any(o["name"] == "sanitize-tests" and o["value"] for o in json.load(sys.stdin)) else 1)'; then
  meson configure "$build" -Dsanitize-tests=true
fi
nice -n 19 ninja -C "$build" tests/fuzz/element-fuzz

[ $# -gt 0 ] || set -- --iterations 1000
export WHISPER_BUILD_ROOT="$PWD/$build"
export GST_PLUGIN_SYSTEM_PATH_1_0= GST_PLUGIN_PATH_1_0=
export GST_REGISTRY="$PWD/$build/tests/fuzz/element-fuzz.registry"
export OPENBLAS_NUM_THREADS=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:print_summary=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0}
exec nice -n 19 "$build/tests/fuzz/element-fuzz" "$@"
