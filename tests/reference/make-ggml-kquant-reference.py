#!/usr/bin/env python3
"""Computes the ggml k-quant fixture of tests/reference/ (ggml-kquant.json).

The multilingual base model (CTranslate2 float16; tiny's rows of 384 are not
whole 256-value super-blocks) is converted to a whisper.cpp f16 file by
tools/ct2-to-ggml.py and quantized to q4_K, q5_K and q6_K by
tools/ggml-quantize.py. Then jfk.wav is transcribed greedily (temperature 0,
one candidate, English) by:
  - faster-whisper (CTranslate2, compute_type "float32", one thread) on the
    float16 CTranslate2 model: "float16", the text every file must give;
  - whisper.cpp through pywhispercpp (PyPI) on the q4_K, q5_K and q6_K files.
It also records whether every quantized tensor is byte for byte what ggml's
own quantizer writes (ggml_quantize_chunk in pywhispercpp's libggml-base, the
call whisper.cpp's quantize makes: examples/common-ggml.cpp).

Writes --out/ggml-kquant.json: provenance, each file's SHA-256 (the test
rebuilds the files and checks they are the very files whisper.cpp read), and
the texts.

Usage:
  python3 tests/reference/make-ggml-kquant-reference.py --out tests/reference/fixtures
"""

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KINDS = ("q4_K", "q5_K", "q6_K")
sys.path.insert(0, HERE)
import ggml_kquant_check  # noqa: E402


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def make_files(model_dir, tmp):
    files = {"f16": os.path.join(tmp, "base-f16.bin")}
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "ct2-to-ggml.py"), model_dir,
                    files["f16"]], check=True)
    for kind in KINDS:
        files[kind] = os.path.join(tmp, f"base-{kind}.bin")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "ggml-quantize.py"),
                        files["f16"], files[kind], kind], check=True)
    return files


def faster_whisper_text(model_dir, clip):
    from faster_whisper import WhisperModel
    model = WhisperModel(model_dir, device="cpu", compute_type="float32", cpu_threads=1)
    segments, _ = model.transcribe(clip, beam_size=1, best_of=1, temperature=0.0,
                                   language="en", vad_filter=False)
    return "".join(s.text for s in segments)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=os.path.expanduser(
        "~/.local/share/gst-whisper/models/base"))
    parser.add_argument("--clip", default=os.path.join(ROOT, "..", "shared", "data", "jfk.wav"))
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import faster_whisper
    from importlib.metadata import version
    with tempfile.TemporaryDirectory() as tmp:
        files = make_files(args.model, tmp)
        fixture = {
            "made_by": "tests/reference/make-ggml-kquant-reference.py",
            "model": "base",
            "faster_whisper": faster_whisper.__version__,
            "pywhispercpp": version("pywhispercpp"),
            "machine": platform.processor() or platform.machine(),
            "clip": "jfk.wav",
            "float16": faster_whisper_text(args.model, args.clip),
            "files": {},
        }
        for kind in KINDS:
            differ = ggml_kquant_check.tensors_unlike_ggml(files["f16"], files[kind], kind)
            fixture["files"][kind] = {
                "sha256": sha256(files[kind]),
                "whisper_cpp": ggml_kquant_check.whisper_cpp_text(files[kind], args.clip),
                "tensors_unlike_ggml_quantize_chunk": differ,
            }
    out = os.path.join(args.out, "ggml-kquant.json")
    with open(out, "w") as f:
        json.dump(fixture, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
