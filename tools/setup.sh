#!/usr/bin/env bash
# Shared by demo.sh and run-tests.sh: installs the dependencies, fetches the
# models (tiny.en, base, the Silero VAD) and builds the project into ./build.
# Safe to run twice.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/install-deps.sh
bash tools/fetch-model.sh
# the multilingual base model: memory bounds, and the languages' tests
bash tools/fetch-model.sh base
# the voice activity detector (Silero VAD v6, converted from faster-whisper's file)
bash tools/fetch-model.sh silero-vad
if [ ! -f build/build.ninja ]; then
  meson setup build -Dsanitize-tests=true
fi
ninja -C build
