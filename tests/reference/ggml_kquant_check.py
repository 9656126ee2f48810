"""Helpers of the k-quant reference and test (make-ggml-kquant-reference.py,
test-ggml-kquant.py): ggml's own quantizer and dequantizer through
pywhispercpp's libggml-base (ctypes), and the records of a ggml file
(whisper.cpp's text: ggml_files.py)."""

import ctypes
import glob
import os
import struct

import numpy as np

GGML_TYPE = {"q4_K": 12, "q5_K": 13, "q6_K": 14}
BLOCK_BYTES = {"q4_K": 144, "q5_K": 176, "q6_K": 210}


def ggml_library():
    """pywhispercpp's libggml-base (ggml_quantize_chunk), or None."""
    try:
        import pywhispercpp
    except ImportError:
        return None
    site = os.path.dirname(os.path.dirname(pywhispercpp.__file__))
    for path in sorted(glob.glob(os.path.join(site, "libggml-base.so*"))):
        lib = ctypes.CDLL(path)
        lib.ggml_quantize_chunk.restype = ctypes.c_size_t
        lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                            ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                            ctypes.c_void_p]
        return lib
    return None


def records(path):
    """(name, type, ne, payload bytes) of every tensor of a ggml file."""
    with open(path, "rb") as f:
        data = f.read()
    pos = 4 + 11 * 4
    n_mel, n_fft = struct.unpack_from("<2i", data, pos)
    pos += 8 + 4 * n_mel * n_fft
    (n_tokens,) = struct.unpack_from("<i", data, pos)
    pos += 4
    for _ in range(n_tokens):
        (length,) = struct.unpack_from("<i", data, pos)
        pos += 4 + length
    while pos < len(data):
        n_dims, name_len, ttype = struct.unpack_from("<3i", data, pos)
        ne = struct.unpack_from(f"<{n_dims}i", data, pos + 12)
        pos += 12 + 4 * n_dims
        name = data[pos:pos + name_len].decode("ascii")
        pos += name_len
        count = int(np.prod(ne))
        if ttype in (0, 1):
            size = count * (4 if ttype == 0 else 2)
        else:
            kind = {v: k for k, v in GGML_TYPE.items()}[ttype]
            size = count // 256 * BLOCK_BYTES[kind]
        yield name, ttype, ne, data[pos:pos + size]
        pos += size


def tensors_unlike_ggml(f16_path, quantized_path, kind):
    """Names of the quantized tensors whose bytes are not what ggml's
    ggml_quantize_chunk writes from the f16 values; None without
    pywhispercpp's libggml-base."""
    lib = ggml_library()
    if lib is None:
        return None
    source = {name: (ttype, payload) for name, ttype, _, payload in records(f16_path)}
    differ = []
    for name, ttype, ne, payload in records(quantized_path):
        if ttype != GGML_TYPE[kind]:
            continue
        stype, values = source[name]
        x = np.frombuffer(values, "<f2" if stype == 1 else "<f4").astype(np.float32)
        out = np.zeros(len(payload), np.uint8)
        size = lib.ggml_quantize_chunk(GGML_TYPE[kind], x.ctypes.data, out.ctypes.data, 0,
                                       len(x) // ne[0], ne[0], None)
        if size != len(payload) or out.tobytes() != payload:
            differ.append(name)
    return differ



def ggml_dequantize(lib, kind, payload):
    """ggml's dequantize_row_<kind> of the payload (float32), libggml-base."""
    fn = getattr(lib, f"dequantize_row_{kind}")
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    blocks = np.frombuffer(payload, np.uint8).copy()
    n = len(payload) // BLOCK_BYTES[kind] * 256
    out = np.zeros(n, np.float32)
    fn(blocks.ctypes.data, out.ctypes.data, n)
    return out
