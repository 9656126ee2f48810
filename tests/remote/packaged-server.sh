#!/bin/sh
# tests/remote/packaged-server.sh: whispersink device=remote against a
# transcription server packaged on PyPI, faster-whisper-server 0.0.3
# (https://pypi.org/project/faster-whisper-server/), on this machine's CPU
# with the local tiny.en model: a file (gst-launch-1.0) and live input
# (test-remote-stream's `external` mode: without and with server-stream).
# Not in CI (it installs from PyPI). What differs from the OpenAI API is
# in docs/element.md, "Servers".
#
# Usage: tests/remote/packaged-server.sh [BUILD_DIR] [VENV_DIR]
#   BUILD_DIR: the meson build directory (default build)
#   VENV_DIR: a virtual environment to install the server into (default
#     /tmp/fws-venv; made with --system-site-packages, so that the
#     faster-whisper of tools/install-deps.sh is used)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
venv=${2:-/tmp/fws-venv}
model=${WHISPER_MODEL:-${XDG_DATA_HOME:-$HOME/.local/share}/gst-whisper/models/tiny.en}
jfk=${WHISPER_SHARED_DATA:-$root/../shared/data}/jfk.wav
port=${PORT:-18765}

[ -d "$model" ] || { echo "no model at $model (tools/fetch-model.sh)"; exit 1; }
[ -f "$jfk" ] || { echo "no $jfk"; exit 1; }
if [ ! -x "$venv/bin/faster-whisper-server" ]; then
  python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q faster-whisper-server==0.0.3
fi

"$venv/bin/faster-whisper-server" "$model" --host 127.0.0.1 --port "$port" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
i=0
until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do
  i=$((i + 1))
  [ $i -le 60 ] || { echo "faster-whisper-server did not answer /health in 60 s"; exit 1; }
  sleep 1
done

export GST_PLUGIN_PATH_1_0="$build/gst-plugin" GST_REGISTRY="$build/packaged-server.registry"
export WHISPER_SOURCE_ROOT="$root" WHISPER_SHARED_DATA="$(dirname "$jfk")" no_proxy=127.0.0.1

echo "== file, output=segments, then output=words (the server gives no word timestamps)"
for out in segments words; do
  gst-launch-1.0 -m filesrc location="$jfk" ! decodebin ! audioconvert ! audioresample ! \
    whispersink device=remote server-url="http://127.0.0.1:$port" output=$out ! fakesink \
    2>&1 | grep -o 'whisper-text, text=(string)[^,]*\|WARNING.*\|ERROR.*' || true
done

echo "== live (real time), without and with server-stream"
"$build/tests/remote/test-remote-stream" external "$port"
