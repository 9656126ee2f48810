#!/usr/bin/env python3
"""make-long-reference.py: long English recordings with a reference text,
for word error rates over many windows (issue 40: int8 against exact).

    python3 tools/make-long-reference.py [--out DIR] [--seed N]

Writes, per half of tests/live-eval/make-set.py's English set (dev,
held-out), DIR/long-HALF.wav (16 kHz mono s16, 4 to 5 minutes), its
reference DIR/long-HALF.txt (the clips' texts in programme order, one a
line) and DIR/long-HALF.tsv (make-set.py's manifest: name, voice, first
sample, end sample, text). Default DIR: build/long-reference.

A half is its programme as make-set.py builds it (seed N), followed by the
same half rendered again: the same sentences, each spoken by the next
voice of the half's list, at other speech rates, in another order, with
other pauses and beds (make-set.py's build () with seed N + 1000 and the
half's sentence list rotated by one), and its real read speech again. The
halves share no sentence and no voice (make-set.py's split), so a rule
chosen on the dev half can be checked on the held-out one. Everything is
seeded: the same script and seed give the same samples.

Needs what make-set.py needs (espeak-ng, flite, sox, numpy).
"""
import argparse
import importlib.util
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAKE_SET = os.path.join(ROOT, "tests", "live-eval", "make-set.py")
SECOND_PASS = 1000   # seed offset of the second rendering


def load_make_set():
    spec = importlib.util.spec_from_file_location("make_set", MAKE_SET)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def long_half(ms, half, seed, tmp):
    """Samples and manifest lines of one half: both renderings."""
    first_x, first_lines = ms.build("en", half, seed, tmp)
    split = ms.split_sentences
    try:
        def rotated(lang, _seed):
            s = split(lang, seed)
            return {h: v[1:] + v[:1] for h, v in s.items()}
        ms.split_sentences = rotated
        second_x, second_lines = ms.build("en", half, seed + SECOND_PASS, tmp)
    finally:
        ms.split_sentences = split
    offset = len(first_x)
    lines = list(first_lines)
    for line in second_lines:
        name, voice, start, end, text = line.split("\t", 4)
        lines.append(f"{name}b\t{voice}\t{int(start) + offset}\t{int(end) + offset}\t{text}")
    return ms.np.concatenate([first_x, second_x]), lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "long-reference"))
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    ms = load_make_set()
    if ms.np is None:
        sys.exit("make-long-reference: needs numpy (pip install numpy)")
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for half in ms.HALVES:
            x, lines = long_half(ms, half, a.seed, tmp)
            base = os.path.join(a.out, f"long-{half}")
            ms.write_wav(base + ".wav", x)
            with open(base + ".tsv", "w") as f:
                f.write("\n".join(lines) + "\n")
            with open(base + ".txt", "w") as f:
                f.write("\n".join(line.split("\t", 4)[4] for line in lines) + "\n")
            print(f"make-long-reference: {base}.wav ({len(x) / ms.RATE:.1f} s, {len(lines)} clips)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
