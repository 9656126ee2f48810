#!/usr/bin/env python3
"""Quantize a CTranslate2 Whisper model directory to int8, as CTranslate2's
converters do with --quantization int8.

Usage: ct2-quantize.py CT2_DIR OUT_DIR

Every weight matrix that CTranslate2 quantizes (the variables named
"weight" of linear layers, convolutions and embeddings: rank 2 or 3) is
stored as int8 with one float32 scale per output row, "<name>_scale", by
the rule of CTranslate2's python/ctranslate2/specs/model_spec.py
(https://github.com/OpenNMT/CTranslate2): amax = the row's largest
magnitude (127 where it is 0), scale = 127 / amax in float32, stored =
round-to-nearest-even(value * scale). Every other variable and the
aliases are copied unchanged; config.json and the vocabulary files are
copied beside model.bin.

Needs Python 3 and numpy only (the project's tests make their int8 model
with it; ctranslate2 is not needed).
"""

import argparse
import importlib.util
import os
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CT2_INT8 = 1
CT2_FLOAT32 = 0
CT2_DTYPE_IDS = {np.dtype("<f4"): 0, np.dtype("i1"): 1, np.dtype("<i2"): 2,
                 np.dtype("<i4"): 3, np.dtype("<f2"): 4}


def load_reader():
    """ct2-to-ggml.py's model.bin reader (one parser for both tools)."""
    spec = importlib.util.spec_from_file_location("ct2_to_ggml", os.path.join(HERE, "ct2-to-ggml.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def quantize_rows(value):
    """model_spec.py's int8 rule: (int8 array of value's shape, float32 scales)."""
    value = value.astype(np.float32)
    flat = value.reshape(value.shape[0], -1)
    amax = np.amax(np.absolute(flat), axis=1)
    amax[amax == 0] = 127.0
    amax = np.maximum(amax, np.float32(127) / np.finfo(np.float32).max)
    scale = (np.float32(127.0) / amax).astype(np.float32)
    stored = np.rint(flat * np.expand_dims(scale, 1)).astype(np.int8)
    return stored.reshape(value.shape), scale


def quantizable(name, value):
    return name.split("/")[-1] == "weight" and value.ndim in (2, 3) and value.dtype.kind == "f"


def pack_string(text):
    raw = text.encode("utf-8") + b"\0"
    return struct.pack("<H", len(raw)) + raw


def pack_variable(name, array):
    out = pack_string(name) + struct.pack("<B", array.ndim)
    out += b"".join(struct.pack("<I", d) for d in array.shape)
    raw = np.ascontiguousarray(array).tobytes()
    return out + struct.pack("<BI", CT2_DTYPE_IDS[array.dtype], len(raw)) + raw


def header(path):
    """(spec name, revision) of model.bin, read as ct2-to-ggml.py checks them."""
    with open(path, "rb") as f:
        data = f.read(4096)
    (length,) = struct.unpack_from("<H", data, 4)
    spec = data[6:6 + length - 1].decode("utf-8")
    (revision,) = struct.unpack_from("<I", data, 6 + length)
    return spec, revision


def quantize(ct2_dir, out_dir):
    reader = load_reader()
    src = os.path.join(ct2_dir, "model.bin")
    model = reader.Ct2Model(src)
    if any(v.dtype == np.dtype("<u2") for v in model.variables.values()):
        raise reader.ConversionError(f"{src}: bfloat16 variables are not supported here")
    spec, revision = header(src)
    variables = []
    n_quantized = 0
    for name, value in model.variables.items():
        if quantizable(name, value):
            stored, scale = quantize_rows(value)
            variables.append((name, stored))
            variables.append((name + "_scale", scale))
            n_quantized += 1
        else:
            variables.append((name, value))
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "model.bin"), "wb") as f:
        f.write(struct.pack("<I", reader.CT2_BINARY_VERSION) + pack_string(spec))
        f.write(struct.pack("<II", revision, len(variables)))
        for name, value in variables:
            f.write(pack_variable(name, value))
        f.write(struct.pack("<I", len(model.aliases)))
        for alias, target in model.aliases.items():
            f.write(pack_string(alias) + pack_string(target))
    for entry in sorted(os.listdir(ct2_dir)):
        if entry != "model.bin" and os.path.isfile(os.path.join(ct2_dir, entry)):
            shutil.copyfile(os.path.join(ct2_dir, entry), os.path.join(out_dir, entry))
    return n_quantized


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ct2_dir")
    parser.add_argument("out_dir")
    args = parser.parse_args()
    reader = load_reader()
    try:
        n = quantize(args.ct2_dir, args.out_dir)
    except (reader.ConversionError, OSError) as e:
        sys.exit(f"ct2-quantize: {e}")
    print(f"ct2-quantize: {args.out_dir}: {n} weights in int8")


if __name__ == "__main__":
    main()
