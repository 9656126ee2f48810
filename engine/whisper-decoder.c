/* whisper-decoder.c: the text decoder, written against the backend table
 * (TextDecoder in https://github.com/openai/whisper/blob/main/whisper/model.py): token + positional embedding, pre-LN layers with causal
 * self-attention over the KV cache and cross-attention over the cached
 * encoder K/V, final LayerNorm, logits through the tied embedding. */
#include "whisper-alignment.h"
#include "whisper-engine-internal.h"

#define LN_EPS 1e-5f

static void
free_self_caches (WhisperDecoderState *st, WhisperEngine *e)
{
  WhisperBackend *be = e->backend;
  for (int l = 0; st->self_kv && l < st->n_layers; l++)
    if (st->self_kv[l]) {
      be->ops->free (be, st->self_kv[l]);
      st->self_kv[l] = NULL;
    }
  if (st->logits) {
    be->ops->free (be, st->logits);
    st->logits = NULL;
  }
}

/* The caches and buffers that depend on the slot count. */
static gboolean
alloc_self_caches (WhisperDecoderState *st, WhisperEngine *e, int n_slots, GError **error)
{
  WhisperBackend *be = e->backend;
  const size_t d = e->d;
  st->n_slots = n_slots;
  for (int l = 0; l < st->n_layers; l++) {
    st->self_kv[l] = be->ops->alloc (be, (size_t) n_slots * st->self_len * 2 * d, error);
    if (!st->self_kv[l])
      return FALSE;
  }
  st->logits = be->ops->alloc (be, (size_t) MAX (2, n_slots) * e->n_vocab, error);
  return st->logits != NULL;
}

gboolean
whisper_decoder_state_init (WhisperDecoderState *st, WhisperEngine *e, GError **error)
{
  WhisperBackend *be = e->backend;
  const size_t d = e->d, ctx = e->n_text_ctx;

  st->n_layers = e->n_text_layer;
  st->self_len = e->n_text_ctx;
  st->cross_len = e->max_encoder_length;
  st->self_kv = g_new0 (float *, st->n_layers);
  st->cross_kv = g_new0 (float *, st->n_layers);
  for (int l = 0; l < st->n_layers; l++) {
    st->cross_kv[l] = be->ops->alloc (be, (size_t) st->cross_len * 2 * d, error);
    if (!st->cross_kv[l])
      return FALSE;
  }
  if (!alloc_self_caches (st, e, 1, error))
    return FALSE;
  struct { float **p; size_t n; } plan[] = {
    { &st->x, ctx * d }, { &st->h, ctx * d }, { &st->qkv, ctx * 3 * d },
    { &st->attn, ctx * d }, { &st->q, ctx * d }, { &st->ffn, ctx * 4 * d },
    { &st->sel, 2 * d },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (plan); i++) {
    *plan[i].p = be->ops->alloc (be, plan[i].n, error);
    if (!*plan[i].p)
      return FALSE;
  }
  return TRUE;
}

gboolean
whisper_decoder_state_ensure_slots (WhisperDecoderState *st, WhisperEngine *e, int n_slots,
                                    GError **error)
{
  if (n_slots <= st->n_slots)
    return TRUE;
  if (n_slots > st->self_len) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "%d sequences decoded together is more than the %d this model allows", n_slots,
                 st->self_len);
    return FALSE;
  }
  free_self_caches (st, e);
  return alloc_self_caches (st, e, n_slots, error);
}

void
whisper_decoder_state_clear (WhisperDecoderState *st, WhisperEngine *e)
{
  WhisperBackend *be = e->backend;
  free_self_caches (st, e);
  for (int l = 0; l < st->n_layers; l++)
    if (st->cross_kv && st->cross_kv[l])
      be->ops->free (be, st->cross_kv[l]);
  g_clear_pointer (&st->self_kv, g_free);
  g_clear_pointer (&st->cross_kv, g_free);
  float **all[] = { &st->x, &st->h, &st->qkv, &st->attn, &st->q, &st->ffn, &st->sel };
  for (gsize i = 0; i < G_N_ELEMENTS (all); i++) {
    if (*all[i])
      be->ops->free (be, *all[i]);
    *all[i] = NULL;
  }
}

void
whisper_decoder_set_audio (WhisperDecoderState *st, WhisperEngine *e)
{
  WhisperBackend *be = e->backend;
  const int d = e->d;
  for (int l = 0; l < st->n_layers; l++) {
    const WhisperDeviceLayer *L = &e->weights->decoder_layers[l];
    be->ops->linear (be, st->cross_kv[l], 2 * d, e->enc.h, d, &L->cross_kv.w, L->cross_kv.bias,
                     st->cross_len, WHISPER_LINEAR_DEFAULT);
  }
}

/* The second half of decoder layer l over n rows of st->x: cross-attention
 * over the shared cross K/V, then the MLP (both residual). With `capture`,
 * the alignment capture (st->capture, when set) sees the queries. */
static void
cross_attention_and_mlp (WhisperDecoderState *st, WhisperEngine *e, int l, int n,
                         gboolean capture)
{
  WhisperBackend *be = e->backend;
  const WhisperBackendOps *op = be->ops;
  const WhisperDeviceLayer *L = &e->weights->decoder_layers[l];
  const int d = e->d, n_head = e->n_text_head, d_head = d / n_head;

  op->layer_norm (be, st->h, st->x, L->cross_ln.gamma, L->cross_ln.beta, n, d, LN_EPS);
  op->linear (be, st->q, d, st->h, d, &L->cross_q.w, L->cross_q.bias, n,
              WHISPER_LINEAR_DEFAULT);
  op->attention (be, st->attn, d, st->q, d, st->cross_kv[l], st->cross_kv[l] + d, 2 * d, n,
                 st->cross_len, n_head, d_head, -1);
  st->last_cross_key_length = st->cross_len;
  /* word timestamps: the alignment heads' attention (whisper-alignment.h) */
  if (capture && st->capture)
    st->capture->layer (st->capture, e, st, l, st->q, n);
  op->linear (be, st->x, d, st->attn, d, &L->cross_out.w, L->cross_out.bias, n,
              WHISPER_LINEAR_ACCUMULATE);

  op->layer_norm (be, st->h, st->x, L->mlp_ln.gamma, L->mlp_ln.beta, n, d, LN_EPS);
  op->linear (be, st->ffn, 4 * d, st->h, d, &L->mlp_fc1.w, L->mlp_fc1.bias, n,
              WHISPER_LINEAR_GELU);
  op->linear (be, st->x, d, st->ffn, 4 * d, &L->mlp_fc2.w, L->mlp_fc2.bias, n,
              WHISPER_LINEAR_ACCUMULATE);
}

void
whisper_decoder_forward (WhisperDecoderState *st, WhisperEngine *e, const gint32 *tokens, int n,
                         int pos0, const int *rows, int n_rows)
{
  WhisperBackend *be = e->backend;
  const WhisperBackendOps *op = be->ops;
  const WhisperDeviceWeights *w = e->weights;
  const int d = e->d, n_head = e->n_text_head, d_head = d / n_head;

  g_return_if_fail (pos0 + n <= st->self_len && n_rows <= 2);

  op->embed (be, st->x, &w->token_embedding, w->decoder_positional, tokens, n, pos0, d);
  for (int l = 0; l < st->n_layers; l++) {
    const WhisperDeviceLayer *L = &w->decoder_layers[l];
    float *kv = st->self_kv[l];

    op->layer_norm (be, st->h, st->x, L->attn_ln.gamma, L->attn_ln.beta, n, d, LN_EPS);
    op->linear (be, st->qkv, 3 * d, st->h, d, &L->attn_qkv.w, L->attn_qkv.bias, n,
                WHISPER_LINEAR_DEFAULT);
    op->copy_rows (be, kv + (size_t) pos0 * 2 * d, 2 * d, st->qkv + d, 3 * d, n, 2 * d);
    op->attention (be, st->attn, d, st->qkv, 3 * d, kv, kv + d, 2 * d, n, pos0 + n, n_head,
                   d_head, pos0);
    op->linear (be, st->x, d, st->attn, d, &L->attn_out.w, L->attn_out.bias, n,
                WHISPER_LINEAR_ACCUMULATE);


    cross_attention_and_mlp (st, e, l, n, TRUE);
  }

  for (int r = 0; r < n_rows; r++)
    op->copy_rows (be, st->sel + (size_t) r * d, d, st->x + (size_t) rows[r] * d, d, 1, d);
  op->layer_norm (be, st->h, st->sel, w->ln.gamma, w->ln.beta, n_rows, d, LN_EPS);
  op->linear (be, st->logits, e->n_vocab, st->h, d, &w->token_embedding, NULL, n_rows,
              WHISPER_LINEAR_DEFAULT);
}

/* The self-attention cache of slot `slot` in layer l: [self_len, 2d]. */
static inline float *
slot_cache (const WhisperDecoderState *st, int l, int slot, int d)
{
  return st->self_kv[l] + (size_t) slot * st->self_len * 2 * d;
}

void
whisper_decoder_forward_rows (WhisperDecoderState *st, WhisperEngine *e, const gint32 *tokens,
                              const int *slots, int n_rows, int pos)
{
  WhisperBackend *be = e->backend;
  const WhisperBackendOps *op = be->ops;
  const WhisperDeviceWeights *w = e->weights;
  const int d = e->d, n_head = e->n_text_head, d_head = d / n_head;

  g_return_if_fail (pos < st->self_len && n_rows >= 1 && n_rows <= st->n_slots);

  /* every row at the same position: one embedding call per row */
  for (int r = 0; r < n_rows; r++)
    op->embed (be, st->x + (size_t) r * d, &w->token_embedding, w->decoder_positional,
               tokens + r, 1, pos, d);
  for (int l = 0; l < st->n_layers; l++) {
    const WhisperDeviceLayer *L = &w->decoder_layers[l];

    op->layer_norm (be, st->h, st->x, L->attn_ln.gamma, L->attn_ln.beta, n_rows, d, LN_EPS);
    op->linear (be, st->qkv, 3 * d, st->h, d, &L->attn_qkv.w, L->attn_qkv.bias, n_rows,
                WHISPER_LINEAR_DEFAULT);
    for (int r = 0; r < n_rows; r++) {
      float *kv = slot_cache (st, l, slots[r], d);
      const float *qkv = st->qkv + (size_t) r * 3 * d;
      op->copy_rows (be, kv + (size_t) pos * 2 * d, 2 * d, qkv + d, 3 * d, 1, 2 * d);
      op->attention (be, st->attn + (size_t) r * d, d, qkv, 3 * d, kv, kv + d, 2 * d, 1, pos + 1,
                     n_head, d_head, pos);
    }
    op->linear (be, st->x, d, st->attn, d, &L->attn_out.w, L->attn_out.bias, n_rows,
                WHISPER_LINEAR_ACCUMULATE);


    cross_attention_and_mlp (st, e, l, n_rows, FALSE);
  }
  op->layer_norm (be, st->h, st->x, w->ln.gamma, w->ln.beta, n_rows, d, LN_EPS);
  op->linear (be, st->logits, e->n_vocab, st->h, d, &w->token_embedding, NULL, n_rows,
              WHISPER_LINEAR_DEFAULT);
}

void
whisper_decoder_copy_slot (WhisperDecoderState *st, WhisperEngine *e, int dst, int src,
                           int n_positions)
{
  WhisperBackend *be = e->backend;
  const int d = e->d;
  if (dst == src || n_positions <= 0)
    return;
  for (int l = 0; l < st->n_layers; l++)
    be->ops->copy_rows (be, slot_cache (st, l, dst, d), 2 * d, slot_cache (st, l, src, d), 2 * d,
                        n_positions, 2 * d);
}
