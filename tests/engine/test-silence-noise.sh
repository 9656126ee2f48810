#!/usr/bin/env bash
# whisper-transcribe writes no text into silence and noise on default
# settings, and still writes speech that is quiet or surrounded by silence.
# Each silence/noise case is also run with --reference-rules (the reference
# implementation's rules, which the engine followed before the silence gate
# and the strict no-speech rule): there it must still give text, so each
# case is one that failed before and the check cannot pass by accident.
#
#   digital silence, 600 s      reference: 82 segments of "you"
#   white noise at -65 dBFS     reference: 40 segments of "."
#   white noise, 90 s, Gaussian with sigma 0.3 of full scale (numpy seed 2):
#                               reference: one sentence 45 times ("I'm going to
#                               go ahead and see what happens.")
#   tones, 43 s (sine chords, a square wave, plucked strings; sox -R):
#                               "Thank you." at no-speech probability 0.90 and
#                               average log-probability -0.85, which no rule on
#                               the model's output catches; the voice activity
#                               detector finds no speech (checked with --no-vad
#                               as well: text there)
#   max-length-loop.flac        reference: a window near 145 s loops on
#                               "he was a well-known woman" to the maximum
#                               decode length (no-speech probability high)
#   jfk.wav with 40 s of silence around it, and jfk.wav 40 dB quieter:
#                               the words of jfk.wav, nothing added
#
# Usage: test-silence-noise.sh WHISPER_TRANSCRIBE
set -euo pipefail
cli="$1"
data="${WHISPER_SHARED_DATA:?}"
clips="${WHISPER_SOURCE_ROOT:?}/tests/reference/clips"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

sox -n -r 16000 -c 1 -b 16 "$tmp/silence.wav" trim 0 600
# -R: sox's fixed seed, the same noise on every run
sox -R -n -r 16000 -c 1 -b 16 "$tmp/quiet-noise.wav" synth 60 whitenoise vol 0.001
sox -R -n -r 16000 -c 1 -b 16 "$tmp/tones.wav" synth 0.5 sine 440 sine 660 : synth 0.5 sine 550 \
  : synth 0.3 square 300 : synth 0.7 pluck 220 repeat 59
python3 - "$tmp/white-noise.wav" <<'PY'
import sys, wave
import numpy as np
x = np.random.default_rng(2).standard_normal(16000 * 90) * 0.3
pcm = (np.clip(x, -1, 1) * 32767).astype("<i2")
with wave.open(sys.argv[1], "wb") as w:
    w.setnchannels(1)
    w.setsampwidth(2)
    w.setframerate(16000)
    w.writeframes(pcm.tobytes())
PY
sox -n -r 16000 -c 1 -b 16 "$tmp/pad.wav" trim 0 20
sox "$tmp/pad.wav" "$data/jfk.wav" "$tmp/pad.wav" "$tmp/jfk-padded.wav"
sox -R "$data/jfk.wav" "$tmp/jfk-quiet.wav" vol -40dB

text() { "$cli" --device cpu --greedy --format text "$@" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//'; }

for f in silence.wav quiet-noise.wav white-noise.wav; do
  out=$(text "$tmp/$f")
  ref=$(text --reference-rules "$tmp/$f")
  if [ -n "$out" ]; then echo "FAIL: $f gives text: ${out:0:200}"; status=1; fi
  if [ -z "$ref" ]; then
    echo "FAIL: $f: the case does not arise any more (no text with --reference-rules)"; status=1
  fi
  echo "ok: $f: no text (reference rules: ${ref:0:60}...)"
done

vad_file="${XDG_DATA_HOME:-$HOME/.local/share}/gst-whisper/models/silero-vad/silero_vad_v6.bin"
if [ -f "$vad_file" ]; then
  out=$(text "$tmp/tones.wav")
  no_vad=$(text --no-vad "$tmp/tones.wav")
  if [ -n "$out" ]; then echo "FAIL: tones.wav gives text: ${out:0:200}"; status=1; fi
  if [ -z "$no_vad" ]; then
    echo "FAIL: tones.wav: the case does not arise any more (no text with --no-vad)"; status=1
  fi
  echo "ok: tones.wav: no text (without the VAD: $no_vad)"
else
  echo "FAIL: no voice activity detector at $vad_file (tools/fetch-model.sh silero-vad)"
  status=1
fi

loop=$(text "$clips/max-length-loop.flac")
loop_ref=$(text --reference-rules "$clips/max-length-loop.flac")
n=$( (grep -o "well-known woman" <<<"$loop" || true) | wc -l)
n_ref=$( (grep -o "well-known woman" <<<"$loop_ref" || true) | wc -l)
if [ "$n" -ne 0 ] || [ "$n_ref" -lt 10 ]; then
  echo "FAIL: max-length-loop.flac: the loop appears $n times (reference rules: $n_ref, expected >= 10)"
  status=1
fi
grep -q "amiable himself" <<<"$loop" || { echo "FAIL: max-length-loop.flac lost speech: $loop"; status=1; }
echo "ok: max-length-loop.flac: the loop is dropped ($n_ref times with the reference rules)"

# words only: the padding moves punctuation (a comma after "so")
words() { text "$@" | tr -d '[:punct:]' | tr '[:upper:]' '[:lower:]'; }
want=$(words "$data/jfk.wav")
for f in jfk-padded.wav jfk-quiet.wav; do
  got=$(words "$tmp/$f")
  if [ "$got" != "$want" ]; then
    echo "FAIL: $f: '$got' is not jfk.wav's '$want'"; status=1
  else
    echo "ok: $f: $got"
  fi
done
exit $status
