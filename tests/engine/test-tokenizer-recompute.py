#!/usr/bin/env python3
"""The tokenizer fixture is what faster-whisper computes, and the engine's
encoder agrees with faster-whisper beyond the fixture's strings.

1. Reruns tests/reference/make-tokenizer-reference.py into a temporary file
   and compares it with tests/engine/fixtures/tokenizer-reference.json
   (everything but the Python version of the provenance).
2. Encodes random strings (fixed seed: letters, digits, punctuation,
   contractions, every kind of space, CJK, emoji, combining marks, random
   code points) with the engine (bpe-encode) and with faster-whisper's
   Tokenizer, on tiny.en and base, and compares the ids. Strings holding a
   code point GLib's Unicode tables do not know (g_unichar_type() says
   unassigned) are left out: the Hugging Face tokenizer's tables may be of
   a newer Unicode version, which classes such a character as a letter
   where the engine sees "other" (a pre-tokenizer difference, not a BPE
   one).

Skips (exit 77) when faster_whisper or tokenizers cannot be imported.

Usage: test-tokenizer-recompute.py BPE_ENCODE_BINARY
"""

import ctypes
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("WHISPER_SOURCE_ROOT") or os.path.normpath(
    os.path.join(HERE, "..", ".."))
FIXTURE = os.path.join(SOURCE_ROOT, "tests", "engine", "fixtures", "tokenizer-reference.json")
GENERATOR = os.path.join(SOURCE_ROOT, "tests", "reference", "make-tokenizer-reference.py")
MODELS_DIR = os.path.join(os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"),
                          "gst-whisper", "models")
N_RANDOM = 3000
SEED = 20261202

PARTS = [" ", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u0085", "\u000b", "\u2028",
         "'", "'s", "'t", "'re", "'ll", "'d", "'m", "'ve", "'S", "a", "the", "The", "ing", "tion",
         "Q", "é", "ß", "Ü", "ñ", "ç", "ø", "1", "23", "456", "0", "½", "²", "Ⅻ", "٣", "!", "?",
         ".", ",", ";", "-", "--", "(", ")", "[", "]", "\"", "#", "@", "$", "%", "&", "*", "/",
         "\\", "_", "~", "`", "^", "|", "<", ">", "你", "好", "世界", "日本", "カ", "ひ", "한",
         "국", "При", "вет", "ا", "ل", "ש", "न", "्", "ท", "Γ", "ά", "😀", "🎵", "👍🏽", "\u200d",
         "♪", "♫", "「", "」", "\u0301", "\u200b", "\u00ad", "\u0007", "hello", "ComfyUI",
         "GStreamer", "http://", "www.", ".com", "don", "can"]
RANGES = [(0x20, 0x7E), (0xA0, 0x2FFF), (0x3000, 0x9FFF), (0xAC00, 0xD7A3), (0x1F300, 0x1FAFF),
          (0x10000, 0x2FFFF)]


def random_strings(rng, glib):
    out = []
    while len(out) < N_RANDOM:
        if rng.random() < 0.8:
            s = "".join(rng.choice(PARTS) for _ in range(rng.randint(0, 30)))
        else:
            chars = []
            for _ in range(rng.randint(1, 20)):
                lo, hi = rng.choice(RANGES)
                chars.append(chr(rng.randint(lo, hi)))
            s = "".join(c for c in chars if not 0xD800 <= ord(c) <= 0xDFFF)
        if "<|" in s:  # the Hugging Face tokenizer matches special tokens in text
            continue
        if any(glib.g_unichar_type(ord(c)) == 2 for c in s):  # G_UNICODE_UNASSIGNED
            continue
        out.append(s)
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    bpe_encode = sys.argv[1]
    try:
        import tokenizers
        from faster_whisper.tokenizer import Tokenizer
    except ImportError as e:
        print(f"SKIP: faster_whisper / tokenizers not importable: {e}")
        sys.exit(77)

    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        recomputed = os.path.join(tmp, "tokenizer-reference.json")
        subprocess.run([sys.executable, GENERATOR, "--models-dir", MODELS_DIR, "--out", recomputed],
                       check=True)
        with open(recomputed, encoding="utf-8") as f:
            new = json.load(f)
        with open(FIXTURE, encoding="utf-8") as f:
            old = json.load(f)
        for d in (new, old):
            d["provenance"].pop("python", None)
        for key in sorted(set(new) | set(old)):
            if new.get(key) != old.get(key):
                failures.append(f"fixture member {key!r} differs from the recomputed one "
                                f"(regenerate with {os.path.relpath(GENERATOR, SOURCE_ROOT)} "
                                "after checking why)")

        glib = ctypes.CDLL("libglib-2.0.so.0")
        glib.g_unichar_type.restype = ctypes.c_int
        glib.g_unichar_type.argtypes = [ctypes.c_uint32]
        strings = random_strings(random.Random(SEED), glib)
        input_path = os.path.join(tmp, "strings.bin")
        with open(input_path, "wb") as f:
            for s in strings:
                f.write(s.encode("utf-8") + b"\0")
        for name, multilingual in (("tiny.en", False), ("base", True)):
            model = os.path.join(MODELS_DIR, name)
            out_path = os.path.join(tmp, f"ids-{name}.txt")
            subprocess.run([bpe_encode, model, input_path, out_path], check=True)
            with open(out_path, encoding="utf-8") as f:
                lines = f.read().split("\n")[:len(strings)]
            tok = Tokenizer(tokenizers.Tokenizer.from_file(os.path.join(model, "tokenizer.json")),
                            multilingual, task="transcribe", language="en")
            bad = 0
            for s, line in zip(strings, lines):
                want = " ".join(str(i) for i in tok.encode(s))
                if line != want:
                    bad += 1
                    if bad <= 10:
                        print(f"{name}: {s!r}: faster-whisper [{want}], engine [{line}]")
            print(f"{name}: {len(strings)} random strings, {bad} differ")
            if bad:
                failures.append(f"{name}: {bad} of {len(strings)} random strings give other ids "
                                "than faster-whisper (listed above)")
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
