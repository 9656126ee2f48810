/* whisper-model.c: the parts of the model that do not depend on the file
 * format: allocation, hyper-parameters, validation, bounds-checked reads.
 * Format detection and dispatch are in model-load.c. */
#include "whisper-model.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

gpointer
whisper_model_alloc_bytes (WhisperModel *model, gsize n, GError **error)
{
  g_return_val_if_fail (model != NULL, NULL);
  gpointer data = n > 0 && n <= (gsize) G_MAXUINT32 * sizeof (float) ? g_try_malloc (n) : NULL;
  if (data == NULL) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: cannot allocate %" G_GSIZE_FORMAT " bytes for a tensor", model->path, n);
    return NULL;
  }
  g_ptr_array_add (model->allocations, data);
  return data;
}

void
whisper_model_keep_mapping (WhisperModel *model, GMappedFile *mapped)
{
  g_return_if_fail (model != NULL && model->mapped == NULL);
  model->mapped = g_mapped_file_ref (mapped);
}

void
whisper_model_release_tensor (const WhisperModel *model, const WhisperTensor *t)
{
  if (model->mapped == NULL || t->data == NULL)
    return;
  const guint8 *base = (const guint8 *) g_mapped_file_get_contents (model->mapped);
  const gsize size = g_mapped_file_get_length (model->mapped);
  const guint8 *first = t->data;
  if (first < base || first >= base + size)
    return; /* a loader's own buffer */
  const gsize bytes = whisper_tensor_bytes (t);
  /* only whole pages inside the tensor: its neighbours may not be copied yet */
  const gsize page = (gsize) sysconf (_SC_PAGESIZE);
  const guintptr start = ((guintptr) first + page - 1) / page * page;
  const guintptr end = ((guintptr) first + bytes) / page * page;
  if (end > start)
    (void) madvise ((void *) start, end - start, MADV_DONTNEED);
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
  g_free (model->alignment_heads);
  g_clear_pointer (&model->allocations, g_ptr_array_unref);
  g_clear_pointer (&model->mapped, g_mapped_file_unref);
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

static gboolean G_GNUC_PRINTF (2, 3)
fail (ValidateContext *ctx, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *what = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (ctx->error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT, "%s: %s",
               ctx->model->path, what);
  return FALSE;
}

/* t is set, [rows, cols], and has the scales its type needs. `name` is
 * e.g. "encoder layer 2 mlp fc1 weight". */
static gboolean
check_tensor (ValidateContext *ctx, const WhisperTensor *t, int rows, int cols,
              const char *name)
{
  if (t->data == NULL)
    return fail (ctx, "%s is missing", name);
  if (t->rows != rows || t->cols != cols)
    return fail (ctx, "%s is [%d, %d], expected [%d, %d]", name, t->rows, t->cols, rows,
                 cols);
  if ((t->type == WHISPER_DTYPE_I8 || t->type == WHISPER_DTYPE_I16) && t->scales == NULL)
    return fail (ctx, "%s is %s without scales", name, whisper_dtype_name (t->type));
  return TRUE;
}

static char *
part_name (const char *part, int layer, const char *what)
{
  return layer >= 0 ? g_strdup_printf ("%s layer %d %s", part, layer, what)
                    : g_strdup_printf ("%s %s", part, what);
}

static gboolean
check_vector (ValidateContext *ctx, const WhisperTensor *t, int n, const char *part, int layer,
              const char *what)
{
  g_autofree char *name = part_name (part, layer, what);
  return check_tensor (ctx, t, 1, n, name);
}

static gboolean
check_matrix (ValidateContext *ctx, const WhisperTensor *t, int rows, int cols, const char *part,
              int layer, const char *what)
{
  g_autofree char *name = part_name (part, layer, what);
  return check_tensor (ctx, t, rows, cols, name);
}

static gboolean
check_layer_norm (ValidateContext *ctx, const WhisperLayerNormWeights *ln, int d,
                  const char *what, const char *part, int layer)
{
  g_autofree char *gamma = g_strconcat (what, " gamma", NULL);
  g_autofree char *beta = g_strconcat (what, " beta", NULL);
  return check_vector (ctx, &ln->gamma, d, part, layer, gamma) &&
         check_vector (ctx, &ln->beta, d, part, layer, beta);
}

static gboolean
check_linear (ValidateContext *ctx, const WhisperLinearWeights *linear,
              int n_out, int n_in, const char *what, const char *part, int layer)
{
  g_autofree char *weight = g_strconcat (what, " weight", NULL);
  g_autofree char *bias = g_strconcat (what, " bias", NULL);
  if (linear->n_out != n_out || linear->n_in != n_in) {
    g_set_error (ctx->error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: %s layer %d: %s is [%d, %d], expected [%d, %d]",
                 ctx->model->path, part, layer, what, linear->n_out,
                 linear->n_in, n_out, n_in);
    return FALSE;
  }
  return check_matrix (ctx, &linear->weight, n_out, n_in, part, layer, weight) &&
         check_vector (ctx, &linear->bias, n_out, part, layer, bias);
}

static gboolean
check_layer (ValidateContext *ctx, const WhisperLayerWeights *l, int d,
             gboolean is_decoder, const char *part, int i)
{
  if (!check_layer_norm (ctx, &l->attn_ln, d, "self-attention layer norm", part, i) ||
      !check_linear (ctx, &l->attn_qkv, 3 * d, d, "self-attention qkv", part, i) ||
      !check_linear (ctx, &l->attn_out, d, d, "self-attention output", part, i) ||
      !check_layer_norm (ctx, &l->mlp_ln, d, "mlp layer norm", part, i) ||
      !check_linear (ctx, &l->mlp_fc1, 4 * d, d, "mlp fc1", part, i) ||
      !check_linear (ctx, &l->mlp_fc2, d, 4 * d, "mlp fc2", part, i))
    return FALSE;

  if (!is_decoder)
    return TRUE;

  return check_layer_norm (ctx, &l->cross_ln, d, "cross-attention layer norm", part, i) &&
         check_linear (ctx, &l->cross_q, d, d, "cross-attention query", part, i) &&
         check_linear (ctx, &l->cross_kv, 2 * d, d, "cross-attention kv", part, i) &&
         check_linear (ctx, &l->cross_out, d, d, "cross-attention output", part, i);
}

static gboolean
check_encoder (ValidateContext *ctx, const WhisperEncoderWeights *enc, const int *hp)
{
  const int d = hp[WHISPER_HPARAM_N_AUDIO_STATE], n_mels = hp[WHISPER_HPARAM_N_MELS];
  if (!check_matrix (ctx, &enc->conv1_weight, d, n_mels * 3, "encoder", -1, "conv1 weight") ||
      !check_vector (ctx, &enc->conv1_bias, d, "encoder", -1, "conv1 bias") ||
      !check_matrix (ctx, &enc->conv2_weight, d, d * 3, "encoder", -1, "conv2 weight") ||
      !check_vector (ctx, &enc->conv2_bias, d, "encoder", -1, "conv2 bias") ||
      !check_matrix (ctx, &enc->positional, hp[WHISPER_HPARAM_N_AUDIO_CTX], d, "encoder", -1,
                     "positional embedding") ||
      !check_layer_norm (ctx, &enc->ln_post, d, "final layer norm", "encoder", -1))
    return FALSE;
  if (enc->layers == NULL)
    return fail (ctx, "encoder has no layers");

  for (int i = 0; i < hp[WHISPER_HPARAM_N_AUDIO_LAYER]; i++)
    if (!check_layer (ctx, &enc->layers[i], d, FALSE, "encoder", i))
      return FALSE;
  return TRUE;
}

static gboolean
check_decoder (ValidateContext *ctx, const WhisperDecoderWeights *dec, const int *hp)
{
  const int d = hp[WHISPER_HPARAM_N_TEXT_STATE];
  if (!check_matrix (ctx, &dec->token_embedding, hp[WHISPER_HPARAM_N_VOCAB], d, "decoder", -1,
                     "token embedding") ||
      !check_matrix (ctx, &dec->positional, hp[WHISPER_HPARAM_N_TEXT_CTX], d, "decoder", -1,
                     "positional embedding") ||
      !check_layer_norm (ctx, &dec->ln, d, "final layer norm", "decoder", -1))
    return FALSE;
  if (dec->layers == NULL)
    return fail (ctx, "decoder has no layers");

  for (int i = 0; i < hp[WHISPER_HPARAM_N_TEXT_LAYER]; i++)
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
  if (!check_encoder (&ctx, &model->encoder, hp) || !check_decoder (&ctx, &model->decoder, hp))
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
