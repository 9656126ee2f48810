#!/bin/sh
# check-needed.sh FILE...: fails when any FILE (a shared library or program)
# names a CUDA library in its dynamic section (NEEDED): libcuda, libcudart,
# libcublas(Lt), libnvrtc, libnvJitLink. libwhisper-engine and the GStreamer
# plugin must load on machines without CUDA; only the CUDA module links it.
# Exit 77 (skipped) when readelf is missing; a missing FILE is an error.
set -u
if ! command -v readelf >/dev/null 2>&1; then
  echo "SKIP: readelf not found (binutils)"
  exit 77
fi
status=0
for f in "$@"; do
  if [ ! -f "$f" ]; then
    echo "FAIL: $f does not exist"
    status=1
    continue
  fi
  needed=$(LC_ALL=C readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p')
  if [ -z "$needed" ]; then
    echo "FAIL: no NEEDED entries read from $f (not a dynamic ELF file?)"
    status=1
    continue
  fi
  bad=$(printf '%s\n' "$needed" | grep -E '^lib(cuda|cudart|cublas|cublasLt|nvrtc|nvJitLink)([.-]|$)' || true)
  if [ -n "$bad" ]; then
    echo "FAIL: $f needs CUDA libraries: $(echo $bad)"
    status=1
  else
    echo "ok: $f needs $(echo $needed)"
  fi
done
exit $status
