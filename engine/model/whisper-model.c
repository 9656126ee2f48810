/* whisper-model.c: the parts of the model that do not depend on the file
 * format: allocation, hyper-parameters, validation, bounds-checked reads.
 * Format detection and dispatch are in model-load.c. */
#include "whisper-model.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <glib/gstdio.h>

G_DEFINE_QUARK (whisper-model-error-quark, whisper_model_error)

static atomic_uint_fast64_t lookup_count;

/* Largest value each hyper-parameter may take. Real models are far below
 * (large-v3: d 1280, 32 layers, 20 heads, 51866 tokens); the limits only
 * keep a hostile file from asking for absurd allocations. */
static const struct {
  const char *name;
  int max;
} hparam_info[WHISPER_HPARAM_COUNT] = {
  [WHISPER_HPARAM_N_VOCAB] = { "n_vocab", 1 << 20 },
  [WHISPER_HPARAM_N_AUDIO_CTX] = { "n_audio_ctx", 1 << 16 },
  [WHISPER_HPARAM_N_AUDIO_STATE] = { "n_audio_state", 1 << 14 },
  [WHISPER_HPARAM_N_AUDIO_HEAD] = { "n_audio_head", 1 << 10 },
  [WHISPER_HPARAM_N_AUDIO_LAYER] = { "n_audio_layer", 256 },
  [WHISPER_HPARAM_N_TEXT_CTX] = { "n_text_ctx", 1 << 16 },
  [WHISPER_HPARAM_N_TEXT_STATE] = { "n_text_state", 1 << 14 },
  [WHISPER_HPARAM_N_TEXT_HEAD] = { "n_text_head", 1 << 10 },
  [WHISPER_HPARAM_N_TEXT_LAYER] = { "n_text_layer", 256 },
  [WHISPER_HPARAM_N_MELS] = { "n_mels", 1024 },
};

WhisperModel *
whisper_model_new_empty (const char *path, WhisperModelFormat format)
{
  WhisperModel *model = g_new0 (WhisperModel, 1);
  model->path = g_strdup (path);
  model->format = format;
  model->allocations = g_ptr_array_new_with_free_func (g_free);
  return model;
}

float *
whisper_model_alloc_floats (WhisperModel *model, gsize n, GError **error)
{
  g_return_val_if_fail (model != NULL, NULL);

  /* Tensors in a model file are limited to 4 GiB each (CTranslate2 stores
   * byte counts as u32); anything above that is a corrupt size. */
  const gsize max_floats = (gsize) G_MAXUINT32;
  if (n == 0 || n > max_floats) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: a tensor of %" G_GSIZE_FORMAT " floats is not a valid size",
                 model->path, n);
    return NULL;
  }

  float *data = g_try_malloc (n * sizeof (float));
  if (data == NULL) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: cannot allocate %" G_GSIZE_FORMAT " bytes for a tensor",
                 model->path, n * sizeof (float));
    return NULL;
  }
  g_ptr_array_add (model->allocations, data);
  return data;
}

void
whisper_model_set_hparam (WhisperModel *model, WhisperHParam param, int value)
{
  g_return_if_fail (model != NULL);
  g_return_if_fail (param >= 0 && param < WHISPER_HPARAM_COUNT);
  model->hparams_[param] = value;
}

int
whisper_model_lookup (const WhisperModel *model, WhisperHParam param)
{
  g_return_val_if_fail (model != NULL, 0);
  g_return_val_if_fail (param >= 0 && param < WHISPER_HPARAM_COUNT, 0);
  atomic_fetch_add_explicit (&lookup_count, 1, memory_order_relaxed);
  return model->hparams_[param];
}

guint64
whisper_model_lookup_count (void)
{
  return atomic_load_explicit (&lookup_count, memory_order_relaxed);
}

char *
whisper_model_default_path (void)
{
  const char *from_env = g_getenv ("WHISPER_MODEL");
  if (from_env != NULL && from_env[0] != '\0')
    return g_strdup (from_env);
  return g_build_filename (g_get_user_data_dir (), "gst-whisper", "models",
                           "tiny.en", NULL);
}

void
whisper_model_free (WhisperModel *model)
{
  if (model == NULL)
    return;

  if (model->tokens != NULL) {
    for (int i = 0; i < model->n_tokens; i++)
      g_clear_pointer (&model->tokens[i], g_bytes_unref);
    g_free (model->tokens);
  }
  g_free (model->suppress_ids);
  g_free (model->suppress_ids_begin);
  g_clear_pointer (&model->allocations, g_ptr_array_unref);
  g_free (model->path);
  g_free (model);
}

gboolean
whisper_model_check_hparams (WhisperModel *model, GError **error)
{
  const int *hp = model->hparams_;

  for (int i = 0; i < WHISPER_HPARAM_COUNT; i++) {
    if (hp[i] <= 0 || hp[i] > hparam_info[i].max) {
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                   "%s: hyper-parameter %s = %d is out of range (1..%d)",
                   model->path, hparam_info[i].name, hp[i], hparam_info[i].max);
      return FALSE;
    }
  }

  if (hp[WHISPER_HPARAM_N_AUDIO_STATE] % hp[WHISPER_HPARAM_N_AUDIO_HEAD] != 0 ||
      hp[WHISPER_HPARAM_N_TEXT_STATE] % hp[WHISPER_HPARAM_N_TEXT_HEAD] != 0) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: the number of heads (audio %d, text %d) does not divide "
                 "the state width (audio %d, text %d)",
                 model->path, hp[WHISPER_HPARAM_N_AUDIO_HEAD],
                 hp[WHISPER_HPARAM_N_TEXT_HEAD], hp[WHISPER_HPARAM_N_AUDIO_STATE],
                 hp[WHISPER_HPARAM_N_TEXT_STATE]);
    return FALSE;
  }

  if (hp[WHISPER_HPARAM_N_AUDIO_STATE] != hp[WHISPER_HPARAM_N_TEXT_STATE]) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: n_audio_state (%d) differs from n_text_state (%d)",
                 model->path, hp[WHISPER_HPARAM_N_AUDIO_STATE],
                 hp[WHISPER_HPARAM_N_TEXT_STATE]);
    return FALSE;
  }
  return TRUE;
}

/* Weight checks: the first missing pointer or wrong linear shape is
 * reported by name. */
typedef struct {
  const WhisperModel *model;
  GError **error;
} ValidateContext;

static gboolean
check_set (ValidateContext *ctx, const void *pointer, const char *what,
           const char *part, int layer)
{
  if (pointer != NULL)
    return TRUE;
  if (layer >= 0)
    g_set_error (ctx->error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: %s layer %d has no %s", ctx->model->path, part, layer, what);
  else
    g_set_error (ctx->error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: %s has no %s", ctx->model->path, part, what);
  return FALSE;
}

static gboolean
check_layer_norm (ValidateContext *ctx, const WhisperLayerNormWeights *ln,
                  const char *what, const char *part, int layer)
{
  g_autofree char *gamma = g_strconcat (what, " gamma", NULL);
  g_autofree char *beta = g_strconcat (what, " beta", NULL);
  return check_set (ctx, ln->gamma, gamma, part, layer) &&
         check_set (ctx, ln->beta, beta, part, layer);
}

static gboolean
check_linear (ValidateContext *ctx, const WhisperLinearWeights *linear,
              int n_out, int n_in, const char *what, const char *part, int layer)
{
  g_autofree char *weight = g_strconcat (what, " weight", NULL);
  g_autofree char *bias = g_strconcat (what, " bias", NULL);
  if (!check_set (ctx, linear->weight, weight, part, layer) ||
      !check_set (ctx, linear->bias, bias, part, layer))
    return FALSE;

  if (linear->n_out != n_out || linear->n_in != n_in) {
    g_set_error (ctx->error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: %s layer %d: %s is [%d, %d], expected [%d, %d]",
                 ctx->model->path, part, layer, what, linear->n_out,
                 linear->n_in, n_out, n_in);
    return FALSE;
  }
  return TRUE;
}

static gboolean
check_layer (ValidateContext *ctx, const WhisperLayerWeights *l, int d,
             gboolean is_decoder, const char *part, int i)
{
  if (!check_layer_norm (ctx, &l->attn_ln, "self-attention layer norm", part, i) ||
      !check_linear (ctx, &l->attn_qkv, 3 * d, d, "self-attention qkv", part, i) ||
      !check_linear (ctx, &l->attn_out, d, d, "self-attention output", part, i) ||
      !check_layer_norm (ctx, &l->mlp_ln, "mlp layer norm", part, i) ||
      !check_linear (ctx, &l->mlp_fc1, 4 * d, d, "mlp fc1", part, i) ||
      !check_linear (ctx, &l->mlp_fc2, d, 4 * d, "mlp fc2", part, i))
    return FALSE;

  if (!is_decoder)
    return TRUE;

  return check_layer_norm (ctx, &l->cross_ln, "cross-attention layer norm", part, i) &&
         check_linear (ctx, &l->cross_q, d, d, "cross-attention query", part, i) &&
         check_linear (ctx, &l->cross_kv, 2 * d, d, "cross-attention kv", part, i) &&
         check_linear (ctx, &l->cross_out, d, d, "cross-attention output", part, i);
}

static gboolean
check_encoder (ValidateContext *ctx, const WhisperEncoderWeights *enc, int d,
               int n_layers)
{
  if (!check_set (ctx, enc->conv1_weight, "conv1 weight", "encoder", -1) ||
      !check_set (ctx, enc->conv1_bias, "conv1 bias", "encoder", -1) ||
      !check_set (ctx, enc->conv2_weight, "conv2 weight", "encoder", -1) ||
      !check_set (ctx, enc->conv2_bias, "conv2 bias", "encoder", -1) ||
      !check_set (ctx, enc->positional, "positional embedding", "encoder", -1) ||
      !check_layer_norm (ctx, &enc->ln_post, "final layer norm", "encoder", -1) ||
      !check_set (ctx, enc->layers, "layers", "encoder", -1))
    return FALSE;

  for (int i = 0; i < n_layers; i++)
    if (!check_layer (ctx, &enc->layers[i], d, FALSE, "encoder", i))
      return FALSE;
  return TRUE;
}

static gboolean
check_decoder (ValidateContext *ctx, const WhisperDecoderWeights *dec, int d,
               int n_layers)
{
  if (!check_set (ctx, dec->token_embedding, "token embedding", "decoder", -1) ||
      !check_set (ctx, dec->positional, "positional embedding", "decoder", -1) ||
      !check_layer_norm (ctx, &dec->ln, "final layer norm", "decoder", -1) ||
      !check_set (ctx, dec->layers, "layers", "decoder", -1))
    return FALSE;

  for (int i = 0; i < n_layers; i++)
    if (!check_layer (ctx, &dec->layers[i], d, TRUE, "decoder", i))
      return FALSE;
  return TRUE;
}

gboolean
whisper_model_validate (WhisperModel *model, GError **error)
{
  g_return_val_if_fail (model != NULL, FALSE);

  if (!whisper_model_check_hparams (model, error))
    return FALSE;

  const int *hp = model->hparams_;
  ValidateContext ctx = { model, error };
  if (!check_encoder (&ctx, &model->encoder, hp[WHISPER_HPARAM_N_AUDIO_STATE],
                      hp[WHISPER_HPARAM_N_AUDIO_LAYER]) ||
      !check_decoder (&ctx, &model->decoder, hp[WHISPER_HPARAM_N_TEXT_STATE],
                      hp[WHISPER_HPARAM_N_TEXT_LAYER]))
    return FALSE;

  if (model->n_tokens < 0 || model->n_tokens > hp[WHISPER_HPARAM_N_VOCAB] ||
      (model->n_tokens > 0 && model->tokens == NULL)) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: the vocabulary has %d tokens but the model only %d logits",
                 model->path, model->n_tokens, hp[WHISPER_HPARAM_N_VOCAB]);
    return FALSE;
  }
  return TRUE;
}

gconstpointer
whisper_model_take_bytes (const char *file, const guint8 *bytes, gsize size, gsize *pos, gsize n,
                          GError **error, const char *what_format, va_list args)
{
  if (n > size - *pos) {
    g_autofree char *what = g_strdup_vprintf (what_format, args);
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: %s needs %" G_GSIZE_FORMAT " bytes at offset %" G_GSIZE_FORMAT
                 " but the file has %" G_GSIZE_FORMAT,
                 file, what, n, *pos, size);
    return NULL;
  }
  gconstpointer p = bytes + *pos;
  *pos += n;
  return p;
}

guint16
whisper_read_le16 (const guint8 *p)
{
  return (guint16) (p[0] | p[1] << 8);
}

guint32
whisper_read_le32 (const guint8 *p)
{
  return (guint32) p[0] | (guint32) p[1] << 8 | (guint32) p[2] << 16 | (guint32) p[3] << 24;
}
