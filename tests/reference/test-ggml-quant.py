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
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ggml_files import isas, sha256, words  # noqa: E402
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
        f16 = os.path.join(tmp, "f16.bin")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "ct2-to-ggml.py"), model_dir, f16],
                       check=True)
        for kind in KINDS:
            path = os.path.join(tmp, f"{kind}.bin")
            subprocess.run([sys.executable, os.path.join(ROOT, "tools", "ggml-quantize.py"), f16, path,
                            kind], check=True)
            if sha256(path) != fixture["files"][kind]["sha256"]:
                failures.append(f"{kind}: tools/ggml-quantize.py wrote another file than the fixture's")
            if words(fixture["files"][kind]["whisper_cpp"]) != want:
                failures.append(f"{kind}: the fixture's whisper.cpp text is not the float16 text")
            for isa in isas():
                env = dict(os.environ, WHISPER_CPU_QBLOCK=isa)
                out = subprocess.run([transcribe, "-m", path, "-f", "text", "-b", "1", "-t", "2", clip],
                                     env=env, capture_output=True, text=True)
                got = out.stdout.strip()
                status = "ok" if out.returncode == 0 and words(got) == want else "FAIL"
                print(f"{status} engine {kind} {isa}: {got!r} {out.stderr.strip()[-300:]}")
                if status != "ok":
                    failures.append(f"engine {kind} {isa}")
            try:
                from pywhispercpp.model import Model
            except ImportError:
                print("# pywhispercpp is not installed: whisper.cpp's texts are the fixture's only")
                continue
            model = Model(path, n_threads=2, print_progress=False, print_realtime=False)
            got = "".join(s.text for s in model.transcribe(clip, greedy={"best_of": 1},
                                                           temperature=0.0))
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
