#!/usr/bin/env python3
"""Write a CTranslate2 Whisper model with random weights of a given shape.

Usage:
  make-random-model.py OUT_DIR --shape NAME [--dtype float16|float32] [--seed N]
  make-random-model.py OUT_DIR --d-model D --layers L --heads H [--encoder-layers E]
      [--decoder-layers L] [--n-mels 80|128] [--vocab 51864|51865|51866]
      [--audio-ctx 1500] [--text-ctx 448] [--dtype ...] [--seed N]

What it is for: tests that need a model of a given shape but not its
accuracy (the element fuzzer, tests/fuzz/, runs on a tiny custom shape so
that an encoder window costs milliseconds), and CPU/GPU speed and memory
measurements of large models that are not installed (the cost of a forward
pass depends on the shape, not on the values of the weights).

OUT_DIR gets what a model converted by CTranslate2's
ct2-transformers-converter holds:
  model.bin        CTranslate2 binary version 6, spec WhisperSpec revision 3:
                   the variable names, shapes and scalar flags of
                   https://github.com/OpenNMT/CTranslate2/blob/master/python/ctranslate2/specs/whisper_spec.py
                   in the layout of
                   https://github.com/OpenNMT/CTranslate2/blob/master/python/ctranslate2/specs/model_spec.py
                   (every variable in --dtype; decoder/projection/weight an
                   alias of decoder/embeddings/weight, as Whisper ties them)
  config.json      alignment_heads, lang_ids, suppress_ids, suppress_ids_begin
  vocabulary.txt or vocabulary.json, tokenizer.json
  preprocessor_config.json  (only for --n-mels 128: faster-whisper reads the
                   number of mel bins from it, 80 without it)

Named shapes (--shape): the real models' dimensions.
  tiny, base, small, medium (and .en), large-v2, large-v3, large-v3-turbo.
A custom shape sets --d-model, --layers (both stacks) and --heads, with the
other options defaulting to tiny.en's (80 mels, English-only vocabulary,
1500 audio and 448 text positions).

Vocabulary: never generated. The files are copied at run time from an
installed model of the same vocabulary (--vocab-from, else
$XDG_DATA_HOME/gst-whisper/models/tiny.en for 51864 tokens and .../base for
51865; tools/fetch-model.sh [base] installs them). 51866 tokens (large-v3)
is base's vocabulary with the language token <|yue|> inserted after <|su|>
(id 50358), which shifts the following special tokens by one, as in
openai/whisper's tokenizer.py (the LANGUAGES table ends with "yue").

Weights: seeded, normal with mean 0 and standard deviation --std (0.02, a
transformer initialiser's scale), so every activation stays finite; layer
norm gamma 1 and beta 0; biases 0; the encoder's positional embedding is
Whisper's fixed sinusoid table (openai/whisper model.py, sinusoids()).
A model written twice with the same arguments is byte-identical.

Needs Python 3 and numpy.
"""

import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

CT2_BINARY_VERSION = 6
CT2_SPEC = "WhisperSpec"
CT2_SPEC_REVISION = 3
DTYPE_INT8, DTYPE_INT16, DTYPE_FLOAT32, DTYPE_FLOAT16 = 1, 2, 0, 4
GELU = 3

VOCAB_ENGLISH, VOCAB_MULTI, VOCAB_V3 = 51864, 51865, 51866
# Text tokens of the English-only vocabulary; <|endoftext|> follows them
# (one later in the multilingual ones).
N_TEXT_TOKENS_ENGLISH = 50256
YUE_ID = 50358

# name: (d_model, heads, encoder layers, decoder layers, n_mels, vocabulary)
SHAPES = {
    "tiny.en": (384, 6, 4, 4, 80, VOCAB_ENGLISH),
    "tiny": (384, 6, 4, 4, 80, VOCAB_MULTI),
    "base.en": (512, 8, 6, 6, 80, VOCAB_ENGLISH),
    "base": (512, 8, 6, 6, 80, VOCAB_MULTI),
    "small.en": (768, 12, 12, 12, 80, VOCAB_ENGLISH),
    "small": (768, 12, 12, 12, 80, VOCAB_MULTI),
    "medium.en": (1024, 16, 24, 24, 80, VOCAB_ENGLISH),
    "medium": (1024, 16, 24, 24, 80, VOCAB_MULTI),
    "large-v2": (1280, 20, 32, 32, 80, VOCAB_MULTI),
    "large-v3": (1280, 20, 32, 32, 128, VOCAB_V3),
    "large-v3-turbo": (1280, 20, 32, 4, 128, VOCAB_V3),
}


class ModelError(Exception):
    pass


def models_dir():
    """$XDG_DATA_HOME/gst-whisper/models, as the engine's default model path."""
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share")
    return os.path.join(data, "gst-whisper", "models")


# --------------------------------------------------------------------------
# model.bin


class Ct2Writer:
    """Appends CTranslate2 variables to model.bin, sorted by name at the end
    as CTranslate2's writer does. Values are written straight to a temporary
    file so that large shapes never sit in memory all at once."""

    def __init__(self, path):
        self.path = path
        self.index = []           # (name, rank, dims, dtype, offset, n_bytes)
        self.data_path = path + ".data"
        self.data = open(self.data_path, "wb")

    def add(self, name, dtype, dims, payload):
        offset = self.data.tell()
        self.data.write(payload)
        self.index.append((name, dtype, tuple(dims), offset, len(payload)))

    def add_scalar(self, name, dtype, value):
        fmt = {DTYPE_INT8: "<b", DTYPE_INT16: "<h"}[dtype]
        self.add(name, dtype, (), struct.pack(fmt, value))

    def add_array(self, name, array, dtype):
        np_dtype = np.dtype("<f2") if dtype == DTYPE_FLOAT16 else np.dtype("<f4")
        values = np.ascontiguousarray(array, dtype=np_dtype)
        if not np.all(np.isfinite(values)):
            raise ModelError(f"{name}: values not finite in {np_dtype}")
        self.add(name, dtype, array.shape, values.tobytes())

    @staticmethod
    def _string(text):
        raw = text.encode("utf-8") + b"\0"
        return struct.pack("<H", len(raw)) + raw

    def finish(self, aliases):
        self.data.close()
        with open(self.path, "wb") as out, open(self.data_path, "rb") as data:
            out.write(struct.pack("<I", CT2_BINARY_VERSION))
            out.write(self._string(CT2_SPEC))
            out.write(struct.pack("<I", CT2_SPEC_REVISION))
            out.write(struct.pack("<I", len(self.index)))
            for name, dtype, dims, offset, n_bytes in sorted(self.index):
                out.write(self._string(name))
                out.write(struct.pack("<B", len(dims)))
                for d in dims:
                    out.write(struct.pack("<I", d))
                out.write(struct.pack("<BI", dtype, n_bytes))
                data.seek(offset)
                left = n_bytes
                while left:
                    chunk = data.read(min(left, 1 << 24))
                    out.write(chunk)
                    left -= len(chunk)
            out.write(struct.pack("<I", len(aliases)))
            for alias, target in aliases:
                out.write(self._string(alias) + self._string(target))
        os.unlink(self.data_path)


def sinusoids(length, channels, max_timescale=10000.0):
    """Whisper's encoder positional embedding: sin half, then cos half."""
    increment = np.log(max_timescale) / (channels // 2 - 1)
    inv = np.exp(-increment * np.arange(channels // 2))
    t = np.arange(length)[:, None] * inv[None, :]
    return np.concatenate([np.sin(t), np.cos(t)], axis=1)


class RandomWeights:
    def __init__(self, writer, rng, dtype, std):
        self.w, self.rng, self.dtype, self.std = writer, rng, dtype, std

    def normal(self, name, *shape):
        values = self.rng.standard_normal(shape, dtype=np.float32) * np.float32(self.std)
        self.w.add_array(name, values, self.dtype)

    def const(self, name, value, *shape):
        self.w.add_array(name, np.full(shape, value, dtype=np.float32), self.dtype)

    def layer_norm(self, prefix, d):
        self.const(prefix + "/gamma", 1.0, d)
        self.const(prefix + "/beta", 0.0, d)

    def linear(self, prefix, n_out, n_in):
        self.normal(prefix + "/weight", n_out, n_in)
        self.const(prefix + "/bias", 0.0, n_out)

    def layer(self, prefix, d, cross_attention):
        self.layer_norm(prefix + "/self_attention/layer_norm", d)
        self.linear(prefix + "/self_attention/linear_0", 3 * d, d)   # q, k, v fused
        self.linear(prefix + "/self_attention/linear_1", d, d)
        if cross_attention:
            self.layer_norm(prefix + "/attention/layer_norm", d)
            self.linear(prefix + "/attention/linear_0", d, d)        # q
            self.linear(prefix + "/attention/linear_1", 2 * d, d)    # k, v fused
            self.linear(prefix + "/attention/linear_2", d, d)
        self.layer_norm(prefix + "/ffn/layer_norm", d)
        self.linear(prefix + "/ffn/linear_0", 4 * d, d)
        self.linear(prefix + "/ffn/linear_1", d, 4 * d)


def write_model_bin(path, shape, dtype, seed, std):
    w = Ct2Writer(path)
    rng = np.random.default_rng(seed)
    r = RandomWeights(w, rng, dtype, std)
    d = shape["d_model"]

    w.add_scalar("decoder/activation", DTYPE_INT8, GELU)
    w.add_scalar("decoder/alibi", DTYPE_INT8, 0)
    w.add_scalar("decoder/alignment_heads", DTYPE_INT16, 1)
    w.add_scalar("decoder/alignment_layer", DTYPE_INT16, -1)
    w.add_scalar("decoder/num_heads", DTYPE_INT16, shape["heads"])
    w.add_scalar("decoder/pre_norm", DTYPE_INT8, 1)
    w.add_scalar("decoder/scale_embeddings", DTYPE_INT8, 0)
    w.add_scalar("decoder/start_from_zero_embedding", DTYPE_INT8, 0)
    w.add_scalar("encoder/num_heads", DTYPE_INT16, shape["heads"])

    r.normal("encoder/conv1/weight", d, shape["n_mels"], 3)
    r.const("encoder/conv1/bias", 0.0, d)
    r.normal("encoder/conv2/weight", d, d, 3)
    r.const("encoder/conv2/bias", 0.0, d)
    w.add_array("encoder/position_encodings/encodings",
                sinusoids(shape["audio_ctx"], d).astype(np.float32), dtype)
    for i in range(shape["encoder_layers"]):
        r.layer(f"encoder/layer_{i}", d, cross_attention=False)
    r.layer_norm("encoder/layer_norm", d)

    r.normal("decoder/embeddings/weight", shape["vocab"], d)
    r.normal("decoder/position_encodings/encodings", shape["text_ctx"], d)
    for i in range(shape["decoder_layers"]):
        r.layer(f"decoder/layer_{i}", d, cross_attention=True)
    r.layer_norm("decoder/layer_norm", d)

    w.finish([("decoder/projection/weight", "decoder/embeddings/weight")])


# --------------------------------------------------------------------------
# Vocabulary, tokenizer, config


def read_vocabulary(src):
    """The token strings of an installed model directory, and the file kind."""
    js = os.path.join(src, "vocabulary.json")
    txt = os.path.join(src, "vocabulary.txt")
    if os.path.isfile(js):
        with open(js, encoding="utf-8") as f:
            return json.load(f), "json"
    if os.path.isfile(txt):
        with open(txt, encoding="utf-8", newline="\n") as f:
            return f.read().split("\n")[:-1], "txt"
    raise ModelError(f"{src}: no vocabulary.json or vocabulary.txt to copy")


def source_dir(vocab, override):
    if override:
        return override
    name = "tiny.en" if vocab == VOCAB_ENGLISH else "base"
    return os.path.join(models_dir(), name)


def write_vocabulary(out, vocab, src):
    """Copies (or, for 51866 tokens, derives) the vocabulary files; returns
    the source config.json's contents, or None."""
    need = VOCAB_MULTI if vocab == VOCAB_V3 else vocab
    if not os.path.isdir(src):
        raise ModelError(
            f"{src}: no installed model to copy a vocabulary of {need} tokens from "
            f"(tools/fetch-model.sh {'' if need == VOCAB_ENGLISH else 'base'}, "
            f"or --vocab-from DIR)")
    tokens, kind = read_vocabulary(src)
    if len(tokens) != need:
        raise ModelError(f"{src}: its vocabulary has {len(tokens)} tokens, not {need}")
    tokenizer_src = os.path.join(src, "tokenizer.json")
    config_src = os.path.join(src, "config.json")
    config = None
    if os.path.isfile(config_src):
        with open(config_src, encoding="utf-8") as f:
            config = json.load(f)

    if vocab != VOCAB_V3:
        name = "vocabulary." + kind
        shutil.copyfile(os.path.join(src, name), os.path.join(out, name))
        if os.path.isfile(tokenizer_src):
            shutil.copyfile(tokenizer_src, os.path.join(out, "tokenizer.json"))
        return config

    if tokens[YUE_ID - 1] != "<|su|>":
        raise ModelError(f"{src}: token {YUE_ID - 1} is {tokens[YUE_ID - 1]!r}, not <|su|>")
    tokens = tokens[:YUE_ID] + ["<|yue|>"] + tokens[YUE_ID:]
    with open(os.path.join(out, "vocabulary.json"), "w", encoding="utf-8") as f:
        json.dump(tokens, f, ensure_ascii=False, indent=2)
        f.write("\n")
    if os.path.isfile(tokenizer_src):
        with open(tokenizer_src, encoding="utf-8") as f:
            tok = json.load(f)
        added = tok.get("added_tokens", [])
        template = None
        for t in added:
            if t["id"] >= YUE_ID:
                t["id"] += 1
            if t["content"] == "<|su|>":
                template = t
        if template is not None:
            yue = dict(template, id=YUE_ID, content="<|yue|>")
            added.append(yue)
            added.sort(key=lambda t: t["id"])
        for spec in tok.get("post_processor", {}).get("special_tokens", {}).values():
            spec["ids"] = [i + 1 if i >= YUE_ID else i for i in spec.get("ids", [])]
        with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tok, f, ensure_ascii=False)
    if config is not None:
        config["suppress_ids"] = [i + 1 if i >= YUE_ID else i
                                  for i in config.get("suppress_ids", [])]
    return config


def write_config(out, shape, source_config):
    vocab = shape["vocab"]
    eot = N_TEXT_TOKENS_ENGLISH + (0 if vocab == VOCAB_ENGLISH else 1)
    n_languages = vocab - 51765 - (0 if vocab == VOCAB_ENGLISH else 1)
    layers, heads = shape["decoder_layers"], shape["heads"]
    config = {
        # No trained alignment: every head of the second half of the decoder,
        # openai/whisper's default before set_alignment_heads().
        "alignment_heads": [[layer, head] for layer in range(layers // 2, layers)
                            for head in range(heads)],
        "lang_ids": list(range(eot + 2, eot + 2 + n_languages)),
        "suppress_ids": (source_config or {}).get("suppress_ids", []),
        "suppress_ids_begin": [220, eot],
    }
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    if shape["n_mels"] != 80:
        with open(os.path.join(out, "preprocessor_config.json"), "w", encoding="utf-8") as f:
            json.dump({"feature_size": shape["n_mels"], "sampling_rate": 16000,
                       "hop_length": 160, "n_fft": 400, "chunk_length": 30,
                       "n_samples": 480000, "nb_max_frames": 3000}, f, indent=2)
            f.write("\n")


# --------------------------------------------------------------------------


def parse_shape(args):
    if args.shape:
        d, heads, enc, dec, mels, vocab = SHAPES[args.shape]
    else:
        if args.d_model is None or args.heads is None or \
                (args.layers is None and (args.encoder_layers is None or
                                          args.decoder_layers is None)):
            raise ModelError("give --shape NAME, or --d-model, --heads and --layers "
                             "(or --encoder-layers and --decoder-layers)")
        d, heads, enc, dec, mels, vocab = (args.d_model, args.heads, args.layers,
                                           args.layers, 80, VOCAB_ENGLISH)
    shape = {
        "d_model": d, "heads": heads,
        "encoder_layers": args.encoder_layers if args.encoder_layers is not None else enc,
        "decoder_layers": args.decoder_layers if args.decoder_layers is not None else dec,
        "n_mels": args.n_mels or mels, "vocab": args.vocab or vocab,
        "audio_ctx": args.audio_ctx, "text_ctx": args.text_ctx,
    }
    if shape["d_model"] % shape["heads"] or shape["d_model"] // shape["heads"] < 2 \
            or (shape["d_model"] // 2) < 2:
        raise ModelError(f"--d-model {shape['d_model']} must be a multiple of --heads "
                         f"{shape['heads']} (and at least 4)")
    if shape["encoder_layers"] < 1 or shape["decoder_layers"] < 1:
        raise ModelError("each stack needs at least one layer")
    if shape["vocab"] not in (VOCAB_ENGLISH, VOCAB_MULTI, VOCAB_V3):
        raise ModelError(f"--vocab {shape['vocab']}: only 51864, 51865 or 51866")
    if shape["audio_ctx"] < 1 or shape["text_ctx"] < 4:
        raise ModelError("--audio-ctx must be at least 1 and --text-ctx at least 4")
    return shape


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--shape", choices=sorted(SHAPES))
    p.add_argument("--d-model", type=int)
    p.add_argument("--heads", type=int)
    p.add_argument("--layers", type=int, help="encoder and decoder layers")
    p.add_argument("--encoder-layers", type=int)
    p.add_argument("--decoder-layers", type=int)
    p.add_argument("--n-mels", type=int, choices=(80, 128))
    p.add_argument("--vocab", type=int, choices=(VOCAB_ENGLISH, VOCAB_MULTI, VOCAB_V3))
    p.add_argument("--audio-ctx", type=int, default=1500,
                   help="encoder positions (1500 = 30 s windows; faster-whisper needs 1500)")
    p.add_argument("--text-ctx", type=int, default=448, help="decoder positions")
    p.add_argument("--dtype", choices=("float16", "float32"), default="float16")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--std", type=float, default=0.02)
    p.add_argument("--vocab-from", metavar="DIR",
                   help="installed model whose vocabulary files are copied")
    args = p.parse_args()

    try:
        shape = parse_shape(args)
        os.makedirs(args.out_dir, exist_ok=True)
        src = source_dir(shape["vocab"], args.vocab_from)
        source_config = write_vocabulary(args.out_dir, shape["vocab"], src)
        write_config(args.out_dir, shape, source_config)
        dtype = DTYPE_FLOAT16 if args.dtype == "float16" else DTYPE_FLOAT32
        write_model_bin(os.path.join(args.out_dir, "model.bin"), shape, dtype,
                        args.seed, args.std)
    except (ModelError, OSError) as e:
        print(f"make-random-model.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
