#!/usr/bin/env python3
"""Quantize a whisper.cpp ggml model file (f16 or f32) to q8_0, q5_0, q5_1, q4_0 or q4_1.

Usage: ggml-quantize.py IN.bin OUT.bin TYPE
       ggml-quantize.py --from-ct2 CT2_DIR OUT.bin TYPE   (through tools/ct2-to-ggml.py)

Writes what whisper.cpp's own `quantize` tool writes (examples/common-ggml.cpp,
ggml_common_quantize_0, https://github.com/ggml-org/whisper.cpp): every 2-D
tensor except the positional embeddings and the convolution biases is
quantized, the rest is copied as it is; the header's ftype is the type's
ggml ftype plus 1000 * the quantization version (2). Blocks of 32 values per
row, rounded as ggml's reference quantizers (quantize_row_q8_0_ref ... in
https://github.com/ggml-org/ggml/blob/master/src/ggml-quants.c) round:

  q8_0  d = max|x| / 127, q = round(x / d)
  q4_0  d = x_maxabs / -8 (signed), q = min(15, trunc(x / d + 8.5))
  q5_0  d = x_maxabs / -16 (signed), q = min(31, trunc(x / d + 16.5))
  q4_1  d = (max - min) / 15, m = min, q = min(15, trunc((x - m) / d + 0.5))
  q5_1  d = (max - min) / 31, m = min, q = trunc((x - m) / d + 0.5)

with d and m stored as float16. Needs Python 3 and numpy only.
"""

import argparse
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

GGML_MAGIC = 0x67676D6C
QNT_VERSION = 2
QNT_VERSION_FACTOR = 1000
# type name: (ggml tensor type id, ggml ftype id)
TYPES = {"q4_0": (2, 2), "q4_1": (3, 3), "q5_0": (6, 8), "q5_1": (7, 9), "q8_0": (8, 7)}
SKIP = {"encoder.conv1.bias", "encoder.conv2.bias", "encoder.positional_embedding",
        "decoder.positional_embedding"}
BLOCK = 32


class QuantizeError(Exception):
    pass


class Reader:
    def __init__(self, data, path):
        self.data, self.path, self.pos = data, path, 0

    def take(self, n, what):
        if n < 0 or self.pos + n > len(self.data):
            raise QuantizeError(f"{self.path}: truncated at offset {self.pos} ({what})")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def ints(self, n, what):
        return struct.unpack(f"<{n}i", self.take(4 * n, what))


def read_header(r):
    """Magic, hyper-parameters and ftype, mel filters, vocabulary: the bytes
    to copy, and the ftype."""
    (magic,) = struct.unpack("<I", r.take(4, "the magic"))
    if magic != GGML_MAGIC:
        raise QuantizeError(f"{r.path}: not a ggml file (magic 0x{magic:08x})")
    params = r.ints(11, "the hyper-parameters")
    if params[10] % QNT_VERSION_FACTOR not in (0, 1):
        raise QuantizeError(f"{r.path}: ftype {params[10]} is not f32 (0) or f16 (1)")
    n_mel, n_fft = r.ints(2, "the mel filter shape")
    r.take(4 * n_mel * n_fft, "the mel filters")
    (n_tokens,) = r.ints(1, "the vocabulary size")
    for _ in range(n_tokens):
        (length,) = r.ints(1, "a token length")
        r.take(length, "a token")
    return params


def read_tensor(r):
    n_dims, name_len, ttype = r.ints(3, "a tensor header")
    if not 1 <= n_dims <= 4 or ttype not in (0, 1):
        raise QuantizeError(f"{r.path}: tensor record at {r.pos} has n_dims {n_dims} and "
                            f"type {ttype} (expected 1..4 and f32 or f16)")
    ne = r.ints(n_dims, "a tensor shape")
    name = r.take(name_len, "a tensor name").decode("ascii")
    count = int(np.prod(ne))
    dtype = "<f4" if ttype == 0 else "<f2"
    data = np.frombuffer(r.take(count * (4 if ttype == 0 else 2), name), dtype=dtype)
    return name, ttype, ne, data


def f16(values):
    return values.astype("<f2")


def safe_inverse(d):
    with np.errstate(divide="ignore"):
        return np.where(d != 0, 1.0 / np.where(d != 0, d, 1), 0).astype(np.float32)


def signed_max(x):
    """Per block, the value of largest magnitude (its sign kept), first one on ties."""
    return x[np.arange(x.shape[0]), np.argmax(np.abs(x), axis=1)]


def pack_nibbles(q):
    return (q[:, :16] & 0x0F) | ((q[:, 16:] & 0x0F) << 4)


def fifth_bits(q):
    bits = ((q >> 4) & 1).astype(np.uint32) << np.arange(32, dtype=np.uint32)
    return bits.sum(axis=1, dtype=np.uint32).astype("<u4").view(np.uint8).reshape(-1, 4)


def quantize_blocks(x, kind):
    """x: [n_blocks, 32] float32 -> [n_blocks, block bytes] uint8."""
    x = x.astype(np.float32)
    parts = []
    if kind == "q8_0":
        d = np.abs(x).max(axis=1) / np.float32(127)
        v = x * safe_inverse(d)[:, None]
        q = (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int8)  # roundf: half away from 0
        parts = [f16(d).view(np.uint8).reshape(-1, 2), q.view(np.uint8)]
    elif kind in ("q4_0", "q5_0"):
        levels = 8 if kind == "q4_0" else 16
        d = signed_max(x) / np.float32(-levels)
        v = x * safe_inverse(d)[:, None] + np.float32(levels + 0.5)
        q = np.minimum(2 * levels - 1, np.trunc(v).astype(np.int32).astype(np.int8)).astype(np.uint8)
        parts = [f16(d).view(np.uint8).reshape(-1, 2)]
        if kind == "q5_0":
            parts.append(fifth_bits(q))
        parts.append(pack_nibbles(q))
    else:
        levels = 15 if kind == "q4_1" else 31
        lo, hi = x.min(axis=1), x.max(axis=1)
        d = (hi - lo) / np.float32(levels)
        v = (x - lo[:, None]) * safe_inverse(d)[:, None] + np.float32(0.5)
        q = np.trunc(v).astype(np.int32).astype(np.uint8)
        if kind == "q4_1":
            q = np.minimum(15, q)
        parts = [f16(d).view(np.uint8).reshape(-1, 2), f16(lo).view(np.uint8).reshape(-1, 2)]
        if kind == "q5_1":
            parts.append(fifth_bits(q))
        parts.append(pack_nibbles(q))
    return np.concatenate(parts, axis=1)


def quantizable(name, ne):
    return len(ne) == 2 and name not in SKIP and ne[0] % BLOCK == 0


def quantize_file(in_path, out_path, kind):
    with open(in_path, "rb") as f:
        data = f.read()
    r = Reader(data, in_path)
    params = read_header(r)
    header_end = r.pos
    tmp_path = out_path + ".tmp"
    try:
        write_quantized(r, data, params, header_end, kind, tmp_path)
    except BaseException:
        if os.path.exists(tmp_path):
            os.unlink(tmp_path)
        raise
    os.replace(tmp_path, out_path)


def write_quantized(r, data, params, header_end, kind, tmp_path):
    """The header with the new ftype, then every tensor record, quantized
    where whisper.cpp's quantize would."""
    type_id, ftype = TYPES[kind]
    with open(tmp_path, "wb") as out:
        out.write(data[:4])
        out.write(struct.pack("<11i", *params[:10], QNT_VERSION * QNT_VERSION_FACTOR + ftype))
        out.write(data[48:header_end])
        while r.pos < len(data):
            name, ttype, ne, values = read_tensor(r)
            encoded = name.encode("ascii")
            if quantizable(name, ne):
                blob = quantize_blocks(values.astype(np.float32).reshape(-1, BLOCK), kind)
                out_type, payload = type_id, blob.tobytes()
            else:
                out_type, payload = ttype, values.tobytes()
            out.write(struct.pack("<iii", len(ne), len(encoded), out_type))
            out.write(struct.pack(f"<{len(ne)}i", *ne))
            out.write(encoded)
            out.write(payload)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Quantize a whisper.cpp ggml model file.")
    parser.add_argument("--from-ct2", action="store_true",
                        help="the input is a CTranslate2 model directory (converted to f16 ggml first)")
    parser.add_argument("input", help="f16 or f32 ggml file (or CT2 directory with --from-ct2)")
    parser.add_argument("out", help="output ggml file")
    parser.add_argument("type", choices=sorted(TYPES), help="block type")
    args = parser.parse_args(argv)
    try:
        if args.from_ct2:
            converter = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ct2-to-ggml.py")
            with tempfile.TemporaryDirectory() as tmp:
                f16_path = os.path.join(tmp, "f16.bin")
                subprocess.run([sys.executable, converter, args.input, f16_path], check=True)
                quantize_file(f16_path, args.out, args.type)
        else:
            quantize_file(args.input, args.out, args.type)
    except (QuantizeError, OSError, UnicodeDecodeError, ValueError,
            subprocess.CalledProcessError) as e:
        print(f"ggml-quantize: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
