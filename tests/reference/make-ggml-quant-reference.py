#!/usr/bin/env python3
"""Computes the ggml block-type fixture of tests/reference/ (ggml-quant.json).

The default model (tiny.en, CTranslate2 float16) is converted to a whisper.cpp
f16 file by tools/ct2-to-ggml.py and quantized to q8_0 and q5_0 by
tools/ggml-quantize.py. Then jfk.wav is transcribed greedily (temperature 0,
one candidate) by:
  - faster-whisper (CTranslate2, compute_type "float32", one thread) on the
    float16 CTranslate2 model: "float16", the text every file must give;
  - whisper.cpp through pywhispercpp (PyPI) on the f16, q8_0 and q5_0 files.

Writes --out/ggml-quant.json: provenance, each file's SHA-256 (the test
rebuilds the files and checks they are the very files whisper.cpp read), and
the texts.

Usage:
  python3 tests/reference/make-ggml-quant-reference.py --out tests/reference/fixtures
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
KINDS = ("q8_0", "q5_0")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=os.path.expanduser(
        "~/.local/share/gst-whisper/models/tiny.en"))
    parser.add_argument("--clip", default=os.path.join(ROOT, "..", "shared", "data", "jfk.wav"))
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import faster_whisper
    import pywhispercpp
    from importlib.metadata import version
    with tempfile.TemporaryDirectory() as tmp:
        files = make_files(args.model, tmp, "tiny.en", KINDS)
        fixture = {
            "made_by": "tests/reference/make-ggml-quant-reference.py",
            "faster_whisper": faster_whisper.__version__,
            "pywhispercpp": version("pywhispercpp"),
            "machine": platform.processor() or platform.machine(),
            "clip": "jfk.wav",
            "float16": faster_whisper_text(args.model, args.clip),
            "files": {name: {"sha256": sha256(path),
                             "whisper_cpp": whisper_cpp_text(path, args.clip)}
                      for name, path in files.items()},
        }
    out = os.path.join(args.out, "ggml-quant.json")
    with open(out, "w") as f:
        json.dump(fixture, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
