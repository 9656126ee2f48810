#!/usr/bin/env python3
"""Long files decoded in batches, side by side in one run.

Ours (`whisper-transcribe --batch-size N`: engine/src/core/whisper-batched.h) against
faster-whisper 1.2.1's BatchedInferencePipeline(model).transcribe(audio,
batch_size=N) with float32 and int8 weights, on the live measurements'
real-speech programme (tests/element/programme.h: jfk.wav, the left channel
of stereo_diarization.wav and Debian's LibriVox clips with their published
transcripts, 1-2 s of quiet noise between clips, looped to --minutes),
written out by build/tests/element/programme-dump. For each contender: the
wall time of the transcription with the model loaded (median of --runs; the
model load is not counted, for anyone), the peak resident memory of its
process, and the word error rate against the published text (the
normalisation of tools/benchmark.py). With --sequential, ours without
batches too (every window conditioned on the text before it: the accuracy
that batching trades); with --fast, ours with --precision fast as well.

    python3 tools/bench-batched.py [--model DIR] [--batch-size 8] [--minutes 10]
                                   [--runs 3] [--threads 2] [--build-dir build]
                                   [--sequential] [--fast] [--markdown FILE]

Needs faster-whisper 1.2.1 (tools/benchmark.sh installs it) and a build
(tools/setup.sh). The machine should be otherwise idle.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
sys.path.insert(0, str(TOOLS))
import benchmark as bm  # noqa: E402  (wer(), write_wav16(), to_int16(), default_model_dir(), proc_status_kb())


def fw_worker(args):
    """One faster-whisper contender in its own process: JSON on stdout."""
    import numpy as np
    from faster_whisper import BatchedInferencePipeline, WhisperModel
    audio = np.load(args.fw_worker_npy)
    t0 = time.monotonic()
    model = WhisperModel(args.model, device="cpu", compute_type=args.fw_worker_type,
                         cpu_threads=args.threads)
    load_s = time.monotonic() - t0
    pipe = BatchedInferencePipeline(model=model)
    times, text = [], ""
    for _ in range(args.runs):
        t0 = time.monotonic()
        segments, _info = pipe.transcribe(audio, batch_size=args.batch_size)
        text = "".join(s.text for s in segments)
        times.append(time.monotonic() - t0)
    json.dump({"times": times, "load_s": load_s, "text": text,
               "peak_rss_kib": bm.proc_status_kb("VmHWM")}, sys.stdout)
    return 0


def run_fw(args, npy, compute_type):
    cmd = [sys.executable, __file__, "--fw-worker-npy", str(npy), "--fw-worker-type",
           compute_type, "--model", args.model, "--runs", str(args.runs),
           "--batch-size", str(args.batch_size), "--threads", str(args.threads)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def run_ours(args, cli, wav, batch_size, precision="exact"):
    times, text, rss = [], "", 0.0
    for _ in range(args.runs):
        cmd = [str(cli), "--model", args.model, "--threads", str(args.threads), "--format", "text",
               "--precision", precision, "--stats", str(wav)]
        if batch_size:
            cmd[1:1] = ["--batch-size", str(batch_size)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
        m = re.search(r"transcribe ([\d.]+) s", out.stderr)
        r = re.search(r"([\d.]+) MiB in all", out.stderr)
        if not m or not r:
            raise RuntimeError(f"no --stats timings from {cli}: {out.stderr[-500:]}")
        times.append(float(m.group(1)))
        rss = max(rss, float(r.group(1)) * 1024)
        text = out.stdout
    return {"times": times, "text": text, "peak_rss_kib": rss}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=str(bm.default_model_dir()))
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--build-dir", default=str(ROOT / "build"))
    ap.add_argument("--shared-data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--librivox", default="/usr/share/pocketsphinx/test/data/librivox")
    ap.add_argument("--sequential", action="store_true")
    ap.add_argument("--fast", action="store_true",
                    help="ours with --precision fast too (bfloat16 products: a CPU with AVX-512)")
    ap.add_argument("--markdown")
    ap.add_argument("--fw-worker-npy", help=argparse.SUPPRESS)
    ap.add_argument("--fw-worker-type", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.fw_worker_npy:
        return fw_worker(args)

    import numpy as np
    build = Path(args.build_dir)
    cli = build / "engine" / "cli" / "whisper-transcribe"
    dump = build / "tests" / "element" / "programme-dump"
    for p in (cli, dump):
        if not p.exists():
            sys.exit(f"bench-batched: {p} is missing: build first (bash tools/setup.sh)")
    with tempfile.TemporaryDirectory() as tmp:
        f32, txt = Path(tmp) / "programme.f32", Path(tmp) / "programme.txt"
        subprocess.run([str(dump), "--minutes", str(args.minutes), args.shared_data, args.librivox,
                        str(f32), str(txt)], check=True, stdout=subprocess.DEVNULL)
        pcm = np.fromfile(f32, dtype="<f4")
        published = txt.read_text()
        # one 16-bit WAV for ours and the same samples as floats for faster-whisper
        i16 = bm.to_int16(pcm)
        wav = Path(tmp) / "programme.wav"
        bm.write_wav16(wav, i16)
        npy = Path(tmp) / "programme.npy"
        np.save(npy, i16.astype(np.float32) / 32768.0)
        seconds = len(pcm) / 16000.0

        rows = []
        contenders = [(f"ours, --batch-size {args.batch_size}",
                       lambda: run_ours(args, cli, wav, args.batch_size)),
                      (f"faster-whisper batched ({args.batch_size}), float32",
                       lambda: run_fw(args, npy, "float32")),
                      (f"faster-whisper batched ({args.batch_size}), int8",
                       lambda: run_fw(args, npy, "int8"))]
        if args.fast:
            contenders.insert(1, (f"ours, --batch-size {args.batch_size} --precision fast",
                                  lambda: run_ours(args, cli, wav, args.batch_size, "fast")))
        if args.sequential:
            contenders.append(("ours, sequential (conditioned)", lambda: run_ours(args, cli, wav, 0)))
        results = {}
        for name, run in contenders:
            print(f"bench-batched: {name} ...", file=sys.stderr, flush=True)
            results[name] = run()
        ours = statistics.median(results[contenders[0][0]]["times"])
        for name, _ in contenders:
            r = results[name]
            t = statistics.median(r["times"])
            rows.append([name, f"{t:.2f}", f"{ours / t:.2f}", f"{seconds / t:.1f}",
                         f"{r['peak_rss_kib'] / 1024:.0f}", f"{100 * bm.wer(published, r['text']):.1f}"])
    head = ["contender", "wall s (median)", "ours / it", "x real time", "peak RSS MiB",
            "WER % (published)"]
    print(f"audio: the programme, {seconds:.1f} s; model {args.model}; {args.threads} threads; "
          f"{args.runs} runs each")
    table = "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] +
                      ["| " + " | ".join(r) + " |" for r in rows]) + "\n"
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
