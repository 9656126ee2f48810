#!/usr/bin/env bash
# check-cuda12.sh SOURCE_ROOT: the CUDA module builds with CUDA 12 as well as
# with the CUDA 13 toolkit of the main build, without a GPU.
#
# Against the CUDA 12.8 headers and libraries that tools/install-cuda12.sh
# installs from NVIDIA's PyPI wheels (WHISPER_CUDA12_ROOT, else
# ${XDG_DATA_HOME:-~/.local/share}/gst-whisper/cuda-12.8):
#   1. every host file (kernels/host/*.c and the util/ files the module
#      compiles in) compiled by the C compiler with -Werror;
#   2. every kernel file (kernels/*.cu) compiled by clang in CUDA mode
#      (the wheels have no nvcc driver): its host side, and its device side
#      to PTX for sm_80 and for sm_90 (the two header code paths the
#      architectures of the fatbin take), which CUDA 12.8's ptxas assembles
#      into SASS for sm_80, sm_86 and sm_89 (from the sm_80 PTX) and sm_90,
#      sm_100 and sm_120 (from the sm_90 PTX: clang-19 has no sm_100 or
#      sm_120 target);
#   3. the host objects linked with libcudart.so.12 and libcublas.so.12 into
#      a module with no undefined symbol (every CUDA call the module makes
#      exists in CUDA 12.8's libraries).
# A missing toolkit or compiler fails (exit 1) with what to install; it is
# never a skip.
set -euo pipefail

src="${1:?usage: check-cuda12.sh SOURCE_ROOT}"
root="${WHISPER_CUDA12_ROOT:-${XDG_DATA_HOME:-$HOME/.local/share}/gst-whisper/cuda-12.8}"
clang="${WHISPER_CUDA12_CLANG:-clang++-19}"
cc="${CC:-cc}"

fail() {
  echo "check-cuda12: FAILED: $*" >&2
  exit 1
}

[ -f "$root/.installed" ] ||
  fail "no CUDA 12 toolkit in $root (WHISPER_CUDA12_ROOT): run tools/install-deps.sh, which installs it with tools/install-cuda12.sh from PyPI"
command -v "$clang" > /dev/null ||
  fail "$clang not found (WHISPER_CUDA12_CLANG): run tools/install-deps.sh (Debian package clang-19)"
version=$(sed -n 's/^#define CUDART_VERSION  *\([0-9]*\).*/\1/p' "$root/include/cuda_runtime_api.h")
case "$version" in
  12*) ;;
  *) fail "$root/include/cuda_runtime_api.h has CUDART_VERSION '$version', not a CUDA 12 one" ;;
esac
version="$((version / 1000)).$((version % 1000 / 10))"
echo "CUDA $version toolkit in $root ($(cat "$root/.installed"))"
echo "ptxas: $("$root/bin/ptxas" --version | tail -1)"
echo "clang: $("$clang" --version | head -1)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
glib_cflags=$(pkg-config --cflags glib-2.0 gmodule-2.0)
glib_libs=$(pkg-config --libs glib-2.0 gmodule-2.0)
objects=()

# 1. host files
host_files=("$src"/kernels/host/*.c "$src"/engine/src/util/tensor.c "$src"/engine/src/util/half.c
            "$src"/engine/src/util/cpu-features.c "$src"/engine/src/util/qblock.c)
for f in "${host_files[@]}"; do
  o="$tmp/$(basename "$f").o"
  # shellcheck disable=SC2086
  "$cc" -std=c11 -O2 -fPIC -fvisibility=hidden -Wall -Wextra -Werror -D_GNU_SOURCE \
    -DG_LOG_USE_STRUCTURED=1 '-DG_LOG_DOMAIN="whisper-cuda"' \
    -I"$src/engine/src/backend" -I"$src/engine/src/util" -I"$src/engine/include/whisper" -I"$src/kernels" -I"$src/kernels/host" \
    -isystem "$root/include" $glib_cflags -c "$f" -o "$o" ||
    fail "$f does not compile against CUDA $version"
  objects+=("$o")
done
echo "host files: ${#host_files[@]} compiled"

# 2. kernel files, as many at once as there are cores
clang_cuda=("$clang" -x cuda --cuda-path="$root" -std=c++17 -O3 -I"$src/kernels"
            -Wno-unknown-cuda-version -Werror)
archs=(80 86 89 90 100 120)
kernel() {
  local f=$1 b
  b="$tmp/$(basename "$f" .cu)"
  "${clang_cuda[@]}" --cuda-host-only -fPIC -fvisibility=hidden -c "$f" -o "$b.host.o" ||
    { echo "$f (host side) does not compile against CUDA $version"; return 1; }
  for base in 80 90; do
    "${clang_cuda[@]}" --cuda-device-only --cuda-gpu-arch="sm_$base" -S "$f" -o "$b.sm_$base.ptx" ||
      { echo "$f does not compile for sm_$base against CUDA $version"; return 1; }
  done
  for a in "${archs[@]}"; do
    base=$((a < 90 ? 80 : 90))
    "$root/bin/ptxas" -O3 -arch="sm_$a" "$b.sm_$base.ptx" -o "$b.sm_$a.cubin" ||
      { echo "$f: CUDA $version's ptxas makes no sm_$a code of its sm_$base PTX"; return 1; }
    [ -s "$b.sm_$a.cubin" ] || { echo "$f: empty sm_$a code"; return 1; }
  done
  touch "$b.ok"
}
kernel_files=("$src"/kernels/*.cu)
max_jobs=$(nproc)
for f in "${kernel_files[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$max_jobs" ]; do
    wait -n || true
  done
  kernel "$f" > "$tmp/$(basename "$f" .cu).log" 2>&1 &
done
wait || true
for f in "${kernel_files[@]}"; do
  b="$tmp/$(basename "$f" .cu)"
  if [ ! -f "$b.ok" ]; then
    cat "$b.log" >&2
    fail "$f: see above"
  fi
  objects+=("$b.host.o")
done
echo "kernel files: ${#kernel_files[@]} compiled (host side; SASS for $(printf 'sm_%s ' "${archs[@]}"))"

# 3. link
module="$tmp/libwhisper-engine-cuda12.so"
# shellcheck disable=SC2086
"$cc" -shared -o "$module" "${objects[@]}" -L"$root/lib64" -Wl,-rpath-link,"$root/lib64" \
  -lcudart -lcublas $glib_libs -lstdc++ -lm -Wl,--no-undefined -Wl,--allow-shlib-undefined ||
  fail "the module does not link against CUDA $version's libcudart and libcublas"
needed=$(readelf -d "$module" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
case "$needed" in
  *libcudart.so.12*libcublas.so.12* | *libcublas.so.12*libcudart.so.12*) ;;
  *) fail "the module links $needed, not libcudart.so.12 and libcublas.so.12" ;;
esac
echo "module linked: needs $needed"
echo "CUDA 12 check passed"
