#!/usr/bin/env python3
"""Computes tests/reference/fixtures/options.json: faster-whisper's
transcribe() with the decoding options users reach for (languages,
translation, prompts, hotwords, prefix, beam search, penalties, no
timestamps, temperature fallback), on the parity clips, with Whisper
tiny.en and the multilingual base model.

As make-reference.py (whose helpers this script imports): faster-whisper
1.2.1 on CTranslate2 4.8.x, compute_type float32, one thread, and every clip
decoded to PCM by the engine's own program (whisper-transcribe --dump-pcm) so
that both sides see identical samples. Each case is a transcribe() call;
the fixture keeps its keyword arguments as given (the C test maps them to
WhisperDecodeOptions), every segment, every generate() call (prompt,
tokens, temperature: one per attempt, so a fallback shows), and for
language detection the probabilities of every language.

Usage:
  python3 tests/reference/make-options-reference.py \\
      --transcribe-bin build/engine/cli/whisper-transcribe --out tests/reference/fixtures
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
_spec = importlib.util.spec_from_file_location("make_reference",
                                               os.path.join(HERE, "make-reference.py"))
mr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mr)

# The reference's rules for the engine are what make-reference.py uses
# (greedy, temperature 0, language en); each case overrides some.
BASE = dict(mr.TRANSCRIBE_OPTIONS)

SHORT = ["jfk", "stereo_diarization_left", "hotwords", "numbers", "long"]
ALL_BUT_LOOP = [c[0] for c in mr.all_clips() if c[0] != "max_length_loop"]

# (name, model, clips, options overriding BASE)
CASES = [
    ("detect_tiny_en", "tiny.en", ["jfk"], dict(language=None)),
    ("detect_base", "base", SHORT + ["multilingual"], dict(language=None)),
    ("de_base", "base", ["multilingual"], dict(language="de")),
    ("auto_per_window_base", "base", ["multilingual"], dict(language=None, multilingual=True)),
    ("translate_base", "base", ["multilingual"], dict(language="de", task="translate")),
    ("beam5_base", "base", ["jfk", "stereo_diarization_left"], dict(beam_size=5)),
    ("initial_prompt", "tiny.en", SHORT,
     dict(initial_prompt="President Kennedy's inaugural address, January 1961.")),
    ("hotwords", "tiny.en", ["hotwords", "jfk"], dict(hotwords="ComfyUI")),
    ("prefix", "tiny.en", ["jfk", "long"], dict(prefix="And so my fellow")),
    ("beam5", "tiny.en", ALL_BUT_LOOP, dict(beam_size=5)),
    ("beam5_patience2_lp", "tiny.en", SHORT, dict(beam_size=5, patience=2.0, length_penalty=0.5)),
    ("repetition_penalty", "tiny.en", SHORT, dict(repetition_penalty=1.3)),
    ("no_repeat_ngram3", "tiny.en", SHORT, dict(no_repeat_ngram_size=3)),
    ("beam5_no_repeat_ngram3", "tiny.en", ["jfk", "long"], dict(beam_size=5, no_repeat_ngram_size=3)),
    ("without_timestamps", "tiny.en", SHORT, dict(without_timestamps=True)),
    ("max_new_tokens_clips", "tiny.en", ["long", "jfk"],
     dict(max_new_tokens=12, clip_timestamps="2.5,20,24")),
    ("suppress_tokens", "tiny.en", ["jfk", "numbers"],
     dict(suppress_tokens=[11, 13], suppress_blank=False)),
    # Temperature fallback: the repetition loop near 145 s fails at 0 and
    # is sampled at 0.2 and up; the windows before it are deterministic.
    ("fallback", "tiny.en", ["max_length_loop"],
     dict(temperature=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0])),
]


class Recorder(mr.RecordingModel):
    """make-reference.py's recorder, with each call's temperature."""

    def generate(self, encoder_output, prompts, **kwargs):
        results = super().generate(encoder_output, prompts, **kwargs)
        self._log[-1]["temperature"] = float(kwargs.get("sampling_temperature", 0.0))
        self._log[-1]["beam_size"] = int(kwargs.get("beam_size", 1))
        return results


def model_dir(name):
    return os.path.join(os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"),
                        "gst-whisper", "models", name)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transcribe-bin", default=os.path.join("build", "engine", "cli", "whisper-transcribe"))
    p.add_argument("--out", default=os.path.join(HERE, "fixtures"))
    p.add_argument("--source-root", default=os.environ.get("WHISPER_SOURCE_ROOT", mr.SOURCE_ROOT))
    p.add_argument("--shared-data", default=os.environ.get(
        "WHISPER_SHARED_DATA", os.path.join(mr.SOURCE_ROOT, "..", "shared", "data")))
    p.add_argument("--pcm-source", choices=["transcribe", "pyav"], default="transcribe")
    p.add_argument("--cases", default=None, help="comma-separated subset (dry runs)")
    args = p.parse_args()

    import ctranslate2
    import faster_whisper
    import numpy as np
    from faster_whisper import WhisperModel

    models, shas = {}, {}
    for name in ("tiny.en", "base"):
        d = model_dir(name)
        if not os.path.isfile(os.path.join(d, "model.bin")):
            sys.exit(f"make-options-reference: no model at {d} (tools/fetch-model.sh {name})")
        log = []
        wm = WhisperModel(d, device="cpu", compute_type="float32", cpu_threads=1, num_workers=1)
        wm.model = Recorder(wm.model, log)
        models[name] = (wm, log)
        with open(os.path.join(d, "model.bin"), "rb") as f:
            shas[name] = hashlib.sha256(f.read()).hexdigest()

    clips = {c[0]: c for c in mr.all_clips()}
    cases = CASES
    if args.cases:
        wanted = set(args.cases.split(","))
        cases = [c for c in cases if c[0] in wanted]
    with tempfile.TemporaryDirectory() as tmp:
        needed = sorted({c for case in cases for c in case[2]})
        pcms = {n: mr.load_pcm(args, clips[n][1], clips[n][2], clips[n][3], tmp) for n in needed}

    out_cases = []
    for name, model, clip_names, overrides in cases:
        wm, log = models[model]
        opts = dict(BASE)
        opts.update(overrides)
        entries = []
        for cn in clip_names:
            del log[:]
            pcm = pcms[cn]
            segments, info = wm.transcribe(pcm, **opts)
            segs = [{"start": float(s.start), "end": float(s.end), "text": s.text,
                     "tokens": [int(t) for t in s.tokens], "avg_logprob": float(s.avg_logprob),
                     "no_speech_prob": float(s.no_speech_prob),
                     "compression_ratio": float(s.compression_ratio),
                     "temperature": float(s.temperature)} for s in segments]
            entry = {"name": cn, "root": clips[cn][1], "path": clips[cn][2],
                     "channel": clips[cn][3], **mr.pcm_facts(pcm),
                     "language": info.language,
                     "language_probability": float(info.language_probability),
                     "segments": segs,
                     "generate_calls": [dict(w) for w in log]}
            if info.all_language_probs:
                entry["all_language_probs"] = [[l, float(p)] for l, p in info.all_language_probs]
            entries.append(entry)
            print(f"make-options-reference: {name} / {cn}: {info.language} "
                  f"{info.language_probability:.4f}: " + "".join(s["text"] for s in segs)[:120],
                  file=sys.stderr)
        out_cases.append({"name": name, "model": model, "options": overrides, "clips": entries})

    argv = ["python3", "tests/reference/make-options-reference.py",
            "--transcribe-bin", "build/engine/cli/whisper-transcribe", "--out", "tests/reference/fixtures"]
    provenance = {
        "command": shlex.join(argv),
        "faster_whisper": faster_whisper.__version__,
        "ctranslate2": ctranslate2.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "models": {n: f"CTranslate2 directory (float16 weights), model.bin sha256 {shas[n]}"
                   for n in shas},
        "model_options": "WhisperModel(path, device='cpu', compute_type='float32', cpu_threads=1)",
        "pcm_source": "whisper-transcribe --dump-pcm (libsndfile + libsamplerate)",
    }
    os.makedirs(args.out, exist_ok=True)
    mr.write_json(os.path.join(args.out, "options.json"),
                  {"provenance": provenance, "base_options": BASE, "cases": out_cases})
    print("make-options-reference: options.json", file=sys.stderr)


if __name__ == "__main__":
    main()
