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
import json
import os
import platform
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ggml_files import faster_whisper_text, make_files, sha256, whisper_cpp_text  # noqa: E402
ROOT = os.path.dirname(os.path.dirname(HERE))
KINDS = ("q4_K", "q5_K", "q6_K")
import ggml_kquant_check  # noqa: E402


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
        files = make_files(args.model, tmp, "base", KINDS)
        fixture = {
            "made_by": "tests/reference/make-ggml-kquant-reference.py",
            "model": "base",
            "faster_whisper": faster_whisper.__version__,
            "pywhispercpp": version("pywhispercpp"),
            "machine": platform.processor() or platform.machine(),
            "clip": "jfk.wav",
            "float16": faster_whisper_text(args.model, args.clip, "en"),
            "files": {},
        }
        for kind in KINDS:
            differ = ggml_kquant_check.tensors_unlike_ggml(files["f16"], files[kind], kind)
            fixture["files"][kind] = {
                "sha256": sha256(files[kind]),
                "whisper_cpp": whisper_cpp_text(files[kind], args.clip, "en"),
                "tensors_unlike_ggml_quantize_chunk": differ,
            }
    out = os.path.join(args.out, "ggml-kquant.json")
    with open(out, "w") as f:
        json.dump(fixture, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
