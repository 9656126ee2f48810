/* whisper-decoder.c: the text decoder, written against the backend table
 * (TextDecoder in https://github.com/openai/whisper/blob/main/whisper/model.py): token + positional embedding, pre-LN layers with causal
 * self-attention over the KV cache and cross-attention over the cached
 * encoder K/V, final LayerNorm, logits through the tied embedding. */
#include "whisper-net.h"

#include <string.h>

#define LN_EPS 1e-5f

static void
free_self_caches (WhisperDecoderState *st, WhisperNet *net)
{
  WhisperBackend *be = net->backend;
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

/* A cache of the state: backend memory that takes room only where it is
 * written (a live decode writes a few dozen of the n_text_ctx rows, a
 * buffered encoder window part of the cross-attention rows), where the
 * backend offers it (backend.h, alloc_sparse). */
static float *
alloc_cache (WhisperBackend *be, size_t n_floats, GError **error)
{
  return be->ops->alloc_sparse ? be->ops->alloc_sparse (be, n_floats, error)
                               : be->ops->alloc (be, n_floats, error);
}

/* The caches and buffers that depend on the slot count. */
static gboolean
alloc_self_caches (WhisperDecoderState *st, WhisperNet *net, int n_slots, GError **error)
{
  WhisperBackend *be = net->backend;
  const size_t d = net->d;
  st->n_slots = n_slots;
  for (int l = 0; l < st->n_layers; l++) {
    st->self_kv[l] = alloc_cache (be, (size_t) n_slots * st->self_len * 2 * d, error);
    if (!st->self_kv[l])
      return FALSE;
  }
  st->logits = be->ops->alloc (be, (size_t) MAX (2, n_slots) * net->n_vocab, error);
  return st->logits != NULL;
}

gboolean
whisper_decoder_state_init (WhisperDecoderState *st, WhisperNet *net, GError **error)
{
  WhisperBackend *be = net->backend;
  const size_t d = net->d;

  st->n_layers = net->n_text_layer;
  st->self_len = net->n_text_ctx;
  st->encoder_length = net->max_encoder_length;
  st->self_kv = g_new0 (float *, st->n_layers);
  st->cross_kv = g_new0 (float *, st->n_layers);
  for (int l = 0; l < st->n_layers; l++) {
    st->cross_kv[l] = alloc_cache (be, (size_t) net->max_encoder_length * 2 * d, error);
    if (!st->cross_kv[l])
      return FALSE;
  }
  if (be->ops->half_kv_write && be->ops->attention_half_kv) {
    const size_t n_half = (size_t) net->max_encoder_length * 2 * d;
    st->cross_half = g_new0 (uint16_t *, st->n_layers);
    for (int l = 0; l < st->n_layers; l++) {
      /* backend memory counts floats: two halves each */
      st->cross_half[l] = (uint16_t *) alloc_cache (be, (n_half + 1) / 2, error);
      if (!st->cross_half[l])
        return FALSE;
    }
  }
  /* (the work buffers of its passes are the engine's: net->dec_work) */
  return alloc_self_caches (st, net, 1, error);
}

/* The decoder's work buffers: [n_text_ctx, d | 3d | 4d], sel [2, d]. */
static void
decoder_work_plan (WhisperNet *net, WhisperNetBuffer plan[7])
{
  WhisperDecoderWork *w = &net->dec_work;
  const size_t d = net->d, ctx = net->n_text_ctx;
  const WhisperNetBuffer all[] = {
    { &w->x, ctx * d }, { &w->h, ctx * d }, { &w->qkv, ctx * 3 * d },
    { &w->attn, ctx * d }, { &w->q, ctx * d }, { &w->ffn, ctx * 4 * d },
    { &w->sel, 2 * d },
  };
  memcpy (plan, all, sizeof all);
}

gboolean
whisper_decoder_work_init (WhisperNet *net, GError **error)
{
  WhisperNetBuffer plan[7];
  decoder_work_plan (net, plan);
  return whisper_net_alloc_buffers (net, plan, G_N_ELEMENTS (plan), error);
}

void
whisper_decoder_work_clear (WhisperNet *net)
{
  WhisperNetBuffer plan[7];
  decoder_work_plan (net, plan);
  whisper_net_free_buffers (net, plan, G_N_ELEMENTS (plan));
}

gboolean
whisper_decoder_state_ensure_slots (WhisperDecoderState *st, WhisperNet *net, int n_slots,
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
  free_self_caches (st, net);
  return alloc_self_caches (st, net, n_slots, error);
}

void
whisper_decoder_state_clear (WhisperDecoderState *st, WhisperNet *net)
{
  WhisperBackend *be = net->backend;
  free_self_caches (st, net);
  for (int l = 0; l < st->n_layers; l++) {
    if (st->cross_kv && st->cross_kv[l])
      be->ops->free (be, st->cross_kv[l]);
    if (st->cross_half && st->cross_half[l])
      be->ops->free (be, (float *) st->cross_half[l]);
  }
  g_clear_pointer (&st->self_kv, g_free);
  g_clear_pointer (&st->cross_kv, g_free);
  g_clear_pointer (&st->cross_half, g_free);
}

void
whisper_decoder_state_discard (WhisperDecoderState *st, WhisperNet *net)
{
  WhisperBackend *be = net->backend;
  const size_t d = net->d;

  if (!be->ops->discard || !be->ops->alloc_sparse)
    return;
  for (int l = 0; l < st->n_layers; l++) {
    be->ops->discard (be, st->self_kv[l], (size_t) st->n_slots * st->self_len * 2 * d);
    be->ops->discard (be, st->cross_kv[l], (size_t) net->max_encoder_length * 2 * d);
    if (st->cross_half)
      be->ops->discard (be, st->cross_half[l], (size_t) net->max_encoder_length * d);
  }
}

void
whisper_decoder_set_audio (WhisperDecoderState *st, WhisperNet *net, int encoder_length)
{
  WhisperBackend *be = net->backend;
  const int d = net->d;
  g_return_if_fail (encoder_length >= 1 && encoder_length <= net->max_encoder_length);
  st->encoder_length = encoder_length;
  /* float16 only: each layer's float32 K/V pass through layer 0's buffer,
   * so the others' pages are never touched */
  st->cross_f32_valid = !(st->cross_half && be->half_kv_only) || st->keep_cross_f32;
  for (int l = 0; l < st->n_layers; l++) {
    const WhisperDeviceLayer *L = &net->weights->decoder_layers[l];
    float *kv = st->cross_f32_valid ? st->cross_kv[l] : st->cross_kv[0];
    be->ops->linear (be, kv, 2 * d, net->enc.h, d, &L->cross_kv.w, L->cross_kv.bias,
                     encoder_length, WHISPER_LINEAR_DEFAULT);
    if (st->cross_half)
      be->ops->half_kv_write (be, st->cross_half[l], kv, 2 * d, encoder_length,
                              net->n_text_head, d / net->n_text_head);
  }
}

/* The second half of decoder layer l over the n rows of net->dec_work.x, which are
 * the rows of parts[0..n_parts) in order: cross-attention of each part over
 * its own state's cross K/V, then the MLP (both residual). A part with
 * `capture` hands its queries to its state's alignment capture (when set). */
static void
cross_attention_and_mlp (WhisperNet *net, const WhisperStepRows *parts, int n_parts, int l,
                         int n)
{
  const WhisperDecoderWork *b = &net->dec_work;
  WhisperBackend *be = net->backend;
  const WhisperBackendOps *op = be->ops;
  const WhisperDeviceLayer *L = &net->weights->decoder_layers[l];
  const int d = net->d, n_head = net->n_text_head, d_head = d / n_head;

  op->layer_norm (be, b->h, b->x, L->cross_ln.gamma, L->cross_ln.beta, n, d, LN_EPS);
  op->linear (be, b->q, d, b->h, d, &L->cross_q.w, L->cross_q.bias, n, WHISPER_LINEAR_DEFAULT);
  for (int p = 0, r0 = 0; p < n_parts; r0 += parts[p].n_rows, p++) {
    WhisperDecoderState *st = parts[p].st;
    const int m = parts[p].n_rows;
    const float *q = b->q + (size_t) r0 * d;
    /* a decode step, or any pass where the float32 K/V are not kept */
    if (st->cross_half && (m <= be->max_exact_rows || !st->cross_f32_valid))
      op->attention_half_kv (be, b->attn + (size_t) r0 * d, d, q, d, st->cross_half[l], m,
                             st->encoder_length, n_head, d_head);
    else
      op->attention (be, b->attn + (size_t) r0 * d, d, q, d, st->cross_kv[l],
                     st->cross_kv[l] + d, 2 * d, m, st->encoder_length, n_head, d_head, -1);
    st->last_cross_key_length = st->encoder_length;
    /* word timestamps: the alignment heads' attention (whisper-alignment.h) */
    if (parts[p].capture && st->capture)
      ((WhisperCaptureHook *) st->capture)->layer (st->capture, net, st, l, q, m);
  }
  op->linear (be, b->x, d, b->attn, d, &L->cross_out.w, L->cross_out.bias, n,
              WHISPER_LINEAR_ACCUMULATE);

  op->layer_norm (be, b->h, b->x, L->mlp_ln.gamma, L->mlp_ln.beta, n, d, LN_EPS);
  op->linear (be, b->ffn, 4 * d, b->h, d, &L->mlp_fc1.w, L->mlp_fc1.bias, n,
              WHISPER_LINEAR_GELU);
  op->linear (be, b->x, d, b->ffn, 4 * d, &L->mlp_fc2.w, L->mlp_fc2.bias, n,
              WHISPER_LINEAR_ACCUMULATE);
}

void
whisper_decoder_forward (WhisperDecoderState *st, WhisperNet *net, const gint32 *tokens, int n,
                         int pos0, const int *rows, int n_rows)
{
  WhisperBackend *be = net->backend;
  const WhisperBackendOps *op = be->ops;
  const WhisperDeviceWeights *w = net->weights;
  const int d = net->d, n_head = net->n_text_head, d_head = d / n_head;
  const WhisperDecoderWork *b = &net->dec_work;
  const WhisperStepRows whole = { .st = st, .n_rows = n, .capture = TRUE };

  g_return_if_fail (pos0 + n <= st->self_len && n_rows <= 2);

  op->embed (be, b->x, &w->token_embedding, w->decoder_positional, tokens, n, pos0, d);
  for (int l = 0; l < st->n_layers; l++) {
    const WhisperDeviceLayer *L = &w->decoder_layers[l];
    float *kv = st->self_kv[l];

    op->layer_norm (be, b->h, b->x, L->attn_ln.gamma, L->attn_ln.beta, n, d, LN_EPS);
    op->linear (be, b->qkv, 3 * d, b->h, d, &L->attn_qkv.w, L->attn_qkv.bias, n,
                WHISPER_LINEAR_DEFAULT);
    op->copy_rows (be, kv + (size_t) pos0 * 2 * d, 2 * d, b->qkv + d, 3 * d, n, 2 * d);
    op->attention (be, b->attn, d, b->qkv, 3 * d, kv, kv + d, 2 * d, n, pos0 + n, n_head,
                   d_head, pos0);
    op->linear (be, b->x, d, b->attn, d, &L->attn_out.w, L->attn_out.bias, n,
                WHISPER_LINEAR_ACCUMULATE);

    cross_attention_and_mlp (net, &whole, 1, l, n);
  }

  for (int r = 0; r < n_rows; r++)
    op->copy_rows (be, b->sel + (size_t) r * d, d, b->x + (size_t) rows[r] * d, d, 1, d);
  op->layer_norm (be, b->h, b->sel, w->ln.gamma, w->ln.beta, n_rows, d, LN_EPS);
  op->linear (be, st->logits, net->n_vocab, b->h, d, &w->token_embedding, NULL, n_rows,
              WHISPER_LINEAR_DEFAULT);
}

/* The self-attention cache of slot `slot` in layer l: [self_len, 2d]. */
static inline float *
slot_cache (const WhisperDecoderState *st, int l, int slot, int d)
{
  return st->self_kv[l] + (size_t) slot * st->self_len * 2 * d;
}

void
whisper_decoder_forward_batch (WhisperNet *net, float *batch_logits, int batch_rows,
                               const WhisperStepRows *parts, int n_parts)
{
  WhisperBackend *be = net->backend;
  const WhisperBackendOps *op = be->ops;
  const WhisperDeviceWeights *w = net->weights;
  const int d = net->d, n_head = net->n_text_head, d_head = d / n_head;
  const size_t V = net->n_vocab;
  const WhisperDecoderWork *b = &net->dec_work;
  /* one part: its logits land in its state's buffer at once */
  float *logits = n_parts == 1 ? parts[0].st->logits : batch_logits;
  int n = 0;
  for (int p = 0; p < n_parts; p++) {
    g_return_if_fail (parts[p].n_rows >= 1 && parts[p].n_rows <= parts[p].st->n_slots &&
                      parts[p].pos < parts[p].st->self_len);
    n += parts[p].n_rows;
  }
  g_return_if_fail (n_parts >= 1 && n <= net->n_text_ctx && (n_parts == 1 || n <= batch_rows));

  /* each row at its own stream's position: one embedding call per row */
  for (int p = 0, r = 0; p < n_parts; p++)
    for (int i = 0; i < parts[p].n_rows; i++, r++)
      op->embed (be, b->x + (size_t) r * d, &w->token_embedding, w->decoder_positional,
                 parts[p].tokens + i, 1, parts[p].pos, d);
  for (int l = 0; l < net->n_text_layer; l++) {
    const WhisperDeviceLayer *L = &w->decoder_layers[l];

    op->layer_norm (be, b->h, b->x, L->attn_ln.gamma, L->attn_ln.beta, n, d, LN_EPS);
    op->linear (be, b->qkv, 3 * d, b->h, d, &L->attn_qkv.w, L->attn_qkv.bias, n,
                WHISPER_LINEAR_DEFAULT);
    for (int p = 0, r = 0; p < n_parts; p++) {
      const WhisperStepRows *part = &parts[p];
      for (int i = 0; i < part->n_rows; i++, r++) {
        float *kv = slot_cache (part->st, l, part->slots[i], d);
        const float *qkv = b->qkv + (size_t) r * 3 * d;
        op->copy_rows (be, kv + (size_t) part->pos * 2 * d, 2 * d, qkv + d, 3 * d, 1, 2 * d);
        op->attention (be, b->attn + (size_t) r * d, d, qkv, 3 * d, kv, kv + d, 2 * d, 1,
                       part->pos + 1, n_head, d_head, part->pos);
      }
    }
    op->linear (be, b->x, d, b->attn, d, &L->attn_out.w, L->attn_out.bias, n,
                WHISPER_LINEAR_ACCUMULATE);

    cross_attention_and_mlp (net, parts, n_parts, l, n);
  }
  op->layer_norm (be, b->h, b->x, w->ln.gamma, w->ln.beta, n, d, LN_EPS);
  op->linear (be, logits, net->n_vocab, b->h, d, &w->token_embedding, NULL, n,
              WHISPER_LINEAR_DEFAULT);
  if (n_parts == 1)
    return;
  for (int p = 0, r = 0; p < n_parts; r += parts[p].n_rows, p++)
    op->copy_rows (be, parts[p].st->logits, V, logits + r * V, V, parts[p].n_rows, V);
}

void
whisper_decoder_copy_slot (WhisperDecoderState *st, WhisperNet *net, int dst, int src,
                           int n_positions)
{
  WhisperBackend *be = net->backend;
  const int d = net->d;
  if (dst == src || n_positions <= 0)
    return;
  for (int l = 0; l < st->n_layers; l++)
    be->ops->copy_rows (be, slot_cache (st, l, dst, d), 2 * d, slot_cache (st, l, src, d), 2 * d,
                        n_positions, 2 * d);
}
