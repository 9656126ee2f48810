#!/bin/sh
# fleet-scaling.sh: whispersink device=remote on file input against fleets
# of 1, 2, 4, ... SERVERS stand-in servers (tests/remote/fleet-server.py:
# SERVICE seconds per request, one at a time, no model), server-requests =
# servers: prints time against the ideal (service time x pieces / servers +
# one service time). With --check it also runs the equality, speed and
# kill checks of test-fleet on the largest fleet.
#
# Usage: tests/remote/fleet-scaling.sh [BUILD_DIR] [MINUTES] [SERVERS] [SERVICE] [--check]
# (MIN_SERVERS=K in the environment starts the curve at K servers;
# REF_SERVICE=S gives the one-at-a-time reference run of --check a shorter
# service time: its text does not depend on it)
# Defaults: build 60 16 2.0
set -e
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
minutes=${2:-60}
servers=${3:-16}
service=${4:-2.0}
export GST_PLUGIN_PATH_1_0="$build/gst-plugin"
export GST_REGISTRY="$build/tests/remote/test-fleet.registry"
export WHISPER_SOURCE_ROOT="$src"
export WHISPER_SHARED_DATA="${WHISPER_SHARED_DATA:-$src/../shared/data}"
[ -d "$WHISPER_SHARED_DATA" ] || WHISPER_SHARED_DATA=/work/shared/data
echo "machine: $(lscpu | grep 'Model name' | sed 's/.*: *//'), $(nproc) cores"
"$build/tests/remote/test-fleet" --minutes "$minutes" --servers "$servers" \
  --service "$service" --min-servers "${MIN_SERVERS:-1}" --case scaling
if [ "$5" = "--check" ]; then
  "$build/tests/remote/test-fleet" --minutes "$minutes" --servers "$servers" \
    --service "$service" --ref-service "${REF_SERVICE:-$service}" --slack 0 --max-ratio 1.3 --case parallel --case kill
fi
