/* whisper-engine.h: public API of libwhisper-engine.
 *
 * A WhisperEngine holds a loaded model on one device (weights uploaded once)
 * and every per-model constant, resolved once when it is created. A
 * WhisperStream is one transcription: its KV caches (sized from the engine's
 * cached constants), its prompt history and its options. Streams of one
 * engine may run in different threads; one stream is used by one thread at a
 * time (except whisper_stream_cancel(), which any thread may call).
 *
 * Audio is 16 kHz mono float32 in [-1, 1]. whisper_stream_transcribe()
 * sanitises what it is given once, on entry: a NaN or infinite sample
 * becomes 0 and a sample beyond +-1 is clamped to it (the log-mel front end
 * scales every frame to the loudest one, so a single bad sample would ruin
 * the whole input); the counts are in WhisperStreamStats.
 */
#pragma once

#include <glib.h>

#include "whisper-error.h"
#include "whisper-export.h"

G_BEGIN_DECLS

#define WHISPER_SAMPLE_RATE 16000

typedef enum {
  WHISPER_DEVICE_AUTO,   /* CUDA when the module loads and a GPU exists, else CPU */
  WHISPER_DEVICE_CPU,
  WHISPER_DEVICE_CUDA,
} WhisperDevice;

/* How the CPU computes its matrix products.
 * EXACT: float32, token for token faster-whisper's float32 (the default).
 * FAST: the fastest this CPU has: BFLOAT16 where oneDNN has bfloat16
 * products for it, else INT8 (never an error on x86-64).
 * INT8: the weights quantized to int8 at load and each linear's input rows
 * per call, integer products, as faster-whisper's compute_type "int8"
 * (any CPU; AVX2 and VNNI kernels where present).
 * BFLOAT16: the encoder and the prompt passes in bfloat16 (AMX or
 * AVX512-BF16 through oneDNN; float32 sums); on CPUs with AMX the decode
 * steps' linears too (bfloat16 weights on the tiles), elsewhere decode
 * steps as in EXACT; fails where oneDNN has no bfloat16 products.
 * A CTranslate2 int8 model's weights stay int8 in every precision. The
 * text may differ from EXACT's in places (README.md, "Precision"). The CUDA
 * backend has one precision and ignores this. */
typedef enum {
  WHISPER_PRECISION_EXACT,
  WHISPER_PRECISION_FAST,
  WHISPER_PRECISION_INT8,
  WHISPER_PRECISION_BFLOAT16,
} WhisperPrecision;

typedef struct {
  const char *model_path;  /* CTranslate2 directory or ggml file; NULL = default model */
  WhisperDevice device;
  int n_threads;           /* CPU threads; 0 = every core */
  int max_encoder_length;  /* encoder frames of a window (1..n_audio_ctx, the encoder
                              context); 0 = the model's n_audio_ctx */
  WhisperPrecision precision; /* CPU products; default EXACT */
  const char *alignment_heads; /* word timestamps: the decoder's cross-attention heads
                                  "layer,head;layer,head..." (e.g. "3,1;4,2"); NULL = the
                                  model's config.json alignment_heads, else (ggml) OpenAI's
                                  set for the model's dimensions, else every head of the
                                  last half of the decoder layers */
} WhisperEngineOptions;

WHISPER_API void whisper_engine_options_init (WhisperEngineOptions *options);

typedef struct _WhisperEngine WhisperEngine;

WHISPER_API WhisperEngine *whisper_engine_new (const WhisperEngineOptions *options, GError **error);
WHISPER_API WhisperEngine *whisper_engine_ref (WhisperEngine *engine);
WHISPER_API void whisper_engine_unref (WhisperEngine *engine);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (WhisperEngine, whisper_engine_unref)

/* The constants resolved when the engine was created. */
typedef struct {
  int n_mels;
  int n_vocab;
  int max_encoder_length;  /* encoder frames per window (n_audio_ctx or the override) */
  int n_audio_ctx;         /* the model's own value */
  int n_text_ctx;
  int n_audio_state, n_audio_head, n_audio_layer;
  int n_text_state, n_text_head, n_text_layer;
  int window_samples;      /* audio per window: 2 * max_encoder_length * 160 */
  int sample_len;          /* maximum new tokens per window (n_text_ctx / 2) */
  gboolean is_multilingual;
  int token_eot, token_sot, token_translate, token_transcribe, token_sot_lm,
      token_sot_prev, token_no_speech, token_no_timestamps, token_timestamp_begin;
  const char *device_name; /* "cpu" or "cuda" */
  const char *model_path;
  int n_alignment_heads;   /* word timestamps: heads used */
  const char *alignment_heads_source; /* where they came from (for messages) */
} WhisperEngineInfo;

WHISPER_API const WhisperEngineInfo *whisper_engine_get_info (const WhisperEngine *engine);

/* Text of token ids: bytes of all tokens joined, then UTF-8 decoded
 * (invalid sequences become U+FFFD). Special and timestamp tokens are
 * skipped. */
WHISPER_API char *whisper_engine_decode_tokens (const WhisperEngine *engine, const gint32 *ids,
                                                gsize n_ids);
/* Token ids of UTF-8 text, as OpenAI's tokenizer encodes ordinary text
 * (GPT-2 pre-tokenizer, byte-level BPE; never a special token); free with
 * g_free. NULL text is "". Fails on invalid UTF-8. */
WHISPER_API gint32 *whisper_engine_encode_text (const WhisperEngine *engine, const char *text,
                                                gsize *n_ids, GError **error);
/* Raw bytes of one token (special tokens: their "<|...|>" name), or NULL. */
WHISPER_API GBytes *whisper_engine_token_bytes (const WhisperEngine *engine, gint32 id);

/* Default model directory (see README): $WHISPER_MODEL if set, else
 * $XDG_DATA_HOME/gst-whisper/models/tiny.en. */
WHISPER_API char *whisper_engine_default_model_path (void);

G_END_DECLS
