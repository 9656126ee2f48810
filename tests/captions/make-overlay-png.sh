#!/usr/bin/env bash
# make-overlay-png.sh: docs/captions-overlay.png, a frame drawn by
# GStreamer's cc708overlay from cea608enc's native CEA-708 output. The
# captions are those whispersink wrote for jfk.wav (reference/jfk.srt, made
# by make-references.sh): appsrc -> cea608enc (pop-on) ->
# closedcaption/x-cea-708,format=cc_data -> cc708overlay's cc_sink, beside
# a videotestsrc picture, the frame at FRAME_S seconds (cc-overlay.py --png).
#
#   bash tests/captions/make-overlay-png.sh [BUILD_DIR] [FRAME_S]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
AT=${2:-2}
export GST_PLUGIN_PATH_1_0=$BUILD/gst-plugin
/usr/bin/python3 "$ROOT/tests/captions/cc-overlay.py" --png "$ROOT/docs/captions-overlay.png" \
  --at "$AT" --srt "$ROOT/tests/captions/reference/jfk.srt" --size 1280x720 --pattern smpte
echo "docs/captions-overlay.png at $AT s; the captions:"
cat "$ROOT/tests/captions/reference/jfk.srt"
