#!/usr/bin/env bash
# make-overlay-png.sh: docs/captions-overlay.png, a frame of cc708overlay
# rendering the captions of jfk.wav: whispersink (tiny.en) -> cea608enc
# (pop-on) -> ccconverter (708 cc_data) -> cccombiner onto a videotestsrc
# picture -> cc708overlay -> pngenc; the frame at FRAME_S seconds.
#
#   bash tests/captions/make-overlay-png.sh [BUILD_DIR] [FRAME_S]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
AT=${2:-4}
SHARED=${WHISPER_SHARED_DATA:-$ROOT/../shared/data}
export GST_PLUGIN_PATH_1_0=$BUILD/gst-plugin
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
frame=$(awk "BEGIN{printf \"%d\", $AT * 30000 / 1001}")
gst-launch-1.0 -q filesrc location="$SHARED/jfk.wav" ! decodebin ! audioconvert ! audioresample ! \
    whispersink ! cea608enc ! ccconverter ! closedcaption/x-cea-708,format=cc_data ! comb.caption \
  videotestsrc num-buffers=$((frame + 1)) pattern=smpte ! \
    video/x-raw,width=640,height=360,framerate=30000/1001 ! \
    cccombiner name=comb ! cc708overlay ! videoconvert ! pngenc ! \
    multifilesink location="$T/f-%05d.png"
cp "$(printf '%s/f-%05d.png' "$T" "$frame")" "$ROOT/docs/captions-overlay.png"
echo "docs/captions-overlay.png: frame $frame"
