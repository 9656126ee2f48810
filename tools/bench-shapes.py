#!/usr/bin/env python3
"""Encoder per window and decoder per step at real model sizes, ours against
faster-whisper's CTranslate2, on random-weight models both load.

Usage (from the repository root, after a build and tools/benchmark.sh's
peer install):

    python3 tools/bench-shapes.py [--shapes small,medium,large-v3-turbo]
        [--steps 50] [--runs 3] [--threads 2] [--markdown FILE]

For each shape, tools/make-random-model.py writes a CTranslate2 model of
that size (float16 weights, seeded; kept in --models-dir, 0.5 to 1.6 GB
each) and, in one run, four contenders time it:

  ours exact   build/tests/engine/bench-shapes MODEL exact STEPS RUNS THREADS
  ours fast    the same with precision fast (bfloat16 products on oneDNN)
  fw float32   ctranslate2.models.Whisper(compute_type="float32")
  fw int8      the same with compute_type="int8"

- encoder: one 30-s window of random log-mel values (uniform in [-1, 1]),
  one untimed warm-up, then the median of RUNS calls (ours:
  whisper_engine_encode; CTranslate2: Whisper.encode).
- decoder: STEPS tokens after the prompt (CTranslate2 generates at most
  max_length / 2 tokens, so it is asked for 2 STEPS; ours follows
  faster-whisper's max_new_tokens, see bench-shapes.c; the steps each side
  ran are in the table) (<|startoftranscript|>,
  language and task for multilingual vocabularies, <|notimestamps|>), the
  end-of-text token suppressed so neither side stops early, greedy; time per
  step = decoder time / steps, the prompt pass counted as a step on both
  sides (ours: whisper_stream_get_stats' decoder time of a
  transcription of 30 s of low noise with every skip rule off; CTranslate2:
  Whisper.generate on the encoder output computed beforehand). The median
  of RUNS after a warm-up.

Random weights give meaningless text: this measures time only. The cost of
a forward pass depends on the shapes, not on the values (except for the
number of steps, fixed here). Each contender runs in its own process, one
after the other, shape by shape. No timing is asserted anywhere.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTENDERS = ["ours-exact", "ours-fast", "fw-float32", "fw-int8"]
LABEL = {"ours-exact": "ours exact", "ours-fast": "ours fast (bf16)",
         "fw-float32": "faster-whisper float32", "fw-int8": "faster-whisper int8"}


def worker(args):
    """One CTranslate2 contender: prints a JSON line with its medians."""
    import ctranslate2
    import numpy as np
    import tokenizers
    from faster_whisper.tokenizer import Tokenizer

    model_dir = Path(args.model)
    t0 = time.perf_counter()
    model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type=args.compute_type,
                                       intra_threads=args.threads, inter_threads=1)
    load_s = time.perf_counter() - t0
    hf = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok = Tokenizer(hf, model.is_multilingual, task="transcribe",
                    language="en" if model.is_multilingual else None)
    prompt = list(tok.sot_sequence) + [tok.no_timestamps]
    rng = np.random.default_rng(1234)
    feats = rng.uniform(-1.0, 1.0, size=(1, model.n_mels, 3000)).astype(np.float32)
    sv = ctranslate2.StorageView.from_array(feats)

    enc = []
    for r in range(args.runs + 1):
        t0 = time.perf_counter()
        out = model.encode(sv, to_cpu=True)
        dt = time.perf_counter() - t0
        if r:
            enc.append(1e3 * dt)
    enc_out = model.encode(sv, to_cpu=False)
    dec, n_gen = [], 0
    for r in range(args.runs + 1):
        t0 = time.perf_counter()
        res = model.generate(enc_out, [prompt], beam_size=1, max_length=2 * args.steps,
                             suppress_tokens=[tok.eot], suppress_blank=False)
        dt = time.perf_counter() - t0
        n_gen = len(res[0].sequences_ids[0])
        if r:
            dec.append(1e3 * dt / (n_gen + 1))
    del out
    print(json.dumps({"load_s": load_s, "encoder_ms": statistics.median(enc),
                      "decoder_ms_per_step": statistics.median(dec), "decode_steps": n_gen + 1}))
    return 0


def ensure_model(shape, models_dir, log):
    d = Path(models_dir) / f"random-{shape}"
    if (d / "model.bin").exists():
        return d
    log(f"{shape}: writing a random-weight model into {d}")
    subprocess.run([sys.executable, str(ROOT / "tools" / "make-random-model.py"), str(d),
                    "--shape", shape, "--dtype", "float16"], check=True)
    return d


def run_json(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd[:3]))}... exited {r.returncode}: "
                           f"{r.stderr.strip()[-800:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="small,medium,large-v3-turbo")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--contenders", default=",".join(CONTENDERS))
    ap.add_argument("--models-dir", default=str(Path(os.environ.get(
        "XDG_CACHE_HOME", Path.home() / ".cache")) / "gst-whisper"))
    ap.add_argument("--build-dir", default=str(ROOT / "build"))
    ap.add_argument("--markdown", metavar="FILE")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--compute-type", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    bench = Path(args.build_dir) / "tests" / "engine" / "bench-shapes"
    if not bench.exists():
        log(f"bench-shapes: {bench} not found: build first (ninja -C build)")
        return 2
    contenders = [c for c in args.contenders.split(",") if c]
    results = {}
    for shape in [s for s in args.shapes.split(",") if s]:
        model = ensure_model(shape, args.models_dir, log)
        results[shape] = {}
        for c in contenders:
            time.sleep(0.5)
            try:
                if c.startswith("ours-"):
                    r = run_json([str(bench), str(model), c[5:], str(args.steps), str(args.runs),
                                  str(args.threads)])
                else:
                    r = run_json([sys.executable, __file__, "--worker", "--model", str(model),
                                  "--compute-type", c[3:], "--steps", str(args.steps),
                                  "--runs", str(args.runs), "--threads", str(args.threads)])
            except (RuntimeError, json.JSONDecodeError, IndexError) as e:
                log(f"  {shape} {c}: {e}")
                r = {"error": str(e).splitlines()[-1][:200]}
            results[shape][c] = r
            log(f"  {shape} {c}: {r}")

    lines = [f"# Encoder and decoder at real model sizes (random weights), {args.threads} threads",
             "",
             f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
             f"{platform.processor() or platform.machine()}, CPU: {cpu_model()}; "
             f"{args.steps} decode steps, median of {args.runs} runs after a warm-up. "
             "Ratios: ours / faster-whisper on medians (below 1: ours is faster).",
             "",
             "| shape | contender | encoder ms/window | decoder ms/step (steps) | ours exact / fw f32 "
             "(enc, dec) | ours fast / fw int8 (enc, dec) |",
             "|---|---|---|---|---|---|"]
    for shape, rs in results.items():
        def ratio(a, b, key):
            x, y = rs.get(a, {}).get(key), rs.get(b, {}).get(key)
            return f"{x / y:.2f}" if x and y else "—"
        for c in contenders:
            r = rs.get(c, {})
            if "error" in r:
                lines.append(f"| {shape} | {LABEL[c]} | — | — | {r['error']} | |")
                continue
            extra_exact = extra_fast = ""
            if c == "ours-exact":
                extra_exact = (f"{ratio('ours-exact', 'fw-float32', 'encoder_ms')}, "
                               f"{ratio('ours-exact', 'fw-float32', 'decoder_ms_per_step')}")
            if c == "ours-fast":
                extra_fast = (f"{ratio('ours-fast', 'fw-int8', 'encoder_ms')}, "
                              f"{ratio('ours-fast', 'fw-int8', 'decoder_ms_per_step')}")
            lines.append(f"| {shape} | {LABEL[c]} | {r['encoder_ms']:.0f} | "
                         f"{r['decoder_ms_per_step']:.2f} ({r['decode_steps']}) | {extra_exact} | {extra_fast} |")
    report = "\n".join(lines) + "\n"
    print(report)
    if args.markdown:
        Path(args.markdown).write_text(report)
    return 0


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    sys.exit(main())
