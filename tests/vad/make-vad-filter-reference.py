#!/usr/bin/env python3
"""Computes tests/vad/reference/vad-filter-reference.json: faster-whisper's
WhisperModel.transcribe(pcm, vad_filter=True) with the reference's greedy
options (tests/reference/make-reference.py TRANSCRIBE_OPTIONS, vad_filter
set to True, vad_parameters left None: VadOptions()'s defaults), the same
without the filter, and faster-whisper's SpeechTimestampsMap on fixed
cases.

The reference implementation is faster-whisper 1.2.1 on CTranslate2 4.8.x,
Whisper tiny.en (CTranslate2 directory, float16 weights) on the CPU with
compute_type float32, one thread; its VAD is SileroVADModel on onnxruntime.

Signals:
  - clips with pauses: tests/reference/clips/pauses.wav,
    stereo_diarization.wav (both channels mixed, and the left one) and
    jfk.wav (../shared/data). Their samples come from the engine's own
    decoder (whisper-transcribe [--channel N] --dump-pcm OUT.f32 CLIP), as
    in tests/reference/make-reference.py, so that the C test (which reads
    them with whisper_audio_load_file()) sees identical samples.
  - "gaps": real speech with long silences and noise between, assembled
    here from those clips and tests/reference/clips/numbers.wav by the
    "parts" list stored with it: a clip's samples, digital silence, or
    xorshift32 white noise as tests/vad/make-vad-reference.py makes it
    (integer arithmetic, so that the C test makes the same bits).
  - non-speech: 20 s of digital silence, 10 s of white noise, a sequence of
    tones (amplitude * sin(2 pi f k / 16000) in double, then float32, as
    make-vad-reference.py makes its sine).
Each signal's sample count and SHA-256 (float32 little-endian) are stored
and checked by the C test.

For every signal: the speech chunks get_speech_timestamps() found, the
segments (tokens, text, restored start and end) with vad_filter=True, and
the text without the filter.

Usage:
  python3 tests/vad/make-vad-filter-reference.py \\
      --transcribe-bin build/engine/cli/whisper-transcribe --out tests/vad/reference

Deterministic: no dates, one thread.
"""

import argparse
import hashlib
import importlib.util
import math
import os
import platform
import shlex
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
_spec = importlib.util.spec_from_file_location(
    "make_reference", os.path.join(SOURCE_ROOT, "tests", "reference", "make-reference.py"))
mr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mr)

SAMPLE_RATE = 16000

# (name, root variable, path under that root, channel: -1 mixes to mono)
CLIPS = [
    ("pauses", "WHISPER_SOURCE_ROOT", "tests/reference/clips/pauses.wav", -1),
    ("stereo_diarization", "WHISPER_SHARED_DATA", "stereo_diarization.wav", -1),
    ("stereo_diarization_left", "WHISPER_SHARED_DATA", "stereo_diarization.wav", 0),
    ("jfk", "WHISPER_SHARED_DATA", "jfk.wav", -1),
    ("numbers", "WHISPER_SOURCE_ROOT", "tests/reference/clips/numbers.wav", -1),
]
# Clips transcribed on their own ("numbers" is only a part of "gaps").
TRANSCRIBED_CLIPS = ["pauses", "stereo_diarization", "stereo_diarization_left", "jfk"]

S = SAMPLE_RATE
SYNTHETIC = [
    # 73 s, 44 % of it silence or noise
    ("gaps", [
        {"kind": "zeros", "n_samples": 3 * S},
        {"kind": "clip", "clip": "jfk"},
        {"kind": "zeros", "n_samples": 7 * S},
        {"kind": "clip", "clip": "stereo_diarization_left"},
        {"kind": "noise", "n_samples": 5 * S, "seed": 12345, "level": 0.02},
        {"kind": "clip", "clip": "pauses"},
        {"kind": "zeros", "n_samples": 9 * S + 321},
        {"kind": "clip", "clip": "numbers"},
        {"kind": "noise", "n_samples": 4 * S, "seed": 777, "level": 0.005},
        {"kind": "clip", "clip": "jfk"},
        {"kind": "zeros", "n_samples": 4 * S},
    ]),
    ("silence_20s", [{"kind": "zeros", "n_samples": 20 * S}]),
    ("white_noise_10s", [{"kind": "noise", "n_samples": 10 * S, "seed": 2024, "level": 0.3}]),
    ("tones", [{"kind": "sine", "n_samples": S // 2, "frequency": f, "amplitude": 0.3}
               for f in (440.0, 880.0, 660.0, 1320.0, 330.0, 990.0, 550.0, 1760.0)]
     + [{"kind": "zeros", "n_samples": S // 4}]
     + [{"kind": "sine", "n_samples": S, "frequency": 1000.0, "amplitude": 0.5}]),
]
NON_SPEECH = ["silence_20s", "white_noise_10s", "tones"]


def xorshift32_noise(n, seed, level):
    """make-vad-reference.py's: uniform in [-level, level), xorshift32
    (13, 17, 5), each state as a signed 32-bit integer to float32, times
    2^-31, times level (float32)."""
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
    return np.array([amplitude * math.sin(2 * math.pi * frequency * k / SAMPLE_RATE)
                     for k in range(n)], dtype=np.float64).astype(np.float32)


def assemble(parts, pcms):
    out = []
    for p in parts:
        if p["kind"] == "clip":
            out.append(pcms[p["clip"]])
        elif p["kind"] == "zeros":
            out.append(np.zeros(p["n_samples"], dtype=np.float32))
        elif p["kind"] == "noise":
            out.append(xorshift32_noise(p["n_samples"], p["seed"], p["level"]))
        elif p["kind"] == "sine":
            out.append(sine(p["n_samples"], p["frequency"], p["amplitude"]))
        else:
            raise ValueError(p["kind"])
    return np.ascontiguousarray(np.concatenate(out), dtype=np.float32)


def segments_of(segments):
    return [{"start": float(s.start), "end": float(s.end), "text": s.text,
             "tokens": [int(t) for t in s.tokens]} for s in segments]


def time_map_cases(speech_chunks):
    """SpeechTimestampsMap on the chunks: chunk index and original time of
    query times (every chunk end exactly, around it, inside), with and
    without is_end, and restore_speech_timestamps()'s rule for words."""
    from faster_whisper.vad import SpeechTimestampsMap
    m = SpeechTimestampsMap(speech_chunks, SAMPLE_RATE)
    times = set()
    for e in m.chunk_end_sample:
        for d in (-321, -1, 0, 1, 160, 999):
            times.add(round((e + d) / SAMPLE_RATE, 6))
        times.add(e / SAMPLE_RATE)
    for k in range(0, 200):
        times.add(round(k * 0.37, 2))  # segment times are multiples of 0.02 and sums
    times = sorted(t for t in times if t >= 0)
    queries = []
    for t in times:
        for is_end in (False, True):
            queries.append({"time": t, "is_end": is_end,
                            "chunk_index": int(m.get_chunk_index(t, is_end)),
                            "original": float(m.get_original_time(t, None, is_end))})
    words = []
    for i in range(0, len(times) - 1, 3):
        a, b = times[i], times[i + 1]
        mid = m.get_chunk_index((a + b) / 2)
        words.append({"start": a, "end": b, "restored_start": float(m.get_original_time(a, mid)),
                      "restored_end": float(m.get_original_time(b, mid))})
    return {"speech": [[int(c["start"]), int(c["end"])] for c in speech_chunks],
            "queries": queries, "words": words}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transcribe-bin", default=os.path.join("build", "engine", "cli", "whisper-transcribe"))
    p.add_argument("--out", default=os.path.join(HERE, "reference"))
    p.add_argument("--source-root", default=os.environ.get("WHISPER_SOURCE_ROOT", SOURCE_ROOT))
    p.add_argument("--shared-data", default=os.environ.get(
        "WHISPER_SHARED_DATA", os.path.join(SOURCE_ROOT, "..", "shared", "data")))
    p.add_argument("--pcm-source", choices=["transcribe"], default="transcribe")
    args = p.parse_args()

    import ctranslate2
    import faster_whisper
    from faster_whisper import WhisperModel
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    model = os.path.join(os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"),
                         "gst-whisper", "models", "tiny.en")
    if not os.path.isfile(os.path.join(model, "model.bin")):
        sys.exit(f"make-vad-filter-reference: no model at {model} (tools/fetch-model.sh tiny.en)")
    with open(os.path.join(model, "model.bin"), "rb") as f:
        model_sha = hashlib.sha256(f.read()).hexdigest()
    wm = WhisperModel(model, device="cpu", compute_type="float32", cpu_threads=1, num_workers=1)

    pcms = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, root, rel, channel in CLIPS:
            pcms[name] = mr.load_pcm(args, root, rel, channel, tmp)

    with_filter = dict(mr.TRANSCRIBE_OPTIONS)
    with_filter["vad_filter"] = True
    without = dict(mr.TRANSCRIBE_OPTIONS)
    without["vad_filter"] = False

    signals = []
    for name, root, rel, channel in CLIPS:
        if name in TRANSCRIBED_CLIPS:
            signals.append(({"name": name, "root": root, "path": rel, "channel": channel},
                            pcms[name]))
    for name, parts in SYNTHETIC:
        signals.append(({"name": name, "parts": parts}, assemble(parts, pcms)))

    out = []
    gaps_speech = None
    for spec, pcm in signals:
        speech = get_speech_timestamps(pcm, VadOptions())
        segs, _ = wm.transcribe(pcm, **with_filter)
        segs = segments_of(segs)
        plain, _ = wm.transcribe(pcm, **without)
        plain_text = "".join(s.text for s in plain)
        kept = sum(c["end"] - c["start"] for c in speech)
        entry = dict(spec)
        entry.update(mr.pcm_facts(pcm))
        entry.update({
            "non_speech": spec["name"] in NON_SPEECH,
            "speech": [[int(c["start"]), int(c["end"])] for c in speech],
            "speech_fraction": kept / pcm.size,
            "segments": segs,
            "text": "".join(s["text"] for s in segs),
            "text_without_filter": plain_text,
        })
        if spec["name"] == "gaps":
            gaps_speech = speech
        out.append(entry)
        print(f"make-vad-filter-reference: {spec['name']}: {pcm.size / SAMPLE_RATE:.1f} s, "
              f"{len(speech)} speech chunks ({100 * kept / pcm.size:.0f} %): "
              + entry["text"][:100], file=sys.stderr)

    hand = [{"start": 0, "end": 16000}, {"start": 48000, "end": 50000},
            {"start": 50000, "end": 96321}, {"start": 200000, "end": 200512}]
    argv = ["python3", "tests/vad/make-vad-filter-reference.py",
            "--transcribe-bin", "build/engine/cli/whisper-transcribe", "--out", "tests/vad/reference"]
    provenance = {
        "command": shlex.join(argv),
        "faster_whisper": faster_whisper.__version__,
        "ctranslate2": ctranslate2.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "model": f"tiny.en, CTranslate2 directory (float16 weights), model.bin sha256 {model_sha}",
        "model_options": "WhisperModel(path, device='cpu', compute_type='float32', cpu_threads=1)",
        "pcm_source": "whisper-transcribe --dump-pcm (libsndfile + libsamplerate)",
        "vad_options": "vad_parameters=None: VadOptions() " + repr(VadOptions()),
    }
    os.makedirs(args.out, exist_ok=True)
    mr.write_json(os.path.join(args.out, "vad-filter-reference.json"), {
        "provenance": provenance,
        "transcribe_options": with_filter,
        "signals": out,
        "time_maps": [time_map_cases(gaps_speech), time_map_cases(hand)],
    })
    print("make-vad-filter-reference: vad-filter-reference.json", file=sys.stderr)


if __name__ == "__main__":
    main()
