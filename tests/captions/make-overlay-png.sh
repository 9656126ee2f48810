#!/usr/bin/env bash
# make-overlay-png.sh: docs/captions-overlay.png, a frame with the captions
# of jfk.wav rendered. whispersink (tiny.en) -> cea608enc (pop-on) ->
# ccconverter (s334-1a) -> qtmux's caption track beside an x264enc
# test picture; FFmpeg's eia_608 decoder reads the track back and its
# subtitles filter (libass) draws it on the frame at FRAME_S seconds.
#
# cc708overlay (GStreamer 1.22) draws nothing for these captions: it
# renders 708 service blocks only (cc_type 2/3) and skips the 608 pairs
# (cc_type 0/1) that ccconverter puts into cc_data or cdp; checked with
# both formats on 400 frames (every frame stayed the plain picture).
#
#   bash tests/captions/make-overlay-png.sh [BUILD_DIR] [FRAME_S]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
AT=${2:-2}
SHARED=${WHISPER_SHARED_DATA:-$ROOT/../shared/data}
export GST_PLUGIN_PATH_1_0=$BUILD/gst-plugin
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# 400 frames: the video outlasts the captions (whispersink posts no EOS
# when downstream ends before it)
gst-launch-1.0 -q -e filesrc location="$SHARED/jfk.wav" ! decodebin ! audioconvert ! \
    audioresample ! whispersink ! cea608enc ! ccconverter ! \
    closedcaption/x-cea-608,format=s334-1a ! mux.caption_0 \
  videotestsrc num-buffers=400 pattern=smpte ! \
    video/x-raw,width=640,height=360,framerate=30000/1001 ! x264enc ! h264parse ! mux.video_0 \
  qtmux name=mux ! filesink location="$T/jfk-cc.mp4" async=false
ffmpeg -v error -y -i "$T/jfk-cc.mp4" -map 0:s:0 "$T/jfk-cc.srt"
ffmpeg -v error -y -i "$T/jfk-cc.mp4" \
  -vf "subtitles=$T/jfk-cc.srt:force_style='FontName=DejaVu Sans Mono,FontSize=22,BorderStyle=3'" \
  -ss "$AT" -frames:v 1 "$ROOT/docs/captions-overlay.png"
echo "docs/captions-overlay.png at $AT s; the captions FFmpeg read:"
cat "$T/jfk-cc.srt"
