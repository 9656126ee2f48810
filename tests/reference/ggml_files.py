"""What the ggml block-file reference scripts share: the quantized files
made from a CTranslate2 model with the repository's converters, their
SHA-256, faster-whisper's float16 text to compare them with, the kernel
sets this CPU runs, and the text comparison.

Used by make-ggml-quant-reference.py / make-ggml-kquant-reference.py (which
write the fixtures) and test-ggml-quant.py / test-ggml-kquant.py (which
check them)."""

import hashlib
import os
import re
import subprocess
import sys

ROOT = os.environ.get("WHISPER_SOURCE_ROOT",
                      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def words(text):
    """The text's letters and digits, lowercase: what the texts must share."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def isas():
    """The kernel sets this CPU runs (the engine refuses the others)."""
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    have = ["portable"]
    if all(f in flags for f in (" avx2", " fma", " f16c")):
        have.append("avx2")
    if all(f in flags for f in (" avx512f", " avx512bw", " avx512vl", " avx512_vnni")):
        have.append("avx512")
    return have


def make_files(model_dir, tmp, stem, kinds):
    """tmp/STEM-f16.bin from the CTranslate2 model (tools/ct2-to-ggml.py),
    then tmp/STEM-KIND.bin for each kind (tools/ggml-quantize.py)."""
    files = {"f16": os.path.join(tmp, f"{stem}-f16.bin")}
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "ct2-to-ggml.py"), model_dir,
                    files["f16"]], check=True)
    for kind in kinds:
        files[kind] = os.path.join(tmp, f"{stem}-{kind}.bin")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "ggml-quantize.py"),
                        files["f16"], files[kind], kind], check=True)
    return files


def faster_whisper_text(model_dir, clip, language=None):
    """faster-whisper's greedy float32 text of the clip (the float16 model's
    text, which every quantized file must give)."""
    from faster_whisper import WhisperModel
    model = WhisperModel(model_dir, device="cpu", compute_type="float32", cpu_threads=1)
    segments, _ = model.transcribe(clip, beam_size=1, best_of=1, temperature=0.0,
                                   language=language, vad_filter=False)
    return "".join(s.text for s in segments)


def whisper_cpp_text(path, clip, language=None):
    """whisper.cpp's greedy text of the clip from the ggml file (pywhispercpp)."""
    from pywhispercpp.model import Model
    model = Model(path, n_threads=2, print_progress=False, print_realtime=False)
    extra = {"language": language} if language else {}
    segments = model.transcribe(clip, greedy={"best_of": 1}, temperature=0.0, **extra)
    return "".join(s.text for s in segments)


def check_file(fixture, kind, path, transcribe, clip, cli_args, failures):
    """The fixture's checks of one quantized file: the quantizer wrote the
    fixture's bytes, the fixture's whisper.cpp text is the float16 one, and
    the engine (`transcribe`, the CLI, with `cli_args`) gives the float16
    text on every kernel set this CPU runs. Prints a line per engine run
    and appends what failed to `failures`."""
    want = words(fixture["float16"])
    if sha256(path) != fixture["files"][kind]["sha256"]:
        failures.append(f"{kind}: tools/ggml-quantize.py wrote another file than the fixture's")
    if words(fixture["files"][kind]["whisper_cpp"]) != want:
        failures.append(f"{kind}: the fixture's whisper.cpp text is not the float16 text")
    for isa in isas():
        env = dict(os.environ, WHISPER_CPU_QBLOCK=isa)
        out = subprocess.run([transcribe, "-m", path, "-f", "text", "-b", "1", "-t", "2"]
                             + list(cli_args) + [clip], env=env, capture_output=True, text=True)
        got = out.stdout.strip()
        status = "ok" if out.returncode == 0 and words(got) == want else "FAIL"
        print(f"{status} engine {kind} {isa}: {got!r} {out.stderr.strip()[-300:]}")
        if status != "ok":
            failures.append(f"engine {kind} {isa}")
