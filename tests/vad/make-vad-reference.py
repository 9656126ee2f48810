#!/usr/bin/env python3
"""Computes the reference of tests/vad/ with faster-whisper's own VAD.

The reference implementation is faster-whisper 1.2.1's faster_whisper/vad.py:
SileroVADModel (silero_vad_v6.onnx on onnxruntime, one thread) for the
speech probabilities and get_speech_timestamps for the speech regions.

Signals:
  - clips: jfk.wav, stereo_diarization.wav (left channel), multilingual.mp3,
    hotwords.mp3 (../shared/data), tests/reference/clips/pauses.wav and
    max-length-loop.flac. Their samples come from the engine's own decoder
    (libsndfile + libsamplerate):
        whisper-transcribe [--channel N] --dump-pcm OUT.f32 CLIP
    not from faster-whisper's PyAV, so that the C test (which reads them
    with whisper_audio_load_file()) sees identical samples; each clip's
    sample count and SHA-256 (float32 little-endian) are stored and checked.
  - synthetic signals, made here from integer arithmetic and libm's sin() so
    that the C test makes the same samples (their SHA-256 is stored too):
    digital silence, uniform white noise at two levels (xorshift32), a 440 Hz
    sine, jfk.wav with 3 s of silence inserted, and jfk.wav plus noise. Their lengths are chosen
    to cover both padding cases: a multiple of 512 (one extra zero chunk) and
    n % 512 > 448 (SileroVADModel zeroes real samples of the last chunk).

For every signal and every option set of OPTION_SETS it stores the speech
regions of get_speech_timestamps(audio, VadOptions(**options)); for the
signals of PROBABILITY_SIGNALS also every chunk's probability, exactly the
array get_speech_timestamps computes (the signal padded with np.pad, then
SileroVADModel).

Usage:
  python3 tests/vad/make-vad-reference.py \\
      --transcribe-bin build/engine/cli/whisper-transcribe --out tests/vad/reference

Writes --out/vad-reference.json. Deterministic (no dates, one thread).
"""

import argparse
import hashlib
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SAMPLE_RATE = 16000
CHUNK = 512

# (name, root variable, path under that root, channel: -1 mixes to mono)
CLIPS = [
    ("jfk", "WHISPER_SHARED_DATA", "jfk.wav", -1),
    ("stereo_diarization_left", "WHISPER_SHARED_DATA", "stereo_diarization.wav", 0),
    ("multilingual", "WHISPER_SHARED_DATA", "multilingual.mp3", -1),
    ("hotwords", "WHISPER_SHARED_DATA", "hotwords.mp3", -1),
    ("pauses", "WHISPER_SOURCE_ROOT", "tests/reference/clips/pauses.wav", -1),
    ("max_length_loop", "WHISPER_SOURCE_ROOT", "tests/reference/clips/max-length-loop.flac", -1),
]

# Synthetic signals; the C test implements the same "kind"s (test-vad.c).
SYNTHETIC = [
    # 150 * 512 samples: get_speech_timestamps pads a whole zero chunk
    {"name": "silence", "kind": "zeros", "n_samples": 150 * CHUNK},
    {"name": "noise_quiet", "kind": "noise", "n_samples": 5 * SAMPLE_RATE,
     "seed": 12345, "level": 0.01},
    {"name": "noise_loud", "kind": "noise", "n_samples": 5 * SAMPLE_RATE + 300,
     "seed": 67890, "level": 0.3},
    # 156 * 512 + 500: the last 52 real samples are zeroed by SileroVADModel
    {"name": "sine_440", "kind": "sine", "n_samples": 156 * CHUNK + 500,
     "frequency": 440.0, "amplitude": 0.5},
    {"name": "jfk_with_silence", "kind": "insert_silence", "source": "jfk",
     "at_sample": 4 * SAMPLE_RATE + 8000, "silence_samples": 3 * SAMPLE_RATE},
    {"name": "jfk_in_noise", "kind": "add_noise", "source": "jfk", "seed": 424242, "level": 0.05},
]

# VadOptions field sets (missing fields: VadOptions' defaults).
OPTION_SETS = [
    ("defaults", {}),
    # what transcribe() passes when given no vad_parameters
    ("transcribe", {"max_speech_duration_s": 30, "min_silence_duration_ms": 160}),
    # every field set; max_speech_duration_s short enough to split at silences
    ("all_fields", {"threshold": 0.6, "neg_threshold": 0.3, "min_speech_duration_ms": 250,
                    "max_speech_duration_s": 3.0, "min_silence_duration_ms": 300,
                    "speech_pad_ms": 100}),
    # so short that speech is also cut where it has no silence
    ("aggressive", {"threshold": 0.4, "min_speech_duration_ms": 100,
                    "max_speech_duration_s": 1.0, "min_silence_duration_ms": 50,
                    "speech_pad_ms": 30}),
    # neg_threshold above threshold (VadOptions does not forbid it): a chunk
    # can start speech and end it at once
    ("neg_above_threshold", {"threshold": 0.3, "neg_threshold": 0.6,
                             "min_silence_duration_ms": 100, "speech_pad_ms": 0}),
]

# Signals whose per-chunk probabilities are stored (the others: regions only).
PROBABILITY_SIGNALS = ["jfk", "hotwords", "pauses", "stereo_diarization_left",
                       "silence", "noise_quiet", "noise_loud", "sine_440", "jfk_with_silence",
                       "jfk_in_noise"]


def xorshift32_noise(n, seed, level):
    """Uniform noise in [-level, level): xorshift32 (13, 17, 5), each state
    read as a signed 32-bit integer, converted to float32, times 2^-31, times
    level (float32 arithmetic throughout)."""
    state = seed & 0xFFFFFFFF
    ints = np.empty(n, dtype=np.int64)
    for i in range(n):
        state ^= (state << 13) & 0xFFFFFFFF
        state ^= state >> 17
        state ^= (state << 5) & 0xFFFFFFFF
        ints[i] = state - (1 << 32) if state >= (1 << 31) else state
    unit = ints.astype(np.int32).astype(np.float32) * np.float32(2.0 ** -31)
    return (unit * np.float32(level)).astype(np.float32)


def sine(n, frequency, amplitude):
    """amplitude * sin(2 pi f k / 16000) in double (libm), then float32."""
    return np.array([amplitude * math.sin(2 * math.pi * frequency * k / SAMPLE_RATE)
                     for k in range(n)], dtype=np.float64).astype(np.float32)


def make_synthetic(spec, pcms):
    kind = spec["kind"]
    if kind == "zeros":
        return np.zeros(spec["n_samples"], dtype=np.float32)
    if kind == "noise":
        return xorshift32_noise(spec["n_samples"], spec["seed"], spec["level"])
    if kind == "sine":
        return sine(spec["n_samples"], spec["frequency"], spec["amplitude"])
    if kind == "insert_silence":
        src = pcms[spec["source"]]
        at = spec["at_sample"]
        return np.concatenate([src[:at], np.zeros(spec["silence_samples"], np.float32),
                               src[at:]]).astype(np.float32)
    if kind == "add_noise":
        src = pcms[spec["source"]]
        return (src + xorshift32_noise(src.size, spec["seed"], spec["level"])).astype(np.float32)
    raise ValueError(kind)


def load_clip_pcm(transcribe_bin, path, channel, tmpdir):
    if not os.path.exists(path):
        sys.exit(f"make-vad-reference: clip not found: {path}")
    out = os.path.join(tmpdir, "pcm.f32")
    cmd = [transcribe_bin] + (["--channel", str(channel)] if channel >= 0 else [])
    cmd += ["--dump-pcm", out, path]
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if res.returncode != 0 or not os.path.exists(out):
        sys.exit(f"make-vad-reference: {shlex.join(cmd)} failed ({res.returncode}):\n{res.stderr}")
    pcm = np.fromfile(out, dtype="<f4").astype(np.float32)
    os.unlink(out)
    return pcm


def sha256_f32(pcm):
    return hashlib.sha256(np.ascontiguousarray(pcm, dtype="<f4").tobytes()).hexdigest()


def exact_floats(values):
    """float32 values as the shortest decimals that read back to the same float32."""
    arr = np.ascontiguousarray(values, dtype=np.float32).ravel()
    out = [float(str(v)) for v in arr]
    if not np.array_equal(np.array(out, dtype=np.float64).astype(np.float32), arr):
        raise RuntimeError("float32 values do not survive the decimal round trip")
    return out


def dumps(obj, indent=0):
    """JSON with objects indented and lists of scalars on one line."""
    pad = " " * indent
    if isinstance(obj, dict):
        items = [f'{pad}  {json.dumps(k)}: {dumps(v, indent + 2)}' for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}" if items else "{}"
    if isinstance(obj, list):
        if all(not isinstance(v, (dict, list)) for v in obj):
            return "[" + ", ".join(json.dumps(v) for v in obj) + "]"
        items = [pad + "  " + dumps(v, indent + 2) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(obj)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--transcribe-bin", required=True,
                        help="the engine's whisper-transcribe (build/engine/cli/whisper-transcribe)")
    parser.add_argument("--out", required=True, help="output folder (tests/vad/reference)")
    args = parser.parse_args()

    import faster_whisper
    import onnxruntime
    from faster_whisper.vad import VadOptions, get_speech_timestamps, get_vad_model

    roots = {
        "WHISPER_SHARED_DATA": os.environ.get(
            "WHISPER_SHARED_DATA", os.path.join(SOURCE_ROOT, "..", "shared", "data")),
        "WHISPER_SOURCE_ROOT": SOURCE_ROOT,
    }
    onnx_path = os.path.join(os.path.dirname(faster_whisper.__file__), "assets",
                             "silero_vad_v6.onnx")
    with open(onnx_path, "rb") as f:
        onnx_sha = hashlib.sha256(f.read()).hexdigest()

    signals = []  # (name, pcm, description dict)
    pcms = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, root, rel, channel in CLIPS:
            pcm = load_clip_pcm(args.transcribe_bin, os.path.join(roots[root], rel), channel, tmp)
            pcms[name] = pcm
            signals.append((name, pcm, {"root": root, "path": rel, "channel": channel}))
    for spec in SYNTHETIC:
        pcm = make_synthetic(spec, pcms)
        pcms[spec["name"]] = pcm
        signals.append((spec["name"], pcm,
                        {"synthetic": {k: v for k, v in spec.items() if k != "name"}}))

    model = get_vad_model()
    entries = []
    for name, pcm, desc in signals:
        entry = {"name": name, **desc, "n_samples": int(pcm.size), "pcm_sha256": sha256_f32(pcm)}
        if name in PROBABILITY_SIGNALS:
            # as get_speech_timestamps does it (the model writes into its input)
            padded = np.pad(pcm, (0, CHUNK - pcm.shape[0] % CHUNK))
            entry["probabilities"] = exact_floats(model(padded))
        entry["speech"] = {}
        for set_name, fields in OPTION_SETS:
            regions = get_speech_timestamps(pcm.copy(), VadOptions(**fields))
            entry["speech"][set_name] = [[int(r["start"]), int(r["end"])] for r in regions]
        entries.append(entry)
        print(f"make-vad-reference: {name}: {pcm.size} samples, "
              + ", ".join(f"{k} {len(v)}" for k, v in entry["speech"].items()), file=sys.stderr)

    reference = {
        "provenance": {
            "command": shlex.join(["python3", os.path.relpath(os.path.abspath(__file__), SOURCE_ROOT)]
                                  + sys.argv[1:]),
            "faster_whisper": faster_whisper.__version__,
            "onnxruntime": onnxruntime.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
            "machine": platform.machine(),
            "model": f"faster_whisper/assets/silero_vad_v6.onnx, sha256 {onnx_sha}",
            "pcm_source": "clips: whisper-transcribe --dump-pcm (libsndfile + libsamplerate); "
                          "synthetic: made by make-vad-reference.py",
        },
        "option_sets": [{"name": n, "fields": f} for n, f in OPTION_SETS],
        "signals": entries,
    }
    os.makedirs(args.out, exist_ok=True)
    text = dumps(reference) + "\n"
    json.loads(text)
    with open(os.path.join(args.out, "vad-reference.json"), "w", encoding="utf-8") as f:
        f.write(text)
    print(f"make-vad-reference: wrote {os.path.join(args.out, 'vad-reference.json')}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
