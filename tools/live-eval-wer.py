#!/usr/bin/env python3
"""live-eval-wer.py: offline word error rate of ours (exact, int8) and
faster-whisper (float32, int8) on the English halves of the live
evaluation set (tests/live-eval/make-set.py), greedy and beam 5.

    python3 tools/live-eval-wer.py [--build DIR] [--set DIR]
        [--models tiny.en,base] [--halves dev,held-out] [--beams 1,5]
        [--contenders ours-exact,ours-int8,fw-float32,fw-int8]
        [--threads N] [--cap-avx2] [--dither K] [--out DIR] [--rescore]

Each programme DIR/HALF-en.wav is transcribed whole, in file mode: ours
with whisper-transcribe's defaults but --beam-size (its voice activity
detector and silence rules), faster-whisper 1.2.1 with its defaults but
beam_size, no vad_filter; language en for both. The reference is the
manifest's texts (DIR/HALF-en.tsv, fifth column) in order. Words as
tools/long-wer.py counts them (tools/benchmark.py's normalize_words, then
numbers spelled out). --cap-avx2 caps both with tools/benchmark.py
--cap-avx2's environments (CAP_AVX2_OURS, CAP_AVX2_PEERS: the same cap in
one place).
Transcripts go to --out (default build/live-eval/wer-out) and --rescore
scores those instead of transcribing again. --dither K also runs every
contender on K copies of each programme with -1, 0 or +1 added to every
sample (tools/long-wer.py's dithered(), seeds 1..K: inaudible) and gives
their word errors after the programme's. Prints a Markdown table: WER %
(word errors) per model, half and beam.
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

FW_SNIPPET = """
import sys
from faster_whisper import WhisperModel
model, ctype, audio, beam, threads = sys.argv[1:6]
m = WhisperModel(model, device="cpu", compute_type=ctype, cpu_threads=int(threads))
segments, _ = m.transcribe(audio, language="en", beam_size=int(beam))
print(" ".join(s.text.strip() for s in segments))
"""


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def transcribe(who, cli, model, audio, beam, threads, cap):
    """cap: None, or benchmark.py (its --cap-avx2 environments for each side)."""
    env = dict(os.environ)
    kind, prec = who.split("-", 1)
    if kind == "ours":
        if cap:
            env.update(cap.CAP_AVX2_OURS)
        cmd = [cli, "--device", "cpu", "--model", model, "--precision", prec,
               "--language", "en", "--beam-size", str(beam), "--threads", str(threads),
               "--format", "text", audio]
    elif kind == "fw":
        if cap:
            env.update(cap.CAP_AVX2_PEERS)
        cmd = [sys.executable, "-c", FW_SNIPPET, model, prec, audio, str(beam), str(threads)]
    else:
        sys.exit(f"live-eval-wer: unknown contender '{who}' (ours-PRECISION or fw-COMPUTE_TYPE)")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"live-eval-wer: {' '.join(cmd[:4])} ... failed: {r.stderr.strip()[-2000:]}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--set", default=None, help="the live set's folder (default BUILD/live-eval)")
    ap.add_argument("--models", default="tiny.en,base")
    ap.add_argument("--halves", default="dev,held-out")
    ap.add_argument("--beams", default="1,5")
    ap.add_argument("--contenders", default="ours-exact,ours-int8,fw-float32,fw-int8")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cap-avx2", action="store_true")
    ap.add_argument("--dither", type=int, default=0, metavar="K")
    ap.add_argument("--out", default=None)
    ap.add_argument("--rescore", action="store_true")
    a = ap.parse_args()
    set_dir = a.set or os.path.join(a.build, "live-eval")
    out = a.out or os.path.join(set_dir, "wer-out")
    os.makedirs(out, exist_ok=True)
    long_wer = load("long_wer", os.path.join(ROOT, "tools", "long-wer.py"))
    words, word_errors = long_wer.load_normalize()
    cap = load("benchmark", os.path.join(ROOT, "tools", "benchmark.py")) if a.cap_avx2 else None
    cli = os.path.join(a.build, "engine", "cli", "whisper-transcribe")
    contenders = a.contenders.split(",")
    tag = "-avx2" if a.cap_avx2 else ""
    print("| model | half | beam | " + " | ".join(contenders) + " |")
    print("|---|---|---|" + "---|" * len(contenders))
    for name in a.models.split(","):
        model = name if os.path.isabs(name) else os.path.join(MODELS, name)
        for half in a.halves.split(","):
            base = os.path.join(set_dir, f"{half}-en")
            if not os.path.exists(base + ".tsv"):
                sys.exit(f"live-eval-wer: no {base}.tsv: run tests/live-eval/make-set.py first")
            with open(base + ".tsv") as f:
                ref = words(" ".join(line.rstrip("\n").split("\t")[4] for line in f if line.strip()))
            for beam in map(int, a.beams.split(",")):
                cells = []
                audios = [("", base + ".wav")] + [
                    (f"-d{k}", long_wer.dithered(base + ".wav", k)) for k in range(1, a.dither + 1)]
                for who in contenders:
                    errors = []
                    for dtag, audio in audios:
                        path = os.path.join(out, f"{os.path.basename(name)}-{half}{dtag}-b{beam}-"
                                                 f"{who}{tag}.txt")
                        if a.rescore:
                            with open(path) as f:
                                text = f.read()
                        else:
                            t0 = time.monotonic()
                            text = transcribe(who, cli, model, audio, beam, a.threads, cap)
                            print(f"live-eval-wer: {name} {half}{dtag} beam {beam} {who}{tag}: "
                                  f"{time.monotonic() - t0:.0f} s", file=sys.stderr)
                            with open(path, "w") as f:
                                f.write(text)
                        errors.append(word_errors(ref, words(text)))
                    more = f"; dithered {', '.join(map(str, errors[1:]))}" if a.dither else ""
                    cells.append(f"{100 * errors[0] / len(ref):.2f} ({errors[0]}{more})")
                print(f"| {os.path.basename(name)} | {half} ({len(ref)} words) | {beam} | " +
                      " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
