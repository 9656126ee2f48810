#!/usr/bin/env bash
# The test suite: sets everything up (dependencies, build, default model),
# then runs every test. GPU tests skip (exit code 77) without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
meson test -C build --print-errorlogs --num-processes 1 "$@"
