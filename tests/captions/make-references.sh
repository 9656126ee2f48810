#!/usr/bin/env bash
# make-references.sh: the speech clips of the captions tests and the SRT
# whispersink gives for each (tests/captions/reference/*.srt). The tests
# feed these cues to cea608enc and compare FFmpeg's reading of the
# captions with them; run this again only to renew the references.
#
#   bash tests/captions/make-references.sh [BUILD_DIR] [OUT_DIR]
#
# Clips (16 kHz mono WAV, written to OUT_DIR, default build/captions-data):
#   jfk.wav        ../shared/data/jfk.wav
#   librivox.wav   the five LibriVox clips of pocketsphinx-testdata, joined
#   programme.wav  a 3-minute programme: LibriVox, jfk.wav and espeak-ng
#                  readings with pauses between them
#   german.wav     the German part of ../shared/data/multilingual.mp3 (model base)
#   fast.wav       espeak-ng at 200 words a minute (the bandwidth case)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=${2:-$BUILD/captions-data}
REF=$ROOT/tests/captions/reference
SHARED=${WHISPER_SHARED_DATA:-$ROOT/../shared/data}
LV=/usr/share/pocketsphinx/test/data/librivox
MODELS=$HOME/.local/share/gst-whisper/models
export GST_PLUGIN_PATH_1_0=$BUILD/gst-plugin
mkdir -p "$OUT" "$REF"

bash "$ROOT/tests/captions/make-clips.sh" "$OUT"

srt() { # clip model extra-props out
  gst-launch-1.0 -q filesrc location="$1" ! decodebin ! audioconvert ! audioresample ! \
    whispersink model="$2" $3 ! srtenc ! filesink location="$4"
}
srt "$OUT/jfk.wav" "$MODELS/tiny.en" "" "$REF/jfk.srt"
srt "$OUT/librivox.wav" "$MODELS/tiny.en" "" "$REF/librivox.srt"
srt "$OUT/programme.wav" "$MODELS/tiny.en" "" "$REF/programme.srt"
srt "$OUT/fast.wav" "$MODELS/tiny.en" "" "$REF/fast.srt"
srt "$OUT/german.wav" "$MODELS/base" "language-code=de" "$REF/german.srt"
ls -l "$REF"
