#!/usr/bin/env bash
# The demo: sets everything up (dependencies, build, default model), then
# runs a gst-launch pipeline with whispersink on real speech, prints the
# transcript and the SRT file it wrote.
#   bash tools/demo.sh [AUDIO-FILE]
# Without an argument it takes public-domain LibriVox recordings that
# Debian's pocketsphinx-testdata package installs, and prints their
# published transcripts next to ours.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh >/dev/null

export GST_PLUGIN_PATH_1_0="$PWD/build/gst-plugin${GST_PLUGIN_PATH_1_0:+:$GST_PLUGIN_PATH_1_0}"
out_dir=$(mktemp -d)
trap 'rm -rf "$out_dir"' EXIT

transcribe () {
  local audio=$1 srt=$2
  gst-launch-1.0 -q filesrc location="$audio" ! decodebin ! audioconvert ! audioresample ! \
    whispersink ! srtenc ! filesink location="$srt"
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
