#!/usr/bin/env python3
"""Computes the int8 fixture of tests/reference/ with faster-whisper.

faster-whisper 1.2.1 on CTranslate2 4.8.x (PyPI), on the CPU with
compute_type "int8" and one thread, transcribe() with make-reference.py's
greedy options (TRANSCRIBE_OPTIONS) on every parity clip of
make-reference.py, twice:
  - "float16": the default model (tiny.en, float16 CTranslate2 directory),
    quantized by CTranslate2 at load (what precision=int8 must track);
  - "int8": the same model quantized to an int8 directory by
    tools/ct2-quantize.py (what the engine must load as stored).

The samples come from the engine's own decoder, as in make-reference.py:

    whisper-transcribe [--channel N] --dump-pcm OUT.f32 CLIP

Writes --out/int8.json: provenance, the options, and per model and clip its
PCM checksum and segments (start, end, text, tokens).

Usage:
  python3 tests/reference/make-int8-reference.py \\
      --transcribe-bin build/engine/cli/whisper-transcribe --out tests/reference/fixtures
"""

import argparse
import hashlib
import importlib.util
import os
import platform
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MR = load_module("make_reference", os.path.join(HERE, "make-reference.py"))
QUANTIZE = os.path.join(MR.SOURCE_ROOT, "tools", "ct2-quantize.py")


def transcribe(wm, pcm):
    segments, _ = wm.transcribe(pcm, **MR.TRANSCRIBE_OPTIONS)
    return [{"start": float(s.start), "end": float(s.end), "text": s.text,
             "tokens": [int(t) for t in s.tokens]} for s in segments]


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transcribe-bin", default=os.path.join("build", "engine", "cli", "whisper-transcribe"))
    p.add_argument("--out", default=os.path.join(HERE, "fixtures"))
    p.add_argument("--model-dir", default=os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"),
        "gst-whisper", "models", "tiny.en"))
    p.add_argument("--source-root", default=os.environ.get("WHISPER_SOURCE_ROOT", MR.SOURCE_ROOT))
    p.add_argument("--shared-data", default=os.environ.get(
        "WHISPER_SHARED_DATA", os.path.join(MR.SOURCE_ROOT, "..", "shared", "data")))
    args = p.parse_args()
    args.pcm_source = "transcribe"
    if not os.access(args.transcribe_bin, os.X_OK):
        sys.exit(f"make-int8-reference: {args.transcribe_bin} is not an executable "
                 "(build the engine, or pass --transcribe-bin)")

    import ctranslate2
    import faster_whisper
    import numpy as np
    from faster_whisper import WhisperModel

    clips = MR.all_clips()
    with open(os.path.join(args.model_dir, "model.bin"), "rb") as f:
        model_sha = hashlib.sha256(f.read()).hexdigest()
    models = {}
    with tempfile.TemporaryDirectory() as tmp:
        pcms = {name: MR.load_pcm(args, root, rel, ch, tmp) for name, root, rel, ch in clips}
        int8_dir = os.path.join(tmp, "tiny.en-int8")
        subprocess.run([sys.executable, QUANTIZE, args.model_dir, int8_dir], check=True)
        for kind, model_dir in (("float16", args.model_dir), ("int8", int8_dir)):
            wm = WhisperModel(model_dir, device="cpu", compute_type="int8", cpu_threads=1,
                              num_workers=1)
            entries = []
            for name, root, rel, ch in clips:
                segs = transcribe(wm, pcms[name])
                entries.append({"name": name, "root": root, "path": rel, "channel": ch,
                                **MR.pcm_facts(pcms[name]), "segments": segs})
                print(f"make-int8-reference: {kind} {name}: {len(segs)} segments",
                      file=sys.stderr)
            models[kind] = entries

    provenance = {
        "command": shlex.join(["python3", "tests/reference/make-int8-reference.py",
                               "--transcribe-bin", "build/engine/cli/whisper-transcribe",
                               "--out", "tests/reference/fixtures"]),
        "faster_whisper": faster_whisper.__version__,
        "ctranslate2": ctranslate2.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "model": f"Whisper tiny.en, CTranslate2 directory, model.bin sha256 {model_sha}; "
                 "int8: that directory through tools/ct2-quantize.py",
        "model_options": "WhisperModel(path, device='cpu', compute_type='int8', cpu_threads=1)",
        "pcm_source": "whisper-transcribe --dump-pcm (libsndfile + libsamplerate)",
    }
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, "int8.json")
    MR.write_json(out, {"provenance": provenance, "transcribe_options": MR.TRANSCRIBE_OPTIONS,
                        "models": models})
    print(f"make-int8-reference: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
