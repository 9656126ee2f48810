#!/usr/bin/env python3
"""The engine's audio input (whisper_audio_load_file, through
`whisper-transcribe --dump-pcm`) against references that share none of its
code, so that an error in decoding, channel selection or resampling cannot
hide in fixtures the project made itself:

- WAV: the samples must equal int16 / 32768 exactly, as Python's own `wave`
  module reads them (jfk.wav; both channels of stereo_diarization.wav, which
  also pins the channel order: --channel 0 is the left one).
- Resampling: a stereo 44.1-kHz WAV of known sines written here; the 16-kHz
  result must match the same sines computed at 16 kHz (the mathematical
  answer) per channel and for the mix, above RESAMPLE_SNR_DB.
- MP3: decoded and resampled by PyAV (FFmpeg's decoder and libswresample;
  installed with faster-whisper) against ours (libsndfile's mpg123 decoder
  and libsamplerate), above MP3_SNR_DB, same length within one sample.

Usage: test-audio-independent.py WHISPER_TRANSCRIBE
"""

import math
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np

try:
    import av
except ImportError:
    print("SKIP: PyAV (a dependency of faster-whisper) is not installed")
    sys.exit(77)

# Measured: 92-94 dB on the sines (libsamplerate's best sinc, int16 input);
# 39.1 dB on multilingual.mp3 and 46.7 dB on hotwords.mp3 between the two MP3
# decoder + resampler chains (at lag 0: none of the chains shifts the audio).
# A resampler off by one input sample of delay, or a half-band filter, gives
# under 20 dB; a wrong channel or rate gives about 0 dB.
RESAMPLE_SNR_DB = 80.0
MP3_SNR_DB = 33.0

cli = sys.argv[1]
shared = os.environ.get("WHISPER_SHARED_DATA",
                        os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data"))
failures = []
passes = []


def ok(message):
    print(f"ok: {message}")
    passes.append(message)


def fail(message):
    print(f"FAIL: {message}")
    failures.append(message)


def ours(path, channel=None, tmp="/tmp"):
    out = os.path.join(tmp, "pcm.f32")
    args = [cli, "--dump-pcm", out, path] + (["--channel", str(channel)] if channel is not None
                                             else [])
    subprocess.run(args, check=True)
    return np.fromfile(out, dtype="<f4")


def wav_channels(path):
    with wave.open(path, "rb") as w:
        assert w.getsampwidth() == 2, f"{path}: not 16-bit"
        frames = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        return frames.reshape(-1, w.getnchannels()).astype(np.float32) / 32768.0


def snr_db(got, want):
    noise = np.sum((got.astype(np.float64) - want) ** 2)
    return math.inf if noise == 0 else 10 * math.log10(np.sum(want.astype(np.float64) ** 2) / noise)


def pyav_16k(path, layout):
    container = av.open(path)
    resampler = av.AudioResampler(format="flt", layout=layout, rate=16000)
    chunks = []
    for frame in container.decode(audio=0):
        chunks += [f.to_ndarray().reshape(-1) for f in resampler.resample(frame)]
    chunks += [f.to_ndarray().reshape(-1) for f in resampler.resample(None)]
    container.close()
    channels = 2 if layout == "stereo" else 1
    return np.concatenate(chunks).reshape(-1, channels)


with tempfile.TemporaryDirectory() as tmp:
    # WAV, exact
    jfk = os.path.join(shared, "jfk.wav")
    want = wav_channels(jfk)[:, 0]
    got = ours(jfk, tmp=tmp)
    if got.shape == want.shape and np.array_equal(got, want):
        ok(f"jfk.wav: {len(got)} samples = int16 / 32768 exactly")
    else:
        fail(f"jfk.wav: samples differ from int16 / 32768 ({len(got)} vs {len(want)})")

    stereo = os.path.join(shared, "stereo_diarization.wav")
    channels = wav_channels(stereo)
    for c, side in ((0, "left"), (1, "right")):
        got = ours(stereo, c, tmp=tmp)
        if got.shape == channels[:, c].shape and np.array_equal(got, channels[:, c]):
            ok(f"stereo_diarization.wav: --channel {c} is the {side} channel exactly")
        else:
            fail(f"stereo_diarization.wav: --channel {c} is not the {side} channel")
    got = ours(stereo, tmp=tmp)
    mix = (channels[:, 0] + channels[:, 1]) / 2
    if got.shape == mix.shape and np.max(np.abs(got - mix)) <= 1e-7:
        ok("stereo_diarization.wav: the default is the mean of the channels")
    else:
        fail("stereo_diarization.wav: the default is not the mean of the channels")

    # Resampling, against the mathematical answer
    rate, seconds = 44100, 3.0
    left = [(440.0, 0.3), (1234.5, 0.2), (6000.0, 0.1)]
    right = [(300.0, 0.25), (3100.0, 0.25), (7200.0, 0.05)]

    def sines(parts, t):
        return sum(a * np.sin(2 * np.pi * f * t) for f, a in parts)

    t_in = np.arange(int(rate * seconds)) / rate
    pcm = np.stack([sines(left, t_in), sines(right, t_in)], axis=1)
    synthetic = os.path.join(tmp, "sines-44100.wav")
    with wave.open(synthetic, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.round(pcm * 32767).astype("<i2").tobytes())
    t_out = np.arange(int(16000 * seconds)) / 16000.0
    edge = 1600  # the filter's start and end transients: 0.1 s each side
    scale = 32767 / 32768
    for channel, parts, what in ((0, left, "left"), (1, right, "right"),
                                 (None, left + right, "mix")):
        got = ours(synthetic, channel, tmp=tmp)
        want = sines(parts, t_out) * scale * (0.5 if channel is None else 1.0)
        n = min(len(got), len(want))
        if abs(len(got) - len(want)) > 1:
            fail(f"44.1 kHz sines, {what}: {len(got)} samples at 16 kHz, expected {len(want)}")
            continue
        snr = snr_db(got[edge:n - edge], want[edge:n - edge])
        (ok if snr >= RESAMPLE_SNR_DB else fail)(
            f"44.1 kHz sines -> 16 kHz, {what}: SNR {snr:.1f} dB (bound {RESAMPLE_SNR_DB} dB)")

    # MP3, against PyAV
    for name, layout in (("multilingual.mp3", "mono"), ("hotwords.mp3", "stereo")):
        path = os.path.join(shared, name)
        ref = pyav_16k(path, layout)
        for channel in ((None,) if layout == "mono" else (0, 1, None)):
            got = ours(path, channel, tmp=tmp)
            want = ref[:, 0] if layout == "mono" else ref.mean(axis=1) if channel is None \
                else ref[:, channel]
            what = f"{name} ({'mix' if channel is None else f'channel {channel}'})"
            if abs(len(got) - len(want)) > 1:
                fail(f"{what}: {len(got)} samples, PyAV {len(want)}")
                continue
            n = min(len(got), len(want))
            snr = snr_db(got[:n], want[:n])
            (ok if snr >= MP3_SNR_DB else fail)(
                f"{what}: SNR {snr:.1f} dB against PyAV (bound {MP3_SNR_DB} dB)")

print(f"{len(passes)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
