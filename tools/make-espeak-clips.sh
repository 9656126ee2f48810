#!/usr/bin/env bash
# Speaks the English test sentences of tests/reference/ with espeak-ng and
# writes them as 16-kHz mono s16 WAV files into tests/reference/clips/
# (or the folder given as $1).
#
# The WAV files are committed: the reference fixtures and the parity tests
# use the committed files, so a different espeak-ng or sox version on another
# machine changes nothing. Run this script only to re-create the clips on
# purpose (then re-run tests/reference/make-reference.py as well).
#
# Needs: espeak-ng, sox.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out="${1:-$here/../tests/reference/clips}"
mkdir -p "$out"

for tool in espeak-ng sox; do
  command -v "$tool" >/dev/null || { echo "make-espeak-clips: $tool not found" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# speak NAME VOICE SPEED TEXT: espeak-ng writes 22050-Hz mono WAV; sox
# resamples it to 16 kHz, 16-bit, one channel (no dither, so the output
# does not depend on a random seed).
speak () {
  local name=$1 voice=$2 speed=$3 text=$4
  espeak-ng -v "$voice" -s "$speed" -w "$tmp/$name.raw.wav" -- "$text"
  sox -D "$tmp/$name.raw.wav" -r 16000 -c 1 -b 16 -e signed-integer "$tmp/$name.wav"
}

# finish NAME [SOX EFFECTS...]: applies optional effects and moves the clip
# into place.
finish () {
  local name=$1; shift
  sox -D "$tmp/$name.wav" -r 16000 -c 1 -b 16 -e signed-integer "$out/$name.wav" "$@"
  echo "make-espeak-clips: $out/$name.wav ($(soxi -D "$out/$name.wav") s)"
}

# 1. Numbers, times, dates, an amount.
speak numbers en-us 160 \
  "Flight 427 leaves at 9:15 from gate 12 on March 3rd, 2024, and a ticket costs 389 dollars."
finish numbers

# 2. A question.
speak question en-gb 150 \
  "Could you please tell me where the nearest train station is, and how long it takes to walk there?"
finish question

# 3. People and places.
speak names en-us+f3 150 \
  "Yesterday, Alice Johnson met Doctor Robert Chen and Maria Garcia at the public library in Amsterdam."
finish names

# 4. A long passage (over 30 s): several segments in the first window and a
#    second window, so seeking and the prompt from previous text matter.
speak long en-gb-x-rp 165 \
  "The old lighthouse stood at the edge of the cliff for more than two hundred years. \
Every night the keeper climbed the narrow stairs, cleaned the great lens, and lit the lamp \
that guided the fishing boats safely home. When the storms came in winter, the waves struck \
the rocks so hard that the whole tower trembled, but the light never went out. \
In the spring, children from the village walked up the hill to watch the ships, \
and the keeper told them stories about sailors, whales, and distant islands. \
Today the lighthouse is a small museum, and visitors can still climb the stairs to see the sea."
finish long

# 5. A phone number and an e-mail address, spoken.
speak contact en-us 170 \
  "Please call me back at 555 0199 before six o'clock, or send an email to Sarah at example dot com."
finish contact

# 6. A very short clip.
speak short en-us+m3 150 "Wow, that was incredible, wasn't it?"
finish short

# 7. Leading silence (2.5 s) and a 3-s pause between two sentences: timestamps
#    must land after the silences.
speak pause_a en-gb 150 "The meeting starts at ten in the morning."
speak pause_b en-gb 150 "Please bring your notes and a laptop."
sox -D "$tmp/pause_a.wav" "$tmp/pause_a_pad.wav" pad 2.5 3.0
sox -D "$tmp/pause_a_pad.wav" "$tmp/pause_b.wav" "$tmp/pauses.wav"
finish pauses
