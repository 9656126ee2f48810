/* whisper-model-walk.c: the table of the model's weights and the walk over
 * it (whisper-model-walk.h). */
#include "whisper-model-walk.h"

#include <stddef.h>

/* Sizes in a table entry: a positive number is itself, these name a
 * hyper-parameter of the part being walked. */
enum {
  DIM_D = -1,       /* the part's state width */
  DIM_N_MELS = -2,
  DIM_N_CTX = -3,   /* the part's context (positions) */
  DIM_N_VOCAB = -4,
};

typedef struct {
  WhisperWeightKind kind;
  /* the weight's name in each format: a part's weight whole, a layer's
   * weight as the suffix of the layer's prefix */
  const char *ct2, *ggml;
  gsize offset;  /* in WhisperEncoderWeights, WhisperDecoderWeights or WhisperLayerWeights */
  /* LINEAR: n_out and n_in in units of d; FUSED: parts (a); CONV: c_in (a);
   * TABLE: rows (a) */
  int a, b;
  gboolean decoder_only;  /* layers: the cross-attention's weights */
} WeightEntry;

#define ENC(field) offsetof (WhisperEncoderWeights, field)
#define DEC(field) offsetof (WhisperDecoderWeights, field)
#define LAYER(field) offsetof (WhisperLayerWeights, field)

static const WeightEntry encoder_weights[] = {
  { WHISPER_WEIGHT_CONV, "encoder/conv1/weight", "encoder.conv1.weight", ENC (conv1_weight),
    DIM_N_MELS, 0, FALSE },
  { WHISPER_WEIGHT_CONV_BIAS, "encoder/conv1/bias", "encoder.conv1.bias", ENC (conv1_bias),
    0, 0, FALSE },
  { WHISPER_WEIGHT_CONV, "encoder/conv2/weight", "encoder.conv2.weight", ENC (conv2_weight),
    DIM_D, 0, FALSE },
  { WHISPER_WEIGHT_CONV_BIAS, "encoder/conv2/bias", "encoder.conv2.bias", ENC (conv2_bias),
    0, 0, FALSE },
  { WHISPER_WEIGHT_TABLE, "encoder/position_encodings/encodings",
    "encoder.positional_embedding", ENC (positional), DIM_N_CTX, 0, FALSE },
  { WHISPER_WEIGHT_LAYER_NORM, "encoder/layer_norm", "encoder.ln_post", ENC (ln_post), 0, 0,
    FALSE },
};

static const WeightEntry decoder_weights[] = {
  { WHISPER_WEIGHT_TABLE, "decoder/embeddings/weight", "decoder.token_embedding.weight",
    DEC (token_embedding), DIM_N_VOCAB, 0, FALSE },
  { WHISPER_WEIGHT_TABLE, "decoder/position_encodings/encodings",
    "decoder.positional_embedding", DEC (positional), DIM_N_CTX, 0, FALSE },
  { WHISPER_WEIGHT_LAYER_NORM, "decoder/layer_norm", "decoder.ln", DEC (ln), 0, 0, FALSE },
};

static const WeightEntry layer_weights[] = {
  { WHISPER_WEIGHT_LAYER_NORM, "/self_attention/layer_norm", ".attn_ln", LAYER (attn_ln), 0, 0,
    FALSE },
  { WHISPER_WEIGHT_FUSED, "/self_attention/linear_0", ".attn", LAYER (attn_qkv), 3, 0, FALSE },
  { WHISPER_WEIGHT_LINEAR, "/self_attention/linear_1", ".attn.out", LAYER (attn_out), 1, 1,
    FALSE },
  { WHISPER_WEIGHT_LAYER_NORM, "/ffn/layer_norm", ".mlp_ln", LAYER (mlp_ln), 0, 0, FALSE },
  { WHISPER_WEIGHT_LINEAR, "/ffn/linear_0", ".mlp.0", LAYER (mlp_fc1), 4, 1, FALSE },
  { WHISPER_WEIGHT_LINEAR, "/ffn/linear_1", ".mlp.2", LAYER (mlp_fc2), 1, 4, FALSE },
  { WHISPER_WEIGHT_LAYER_NORM, "/attention/layer_norm", ".cross_attn_ln", LAYER (cross_ln), 0,
    0, TRUE },
  { WHISPER_WEIGHT_LINEAR, "/attention/linear_0", ".cross_attn.query", LAYER (cross_q), 1, 1,
    TRUE },
  { WHISPER_WEIGHT_FUSED, "/attention/linear_1", ".cross_attn", LAYER (cross_kv), 2, 0, TRUE },
  { WHISPER_WEIGHT_LINEAR, "/attention/linear_2", ".cross_attn.out", LAYER (cross_out), 1, 1,
    TRUE },
};

/* The hyper-parameters of the part being walked. */
typedef struct {
  int d, n_mels, n_ctx, n_vocab;
} PartDims;

static int
resolve (const PartDims *p, int size)
{
  switch (size) {
  case DIM_D:
    return p->d;
  case DIM_N_MELS:
    return p->n_mels;
  case DIM_N_CTX:
    return p->n_ctx;
  case DIM_N_VOCAB:
    return p->n_vocab;
  default:
    return size;
  }
}

static gboolean
read_entry (const WhisperWeightReader *ops, gpointer reader, const WeightEntry *e,
            const char *name, const PartDims *p, guint8 *base, GError **error)
{
  const int d = p->d;
  gpointer field = base + e->offset;
  switch (e->kind) {
  case WHISPER_WEIGHT_LAYER_NORM:
    return ops->layer_norm (reader, name, d, field, error);
  case WHISPER_WEIGHT_LINEAR:
    return ops->linear (reader, name, e->a * d, e->b * d, field, error);
  case WHISPER_WEIGHT_FUSED:
    return ops->fused (reader, name, e->a, d, field, error);
  case WHISPER_WEIGHT_CONV: {
    const int c_in = resolve (p, e->a);
    const gint64 dims[] = { d, c_in, 3 };
    return ops->tensor (reader, e->kind, name, 3, dims, d, c_in * 3, field, error);
  }
  case WHISPER_WEIGHT_CONV_BIAS: {
    const gint64 dims[] = { d };
    return ops->tensor (reader, e->kind, name, 1, dims, 1, d, field, error);
  }
  case WHISPER_WEIGHT_TABLE: {
    const int rows = resolve (p, e->a);
    const gint64 dims[] = { rows, d };
    return ops->tensor (reader, e->kind, name, 2, dims, rows, d, field, error);
  }
  }
  g_return_val_if_reached (FALSE);
}

static const char *
entry_name (const WhisperWeightReader *ops, const WeightEntry *e)
{
  return ops->format == WHISPER_MODEL_FORMAT_GGML ? e->ggml : e->ct2;
}

/* One part: its own weights, then its n_layers layers (allocated here,
 * owned by the model). */
static gboolean
walk_part (WhisperModel *model, const WhisperWeightReader *ops, gpointer reader,
           gboolean decoder, GError **error)
{
  const PartDims p = {
    .d = whisper_model_lookup (model, decoder ? WHISPER_HPARAM_N_TEXT_STATE
                                              : WHISPER_HPARAM_N_AUDIO_STATE),
    .n_mels = whisper_model_lookup (model, WHISPER_HPARAM_N_MELS),
    .n_ctx = whisper_model_lookup (model, decoder ? WHISPER_HPARAM_N_TEXT_CTX
                                                  : WHISPER_HPARAM_N_AUDIO_CTX),
    .n_vocab = whisper_model_lookup (model, WHISPER_HPARAM_N_VOCAB),
  };
  const int n_layers = whisper_model_lookup (model, decoder ? WHISPER_HPARAM_N_TEXT_LAYER
                                                            : WHISPER_HPARAM_N_AUDIO_LAYER);
  const WeightEntry *own = decoder ? decoder_weights : encoder_weights;
  const gsize n_own = decoder ? G_N_ELEMENTS (decoder_weights) : G_N_ELEMENTS (encoder_weights);
  guint8 *base = decoder ? (guint8 *) &model->decoder : (guint8 *) &model->encoder;
  const char *part = decoder ? "decoder" : "encoder";

  if (ops->part && !ops->part (reader, decoder, error))
    return FALSE;
  for (gsize i = 0; i < n_own; i++)
    if (!read_entry (ops, reader, &own[i], entry_name (ops, &own[i]), &p, base, error))
      return FALSE;

  WhisperLayerWeights *layers = g_new0 (WhisperLayerWeights, n_layers);
  g_ptr_array_add (model->allocations, layers);
  if (decoder)
    model->decoder.layers = layers;
  else
    model->encoder.layers = layers;
  for (int l = 0; l < n_layers; l++) {
    g_autofree char *prefix = g_strdup_printf ("%s%s%d", part, ops->layer_infix, l);
    for (gsize i = 0; i < G_N_ELEMENTS (layer_weights); i++) {
      const WeightEntry *e = &layer_weights[i];
      if (e->decoder_only && !decoder)
        continue;
      g_autofree char *name = g_strconcat (prefix, entry_name (ops, e), NULL);
      if (!read_entry (ops, reader, e, name, &p, (guint8 *) &layers[l], error))
        return FALSE;
    }
  }
  return TRUE;
}

gboolean
whisper_model_walk_weights (WhisperModel *model, const WhisperWeightReader *ops,
                            gpointer reader, GError **error)
{
  return walk_part (model, ops, reader, FALSE, error) &&
         walk_part (model, ops, reader, TRUE, error);
}
