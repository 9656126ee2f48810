/* synthetic-decoder.c: see synthetic-decoder.h. */
#include "synthetic-decoder.h"

#include "gpu-test-common.h"

#include <string.h>

typedef struct {
  float *gamma, *beta;
} Norm;

typedef struct {
  Norm ln1, ln2, ln3;
  WhisperWeight qkv, out, cross_q, cross_out, fc1, fc2;
  float *qkv_b, *out_b, *cross_q_b, *cross_out_b, *fc1_b, *fc2_b;
  float *cross_kv; /* [n_cross, 2d] */
} Layer;

struct _SynthModel {
  WhisperBackend *be;
  SynthShape shape;
  Layer *layers;
  Norm ln;
  WhisperWeight emb;
  float *pos;
  GPtrArray *buffers; /* every plain buffer, to free */
};

struct _SynthState {
  SynthModel *m;
  float **self_kv;
  float *x, *h, *qkv, *attn, *q, *ffn, *logits;
  WhisperLogitConfig config;
  int32_t suppress[4];
};

static float *
put_random (SynthModel *m, size_t n, float lo, float hi)
{
  g_autofree float *h = gpu_test_random (n, lo, hi);
  float *d = gpu_test_put (m->be, h, n);
  g_ptr_array_add (m->buffers, d);
  return d;
}

static void
weight (SynthModel *m, WhisperWeight *w, int rows, int cols, float scale)
{
  g_autofree float *h = gpu_test_random_half ((size_t) rows * cols, scale);
  g_autoptr (GError) error = NULL;
  if (!gt_weight_upload_f32 (m->be, w, h, rows, cols, &error))
    g_error ("weight_upload: %s", error->message);
}

static void
norm (SynthModel *m, Norm *n)
{
  n->gamma = put_random (m, m->shape.d, 0.8f, 1.2f);
  n->beta = put_random (m, m->shape.d, -0.1f, 0.1f);
}

SynthModel *
synth_model_new (WhisperBackend *be, const SynthShape *shape, guint32 seed)
{
  SynthModel *m = g_new0 (SynthModel, 1);
  const int d = shape->d;
  m->be = be;
  m->shape = *shape;
  m->buffers = g_ptr_array_new ();
  m->layers = g_new0 (Layer, shape->n_layer);
  gpu_test_seed (seed);
  for (int l = 0; l < shape->n_layer; l++) {
    Layer *L = &m->layers[l];
    norm (m, &L->ln1), norm (m, &L->ln2), norm (m, &L->ln3);
    weight (m, &L->qkv, 3 * d, d, 0.0625f);
    weight (m, &L->out, d, d, 0.0625f);
    weight (m, &L->cross_q, d, d, 0.0625f);
    weight (m, &L->cross_out, d, d, 0.0625f);
    weight (m, &L->fc1, 4 * d, d, 0.0625f);
    weight (m, &L->fc2, d, 4 * d, 0.03125f);
    L->qkv_b = put_random (m, 3 * d, -0.1f, 0.1f);
    L->out_b = put_random (m, d, -0.1f, 0.1f);
    L->cross_q_b = put_random (m, d, -0.1f, 0.1f);
    L->cross_out_b = put_random (m, d, -0.1f, 0.1f);
    L->fc1_b = put_random (m, 4 * d, -0.1f, 0.1f);
    L->fc2_b = put_random (m, d, -0.1f, 0.1f);
    L->cross_kv = put_random (m, (size_t) shape->n_cross * 2 * d, -1.0f, 1.0f);
  }
  norm (m, &m->ln);
  weight (m, &m->emb, shape->n_vocab, d, 0.5f);
  m->pos = put_random (m, (size_t) shape->n_ctx * d, -0.5f, 0.5f);
  return m;
}

void
synth_model_free (SynthModel *m)
{
  WhisperBackend *be = m->be;
  for (int l = 0; l < m->shape.n_layer; l++) {
    Layer *L = &m->layers[l];
    WhisperWeight *ws[] = { &L->qkv, &L->out, &L->cross_q, &L->cross_out, &L->fc1, &L->fc2 };
    for (gsize i = 0; i < G_N_ELEMENTS (ws); i++)
      be->ops->weight_free (be, ws[i]);
  }
  be->ops->weight_free (be, &m->emb);
  for (guint i = 0; i < m->buffers->len; i++)
    be->ops->free (be, g_ptr_array_index (m->buffers, i));
  g_ptr_array_unref (m->buffers);
  g_free (m->layers);
  g_free (m);
}

static float *
alloc (WhisperBackend *be, size_t n)
{
  g_autoptr (GError) error = NULL;
  float *p = be->ops->alloc (be, n, &error);
  if (!p)
    g_error ("alloc: %s", error->message);
  return p;
}

SynthState *
synth_state_new (SynthModel *m)
{
  WhisperBackend *be = m->be;
  const SynthShape *sh = &m->shape;
  const size_t d = sh->d;
  SynthState *s = g_new0 (SynthState, 1);
  s->m = m;
  s->self_kv = g_new0 (float *, sh->n_layer);
  for (int l = 0; l < sh->n_layer; l++)
    s->self_kv[l] = alloc (be, (size_t) sh->n_ctx * 2 * d);
  s->x = alloc (be, d);
  s->h = alloc (be, d);
  s->qkv = alloc (be, 3 * d);
  s->attn = alloc (be, d);
  s->q = alloc (be, d);
  s->ffn = alloc (be, 4 * d);
  s->logits = alloc (be, sh->n_vocab);
  /* the token layout of an English-only model, scaled to the vocabulary:
   * text | eot | specials | no_timestamps | timestamps */
  const int n = sh->n_vocab;
  const int ts_begin = n - n / 30, eot = n * 29 / 40;
  s->suppress[0] = 3;
  s->suppress[1] = 50;
  s->suppress[2] = eot + 1;
  s->suppress[3] = eot + 2;
  s->config = (WhisperLogitConfig) {
    .n_vocab = n, .eot = eot, .no_timestamps = ts_begin - 1, .timestamp_begin = ts_begin,
    .blank = 220 % eot, .suppress_blank = TRUE, .suppress_ids = s->suppress,
    .n_suppress_ids = 4, .timestamps = TRUE, .max_initial_timestamp_index = 50,
  };
  if (be->ops->logits_prepare)
    be->ops->logits_prepare (be, &s->config);
  return s;
}

void
synth_state_free (SynthState *s)
{
  WhisperBackend *be = s->m->be;
  for (int l = 0; l < s->m->shape.n_layer; l++)
    be->ops->free (be, s->self_kv[l]);
  g_free (s->self_kv);
  float *bufs[] = { s->x, s->h, s->qkv, s->attn, s->q, s->ffn, s->logits };
  for (gsize i = 0; i < G_N_ELEMENTS (bufs); i++)
    be->ops->free (be, bufs[i]);
  if (be->ops->logits_release)
    be->ops->logits_release (be, &s->config);
  g_free (s);
}

void
synth_forward (SynthState *s, int32_t token, int pos)
{
  SynthModel *m = s->m;
  WhisperBackend *be = m->be;
  const WhisperBackendOps *op = be->ops;
  const int d = m->shape.d, heads = m->shape.n_head, cross = m->shape.n_cross;
  op->embed (be, s->x, &m->emb, m->pos, &token, 1, pos, d);
  for (int l = 0; l < m->shape.n_layer; l++) {
    Layer *L = &m->layers[l];
    float *kv = s->self_kv[l];
    op->layer_norm (be, s->h, s->x, L->ln1.gamma, L->ln1.beta, 1, d, 1e-5f);
    op->linear (be, s->qkv, 3 * d, s->h, d, &L->qkv, L->qkv_b, 1, WHISPER_LINEAR_DEFAULT);
    op->copy_rows (be, kv + (size_t) pos * 2 * d, 2 * d, s->qkv + d, 3 * d, 1, 2 * d);
    op->attention (be, s->attn, d, s->qkv, 3 * d, kv, kv + d, 2 * d, 1, pos + 1, heads,
                   d / heads, pos);
    op->linear (be, s->x, d, s->attn, d, &L->out, L->out_b, 1, WHISPER_LINEAR_ACCUMULATE);
    op->layer_norm (be, s->h, s->x, L->ln2.gamma, L->ln2.beta, 1, d, 1e-5f);
    op->linear (be, s->q, d, s->h, d, &L->cross_q, L->cross_q_b, 1, WHISPER_LINEAR_DEFAULT);
    op->attention (be, s->attn, d, s->q, d, L->cross_kv, L->cross_kv + d, 2 * d, 1, cross,
                   heads, d / heads, -1);
    op->linear (be, s->x, d, s->attn, d, &L->cross_out, L->cross_out_b, 1,
                WHISPER_LINEAR_ACCUMULATE);
    op->layer_norm (be, s->h, s->x, L->ln3.gamma, L->ln3.beta, 1, d, 1e-5f);
    op->linear (be, s->ffn, 4 * d, s->h, d, &L->fc1, L->fc1_b, 1, WHISPER_LINEAR_GELU);
    op->linear (be, s->x, d, s->ffn, 4 * d, &L->fc2, L->fc2_b, 1, WHISPER_LINEAR_ACCUMULATE);
  }
  op->layer_norm (be, s->h, s->x, m->ln.gamma, m->ln.beta, 1, d, 1e-5f);
  op->linear (be, s->logits, m->shape.n_vocab, s->h, d, &m->emb, NULL, 1,
              WHISPER_LINEAR_DEFAULT);
}

void
synth_select (SynthState *s, const WhisperLogitState *state, WhisperLogitChoice *choice)
{
  WhisperBackend *be = s->m->be;
  be->ops->logits_select (be, s->logits, &s->config, state, choice);
}

const WhisperLogitConfig *
synth_logit_config (SynthState *s)
{
  return &s->config;
}

float *
synth_state_self_kv (SynthState *s, int layer)
{
  return s->self_kv[layer];
}

float *
synth_state_logits (SynthState *s)
{
  return s->logits;
}
