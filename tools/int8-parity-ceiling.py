#!/usr/bin/env python3
"""int8-parity-ceiling.py: how often faster-whisper int8 agrees with itself
when its input moves by one float step.

    python3 tools/int8-parity-ceiling.py [--transcribe-bin BIN] [--model-dir DIR]

For every parity clip of tests/reference/make-reference.py (samples from
whisper-transcribe --dump-pcm, as the fixtures), transcribes with
faster-whisper compute_type int8 (one thread, make-reference.py's greedy
options) the samples as they are and the samples each moved one float step
up (numpy.nextafter), and prints per clip whether the tokens are
identical, then the count. Also prints, for jfk's first window, the RMS
difference of CTranslate2's int8 encoder output between the two inputs and
between int8 and float32. That count is the agreement any other
implementation whose float steps are not CTranslate2's bit for bit can
expect with it (test-int8's bound).
"""
import argparse
import importlib.util
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    MR = load_module("make_reference", os.path.join(ROOT, "tests", "reference", "make-reference.py"))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--transcribe-bin", default=os.path.join(ROOT, "build", "engine", "cli",
                                                            "whisper-transcribe"))
    p.add_argument("--model-dir", default=os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"),
        "gst-whisper", "models", "tiny.en"))
    p.add_argument("--source-root", default=MR.SOURCE_ROOT)
    p.add_argument("--shared-data", default=os.environ.get(
        "WHISPER_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data")))
    args = p.parse_args()
    args.pcm_source = "transcribe"

    import ctranslate2
    import numpy as np
    from faster_whisper import WhisperModel
    from faster_whisper.feature_extractor import FeatureExtractor

    wm = WhisperModel(args.model_dir, device="cpu", compute_type="int8", cpu_threads=1,
                      num_workers=1)

    def tokens(pcm):
        segments, _ = wm.transcribe(pcm, **MR.TRANSCRIBE_OPTIONS)
        return [t for s in segments for t in s.tokens]

    same = 0
    clips = MR.all_clips()
    with tempfile.TemporaryDirectory() as tmp:
        for name, root, rel, ch in clips:
            pcm = MR.load_pcm(args, root, rel, ch, tmp)
            moved = np.nextafter(pcm, np.float32(np.inf)).astype(np.float32)
            a, b = tokens(pcm), tokens(moved)
            same += a == b
            print(f"{name:24s} {'identical' if a == b else 'differ'} ({len(a)}/{len(b)} tokens)")
            if name == "jfk":
                jfk = pcm
    print(f"int8 against itself, input moved one float step: identical tokens on {same} of "
          f"{len(clips)} clips")

    fe = FeatureExtractor(feature_size=80)
    mel = fe(jfk)[:, :3000]
    mel = np.pad(mel, ((0, 0), (0, 3000 - mel.shape[1])))[None].astype(np.float32)
    moved = mel.copy()
    moved[moved != 0] = np.nextafter(moved[moved != 0], np.float32(np.inf))

    def encode(compute_type, x):
        m = ctranslate2.models.Whisper(args.model_dir, device="cpu", compute_type=compute_type,
                                       intra_threads=1)
        return np.array(m.encode(ctranslate2.StorageView.from_array(x), to_cpu=True))

    rms = lambda x, y: float(np.sqrt(np.mean((x - y) ** 2)))
    i8 = encode("int8", mel)
    print(f"jfk encoder output RMS: int8 vs int8 with the mel moved one step "
          f"{rms(i8, encode('int8', moved)):.4f}; int8 vs float32 {rms(i8, encode('float32', mel)):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
