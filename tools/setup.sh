#!/usr/bin/env bash
# Shared by demo.sh and run-tests.sh: installs the dependencies, fetches the
# default model and builds the project into ./build. Safe to run twice.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/install-deps.sh
bash tools/fetch-model.sh
# the multilingual base model: memory bounds, and the languages' tests
bash tools/fetch-model.sh base
if [ ! -f build/build.ninja ]; then
  meson setup build -Dsanitize-tests=true
fi
ninja -C build
