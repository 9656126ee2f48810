#!/usr/bin/env bash
# live-wer.sh: word error rates of whispersink's live transcripts of the
# shared clips with known transcripts (jfk.wav; stereo_diarization.wav, each
# channel), for a range of `latency` and of `encoder-context` values: the
# tables in gst-plugin/README.md ("Live latency and encoder context").
#
#   bash tests/element/live-wer.sh [latency|encoder-context|real-time] [live-wer options]
#
# latency: --paced runs (inference always keeps up) at 300 ... 8000 ms;
# encoder-context: --paced runs at latency 8000 for 1 ... 1500 frames;
# real-time: jfk.wav at real time (appsrc ! whispersink ! fakesink sync=true)
# for each latency, on this machine's CPU. BUILD_DIR (default: build) is the
# meson build directory, WHISPER_SHARED_DATA the clips (default
# ../shared/data). Extra options (--model PATH) go to every run.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build}
tool=$build/tests/element/live-wer
if [ ! -x "$tool" ]; then
  echo "live-wer: build first (meson setup build && ninja -C build), or set BUILD_DIR" >&2
  exit 2
fi
data=${WHISPER_SHARED_DATA:-$root/../shared/data}
what=${1:-latency}
shift || true
export GST_PLUGIN_PATH_1_0="$build/gst-plugin"
export GST_REGISTRY="$build/tests/element/live-wer.registry"

# The transcripts published with the clips (../shared/data/README.md).
jfk="And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."
left="He began a confused complaint against the wizard, who had vanished behind the curtain on the left."
right="The horizon seems extremely distant."

run() {  # label, live-wer arguments: one line, or a note when it took over 120 s
  local label=$1
  shift
  timeout 120 "$tool" "$@" | sed "s/^/$label /" \
    || echo "$label $* : no result within 120 s (exit $?)"
}

clips() {  # runs live-wer on every clip with the given options
  run "jfk      " "$@" -r "$jfk" "$data/jfk.wav"
  run "stereo-L " "$@" -c 0 -r "$left" "$data/stereo_diarization.wav"
  run "stereo-R " "$@" -c 1 -r "$right" "$data/stereo_diarization.wav"
}

case $what in
  latency)
    for l in 1000 1500 2000 3000 4000 8000; do clips --paced -l "$l" "$@"; done ;;
  encoder-context)
    # Below 50 frames jfk.wav alone takes minutes (a call per 20-ms window).
    for e in 1 10 25; do run "jfk      " --paced -l 8000 -e "$e" "$@" -r "$jfk" "$data/jfk.wav"; done
    for e in 50 100 150 200 250 375 500 750 1000 1500; do
      clips --paced -l 8000 -e "$e" "$@"
    done ;;
  real-time)
    for l in 1000 1500 2000 3000 4000 8000; do
      run "jfk      " -l "$l" "$@" -r "$jfk" "$data/jfk.wav"
    done ;;
  *) echo "usage: live-wer.sh [latency|encoder-context|real-time] [options]" >&2; exit 2 ;;
esac
