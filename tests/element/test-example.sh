#!/usr/bin/env bash
# Runs the example application (gst-plugin/example) on real speech and checks
# that the text arrives both through the appsink and on the bus.
# Usage: test-example.sh WHISPER_EXAMPLE AUDIO_FILE
set -euo pipefail
example="$1"
audio="$2"
out=$("$example" "$audio")
echo "$out"
grep -q '^appsink .*ask not what your country can do for you' <<<"$out"
grep -q '^bus .*segment .* final .*ask not what your country can do for you' <<<"$out"
# words: the same text, one item per word
words=$("$example" --words "$audio")
grep -q '^appsink .* country$' <<<"$words"
grep -q '^bus .* word .* tentative Americans' <<<"$words"
echo "example: OK"
