#!/usr/bin/env bash
# multi-stream.sh: how many live streams of real speech one pipeline of
# whispersink elements holds, engines shared (the default) and independent
# (engine-group=stream-I). For each count of streams it runs
# tests/element/multi-stream.c: N branches appsrc (live, real time) !
# whispersink ! fakesink sync=true, each playing the real-speech programme
# of tests/element/programme.h from a different clip, and prints one row:
# held (no audio dropped, no dropped-audio or excessive-delay warning, no
# overload step taken), audio dropped, warnings, overload steps taken (what
# the elements gave up, overload=degrade), resident memory at its peak and per added stream
# (against the 1-stream run of the same mode), mean and worst WER against
# the published text, and the delay of the text (p50 / p95 / max); then,
# from multi-stream's offline pass (each stream's samples once more through
# a non-live pipeline), the mean WER of the offline text against the
# published text ("off %") and the mean and worst WER of each stream's live
# text against its offline text ("live/off", "worst"), both with numbers
# read (wer_percent_lang "en"); "na" with --no-offline.
# It reports, it does not judge.
#
#   bash tests/element/multi-stream.sh [--counts "1 2 4 8 12 16"] [--modes "shared independent"]
#       [--seconds S] [multi-stream options: --model PATH, --latency MS, --set PROP=VALUE,
#       --no-offline]
#
# BUILD_DIR (default: build, else build-gst) is the meson build directory;
# WHISPER_SHARED_DATA the shared clips (default: ../shared/data); LIBRIVOX
# the LibriVox clips (default: /usr/share/pocketsphinx/test/data/librivox,
# Debian's pocketsphinx-testdata package).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-}
if [ -z "$build" ]; then
  for d in "$root/build" "$root/build-gst"; do
    if [ -x "$d/tests/element/multi-stream" ]; then build=$d; break; fi
  done
fi
if [ -z "$build" ] || [ ! -x "$build/tests/element/multi-stream" ]; then
  echo "multi-stream: build first (meson setup build && ninja -C build), or set BUILD_DIR" >&2
  exit 2
fi
data=${WHISPER_SHARED_DATA:-$root/../shared/data}
librivox=${LIBRIVOX:-/usr/share/pocketsphinx/test/data/librivox}
counts="1 2 4 8 12 16"
modes="shared independent"
seconds=120
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --counts) counts=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done

export GST_PLUGIN_PATH_1_0="$build/gst-plugin"
export GST_REGISTRY="$build/tests/element/multi-stream.registry"
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

printf '%-11s %7s %5s %9s %8s %5s %9s %11s %6s %6s %18s %6s %8s %6s\n' engines streams held \
  "dropped s" "warn d/l" steps "RSS MiB" "MiB/stream" "WER %" "worst" "delay p50/p95/max" \
  "off %" "live/off" "worst"
for mode in $modes; do
  flag=()
  [ "$mode" = independent ] && flag=(--independent)
  base_rss=
  for n in $counts; do
    out=$log/$mode-$n.txt
    "$build/tests/element/multi-stream" --streams "$n" --seconds "$seconds" "${flag[@]}" \
      "${extra[@]}" "$data" "$librivox" >"$out" 2>"$log/$mode-$n.err" || true
    r=$(grep '^RESULT' "$out" || true)
    if [ -z "$r" ]; then
      printf '%-11s %7s  failed: %s\n' "$mode" "$n" "$(tail -1 "$log/$mode-$n.err")"
      continue
    fi
    rss=$(field rss_peak_mib "$r")
    per=-
    if [ "$n" = 1 ]; then base_rss=$rss
    elif [ -n "$base_rss" ]; then per=$(awk -v a="$rss" -v b="$base_rss" -v n="$n" \
        'BEGIN { printf "%.1f", (a - b) / (n - 1) }')
    fi
    printf '%-11s %7s %5s %9s %5s/%-2s %5s %9s %11s %6s %6s %18s %6s %8s %6s\n' "$mode" "$n" \
      "$(field held "$r")" "$(field dropped_s "$r")" "$(field dropped_warnings "$r")" \
      "$(field late_warnings "$r")" "$(field steps_taken "$r")" "$rss" "$per" "$(field wer_mean "$r")" \
      "$(field wer_max "$r")" \
      "$(field p50 "$r")/$(field p95 "$r")/$(field max "$r")" \
      "$(field wer_offline_mean "$r")" "$(field wer_live_offline_mean "$r")" \
      "$(field wer_live_offline_max "$r")"
  done
done
