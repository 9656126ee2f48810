#!/usr/bin/env bash
# run-checks.sh: everything the GPU machine should check, in one command, in
# well under 8 minutes: build with CUDA (meson setup -Dcuda=enabled), run
# the GPU test suite, run the benchmark (tests/gpu/bench-gpu.c), print one
# summary. Meant for a bare machine with an NVIDIA GPU, the CUDA toolkit and
# this checkout; whatever else it needs comes from .devcarry/ (filled here
# beforehand by tests/gpu/prepare-carry.sh; see tests/gpu/README.md).
#
#   tests/gpu/run-checks.sh [--force-sysroot]
#
# Environment: OUT (where logs go; default /tmp/gst-whisper-checks),
# WHISPER_CARRY (default <checkout>/.devcarry).
# Exports WHISPER_REQUIRE_CUDA=1: on this machine no GPU test may skip (a
# skip, for want of a driver or a device, is a failure naming the reason;
# tests/gpu/gpu-probe.h), so a broken CUDA setup can never report green.
# --force-sysroot builds against the carried packages even where the
# machine has its own (to test the carry on a machine that has them).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
carry="${WHISPER_CARRY:-$root/.devcarry}"
out="${OUT:-/tmp/gst-whisper-checks}"
build="$root/build-gpu"
force_sysroot=0
[ "${1:-}" = "--force-sysroot" ] && force_sysroot=1
mkdir -p "$out"
t0=$(date +%s)
deadline=$((t0 + 450)) # everything inside 7.5 minutes, whatever hangs
# seconds for a phase: at most $1, and never past the deadline
budget() { local left=$((deadline - $(date +%s))); [ "$left" -lt "$1" ] && echo $((left > 5 ? left : 5)) || echo "$1"; }
log() { echo "[run-checks +$(($(date +%s) - t0))s] $*"; }
fail() { log "FAILED: $*"; echo "FAILED: $*" >>"$out/summary.txt"; exit 1; }
: >"$out/summary.txt"

# ---- the machine -----------------------------------------------------------
export PATH="$PATH:/usr/local/cuda/bin"
log "machine: $(uname -m), $(nproc) cores; $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}")"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/  gpu: /'
command -v nvcc >/dev/null || fail "nvcc not found (PATH, /usr/local/cuda/bin)"
log "nvcc: $(nvcc --version | tail -1)"

# ---- build dependencies: the machine's, else the carried sysroot -----------
deps="glib-2.0 gio-2.0 gmodule-2.0 json-glib-1.0 fftw3f sndfile samplerate openblas \
gstreamer-1.0 gstreamer-base-1.0 gstreamer-audio-1.0 gstreamer-app-1.0"
runtime_ld=""
if [ $force_sysroot = 0 ] && command -v pkg-config >/dev/null && pkg-config --exists $deps 2>/dev/null; then
  log "build dependencies: the machine's own"
else
  [ -f "$carry/sysroot.tar.xz" ] || fail "build dependencies missing and no $carry/sysroot.tar.xz (run tests/gpu/prepare-carry.sh here first)"
  wsys=/tmp/gst-whisper-sysroot
  rm -rf "$wsys" && mkdir -p "$wsys"
  tar -xJf "$carry/sysroot.tar.xz" -C "$wsys" 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$carry/sysroot.tar.xz" "$wsys" || fail "cannot unpack the sysroot"
  # .pc files: /usr -> the sysroot
  find "$wsys" -name '*.pc' -exec sed -i -E \
    -e "s#^([A-Za-z_]+)=/usr#\\1=$wsys/usr#" -e "s#(-[IL])/usr/#\\1$wsys/usr/#g" {} +
  libs="$wsys/usr/lib/x86_64-linux-gnu:$wsys/lib/x86_64-linux-gnu"
  mkdir -p "$wsys/bin"
  if ! command -v pkg-config >/dev/null || [ $force_sysroot = 1 ]; then
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libs" "$wsys/usr/bin/pkgconf" >"$wsys/bin/pkg-config"
    chmod +x "$wsys/bin/pkg-config"
    export PATH="$wsys/bin:$PATH"
  fi
  export PKG_CONFIG_PATH="$wsys/usr/lib/x86_64-linux-gnu/pkgconfig:$wsys/usr/share/pkgconfig"
  [ $force_sysroot = 1 ] && export PKG_CONFIG_LIBDIR="$PKG_CONFIG_PATH"
  export LDFLAGS="${LDFLAGS:-} -Wl,-rpath-link,$libs"
  # At run time, only the libraries this machine lacks (so that no system
  # program picks up Debian's copies of libraries it already has).
  mkdir -p "$wsys/runtime"
  for f in "$wsys"/usr/lib/x86_64-linux-gnu/lib*.so.* "$wsys"/lib/x86_64-linux-gnu/lib*.so.*; do
    name=$(basename "$f")
    if [ $force_sysroot = 1 ] || ! ldconfig -p | grep -q "^[[:space:]]*$name "; then
      ln -sf "$f" "$wsys/runtime/$name"
    fi
  done
  runtime_ld="$wsys/runtime"
  pkg-config --exists $deps || fail "the carried sysroot does not provide: $(for d in $deps; do pkg-config --exists $d || printf '%s ' $d; done)"
  log "build dependencies: carried sysroot ($(ls "$wsys/runtime" | wc -l) libraries the machine lacks)"
fi

# meson and ninja: the machine's (PATH or Python modules), else carried
if command -v meson >/dev/null; then
  MESON=(meson)
elif python3 -c 'import mesonbuild' 2>/dev/null; then
  MESON=(python3 -m mesonbuild.mesonmain)
elif [ -n "${wsys:-}" ] && [ -f "$wsys/usr/bin/meson" ]; then
  MESON=(env "PYTHONPATH=$wsys/usr/lib/python3/dist-packages" python3 "$wsys/usr/bin/meson")
else
  fail "meson not found"
fi
if ! command -v ninja >/dev/null; then
  nbin=$(python3 -c 'import ninja, os; print(ninja.BIN_DIR)' 2>/dev/null)
  if [ -n "$nbin" ] && [ -x "$nbin/ninja" ]; then
    export PATH="$PATH:$nbin"
  elif [ -n "${wsys:-}" ] && [ -x "$wsys/usr/bin/ninja" ]; then
    export PATH="$PATH:$wsys/usr/bin"
  else
    fail "ninja not found"
  fi
fi
log "meson $("${MESON[@]}" --version), ninja $(ninja --version)"

# ---- model and audio ---------------------------------------------------------
if [ -f "$carry/tiny.en/model.bin" ]; then
  export WHISPER_MODEL="$carry/tiny.en"
elif [ -f "$carry/tiny.en.pack" ]; then
  export WHISPER_MODEL=/tmp/gst-whisper-model/tiny.en
  if [ ! -f "$WHISPER_MODEL/model.bin" ]; then
    python3 "$root/tests/gpu/model-pack.py" unpack "$carry/tiny.en.pack" "$WHISPER_MODEL" ||
      fail "cannot unpack the model (python3 with numpy needed)"
  fi
fi
log "model: ${WHISPER_MODEL:-the default}"
audio="$carry/jfk.wav"
[ -f "$audio" ] || audio="$root/../shared/data/jfk.wav"
[ -f "$audio" ] || fail "no jfk.wav (in $carry or ../shared/data)"
export WHISPER_GPU_SHARED_DATA=$(dirname "$audio")

# ---- build ---------------------------------------------------------------------
log "configuring"
"${MESON[@]}" setup "$build" --wipe -Dcuda=enabled -Dtests=enabled >"$out/build.log" 2>&1 ||
  "${MESON[@]}" setup "$build" -Dcuda=enabled -Dtests=enabled >>"$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log"; fail "meson setup (log: build.log)"; }
log "building"
gpu_targets="kernels/libwhisper-engine-cuda.so engine/libwhisper-engine.so engine/cli/whisper-transcribe \
tests/gpu/test-cuda-loader tests/gpu/test-cuda-ops tests/gpu/test-cuda-graph tests/gpu/test-cuda-threads \
tests/gpu/test-cuda-e2e \
tests/gpu/bench-gpu tests/gpu/libwhisper-emu-driver.so tests/gpu/libbroken-cuda-module-unloadable.so \
tests/gpu/libbroken-cuda-module-no-entry.so tests/gpu/libbroken-cuda-module-abi.so \
tests/gpu/libbroken-cuda-module-refuses.so"
if ! timeout "$(budget 240)" ninja -C "$build" >>"$out/build.log" 2>&1; then
  # something outside the GPU path may be broken: say so, build what the
  # GPU checks need, and go on
  log "WARNING: the full build failed (build.log):"
  grep -E "error:|FAILED:" "$out/build.log" | head -5 | sed 's/^/  /'
  echo "WARNING: full build failed" >>"$out/summary.txt"
  timeout "$(budget 200)" ninja -C "$build" $gpu_targets >>"$out/build.log" 2>&1 ||
    { grep -E "error|FAILED" -A5 "$out/build.log" | head -40; fail "build of the GPU targets (log: build.log)"; }
  ninja -C "$build" gst-plugin/libgstwhisper.so >>"$out/build.log" 2>&1 ||
    log "WARNING: the plugin did not build: test no-cuda-link will fail"
fi
log "built; CUDA module: $(ls "$build"/kernels/libwhisper-engine-cuda.so)"

# ---- tests ---------------------------------------------------------------------
# every GPU test must run here: a skip is a failure (gpu-test-common.h)
export WHISPER_REQUIRE_CUDA=1
run_env=(env)
[ -n "$runtime_ld" ] && run_env=(env "LD_LIBRARY_PATH=$runtime_ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
log "GPU test suite"
timeout "$(budget 240)" "${run_env[@]}" "${MESON[@]}" test -C "$build" --no-rebuild --suite gpu \
  --print-errorlogs --num-processes 2 >"$out/tests.log" 2>&1
test_rc=$?
cp -f "$build/meson-logs/testlog.txt" "$out/testlog.txt" 2>/dev/null
grep -E "^ *[0-9]+/[0-9]+ " "$out/tests.log" | sed 's/^/  /'

log "transcription on the GPU"
timeout "$(budget 60)" "${run_env[@]}" "$build/engine/cli/whisper-transcribe" -d cuda -f text "$audio" \
  >"$out/transcribe.txt" 2>&1
sed 's/^/  /' "$out/transcribe.txt" | tail -3

log "benchmark"
timeout "$(budget 150)" "${run_env[@]}" "$build/tests/gpu/bench-gpu" "$audio" 5 >"$out/bench.txt" 2>&1
bench_rc=$?

# ---- summary ---------------------------------------------------------------------
{
  echo "==== gst-whisper GPU checks ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)), $(($(date +%s) - t0)) s"
  echo "tests (meson test --suite gpu): exit $test_rc"
  grep -E "^ *[0-9]+/[0-9]+ " "$out/tests.log" | sed -E 's/^ *[0-9]+\/[0-9]+ +gst-whisper:gpu \/ //' |
    awk '{printf "  %-28s %s %s\n", $1, $2, $3}'
  grep -E "^(Ok|Fail|Skipped|Timeout|Expected Fail|Unexpected Pass):" "$out/tests.log" | tr '\n' ' '
  echo
  echo "benchmark (bench-gpu, exit $bench_rc):"
  sed 's/^/  /' "$out/bench.txt"
} | tee -a "$out/summary.txt"
[ $test_rc = 0 ] && [ $bench_rc = 0 ] && exit 0
exit 1
