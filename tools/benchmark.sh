#!/usr/bin/env bash
# One command on a fresh Debian machine: installs the dependencies, fetches the
# default model and builds into ./build (tools/setup.sh), installs the peers
# from PyPI (faster-whisper, pywhispercpp), then runs tools/benchmark.py with
# the arguments given here, e.g.
#
#   bash tools/benchmark.sh --quick                 # smoke test: jfk.wav, 1 run
#   bash tools/benchmark.sh --markdown bench.md     # full: jfk.wav + >= 10 min, 5 runs
#
# BENCH_SKIP_SETUP=1 skips tools/setup.sh (for a tree already built, or one
# built elsewhere: pass --build-dir DIR).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${BENCH_SKIP_SETUP:-0}" != 1 ]; then
  bash tools/setup.sh
fi

# The peers, pinned: faster-whisper 1.2.1 (CTranslate2, the project's
# reference implementation) and pywhispercpp 1.5.1 (whisper.cpp 1.8.5, CPU
# build: a manylinux wheel with AVX2/FMA/F16C kernels, OpenMP threads).
PIP_FLAGS=(--quiet --disable-pip-version-check)
if python3 -m pip install --help 2>/dev/null | grep -q -- --break-system-packages; then
  if python3 -c 'import sys; sys.exit(0 if sys.prefix == sys.base_prefix and sys.prefix.startswith("/usr") else 1)'; then
    PIP_FLAGS+=(--break-system-packages)
  fi
fi
python3 -m pip install "${PIP_FLAGS[@]}" "faster-whisper==1.2.1" "pywhispercpp==1.5.1"

exec python3 tools/benchmark.py "$@"
