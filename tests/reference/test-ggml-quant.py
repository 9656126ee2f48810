#!/usr/bin/env python3
"""tiny.en as q8_0 and q5_0 whisper.cpp files transcribes jfk.wav to the
float16 text, in this engine and in whisper.cpp.

Rebuilds the files (tools/ct2-to-ggml.py, tools/ggml-quantize.py) and checks
their SHA-256 against fixtures/ggml-quant.json (make-ggml-quant-reference.py):
the files are the very ones whisper.cpp transcribed there. Then the engine
(whisper-transcribe, greedy, every block kernel set this CPU has:
WHISPER_CPU_QBLOCK) must give faster-whisper's float16 text, as the
fixture's whisper.cpp runs did; where pywhispercpp is installed, whisper.cpp
runs again here. Texts compare by their letters and digits (whisper.cpp
joins segments without a space and ends with a period).

Usage: test-ggml-quant.py WHISPER_TRANSCRIBE
"""

import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ggml_files import check_file, make_files, whisper_cpp_text, words  # noqa: E402
ROOT = os.environ.get("WHISPER_SOURCE_ROOT", os.path.dirname(os.path.dirname(HERE)))
KINDS = ("q8_0", "q5_0")


def main():
    transcribe = sys.argv[1]
    with open(os.path.join(HERE, "fixtures", "ggml-quant.json")) as f:
        fixture = json.load(f)
    want = words(fixture["float16"])
    model_dir = os.environ.get("WHISPER_MODEL") or os.path.expanduser(
        "~/.local/share/gst-whisper/models/tiny.en")
    clip = os.path.join(os.environ.get("WHISPER_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data")),
                        "jfk.wav")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        files = make_files(model_dir, tmp, "tiny.en", KINDS)
        for kind in KINDS:
            path = files[kind]
            check_file(fixture, kind, path, transcribe, clip, [], failures)
            try:
                import pywhispercpp  # noqa: F401  (only whether it is there)
            except ImportError:
                print("# pywhispercpp is not installed: whisper.cpp's texts are the fixture's only")
                continue
            got = whisper_cpp_text(path, clip)
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
