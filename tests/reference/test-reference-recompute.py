#!/usr/bin/env python3
"""Recomputes the reference fixtures with faster-whisper into a temporary
folder and compares them with the committed ones in fixtures/.

Usage: test-reference-recompute.py [WHISPER_TRANSCRIBE]
(default: $WHISPER_BUILD_ROOT/engine/cli/whisper-transcribe)

Exit 77 (skip) when faster_whisper is not importable. Checks:
  transcripts.json  same clips, same PCM (count and SHA-256), identical
                    tokens and texts in every segment, same tokenizer facts
  mel.json          same cases and shapes; values within 1e-5
  encoder-jfk.*     features within 1e-5, encoder output within 1e-4
The 1e-5 leaves room for another CPU's float32 summation order (numpy's FFT,
CTranslate2's GEMM) while catching any change of method.
"""

import json
import os
import subprocess
import sys
import tempfile

TOLERANCE = 1e-5
# The encoder output runs 4 layers of CTranslate2 GEMMs whose kernels depend
# on the CPU: the fixture made on an AVX-512 machine and recomputed on an
# AVX2-only one differ by 2.4e-5 at most (values up to 11.8), i.e. 2e-6
# relative. A change of method moves it by far more than 1e-4.
ENCODER_OUTPUT_TOLERANCE = 1e-4

HERE = os.path.dirname(os.path.abspath(__file__))

try:
    import faster_whisper  # noqa: F401
    import numpy as np
except ImportError as e:
    print(f"SKIP: faster_whisper is not importable ({e})")
    sys.exit(77)

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def load(folder, name):
    with open(os.path.join(folder, name), encoding="utf-8") as f:
        return json.load(f)


def max_diff(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    d = np.abs(a - b)
    return float(np.nanmax(np.where(np.isnan(d), np.inf, d)))


def compare_mel(new, old):
    newc = {c["name"]: c for c in new["cases"]}
    oldc = {c["name"]: c for c in old["cases"]}
    if sorted(newc) != sorted(oldc):
        fail(f"mel.json: cases {sorted(newc)} vs committed {sorted(oldc)}")
    for name in sorted(set(newc) & set(oldc)):
        a, b = newc[name], oldc[name]
        if a["shape"] != b["shape"] or a["n_samples"] != b["n_samples"]:
            fail(f"mel.json {name}: shape {a['shape']} vs {b['shape']}")
            continue
        for key in ("samples",):
            if (key in a) != (key in b) or (key in a and max_diff(a[key], b[key]) > 0):
                fail(f"mel.json {name}: the input samples differ")
        d = max_diff(a["mel"], b["mel"])
        print(f"mel {name}: max abs difference {d:.3g}")
        if not d <= TOLERANCE:
            fail(f"mel.json {name}: max abs difference {d:.3g} > {TOLERANCE}")
    for fa, fb in zip(new["filters"], old["filters"]):
        d = max_diff(fa["values"], fb["values"])
        print(f"mel filters {fa['n_mels']}: max abs difference {d:.3g}")
        if fa["n_mels"] != fb["n_mels"] or not d <= TOLERANCE:
            fail(f"mel.json filters {fa['n_mels']}/{fb['n_mels']}: max abs difference {d:.3g}")


def compare_encoder(new_dir, old_dir):
    new = load(new_dir, "encoder-jfk.json")
    old = load(old_dir, "encoder-jfk.json")
    if new["clip"]["pcm_sha256"] != old["clip"]["pcm_sha256"]:
        fail("encoder-jfk: the PCM of jfk.wav differs from the committed fixture's")
    for part in ("features", "output"):
        if new[part]["shape"] != old[part]["shape"]:
            fail(f"encoder-jfk {part}: shape {new[part]['shape']} vs {old[part]['shape']}")
            continue
        a = np.fromfile(os.path.join(new_dir, new[part]["file"]), dtype="<f4")
        b = np.fromfile(os.path.join(old_dir, old[part]["file"]), dtype="<f4")
        d = max_diff(a, b)
        tolerance = ENCODER_OUTPUT_TOLERANCE if part == "output" else TOLERANCE
        print(f"encoder-jfk {part}: max abs difference {d:.3g}")
        if not d <= tolerance:
            fail(f"encoder-jfk {part}: max abs difference {d:.3g} > {tolerance}")


def compare_transcripts(new, old):
    if new["tokenizer"] != old["tokenizer"]:
        fail("transcripts.json: tokenizer facts differ")
    if new["transcribe_options"] != old["transcribe_options"]:
        fail("transcripts.json: transcribe options differ")
    newc = {c["name"]: c for c in new["clips"]}
    oldc = {c["name"]: c for c in old["clips"]}
    if list(newc) != list(oldc):
        fail(f"transcripts.json: clips {list(newc)} vs committed {list(oldc)}")
    for name in [n for n in oldc if n in newc]:
        a, b = newc[name], oldc[name]
        for key in ("root", "path", "channel", "n_samples", "pcm_sha256"):
            if a[key] != b[key]:
                fail(f"transcripts.json {name}: {key} {a[key]!r} vs committed {b[key]!r}")
        ta = [t for s in a["segments"] for t in s["tokens"]]
        tb = [t for s in b["segments"] for t in s["tokens"]]
        if ta != tb:
            pos = next((i for i, (x, y) in enumerate(zip(ta, tb)) if x != y), min(len(ta), len(tb)))
            fail(f"transcripts.json {name}: tokens differ at {pos}: "
                 f"{ta[max(pos - 3, 0):pos + 5]} vs committed {tb[max(pos - 3, 0):pos + 5]}")
            continue
        sa = [(s["tokens"], s["text"]) for s in a["segments"]]
        sb = [(s["tokens"], s["text"]) for s in b["segments"]]
        if sa != sb:
            fail(f"transcripts.json {name}: same tokens, other segments or texts")
        print(f"transcripts {name}: {len(ta)} tokens identical")


def main():
    build_root = os.environ.get("WHISPER_BUILD_ROOT", os.path.join(HERE, "..", "..", "build"))
    transcribe = sys.argv[1] if len(sys.argv) > 1 else os.path.join(build_root, "engine", "cli",
                                                                     "whisper-transcribe")
    committed = os.path.join(HERE, "fixtures")
    for name in ("mel.json", "encoder-jfk.json", "transcripts.json"):
        if not os.path.exists(os.path.join(committed, name)):
            print(f"FAIL: committed fixture {name} is missing")
            return 1

    with tempfile.TemporaryDirectory(prefix="whisper-fixtures-") as tmp:
        cmd = [sys.executable, os.path.join(HERE, "make-reference.py"),
               "--transcribe-bin", transcribe, "--out", tmp]
        print("running:", " ".join(cmd), flush=True)
        res = subprocess.run(cmd)
        if res.returncode != 0:
            print(f"FAIL: make-reference.py exited with {res.returncode}")
            return 1
        prov_new = load(tmp, "transcripts.json")["provenance"]
        prov_old = load(committed, "transcripts.json")["provenance"]
        for key in ("faster_whisper", "ctranslate2", "numpy", "model"):
            if prov_new.get(key) != prov_old.get(key):
                print(f"note: {key} is {prov_new.get(key)!r} here, "
                      f"the fixtures were made with {prov_old.get(key)!r}")
        compare_mel(load(tmp, "mel.json"), load(committed, "mel.json"))
        compare_encoder(tmp, committed)
        compare_transcripts(load(tmp, "transcripts.json"), load(committed, "transcripts.json"))

    if failures:
        print(f"{len(failures)} difference(s) from the committed fixtures")
        return 1
    print("the committed fixtures match a fresh computation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
