#!/usr/bin/env bash
# The demo: sets everything up (dependencies, build, default model), then
# transcribes real speech and prints the text with timestamps.
#   bash tools/demo.sh [AUDIO-FILE]
# Without an argument it takes public-domain LibriVox recordings that
# Debian's pocketsphinx-testdata package installs, and prints their
# published transcripts next to ours.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh >/dev/null

if [ $# -ge 1 ]; then
  exec build/engine/whisper-transcribe "$1"
fi

dir=/usr/share/pocketsphinx/test/data/librivox
for id in sense_and_sensibility_01_austen_64kb-0870 sense_and_sensibility_01_austen_64kb-0880 \
          sense_and_sensibility_01_austen_64kb-0890; do
  echo "== $dir/$id.wav"
  echo "   published: $(grep "($id)" "$dir/transcription" | sed -e 's/<s> //; s/ <\/s>.*//')"
  build/engine/whisper-transcribe "$dir/$id.wav"
done
