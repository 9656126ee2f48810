#!/usr/bin/env python3
"""model-pack.py: carry a CTranslate2 Whisper model to the GPU machine.

    model-pack.py pack   MODEL_DIR PACK_FILE   (on the preparing machine)
    model-pack.py unpack PACK_FILE MODEL_DIR   (on the GPU machine)

tiny.en's model.bin is 75.5 MB of fp16 weights, more than the 64 MiB a
device call carries, and fp16 weights do not compress much (about 64 MB
with xz). So the pack stores every large fp16 weight matrix as int8 per
row, as CTranslate2's own int8 quantisation does (scale = 127 / max|row|,
q = rint(w * scale)), and unpack writes them back as fp16 values
fp16(q * (max|row| / 127)). Everything else (header, names, biases, layer
norms, positional tables, config.json, vocabulary, tokenizer) is kept
byte for byte.

The unpacked model is a valid fp16 CTranslate2 model with the same shapes,
but not the original weights: both the CPU and the CUDA backend load the
same unpacked file on the GPU machine, so GPU-against-CPU comparisons and
timings are unaffected; transcripts may differ slightly from the exact
model's. The pack records the SHA-256 of the model.bin that unpack must
produce, and unpack checks it.
"""
import hashlib
import io
import json
import struct
import sys
import tarfile

import numpy as np

FP16 = 4
EXTRA_FILES = ("config.json", "vocabulary.txt", "vocabulary.json", "tokenizer.json",
               "preprocessor_config.json")


def read_variables(data):
    """(name, dims, dtype, offset, nbytes) of every variable of model.bin v6."""
    pos = 0

    def take(fmt):
        nonlocal pos
        values = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return values

    def string():
        nonlocal pos
        (n,) = take("<H")
        s = data[pos:pos + n - 1].decode()
        pos += n
        return s

    (version,) = take("<I")
    if version != 6:
        raise SystemExit(f"model.bin version {version}: only version 6 is handled")
    string()          # spec name
    take("<I")        # spec revision
    (count,) = take("<I")
    out = []
    for _ in range(count):
        name = string()
        (rank,) = take("<B")
        dims = take(f"<{rank}I") if rank else ()
        (dtype,) = take("<B")
        (nbytes,) = take("<I")
        if pos + nbytes > len(data):
            raise SystemExit(f"variable {name} runs past the end of model.bin")
        out.append((name, dims, dtype, pos, nbytes))
        pos += nbytes
    return out


def quantizable(name, dims, dtype, nbytes):
    return (dtype == FP16 and len(dims) >= 2 and name.endswith("weight")
            and nbytes >= 65536)


def dequantize(q, amax):
    inv = (amax / np.float32(127.0)).astype(np.float32)
    return (q.astype(np.float32) * inv[:, None]).astype(np.float16)


def pack(model_dir, pack_file):
    data = open(f"{model_dir}/model.bin", "rb").read()
    skeleton = io.BytesIO()
    quant = io.BytesIO()
    scales = io.BytesIO()
    spans = []
    rebuilt = hashlib.sha256()
    last = 0
    for name, dims, dtype, offset, nbytes in read_variables(data):
        if not quantizable(name, dims, dtype, nbytes):
            continue
        rows = dims[0]
        w = np.frombuffer(data, dtype="<f2", count=nbytes // 2, offset=offset)
        w = w.astype(np.float32).reshape(rows, -1)
        amax = np.abs(w).max(axis=1).astype(np.float32)
        amax[amax == 0] = np.float32(127.0)
        q = np.rint(w * (np.float32(127.0) / amax)[:, None]).clip(-127, 127).astype(np.int8)
        skeleton.write(data[last:offset])
        rebuilt.update(data[last:offset])
        rebuilt.update(dequantize(q, amax).astype("<f2").tobytes())
        quant.write(q.tobytes())
        scales.write(amax.astype("<f4").tobytes())
        spans.append({"name": name, "offset": offset, "nbytes": nbytes, "rows": rows})
        last = offset + nbytes
    skeleton.write(data[last:])
    rebuilt.update(data[last:])
    manifest = {
        "format": "gst-whisper model pack 1",
        "spans": spans,
        "model_bin_size": len(data),
        "model_bin_sha256": rebuilt.hexdigest(),
        "original_sha256": hashlib.sha256(data).hexdigest(),
    }
    with tarfile.open(pack_file, "w:xz", preset=9) as tar:
        def add(name, payload):
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
        add("manifest.json", json.dumps(manifest, indent=1).encode())
        add("skeleton.bin", skeleton.getvalue())
        add("q.bin", quant.getvalue())
        add("scales.bin", scales.getvalue())
        for extra in EXTRA_FILES:
            try:
                add(extra, open(f"{model_dir}/{extra}", "rb").read())
            except FileNotFoundError:
                pass
    q_total = sum(s["nbytes"] for s in spans) // 2
    print(f"model-pack: {len(spans)} matrices ({q_total} weights) as int8 per row; "
          f"model.bin {len(data)} bytes -> {pack_file}")


def unpack(pack_file, model_dir):
    import os
    os.makedirs(model_dir, exist_ok=True)
    with tarfile.open(pack_file, "r:xz") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    manifest = json.loads(files["manifest.json"])
    if manifest.get("format") != "gst-whisper model pack 1":
        raise SystemExit(f"{pack_file}: not a model pack")
    skeleton, quant, scales = files["skeleton.bin"], files["q.bin"], files["scales.bin"]
    out = io.BytesIO()
    s_pos = q_pos = a_pos = 0
    for span in manifest["spans"]:
        head = span["offset"] - out.tell()
        out.write(skeleton[s_pos:s_pos + head])
        s_pos += head
        count = span["nbytes"] // 2
        rows = span["rows"]
        q = np.frombuffer(quant, dtype=np.int8, count=count, offset=q_pos).reshape(rows, -1)
        amax = np.frombuffer(scales, dtype="<f4", count=rows, offset=a_pos)
        q_pos += count
        a_pos += 4 * rows
        out.write(dequantize(q, amax).astype("<f2").tobytes())
    out.write(skeleton[s_pos:])
    data = out.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    if len(data) != manifest["model_bin_size"] or digest != manifest["model_bin_sha256"]:
        raise SystemExit(f"{pack_file}: rebuilt model.bin does not match its checksum")
    with open(f"{model_dir}/model.bin", "wb") as f:
        f.write(data)
    for name, payload in files.items():
        if name in EXTRA_FILES:
            with open(f"{model_dir}/{name}", "wb") as f:
                f.write(payload)
    print(f"model-pack: {model_dir}/model.bin rebuilt ({len(data)} bytes, sha256 verified)")


def main(argv):
    if len(argv) != 4 or argv[1] not in ("pack", "unpack"):
        raise SystemExit(__doc__)
    (pack if argv[1] == "pack" else unpack)(argv[2], argv[3])


if __name__ == "__main__":
    main(sys.argv)
