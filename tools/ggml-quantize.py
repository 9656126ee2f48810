#!/usr/bin/env python3
"""Quantize a whisper.cpp ggml model file (f16 or f32) to q8_0, q5_0, q5_1, q4_0, q4_1,
or the k-quants q4_K, q5_K, q6_K.

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

with d and m stored as float16.

The k-quants take super-blocks of 256 values (QK_K) per row, as ggml's
reference quantizers without an importance matrix do (quantize_row_q4_K_ref,
quantize_row_q5_K_ref, quantize_row_q6_K_ref, which whisper.cpp's quantize
reaches through ggml_quantize_chunk):

  q4_K, q5_K  per sub-block of 32: weights av + |x| (av = the RMS of the 32),
              make_qkx2_quants' search for a scale and min (21 steps from
              rmin -1 (q4_K) / 16 steps from -0.5 (q5_K), by 0.1); the 8
              scales and mins to 6 bits against the largest (d, dmin =
              largest / 63 in float16), then every code again from the
              rounded scale and min
  q6_K        per sub-block of 16: make_qx_quants (nmax 32, weights x^2,
              19 trial scales); the 16 scales to int8 against the one of
              largest magnitude (d = largest / -128 in float16), then every
              code again from the rounded scale

in float32, with every sum taken in ggml's order and ggml's rounding
(round half to even, float16 by round to nearest even), so that the bytes
are ggml's. How close: identical, byte for byte, for every tensor of base
in all three types and on random test data, against ggml_quantize_chunk
(quantize_row_*_ref) of pywhispercpp 1.5.1's libggml-base
(tests/reference/test-ggml-kquant.py checks it where pywhispercpp is
installed; fixtures/ggml-kquant.json records it). A ggml built to fuse
multiply-adds (FMA contraction) could round a few scales otherwise.
Rows must be whole super-blocks: tiny's 384-wide rows are not, and the tool
refuses them (whisper.cpp's quantize writes super-blocks across row ends
there, a file whisper.cpp's loader refuses:
https://github.com/ggml-org/whisper.cpp/issues/2906), unless --keep-partial
keeps those tensors as they are (f16): a mixed file this engine loads, in
which tiny's mlp.2 weights (rows of 1536) are the only k-quant tensors
(whisper.cpp takes every weight's type from the header and crashed loading
one through pywhispercpp 1.5.1).

Needs Python 3 and numpy only.
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
TYPES = {"q4_0": (2, 2), "q4_1": (3, 3), "q5_0": (6, 8), "q5_1": (7, 9), "q8_0": (8, 7),
         "q4_K": (12, 12), "q5_K": (13, 13), "q6_K": (14, 14)}
K_TYPES = ("q4_K", "q5_K", "q6_K")
K_BYTES = {"q4_K": 144, "q5_K": 176, "q6_K": 210}
QK_K = 256
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


def read_header(r, any_ftype=False):
    """Magic, hyper-parameters and ftype, mel filters, vocabulary: the bytes
    to copy, and the ftype."""
    (magic,) = struct.unpack("<I", r.take(4, "the magic"))
    if magic != GGML_MAGIC:
        raise QuantizeError(f"{r.path}: not a ggml file (magic 0x{magic:08x})")
    params = r.ints(11, "the hyper-parameters")
    if params[10] % QNT_VERSION_FACTOR not in (0, 1) and not any_ftype:
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


# ---- k-quants -------------------------------------------------------------
# Every loop over the values of a sub-block below runs column by column so
# that each float32 sum takes its terms in ggml's order.

F = np.float32


def nearest(v):
    """ggml's nearest_int: round half to even in float32."""
    return np.rint(v).astype(np.int32)


def make_qkx2(x, w, nmax, rmin, rdelta, nstep):
    """make_qkx2_quants for each row of x ([n, 32], weights w): the scale,
    the min (as a positive offset) and the codes. Works on the transposed
    values (one contiguous array per position) for speed."""
    x, w = np.ascontiguousarray(x.T), np.ascontiguousarray(w.T)
    n, rows = x.shape
    lo, hi = x[0].copy(), x[0].copy()
    sum_w = w[0].copy()
    sum_x = sum_w * x[0]
    for i in range(1, n):
        lo = np.where(x[i] < lo, x[i], lo)
        hi = np.where(x[i] > hi, x[i], hi)
        sum_w = sum_w + w[i]
        sum_x = sum_x + w[i] * x[i]
    lo = np.where(lo > 0, F(0), lo)
    flat = hi == lo
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        iscale = F(nmax) / (hi - lo)
        scale = F(1) / iscale
        L = np.clip(nearest(iscale * (x - lo)), 0, nmax).astype(F)
        best = np.zeros(rows, F)
        for i in range(n):
            diff = scale * L[i] + lo - x[i]
            best = best + w[i] * (diff * diff)
        for step in range(nstep + 1):
            iscale = (F(rmin) + F(rdelta) * F(step) + F(nmax)) / (hi - lo)
            aux = np.clip(nearest(iscale * (x - lo)), 0, nmax).astype(F)
            sum_l = np.zeros(rows, F)
            sum_l2 = np.zeros(rows, F)
            sum_xl = np.zeros(rows, F)
            for i in range(n):
                wl = w[i] * aux[i]
                sum_l = sum_l + wl
                sum_l2 = sum_l2 + wl * aux[i]
                sum_xl = sum_xl + wl * x[i]
            D = sum_w * sum_l2 - sum_l * sum_l
            this_scale = (sum_w * sum_xl - sum_x * sum_l) / D
            this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D
            positive = this_min > 0
            this_min = np.where(positive, F(0), this_min)
            this_scale = np.where(positive, sum_xl / sum_l2, this_scale)
            cur = np.zeros(rows, F)
            for i in range(n):
                diff = this_scale * aux[i] + this_min - x[i]
                cur = cur + w[i] * (diff * diff)
            better = (D > 0) & (cur < best)
            L = np.where(better, aux, L)
            best = np.where(better, cur, best)
            scale = np.where(better, this_scale, scale)
            lo = np.where(better, this_min, lo)
    L = np.where(flat, F(0), L)
    scale = np.where(flat, F(0), scale)
    return scale.astype(F), (-lo).astype(F), L.T.astype(np.int32)


def make_qx(x, nmax):
    """make_qx_quants (rmse_type 1: weights x^2, no importance) for each row
    of x ([n, 16]): the scale and the codes (0 .. 2 nmax - 1)."""
    first = np.argmax(np.abs(x), axis=1)
    amax = np.abs(x[np.arange(len(x)), first])
    top = x[np.arange(len(x)), first]
    zero = amax < F(1e-15)
    top = np.where(zero, F(1), top)
    x = np.ascontiguousarray(x.T)
    n, rows = x.shape
    w = x * x

    def trial(iscale):
        l = np.clip(nearest(iscale * x), -nmax, nmax - 1).astype(F)
        sumlx = np.zeros(rows, F)
        suml2 = np.zeros(rows, F)
        for i in range(n):
            sumlx = sumlx + w[i] * x[i] * l[i]
            suml2 = suml2 + w[i] * l[i] * l[i]
        return l, sumlx, suml2

    with np.errstate(divide="ignore", invalid="ignore"):
        l, sumlx, suml2 = trial(-F(nmax) / top)
        L = l + nmax
        scale = np.where(suml2 != 0, sumlx / suml2, F(0))
        best = scale * sumlx
        for step in range(-9, 10):
            if step == 0:
                continue
            l, sumlx, suml2 = trial(-(F(nmax) + F(0.1) * F(step)) / top)
            better = (suml2 > 0) & (sumlx * sumlx > best * suml2)
            L = np.where(better, l + nmax, L)
            scale = np.where(better, sumlx / suml2, scale)
            best = np.where(better, scale * sumlx, best)
    L = np.where(zero, F(0), L)
    scale = np.where(zero, F(0), scale)
    return scale.astype(F), L.T.astype(np.int32)


def pack_k4_scales(ls, lm):
    """The 8 6-bit scales and mins of a q4_K / q5_K super-block into 12
    bytes (get_scale_min_k4 in reverse)."""
    out = np.zeros((len(ls), 12), np.uint8)
    out[:, 0:4] = ls[:, 0:4]
    out[:, 4:8] = lm[:, 0:4]
    out[:, 8:12] = (ls[:, 4:8] & 0x0F) | ((lm[:, 4:8] & 0x0F) << 4)
    out[:, 0:4] |= (ls[:, 4:8] >> 4) << 6
    out[:, 4:8] |= (lm[:, 4:8] >> 4) << 6
    return out


def quantize_k4(x, kind):
    """q4_K / q5_K: x [n, 256] float32 -> [n, 144 or 176] uint8."""
    nb = len(x)
    nmax = 15 if kind == "q4_K" else 31
    subs = x.reshape(nb * 8, 32)
    sum_x2 = np.zeros(len(subs), F)
    for l in range(32):
        sum_x2 = sum_x2 + subs[:, l] * subs[:, l]
    av = np.sqrt(sum_x2 / F(32))
    weights = av[:, None] + np.abs(subs)
    if kind == "q4_K":
        scales, mins, L = make_qkx2(subs, weights, nmax, -1.0, 0.1, 20)
    else:
        scales, mins, L = make_qkx2(subs, weights, nmax, -0.5, 0.1, 15)
    scales, mins, L = scales.reshape(nb, 8), mins.reshape(nb, 8), L.reshape(nb, 256)
    max_scale = np.maximum(scales.max(axis=1), F(0))
    max_min = np.maximum(mins.max(axis=1), F(0))
    with np.errstate(divide="ignore"):
        inv_scale = np.where(max_scale > 0, F(63) / max_scale, F(0))
        inv_min = np.where(max_min > 0, F(63) / max_min, F(0))
    ls = np.minimum(nearest(inv_scale[:, None] * scales) & 0xFF, 63).astype(np.uint8)
    lm = np.minimum(nearest(inv_min[:, None] * mins) & 0xFF, 63).astype(np.uint8)
    d = f16(max_scale / F(63))
    dmin = f16(max_min / F(63))
    dd = d.astype(F)[:, None] * ls.astype(F)  # [nb, 8]
    dm = dmin.astype(F)[:, None] * lm.astype(F)
    with np.errstate(divide="ignore", invalid="ignore"):
        again = nearest((x.reshape(nb, 8, 32) + dm[:, :, None]) / dd[:, :, None])
    again = np.clip(again, 0, nmax).reshape(nb, 256)
    L = np.where(np.repeat(dd != 0, 32, axis=1), again, L).astype(np.uint8)
    parts = [d.view(np.uint8).reshape(-1, 2), dmin.view(np.uint8).reshape(-1, 2),
             pack_k4_scales(ls, lm)]
    pairs = L.reshape(nb, 4, 2, 32)  # per 64 values: low then high nibble
    if kind == "q5_K":
        high = (pairs >> 4) & 1
        qh = np.zeros((nb, 32), np.uint8)
        for p in range(4):
            qh |= (high[:, p, 0] << (2 * p)).astype(np.uint8)
            qh |= (high[:, p, 1] << (2 * p + 1)).astype(np.uint8)
        parts.append(qh)
    qs = (pairs[:, :, 0] & 0x0F) | ((pairs[:, :, 1] & 0x0F) << 4)
    parts.append(qs.reshape(nb, 128).astype(np.uint8))
    return np.concatenate(parts, axis=1)


def quantize_q6k(x):
    """q6_K: x [n, 256] float32 -> [n, 210] uint8."""
    nb = len(x)
    scales, L = make_qx(x.reshape(nb * 16, 16), 32)
    scales, L = scales.reshape(nb, 16), L.reshape(nb, 256)
    first = np.argmax(np.abs(scales), axis=1)
    max_scale = scales[np.arange(nb), first]
    zero = np.abs(max_scale) < F(1e-15)
    with np.errstate(divide="ignore", invalid="ignore"):
        iscale = np.where(zero, F(0), F(-128) / np.where(zero, F(1), max_scale))
        d = f16(np.where(zero, F(0), F(1) / iscale))
    sc = np.minimum(127, nearest(iscale[:, None] * scales)).astype(np.int8)
    dd = d.astype(F)[:, None] * sc.astype(F)
    with np.errstate(divide="ignore", invalid="ignore"):
        again = nearest(x.reshape(nb, 16, 16) / dd[:, :, None])
    again = (np.clip(again, -32, 31) + 32).reshape(nb, 256)
    L = np.where(np.repeat(dd != 0, 16, axis=1), again, L).astype(np.uint8)
    L = np.where(zero[:, None], 0, L).astype(np.uint8)
    sc = np.where(zero[:, None], 0, sc).astype(np.int8)
    halves = L.reshape(nb, 2, 4, 32)  # [half][c][l]: value 128 h + 32 c + l
    ql = np.concatenate([(halves[:, :, 0] & 0x0F) | ((halves[:, :, 2] & 0x0F) << 4),
                         (halves[:, :, 1] & 0x0F) | ((halves[:, :, 3] & 0x0F) << 4)], axis=2)
    qh = ((halves[:, :, 0] >> 4) | ((halves[:, :, 1] >> 4) << 2) |
          ((halves[:, :, 2] >> 4) << 4) | ((halves[:, :, 3] >> 4) << 6))
    return np.concatenate([ql.reshape(nb, 128).astype(np.uint8), qh.reshape(nb, 64).astype(np.uint8),
                           sc.view(np.uint8), d.view(np.uint8).reshape(-1, 2)], axis=1)


def quantize_super_blocks(x, kind, chunk=1 << 14):
    """x: [n_super_blocks, 256] float32 -> [n, block bytes] uint8, in chunks."""
    x = x.astype(np.float32)
    out = []
    for at in range(0, len(x), chunk):
        part = x[at:at + chunk]
        out.append(quantize_q6k(part) if kind == "q6_K" else quantize_k4(part, kind))
    return np.concatenate(out, axis=0)


def dequantize_k(kind, payload):
    """The values of k-quant super-blocks from their layout (block_q4_K ...
    in ggml-common.h), in float64: q4_K / q5_K (d sc) code - dmin m, q6_K
    d sc (code - 32). An independent route to check the engine's C
    dequantizer against (--dump)."""
    b = np.frombuffer(payload, np.uint8).reshape(-1, K_BYTES[kind])
    n = len(b)
    if kind == "q6_K":
        d = b[:, 208:210].copy().view("<f2")[:, 0].astype(np.float64)
        sc = b[:, 192:208].copy().view(np.int8).astype(np.float64)
        out = np.zeros((n, 2, 4, 32))
        for h in range(2):
            ql, qh = b[:, 64 * h:64 * h + 64], b[:, 128 + 32 * h:160 + 32 * h]
            for c in range(4):
                low = ql[:, 32 * (c % 2):32 * (c % 2) + 32]
                code = ((low & 15) if c < 2 else (low >> 4)) | (((qh >> (2 * c)) & 3) << 4)
                scale = np.repeat(sc[:, 8 * h + 2 * c:8 * h + 2 * c + 2], 16, axis=1)
                out[:, h, c] = d[:, None] * scale * (code.astype(np.float64) - 32)
        return out.reshape(-1)
    d = b[:, 0:2].copy().view("<f2")[:, 0].astype(np.float64)
    dmin = b[:, 2:4].copy().view("<f2")[:, 0].astype(np.float64)
    q = b[:, 4:16].astype(np.int32)
    sc = np.concatenate([q[:, 0:4] & 63, (q[:, 8:12] & 15) | ((q[:, 0:4] >> 6) << 4)], axis=1)
    mn = np.concatenate([q[:, 4:8] & 63, (q[:, 8:12] >> 4) | ((q[:, 4:8] >> 6) << 4)], axis=1)
    qs = b[:, 16:144] if kind == "q4_K" else b[:, 48:176]
    out = np.zeros((n, 8, 32))
    for s in range(8):
        part = qs[:, 32 * (s // 2):32 * (s // 2) + 32]
        code = ((part >> 4) if s % 2 else (part & 15)).astype(np.int32)
        if kind == "q5_K":
            code = code | (((b[:, 16:48] >> s) & 1) << 4)
        out[:, s] = (d * sc[:, s])[:, None] * code - (dmin * mn[:, s])[:, None]
    return out.reshape(-1)


def dump_tensor(path, name, out_path):
    """Writes tensor `name` of a ggml file (f32, f16 or a k-quant) as
    little-endian float32 values."""
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data, path)
    read_header(r, any_ftype=True)
    kinds = {TYPES[k][0]: k for k in K_TYPES}
    while r.pos < len(data):
        n_dims, name_len, ttype = r.ints(3, "a tensor header")
        ne = r.ints(n_dims, "a tensor shape")
        record = r.take(name_len, "a tensor name").decode("ascii")
        count = int(np.prod(ne))
        if ttype in kinds:
            payload = r.take(count // QK_K * K_BYTES[kinds[ttype]], record)
            values = dequantize_k(kinds[ttype], payload) if record == name else None
        elif ttype in (0, 1):
            payload = r.take(count * (4 if ttype == 0 else 2), record)
            values = np.frombuffer(payload, "<f4" if ttype == 0 else "<f2") if record == name else None
        else:
            raise QuantizeError(f"{path}: tensor '{record}' has type {ttype} (--dump reads f32, "
                                f"f16 and the k-quants)")
        if values is not None:
            values.astype("<f4").tofile(out_path)
            return
    raise QuantizeError(f"{path}: no tensor '{name}'")


def quantizable(name, ne):
    return len(ne) == 2 and name not in SKIP and ne[0] % BLOCK == 0


def quantize_file(in_path, out_path, kind, keep_partial=False):
    with open(in_path, "rb") as f:
        data = f.read()
    r = Reader(data, in_path)
    params = read_header(r)
    header_end = r.pos
    tmp_path = out_path + ".tmp"
    try:
        write_quantized(r, data, params, header_end, kind, tmp_path, keep_partial)
    except BaseException:
        if os.path.exists(tmp_path):
            os.unlink(tmp_path)
        raise
    os.replace(tmp_path, out_path)


def write_quantized(r, data, params, header_end, kind, tmp_path, keep_partial):
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
            if quantizable(name, ne) and kind in K_TYPES and ne[0] % QK_K and keep_partial:
                out_type, payload = ttype, values.tobytes()
            elif quantizable(name, ne) and kind in K_TYPES:
                if ne[0] % QK_K:
                    raise QuantizeError(
                        f"{name}: rows of {ne[0]} values are not whole super-blocks of "
                        f"{QK_K}, which {kind} needs (whisper.cpp's quantize writes "
                        f"super-blocks across row ends there, a file whisper.cpp refuses to "
                        f"load: https://github.com/ggml-org/whisper.cpp/issues/2906); use a "
                        f"32-value type (q8_0, q5_0, ...) for this model, or --keep-partial")
                blob = quantize_super_blocks(values.astype(np.float32).reshape(-1, QK_K), kind)
                out_type, payload = type_id, blob.tobytes()
            elif quantizable(name, ne):
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
    parser.add_argument("--dump", metavar="TENSOR",
                        help="instead: write tensor TENSOR of the ggml file INPUT to OUT as float32 "
                             "(k-quants decoded by numpy from the layout); TYPE is ignored")
    parser.add_argument("--keep-partial", action="store_true",
                        help="k-quants: keep the tensors whose rows are not whole super-blocks "
                             "of 256 as stored (f16) instead of refusing: a file for this engine "
                             "only (whisper.cpp does not load mixed files)")
    parser.add_argument("input", help="f16 or f32 ggml file (or CT2 directory with --from-ct2)")
    parser.add_argument("out", help="output ggml file")
    parser.add_argument("type", type=lambda t: t[:-1] + "K" if t.endswith("_k") else t,
                        choices=sorted(TYPES), help="block type (q4_k etc. also accepted)")
    args = parser.parse_args(argv)
    try:
        if args.dump:
            dump_tensor(args.input, args.dump, args.out)
        elif args.from_ct2:
            converter = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ct2-to-ggml.py")
            with tempfile.TemporaryDirectory() as tmp:
                f16_path = os.path.join(tmp, "f16.bin")
                subprocess.run([sys.executable, converter, args.input, f16_path], check=True)
                quantize_file(f16_path, args.out, args.type, args.keep_partial)
        else:
            quantize_file(args.input, args.out, args.type, args.keep_partial)
    except (QuantizeError, OSError, UnicodeDecodeError, ValueError,
            subprocess.CalledProcessError) as e:
        print(f"ggml-quantize: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
