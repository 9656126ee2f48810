#!/usr/bin/env python3
"""long-wer.py: word error rate of whisper-transcribe (exact and int8) and
of faster-whisper (float32 and int8) on long recordings with a reference
(tools/make-long-reference.py), per model.

    python3 tools/long-wer.py [--build DIR] [--models tiny.en,base]
                              [--dir build/long-reference] [--threads N]

Both run their default transcription (beam 5, temperature fallback,
conditioning on the previous text; ours with its voice activity
detector and silence rules, faster-whisper without vad_filter), int8
quantized at load (whisper-transcribe --precision int8, faster-whisper
compute_type int8). WER: tools/benchmark.py's (lowercase, punctuation
stripped, word-level Levenshtein over the reference's words; numbers
written in digits count as errors against words, the same for every
contender). Prints a Markdown table, and every transcript to DIR/out/.
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share")),
                      "gst-whisper", "models")


def load_wer():
    spec = importlib.util.spec_from_file_location("benchmark", os.path.join(ROOT, "tools",
                                                                           "benchmark.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.wer


def ours(cli, model, precision, audio, threads):
    cmd = [cli, "--device", "cpu", "--model", model, "--precision", precision,
           "--format", "text", audio]
    if threads:
        cmd[1:1] = ["--threads", str(threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"long-wer: {' '.join(cmd)} failed: {r.stderr.strip()}")
    return r.stdout


def faster_whisper(model, compute_type, audio, threads):
    from faster_whisper import WhisperModel
    m = WhisperModel(model, device="cpu", compute_type=compute_type, cpu_threads=threads or 0)
    segments, _ = m.transcribe(audio, language="en")
    return " ".join(s.text.strip() for s in segments)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default="tiny.en,base")
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "long-reference"))
    ap.add_argument("--halves", default="dev,held-out")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--no-faster-whisper", action="store_true")
    a = ap.parse_args()
    wer = load_wer()
    cli = os.path.join(a.build, "engine", "cli", "whisper-transcribe")
    out = os.path.join(a.dir, "out")
    os.makedirs(out, exist_ok=True)
    contenders = [("ours", "exact"), ("ours", "int8")]
    if not a.no_faster_whisper:
        contenders += [("faster-whisper", "float32"), ("faster-whisper", "int8")]
    print("| model | recording | " + " | ".join(f"{c} {p}" for c, p in contenders) +
          " | int8 − exact (ours) |")
    print("|---|---|" + "---|" * (len(contenders) + 1))
    for name in a.models.split(","):
        model = os.path.join(MODELS, name)
        for half in a.halves.split(","):
            base = os.path.join(a.dir, f"long-{half}")
            audio = base + ".wav"
            with open(base + ".txt") as f:
                ref = f.read()
            n_words = len(ref.split())
            cells, got = [], {}
            for who, prec in contenders:
                t0 = time.monotonic()
                text = (ours(cli, model, prec, audio, a.threads) if who == "ours"
                        else faster_whisper(model, prec, audio, a.threads))
                wall = time.monotonic() - t0
                with open(os.path.join(out, f"{name}-{half}-{who}-{prec}.txt"), "w") as f:
                    f.write(text)
                got[(who, prec)] = 100 * wer(ref, text)
                cells.append(f"{got[(who, prec)]:.2f} ({wall:.0f} s)")
                print(f"long-wer: {name} {half} {who} {prec}: {got[(who, prec)]:.2f} % "
                      f"({wall:.0f} s)", file=sys.stderr)
            diff = got[("ours", "int8")] - got[("ours", "exact")]
            print(f"| {name} | {half} ({n_words} words) | " + " | ".join(cells) +
                  f" | {diff:+.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
