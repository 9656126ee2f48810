#!/usr/bin/env bash
# make-clips.sh OUT_DIR: the speech clips of the captions tests (see
# make-references.sh), from ../shared/data, pocketsphinx-testdata and
# espeak-ng; deterministic for one set of Debian packages.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$1
SHARED=${WHISPER_SHARED_DATA:-$ROOT/../shared/data}
LV=/usr/share/pocketsphinx/test/data/librivox
mkdir -p "$OUT"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
sox -q -n -r 16000 -c 1 -b 16 "$T/pause.wav" trim 0 1.5
sox -q "$SHARED/jfk.wav" -r 16000 -c 1 -b 16 "$OUT/jfk.wav"
lv=()
for f in "$LV"/*.wav; do
  sox -q "$f" -r 16000 -c 1 -b 16 "$T/$(basename "$f")"
  lv+=("$T/$(basename "$f")" "$T/pause.wav")
done
sox -q "${lv[@]}" "$OUT/librivox.wav"
# espeak-ng readings (public domain texts)
espeak-ng -v en-us -s 160 -w "$T/s1.wav" "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, it was the season of Darkness, it was the spring of hope, it was the winter of despair."
espeak-ng -v en-us -s 160 -w "$T/s2.wav" "Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in my purse, and nothing particular to interest me on shore, I thought I would sail about a little and see the watery part of the world. It is a way I have of driving off the spleen and regulating the circulation."
espeak-ng -v en-us -s 160 -w "$T/s3.wav" "Four score and seven years ago our fathers brought forth on this continent a new nation, conceived in liberty, and dedicated to the proposition that all men are created equal. Now we are engaged in a great civil war, testing whether that nation, or any nation so conceived and so dedicated, can long endure."
espeak-ng -v en-us -s 160 -w "$T/s4.wav" "The weather tomorrow will be mostly sunny in the morning, with clouds building in the afternoon. Temperatures will reach twenty four degrees near the coast and twenty eight degrees inland. Winds will be light and variable, becoming westerly at fifteen kilometres an hour in the evening."
for i in 1 2 3 4; do sox -q "$T/s$i.wav" -r 16000 -c 1 -b 16 "$T/r$i.wav"; done
sox -q "$OUT/librivox.wav" "$T/r1.wav" "$T/pause.wav" "$OUT/jfk.wav" "$T/pause.wav" \
  "$T/r2.wav" "$T/pause.wav" "$T/r3.wav" "$T/pause.wav" "$T/r4.wav" "$T/pause.wav" \
  "$OUT/librivox.wav" "$T/r1.wav" "$T/pause.wav" "$OUT/jfk.wav" "$OUT/programme-part.wav"
# at least 3 minutes: the programme twice if it is shorter
len=$(soxi -D "$OUT/programme-part.wav")
if awk "BEGIN{exit !($len < 180)}"; then
  sox -q "$OUT/programme-part.wav" "$T/pause.wav" "$T/r3.wav" "$T/pause.wav" "$T/r2.wav" \
    "$T/pause.wav" "$T/r4.wav" "$T/pause.wav" "$OUT/librivox.wav" "$OUT/programme.wav"
else
  cp "$OUT/programme-part.wav" "$OUT/programme.wav"
fi
rm -f "$OUT/programme-part.wav"
espeak-ng -v en-us -s 200 -w "$T/fast.wav" "Good evening and welcome to the late news. The city council voted tonight to extend the late night bus service through the winter, after a long debate about the cost of the program and the number of riders it serves. In sports, the home team won its third straight game, coming back from a ten point deficit in the final quarter. Forecasters expect heavy rain over the weekend, with flooding possible in low lying areas near the river, and residents are asked to keep storm drains clear of leaves and debris."
sox -q "$T/fast.wav" -r 16000 -c 1 -b 16 "$OUT/fast.wav"
# German: the second part of multilingual.mp3
ffmpeg -v error -y -ss 30.5 -i "$SHARED/multilingual.mp3" -ac 1 -ar 16000 "$OUT/german.wav"
for f in "$OUT"/*.wav; do printf '%s %s s\n' "$(basename "$f")" "$(soxi -D "$f")"; done
