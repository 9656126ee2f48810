#!/usr/bin/env python3
"""Computes tests/engine/fixtures/tokenizer-reference.json with faster-whisper.

The reference is faster-whisper's Tokenizer (the Hugging Face `tokenizers`
package on the model's tokenizer.json: the GPT-2 byte-level pre-tokenizer
and BPE merges), on two models: tiny.en (the English-only GPT-2 vocabulary)
and base (the multilingual vocabulary). For a fixed list of strings it
records the token ids of each model (what tests/engine/test-bpe.c compares
the engine's encoder with), each model's non_speech_tokens (OpenAI's
derivation, https://github.com/openai/whisper/blob/main/whisper/tokenizer.py),
faster-whisper's _LANGUAGE_CODES, and the language codes in token order as
the base vocabulary holds them (<|code|> at sot + 1 + i), for
tests/engine/test-languages.c.

Usage:
  python3 tests/reference/make-tokenizer-reference.py \\
      [--models-dir DIR] [--out tests/engine/fixtures/tokenizer-reference.json]

DIR defaults to $XDG_DATA_HOME/gst-whisper/models (~/.local/share/...), which
must hold tiny.en and base (CTranslate2 directories with tokenizer.json).
The output is deterministic (no dates).
"""

import argparse
import hashlib
import json
import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
DEFAULT_OUT = os.path.join(SOURCE_ROOT, "tests", "engine", "fixtures", "tokenizer-reference.json")

MODELS = [("tiny.en", False), ("base", True)]

# A paragraph of hotwords-like text, repeated to a few KB.
_LONG_ENGLISH = ("GStreamer, whispersink and ComfyUI: it's the pipeline they'll run "
                 "at 48000 Hz, 2 channels (don't ask). ") * 40
_LONG_CHINESE = "我们今天讨论语音识别模型的性能和准确率以及实时字幕的延迟" * 40

STRINGS = [
    # empty and whitespace only
    "",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n",
    " \n ",
    "\r\n",
    "\t\tindented",
    "trailing space ",
    "trailing spaces   ",
    "  leading spaces",
    "multiple   spaces   inside",
    "tab\tseparated\tvalues",
    "line one\nline two\n",
    "space before newline \nnext",
    # English and contractions
    "Hello world",
    " Hello world",
    "Hello, world!",
    "I'm here and I've been waiting.",
    "don't won't can't shouldn't",
    "they'll we'd you're she's it's",
    "I'M SHOUTING, DON'T",
    "'s 't 're 've 'm 'll 'd",
    "rock'n'roll",
    "''quoted'' and 'single'",
    "the dog's bone's",
    # digits and numbers
    "1234567890",
    "3.14159265358979",
    " 2024-12-02 at 01:30",
    "1,000,000 people",
    "99 bottles, 100 bottles, 101",
    "12345678901234567890123456789012345678901234567890",
    # punctuation
    "...!!!???",
    "Wait... what?!",
    " -- hyphens --- and (brackets) [like] {these}",
    "<< >> <<< >>> ((( ))) [[ ]] {{ }}",
    "email@example.com #hashtag $100 50% a&b *star*",
    "\"double quotes\" and `backticks`",
    # URLs and names
    "https://github.com/openai/whisper/blob/main/whisper/tokenizer.py",
    "www.example.org/path?query=1&x=y#frag",
    " ComfyUI",
    "ComfyUI",
    " GStreamer whispersink",
    # faster-whisper's prompt and hotwords strings: " " + text.strip()
    " " + "Glossary: ComfyUI, GStreamer, CTranslate2.".strip(),
    " " + "  Kubernetes, PyTorch, CUDA  ".strip(),
    # German, French, Spanish, Nordic
    "Grüße aus München, die Straße ist schön.",
    "Fußgängerübergänge über Äcker und Öfen",
    "Ça va? Où est la bibliothèque? Très bien, garçon.",
    "L'été dernier, j'ai mangé des crêpes.",
    "¿Dónde está el niño? ¡Mañana!",
    "Smørrebrød på Ærø, Åland",
    # other scripts
    "你好，世界！",
    "我们今天讨论语音识别。",
    "日本語のテキストです。カタカナとひらがな。",
    "안녕하세요, 세계!",
    "Привет, мир! Как дела?",
    "Съешь же ещё этих мягких французских булок",
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    "Γειά σου Κόσμε",
    # emoji and symbols
    "😀",
    "I love 🎵 music 🎶🎸!",
    "👍🏽 thumbs",
    "👨‍👩‍👧‍👦 family",
    "♪♪ la la ♪♪♪",
    "♩♪♫♬♭♮♯",
    "「引用」と『二重』",
    "°C ± € £ ¥ ©®™",
    # mixed scripts
    "Hello世界123abc",
    "abc123def",
    "Zürich2024東京",
    "x²+y²=z² and ½ ¾",
    "Ⅻ chapters",
    # Unicode spaces, marks and controls
    "non\u00a0breaking\u00a0space",
    "ideographic\u3000space",
    "vertical\u000btab",
    "next\u0085line",
    "e\u0301 combining acute",
    "zero\u200bwidth",
    "soft\u00adhyphen",
    "bell\u0007char",
    # repeats: equal-rank pairs overlap, the leftmost merges first
    "rewww awwww hmmmm zzzzzz ooooooh Noooo! Ahhhhh heeeey",
    "!!!!!!! ????? ...... ------ ====== ****** ~~~~~~ ______",
    "ababab hahahaha lololol 1111111 0000000 xoxoxo",
    # long inputs (one long pre-token each for the last two)
    _LONG_ENGLISH,
    _LONG_CHINESE,
    "a" * 3000,
    "1" * 1000,
]


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models-dir", default=os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"),
        "gst-whisper", "models"))
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()

    import faster_whisper
    import tokenizers
    from faster_whisper.tokenizer import Tokenizer, _LANGUAGE_CODES

    out = {
        "provenance": {
            "generator": "tests/reference/make-tokenizer-reference.py",
            "command": "python3 tests/reference/make-tokenizer-reference.py",
            "reference": "faster_whisper.tokenizer.Tokenizer.encode (Hugging Face tokenizers, "
                         "tokenizer.json merges)",
            "faster_whisper": faster_whisper.__version__,
            "tokenizers": tokenizers.__version__,
            "python": platform.python_version(),
            "models": {},
        },
        "strings": STRINGS,
        "ids": {},
        "non_speech_tokens": {},
        "faster_whisper_language_codes": list(_LANGUAGE_CODES),
    }
    for name, multilingual in MODELS:
        model_dir = os.path.join(args.models_dir, name)
        tokenizer_json = os.path.join(model_dir, "tokenizer.json")
        if not os.path.exists(tokenizer_json):
            sys.exit(f"make-tokenizer-reference: {tokenizer_json} is missing "
                     f"(install the {name} model)")
        files = {"tokenizer.json": sha256_of(tokenizer_json)}
        for vocab in ("vocabulary.txt", "vocabulary.json"):
            if os.path.exists(os.path.join(model_dir, vocab)):
                files[vocab] = sha256_of(os.path.join(model_dir, vocab))
        out["provenance"]["models"][name] = {"sha256": files}

        hf = tokenizers.Tokenizer.from_file(tokenizer_json)
        tok = Tokenizer(hf, multilingual, task="transcribe", language="en")
        ids = []
        for s in STRINGS:
            encoded = tok.encode(s)
            if any(i >= tok.eot for i in encoded):
                sys.exit(f"make-tokenizer-reference: {name} encodes {s!r} with a special token")
            if tok.decode(encoded) != s:
                sys.exit(f"make-tokenizer-reference: {name} does not decode {s!r} back")
            ids.append(encoded)
        out["ids"][name] = ids
        out["non_speech_tokens"][name] = sorted(int(t) for t in tok.non_speech_tokens)

        if multilingual:
            # Languages in token order: <|code|> ids after <|startoftranscript|>.
            order = []
            for code in _LANGUAGE_CODES:
                tid = hf.token_to_id(f"<|{code}|>")
                if tid is not None:
                    order.append((tid, code))
            order.sort()
            sot = tok.sot
            for i, (tid, code) in enumerate(order):
                if tid != sot + 1 + i:
                    sys.exit(f"make-tokenizer-reference: <|{code}|> is token {tid}, "
                             f"expected {sot + 1 + i}")
            out["language_codes_token_order"] = {"model": name, "sot": sot,
                                                 "codes": [c for _, c in order]}

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {args.out}: {len(STRINGS)} strings x {len(MODELS)} models")


if __name__ == "__main__":
    main()
