#!/usr/bin/env python3
"""Computes the reference fixtures of tests/reference/ with faster-whisper.

The reference implementation is faster-whisper 1.2.1 on CTranslate2 4.8.x
(both from PyPI), running Whisper tiny.en (CTranslate2 directory, float16
weights) on the CPU with compute_type float32.

Both implementations must see identical samples, so the audio of every clip
is decoded by the engine's own program:

    whisper-transcribe [--channel N] --dump-pcm OUT.f32 CLIP

which writes the 16-kHz mono float32 samples it would transcribe
(libsndfile + libsamplerate). faster-whisper gets those samples as a numpy
array. Never PyAV (faster-whisper's own decoder): its resampler gives other
samples. (--pcm-source pyav exists only for dry runs while the engine does
not build; it marks the fixtures as such and the C tests then fail on the
PCM checksum.)

Writes into --out:
  mel.json                    FeatureExtractor on fixed inputs + mel filters
  encoder-jfk.json            header of the two binary files below
  encoder-jfk.features.f32    [80, n_content_frames] float32 LE, the features
                              of jfk.wav's first window (rest of the 3000
                              frames is zero, pad_or_trim)
  encoder-jfk.output.f32      [1500, 384] float32 LE, ctranslate2 encode()
  transcripts.json            transcribe() of every clip, tokenizer facts

Usage:
  python3 tests/reference/make-reference.py \\
      --transcribe-bin build/engine/cli/whisper-transcribe --out tests/reference/fixtures

The output is deterministic: no dates, CTranslate2 runs with one thread.
"""

import argparse
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

# Clips: (name, root variable, path relative to that root, channel).
# channel -1 mixes every channel to mono; N >= 0 takes channel N.
# Roots are the environment variables the meson tests set (tests/meson.build).
SHARED_CLIPS = [
    ("jfk", "WHISPER_SHARED_DATA", "jfk.wav", -1),
    ("stereo_diarization_left", "WHISPER_SHARED_DATA", "stereo_diarization.wav", 0),
    # tiny.en is English-only: the German half of multilingual.mp3 comes out
    # as English-sounding nonsense, which must still match token for token.
    ("multilingual", "WHISPER_SHARED_DATA", "multilingual.mp3", -1),
    ("hotwords", "WHISPER_SHARED_DATA", "hotwords.mp3", -1),
]
ESPEAK_CLIPS = ["numbers", "question", "names", "long", "contact", "short", "pauses"]

# The transcribe() options of the fixtures (the engine's default
# WhisperDecodeOptions are the same: greedy, one temperature, no fallback).
TRANSCRIBE_OPTIONS = dict(
    language="en",
    task="transcribe",
    beam_size=1,
    best_of=1,
    temperature=0.0,
    condition_on_previous_text=True,
    without_timestamps=False,
    word_timestamps=False,
    vad_filter=False,
    suppress_blank=True,
    suppress_tokens=[-1],
    no_speech_threshold=0.6,
    log_prob_threshold=-1.0,
    compression_ratio_threshold=2.4,
    initial_prompt=None,
    max_initial_timestamp=1.0,
)

SAMPLE_RATE = 16000


# The first 178 s of the benchmark's 10-minute recording (tools/benchmark.py
# assembles real speech clips with low noise between them): a window near
# 145 s falls into a repetition loop that runs to the maximum decode length
# with a full 223-token prompt, the edge where CTranslate2 allows
# n_text_ctx - (prompt - 1) new tokens.
EXTRA_CLIPS = [
    ("max_length_loop", "WHISPER_SOURCE_ROOT", "tests/reference/clips/max-length-loop.flac", -1),
]


def all_clips():
    clips = list(SHARED_CLIPS)
    for name in ESPEAK_CLIPS:
        clips.append((name, "WHISPER_SOURCE_ROOT", f"tests/reference/clips/{name}.wav", -1))
    clips.extend(EXTRA_CLIPS)
    return clips


# ---------------------------------------------------------------------------
# JSON helpers

def f32_list(values):
    """float32 values as Python floats whose repr is the shortest string that
    reads back (as a double, then cast to float) as the same float32."""
    arr = np.ascontiguousarray(values, dtype=np.float32).ravel()
    out = [float(str(v)) if v != 0 else 0.0 for v in arr]
    back = np.array(out, dtype=np.float64).astype(np.float32)
    if not np.array_equal(back, arr):
        raise RuntimeError("float32 values do not survive the decimal round trip")
    return out


def _dumps(obj, indent):
    """JSON with objects indented and lists of scalars on one line."""
    pad = " " * indent
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f'{pad} {json.dumps(k, ensure_ascii=False)}: {_dumps(v, indent + 1)}'
                 for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, (list, tuple)):
        if all(not isinstance(v, (dict, list, tuple)) for v in obj):
            return json.dumps(list(obj), ensure_ascii=False, separators=(",", ":"))
        items = [pad + " " + _dumps(v, indent + 1) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(obj, ensure_ascii=False)


def write_json(path, obj):
    text = _dumps(obj, 0) + "\n"
    json.loads(text)  # must stay valid JSON
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def write_f32(path, arr):
    arr = np.ascontiguousarray(arr, dtype="<f4")
    with open(path, "wb") as f:
        f.write(arr.tobytes())
    return sha256_bytes(arr.tobytes())


# ---------------------------------------------------------------------------
# PCM

def roots(args):
    return {"WHISPER_SOURCE_ROOT": args.source_root, "WHISPER_SHARED_DATA": args.shared_data}


def load_pcm(args, root, rel, channel, tmpdir):
    path = os.path.join(roots(args)[root], rel)
    if not os.path.exists(path):
        sys.exit(f"make-reference: clip not found: {path}")
    if args.pcm_source == "pyav":
        from faster_whisper.audio import decode_audio
        if channel >= 0:
            return np.ascontiguousarray(decode_audio(path, SAMPLE_RATE, split_stereo=True)[channel])
        return decode_audio(path, SAMPLE_RATE)
    out = os.path.join(tmpdir, "pcm.f32")
    cmd = [args.transcribe_bin]
    if channel >= 0:
        cmd += ["--channel", str(channel)]
    cmd += ["--dump-pcm", out, path]
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if res.returncode != 0 or not os.path.exists(out):
        sys.exit(f"make-reference: {shlex.join(cmd)} failed ({res.returncode}):\n{res.stderr}")
    pcm = np.fromfile(out, dtype="<f4").astype(np.float32)
    os.unlink(out)
    if pcm.size == 0:
        sys.exit(f"make-reference: {shlex.join(cmd)} wrote no samples")
    return pcm


def pcm_facts(pcm):
    data = np.ascontiguousarray(pcm, dtype="<f4").tobytes()
    return {"n_samples": int(pcm.size), "pcm_sha256": sha256_bytes(data)}


# ---------------------------------------------------------------------------
# mel.json

def synthetic_signal():
    """0.7 s: two sines plus seeded Gaussian noise (the samples are stored in
    the fixture, so the C test does not need to reproduce the generator)."""
    n = np.arange(int(0.7 * SAMPLE_RATE), dtype=np.float64)
    rng = np.random.default_rng(20240611)
    x = (0.40 * np.sin(2 * np.pi * 440.0 * n / SAMPLE_RATE)
         + 0.20 * np.sin(2 * np.pi * 1873.5 * n / SAMPLE_RATE + 0.3)
         + 0.05 * rng.standard_normal(n.size))
    return x.astype(np.float32)


def make_mel(args, jfk_pcm):
    from faster_whisper.feature_extractor import FeatureExtractor

    fe = {80: FeatureExtractor(feature_size=80), 128: FeatureExtractor(feature_size=128)}
    inputs = [
        ("synthetic", 80, "0.40 sin(2 pi 440 n/16000) + 0.20 sin(2 pi 1873.5 n/16000 + 0.3) "
         "+ 0.05 N(0,1) (numpy default_rng(20240611)), n = 0..11199, float32", synthetic_signal()),
        ("jfk_first_second", 80, "first 16000 samples of jfk.wav (whisper-transcribe --dump-pcm)",
         jfk_pcm[:16000].copy()),
        ("short_250", 80, "250 samples (fewer than n_fft=400): jfk.wav samples 8000..8249",
         jfk_pcm[8000:8250].copy()),
        ("silence", 80, "0.5 s of zeros", np.zeros(8000, dtype=np.float32)),
        ("synthetic_128", 128, "the synthetic signal with 128 mel bands", synthetic_signal()),
    ]
    # Each case has "samples" (the float32 input), or "zeros": true (all
    # n_samples are 0), or "samples_of": NAME (the input of an earlier case).
    cases = []
    stored = {}
    for name, n_mels, desc, x in inputs:
        mel = fe[n_mels](x)  # padding=160: 160 zeros appended, last frame dropped
        mel = np.asarray(mel, dtype=np.float32)
        assert mel.shape == (n_mels, x.size // 160 + 1), mel.shape
        case = {"name": name, "description": desc, "n_mels": n_mels, "n_samples": int(x.size)}
        same = [k for k, v in stored.items() if np.array_equal(v, x)]
        if not np.any(x):
            case["zeros"] = True
        elif same:
            case["samples_of"] = same[0]
        else:
            case["samples"] = f32_list(x)
            stored[name] = x
        case["shape"] = [int(mel.shape[0]), int(mel.shape[1])]
        case["mel"] = f32_list(mel)
        cases.append(case)
    filters = []
    for n_mels in (80, 128):
        m = fe[n_mels].mel_filters  # float32, as FeatureExtractor uses it
        filters.append({
            "n_mels": n_mels,
            "shape": [int(m.shape[0]), int(m.shape[1])],
            "values": f32_list(m),
        })
    return {"cases": cases, "filters": filters}


# ---------------------------------------------------------------------------
# encoder-jfk.*

def make_encoder(args, wm, jfk_pcm, out_dir):
    import ctranslate2
    from faster_whisper.audio import pad_or_trim

    features = wm.feature_extractor(jfk_pcm)
    content_frames = features.shape[-1] - 1
    # As generate_segments() builds the first window: the content frames only
    # (the extra last frame of FeatureExtractor is not part of any window),
    # zero-padded to 3000 frames.
    n = min(3000, content_frames)
    window = np.ascontiguousarray(features[:, :n], dtype=np.float32)
    segment = pad_or_trim(window).astype(np.float32)
    assert segment.shape == (80, 3000)
    out = wm.model.encode(ctranslate2.StorageView.from_array(segment[None]), to_cpu=True)
    out = np.array(out, dtype=np.float32)[0]
    feat_sha = write_f32(os.path.join(out_dir, "encoder-jfk.features.f32"), window)
    out_sha = write_f32(os.path.join(out_dir, "encoder-jfk.output.f32"), out)
    return {
        "clip": {"root": "WHISPER_SHARED_DATA", "path": "jfk.wav", "channel": -1,
                 **pcm_facts(jfk_pcm)},
        "description": ("features = FeatureExtractor()(pcm); window = features[:, :min(3000, "
                        "content_frames)] with content_frames = features.shape[-1] - 1; "
                        "segment = pad_or_trim(window, 3000) (zeros); output = "
                        "ctranslate2 Whisper.encode(segment[None]) with compute_type float32"),
        "features": {"file": "encoder-jfk.features.f32", "dtype": "float32", "byte_order": "little",
                     "layout": "row-major [n_mels, n_frames]; frames n_frames..2999 are zero",
                     "shape": [int(window.shape[0]), int(window.shape[1])], "sha256": feat_sha},
        "output": {"file": "encoder-jfk.output.f32", "dtype": "float32", "byte_order": "little",
                   "layout": "row-major [n_audio_ctx, n_audio_state]",
                   "shape": [int(out.shape[0]), int(out.shape[1])], "sha256": out_sha,
                   "max_abs": float(np.abs(out).max())},
    }


# ---------------------------------------------------------------------------
# transcripts.json

class RecordingModel:
    """Stands in for WhisperModel.model: forwards everything to the
    ctranslate2 model and records every generate() call (one per decoded
    window) so the fixture also holds the raw per-window result."""

    def __init__(self, model, log):
        self._model = model
        self._log = log

    def __getattr__(self, name):
        return getattr(self._model, name)

    def generate(self, encoder_output, prompts, **kwargs):
        results = self._model.generate(encoder_output, prompts, **kwargs)
        r = results[0]
        tokens = list(r.sequences_ids[0])
        cum = r.scores[0] * (len(tokens) ** kwargs.get("length_penalty", 1))
        self._log.append({
            "prompt": [int(t) for t in prompts[0]],
            "tokens": [int(t) for t in tokens],
            "avg_logprob": float(cum / (len(tokens) + 1)),
            "no_speech_prob": float(r.no_speech_prob),
        })
        return results


def model_vocabulary_size(model_dir):
    path = os.path.join(model_dir, "vocabulary.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return len(json.load(f))
    with open(os.path.join(model_dir, "vocabulary.txt"), encoding="utf-8") as f:
        lines = f.read().split("\n")  # one token a line
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    return len(lines)


def tokenizer_facts(wm, model_dir):
    from faster_whisper.tokenizer import Tokenizer
    from faster_whisper.transcribe import get_suppressed_tokens

    tok = Tokenizer(wm.hf_tokenizer, wm.model.is_multilingual, task="transcribe", language="en")
    return {
        "is_multilingual": bool(wm.model.is_multilingual),
        "n_vocab": model_vocabulary_size(model_dir),
        "eot": tok.eot, "sot": tok.sot, "sot_prev": tok.sot_prev, "sot_lm": tok.sot_lm,
        "no_speech": tok.no_speech, "no_timestamps": tok.no_timestamps,
        "timestamp_begin": tok.timestamp_begin, "transcribe": tok.transcribe,
        "translate": tok.translate,
        "sot_sequence": list(tok.sot_sequence),
        "non_speech_tokens": sorted(int(t) for t in tok.non_speech_tokens),
        "suppressed_tokens": [int(t) for t in get_suppressed_tokens(tok, [-1])],
        "blank_tokens": tok.encode(" "),
    }


def transcribe_clip(wm, pcm, log):
    del log[:]
    segments, info = wm.transcribe(pcm, **TRANSCRIBE_OPTIONS)
    segs = []
    for s in segments:
        segs.append({
            "start": float(s.start), "end": float(s.end), "text": s.text,
            "tokens": [int(t) for t in s.tokens],
            "avg_logprob": float(s.avg_logprob), "no_speech_prob": float(s.no_speech_prob),
            "compression_ratio": float(s.compression_ratio), "temperature": float(s.temperature),
        })
    windows = []
    for w in log:
        w = dict(w)
        w["skipped"] = bool(w["no_speech_prob"] > TRANSCRIBE_OPTIONS["no_speech_threshold"]
                            and not w["avg_logprob"] > TRANSCRIBE_OPTIONS["log_prob_threshold"])
        windows.append(w)
    return segs, windows, float(info.duration)


# ---------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transcribe-bin", default=os.path.join("build", "engine", "cli", "whisper-transcribe"),
                   help="the engine's whisper-transcribe (for --dump-pcm)")
    p.add_argument("--out", default=os.path.join(HERE, "fixtures"), help="output folder")
    p.add_argument("--model", default=None,
                   help="CTranslate2 model directory (default: $WHISPER_MODEL, else "
                        "${XDG_DATA_HOME:-~/.local/share}/gst-whisper/models/tiny.en)")
    p.add_argument("--source-root", default=os.environ.get("WHISPER_SOURCE_ROOT", SOURCE_ROOT))
    p.add_argument("--shared-data", default=os.environ.get(
        "WHISPER_SHARED_DATA", os.path.join(SOURCE_ROOT, "..", "shared", "data")))
    p.add_argument("--pcm-source", choices=["transcribe", "pyav"], default="transcribe",
                   help="'pyav' is for dry runs only: fixtures made so do not match the engine's PCM")
    p.add_argument("--only", default="mel,encoder,transcripts",
                   help="comma-separated subset of mel,encoder,transcripts")
    p.add_argument("--clips", default=None, help="comma-separated subset of clip names (dry runs)")
    args = p.parse_args()

    parts = set(args.only.split(","))
    if not parts <= {"mel", "encoder", "transcripts"}:
        sys.exit(f"make-reference: unknown part in --only {args.only}")

    if args.model is None:
        args.model = os.environ.get("WHISPER_MODEL") or os.path.join(
            os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"),
            "gst-whisper", "models", "tiny.en")
    if not os.path.isfile(os.path.join(args.model, "model.bin")):
        sys.exit(f"make-reference: no CTranslate2 model at {args.model} (run tools/fetch-model.sh)")
    if args.pcm_source == "transcribe" and not os.access(args.transcribe_bin, os.X_OK):
        sys.exit(f"make-reference: {args.transcribe_bin} is not an executable "
                 "(build the engine, or pass --transcribe-bin)")

    import ctranslate2
    import faster_whisper
    from faster_whisper import WhisperModel

    os.makedirs(args.out, exist_ok=True)
    # One CTranslate2 thread: the results do not depend on the core count.
    wm = WhisperModel(args.model, device="cpu", compute_type="float32", cpu_threads=1, num_workers=1)
    log = []
    wm.model = RecordingModel(wm.model, log)

    with open(os.path.join(args.model, "model.bin"), "rb") as f:
        model_sha = hashlib.sha256(f.read()).hexdigest()

    argv = ["python3", "tests/reference/make-reference.py",
            "--transcribe-bin", os.path.relpath(args.transcribe_bin, args.source_root)
            if os.path.isabs(args.transcribe_bin) else args.transcribe_bin,
            "--out", "tests/reference/fixtures"]
    provenance = {
        "command": shlex.join(argv),
        "faster_whisper": faster_whisper.__version__,
        "ctranslate2": ctranslate2.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "model": "Whisper tiny.en, CTranslate2 directory (float16 weights), model.bin sha256 " + model_sha,
        "model_options": "WhisperModel(path, device='cpu', compute_type='float32', cpu_threads=1)",
        "pcm_source": ("whisper-transcribe --dump-pcm (libsndfile + libsamplerate)"
                       if args.pcm_source == "transcribe" else "PyAV decode_audio (DRY RUN ONLY)"),
    }

    clips = all_clips()
    if args.clips:
        wanted = set(args.clips.split(","))
        clips = [c for c in clips if c[0] in wanted or c[0] == "jfk"]

    with tempfile.TemporaryDirectory() as tmp:
        pcms = {name: load_pcm(args, root, rel, ch, tmp) for name, root, rel, ch in clips}

    jfk = pcms["jfk"]
    if "mel" in parts:
        mel = make_mel(args, jfk)
        write_json(os.path.join(args.out, "mel.json"), {"provenance": provenance, **mel})
        print("make-reference: mel.json", file=sys.stderr)
    if "encoder" in parts:
        enc = make_encoder(args, wm, jfk, args.out)
        write_json(os.path.join(args.out, "encoder-jfk.json"), {"provenance": provenance, **enc})
        print("make-reference: encoder-jfk.json (+ .f32 files)", file=sys.stderr)
    if "transcripts" in parts:
        entries = []
        for name, root, rel, ch in clips:
            segs, windows, duration = transcribe_clip(wm, pcms[name], log)
            entries.append({"name": name, "root": root, "path": rel, "channel": ch,
                            **pcm_facts(pcms[name]), "duration": duration,
                            "segments": segs, "windows": windows})
            print(f"make-reference: {name}: {len(segs)} segments, {len(windows)} windows: "
                  + "".join(s["text"] for s in segs)[:200], file=sys.stderr)
        opts = dict(TRANSCRIBE_OPTIONS)
        write_json(os.path.join(args.out, "transcripts.json"), {
            "provenance": provenance,
            "transcribe_options": opts,
            "tokenizer": tokenizer_facts(wm, args.model),
            "clips": entries,
        })
        print("make-reference: transcripts.json", file=sys.stderr)


if __name__ == "__main__":
    main()
