/* whisper-model-ct2.c: loads a CTranslate2 Whisper model directory
 * (model.bin, config.json, vocabulary.json or vocabulary.txt).
 *
 * model.bin layout: what CTranslate2's writer produces,
 * https://github.com/OpenNMT/CTranslate2/blob/master/python/ctranslate2/specs/model_spec.py
 * (and src/models/model.cc reads); variable names and shapes: its Whisper spec,
 * https://github.com/OpenNMT/CTranslate2/blob/master/python/ctranslate2/specs/whisper_spec.py. The file is mapped read-only and treated as hostile: every field is
 * bounds-checked before it is read.
 */
#include "whisper-model-ct2.h"
#include "whisper-model-walk.h"

#include <string.h>

#define CT2_ACTIVATION_GELU_TANH 1
#define CT2_ACTIVATION_GELU 3

/* ------------------------------------------------------------------ */
/* Hyper-parameters                                                    */

static int
ct2_count_layers (Ct2Reader *r, const char *part)
{
  int n = 0;
  while (n <= CT2_MAX_LAYERS) {
    g_autofree char *probe =
      g_strdup_printf ("%s/layer_%d/self_attention/linear_0/weight", part, n);
    if (whisper_ct2_find (r, probe) == NULL)
      break;
    n++;
  }
  return n;
}

static gboolean
ct2_dim_as_int (Ct2Reader *r, const Ct2Variable *var, guint axis, int *out,
                GError **error)
{
  if (axis >= var->rank || var->dims[axis] > G_MAXINT) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: variable '%s' has rank %u or a dimension too large to "
                 "give a hyper-parameter", r->file, var->name, var->rank);
    return FALSE;
  }
  *out = (int) var->dims[axis];
  return TRUE;
}

static gboolean
ct2_heads (Ct2Reader *r, const char *name, int *heads, GError **error)
{
  const Ct2Variable *var = whisper_ct2_require (r, name, error);
  gint64 value;
  if (var == NULL || !whisper_ct2_read_int_scalar (r, var, &value, error))
    return FALSE;
  *heads = (int) CLAMP (value, G_MININT, G_MAXINT);
  return TRUE;
}

static gboolean
ct2_derive_hparams (Ct2Reader *r, GError **error)
{
  int d, n_mels, n_audio_ctx, n_text_ctx, n_vocab, audio_heads, text_heads;

  const Ct2Variable *conv1 = whisper_ct2_require (r, "encoder/conv1/weight", error);
  if (conv1 == NULL)
    return FALSE;
  if (conv1->rank != 3 || conv1->dims[2] != 3) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: variable 'encoder/conv1/weight' must have shape "
                 "[d, n_mels, 3]", r->file);
    return FALSE;
  }
  if (!ct2_dim_as_int (r, conv1, 0, &d, error) ||
      !ct2_dim_as_int (r, conv1, 1, &n_mels, error))
    return FALSE;

  const Ct2Variable *audio_pos =
    whisper_ct2_require (r, "encoder/position_encodings/encodings", error);
  const Ct2Variable *text_pos =
    audio_pos ? whisper_ct2_require (r, "decoder/position_encodings/encodings", error) : NULL;
  const Ct2Variable *embeddings =
    text_pos ? whisper_ct2_require (r, "decoder/embeddings/weight", error) : NULL;
  if (embeddings == NULL ||
      !ct2_dim_as_int (r, audio_pos, 0, &n_audio_ctx, error) ||
      !ct2_dim_as_int (r, text_pos, 0, &n_text_ctx, error) ||
      !ct2_dim_as_int (r, embeddings, 0, &n_vocab, error))
    return FALSE;

  if (!ct2_heads (r, "encoder/num_heads", &audio_heads, error))
    return FALSE;
  if (whisper_ct2_find (r, "decoder/num_heads") == NULL)
    text_heads = audio_heads;
  else if (!ct2_heads (r, "decoder/num_heads", &text_heads, error))
    return FALSE;

  WhisperModel *m = r->model;
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_VOCAB, n_vocab);
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_AUDIO_CTX, n_audio_ctx);
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_AUDIO_STATE, d);
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_AUDIO_HEAD, audio_heads);
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_AUDIO_LAYER, ct2_count_layers (r, "encoder"));
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_TEXT_CTX, n_text_ctx);
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_TEXT_STATE, d);
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_TEXT_HEAD, text_heads);
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_TEXT_LAYER, ct2_count_layers (r, "decoder"));
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_MELS, n_mels);

  return whisper_model_check_hparams (m, error);
}

/* ------------------------------------------------------------------ */
/* Decoder flags                                                       */

static gboolean
ct2_check_decoder_flags (Ct2Reader *r, GError **error)
{
  const Ct2Variable *activation_var = whisper_ct2_require (r, "decoder/activation", error);
  gint64 activation;
  if (activation_var == NULL ||
      !whisper_ct2_read_int_scalar (r, activation_var, &activation, error))
    return FALSE;
  if (activation == CT2_ACTIVATION_GELU_TANH) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                 "%s: decoder/activation is 1 (tanh-approximated GELU, written by "
                 "WhisperSpec revision 2 or older); only exact GELU (3) is "
                 "supported: convert the model again with a current CTranslate2",
                 r->file);
    return FALSE;
  }
  if (activation != CT2_ACTIVATION_GELU) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                 "%s: decoder/activation is %" G_GINT64_FORMAT ", not GELU (3)",
                 r->file, activation);
    return FALSE;
  }

  static const struct {
    const char *name;
    gint64 required;
  } flags[] = {
    { "decoder/scale_embeddings", 0 },
    { "decoder/alibi", 0 },
    { "decoder/pre_norm", 1 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (flags); i++) {
    gint64 value;
    gboolean present;
    if (!whisper_ct2_optional_int (r, flags[i].name, &value, &present, error))
      return FALSE;
    if (present && value != flags[i].required) {
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                   "%s: %s is %" G_GINT64_FORMAT "; only %" G_GINT64_FORMAT
                   " is supported", r->file, flags[i].name, value, flags[i].required);
      return FALSE;
    }
  }
  return TRUE;
}

/* The output projection must be the token embedding (tied weights). */
static gboolean
ct2_check_tied_projection (Ct2Reader *r, GError **error)
{
  const Ct2Variable *embeddings = whisper_ct2_require (r, "decoder/embeddings/weight", error);
  const Ct2Variable *projection =
    embeddings ? whisper_ct2_require (r, "decoder/projection/weight", error) : NULL;
  if (projection == NULL)
    return FALSE;

  gboolean tied = projection == embeddings;
  if (!tied && projection->dtype == embeddings->dtype &&
      projection->n_bytes == embeddings->n_bytes &&
      projection->rank == embeddings->rank)
    tied = memcmp (projection->data, embeddings->data, projection->n_bytes) == 0 &&
           memcmp (projection->dims, embeddings->dims,
                   projection->rank * sizeof projection->dims[0]) == 0;
  if (!tied) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                 "%s: decoder/projection/weight is not tied to "
                 "decoder/embeddings/weight; separate output projections are "
                 "not supported", r->file);
    return FALSE;
  }
  if (whisper_ct2_find (r, "decoder/projection/bias") != NULL) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                 "%s: decoder/projection/bias is set; an output bias is not "
                 "supported", r->file);
    return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Weights                                                             */

/* The walk's reader (whisper-model-walk.h) of CTranslate2's variables: a
 * fused projection is one variable there. */

static gboolean
ct2_walk_part (gpointer reader, gboolean decoder, GError **error)
{
  Ct2Reader *r = reader;
  return !decoder || (ct2_check_decoder_flags (r, error) && ct2_check_tied_projection (r, error));
}

static gboolean
ct2_walk_layer_norm (gpointer reader, const char *name, int d, WhisperLayerNormWeights *ln,
                     GError **error)
{
  return whisper_ct2_layer_norm (reader, name, d, ln, error);
}

static gboolean
ct2_walk_linear (gpointer reader, const char *name, int n_out, int n_in,
                 WhisperLinearWeights *linear, GError **error)
{
  return whisper_ct2_linear (reader, name, n_out, n_in, linear, error);
}

static gboolean
ct2_walk_fused (gpointer reader, const char *name, int n_parts, int d,
                WhisperLinearWeights *linear, GError **error)
{
  return whisper_ct2_linear (reader, name, n_parts * d, d, linear, error);
}

static gboolean
ct2_walk_tensor (gpointer reader, WhisperWeightKind kind, const char *name, guint rank,
                 const gint64 *dims, int rows, int cols, WhisperTensor *t, GError **error)
{
  (void) kind;
  guint64 shape[3];
  for (guint i = 0; i < rank; i++)
    shape[i] = (guint64) dims[i];
  return whisper_ct2_tensor (reader, name, rank, shape, rows, cols, t, error);
}

static const WhisperWeightReader ct2_weights = {
  .format = WHISPER_MODEL_FORMAT_CT2,
  .layer_infix = "/layer_",
  .part = ct2_walk_part,
  .layer_norm = ct2_walk_layer_norm,
  .linear = ct2_walk_linear,
  .fused = ct2_walk_fused,
  .tensor = ct2_walk_tensor,
};

WhisperModel *
whisper_model_load_ct2 (const char *dir, GError **error)
{
  g_return_val_if_fail (dir != NULL, NULL);

  g_autoptr (Ct2Reader) r = whisper_ct2_reader_open (dir, error);
  if (r == NULL)
    return NULL;

  g_autoptr (WhisperModel) model = whisper_model_new_empty (dir, WHISPER_MODEL_FORMAT_CT2);
  r->model = model;

  if (!whisper_ct2_read_header (r, error) || !whisper_ct2_read_variables (r, error) ||
      !whisper_ct2_read_aliases (r, error) || !ct2_derive_hparams (r, error) ||
      !whisper_model_walk_weights (model, &ct2_weights, r, error) ||
      !whisper_model_ct2_read_config (model, dir, error) ||
      !whisper_model_ct2_read_vocabulary (model, dir, error) ||
      !whisper_model_validate (model, error))
    return NULL;

  /* the tensors point into the file */
  whisper_model_keep_mapping (model, r->mapped);
  return g_steal_pointer (&model);
}
