#!/usr/bin/env python3
"""Makes the VAD reference afresh (make-vad-reference.py, faster-whisper's
own VAD) and compares it with the committed tests/vad/reference/vad-reference.json:
the same signals with the same samples (SHA-256), identical speech regions
for every option set, probabilities within 1e-6 (another onnxruntime build
may round differently). Keeps the committed file honest: a change of the
script, of a clip or of faster-whisper shows here.

Usage: test-vad-reference-recompute.py SOURCE_ROOT WHISPER_TRANSCRIBE.
Skips (77) where faster_whisper or onnxruntime is not installed.
"""

import json
import os
import subprocess
import sys
import tempfile

TOLERANCE = 1e-6


def main():
    root, transcribe = sys.argv[1], sys.argv[2]
    try:
        import faster_whisper  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as e:
        print(f"SKIP: {e} (tools/install-deps.sh installs faster-whisper)")
        return 77
    committed_path = os.path.join(root, "tests", "vad", "reference", "vad-reference.json")
    with open(committed_path) as f:
        committed = json.load(f)
    with tempfile.TemporaryDirectory() as tmp:
        res = subprocess.run([sys.executable, os.path.join(root, "tests", "vad", "make-vad-reference.py"),
                              "--transcribe-bin", transcribe, "--out", tmp],
                             capture_output=True, text=True)
        if res.returncode != 0:
            print(f"FAIL: make-vad-reference.py failed ({res.returncode}):\n{res.stderr}")
            return 1
        with open(os.path.join(tmp, "vad-reference.json")) as f:
            fresh = json.load(f)

    failures = 0
    if fresh["option_sets"] != committed["option_sets"]:
        print("FAIL: the option sets differ")
        failures += 1
    old = {s["name"]: s for s in committed["signals"]}
    new = {s["name"]: s for s in fresh["signals"]}
    if sorted(old) != sorted(new):
        print(f"FAIL: signals differ: committed {sorted(old)}, fresh {sorted(new)}")
        failures += 1
    for name in sorted(set(old) & set(new)):
        a, b = old[name], new[name]
        if (a["n_samples"], a["pcm_sha256"]) != (b["n_samples"], b["pcm_sha256"]):
            print(f"FAIL: {name}: samples differ")
            failures += 1
            continue
        if a["speech"] != b["speech"]:
            print(f"FAIL: {name}: speech regions differ")
            failures += 1
        if ("probabilities" in a) != ("probabilities" in b):
            print(f"FAIL: {name}: probabilities stored in one file only")
            failures += 1
        elif "probabilities" in a:
            pa, pb = a["probabilities"], b["probabilities"]
            diff = max((abs(x - y) for x, y in zip(pa, pb)), default=0.0)
            if len(pa) != len(pb) or diff > TOLERANCE:
                print(f"FAIL: {name}: probabilities differ ({len(pa)} vs {len(pb)}, "
                      f"max |diff| {diff:.3g})")
                failures += 1
        print(f"{name}: compared")
    print("PASS" if failures == 0 else f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
