#!/usr/bin/env bash
# Peak memory of int8 weights (whisper-transcribe --greedy --stats, CPU,
# jfk.wav) with the base model: its float16 weights (145 MB) in int8 are
# half the bytes, so precision=int8 on the float16 model, and the model
# quantized to an int8 CTranslate2 directory by tools/ct2-quantize.py
# (loaded as stored), must each peak at least 0.4 x model.bin's size below
# the float16 run's peak (0.5 x is what int8 saves; a float copy of the
# weights anywhere would add 2 to 4 times that instead).
#
# The float16 run's peak less its weights (libraries, vocabulary, encoder
# and decoder work buffers, cross-attention K/V, scratch) must stay under
# 180 MiB: the encoder's work buffers are one block whose last part the
# convolutions and the layers share (net/whisper-encoder.c); as eight
# separate buffers, each rounded up to 2 MiB, they took twice the memory
# and this part was about 200 MiB under meson.
#
# Issue 40's bar, int8 peak <= 0.6 x float16 peak, is not asserted: with
# 138 MiB of float16 weights, 69 MiB in int8, and X MiB of everything
# else, (69 + X) <= 0.6 (138 + X) holds only for X <= 34 MiB, and the
# cross-attention K/V of one window alone are 35 MiB (6 layers x 1500
# frames x 1024 float32). The script prints the ratio;
# tools/int8-memory-ratio.sh measures it outside meson and docs/benchmarks.md
# has the figures.
#
# Under meson, MALLOC_PERTURB_ touches every page malloc hands out, so
# pages allocated but never used count too. Also checks the text, so that
# a bound is not met by a run that failed.
#
# Usage: test-int8-memory.sh WHISPER_TRANSCRIBE PYTHON3 CT2_QUANTIZE
set -euo pipefail

cli="$1"
python="$2"
quantize="$3"
dir="${XDG_DATA_HOME:-$HOME/.local/share}/gst-whisper/models/base"
audio="${WHISPER_SHARED_DATA:?}/jfk.wav"
if [ ! -f "$dir/model.bin" ]; then
  echo "FAIL: no base model in $dir (tools/fetch-model.sh base)"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# peak RSS in MiB of one run (arguments: whisper-transcribe options)
peak() {
  local out
  out=$("$cli" --device cpu --greedy --stats --format text "$@" "$audio" 2>"$tmp/err") || {
    echo "FAIL: whisper-transcribe $*: $(cat "$tmp/err")" >&2
    return 1
  }
  if ! grep -q "ask not what your country can do for you" <<<"$out"; then
    echo "FAIL: whisper-transcribe $*: unexpected transcript: $out" >&2
    return 1
  fi
  sed -n 's/.*MiB after loading the model and creating the stream, \([0-9.]*\) MiB in all.*/\1/p' \
    "$tmp/err"
}

"$python" "$quantize" "$dir" "$tmp/base-int8" >/dev/null
weights_mib=$(( $(stat -c %s "$dir/model.bin") / 1048576 ))
f16=$(peak --model "$dir")
at_load=$(peak --model "$dir" --precision int8)
stored=$(peak --model "$tmp/base-int8")
status=0
for run in "precision int8:$at_load" "int8 directory:$stored"; do
  name=${run%%:*}
  p=${run##*:}
  if awk -v p="$p" -v f="$f16" -v w="$weights_mib" 'BEGIN { exit !(p <= f - 0.4 * w) }'; then
    echo "ok: $name: peak RSS $p MiB <= float16's $f16 MiB - 0.4 x $weights_mib MiB"
  else
    echo "FAIL: $name: peak RSS $p MiB > float16's $f16 MiB - 0.4 x $weights_mib MiB"
    status=1
  fi
done
if awk -v f="$f16" -v w="$weights_mib" 'BEGIN { exit !(f - w <= 180) }'; then
  echo "ok: float16: peak RSS $f16 MiB less its $weights_mib MiB of weights <= 180 MiB"
else
  echo "FAIL: float16: peak RSS $f16 MiB less its $weights_mib MiB of weights > 180 MiB"
  status=1
fi
awk -v a="$at_load" -v s="$stored" -v f="$f16" \
  'BEGIN { printf "info: int8/float16 peak RSS: %.2f (at load), %.2f (directory); issue 40 asks 0.6\n", a / f, s / f }'
exit $status
