#!/usr/bin/env bash
# live-captions.sh: the real-time caption run of issue 42 (not part of the
# suite): 10 minutes (DURATION_S, default 600) of the captions programme
# (tests/captions/make-clips.sh) looped at real time through whispersink,
# cea608enc, cccombiner (29.97 fps) and cc708overlay; see live-captions.py.
#
#   bash tests/captions/live-captions.sh [DURATION_S] [--latency MS] [--model DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build}
duration=${1:-600}
shift || true
data=$build/captions-data
[ -f "$data/programme.wav" ] || bash "$root/tests/captions/make-clips.sh" "$data" >/dev/null
export GST_PLUGIN_PATH_1_0="$build/gst-plugin"
export GST_REGISTRY="$build/tests/captions/live-captions.registry"
exec /usr/bin/python3 "$root/tests/captions/live-captions.py" "$data/programme.wav" "$duration" "$@"
