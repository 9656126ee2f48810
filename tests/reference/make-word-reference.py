#!/usr/bin/env python3
"""Computes the word-timestamp fixtures of tests/reference/ with faster-whisper.

faster-whisper 1.2.1 on CTranslate2 4.8.x (PyPI), on the CPU with
compute_type float32 and one thread, transcribe(word_timestamps=True) with
the greedy options of make-reference.py (TRANSCRIBE_OPTIONS: beam_size 1,
temperature 0 only, language "en"), on every parity clip of
make-reference.py, for each model given (default: tiny.en and the
multilingual base, English forced).

The samples come from the engine's own decoder, as in make-reference.py:

    whisper-transcribe [--channel N] --dump-pcm OUT.f32 CLIP

Writes into --out one file per model, words-<model>.json: provenance, the
options, and per clip its PCM checksum and the segments (start, end, text,
tokens) with their words (word, start, end, probability). With
--hallucination-silence-threshold S the options get that threshold and the
files are words-<model>-hst<S>.json.

Usage:
  python3 tests/reference/make-word-reference.py \\
      --transcribe-bin build/engine/cli/whisper-transcribe --out tests/reference/fixtures

The models are looked up in ${XDG_DATA_HOME:-~/.local/share}/gst-whisper/models/<name>
(tools/fetch-model.sh); --models-dir overrides the folder.
"""

import argparse
import hashlib
import importlib.util
import os
import platform
import shlex
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def load_make_reference():
    spec = importlib.util.spec_from_file_location("make_reference",
                                                  os.path.join(HERE, "make-reference.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MR = load_make_reference()

WORD_OPTIONS = dict(MR.TRANSCRIBE_OPTIONS)
WORD_OPTIONS.update(
    word_timestamps=True,
    prepend_punctuations="\"'“¿([{-",
    append_punctuations="\"'.。,，!！?？:：”)]}、",
    hallucination_silence_threshold=None,
)


def transcribe_words(wm, pcm, options):
    segments, info = wm.transcribe(pcm, **options)
    out = []
    for s in segments:
        out.append({
            "start": float(s.start), "end": float(s.end), "text": s.text,
            "tokens": [int(t) for t in s.tokens],
            "words": [{"word": w.word, "start": float(w.start), "end": float(w.end),
                       "probability": float(w.probability)} for w in (s.words or [])],
        })
    return out, float(info.duration)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transcribe-bin", default=os.path.join("build", "engine", "cli", "whisper-transcribe"))
    p.add_argument("--out", default=os.path.join(HERE, "fixtures"))
    p.add_argument("--models", default="tiny.en,base")
    p.add_argument("--models-dir", default=os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"),
        "gst-whisper", "models"))
    p.add_argument("--source-root", default=os.environ.get("WHISPER_SOURCE_ROOT", MR.SOURCE_ROOT))
    p.add_argument("--shared-data", default=os.environ.get(
        "WHISPER_SHARED_DATA", os.path.join(MR.SOURCE_ROOT, "..", "shared", "data")))
    p.add_argument("--clips", default=None, help="comma-separated subset of clip names")
    p.add_argument("--hallucination-silence-threshold", type=float, default=None)
    args = p.parse_args()
    args.pcm_source = "transcribe"
    if not os.access(args.transcribe_bin, os.X_OK):
        sys.exit(f"make-word-reference: {args.transcribe_bin} is not an executable "
                 "(build the engine, or pass --transcribe-bin)")

    import ctranslate2
    import faster_whisper
    import numpy as np
    from faster_whisper import WhisperModel

    clips = MR.all_clips()
    if args.clips:
        wanted = set(args.clips.split(","))
        clips = [c for c in clips if c[0] in wanted]
    with tempfile.TemporaryDirectory() as tmp:
        pcms = {name: MR.load_pcm(args, root, rel, ch, tmp) for name, root, rel, ch in clips}

    options = dict(WORD_OPTIONS)
    suffix = ""
    if args.hallucination_silence_threshold is not None:
        options["hallucination_silence_threshold"] = args.hallucination_silence_threshold
        suffix = f"-hst{args.hallucination_silence_threshold:g}"
    os.makedirs(args.out, exist_ok=True)
    for model_name in args.models.split(","):
        model_dir = os.path.join(args.models_dir, model_name)
        if not os.path.isfile(os.path.join(model_dir, "model.bin")):
            sys.exit(f"make-word-reference: no CTranslate2 model at {model_dir} "
                     "(run tools/fetch-model.sh)")
        with open(os.path.join(model_dir, "model.bin"), "rb") as f:
            model_sha = hashlib.sha256(f.read()).hexdigest()
        wm = WhisperModel(model_dir, device="cpu", compute_type="float32", cpu_threads=1,
                          num_workers=1)
        argv = ["python3", "tests/reference/make-word-reference.py", "--transcribe-bin",
                "build/engine/cli/whisper-transcribe", "--out", "tests/reference/fixtures",
                "--models", model_name]
        if suffix:
            argv += ["--hallucination-silence-threshold", f"{args.hallucination_silence_threshold:g}"]
        provenance = {
            "command": shlex.join(argv),
            "faster_whisper": faster_whisper.__version__,
            "ctranslate2": ctranslate2.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
            "machine": platform.machine(),
            "model": f"Whisper {model_name}, CTranslate2 directory, model.bin sha256 {model_sha}",
            "model_options": "WhisperModel(path, device='cpu', compute_type='float32', cpu_threads=1)",
            "pcm_source": "whisper-transcribe --dump-pcm (libsndfile + libsamplerate)",
        }
        entries = []
        for name, root, rel, ch in clips:
            segs, duration = transcribe_words(wm, pcms[name], options)
            entries.append({"name": name, "root": root, "path": rel, "channel": ch,
                            **MR.pcm_facts(pcms[name]), "duration": duration, "segments": segs})
            n_words = sum(len(s["words"]) for s in segs)
            print(f"make-word-reference: {model_name} {name}: {len(segs)} segments, "
                  f"{n_words} words", file=sys.stderr)
        out = os.path.join(args.out, f"words-{model_name}{suffix}.json")
        MR.write_json(out, {"provenance": provenance, "transcribe_options": options,
                            "clips": entries})
        print(f"make-word-reference: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
