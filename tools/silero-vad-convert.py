#!/usr/bin/env python3
"""Convert faster-whisper's Silero VAD v6 ONNX file to the engine's VAD weight file.

Usage: silero-vad-convert.py SILERO_VAD_V6.onnx OUT.bin

The input is the silero_vad_v6.onnx that faster-whisper 1.2.1 ships in its
wheel (faster_whisper/assets/), the model its vad_filter runs
(faster_whisper/vad.py, SileroVADModel). Only that exact file is accepted:
its SHA-256 is pinned below, because the engine's C code
(engine/src/vad/whisper-vad-net.c) hard-codes the graph around the weights
(reflection padding, STFT hop, convolution strides, LSTM gate order). That
file holds the 16 kHz network only (input [N, 64 + 512] samples, no sample
rate input), so there is no 8 kHz branch to leave out.

Needs Python 3, numpy and the `onnx` package (PyPI).

Output format (all integers unsigned 32-bit, everything little-endian):

  offset  size  field
  0       8     magic "GWSILVAD"
  8       4     format version, 1
  12      4     n_tensors
  16      32    SHA-256 of the ONNX file it was made from (raw bytes)
  48      ...   n_tensors records, one after the other:
                  4        name_len
                  name_len name, UTF-8, no terminator
                  4        dtype: 0 = float32 (the only one)
                  4        n_dims (1..4)
                  4*n_dims dims, outermost first
                  4*prod(dims) the values, float32, row-major

The records, in this order (names and layouts as the ONNX initializers, the
LSTM's renamed from its anonymous onnx::LSTM_* names):

  encoder.feature_extractor.forward_basis_buffer [258, 1, 256]
      STFT as a convolution: rows 0..128 the real, 129..257 the imaginary
      parts of the 129 bins of a 256-point windowed DFT (hop 128)
  encoder.conv_layers.{0,1,2,3}.weight  [128,129,3] [64,128,3] [64,64,3] [128,64,3]
  encoder.conv_layers.{0,1,2,3}.bias    [128] [64] [64] [128]
      Conv1d [out, in, kernel], padding 1, strides 1, 2, 2, 1, each + ReLU
  decoder.rnn.W  [1, 512, 128]   LSTM input weights, ONNX gate order i, o, f, c
  decoder.rnn.R  [1, 512, 128]   LSTM recurrent weights, same order
  decoder.rnn.B  [1, 1024]       input biases (512) then recurrent biases (512)
  decoder.conv1d.weight [1, 128, 1], decoder.conv1d.bias [1]
      the 1x1 convolution after ReLU(h), then a sigmoid: the probability

The output is deterministic: the same input gives the same bytes.
"""

import argparse
import hashlib
import os
import struct
import sys

MAGIC = b"GWSILVAD"
VERSION = 1
DTYPE_F32 = 0

# SHA-256 of faster-whisper 1.2.1's faster_whisper/assets/silero_vad_v6.onnx.
PINNED_ONNX_SHA256 = "4cbf549b8326f60f80f2536d9eefeb450a9abe83365a098031c89719f1be17d2"

# (name in our file, name in the ONNX file or None for an LSTM input, shape)
TENSORS = [
    ("encoder.feature_extractor.forward_basis_buffer",
     "encoder.feature_extractor.forward_basis_buffer", (258, 1, 256)),
    ("encoder.conv_layers.0.weight", "encoder.conv_layers.0.weight", (128, 129, 3)),
    ("encoder.conv_layers.0.bias", "encoder.conv_layers.0.bias", (128,)),
    ("encoder.conv_layers.1.weight", "encoder.conv_layers.1.weight", (64, 128, 3)),
    ("encoder.conv_layers.1.bias", "encoder.conv_layers.1.bias", (64,)),
    ("encoder.conv_layers.2.weight", "encoder.conv_layers.2.weight", (64, 64, 3)),
    ("encoder.conv_layers.2.bias", "encoder.conv_layers.2.bias", (64,)),
    ("encoder.conv_layers.3.weight", "encoder.conv_layers.3.weight", (128, 64, 3)),
    ("encoder.conv_layers.3.bias", "encoder.conv_layers.3.bias", (128,)),
    ("decoder.rnn.W", None, (1, 512, 128)),
    ("decoder.rnn.R", None, (1, 512, 128)),
    ("decoder.rnn.B", None, (1, 1024)),
    ("decoder.conv1d.weight", "decoder.conv1d.weight", (1, 128, 1)),
    ("decoder.conv1d.bias", "decoder.conv1d.bias", (1,)),
]
# The LSTM node's inputs: X, W, R, B (https://onnx.ai/onnx/operators/onnx__LSTM.html)
LSTM_INPUT_INDEX = {"decoder.rnn.W": 1, "decoder.rnn.R": 2, "decoder.rnn.B": 3}


class ConversionError(Exception):
    pass


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_tensors(onnx_path):
    """The initializers we need, as float32 numpy arrays, by our names."""
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as e:
        raise ConversionError(
            "the Python package 'onnx' is missing (python3 -m pip install onnx; "
            "tools/install-deps.sh installs it)") from e
    import numpy as np

    model = onnx.load(onnx_path)
    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    lstm_nodes = [n for n in graph.node if n.op_type == "LSTM"]
    if len(lstm_nodes) != 1:
        raise ConversionError(f"{onnx_path}: expected one LSTM node, found {len(lstm_nodes)}")
    lstm = lstm_nodes[0]
    hidden = [a.i for a in lstm.attribute if a.name == "hidden_size"]
    if hidden != [128]:
        raise ConversionError(f"{onnx_path}: LSTM hidden_size is {hidden}, expected 128")

    out = []
    for name, onnx_name, shape in TENSORS:
        if onnx_name is None:
            onnx_name = lstm.input[LSTM_INPUT_INDEX[name]]
        if onnx_name not in initializers:
            raise ConversionError(f"{onnx_path}: no initializer '{onnx_name}' (for {name})")
        array = numpy_helper.to_array(initializers[onnx_name])
        if array.dtype != np.float32:
            raise ConversionError(f"{onnx_path}: '{onnx_name}' is {array.dtype}, expected float32")
        if tuple(array.shape) != shape:
            raise ConversionError(
                f"{onnx_path}: '{onnx_name}' has shape {tuple(array.shape)}, expected {shape}")
        out.append((name, np.ascontiguousarray(array, dtype="<f4")))
    return out


def write_weights(path, tensors, source_sha256):
    """Writes the format described in the module docstring, atomically."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<II", VERSION, len(tensors)))
        f.write(bytes.fromhex(source_sha256))
        for name, array in tensors:
            encoded = name.encode("utf-8")
            f.write(struct.pack("<I", len(encoded)))
            f.write(encoded)
            f.write(struct.pack("<II", DTYPE_F32, array.ndim))
            f.write(struct.pack("<%dI" % array.ndim, *array.shape))
            f.write(array.tobytes())
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(
        description="Convert faster-whisper's silero_vad_v6.onnx to the engine's VAD weight file.")
    parser.add_argument("onnx", help="faster_whisper/assets/silero_vad_v6.onnx")
    parser.add_argument("out", help="output file (e.g. .../models/silero-vad/silero_vad_v6.bin)")
    args = parser.parse_args()

    try:
        if not os.path.isfile(args.onnx):
            raise ConversionError(f"{args.onnx}: no such file")
        have = sha256_of(args.onnx)
        if have != PINNED_ONNX_SHA256:
            raise ConversionError(
                f"{args.onnx}: SHA-256 {have} is not the pinned {PINNED_ONNX_SHA256} "
                "(faster-whisper 1.2.1's silero_vad_v6.onnx); the engine's VAD is written "
                "for that graph only, so other files are refused")
        tensors = read_tensors(args.onnx)
        out_dir = os.path.dirname(os.path.abspath(args.out))
        os.makedirs(out_dir, exist_ok=True)
        write_weights(args.out, tensors, have)
    except (ConversionError, OSError) as e:
        print(f"silero-vad-convert: {e}", file=sys.stderr)
        return 1
    n_values = sum(a.size for _, a in tensors)
    print(f"silero-vad-convert: wrote {args.out} ({len(tensors)} tensors, {n_values} values)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
