/* whisper-model.h: the in-memory Whisper model (internal to the engine).
 *
 * Both loaders (CTranslate2 directory, whisper.cpp ggml file) produce this
 * same structure. Every weight is a WhisperTensor (util/tensor.h) in the
 * type the file stores, in PyTorch layout (a linear weight is [n_out, n_in],
 * row-major): it points into the model file, which the model keeps mapped,
 * or into a buffer the loader made where the file's layout differs (ggml's
 * separate q, k, v fused into one tensor; int8 scales; a big-endian host).
 * Backends convert or pack each tensor once (whisper-weights.c); no float32
 * copy of a float16 model is made.
 *
 * Hyper-parameters are private: code outside whisper-model*.c reads them
 * only through whisper_model_lookup(), which counts every call. The engine
 * looks them up once when it is created and caches them; the tests check
 * that the counter does not move while audio is transcribed.
 */
#pragma once

#include <glib.h>
#include <stdarg.h>

#include "tensor.h"

G_BEGIN_DECLS

#define WHISPER_MODEL_ERROR (whisper_model_error_quark ())
GQuark whisper_model_error_quark (void);

typedef enum {
  WHISPER_MODEL_ERROR_NOT_FOUND,   /* path does not exist / cannot be opened */
  WHISPER_MODEL_ERROR_FORMAT,      /* malformed, truncated, inconsistent file */
  WHISPER_MODEL_ERROR_UNSUPPORTED, /* valid file, feature not supported (e.g. quantized ggml) */
} WhisperModelError;

typedef enum {
  WHISPER_HPARAM_N_VOCAB,
  WHISPER_HPARAM_N_AUDIO_CTX,
  WHISPER_HPARAM_N_AUDIO_STATE,
  WHISPER_HPARAM_N_AUDIO_HEAD,
  WHISPER_HPARAM_N_AUDIO_LAYER,
  WHISPER_HPARAM_N_TEXT_CTX,
  WHISPER_HPARAM_N_TEXT_STATE,
  WHISPER_HPARAM_N_TEXT_HEAD,
  WHISPER_HPARAM_N_TEXT_LAYER,
  WHISPER_HPARAM_N_MELS,
  WHISPER_HPARAM_COUNT
} WhisperHParam;

typedef enum {
  WHISPER_MODEL_FORMAT_CT2,
  WHISPER_MODEL_FORMAT_GGML,
} WhisperModelFormat;

/* A linear layer: y = x W^T + b. weight is [n_out, n_in]; bias is a vector
 * [1, n_out] (bias.data NULL: no bias). Fused projections keep
 * CTranslate2's layout:
 *   self-attention qkv: weight [3d, d], bias [bq; 0; bv]
 *   cross-attention kv: weight [2d, d], bias [0; bv]                    */
typedef struct {
  WhisperTensor weight;
  WhisperTensor bias;
  int n_out;
  int n_in;
} WhisperLinearWeights;

typedef struct {
  WhisperTensor gamma;  /* [1, d] */
  WhisperTensor beta;   /* [1, d] */
} WhisperLayerNormWeights;

typedef struct {
  WhisperLayerNormWeights attn_ln;
  WhisperLinearWeights attn_qkv;   /* [3d, d] */
  WhisperLinearWeights attn_out;   /* [d, d] */
  WhisperLayerNormWeights cross_ln;  /* decoder only */
  WhisperLinearWeights cross_q;      /* decoder only, [d, d] */
  WhisperLinearWeights cross_kv;     /* decoder only, [2d, d] */
  WhisperLinearWeights cross_out;    /* decoder only, [d, d] */
  WhisperLayerNormWeights mlp_ln;
  WhisperLinearWeights mlp_fc1;    /* [4d, d] */
  WhisperLinearWeights mlp_fc2;    /* [d, 4d] */
} WhisperLayerWeights;

typedef struct {
  WhisperTensor conv1_weight;   /* [d, n_mels * 3] (PyTorch [d, n_mels, 3]) */
  WhisperTensor conv1_bias;     /* [1, d] */
  WhisperTensor conv2_weight;   /* [d, d * 3] */
  WhisperTensor conv2_bias;     /* [1, d] */
  WhisperTensor positional;     /* [n_audio_ctx, d] */
  WhisperLayerWeights *layers;  /* n_audio_layer */
  WhisperLayerNormWeights ln_post;
} WhisperEncoderWeights;

typedef struct {
  WhisperTensor token_embedding;  /* [n_vocab, d]; also the (tied) output projection */
  WhisperTensor positional;       /* [n_text_ctx, d] */
  WhisperLayerWeights *layers;    /* n_text_layer */
  WhisperLayerNormWeights ln;
} WhisperDecoderWeights;

typedef struct _WhisperModel WhisperModel;

struct _WhisperModel {
  /* private: read through whisper_model_lookup() */
  int hparams_[WHISPER_HPARAM_COUNT];

  WhisperModelFormat format;
  char *path;

  WhisperEncoderWeights encoder;
  WhisperDecoderWeights decoder;

  /* Vocabulary: n_tokens raw byte strings (GPT-2 byte-level strings of a
   * CTranslate2 vocabulary are already mapped back to bytes), id = index.
   * Special tokens are kept as their ASCII names ("<|endoftext|>").
   * n_tokens may be smaller than n_vocab (ggml files): missing ids have
   * no text. */
  GBytes **tokens;
  int n_tokens;

  /* CTranslate2 config.json, when present (NULL otherwise). */
  int *suppress_ids;
  int n_suppress_ids;
  int *suppress_ids_begin;
  int n_suppress_ids_begin;
  /* config.json "alignment_heads": n_alignment_heads [layer, head] pairs
   * (2 ints each); NULL when the file has none. */
  int *alignment_heads;
  int n_alignment_heads;

  /* Everything the weight pointers point into (freed with the model): the
   * mapped model file and the loaders' own buffers. */
  GMappedFile *mapped;
  GPtrArray *allocations;
};

WhisperModel *whisper_model_load (const char *path, GError **error);
void whisper_model_free (WhisperModel *model);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (WhisperModel, whisper_model_free)

/* The only way to read a hyper-parameter; every call is counted. */
int whisper_model_lookup (const WhisperModel *model, WhisperHParam param);
guint64 whisper_model_lookup_count (void);

/* Default model location: $WHISPER_MODEL if set, else
 * $XDG_DATA_HOME/gst-whisper/models/tiny.en (~/.local/share/...). */
char *whisper_model_default_path (void);

/* Loader internals shared by whisper-model-ct2.c and whisper-model-ggml.c. */
WhisperModel *whisper_model_new_empty (const char *path, WhisperModelFormat format);
float *whisper_model_alloc_floats (WhisperModel *model, gsize n, GError **error);
/* n bytes owned by the model (freed with it), or NULL with an error. */
gpointer whisper_model_alloc_bytes (WhisperModel *model, gsize n, GError **error);
/* The model keeps a reference to the mapped file its tensors point into. */
void whisper_model_keep_mapping (WhisperModel *model, GMappedFile *mapped);
/* Hands the pages of a tensor that points into the mapped file back to the
 * kernel (they are read again from the page cache if touched), once a
 * backend has made its own copy: the file's pages and the backend's copy are
 * then never both resident, which keeps the peak memory of a load near the
 * weights' size. Does nothing for tensors the loaders made. */
void whisper_model_release_tensor (const WhisperModel *model, const WhisperTensor *t);
void whisper_model_set_hparam (WhisperModel *model, WhisperHParam param, int value);
/* Checks hyper-parameters for consistency and that every weight is set. */
gboolean whisper_model_validate (WhisperModel *model, GError **error);
/* Checks only the hyper-parameters (each in a sane range, heads divide the
 * state, audio and text widths equal), so that a loader can size its
 * allocations from them; whisper_model_validate() calls it too. */
gboolean whisper_model_check_hparams (WhisperModel *model, GError **error);

WhisperModel *whisper_model_load_ct2 (const char *dir, GError **error);
WhisperModel *whisper_model_load_ggml (const char *file, GError **error);

/* Bounds-checked read cursor over a mapped model file, shared by the loaders:
 * returns bytes[*pos .. *pos+n) and advances *pos, or fails with
 * "FILE: WHAT needs N bytes at offset P but the file has SIZE". */
gconstpointer whisper_model_take_bytes (const char *file, const guint8 *bytes, gsize size,
                                        gsize *pos, gsize n, GError **error,
                                        const char *what_format, va_list args)
    G_GNUC_PRINTF (7, 0);
/* Little-endian integers from a byte pointer (any alignment). */
guint16 whisper_read_le16 (const guint8 *p);
guint32 whisper_read_le32 (const guint8 *p);

G_END_DECLS
