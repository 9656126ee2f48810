#!/usr/bin/env bash
# live-commit.sh: what a live-subtitling user sees from whispersink. Real
# speech with published transcripts (jfk.wav, the left channel of
# stereo_diarization.wav, the five LibriVox clips of pocketsphinx's test
# data), each clip followed by 1-2 s of -70 dBFS noise, looped for
# --minutes (10), is fed at real time into appsrc ! whispersink
# output=words ! fakesink sync=true, then once more as fast as possible
# (non-live). It prints each committed word's delay (arrival - end of its
# audio: p50 / p95 / max), the word error rate live and offline against the
# published text and live against offline, repeated words, words in the
# noise between clips, the audio dropped and the warnings, and one RESULT
# line; it reports, it does not judge (tests/element/live-commit.c).
#
# The issue's three measurements:
#   bash tests/element/live-commit.sh --latency 3000
#   bash tests/element/live-commit.sh --latency 1500
#   bash tests/element/live-commit.sh --latency 4000 --model $HOME/.local/share/gst-whisper/models/base
#
#   bash tests/element/live-commit.sh [live-commit options: --minutes M, --latency MS,
#       --model PATH, --set PROP=VALUE, --output words|segments, --playback,
#       --paced, --live-only, --offline-only, --seed N, --verbose]
#
# BUILD_DIR (default: build, else build-gst) is the meson build directory;
# WHISPER_SHARED_DATA the shared clips (default: ../shared/data); LIBRIVOX
# the LibriVox clips and their `transcription` file (default:
# /usr/share/pocketsphinx/test/data/librivox, Debian's pocketsphinx-testdata
# package).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-}
if [ -z "$build" ]; then
  for d in "$root/build" "$root/build-gst"; do
    if [ -x "$d/tests/element/live-commit" ]; then build=$d; break; fi
  done
fi
if [ -z "$build" ] || [ ! -x "$build/tests/element/live-commit" ]; then
  echo "live-commit: build first (meson setup build && ninja -C build), or set BUILD_DIR" >&2
  exit 2
fi
data=${WHISPER_SHARED_DATA:-$root/../shared/data}
librivox=${LIBRIVOX:-/usr/share/pocketsphinx/test/data/librivox}

export GST_PLUGIN_PATH_1_0="$build/gst-plugin"
export GST_REGISTRY="$build/tests/element/live-commit.registry"
exec "$build/tests/element/live-commit" "$@" "$data" "$librivox"
