/* whisper-weights.c: uploads the model's weights to the backend once, each
 * in the type the model file stores (the backend converts or packs it). */
#include "whisper-weights.h"

#include <string.h>

#include "whisper-error.h"

typedef struct {
  WhisperBackend *be;
  const WhisperModel *model;
  GError **error;
  gboolean ok;
} Uploader;

/* Rows [0, rows) of a stored tensor as a float32 vector in backend memory.
 * The tensor's file pages are handed back once copied. */
static float *
upload_vector (Uploader *up, const WhisperTensor *t, int rows)
{
  if (!up->ok || !t->data)
    return NULL;
  const size_t n = (size_t) rows * t->cols;
  float *dev = up->be->ops->alloc (up->be, n, up->error);
  if (!dev) {
    up->ok = FALSE;
    return NULL;
  }
  g_autofree float *host = g_new (float, MAX (n, 1));
  whisper_tensor_rows_to_f32 (t, 0, rows, host);
  up->be->ops->upload (up->be, dev, host, n * sizeof (float));
  whisper_model_release_tensor (up->model, t);
  return dev;
}

/* A weight matrix, handed to the backend in its stored type. */
static void
upload_matrix (Uploader *up, WhisperWeight *w, const WhisperTensor *t)
{
  if (!up->ok)
    return;
  if (!up->be->ops->weight_upload (up->be, w, t, up->error))
    up->ok = FALSE;
  whisper_model_release_tensor (up->model, t);
}

static void
upload_linear (Uploader *up, WhisperDeviceLinear *dst, const WhisperLinearWeights *src)
{
  upload_matrix (up, &dst->w, &src->weight);
  dst->bias = upload_vector (up, &src->bias, 1);
}

static void
upload_layer_norm (Uploader *up, WhisperDeviceLayerNorm *dst, const WhisperLayerNormWeights *src)
{
  dst->gamma = upload_vector (up, &src->gamma, 1);
  dst->beta = upload_vector (up, &src->beta, 1);
}

static void
upload_layer (Uploader *up, WhisperDeviceLayer *dst, const WhisperLayerWeights *src,
              gboolean decoder)
{
  upload_layer_norm (up, &dst->attn_ln, &src->attn_ln);
  upload_linear (up, &dst->attn_qkv, &src->attn_qkv);
  upload_linear (up, &dst->attn_out, &src->attn_out);
  if (decoder) {
    upload_layer_norm (up, &dst->cross_ln, &src->cross_ln);
    upload_linear (up, &dst->cross_q, &src->cross_q);
    upload_linear (up, &dst->cross_kv, &src->cross_kv);
    upload_linear (up, &dst->cross_out, &src->cross_out);
  }
  upload_layer_norm (up, &dst->mlp_ln, &src->mlp_ln);
  upload_linear (up, &dst->mlp_fc1, &src->mlp_fc1);
  upload_linear (up, &dst->mlp_fc2, &src->mlp_fc2);
}

WhisperDeviceWeights *
whisper_device_weights_new (WhisperBackend *be, const WhisperModel *model, int n_encoder_layers,
                            int n_decoder_layers, int d, int n_mels, int max_encoder_length,
                            int n_text_ctx, int n_vocab, GError **error)
{
  WhisperDeviceWeights *w = g_new0 (WhisperDeviceWeights, 1);
  Uploader up = { be, model, error, TRUE };

  /* The model's shapes were validated against its own hyper-parameters; the
   * engine's cached constants must be those same numbers. */
  if (model->encoder.conv1_weight.rows != d || model->encoder.conv1_weight.cols != n_mels * 3 ||
      model->decoder.token_embedding.rows != n_vocab ||
      model->decoder.token_embedding.cols != d ||
      model->encoder.positional.rows < max_encoder_length ||
      model->decoder.positional.rows != n_text_ctx) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                 "%s: the weights' shapes differ from the engine's constants (d %d, n_mels %d, "
                 "n_vocab %d, encoder length %d, text context %d)",
                 model->path, d, n_mels, n_vocab, max_encoder_length, n_text_ctx);
    g_free (w);
    return NULL;
  }
  w->backend = be;
  w->n_encoder_layers = n_encoder_layers;
  w->n_decoder_layers = n_decoder_layers;
  w->encoder_layers = g_new0 (WhisperDeviceLayer, n_encoder_layers);
  w->decoder_layers = g_new0 (WhisperDeviceLayer, n_decoder_layers);

  const WhisperEncoderWeights *enc = &model->encoder;
  w->conv1.keep_float = w->conv2.keep_float = TRUE;
  upload_matrix (&up, &w->conv1, &enc->conv1_weight);
  upload_matrix (&up, &w->conv2, &enc->conv2_weight);
  w->conv1_bias = upload_vector (&up, &enc->conv1_bias, 1);
  w->conv2_bias = upload_vector (&up, &enc->conv2_bias, 1);
  /* Only the rows a (possibly shorter) encoder context uses. */
  w->encoder_positional = upload_vector (&up, &enc->positional, max_encoder_length);
  for (int l = 0; l < n_encoder_layers; l++)
    upload_layer (&up, &w->encoder_layers[l], &enc->layers[l], FALSE);
  upload_layer_norm (&up, &w->ln_post, &enc->ln_post);

  const WhisperDecoderWeights *dec = &model->decoder;
  upload_matrix (&up, &w->token_embedding, &dec->token_embedding);
  w->decoder_positional = upload_vector (&up, &dec->positional, n_text_ctx);
  for (int l = 0; l < n_decoder_layers; l++)
    upload_layer (&up, &w->decoder_layers[l], &dec->layers[l], TRUE);
  upload_layer_norm (&up, &w->ln, &dec->ln);

  if (!up.ok) {
    whisper_device_weights_free (w);
    return NULL;
  }
  return w;
}

static void
free_vector (WhisperBackend *be, float **p)
{
  if (*p)
    be->ops->free (be, *p);
  *p = NULL;
}

static void
free_linear (WhisperBackend *be, WhisperDeviceLinear *l)
{
  if (l->w.data)
    be->ops->weight_free (be, &l->w);
  free_vector (be, &l->bias);
}

static void
free_layer_norm (WhisperBackend *be, WhisperDeviceLayerNorm *ln)
{
  free_vector (be, &ln->gamma);
  free_vector (be, &ln->beta);
}

static void
free_layer (WhisperBackend *be, WhisperDeviceLayer *l)
{
  free_layer_norm (be, &l->attn_ln);
  free_linear (be, &l->attn_qkv);
  free_linear (be, &l->attn_out);
  free_layer_norm (be, &l->cross_ln);
  free_linear (be, &l->cross_q);
  free_linear (be, &l->cross_kv);
  free_linear (be, &l->cross_out);
  free_layer_norm (be, &l->mlp_ln);
  free_linear (be, &l->mlp_fc1);
  free_linear (be, &l->mlp_fc2);
}

void
whisper_device_weights_free (WhisperDeviceWeights *w)
{
  if (!w)
    return;
  WhisperBackend *be = w->backend;
  if (w->conv1.data)
    be->ops->weight_free (be, &w->conv1);
  if (w->conv2.data)
    be->ops->weight_free (be, &w->conv2);
  free_vector (be, &w->conv1_bias);
  free_vector (be, &w->conv2_bias);
  free_vector (be, &w->encoder_positional);
  for (int l = 0; l < w->n_encoder_layers; l++)
    free_layer (be, &w->encoder_layers[l]);
  free_layer_norm (be, &w->ln_post);
  if (w->token_embedding.data)
    be->ops->weight_free (be, &w->token_embedding);
  free_vector (be, &w->decoder_positional);
  for (int l = 0; l < w->n_decoder_layers; l++)
    free_layer (be, &w->decoder_layers[l]);
  free_layer_norm (be, &w->ln);
  g_free (w->encoder_layers);
  g_free (w->decoder_layers);
  g_free (w);
}
