#!/usr/bin/env python3
"""An independent anchor for the ggml format: whisper.cpp's own test files.

../shared/data/ggml-headers/for-tests-ggml-{tiny,tiny.en,base,large}.bin were
written by whisper.cpp's converter (whisper.cpp commit 233fe1fc, models/): the
ggml header, the mel filter bank and the full vocabulary, no tensors. Checks:

1. tools/ct2-to-ggml.py writes the same bytes for those parts:
   - tiny.en and base, converted from the installed CTranslate2 models with
     --legacy-tokens (the vocabulary form of those files), byte for byte;
   - tiny and large (no CTranslate2 weights here), the converter's header
     writer with the file's hyper-parameters and the multilingual vocabulary
     of base (tiny and large-v2 share it), byte for byte;
   - without --legacy-tokens, the same header and filters, and tokens that
     give the file's after the 2022 converter's lossy UTF-8 step.
2. The engine's loader refuses the header-only files with a clear error.
3. The loader reads whisper.cpp's header and vocabulary: each file, followed
   by the tensor records of our conversion of the same model, transcribes
   jfk.wav to the text of the CTranslate2 model.

Usage: test-ggml-anchor.py CT2_TO_GGML WHISPER_TRANSCRIBE
Needs the tiny.en and base models (tools/fetch-model.sh); fails without them.
"""

import importlib.util
import os
import struct
import subprocess
import sys
import tempfile

converter_path, cli = sys.argv[1], sys.argv[2]
shared = os.environ.get("WHISPER_SHARED_DATA", os.path.join(os.path.dirname(__file__),
                                                            "..", "..", "..", "shared", "data"))
headers = os.path.join(shared, "ggml-headers")
models = os.path.join(os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share")),
                      "gst-whisper", "models")
jfk = os.path.join(shared, "jfk.wav")

spec = importlib.util.spec_from_file_location("ct2_to_ggml", converter_path)
conv = importlib.util.module_from_spec(spec)
spec.loader.exec_module(conv)

failures = []
passes = []


def ok(message):
    print(f"ok: {message}")
    passes.append(message)


def fail(message):
    print(f"FAIL: {message}")
    failures.append(message)


def parts(data):
    """(header end, filters end, vocabulary end, tokens) of a ggml file."""
    n_mels, n_fft = struct.unpack_from("<ii", data, 48)
    filters_end = 56 + 4 * n_mels * n_fft
    (n_tokens,) = struct.unpack_from("<i", data, filters_end)
    pos = filters_end + 4
    tokens = []
    for _ in range(n_tokens):
        (length,) = struct.unpack_from("<I", data, pos)
        tokens.append(data[pos + 4:pos + 4 + length])
        pos += 4 + length
    return 48, filters_end, pos, tokens


def compare(what, ours, ref):
    """ours must start with ref's bytes (the whole header-only file)."""
    if ours[:len(ref)] == ref:
        ok(f"{what}: {len(ref)} bytes identical")
        return True
    at = next(i for i in range(min(len(ours), len(ref))) if ours[i] != ref[i]) \
        if ours[:1] == ref[:1] else 0
    header_end, filters_end, vocab_end, _ = parts(ref)
    part = ("the hyper-parameters" if at < header_end else "the mel filters"
            if at < filters_end else "the vocabulary")
    fail(f"{what}: first difference at byte {at}, in {part}")
    return False


def transcribe(model):
    run = subprocess.run([cli, "--model", model, "--device", "cpu", "--format", "text", jfk],
                         capture_output=True, text=True)
    return run.returncode, run.stdout.strip(), run.stderr.strip()


with tempfile.TemporaryDirectory() as tmp:
    base_vocabulary = None
    for name in ("tiny.en", "base"):
        ct2 = os.path.join(models, name)
        if not os.path.isfile(os.path.join(ct2, "model.bin")):
            fail(f"{name}: no model in {ct2} (tools/fetch-model.sh {name})")
            continue
        ref = open(os.path.join(headers, f"for-tests-ggml-{name}.bin"), "rb").read()
        if name == "base":
            base_vocabulary = conv.read_vocabulary(ct2)

        legacy = os.path.join(tmp, f"{name}-legacy.bin")
        conv.convert(ct2, legacy, False, legacy_tokens=True)
        ours = open(legacy, "rb").read()
        compare(f"{name}: converter --legacy-tokens", ours, ref)

        plain = os.path.join(tmp, f"{name}.bin")
        conv.convert(ct2, plain, False)
        raw = open(plain, "rb").read()
        _, filters_end, _, ref_tokens = parts(ref)
        _, _, _, raw_tokens = parts(raw)
        if raw[:filters_end] != ref[:filters_end]:
            fail(f"{name}: converter: header or filters differ from whisper.cpp's")
        lossy = [t.decode("utf-8", errors="replace").encode("utf-8") for t in raw_tokens]
        extra = ref_tokens[len(lossy):]
        if ref_tokens[:len(lossy)] != lossy or extra not in ([], [b"<|endoftext|>"]):
            fail(f"{name}: converter: raw tokens do not map onto whisper.cpp's")
        else:
            changed = sum(1 for a, b in zip(raw_tokens, ref_tokens) if a != b)
            ok(f"{name}: raw tokens = the file's after the lossy step "
                  f"({changed} byte-level tokens differ, {len(extra)} extra)")

        # whisper.cpp's header and vocabulary, our tensor records
        header_file = os.path.join(headers, f"for-tests-ggml-{name}.bin")
        joined = os.path.join(tmp, f"{name}-joined.bin")
        with open(joined, "wb") as f:
            f.write(ref)
            f.write(ours[len(ref):])
        rc_ct2, text_ct2, err_ct2 = transcribe(ct2)
        rc, text, err = transcribe(joined)
        if rc_ct2 != 0 or rc != 0:
            fail(f"{name}: transcription failed: {err_ct2} {err}")
        elif text != text_ct2:
            fail(f"{name}: whisper.cpp's header + our tensors: {text!r}, CTranslate2: {text_ct2!r}")
        else:
            ok(f"{name}: whisper.cpp's header and vocabulary load; jfk: {text!r}")

    for name in ("tiny", "large"):
        ref = open(os.path.join(headers, f"for-tests-ggml-{name}.bin"), "rb").read()
        if base_vocabulary is None:
            fail(f"{name}: needs the base model's vocabulary")
            continue
        hparams = list(struct.unpack_from("<10i", ref, 4))
        tokens = conv.token_bytes(base_vocabulary, base_vocabulary.index("<|endoftext|>"),
                                  legacy=True)
        ours = conv.header_bytes(hparams, conv.mel_filters(hparams[9]), tokens, use_f32=False)
        compare(f"{name}: converter header writer", ours, ref)

    for name in ("tiny", "tiny.en", "base", "large"):
        path = os.path.join(headers, f"for-tests-ggml-{name}.bin")
        rc, _, err = transcribe(path)
        if rc == 1 and "holds no tensors" in err and path in err:
            ok(f"{name}: header-only file refused: {err}")
        else:
            fail(f"{name}: header-only file: exit {rc}, {err!r}")

print(f"{len(passes)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
