#!/usr/bin/env python3
"""tools/make-random-model.py writes models that both loaders take.

For a tiny custom shape (d_model 64, 1 layer, 2 heads), in float32 and
float16, and for a large-v3-like vocabulary and mel count (51866 tokens,
128 mels, still d_model 64):
1. the same arguments give the same bytes (seeded);
2. every weight is finite, layer-norm gammas are 1 and betas 0
   (read back with tools/ct2-to-ggml.py's independent model.bin reader);
3. the engine's loader (whisper-transcribe, the ct2 loader in
   engine/src/model/) loads it and transcribes 1 s of noise without error;
4. CTranslate2 (faster_whisper.WhisperModel on CPU) loads it and transcribes
   the same second without error.
And --shape tiny.en (float16) has the installed tiny.en's variables (names,
shapes, dtypes, in the same order) and the same model.bin size.

Usage: test-random-model.py MAKE_RANDOM_MODEL CT2_TO_GGML WHISPER_TRANSCRIBE
Vocabulary files come from the installed tiny.en and base models
(tools/fetch-model.sh [base]); faster-whisper missing: exit 77 after 1-3.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np

tool, converter_path, cli = sys.argv[1:4]
spec = importlib.util.spec_from_file_location("ct2_to_ggml", converter_path)
ct2_to_ggml = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ct2_to_ggml)

VARIANTS = {
    "f32": ["--dtype", "float32"],
    "f16": ["--dtype", "float16"],
    "v3-like": ["--dtype", "float16", "--vocab", "51866", "--n-mels", "128"],
}
BASE = ["--d-model", "64", "--layers", "1", "--heads", "2", "--seed", "5"]


def make(out, extra):
    subprocess.run([sys.executable, tool, out] + BASE + extra, check=True)


def check_weights(model_dir, n_mels):
    model = ct2_to_ggml.Ct2Model(os.path.join(model_dir, "model.bin"))
    names = list(model.variables)
    assert "encoder/conv1/weight" in names, names[:5]
    for name in names:
        value = model.raw(name)
        if value.dtype.kind == "f":
            assert np.all(np.isfinite(value)), f"{name}: not finite"
        if name.endswith("layer_norm/gamma"):
            assert np.all(value == 1.0), name
        if name.endswith("layer_norm/beta"):
            assert np.all(value == 0.0), name
    conv1 = model.floats("encoder/conv1/weight")
    assert conv1.shape == (64, n_mels, 3), conv1.shape
    assert 0.01 < float(np.std(conv1)) < 0.03, np.std(conv1)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        wav = os.path.join(tmp, "noise.wav")
        pcm = np.random.default_rng(1).standard_normal(16000) * 0.1
        with wave.open(wav, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(16000)
            w.writeframes((pcm * 32767).astype("<i2").tobytes())

        dirs = {}
        for label, extra in VARIANTS.items():
            d = dirs[label] = os.path.join(tmp, label)
            make(d, extra)
            again = os.path.join(tmp, label + "-again")
            make(again, extra)
            for name in os.listdir(d):
                with open(os.path.join(d, name), "rb") as a, \
                        open(os.path.join(again, name), "rb") as b:
                    assert a.read() == b.read(), f"{label}/{name} differs between runs"
            check_weights(d, 128 if "v3" in label else 80)
            out = subprocess.run([cli, "--model", d, "--device", "cpu", "-t", "1",
                                  "--format", "json", wav],
                                 capture_output=True, text=True)
            assert out.returncode == 0, f"engine on {label}: {out.stderr}"
            json.loads(out.stdout)
            print(f"{label}: engine loaded and transcribed 1 s")

        with open(os.path.join(dirs["v3-like"], "vocabulary.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        assert len(vocab) == 51866 and vocab[50358] == "<|yue|>" and \
            vocab[50359] == "<|translate|>", vocab[50356:50362]

        real_dir = os.path.join(os.environ.get("XDG_DATA_HOME") or
                                os.path.expanduser("~/.local/share"),
                                "gst-whisper", "models", "tiny.en")
        shaped = os.path.join(tmp, "tiny.en")
        subprocess.run([sys.executable, tool, shaped, "--shape", "tiny.en"], check=True)
        ours = ct2_to_ggml.Ct2Model(os.path.join(shaped, "model.bin"))
        real = ct2_to_ggml.Ct2Model(os.path.join(real_dir, "model.bin"))
        layout = [(n, v.shape, v.dtype) for n, v in ours.variables.items()]
        want = [(n, v.shape, v.dtype) for n, v in real.variables.items()]
        assert layout == want, [x for x in layout if x not in want][:3] + \
            [x for x in want if x not in layout][:3]
        assert ours.aliases == real.aliases, (ours.aliases, real.aliases)
        assert os.path.getsize(os.path.join(shaped, "model.bin")) == \
            os.path.getsize(os.path.join(real_dir, "model.bin"))
        print("tiny.en shape: the installed tiny.en's layout and size")

        try:
            from faster_whisper import WhisperModel
        except ImportError as e:
            print(f"SKIP: faster_whisper not importable ({e}); the engine checks passed")
            return 77
        for label, d in dirs.items():
            model = WhisperModel(d, device="cpu", compute_type="float32", cpu_threads=1)
            segments, info = model.transcribe(pcm.astype(np.float32), language="en",
                                              beam_size=1, temperature=0.0,
                                              max_new_tokens=8, vad_filter=False,
                                              condition_on_previous_text=False)
            segments = list(segments)
            print(f"{label}: faster-whisper loaded it, {len(segments)} segments "
                  f"({info.duration:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
