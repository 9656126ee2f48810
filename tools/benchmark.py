#!/usr/bin/env python3
"""Side-by-side CPU benchmark: gst-whisper against faster-whisper and whisper.cpp.

Usage (from the repository root; tools/benchmark.sh installs the peers first):

    python3 tools/benchmark.py [--threads N] [--runs R] [--quick] [--cap-avx2] [--markdown FILE]

In one run, on the same machine, it transcribes the same PCM with the same
weights, the same thread count and the same decoding settings (greedy,
temperature 0 without fallback, timestamps on, conditioning on previous text,
English) with:

  ours-cli     build/engine/cli/whisper-transcribe --warmup 1 (a new process each
               run: it loads the model, transcribes the file once untimed,
               as the peers' workers do before their timed runs, then once
               more; its own --stats give that second transcription's time
               and its parts)
  ours-fast    the same with --precision fast (bfloat16 products on oneDNN
               where the CPU has them, else int8), compared with faster-whisper
               int8 and float32
  ours-int8    the same with --precision int8 (int8 weights and products, as
               faster-whisper's compute_type int8), compared likewise
  ours-gst     gst-launch-1.0 ... ! whispersink ! fakesink (a new process each
               run), when build/gst-plugin/libgstwhisper.so exists and works
  fw-float32   faster-whisper (CTranslate2), CPU, compute_type float32
  fw-int8      faster-whisper, CPU, compute_type int8
  whispercpp   whisper.cpp through pywhispercpp, with the ggml f16 file that
               tools/ct2-to-ggml.py converts from the same CTranslate2 model
  ours-q8_0, ours-q5_0, ours-q4_K, ours-q6_K
               whisper-transcribe --precision int8 on that f16 file
               quantized by tools/ggml-quantize.py (blocks kept, integer
               kernels; int8 for what the file keeps in float),
               compared with whisper.cpp on the same file:
  whispercpp-q8_0, whispercpp-q5_0, whispercpp-q4_K, whispercpp-q6_K
               (the k-quants need rows of whole 256-value super-blocks:
               base and larger, not tiny)

The peers run in worker processes of this same script (--worker KIND), one per
contender and audio file: the worker loads the model once (timed on its own),
then transcribes on request, so the peer rows time transcription alone, as a
server with the model loaded would. Peak RSS is the worker's (or the CLI
process's) ru_maxrss from wait4(). Runs are interleaved round-robin across the
contenders (the order rotates each round), after one untimed warm-up run of
each contender on each file, so drift on a shared machine hits all alike.

Audio: each source file is decoded once by `whisper-transcribe --dump-pcm`,
quantised to 16-bit, written as a 16-kHz mono WAV for the programs that read
files, and handed as the identical float32 samples (int16 / 32768, which is
what libsndfile gives our CLI for that WAV) to the in-process peers. Files:
jfk.wav (11 s) and a long recording (>= 10 min by default) assembled from the
real speech at hand with 1 to 2 s of very low noise between clips.

--cap-avx2 caps every contender at AVX2, as on a CPU without AVX-512:
CT2_FORCE_CPU_ISA=AVX2 and ONEDNN_MAX_CPU_ISA=AVX2 for faster-whisper
(CT2_FORCE_CPU_ISA caps CTranslate2's own kernels only: its matrix products
and convolutions run on the oneDNN it bundles, which reads
ONEDNN_MAX_CPU_ISA); ONEDNN_MAX_CPU_ISA=AVX2, WHISPER_CPU_NO_AVX512=1,
WHISPER_CPU_INT8=avx2 and OPENBLAS_CORETYPE=Haswell (OpenBLAS's AVX2
kernels) for ours (so ours-fast is int8 there), GGML has no
such switch (whisper.cpp runs as built).

No timing is ever asserted: the script reports, it does not judge.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import wave
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_RATE = 16000
PYWHISPERCPP_PIN = "1.5.1"
FASTER_WHISPER_PIN = "1.2.1"
ALL_CONTENDERS = ["ours-cli", "ours-fast", "ours-int8", "ours-gst", "fw-float32", "fw-int8",
                  "whispercpp", "ours-q8_0", "ours-q5_0", "whispercpp-q8_0", "whispercpp-q5_0",
                  "ours-q4_K", "whispercpp-q4_K", "ours-q6_K", "whispercpp-q6_K"]
# ours with another --precision, compared with faster-whisper int8 and float32
OURS_PRECISION = {"ours-fast": "fast", "ours-int8": "int8"}
# --cap-avx2: the environment of each side
CAP_AVX2_PEERS = {"CT2_FORCE_CPU_ISA": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
CAP_AVX2_OURS = {"ONEDNN_MAX_CPU_ISA": "AVX2", "WHISPER_CPU_NO_AVX512": "1",
                 "WHISPER_CPU_INT8": "avx2", "OPENBLAS_CORETYPE": "Haswell"}
PEERS = ["fw-float32", "fw-int8", "whispercpp", "whispercpp-q8_0", "whispercpp-q5_0",
         "whispercpp-q4_K", "whispercpp-q6_K"]
# ggml block types: ours and whisper.cpp on the same quantized file
OURS_QUANT = {"ours-q8_0": "whispercpp-q8_0", "ours-q5_0": "whispercpp-q5_0",
              "ours-q4_K": "whispercpp-q4_K", "ours-q6_K": "whispercpp-q6_K"}
# --vad: ours with the reference's rules (faster-whisper's tokens), without
# and with the VAD filter, against faster-whisper float32 without and with
# vad_filter=True
VAD_OURS = {"ours-ref": ["--reference-rules"],
            "ours-ref-vad": ["--reference-rules", "--vad-filter"]}
VAD_PEERS = ["fw-float32-vad"]
VAD_CONTENDERS = ["ours-ref", "ours-ref-vad", "fw-float32", "fw-float32-vad"]
LABEL = {
    "ours-cli": "ours: whisper-transcribe",
    "ours-fast": "ours: whisper-transcribe --precision fast",
    "ours-int8": "ours: whisper-transcribe --precision int8",
    "ours-gst": "ours: gst-launch whispersink",
    "fw-float32": "faster-whisper float32",
    "fw-int8": "faster-whisper int8",
    "whispercpp": "whisper.cpp f16 (pywhispercpp)",
    "ours-q8_0": "ours: whisper-transcribe --precision int8, ggml q8_0",
    "ours-q5_0": "ours: whisper-transcribe --precision int8, ggml q5_0",
    "whispercpp-q8_0": "whisper.cpp q8_0 (pywhispercpp)",
    "whispercpp-q5_0": "whisper.cpp q5_0 (pywhispercpp)",
    "ours-q4_K": "ours: whisper-transcribe --precision int8, ggml q4_K",
    "ours-q6_K": "ours: whisper-transcribe --precision int8, ggml q6_K",
    "whispercpp-q4_K": "whisper.cpp q4_K (pywhispercpp)",
    "whispercpp-q6_K": "whisper.cpp q6_K (pywhispercpp)",
}


# ---------------------------------------------------------------------------
# Word error rate (own, no dependency)

def normalize_words(text):
    """Lowercase, punctuation stripped (hyphens and dashes split words)."""
    text = text.lower().replace("\u2019", "'")
    text = re.sub(r"[^a-z0-9' ]+", " ", text)
    return [w for w in (w.strip("'") for w in text.split()) if w]


def word_distance(ref, hyp):
    """Word-level Levenshtein distance between two lists of words."""
    ids = {}
    r = [ids.setdefault(w, len(ids)) for w in ref]
    h = [ids.setdefault(w, len(ids)) for w in hyp]
    prev = list(range(len(h) + 1))
    for i, rw in enumerate(r, 1):
        cur = [i] + [0] * len(h)
        for j, hw in enumerate(h, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (rw != hw))
        prev = cur
    return prev[-1]


def wer(reference, hypothesis):
    """Word-level Levenshtein distance / number of reference words."""
    ref, hyp = normalize_words(reference), normalize_words(hypothesis)
    if not ref:
        return 0.0 if not hyp else float("inf")
    return word_distance(ref, hyp) / len(ref)


# ---------------------------------------------------------------------------
# Small helpers

def proc_status_kb(field, pid="self"):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def run_process(cmd, env=None):
    """Runs cmd to completion; returns (rc, wall_s, maxrss_kb, stdout, stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)
        try:
            _, status, ru = os.wait4(p.pid, 0)
        except BaseException:  # interrupted: leave no orphan behind
            p.kill()
            os.waitpid(p.pid, 0)
            p.returncode = -9
            raise
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (p.returncode, wall, ru.ru_maxrss, out.read().decode("utf-8", "replace"),
                err.read().decode("utf-8", "replace"))


def write_wav16(path, pcm_i16):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(pcm_i16.astype("<i2").tobytes())


def default_model_dir():
    env = os.environ.get("WHISPER_MODEL")
    if env:
        return env
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local/share")
    return os.path.join(data, "gst-whisper", "models", "tiny.en")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return " ".join(x for x in ("avx2", "fma", "f16c", "avx512f", "avx512_bf16",
                                                "avx512_vnni", "amx_tile") if x in flags)
    except OSError:
        pass
    return ""


def cpu_busy_seconds():
    """(non-idle CPU seconds at normal priority, niced CPU seconds) of the whole
    machine since boot, from /proc/stat. Niced work (nice 19: about 1.5 % of a
    core's share against nice 0) barely competes with the benchmark."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        hz = os.sysconf("SC_CLK_TCK")
        return ((v[0] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)) / hz, v[1] / hz)
    except (OSError, ValueError, IndexError):
        return None


def own_cpu_seconds():
    import resource
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def loadavg():
    try:
        return os.getloadavg()
    except OSError:
        return (float("nan"),) * 3


# ---------------------------------------------------------------------------
# Worker mode: one peer, one audio file, in its own process

def worker_main(args):
    # The protocol goes over a private copy of stdout; anything the libraries
    # print to stdout ends up in stderr (the worker's log file).
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def send(obj):
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    try:
        import numpy as np
        pcm = np.ascontiguousarray(np.load(args.pcm), dtype=np.float32)
        rss_before = proc_status_kb("VmRSS")
        kind = args.worker
        extra = {}

        def prepare():
            pass
        t0 = time.perf_counter()
        if kind.startswith("fw-"):
            import ctranslate2
            import faster_whisper
            from faster_whisper import WhisperModel
            compute_type = kind[3:].removesuffix("-vad")
            vad_filter = kind.endswith("-vad")  # --vad: faster-whisper's vad_filter=True
            model = WhisperModel(args.model, device="cpu", compute_type=compute_type,
                                 cpu_threads=args.threads, num_workers=1)
            load_s = time.perf_counter() - t0
            extra["versions"] = {"faster-whisper": faster_whisper.__version__,
                                 "ctranslate2": ctranslate2.__version__}

            def transcribe():
                segments, _info = model.transcribe(
                    pcm, language="en", task="transcribe", beam_size=args.beam_size, best_of=1,
                    temperature=0.0, condition_on_previous_text=True, vad_filter=vad_filter,
                    without_timestamps=False, word_timestamps=False)
                texts = [s.text for s in segments]  # the generator runs to completion
                return " ".join(t.strip() for t in texts), {}
        elif kind.startswith("whispercpp"):
            import importlib.metadata
            import _pywhispercpp as pw
            from pywhispercpp.model import Model
            if not Path(args.ggml or "").is_file():  # pywhispercpp would take it for a name to download
                raise FileNotFoundError(f"ggml file {args.ggml!r} not found")
            beam = args.beam_size > 1
            model = Model(
                args.ggml,
                redirect_whispercpp_logs_to=None,
                params_sampling_strategy=1 if beam else 0,
                context_params={"use_gpu": False},
                n_threads=args.threads,
                language="en", detect_language=False, translate=False,
                greedy={"best_of": 1},           # greedy, one candidate
                beam_search={"beam_size": args.beam_size, "patience": -1.0},
                temperature=0.0, temperature_inc=0.0,  # no temperature fallback
                no_context=False,                # condition on previous text
                no_timestamps=False, token_timestamps=False, single_segment=False,
                suppress_blank=True, suppress_nst=True,  # as faster-whisper's suppress_tokens=[-1]
                max_initial_ts=1.0, no_speech_thold=0.6, logprob_thold=-1.0,
                print_progress=False, print_realtime=False, print_timestamps=False,
                print_special=False)
            load_s = time.perf_counter() - t0
            libdir = Path(importlib.import_module("pywhispercpp").__file__).resolve().parent.parent
            libs = sorted(p.name for p in libdir.glob("pywhispercpp.libs/libwhisper*.so*"))
            m = re.search(r"\.so\.(\d+\.\d+\.\d+)", libs[0]) if libs else None
            extra["versions"] = {"pywhispercpp": importlib.metadata.version("pywhispercpp"),
                                 "whisper.cpp": m.group(1) if m else "unknown"}
            extra["system_info"] = str(Model.system_info()).strip()
            extra["flash_attn"] = bool(pw.whisper_context_default_params().flash_attn)

            def timings_text():
                sys.stderr.flush()
                saved = os.dup(2)
                with tempfile.TemporaryFile() as f:
                    os.dup2(f.fileno(), 2)
                    try:
                        model.print_timings()
                    finally:
                        os.dup2(saved, 2)
                        os.close(saved)
                    f.seek(0)
                    return f.read().decode("utf-8", "replace")

            silence = np.zeros(2 * SAMPLE_RATE, dtype=np.float32)

            def fresh_state():
                # whisper.cpp keeps the previous call's text in its state
                # (prompt_past) and, with no_context=False, prompts the next
                # call's first window with it. A call with no_context=True
                # clears it; on silence it leaves nothing behind. Untimed.
                model.transcribe(silence, no_context=True)
                model._set_params({"no_context": False})

            def prepare():
                fresh_state()
                pw.whisper_reset_timings(model._ctx)

            def transcribe():
                segs = model.transcribe(pcm)
                return " ".join(s.text.strip() for s in segs), {"_timings": timings_text}
        else:
            raise ValueError(f"unknown worker kind {kind}")

        send({"ready": True, "load_s": load_s, "rss_before_load_kb": rss_before,
              "rss_after_load_kb": proc_status_kb("VmRSS"), **extra})
        for line in sys.stdin:
            cmd = line.strip()
            if cmd == "run":
                prepare()  # untimed
                t = time.perf_counter()
                text, parts = transcribe()
                wall = time.perf_counter() - t
                if "_timings" in parts:  # read after the clock stopped
                    parts = {"whispercpp_timings": parts["_timings"]()}
                send({"wall_s": wall, "text": text, **parts})
            elif cmd == "quit":
                break
        send({"done": True, "vmhwm_kb": proc_status_kb("VmHWM")})
        return 0
    except Exception:
        send({"error": traceback.format_exc()})
        return 1


class WorkerError(Exception):
    pass


class Worker:
    """Main-side handle of a worker process."""

    def __init__(self, kind, pcm_npy, args, ggml, log_path):
        self.kind = kind
        self.log_path = log_path
        self.log = open(log_path, "w")
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind,
               "--pcm", str(pcm_npy), "--model", args.model, "--ggml", str(ggml or ""),
               "--threads", str(args.threads), "--beam-size", str(args.beam_size)]
        env = dict(os.environ)
        if args.cap_avx2:
            env.update(CAP_AVX2_PEERS)
        if args.omp_wait_policy:
            env["OMP_WAIT_POLICY"] = args.omp_wait_policy.upper()
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.log, text=True, bufsize=1, env=env)
        self.hello = self._read()
        self.maxrss_kb = None

    def _read(self):
        line = self.p.stdout.readline()
        if not line:
            self.log.flush()
            tail = Path(self.log_path).read_text(errors="replace")[-2000:]
            raise WorkerError(f"{self.kind}: worker exited\n{tail}")
        msg = json.loads(line)
        if "error" in msg:
            raise WorkerError(f"{self.kind}: {msg['error']}")
        return msg

    def run(self):
        self.p.stdin.write("run\n")
        self.p.stdin.flush()
        return self._read()

    def close(self):
        final = {}
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
            final = self._read()
        except (OSError, WorkerError, ValueError):
            pass
        _, status, ru = os.wait4(self.p.pid, 0)
        self.p.returncode = os.waitstatus_to_exitcode(status)
        self.maxrss_kb = ru.ru_maxrss
        self.log.close()
        return final

    def kill(self):
        if self.p.returncode is None:
            self.p.kill()
            try:
                _, status, ru = os.wait4(self.p.pid, 0)
                self.p.returncode = os.waitstatus_to_exitcode(status)
            except ChildProcessError:
                pass
        self.log.close()


# ---------------------------------------------------------------------------
# Our programs

STATS_RE_1 = re.compile(r"load audio ([\d.]+) s, load model ([\d.]+) s, "
                        r"(?:warm-up ([\d.]+) s \(\d+ runs?\), )?transcribe ([\d.]+) s")
STATS_RE_2 = re.compile(r"mel ([\d.]+) s; encoder ([\d.]+) s per window \((\d+) windows?\); "
                        r"decoder ([\d.]+) ms per step \((\d+) steps?\)")


def run_ours_cli(cli, wav, args, extra=()):
    cmd = [str(cli), "--model", args.model, "--threads", str(args.threads), "--device", "cpu",
           "--format", "json", "--stats", "--warmup", "1", "--beam-size", str(args.beam_size),
           "--temperature", "0", "--language", "en", *extra, str(wav)]
    env = dict(os.environ, **CAP_AVX2_OURS) if args.cap_avx2 else None
    rc, wall, rss, out, err = run_process(cmd, env)
    if rc != 0:
        raise RuntimeError(f"whisper-transcribe exited {rc}: {err.strip()[-1500:]}")
    segments = json.loads(out)["segments"]
    m1, m2 = STATS_RE_1.search(err), STATS_RE_2.search(err)
    if not m1 or not m2:
        raise RuntimeError(f"whisper-transcribe --stats: unexpected output: {err.strip()[-800:]}")
    warmup_s = float(m1.group(3) or 0.0)
    stats = {"load_audio_s": float(m1.group(1)), "load_model_s": float(m1.group(2)),
             "warmup_s": warmup_s, "transcribe_s": float(m1.group(4)), "mel_s": float(m2.group(1)),
             "encoder_s_per_window": float(m2.group(2)), "windows": int(m2.group(3)),
             "decoder_ms_per_step": float(m2.group(4)), "steps": int(m2.group(5))}
    text = " ".join(s["text"].strip() for s in segments)
    # what a user waits for: the process without the warm-up transcription
    return {"wall_s": wall - warmup_s, "maxrss_kb": rss, "text": text, "stats": stats}


GST_TEXT_RE = re.compile(r'whisper-text, text=\(string\)(?:"((?:[^"\\]|\\.)*)"|([^,;]*))(.*)')


def gst_env(build_dir, tmp):
    env = dict(os.environ)
    env["GST_PLUGIN_PATH"] = str(build_dir / "gst-plugin")
    env["GST_REGISTRY"] = str(Path(tmp) / "gst-registry.bin")
    return env


def gst_available(build_dir, tmp):
    """Returns None when usable, else the reason to skip."""
    so = build_dir / "gst-plugin" / "libgstwhisper.so"
    if not so.exists():
        return f"{so} not built"
    if not shutil.which("gst-launch-1.0") or not shutil.which("gst-inspect-1.0"):
        return "gst-launch-1.0 / gst-inspect-1.0 not installed"
    r = subprocess.run(["gst-inspect-1.0", "whispersink"], env=gst_env(build_dir, tmp),
                       capture_output=True, text=True)
    if r.returncode != 0:
        return "gst-inspect-1.0 does not find whispersink: " + (r.stderr or r.stdout).strip()[-300:]
    return None


def run_ours_gst(build_dir, wav, args, tmp):
    cmd = ["gst-launch-1.0", "-m", "filesrc", f"location={wav}", "!", "decodebin", "!",
           "audioconvert", "!", "audioresample", "!", "whispersink", f"model={args.model}",
           f"threads={args.threads}", "device=cpu", f"beam-size={args.beam_size}",
           "temperatures=0", "language-code=en", "!", "fakesink"]
    rc, wall, rss, out, err = run_process(cmd, env=gst_env(build_dir, tmp))
    if rc != 0 or "ERROR" in err:
        raise RuntimeError(f"gst-launch exited {rc}: {(err + out).strip()[-1500:]}")
    texts = []
    for line in out.splitlines():
        m = GST_TEXT_RE.search(line)
        if not m:
            continue
        rest = m.group(3)
        if "final=(boolean)false" in rest or "granularity=(string)word" in rest:
            continue
        t = m.group(1) if m.group(1) is not None else m.group(2)
        texts.append(re.sub(r"\\(.)", r"\1", t).strip())
    return {"wall_s": wall, "maxrss_kb": rss, "text": " ".join(texts)}


# ---------------------------------------------------------------------------
# Audio

def dump_pcm(cli, src, out, channel=None):
    import numpy as np
    cmd = [str(cli), "--dump-pcm", str(out)]
    if channel is not None:
        cmd += ["--channel", str(channel)]
    cmd.append(str(src))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"--dump-pcm {src}: {r.stderr.strip()}")
    return np.fromfile(out, dtype="<f4")


def to_int16(x):
    import numpy as np
    return np.clip(np.round(x * 32768.0), -32768, 32767).astype(np.int16)


def long_sources(shared):
    """(path, channel, max_seconds) of the real English speech at hand."""
    s = Path(shared)
    src = [(s / "jfk.wav", None, None),
           (s / "stereo_diarization.wav", 0, None),  # left channel
           (s / "hotwords.mp3", None, None),
           (s / "multilingual.mp3", None, 29.5)]    # English until 29 s, German after
    src += [(p, None, None) for p in
            sorted(Path("/usr/share/pocketsphinx/test/data/librivox").glob("*.wav"))]
    src += [(p, None, None) for p in sorted((ROOT / "tests/reference/clips").glob("*.wav"))]
    return src


def build_long(cli, shared, tmp, min_seconds, notes):
    import numpy as np
    clips = []
    for i, (path, channel, max_s) in enumerate(long_sources(shared)):
        if not path.exists():
            notes.append(f"long recording: {path} missing, left out")
            continue
        x = dump_pcm(cli, path, Path(tmp) / f"clip{i}.f32", channel)
        if max_s:
            x = x[: int(max_s * SAMPLE_RATE)]
        clips.append((path.name, x))
    if not clips:
        raise RuntimeError("no speech clips found for the long recording")
    rng = np.random.default_rng(20240601)
    parts, total, n = [], 0, 0
    while total < min_seconds * SAMPLE_RATE:
        name, x = clips[n % len(clips)]
        gap = int(rng.uniform(1.0, 2.0) * SAMPLE_RATE)
        # very low noise (about -70 dBFS) rather than digital silence
        parts.append((rng.standard_normal(gap) * 3e-4).astype(np.float32))
        parts.append(x)
        total += gap + len(x)
        n += 1
    parts.append((rng.standard_normal(SAMPLE_RATE) * 3e-4).astype(np.float32))
    desc = (f"{n} clips ({len(clips)} distinct: " + ", ".join(c[0] for c in clips) +
            f"), 1-2 s of low noise between them")
    return np.concatenate(parts), desc


def prepare_audio(cli, src_pcm, name, tmp):
    """float32 PCM -> 16-bit WAV + identical float32 .npy; checks our reader agrees."""
    import numpy as np
    i16 = to_int16(src_pcm)
    wav = Path(tmp) / f"{name}.wav"
    write_wav16(wav, i16)
    pcm = i16.astype(np.float32) / 32768.0
    npy = Path(tmp) / f"{name}.npy"
    np.save(npy, pcm)
    back = dump_pcm(cli, wav, Path(tmp) / f"{name}.check.f32")
    same = back.shape == pcm.shape and float(np.max(np.abs(back - pcm))) == 0.0
    return {"name": name, "wav": wav, "npy": npy, "seconds": len(pcm) / SAMPLE_RATE,
            "identical_pcm": same}


# ---------------------------------------------------------------------------
# Benchmark driver

def parse_whispercpp_timings(text):
    """Parts from whisper_print_timings (ms)."""
    out = {}
    for key in ("mel", "sample", "encode", "decode", "batchd", "prompt"):
        m = re.search(rf"{key} time =\s*([\d.]+) ms(?: /\s*(\d+) runs)?", text)
        if m:
            out[key] = (float(m.group(1)), int(m.group(2)) if m.group(2) else None)
    return out


def make_ggml_files(args, contenders, tmp, notes, log):
    """The ggml files of the contenders that read one: the model converted to
    f16 (tools/ct2-to-ggml.py), quantized by tools/ggml-quantize.py for the
    block-type rows. Contenders whose file cannot be made are dropped."""
    wanted = [c for c in contenders if c.startswith("whispercpp") or c in OURS_QUANT]
    if not wanted:
        return {}
    f16 = Path(tmp) / "model-f16.bin"
    log(f"converting {args.model} to {f16} (tools/ct2-to-ggml.py)")
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "ct2-to-ggml.py"), args.model, str(f16)],
                       capture_output=True, text=True)
    files = {}
    for c in wanted:
        kind = c.split("-")[-1] if "-" in c else "f16"
        path = Path(tmp) / f"model-{kind}.bin"
        if r.returncode == 0 and kind != "f16" and not path.exists():
            q = subprocess.run([sys.executable, str(ROOT / "tools" / "ggml-quantize.py"), str(f16),
                                str(path), kind], capture_output=True, text=True)
            if q.returncode != 0:
                notes.append(f"{kind}: ggml-quantize.py failed: " + q.stderr.strip()[-300:])
        if r.returncode != 0 or not path.exists():
            notes.append(f"{c} dropped: " + (r.stderr.strip()[-300:] or "no ggml file"))
            contenders.remove(c)
            continue
        files[c] = path
    return files


def bench_file(audio, contenders, args, cli, ggml, tmp, log):
    """Runs warm-up + args.runs rounds, interleaved. Returns per-contender results."""
    res = {c: {"runs": [], "texts": [], "note": None} for c in contenders}
    workers = {}
    active = list(contenders)
    for c in contenders:
        if c in PEERS or c in VAD_PEERS:
            log(f"  {c}: loading model in a worker process")
            try:
                workers[c] = Worker(c, audio["npy"], args, (ggml or {}).get(c),
                                    Path(tmp) / f"{c}-{audio['name']}.log")
                res[c]["hello"] = workers[c].hello
            except WorkerError as e:
                res[c]["note"] = f"failed: {str(e).strip().splitlines()[-1]}"
                log(f"  {c}: {e}")
                active.remove(c)
    completed = False
    try:
        for rnd in range(args.runs + 1):
            warm = rnd == 0
            k = rnd % len(active) if active else 0
            order = active[k:] + active[:k]
            for c in list(order):
                if c not in active:
                    continue
                time.sleep(args.pause)  # lets the previous contender's spinning threads sleep
                try:
                    if c == "ours-cli":
                        r = run_ours_cli(cli, audio["wav"], args)
                    elif c in OURS_PRECISION:
                        r = run_ours_cli(cli, audio["wav"], args,
                                         ["--precision", OURS_PRECISION[c]])
                    elif c in OURS_QUANT:  # the last --model wins
                        r = run_ours_cli(cli, audio["wav"], args,
                                         ["--model", str(ggml[c]), "--precision", "int8"])
                    elif c in VAD_OURS:
                        r = run_ours_cli(cli, audio["wav"], args, VAD_OURS[c])
                    elif c == "ours-gst":
                        r = run_ours_gst(args.build_dir, audio["wav"], args, tmp)
                        if warm and not normalize_words(r["text"]):
                            raise RuntimeError("the pipeline ran but posted no text")
                    else:
                        r = workers[c].run()
                except (RuntimeError, WorkerError, OSError, json.JSONDecodeError) as e:
                    msg = str(e).strip().splitlines()
                    res[c]["note"] = ("skipped: " if c == "ours-gst" else "failed: ") + \
                        (msg[-1] if msg else type(e).__name__)
                    log(f"  {c}: {e}")
                    active.remove(c)
                    continue
                log(f"  {'warm-up' if warm else f'run {rnd}'}: {c:11s} {r['wall_s']:8.3f} s"
                    + (f" (transcribe {r['stats']['transcribe_s']:.3f} s)" if "stats" in r else ""))
                if not warm:
                    res[c]["runs"].append(r)
                    res[c]["texts"].append(r["text"])
        completed = True
    finally:
        for c, w in workers.items():
            if not completed:  # interrupted: do not wait for a transcription in flight
                w.kill()
            elif w.p.returncode is None:
                try:
                    final = w.close()
                    res[c]["maxrss_kb"] = w.maxrss_kb
                    res[c]["vmhwm_kb"] = final.get("vmhwm_kb")
                except Exception:
                    w.kill()
    return res


def fmt_s(x):
    if x is None:
        return "—"
    return f"{x:.3f}" if x < 100 else f"{x:.1f}"


def fmt_wer(x):
    if x is None:
        return "—"
    return f"{100 * x:.1f} %"


def summarize(audio, res, contenders):
    """Rows of the table for one audio file."""
    rows = []
    ours = res.get("ours-cli", {})
    ours_runs = ours.get("runs", [])
    ours_tr = statistics.median(r["stats"]["transcribe_s"] for r in ours_runs) if ours_runs else None
    ours_min = min(r["stats"]["transcribe_s"] for r in ours_runs) if ours_runs else None
    ref_ours = ours["texts"][0] if ours.get("texts") else None
    fw = res.get("fw-float32", {})
    ref_fw = fw["texts"][0] if fw.get("texts") else None
    fname = f"{audio['name']} ({audio['seconds']:.1f} s)"

    def wers(text):
        return (wer(ref_ours, text) if ref_ours is not None else None,
                wer(ref_fw, text) if ref_fw is not None else None)

    def stable(texts):
        return "" if len(set(texts)) <= 1 else "; transcripts differ between runs"

    for c in contenders:
        r = res.get(c)
        if r is None:
            continue
        runs = r["runs"]
        if not runs:
            rows.append([fname, LABEL[c], "—", "—", "—", "—", "—", "—", "—", "—", "—",
                         r["note"] or "not run"])
            continue
        walls = [x["wall_s"] for x in runs]
        w_ours, w_fw = wers(r["texts"][0])
        if c == "ours-cli":
            st = [x["stats"] for x in runs]
            med = lambda k: statistics.median(s[k] for s in st)
            trs = [s["transcribe_s"] for s in st]
            parts = (f"mel {1e3 * med('mel_s'):.0f} ms; encoder {1e3 * med('encoder_s_per_window'):.0f} ms"
                     f"/window ×{st[0]['windows']}; decoder {med('decoder_ms_per_step'):.2f} ms/step"
                     f" ×{st[0]['steps']} ({st[0]['steps'] - st[0]['windows']} tokens + "
                     f"{st[0]['windows']} prompt passes); host/step n/a (CPU backend: the decoder time "
                     f"includes logit rules and sampling, no separate timer)")
            rss = max(x["maxrss_kb"] for x in runs)
            rows.append([fname, LABEL[c], "transcribe, model loaded (--stats)",
                         fmt_s(statistics.median(trs)), fmt_s(min(trs)), fmt_s(max(trs)), "1.00 (1.00)",
                         fmt_s(med("load_model_s")), f"{rss / 1024:.0f}", fmt_wer(w_ours),
                         fmt_wer(w_fw), parts + stable(r["texts"])])
            rows.append([fname, LABEL[c], "whole process (audio + model load + transcribe; "
                         "the warm-up run's time taken out)",
                         fmt_s(statistics.median(walls)), fmt_s(min(walls)), fmt_s(max(walls)),
                         "—", "(incl.)", f"{rss / 1024:.0f}", "", "", "same run as above"])
            continue
        if c in OURS_PRECISION or c in OURS_QUANT:
            trs = [x["stats"]["transcribe_s"] for x in runs]
            st = runs[0]["stats"]
            vs = []
            for peer in ((OURS_QUANT[c],) if c in OURS_QUANT else ("fw-int8", "fw-float32")):
                pr = res.get(peer, {}).get("runs", [])
                if pr:
                    pw = [x["wall_s"] for x in pr]
                    vs.append(f"{peer} {statistics.median(trs) / statistics.median(pw):.2f} "
                              f"({min(trs) / min(pw):.2f})")
            rss = max(x["maxrss_kb"] for x in runs)
            rows.append([fname, LABEL[c], "transcribe, model loaded (--stats)",
                         fmt_s(statistics.median(trs)), fmt_s(min(trs)), fmt_s(max(trs)),
                         "; ".join(vs) or "—", fmt_s(st["load_model_s"]), f"{rss / 1024:.0f}",
                         fmt_wer(w_ours), fmt_wer(w_fw),
                         f"encoder {1e3 * statistics.median(x['stats']['encoder_s_per_window'] for x in runs):.0f} ms/window; "
                         f"decoder {statistics.median(x['stats']['decoder_ms_per_step'] for x in runs):.2f} ms/step"
                         + stable(r["texts"])])
            continue
        if c == "ours-gst":
            rss = max(x["maxrss_kb"] for x in runs)
            rows.append([fname, LABEL[c], "whole process (pipeline, model load incl.)",
                         fmt_s(statistics.median(walls)), fmt_s(min(walls)), fmt_s(max(walls)),
                         "—", "(incl.)", f"{rss / 1024:.0f}", fmt_wer(w_ours), fmt_wer(w_fw),
                         "offline-mode exact" + stable(r["texts"])])
            continue
        med_w = statistics.median(walls)
        ratio = f"{ours_tr / med_w:.2f} ({ours_min / min(walls):.2f})" if ours_tr else "—"
        rss = r.get("maxrss_kb") or r.get("vmhwm_kb")
        hello = r.get("hello", {})
        base = hello.get("rss_before_load_kb")
        rss_s = f"{rss / 1024:.0f}" if rss else "—"
        if rss and base:
            rss_s += f" ({base / 1024:.0f} before load)"
        if c.startswith("whispercpp"):
            tm = [parse_whispercpp_timings(x.get("whispercpp_timings", "")) for x in runs]

            def per(key):
                vals = [t[key][0] / t[key][1] for t in tm if key in t and t[key][1]]
                return statistics.median(vals) if vals else None

            def tot(key):
                vals = [t[key][0] for t in tm if key in t]
                return statistics.median(vals) if vals else None
            t0 = tm[0]
            n_dec = t0.get("decode", (0, 0))[1] or 0
            sample_per = (tot("sample") / n_dec) if n_dec and tot("sample") is not None else None
            parts = (f"mel {tot('mel') or 0:.0f} ms; encoder {per('encode') or 0:.0f} ms/window"
                     f" ×{t0.get('encode', (0, 0))[1]}; decoder {per('decode') or 0:.2f} ms/token"
                     f" ×{n_dec}; prompt {tot('prompt') or 0:.0f} ms for {t0.get('prompt', (0, 0))[1]} prompt tokens"
                     + (f"; host sampling {sample_per:.2f} ms/token" if sample_per is not None else "")
                     + f" (whisper_print_timings); flash attention "
                     + ("on" if hello.get("flash_attn") else "off"))
        else:
            parts = "n/a (no per-part timers in faster-whisper)"
        rows.append([fname, LABEL[c], "transcribe, model loaded (in-process)", fmt_s(med_w),
                     fmt_s(min(walls)), fmt_s(max(walls)), ratio, fmt_s(hello.get("load_s")),
                     rss_s, fmt_wer(w_ours), fmt_wer(w_fw), parts + stable(r["texts"])])
    return rows


HEADER = ["audio", "contender", "what the time covers", "median s", "min s", "max s",
          "ours/peer: median (min)", "model load s", "peak RSS MiB", "WER vs ours", "WER vs fw-f32", "parts / notes"]


def markdown_table(rows):
    esc = lambda s: str(s).replace("|", "\\|")
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="threads for every contender (default: every core, %(default)s)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per contender and file (default 5)")
    ap.add_argument("--beam-size", type=int, default=1,
                    help="beam size for every contender (default 1: greedy); temperature 0, "
                         "no fallback either way")
    ap.add_argument("--quick", action="store_true", help="smoke test: 1 run, jfk.wav only")
    ap.add_argument("--cap-avx2", action="store_true",
                    help="cap ours and faster-whisper at AVX2 (a CPU without AVX-512): "
                         "CT2_FORCE_CPU_ISA=AVX2 and ONEDNN_MAX_CPU_ISA=AVX2; ONEDNN_MAX_CPU_ISA=AVX2, "
                         "WHISPER_CPU_NO_AVX512=1, "
                         "WHISPER_CPU_INT8=avx2, OPENBLAS_CORETYPE=Haswell")
    ap.add_argument("--shared-data", default=str(ROOT.parent / "shared" / "data"),
                    help="folder with jfk.wav etc. (default: ../shared/data from the repo root)")
    ap.add_argument("--model", default=None, help="CTranslate2 model directory (default: the installed tiny.en)")
    ap.add_argument("--build-dir", default=str(ROOT / "build"), help="meson build dir (default: ./build)")
    ap.add_argument("--contenders", default=",".join(ALL_CONTENDERS),
                    help="comma-separated subset of " + ",".join(ALL_CONTENDERS))
    ap.add_argument("--long-minutes", type=float, default=10.0,
                    help="minimum length of the assembled long recording (default 10)")
    ap.add_argument("--no-long", action="store_true", help="jfk.wav only")
    ap.add_argument("--pause", type=float, default=0.5,
                    help="seconds of idle before each run, so the previous contender's OpenMP "
                         "threads stop spinning (default 0.5)")
    ap.add_argument("--omp-wait-policy", choices=["active", "passive"],
                    help="set OMP_WAIT_POLICY for the peers' worker processes (default: unset, "
                         "each library's own default; OpenMP spin-waiting suffers badly on a busy machine)")
    ap.add_argument("--markdown", metavar="FILE", help="also write the report to FILE (markdown)")
    ap.add_argument("--json", metavar="FILE", help="write the raw results to FILE")
    ap.add_argument("--from-json", metavar="FILE",
                    help="render the report again from the raw results of an earlier --json run")
    ap.add_argument("--keep-temp", action="store_true", help="keep the temp dir (audio, logs)")
    ap.add_argument("--vad", action="store_true",
                    help="the VAD case instead: a long recording with pauses (--vad-minutes, at "
                         "least 30 %% without speech), ours without and with --vad-filter and "
                         "faster-whisper float32 without and with vad_filter=True")
    ap.add_argument("--vad-minutes", type=float, default=10.0,
                    help="minimum length of the --vad recording (default 10)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--pcm", help=argparse.SUPPRESS)
    ap.add_argument("--ggml", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        return worker_main(args)

    if args.from_json:
        d = json.loads(Path(args.from_json).read_text())
        report = render(d.get("header", ["# gst-whisper CPU benchmark (header not saved)"]),
                        d["audios"], d["results"], d["contenders"], d.get("note_lines", []))
        print(report)
        if args.markdown:
            Path(args.markdown).write_text(report)
        return 0

    if args.vad:
        args.model = args.model or default_model_dir()
        args.build_dir = Path(args.build_dir).resolve()
        return vad_main(args)
    if args.quick:
        args.runs = 1
        args.no_long = True
    args.model = args.model or default_model_dir()
    args.build_dir = Path(args.build_dir).resolve()
    contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    for c in contenders:
        if c not in ALL_CONTENDERS:
            ap.error(f"unknown contender {c}")
    if args.runs < 1 or args.threads < 1:
        ap.error("--runs and --threads must be at least 1")

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    cli = args.build_dir / "engine" / "cli" / "whisper-transcribe"
    if not cli.exists():
        log(f"benchmark: {cli} not found: build first (bash tools/setup.sh, or meson setup build && ninja -C build)")
        return 2
    if not Path(args.model, "model.bin").exists():
        log(f"benchmark: no CTranslate2 model at {args.model} (bash tools/fetch-model.sh)")
        return 2
    jfk = Path(args.shared_data) / "jfk.wav"
    if not jfk.exists():
        log(f"benchmark: {jfk} not found (--shared-data)")
        return 2

    import numpy as np  # noqa: F401  (needed by the audio helpers; fail early)

    def on_term(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)

    tmp = tempfile.mkdtemp(prefix="gstw-bench-")
    notes = []
    load_start = loadavg()
    started = datetime.datetime.now().astimezone()
    busy0, own0, wall0 = cpu_busy_seconds(), own_cpu_seconds(), time.monotonic()
    try:
        # the same weights for whisper.cpp
        ggml = make_ggml_files(args, contenders, tmp, notes, log)
        if "ours-gst" in contenders:
            why = gst_available(args.build_dir, tmp)
            if why:
                notes.append(f"ours-gst skipped: {why}")
                contenders.remove("ours-gst")

        log("decoding audio once with whisper-transcribe --dump-pcm")
        audios = [prepare_audio(cli, dump_pcm(cli, jfk, Path(tmp) / "jfk.f32"), "jfk", tmp)]
        long_desc = None
        if not args.no_long:
            pcm, long_desc = build_long(cli, args.shared_data, tmp, args.long_minutes * 60, notes)
            audios.append(prepare_audio(cli, pcm, "long", tmp))
        for a in audios:
            if not a["identical_pcm"]:
                notes.append(f"{a['name']}: whisper-transcribe reads the WAV back with different "
                             f"samples than the peers get (check libsndfile normalisation)")

        results = {}
        for a in audios:
            log(f"{a['name']}: {a['seconds']:.1f} s of audio, {args.runs} runs + 1 warm-up each, "
                f"{args.threads} threads")
            results[a["name"]] = bench_file(a, contenders, args, cli, ggml, tmp, log)
        load_end = loadavg()
        busy1, own1, wall1 = cpu_busy_seconds(), own_cpu_seconds(), time.monotonic()
        others = niced = None
        if busy0 is not None and busy1 is not None:
            span = max(1e-9, (wall1 - wall0) * os.cpu_count())
            others = max(0.0, (busy1[0] - busy0[0]) - (own1 - own0)) / span
            niced = (busy1[1] - busy0[1]) / span

        # versions
        versions = {}
        for a in results.values():
            for c in PEERS:
                versions.update(a.get(c, {}).get("hello", {}).get("versions", {}))
        sysinfo = next((a[c]["hello"].get("system_info") for a in results.values()
                        for c in PEERS if c.startswith("whispercpp") and a.get(c, {}).get("hello")),
                       None)
        try:
            commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                    capture_output=True, text=True).stdout.strip() or "unknown"
            dirty = subprocess.run(["git", "-C", str(ROOT), "diff-index", "--quiet", "HEAD", "--"],
                                   capture_output=True).returncode != 0
            commit += " + uncommitted changes" if dirty else ""
        except OSError:
            commit = "unknown"
        gst_v = ""
        if shutil.which("gst-launch-1.0"):
            gst_v = subprocess.run(["gst-launch-1.0", "--version"], capture_output=True,
                                   text=True).stdout.splitlines()[1:2]
            gst_v = gst_v[0] if gst_v else ""

        quiet = load_start[0] < 1.5 and (others is None or others < 0.15)
        lines = [
            f"# gst-whisper CPU benchmark{' (--quick)' if args.quick else ''}",
            "",
            f"- date: {started.strftime('%Y-%m-%d %H:%M %Z')}; machine: {cpu_model()}, "
            f"{os.cpu_count()} cores ({cpu_flags()}), {platform.system()} {platform.release()}",
            f"- load average (1/5/15 min) at start {load_start[0]:.2f}/{load_start[1]:.2f}/{load_start[2]:.2f}, "
            f"at end {load_end[0]:.2f}/{load_end[1]:.2f}/{load_end[2]:.2f} (the benchmark's own load included); "
            + (f"other processes used {100 * others:.0f} % of the machine's CPU time during the run "
               f"(and niced ones {100 * niced:.0f} %) " if others is not None else "")
            + (f"({(wall1 - wall0) / 60:.1f} min)")
            + ("" if quiet else " — **the machine was busy: timings are noisy**"),
            ("- ISA capped at AVX2 (--cap-avx2): CT2_FORCE_CPU_ISA=AVX2 and ONEDNN_MAX_CPU_ISA=AVX2 "
             "for faster-whisper; "
             "ONEDNN_MAX_CPU_ISA=AVX2, WHISPER_CPU_NO_AVX512=1, WHISPER_CPU_INT8=avx2 for ours"
             if args.cap_avx2 else "- ISA: each contender's own choice for this CPU"),
            f"- threads: {args.threads} for every contender; runs: {args.runs} timed after 1 untimed "
            f"warm-up per contender and file, interleaved round-robin; OPENBLAS_CORETYPE="
            f"{os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; OMP_WAIT_POLICY for the peers: "
            f"{(args.omp_wait_policy or os.environ.get('OMP_WAIT_POLICY') or '(unset: library default)')}",
            f"- model: {args.model} (CTranslate2 float16) for ours and faster-whisper; whisper.cpp reads "
            f"the same weights converted by tools/ct2-to-ggml.py to ggml f16; the q8_0/q5_0 rows "
            f"(ours and whisper.cpp) read that file quantized by tools/ggml-quantize.py",
            (f"- decoding for all: greedy (beam 1, best_of 1), " if args.beam_size == 1 else
             f"- decoding for all: beam search (beam {args.beam_size}, patience 1, length penalty 1), ")
            + f"temperature 0 without fallback, "
            f"timestamps on, condition on previous text, language en, no VAD, no-speech threshold 0.6",
            f"- ours: {args.build_dir / 'engine/cli/whisper-transcribe'} at commit {commit}"
            + (f"; {gst_v}" if gst_v else ""),
            "- peers: " + ", ".join(f"{k} {v}" for k, v in versions.items())
            + (f"; whisper.cpp CPU features: {sysinfo}" if sysinfo else ""),
            "- audio: the same 16-kHz PCM for all (decoded once by whisper-transcribe --dump-pcm, "
            "16-bit WAV for the programs that read files, the identical float32 samples for the "
            "in-process peers)" + (f"; long = {long_desc}" if long_desc else ""),
        ]
        note_lines = [f"- note: {n}" for n in notes]
        for a in audios:
            for c in contenders:
                n = results[a["name"]].get(c, {}).get("note")
                if n:
                    note_lines.append(f"- note: {a['name']}, {c}: {n}")
        report = render(lines, audios, results, contenders, note_lines)
        print(report)
        if args.markdown:
            Path(args.markdown).write_text(report)
        if args.json:
            def clean(o):
                if isinstance(o, dict):
                    return {k: clean(v) for k, v in o.items()}
                if isinstance(o, (list, tuple)):
                    return [clean(v) for v in o]
                if isinstance(o, Path):
                    return str(o)
                return o
            Path(args.json).write_text(json.dumps(clean({
                "header": lines, "note_lines": note_lines,
                "audios": audios, "results": results, "contenders": contenders,
                "threads": args.threads, "runs": args.runs, "load_start": load_start,
                "load_end": load_end, "others_cpu_fraction": others, "niced_cpu_fraction": niced,
                "notes": notes}), indent=1))
        return 0
    finally:
        if args.keep_temp:
            log(f"temp dir kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------
# --vad: faster-whisper's vad_filter against ours

def build_pauses(cli, shared, tmp, min_seconds):
    """The speech clips of long_sources() in turn, each followed by a pause
    of 0.6 to 1.0 times its own length (at least 3 s): digital silence or
    white noise at about -50 dBFS, alternately, so that at least 37.5 % of
    the recording is inserted non-speech. Seeded: the same samples each run."""
    import numpy as np
    clips = []
    for i, (path, channel, max_s) in enumerate(long_sources(shared)):
        if path.exists():
            x = dump_pcm(cli, path, Path(tmp) / f"vclip{i}.f32", channel)
            clips.append((path.name, x[: int(max_s * SAMPLE_RATE)] if max_s else x))
    if not clips:
        raise RuntimeError("no speech clips found for the --vad recording")
    rng = np.random.default_rng(20261202)
    parts, total, pause, n = [], 0, 0, 0
    while total < min_seconds * SAMPLE_RATE:
        name, x = clips[n % len(clips)]
        gap = max(3 * SAMPLE_RATE, int(rng.uniform(0.6, 1.0) * len(x)))
        if n % 2:
            parts.append((rng.standard_normal(gap) * 3e-3).astype(np.float32))
        else:
            parts.append(np.zeros(gap, dtype=np.float32))
        parts.append(x)
        total += gap + len(x)
        pause += gap
        n += 1
    desc = (f"{n} clips ({len(clips)} distinct), each after a pause of 0.6-1.0x its length "
            f"(>= 3 s; digital silence and -50 dBFS white noise in turn): "
            f"{100 * pause / total:.0f} % inserted non-speech")
    return np.concatenate(parts), desc


def vad_main(args):
    def log(msg):
        print(msg, file=sys.stderr, flush=True)
    cli = args.build_dir / "engine" / "cli" / "whisper-transcribe"
    if not cli.exists():
        log(f"benchmark --vad: {cli} not found: build first")
        return 2
    if not Path(args.model, "model.bin").exists():
        log(f"benchmark --vad: no CTranslate2 model at {args.model} (bash tools/fetch-model.sh)")
        return 2
    tmp = tempfile.mkdtemp(prefix="gstw-bench-vad-")
    try:
        pcm, desc = build_pauses(cli, args.shared_data, tmp, args.vad_minutes * 60)
        audio = prepare_audio(cli, pcm, "pauses", tmp)
        log(f"pauses: {audio['seconds']:.1f} s ({desc}), {args.runs} runs + 1 warm-up each, "
            f"{args.threads} threads")
        res = bench_file(audio, VAD_CONTENDERS, args, cli, None, tmp, log)
    finally:
        if not args.keep_temp:
            shutil.rmtree(tmp, ignore_errors=True)

    def wall(c):
        runs = res[c]["runs"]
        return [r["stats"]["transcribe_s"] if "stats" in r else r["wall_s"] for r in runs]
    med = {c: statistics.median(wall(c)) for c in VAD_CONTENDERS if res[c]["runs"]}
    low = {c: min(wall(c)) for c in VAD_CONTENDERS if res[c]["runs"]}
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "unknown"
    lines = [f"# gst-whisper VAD benchmark (--vad)", "",
             f"- date: {datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}; "
             f"{cpu_model()}, {os.cpu_count()} cores; load average at end {loadavg()[0]:.2f}; "
             f"commit {commit}",
             f"- audio: {audio['seconds']:.1f} s: {desc}",
             f"- {args.threads} threads each, greedy, timestamps on, condition on previous text, "
             f"{args.runs} timed runs after 1 warm-up; ours with --reference-rules (faster-whisper's "
             f"tokens); VAD: faster-whisper's default VadOptions() for both", "",
             "| contender | transcribe s, median (min) | text words | WER vs faster-whisper same mode |",
             "|---|---|---|---|"]
    ref = {"ours-ref": "fw-float32", "ours-ref-vad": "fw-float32-vad"}
    for c in VAD_CONTENDERS:
        if c not in med:
            lines.append(f"| {c} | {res[c].get('note')} | | |")
            continue
        text = res[c]["texts"][0]
        other = ref.get(c)
        w = (f"{100 * wer(res[other]['texts'][0], text):.1f} %"
             if other in med else "")
        lines.append(f"| {c} | {med[c]:.2f} ({low[c]:.2f}) | {len(normalize_words(text))} | {w} |")
    if "ours-ref-vad" in med and "fw-float32-vad" in med:
        lines += ["", f"- ours with VAD / faster-whisper with VAD: "
                  f"{med['ours-ref-vad'] / med['fw-float32-vad']:.2f} on medians "
                  f"({low['ours-ref-vad'] / low['fw-float32-vad']:.2f} on minima)"]
    if "ours-ref" in med and "ours-ref-vad" in med:
        lines.append(f"- ours with VAD / ours without: {med['ours-ref-vad'] / med['ours-ref']:.2f}")
    if "fw-float32" in med and "fw-float32-vad" in med:
        lines.append(f"- faster-whisper with VAD / without: "
                     f"{med['fw-float32-vad'] / med['fw-float32']:.2f}")
    report = "\n".join(lines) + "\n"
    print(report)
    if args.markdown:
        Path(args.markdown).write_text(report)
    return 0


def render(header_lines, audios, results, contenders, note_lines):
    rows = []
    for a in audios:
        rows += summarize(a, results[a["name"]], contenders)
    spread = []
    for a in audios:
        for c in contenders:
            runs = results[a["name"]].get(c, {}).get("runs", [])
            walls = [r["stats"]["transcribe_s"] if "stats" in r else r["wall_s"] for r in runs]
            if walls and min(walls) > 0 and max(walls) / min(walls) > 1.5:
                spread.append(f"{a['name']} {c} ({max(walls) / min(walls):.1f}x)")
    lines = list(header_lines) + [
            "",
            markdown_table(rows),
            "",
            "- *transcribe, model loaded*: wall time of the transcription alone. For the peers it is "
            "timed in-process around transcribe() (faster-whisper: the segment generator iterated to "
            "the end) with the model loaded once, as a server would; for ours it is the CLI's own "
            "--stats 'transcribe' time of the second of two transcriptions in one process (--warmup 1: "
            "the first one warms the engine as the peers' untimed warm-up run warms theirs; the CLI "
            "loads the model each run, shown in *model load s*).",
            "- *whole process*: what a user of the command line waits for, from exec to exit.",
            "- *ours/peer*: median of ours' 'transcribe, model loaded' / median of the peer's "
            "(below 1: ours is faster); in parentheses the same ratio of the minima, the better "
            "estimate when other processes competed for the CPU.",
            "- *peak RSS*: ru_maxrss of the process (the CLI, gst-launch, or the peer's Python worker, "
            "which includes the interpreter, numpy and the audio; its RSS before the model load is in "
            "parentheses).",
            "- *WER*: word-level Levenshtein over lowercase words with punctuation stripped, against "
            "ours' transcript and against faster-whisper float32's.",
    ]
    if spread:
        lines.append("- spread (max/min over the timed runs) above 1.5x, a sign of competing load: "
                     + ", ".join(spread))
    lines += list(note_lines)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
