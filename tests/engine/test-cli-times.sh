#!/usr/bin/env bash
# whisper-transcribe shows segment times within the audio: on jfk.wav cut
# to 10.2 s the model puts the last timestamp at 10.24 s (the JSON output,
# which keeps the engine's values, shows it), and the segment and SRT
# formats must end at 10.200.
#
# Usage: test-cli-times.sh WHISPER_TRANSCRIBE
set -euo pipefail
cli="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sox "${WHISPER_SHARED_DATA:?}/jfk.wav" "$tmp/cut.wav" trim 0 10.2

json=$("$cli" --device cpu --greedy --format json "$tmp/cut.wav")
last_json=$(grep -o '"end": [0-9.]*' <<<"$json" | tail -1 | cut -d' ' -f2)
if ! awk -v e="$last_json" 'BEGIN { exit !(e > 10.2) }'; then
  echo "FAIL: the case does not arise any more: the engine's last end is $last_json s (<= 10.2)"
  exit 1
fi
segments=$("$cli" --device cpu --greedy "$tmp/cut.wav")
srt=$("$cli" --device cpu --greedy --format srt "$tmp/cut.wav")
status=0
grep -q -- '--> 00:00:10.200\]' <<<"$segments" || { echo "FAIL: segments: $segments"; status=1; }
grep -q -- '--> 00:00:10,200$' <<<"$srt" || { echo "FAIL: srt: $srt"; status=1; }
[ $status = 0 ] && echo "ok: the engine ends at $last_json s, the CLI shows 10.200"
exit $status
