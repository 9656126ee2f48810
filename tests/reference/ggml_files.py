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
