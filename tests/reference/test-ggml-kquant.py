#!/usr/bin/env python3
"""base as q4_K, q5_K and q6_K whisper.cpp files transcribes jfk.wav to the
float16 text, in this engine and in whisper.cpp.

Rebuilds the files (tools/ct2-to-ggml.py, tools/ggml-quantize.py) and checks
their SHA-256 against fixtures/ggml-kquant.json (make-ggml-kquant-reference.py):
the files are the very ones whisper.cpp transcribed there. Then the engine
(whisper-transcribe, greedy, English, every block kernel set this CPU has:
WHISPER_CPU_QBLOCK) must give faster-whisper's float16 text, as the
fixture's whisper.cpp runs did. Where pywhispercpp is installed, its
libggml-base checks that every quantized tensor is what ggml's own
quantizer (ggml_quantize_chunk) writes and that tools/ggml-quantize.py's
numpy decoder gives ggml's dequantize_row_* values, and whisper.cpp runs
again. Texts compare by their letters and digits. Skips (77) without the
base model (tools/fetch-model.sh base).

Usage: test-ggml-kquant.py WHISPER_TRANSCRIBE
"""

import importlib.util
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ggml_files import check_file, make_files, whisper_cpp_text, words  # noqa: E402
ROOT = os.environ.get("WHISPER_SOURCE_ROOT", os.path.dirname(os.path.dirname(HERE)))
KINDS = ("q4_K", "q5_K", "q6_K")
import ggml_kquant_check as check  # noqa: E402


def quantizer():
    spec = importlib.util.spec_from_file_location("ggml_quantize",
                                                  os.path.join(ROOT, "tools", "ggml-quantize.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    transcribe = sys.argv[1]
    with open(os.path.join(HERE, "fixtures", "ggml-kquant.json")) as f:
        fixture = json.load(f)
    want = words(fixture["float16"])
    models = os.path.dirname(os.environ.get("WHISPER_MODEL") or os.path.expanduser(
        "~/.local/share/gst-whisper/models/tiny.en"))
    model_dir = os.path.join(models, "base")
    if not os.path.exists(os.path.join(model_dir, "model.bin")):
        print(f"# SKIP: no base model in {model_dir} (tools/fetch-model.sh base)")
        return 77
    clip = os.path.join(os.environ.get("WHISPER_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data")),
                        "jfk.wav")
    lib = check.ggml_library()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        files = make_files(model_dir, tmp, "base", KINDS)
        f16 = files["f16"]
        for kind in KINDS:
            path = files[kind]
            check_file(fixture, kind, path, transcribe, clip, ["-l", "en"], failures)
            if lib is None:
                print("# pywhispercpp is not installed: ggml's quantizer and whisper.cpp's texts "
                      "are the fixture's only")
                continue
            differ = check.tensors_unlike_ggml(f16, path, kind)
            print(f"{'ok' if not differ else 'FAIL'} {kind}: tensors unlike ggml_quantize_chunk's: "
                  f"{differ}")
            if differ:
                failures.append(f"{kind}: {len(differ)} tensors unlike ggml's quantizer")
            ours = quantizer()
            worst = 0.0
            for name, ttype, _, payload in check.records(path):
                if ttype == check.GGML_TYPE[kind]:
                    a = ours.dequantize_k(kind, payload)
                    b = check.ggml_dequantize(lib, kind, payload).astype(np.float64)
                    worst = max(worst, float(np.max(np.abs(a - b) / (np.abs(b) + 1e-3))))
            print(f"{'ok' if worst <= 1e-6 else 'FAIL'} {kind}: numpy decoder vs ggml's "
                  f"dequantize_row_{kind}: {worst:g} at most (relative)")
            if worst > 1e-6:
                failures.append(f"{kind}: numpy decoder unlike ggml's")
            got = whisper_cpp_text(path, clip, "en")
            status = "ok" if words(got) == want else "FAIL"
            print(f"{status} whisper.cpp {kind}: {got!r}")
            if status != "ok":
                failures.append(f"whisper.cpp {kind}")
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
