/* whisper-encoder.c: the audio encoder, written against the backend table
 * (AudioEncoder in https://github.com/openai/whisper/blob/main/whisper/model.py): conv1+GELU, conv2(stride 2)+GELU, positional add,
 * pre-LN transformer layers, final LayerNorm. */
#include "whisper-engine-internal.h"

#define LN_EPS 1e-5f

gboolean
whisper_encoder_buffers_init (WhisperEngine *e, GError **error)
{
  WhisperBackend *be = e->backend;
  const size_t T = e->max_encoder_length, d = e->d;
  const size_t cols = MAX ((size_t) e->n_mels, d) * 3;
  struct { float **p; size_t n; } plan[] = {
    { &e->enc.mel, 2 * T * e->n_mels },
    { &e->enc.conv1, 2 * T * d },
    { &e->enc.scratch, 2 * T * cols },
    { &e->enc.x, T * d },
    { &e->enc.h, T * d },
    { &e->enc.qkv, T * 3 * d },
    { &e->enc.attn, T * d },
    { &e->enc.ffn, T * 4 * d },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (plan); i++) {
    *plan[i].p = be->ops->alloc (be, plan[i].n, error);
    if (!*plan[i].p)
      return FALSE;
  }
  return TRUE;
}

void
whisper_encoder_buffers_clear (WhisperEngine *e)
{
  float **all[] = { &e->enc.mel, &e->enc.conv1, &e->enc.scratch, &e->enc.x,
                    &e->enc.h, &e->enc.qkv, &e->enc.attn, &e->enc.ffn };
  for (gsize i = 0; i < G_N_ELEMENTS (all); i++) {
    if (*all[i])
      e->backend->ops->free (e->backend, *all[i]);
    *all[i] = NULL;
  }
}

void
whisper_encoder_run (WhisperEngine *e, int T)
{
  WhisperBackend *be = e->backend;
  const WhisperBackendOps *op = be->ops;
  const WhisperDeviceWeights *w = e->weights;
  WhisperEncoderBuffers *b = &e->enc;
  const int d = e->d;
  const int n_head = e->n_audio_head, d_head = d / n_head;

  op->conv1d_gelu (be, b->conv1, b->mel, 2 * T, e->n_mels, &w->conv1, w->conv1_bias, 1,
                   b->scratch);
  op->conv1d_gelu (be, b->x, b->conv1, 2 * T, d, &w->conv2, w->conv2_bias, 2, b->scratch);
  op->add (be, b->x, w->encoder_positional, (size_t) T * d);

  for (int l = 0; l < e->n_audio_layer; l++) {
    const WhisperDeviceLayer *L = &w->encoder_layers[l];
    op->layer_norm (be, b->h, b->x, L->attn_ln.gamma, L->attn_ln.beta, T, d, LN_EPS);
    op->linear (be, b->qkv, 3 * d, b->h, d, &L->attn_qkv.w, L->attn_qkv.bias, T,
                WHISPER_LINEAR_DEFAULT);
    op->attention (be, b->attn, d, b->qkv, 3 * d, b->qkv + d, b->qkv + 2 * d, 3 * d, T, T,
                   n_head, d_head, -1);
    op->linear (be, b->x, d, b->attn, d, &L->attn_out.w, L->attn_out.bias, T,
                WHISPER_LINEAR_ACCUMULATE);
    op->layer_norm (be, b->h, b->x, L->mlp_ln.gamma, L->mlp_ln.beta, T, d, LN_EPS);
    op->linear (be, b->ffn, 4 * d, b->h, d, &L->mlp_fc1.w, L->mlp_fc1.bias, T,
                WHISPER_LINEAR_GELU);
    op->linear (be, b->x, d, b->ffn, 4 * d, &L->mlp_fc2.w, L->mlp_fc2.bias, T,
                WHISPER_LINEAR_ACCUMULATE);
  }
  op->layer_norm (be, b->h, b->x, w->ln_post.gamma, w->ln_post.beta, T, d, LN_EPS);
}
