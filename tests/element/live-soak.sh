#!/usr/bin/env bash
# live-soak.sh: runs a live captioning pipeline on looped real speech with
# silence and white noise between the clips, for a while (60 s by default),
# and reports, every 5 s, the pipeline latency, whispersink's
# max-observed-delay, the resident memory (RSS), the number of text items,
# the audio and text dropped and the video position; it fails when the
# video stalls, text stops, an error or warning is posted, anything is
# dropped, text appears in silence or noise, or memory keeps growing.
# The issue's soak: bash tests/element/live-soak.sh 3600
#
#   bash tests/element/live-soak.sh [DURATION_S] [extra live-soak options]
#
# BUILD_DIR (default: build, else build-gst) is the meson build directory;
# WHISPER_SHARED_DATA the speech clips (default: ../shared/data).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-}
if [ -z "$build" ]; then
  for d in "$root/build" "$root/build-gst"; do
    if [ -x "$d/tests/element/live-soak" ]; then build=$d; break; fi
  done
fi
if [ -z "$build" ] || [ ! -x "$build/tests/element/live-soak" ]; then
  echo "live-soak: build first (meson setup build && ninja -C build), or set BUILD_DIR" >&2
  exit 2
fi
duration=${1:-60}
shift || true
data=${WHISPER_SHARED_DATA:-$root/../shared/data}

export GST_PLUGIN_PATH_1_0="$build/gst-plugin"
export GST_REGISTRY="$build/tests/element/live-soak.registry"
exec "$build/tests/element/live-soak" --duration "$duration" "$@" \
  "$data/jfk.wav" "$data/hotwords.mp3" "$data/stereo_diarization.wav"
