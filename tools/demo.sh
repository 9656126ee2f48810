#!/usr/bin/env bash
# The demo: sets everything up (dependencies, build, default model), then
# runs a gst-launch pipeline with whispersink on real speech, prints the
# transcript and the SRT file it wrote.
#   bash tools/demo.sh [--model tiny.en|base|PATH] [--translate] [AUDIO-FILE]
# Without a file it takes public-domain LibriVox recordings that Debian's
# pocketsphinx-testdata package installs, and prints their published
# transcripts next to ours. --model base takes the multilingual base model
# (installed by the setup); with a multilingual model the language of every
# 30-s window is detected and windows are not conditioned on the text
# before them, so that a recording that changes language (multilingual.mp3:
# English, then German) comes out in each language; --translate gives
# English text instead.
set -euo pipefail
cd "$(dirname "$0")/.."
model=""
props=()
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="$2"; shift 2 ;;
    --translate) props+=(task=translate); shift ;;
    --) shift; break ;;
    -*) echo "demo.sh: unknown option $1 (see the header of tools/demo.sh)" >&2; exit 2 ;;
    *) break ;;
  esac
done
bash tools/setup.sh >/dev/null
models="${XDG_DATA_HOME:-$HOME/.local/share}/gst-whisper/models"
case "$model" in
  "" | tiny.en) ;;
  base) props+=("model=$models/base" language-per-window=true condition-on-previous-text=false) ;;
  *) props+=("model=$model") ;;
esac

export GST_PLUGIN_PATH_1_0="$PWD/build/gst-plugin${GST_PLUGIN_PATH_1_0:+:$GST_PLUGIN_PATH_1_0}"
out_dir=$(mktemp -d)
trap 'rm -rf "$out_dir"' EXIT

transcribe () {
  local audio=$1 srt=$2
  gst-launch-1.0 -q filesrc location="$audio" ! decodebin ! audioconvert ! audioresample ! \
    whispersink "${props[@]}" ! srtenc ! filesink location="$srt"
  echo "   transcript: $(awk 'NF && $0 !~ /^[0-9]+$/ && $0 !~ /-->/' "$srt" | paste -sd' ')"
  echo "   SRT file ($srt):"
  sed 's/^/     /' "$srt"
}

if [ $# -ge 1 ]; then
  echo "== $1"
  transcribe "$(realpath "$1")" "$out_dir/$(basename "$1").srt"
  exit 0
fi

dir=/usr/share/pocketsphinx/test/data/librivox
for id in sense_and_sensibility_01_austen_64kb-0870 sense_and_sensibility_01_austen_64kb-0880 \
          sense_and_sensibility_01_austen_64kb-0890; do
  echo "== $dir/$id.wav"
  echo "   published:  $(grep "($id)" "$dir/transcription" | sed -e 's/<s> //; s/ <\/s>.*//')"
  transcribe "$dir/$id.wav" "$out_dir/$id.srt"
done
