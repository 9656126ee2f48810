#!/usr/bin/env python3
"""Convert a CTranslate2 Whisper model directory to a whisper.cpp ggml file.

Usage: ct2-to-ggml.py CT2_DIR OUT.bin [--f32] [--legacy-tokens]

CT2_DIR holds model.bin and vocabulary.json or vocabulary.txt (config.json is
not needed). The output is the legacy ggml container that whisper.cpp reads
(as whisper.cpp's models/convert-pt-to-ggml.py writes it): f16 weights by default, f32 with --f32.
Biases, layer norms, conv biases and positional embeddings are always f32, as
whisper.cpp expects. Fused CTranslate2 projections are split back into
query/key/value (the key has no bias, so none is written).

int8/int16 CTranslate2 weights are dequantized (w = q * (1/scale), as
CTranslate2 does) before they are written.

whisper.cpp loads both kinds of file, but its CPU convolution only takes f16
kernels (whisper.cpp issue #2557), so an --f32 file fails there at the first
encode; use the default f16 file with whisper.cpp. The project's own loader
takes both.

Needs Python 3 and numpy only.
"""

import argparse
import json
import os
import struct
import sys

import numpy as np

GGML_MAGIC = 0x67676D6C
CT2_BINARY_VERSION = 6
CT2_DTYPES = {
    0: np.dtype("<f4"),
    1: np.dtype("i1"),
    2: np.dtype("<i2"),
    3: np.dtype("<i4"),
    4: np.dtype("<f2"),
    5: np.dtype("<u2"),  # bfloat16, widened below
}
SAMPLE_RATE = 16000
N_FFT = 400


class ConversionError(Exception):
    pass


# --------------------------------------------------------------------------
# model.bin


class Ct2Model:
    """The variables of a CTranslate2 model.bin, looked up by name."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = f.read()
        self.path = path
        self.pos = 0
        self.variables = {}
        self.aliases = {}
        self._parse()

    def _take(self, n, what):
        if n > len(self.data) - self.pos:
            raise ConversionError(
                f"{self.path}: {what} needs {n} bytes at offset {self.pos} "
                f"but the file has {len(self.data)}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def _unpack(self, fmt, what):
        return struct.unpack(fmt, self._take(struct.calcsize(fmt), what))[0]

    def _string(self, what):
        length = self._unpack("<H", what)
        raw = self._take(length, what)
        if length == 0 or raw[-1] != 0:
            raise ConversionError(f"{self.path}: {what} is not a NUL-terminated string")
        return raw[:-1].decode("utf-8")

    def _parse(self):
        version = self._unpack("<I", "the binary version")
        if version != CT2_BINARY_VERSION:
            raise ConversionError(f"{self.path}: binary version {version} is not 6")
        spec = self._string("the spec name")
        if spec != "WhisperSpec":
            raise ConversionError(f"{self.path}: spec '{spec}' is not WhisperSpec")
        revision = self._unpack("<I", "the spec revision")
        if not 1 <= revision <= 3:
            raise ConversionError(f"{self.path}: WhisperSpec revision {revision} is not supported")

        for index in range(self._unpack("<I", "the number of variables")):
            name = self._string(f"the name of variable {index}")
            rank = self._unpack("<B", name)
            dims = [self._unpack("<I", name) for _ in range(rank)]
            dtype_id = self._unpack("<B", name)
            num_bytes = self._unpack("<I", name)
            if dtype_id not in CT2_DTYPES:
                raise ConversionError(f"{self.path}: variable '{name}' has dtype {dtype_id}")
            dtype = CT2_DTYPES[dtype_id]
            count = int(np.prod(dims, dtype=np.uint64)) if dims else 1
            if count * dtype.itemsize != num_bytes:
                raise ConversionError(f"{self.path}: variable '{name}' has an invalid payload size")
            raw = self._take(num_bytes, f"variable '{name}'")
            array = np.frombuffer(raw, dtype=dtype).reshape(dims)
            if dtype_id == 5:
                array = (array.astype(np.uint32) << 16).view(np.float32)
            if name in self.variables:
                raise ConversionError(f"{self.path}: variable '{name}' appears twice")
            self.variables[name] = array

        for index in range(self._unpack("<I", "the number of aliases")):
            alias = self._string(f"alias {index}")
            target = self._string(f"alias {index}")
            if target not in self.variables:
                raise ConversionError(
                    f"{self.path}: alias '{alias}' points to missing variable '{target}'")
            self.aliases[alias] = target

    def resolve(self, name):
        """Name of the stored variable that name refers to, or None."""
        if name in self.variables:
            return name
        if name in self.aliases:
            return self.aliases[name]
        for suffix in ("_scale", "_zero"):
            base = name[: -len(suffix)]
            if name.endswith(suffix) and base in self.aliases:
                target = self.aliases[base] + suffix
                return target if target in self.variables else None
        return None

    def has(self, name):
        return self.resolve(name) is not None

    def raw(self, name):
        resolved = self.resolve(name)
        if resolved is None:
            raise ConversionError(f"{self.path}: missing variable '{name}'")
        return self.variables[resolved]

    def floats(self, name):
        """The variable as float32, dequantizing int8/int16 weights."""
        value = self.raw(name)
        if value.dtype.kind == "f":
            return value.astype(np.float32)
        if value.dtype == np.int8:
            scale = self.raw(name + "_scale").astype(np.float32).reshape(-1)
            rows = value.shape[0]
            if scale.size != rows:
                raise ConversionError(f"{self.path}: '{name}_scale' has {scale.size} values, expected {rows}")
            inverse = (np.float32(1.0) / scale).reshape((rows,) + (1,) * (value.ndim - 1))
            return value.astype(np.float32) * inverse
        if value.dtype == np.int16:
            scale = np.float32(1000.0)
            if self.has(name + "_scale"):
                scale = self.raw(name + "_scale").astype(np.float32).reshape(-1)[0]
            return value.astype(np.float32) * (np.float32(1.0) / scale)
        raise ConversionError(f"{self.path}: variable '{name}' has unsupported dtype {value.dtype}")

    def int_scalar(self, name):
        value = self.raw(name)
        if value.size != 1:
            raise ConversionError(f"{self.path}: variable '{name}' is not a scalar")
        return int(value.reshape(-1)[0])


# --------------------------------------------------------------------------
# Vocabulary


def byte_decoder():
    """GPT-2 byte-level code point -> raw byte (bytes_to_unicode() in
    https://github.com/openai/gpt-2/blob/master/src/encoder.py, inverted)."""
    printable = (list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD))
                 + list(range(0xAE, 0x100)))
    mapping = {chr(b): b for b in printable}
    extra = 0
    for b in range(256):
        if b not in printable:
            mapping[chr(0x100 + extra)] = b
            extra += 1
    return mapping


def read_vocabulary(ct2_dir):
    json_path = os.path.join(ct2_dir, "vocabulary.json")
    txt_path = os.path.join(ct2_dir, "vocabulary.txt")
    if os.path.exists(json_path):
        with open(json_path, encoding="utf-8") as f:
            tokens = json.load(f)
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise ConversionError(f"{json_path}: not a JSON list of strings")
        return tokens
    if os.path.exists(txt_path):
        with open(txt_path, "rb") as f:
            text = f.read().decode("utf-8")
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        if lines and all(line.endswith("\r") for line in lines):
            lines = [line[:-1] for line in lines]
        return lines
    raise ConversionError(f"{ct2_dir}: no vocabulary.json or vocabulary.txt")


def token_bytes(tokens, eot, legacy=False):
    """The text tokens (ids below <|endoftext|>) as raw bytes, as whisper.cpp's
    converter writes them today. legacy=True writes them as it did in 2022,
    the form of whisper.cpp's own test files (models/for-tests-ggml-*.bin):
    each token decoded as UTF-8 with U+FFFD for invalid bytes (lossy: a
    byte-level token becomes U+FFFD), and <|endoftext|> kept as the last
    token of the English vocabulary."""
    decoder = byte_decoder()
    out = []
    for index, token in enumerate(tokens[:eot]):
        try:
            raw = bytes(decoder[ch] for ch in token)
        except KeyError as missing:
            raise ConversionError(
                f"token {index} holds {missing}, not a GPT-2 byte-level character") from None
        out.append(raw.decode("utf-8", errors="replace").encode("utf-8") if legacy else raw)
    if legacy and eot == 50256:  # English: gpt2 vocab.json still had <|endoftext|>
        out.append(b"<|endoftext|>")
    return out


# --------------------------------------------------------------------------
# Mel filters (Slaney scale and normalisation, as librosa and faster-whisper)


def mel_filters(n_mels):
    fft_freqs = np.fft.rfftfreq(n=N_FFT, d=1.0 / SAMPLE_RATE)
    f_sp = 200.0 / 3
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    log_step = np.log(6.4) / 27.0
    max_mel = 45.245640471924965

    mels = np.linspace(0.0, max_mel, n_mels + 2)
    freqs = f_sp * mels
    above = mels >= min_log_mel
    freqs[above] = min_log_hz * np.exp(log_step * (mels[above] - min_log_mel))

    widths = np.diff(freqs)
    ramps = freqs[:, None] - fft_freqs[None, :]
    rising = -ramps[:-2] / widths[:-1, None]
    falling = ramps[2:] / widths[1:, None]
    # The triangles are rounded to float32 before the Slaney normalisation,
    # as librosa.filters.mel(dtype=float32) does: that is how OpenAI's
    # whisper/assets/mel_filters.npz, which whisper.cpp's converter copies
    # into its files, was made. Normalising in float64 first gives values
    # 1 ulp away in 118 of the 80 x 201 weights.
    weights = np.maximum(0.0, np.minimum(rising, falling)).astype(np.float32)
    weights *= (2.0 / (freqs[2:] - freqs[:-2]))[:, None]
    weights += 0.0  # -0.0 (0 Hz of the first triangle) -> +0.0, as the files hold
    return weights


# --------------------------------------------------------------------------
# Tensors in whisper.cpp names


def split_rows(array, parts):
    rows = array.shape[0] // parts
    return [array[i * rows:(i + 1) * rows] for i in range(parts)]


def layer_tensors(model, ct2_prefix, oai_prefix, is_decoder):
    def get(name):
        return model.floats(f"{ct2_prefix}/{name}")

    out = []

    def norm(ct2_name, oai_name):
        out.append((f"{oai_prefix}.{oai_name}.weight", get(f"{ct2_name}/gamma")))
        out.append((f"{oai_prefix}.{oai_name}.bias", get(f"{ct2_name}/beta")))

    def linear(ct2_name, oai_name):
        out.append((f"{oai_prefix}.{oai_name}.weight", get(f"{ct2_name}/weight")))
        out.append((f"{oai_prefix}.{oai_name}.bias", get(f"{ct2_name}/bias")))

    def check_no_key_bias(bias, name):
        if np.any(bias != 0):
            raise ConversionError(f"{ct2_prefix}/{name}: the key bias is not zero; "
                                  "whisper.cpp has no key bias")

    norm("self_attention/layer_norm", "attn_ln")
    q_w, k_w, v_w = split_rows(get("self_attention/linear_0/weight"), 3)
    q_b, k_b, v_b = split_rows(get("self_attention/linear_0/bias"), 3)
    check_no_key_bias(k_b, "self_attention/linear_0/bias")
    out += [(f"{oai_prefix}.attn.query.weight", q_w), (f"{oai_prefix}.attn.query.bias", q_b),
            (f"{oai_prefix}.attn.key.weight", k_w),
            (f"{oai_prefix}.attn.value.weight", v_w), (f"{oai_prefix}.attn.value.bias", v_b)]
    linear("self_attention/linear_1", "attn.out")

    if is_decoder:
        norm("attention/layer_norm", "cross_attn_ln")
        linear("attention/linear_0", "cross_attn.query")
        k_w, v_w = split_rows(get("attention/linear_1/weight"), 2)
        k_b, v_b = split_rows(get("attention/linear_1/bias"), 2)
        check_no_key_bias(k_b, "attention/linear_1/bias")
        out += [(f"{oai_prefix}.cross_attn.key.weight", k_w),
                (f"{oai_prefix}.cross_attn.value.weight", v_w),
                (f"{oai_prefix}.cross_attn.value.bias", v_b)]
        linear("attention/linear_2", "cross_attn.out")

    norm("ffn/layer_norm", "mlp_ln")
    linear("ffn/linear_0", "mlp.0")
    linear("ffn/linear_1", "mlp.2")
    return out


def count_layers(model, part):
    n = 0
    while model.has(f"{part}/layer_{n}/self_attention/linear_0/weight"):
        n += 1
    return n


def whisper_tensors(model, n_enc, n_dec):
    d = model.raw("encoder/conv1/weight").shape[0]
    out = [
        ("encoder.positional_embedding", model.floats("encoder/position_encodings/encodings")),
        ("encoder.conv1.weight", model.floats("encoder/conv1/weight")),
        ("encoder.conv1.bias", model.floats("encoder/conv1/bias").reshape(d, 1)),
        ("encoder.conv2.weight", model.floats("encoder/conv2/weight")),
        ("encoder.conv2.bias", model.floats("encoder/conv2/bias").reshape(d, 1)),
    ]
    for i in range(n_enc):
        out += layer_tensors(model, f"encoder/layer_{i}", f"encoder.blocks.{i}", False)
    out += [
        ("encoder.ln_post.weight", model.floats("encoder/layer_norm/gamma")),
        ("encoder.ln_post.bias", model.floats("encoder/layer_norm/beta")),
        ("decoder.positional_embedding", model.floats("decoder/position_encodings/encodings")),
        ("decoder.token_embedding.weight", model.floats("decoder/embeddings/weight")),
    ]
    for i in range(n_dec):
        out += layer_tensors(model, f"decoder/layer_{i}", f"decoder.blocks.{i}", True)
    out += [
        ("decoder.ln.weight", model.floats("decoder/layer_norm/gamma")),
        ("decoder.ln.bias", model.floats("decoder/layer_norm/beta")),
    ]
    return out


ALWAYS_F32 = {
    "encoder.conv1.bias", "encoder.conv2.bias",
    "encoder.positional_embedding", "decoder.positional_embedding",
}


def check_model(model):
    activation = model.int_scalar("decoder/activation")
    if activation != 3:
        raise ConversionError(
            f"decoder/activation is {activation}; only exact GELU (3) converts faithfully")
    projection = model.resolve("decoder/projection/weight")
    embeddings = model.resolve("decoder/embeddings/weight")
    if projection != embeddings and not np.array_equal(model.raw("decoder/projection/weight"),
                                                       model.raw("decoder/embeddings/weight")):
        raise ConversionError("decoder/projection/weight is not tied to decoder/embeddings/weight")


# --------------------------------------------------------------------------
# Writer


def header_bytes(hparams, filters, tokens, use_f32):
    """Everything before the tensors: magic, the 10 hyper-parameters and the
    ftype, the mel filter bank, the vocabulary."""
    out = bytearray()
    out += struct.pack("<I", GGML_MAGIC)
    out += struct.pack("<11i", *hparams, 0 if use_f32 else 1)
    out += struct.pack("<ii", filters.shape[0], filters.shape[1])
    out += filters.astype("<f4").tobytes()
    out += struct.pack("<i", len(tokens))
    for token in tokens:
        out += struct.pack("<I", len(token))
        out += token
    return bytes(out)


def write_ggml(out_path, hparams, filters, tokens, tensors, use_f32):
    tmp_path = out_path + ".tmp"
    with open(tmp_path, "wb") as f:
        f.write(header_bytes(hparams, filters, tokens, use_f32))

        for name, array in tensors:
            keep_f32 = use_f32 or array.ndim == 1 or name in ALWAYS_F32
            data = array.astype("<f4" if keep_f32 else "<f2")
            encoded = name.encode("ascii")
            f.write(struct.pack("<iii", data.ndim, len(encoded), 0 if keep_f32 else 1))
            # ggml ne order: innermost (last torch) dimension first.
            f.write(struct.pack(f"<{data.ndim}i", *reversed(data.shape)))
            f.write(encoded)
            f.write(np.ascontiguousarray(data).tobytes())
    os.replace(tmp_path, out_path)


def convert(ct2_dir, out_path, use_f32, legacy_tokens=False):
    model = Ct2Model(os.path.join(ct2_dir, "model.bin"))
    check_model(model)

    conv1 = model.raw("encoder/conv1/weight")
    d, n_mels = conv1.shape[0], conv1.shape[1]
    n_vocab = model.raw("decoder/embeddings/weight").shape[0]
    audio_heads = model.int_scalar("encoder/num_heads")
    text_heads = (model.int_scalar("decoder/num_heads")
                  if model.has("decoder/num_heads") else audio_heads)
    n_enc = count_layers(model, "encoder")
    n_dec = count_layers(model, "decoder")
    hparams = [
        n_vocab,
        model.raw("encoder/position_encodings/encodings").shape[0], d, audio_heads, n_enc,
        model.raw("decoder/position_encodings/encodings").shape[0], d, text_heads, n_dec,
        n_mels,
    ]

    vocabulary = read_vocabulary(ct2_dir)
    if len(vocabulary) != n_vocab:
        raise ConversionError(f"the vocabulary has {len(vocabulary)} tokens, the model {n_vocab}")
    if "<|endoftext|>" not in vocabulary:
        raise ConversionError("the vocabulary has no <|endoftext|>")
    tokens = token_bytes(vocabulary, vocabulary.index("<|endoftext|>"), legacy_tokens)

    tensors = whisper_tensors(model, n_enc, n_dec)
    write_ggml(out_path, hparams, mel_filters(n_mels), tokens, tensors, use_f32)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Convert a CTranslate2 Whisper model directory to a whisper.cpp ggml file.")
    parser.add_argument("ct2_dir", help="CTranslate2 model directory (model.bin, vocabulary.*)")
    parser.add_argument("out", help="output ggml file")
    parser.add_argument("--f32", action="store_true",
                        help="write f32 weights instead of f16 (whisper.cpp's CPU build cannot run these)")
    parser.add_argument("--legacy-tokens", action="store_true",
                        help="write the vocabulary as whisper.cpp's converter did in 2022 (tokens "
                             "UTF-8-decoded with U+FFFD, lossy), the form of its test files")
    args = parser.parse_args(argv)
    try:
        convert(args.ct2_dir, args.out, args.f32, args.legacy_tokens)
    except (ConversionError, OSError, UnicodeDecodeError, ValueError) as e:
        print(f"ct2-to-ggml: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
