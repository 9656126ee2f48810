#!/usr/bin/env bash
# valgrind-cycles.sh: the NULL->PLAYING->NULL cycle test under valgrind
# (memcheck): a few cycles, the first with speech flowing to EOS, a short
# encoder context so that inference fits valgrind's speed. Fails on any
# memory error or definitely lost block.
#
#   bash tests/element/valgrind-cycles.sh [CYCLES]      (default 3)
#
# BUILD_DIR (default: build, else build-gst) is the meson build directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-}
if [ -z "$build" ]; then
  for d in "$root/build" "$root/build-gst"; do
    if [ -x "$d/tests/element/test-element-cycles" ]; then build=$d; break; fi
  done
fi
if [ -z "$build" ]; then
  echo "valgrind-cycles: build first, or set BUILD_DIR" >&2
  exit 2
fi
command -v valgrind >/dev/null || { echo "valgrind-cycles: valgrind not installed"; exit 77; }

export GST_PLUGIN_SYSTEM_PATH_1_0=${GST_PLUGIN_SYSTEM_PATH_1_0:-$(pkg-config --variable=pluginsdir gstreamer-1.0)}
export GST_PLUGIN_PATH_1_0="$build/gst-plugin"
export GST_REGISTRY="$build/tests/element/valgrind-cycles.registry"
export WHISPER_SHARED_DATA=${WHISPER_SHARED_DATA:-$root/../shared/data}
export WT_CYCLES=${1:-3} WT_ENCODER_CONTEXT=${WT_ENCODER_CONTEXT:-100} WT_EOS_TIMEOUT=900
export CK_FORK=no CK_DEFAULT_TIMEOUT=1800 G_SLICE=always-malloc G_DEBUG=gc-friendly
# Build the registry outside valgrind (the plugin scanner is a child process).
gst-inspect-1.0 whispersink >/dev/null

supp=(--suppressions="$root/tests/element/valgrind.supp")
[ -f /usr/share/glib-2.0/valgrind/glib.supp ] && supp+=(--suppressions=/usr/share/glib-2.0/valgrind/glib.supp)
exec valgrind --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
  --error-exitcode=1 --num-callers=40 "${supp[@]}" "$build/tests/element/test-element-cycles"
