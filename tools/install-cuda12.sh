#!/usr/bin/env bash
# Installs the parts of the CUDA 12.8 toolkit that the test suite's CUDA 12
# check (tests/cuda12/check-cuda12.sh) compiles and links the CUDA module
# against, from NVIDIA's PyPI wheels (pinned), laid out as a toolkit:
#   ROOT/include      runtime, crt and cuBLAS headers
#   ROOT/bin/ptxas    the 12.8 assembler (SASS for every architecture)
#   ROOT/nvvm/libdevice/libdevice.10.bc
#   ROOT/lib64        libcudart.so.12, libcublas.so.12 (and .so links)
# ROOT is $WHISPER_CUDA12_ROOT, else ${XDG_DATA_HOME:-~/.local/share}/gst-whisper/cuda-12.8.
# Nothing goes into a Python environment: the wheels are downloaded to a
# temporary folder, the files above taken out of them, the wheels deleted
# (cuBLAS's wheel is 594 MB, mostly libcublasLt, which is not kept).
# The wheels ship no nvcc driver (only ptxas and libnvvm), so the check
# compiles the kernels with clang (Debian's clang-19) against these headers.
# Safe to run twice: a complete ROOT with the same pins is left alone.
set -euo pipefail

# CUDA 12.8 update 1: the first CUDA 12 release with sm_100 and sm_120.
PINS=(
  "nvidia-cuda-nvcc-cu12==12.8.93"
  "nvidia-cuda-runtime-cu12==12.8.90"
  "nvidia-cublas-cu12==12.8.4.1"
)
root="${WHISPER_CUDA12_ROOT:-${XDG_DATA_HOME:-$HOME/.local/share}/gst-whisper/cuda-12.8}"
stamp="$root/.installed"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${PINS[*]}" ]; then
  echo "install-cuda12: $root already present"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "install-cuda12: downloading ${PINS[*]}"
if ! python3 -m pip download --quiet --disable-pip-version-check --no-cache-dir --no-deps \
    --only-binary=:all: -d "$tmp/wheels" "${PINS[@]}"; then
  echo "install-cuda12: FAILED: pip could not download ${PINS[*]} from PyPI" >&2
  exit 1
fi

rm -rf "$root.new"
python3 - "$tmp/wheels" "$root.new" <<'EOF'
# Takes the toolkit files out of the wheels (zip files); fails on a missing one.
import os, stat, sys, zipfile, glob

wheels, root = sys.argv[1], sys.argv[2]
want = {  # prefix in the wheel -> folder under root
    "nvidia/cuda_runtime/include/": "include/",
    "nvidia/cuda_nvcc/include/": "include/",
    "nvidia/cublas/include/": "include/",
    "nvidia/cuda_nvcc/bin/ptxas": "bin/ptxas",
    "nvidia/cuda_nvcc/nvvm/libdevice/": "nvvm/libdevice/",
    "nvidia/cuda_runtime/lib/libcudart.so.12": "lib64/libcudart.so.12",
    "nvidia/cublas/lib/libcublas.so.12": "lib64/libcublas.so.12",
}
found = set()
for whl in sorted(glob.glob(os.path.join(wheels, "*.whl"))):
    with zipfile.ZipFile(whl) as z:
        for info in z.infolist():
            for prefix, dest in want.items():
                if not info.filename.startswith(prefix) or info.filename.endswith("/"):
                    continue
                if info.filename.endswith("__init__.py"):
                    continue
                rel = dest + info.filename[len(prefix):] if dest.endswith("/") else dest
                path = os.path.join(root, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with z.open(info) as src, open(path, "wb") as out:
                    while chunk := src.read(1 << 20):
                        out.write(chunk)
                if rel.startswith("bin/"):
                    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
                found.add(prefix)
missing = sorted(set(want) - found)
if missing:
    sys.exit("install-cuda12: FAILED: the wheels lack " + ", ".join(missing))
EOF
ln -s libcudart.so.12 "$root.new/lib64/libcudart.so"
ln -s libcublas.so.12 "$root.new/lib64/libcublas.so"
printf '%s' "${PINS[*]}" > "$root.new/.installed"
rm -rf "$root"
mv "$root.new" "$root"
echo "install-cuda12: installed into $root ($(du -sh "$root" | cut -f1))"
