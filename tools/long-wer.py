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
compute_type int8). WER: word-level Levenshtein over the reference's
words, both texts through tools/benchmark.py's normalize_words (lowercase,
punctuation stripped) and then every number written in digits spelled
out (whole numbers below a million: "10" and "ten", "7:45" and "seven
forty five" are the same words; "8%" is "eight" against "eight percent").
Prints a Markdown table (and per model a row of all its recordings, and
with --dither one of every run), and
every transcript to DIR/out/; --rescore scores the transcripts already
there instead of transcribing again. --dither K also runs ours on K copies
of each recording with seeded noise of at most one 16-bit step added
(inaudible: how far the word errors move when the samples move by a last
bit), and gives their word errors after the recording's.
"""
import argparse
import importlib.util
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share")),
                      "gst-whisper", "models")


ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen").split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def spelled(n):
    """Words of 0 <= n < 1e6, as read aloud ("three hundred and twenty")."""
    if n < 20:
        return [ONES[n]]
    if n < 100:
        return [TENS[n // 10]] + ([ONES[n % 10]] if n % 10 else [])
    if n < 1000:
        return [ONES[n // 100], "hundred"] + (["and"] + spelled(n % 100) if n % 100 else [])
    return spelled(n // 1000) + ["thousand"] + (spelled(n % 1000) if n % 1000 else [])


def load_normalize():
    spec = importlib.util.spec_from_file_location("benchmark", os.path.join(ROOT, "tools",
                                                                           "benchmark.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def words(text):
        out = []
        text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)   # 40,000: one number
        for w in module.normalize_words(text):
            out += spelled(int(w)) if w.isdigit() and int(w) < 1000000 else [w]
        return out
    return words, module.word_distance


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


def dithered(audio, seed):
    """A copy of audio (16-bit WAV) with -1, 0 or +1 added to each sample."""
    import wave
    import numpy as np
    path = audio[:-4] + f"-d{seed}.wav"
    if not os.path.exists(path):
        with wave.open(audio) as w:
            x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.int32)
        y = x + np.random.default_rng(seed).integers(-1, 2, size=x.shape)
        with wave.open(path, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(16000)
            w.writeframes(np.clip(y, -32768, 32767).astype("<i2").tobytes())
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default="tiny.en,base")
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "long-reference"))
    ap.add_argument("--halves", default="dev,held-out")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--no-faster-whisper", action="store_true")
    ap.add_argument("--dither", type=int, default=0, metavar="K")
    ap.add_argument("--rescore", action="store_true",
                    help="score the transcripts in DIR/out instead of transcribing")
    a = ap.parse_args()
    words, word_errors = load_normalize()
    cli = os.path.join(a.build, "engine", "cli", "whisper-transcribe")
    out = os.path.join(a.dir, "out")
    os.makedirs(out, exist_ok=True)
    contenders = [("ours", "exact"), ("ours", "int8")]
    if not a.no_faster_whisper:
        contenders += [("faster-whisper", "float32"), ("faster-whisper", "int8")]
    print("WER % (word errors)\n")
    print("| model | recording | " + " | ".join(f"{c} {p}" for c, p in contenders) +
          " | int8 − exact (ours) |")
    print("|---|---|" + "---|" * (len(contenders) + 1))
    for name in a.models.split(","):
        total_words, total = 0, {c: 0 for c in contenders}
        every = {c: [0, 0] for c in contenders}   # errors, words over every run
        model = os.path.join(MODELS, name)
        for half in a.halves.split(","):
            base = os.path.join(a.dir, f"long-{half}")
            audio = base + ".wav"
            with open(base + ".txt") as f:
                ref = words(f.read())
            n_words = len(ref)
            cells, got = [], {}
            for who, prec in contenders:
                runs = [("", audio)]
                if who == "ours":
                    runs += [(f"-d{k}", dithered(audio, k)) for k in range(1, a.dither + 1)]
                counts = []
                for tag, wav in runs:
                    path = os.path.join(out, f"{name}-{half}{tag}-{who}-{prec}.txt")
                    if a.rescore:
                        with open(path) as f:
                            text = f.read()
                    else:
                        t0 = time.monotonic()
                        text = (ours(cli, model, prec, wav, a.threads) if who == "ours"
                                else faster_whisper(model, prec, wav, a.threads))
                        print(f"long-wer: {name} {half}{tag} {who} {prec}: "
                              f"{time.monotonic() - t0:.0f} s", file=sys.stderr)
                        with open(path, "w") as f:
                            f.write(text)
                    counts.append(word_errors(ref, words(text)))
                errors = counts[0]
                total[(who, prec)] += errors
                every[(who, prec)][0] += sum(counts)
                every[(who, prec)][1] += n_words * len(counts)
                got[(who, prec)] = 100 * errors / len(ref)
                more = f"; dithered {', '.join(map(str, counts[1:]))}" if len(counts) > 1 else ""
                cells.append(f"{got[(who, prec)]:.2f} ({errors}{more})")
            total_words += n_words
            diff = got[("ours", "int8")] - got[("ours", "exact")]
            print(f"| {name} | {half} ({n_words} words) | " + " | ".join(cells) +
                  f" | {diff:+.2f} |", flush=True)
        pct = {c: 100 * total[c] / max(total_words, 1) for c in contenders}
        print(f"| {name} | all ({total_words} words) | " +
              " | ".join(f"{pct[c]:.2f} ({total[c]})" for c in contenders) +
              f" | {pct[('ours', 'int8')] - pct[('ours', 'exact')]:+.2f} |", flush=True)
        if a.dither:
            pct = {c: 100 * e / max(n, 1) for c, (e, n) in every.items()}
            print(f"| {name} | all, dithered copies too | " +
                  " | ".join(f"{pct[c]:.2f} ({every[c][0]} of {every[c][1]})" for c in contenders) +
                  f" | {pct[('ours', 'int8')] - pct[('ours', 'exact')]:+.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
