/* whisper-alignment.c: the alignment pass of word timestamps and its
 * post-processing, as CTranslate2 computes them (WhisperReplica::align() and
 * compute_alignments() in src/models/whisper.cc, negative_dtw() in
 * src/dtw.cc, ops::MedianFilter in src/ops/median_filter_cpu.cc, of
 * https://github.com/OpenNMT/CTranslate2). See whisper-alignment.h. */
#include "whisper-alignment.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LN_EPS 1e-5f

void
whisper_align_result_clear (WhisperAlignResult *r)
{
  g_clear_pointer (&r->path, g_free);
  g_clear_pointer (&r->text_token_probs, g_free);
  r->n_path = r->n_text = 0;
}

/* Host twin of ops->attention_probs, for backends without it: the head's q
 * and k slices come back (never a full attention matrix). */
static void
attention_probs_host (WhisperBackend *be, float *host_out, const float *q, int q_stride,
                      const float *k, int kv_stride, int n_q, int n_kv, int head, int d_head,
                      float *device_tmp)
{
  const WhisperBackendOps *op = be->ops;
  g_autofree float *hq = g_new (float, (size_t) n_q * d_head);
  g_autofree float *hk = g_new (float, (size_t) n_kv * d_head);
  op->copy_rows (be, device_tmp, d_head, k + (size_t) head * d_head, kv_stride, n_kv, d_head);
  op->download (be, hk, device_tmp, (size_t) n_kv * d_head * sizeof (float));
  op->sync (be);
  op->copy_rows (be, device_tmp, d_head, q + (size_t) head * d_head, q_stride, n_q, d_head);
  op->download (be, hq, device_tmp, (size_t) n_q * d_head * sizeof (float));
  op->sync (be);
  const float scale = 1.0f / sqrtf ((float) d_head);
  for (int i = 0; i < n_q; i++) {
    float *row = host_out + (size_t) i * n_kv;
    float max = -INFINITY;
    for (int j = 0; j < n_kv; j++) {
      float s = 0.0f;
      for (int c = 0; c < d_head; c++)
        s += hq[(size_t) i * d_head + c] * hk[(size_t) j * d_head + c];
      row[j] = s * scale;
      max = MAX (max, row[j]);
    }
    double sum = 0.0;
    for (int j = 0; j < n_kv; j++) {
      row[j] = expf (row[j] - max);
      sum += row[j];
    }
    for (int j = 0; j < n_kv; j++)
      row[j] = (float) (row[j] / sum);
  }
}

void
whisper_align_capture_layer (WhisperAlignCapture *c, WhisperNet *net, const WhisperDecoderState *st,
                             int layer, const float *q, int n)
{
  const WhisperAlignmentHeads *heads = c->heads;
  WhisperBackend *be = net->backend;
  const int d = net->d, d_head = d / net->n_text_head;
  if (c->per_step)
    c->n_rows = n;
  if (c->n_frames <= 0 || n > c->n_rows)
    return;
  for (int i = 0; i < heads->n; i++) {
    if (heads->layer[i] != layer)
      continue;
    float *dst = c->host + (size_t) i * c->n_rows * c->n_frames;
    if (be->ops->attention_probs) {
      be->ops->attention_probs (be, c->device, c->n_frames, q, d, st->cross_kv[layer], 2 * d, n,
                                c->n_frames, heads->head[i], d_head);
      be->ops->download (be, dst, c->device, (size_t) n * c->n_frames * sizeof (float));
      be->ops->sync (be);
    } else {
      attention_probs_host (be, dst, q, d, st->cross_kv[layer], 2 * d, n, c->n_frames,
                            heads->head[i], d_head, c->device);
    }
  }
}

int
whisper_align_capture_argmax (const WhisperAlignCapture *c, int n_heads, int row)
{
  if (!c || c->n_frames <= 0 || row >= c->n_rows)
    return -1;
  int best = 0;
  float best_v = -INFINITY;
  for (int f = 0; f < c->n_frames; f++) {
    float s = 0.0f;
    for (int h = 0; h < n_heads; h++)
      s += c->host[((size_t) h * c->n_rows + row) * c->n_frames + f];
    if (s > best_v) {
      best_v = s;
      best = f;
    }
  }
  return best;
}

static int
compare_float (const void *a, const void *b)
{
  const float x = *(const float *) a, y = *(const float *) b;
  return (x > y) - (x < y);
}

/* ops::MedianFilter: reflect padding; an axis no longer than width / 2 is
 * passed through. */
static void
median_filter_row (const float *in, float *out, int depth, int width)
{
  const int rank = width / 2;
  if (depth <= rank) {
    memcpy (out, in, depth * sizeof (float));
    return;
  }
  float window[64];
  g_assert (width <= (int) G_N_ELEMENTS (window));
  for (int j = 0; j < depth; j++) {
    for (int k = -rank; k <= rank; k++) {
      int read = abs (j + k);
      if (read >= depth)
        read = depth - (read - depth) - 2;
      window[k + rank] = in[read];
    }
    qsort (window, width, sizeof (float), compare_float);
    out[j] = window[rank];
  }
}

WhisperAlignStep *
whisper_negative_dtw (const float *x, int n, int m, int *n_path)
{
  const int W = m + 1;
  float *cost = g_new (float, (size_t) (n + 1) * W);
  gint8 *trace = g_new (gint8, (size_t) (n + 1) * W);
  for (gsize i = 0; i < (gsize) (n + 1) * W; i++) {
    cost[i] = INFINITY;
    trace[i] = -1;
  }
  cost[0] = 0;
  for (int j = 1; j <= m; j++)
    for (int i = 1; i <= n; i++) {
      const float c0 = cost[(i - 1) * W + j - 1], c1 = cost[(i - 1) * W + j],
                  c2 = cost[i * W + j - 1];
      float c;
      int t;
      if (c0 < c1 && c0 < c2) {
        c = c0;
        t = 0;
      } else if (c1 < c0 && c1 < c2) {
        c = c1;
        t = 1;
      } else {
        c = c2;
        t = 2;
      }
      cost[i * W + j] = -x[(size_t) (i - 1) * m + (j - 1)] + c;
      trace[i * W + j] = (gint8) t;
    }
  for (int k = 0; k <= m; k++)
    trace[k] = 2;
  for (int k = 0; k <= n; k++)
    trace[k * W] = 1;

  WhisperAlignStep *path = g_new (WhisperAlignStep, n + m + 1);
  int len = 0, i = n, j = m;
  while (i > 0 || j > 0) {
    path[len].text = i - 1;
    path[len].frame = j - 1;
    len++;
    const int t = trace[i * W + j];
    if (t == 0) {
      i--;
      j--;
    } else if (t == 1) {
      i--;
    } else {
      j--;
    }
  }
  for (int a = 0, b = len - 1; a < b; a++, b--) {
    WhisperAlignStep tmp = path[a];
    path[a] = path[b];
    path[b] = tmp;
  }
  g_free (cost);
  g_free (trace);
  *n_path = len;
  return path;
}

void
whisper_align_postprocess (const float *probs, int n_heads, int n_rows, int n_frames, int first_row,
                           int n_text, int median_width, WhisperAlignResult *result)
{
  const gsize plane = (gsize) n_rows * n_frames;
  g_autofree float *norm = g_new (float, plane);
  g_autofree float *filtered = g_new (float, plane);
  g_autofree float *weights = g_new0 (float, plane);

  for (int h = 0; h < n_heads; h++) {
    const float *p = probs + h * plane;
    /* ops::LayerNorm(-2, 0): over the token axis, epsilon 0 */
    for (int f = 0; f < n_frames; f++) {
      float sum = 0.f, sum_sq = 0.f;
      for (int t = 0; t < n_rows; t++) {
        const float v = p[(size_t) t * n_frames + f];
        sum += v;
        sum_sq += v * v;
      }
      const float mean = sum / n_rows;
      const float var = MAX (sum_sq / n_rows - mean * mean, 0.f);
      const float rstd = 1.f / sqrtf (var);
      for (int t = 0; t < n_rows; t++)
        norm[(size_t) t * n_frames + f] = (p[(size_t) t * n_frames + f] - mean) * rstd;
    }
    for (int t = 0; t < n_rows; t++)
      median_filter_row (norm + (size_t) t * n_frames, filtered + (size_t) t * n_frames,
                         n_frames, median_width);
    for (gsize i = 0; i < plane; i++)
      weights[i] += filtered[i];
  }
  for (gsize i = 0; i < plane; i++)
    weights[i] /= n_heads;

  result->path = whisper_negative_dtw (weights + (size_t) first_row * n_frames, n_text + 1,
                                       n_frames, &result->n_path);
}

gboolean
whisper_align_window (WhisperDecoderState *st, const WhisperTimingModel *tm,
                      const gint32 *sot_sequence, int n_sot, const gint32 *text, int n_text,
                      int n_frames, WhisperAlignResult *result, GError **error)
{
  WhisperBackend *be = tm->net->backend;
  const WhisperBackendOps *op = be->ops;
  const WhisperEngineInfo *info = tm->info;
  const int n = n_sot + 1 + n_text + 1;
  const int d = tm->net->d, V = tm->net->n_vocab, eot = info->token_eot;

  memset (result, 0, sizeof *result);
  if (n_text <= 0)
    return TRUE;
  if (n > tm->net->n_text_ctx) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                 "word timestamps: %d alignment tokens exceed the decoder context of %d", n,
                 tm->net->n_text_ctx);
    return FALSE;
  }
  g_autofree gint32 *seq = g_new (gint32, n);
  memcpy (seq, sot_sequence, n_sot * sizeof (gint32));
  seq[n_sot] = info->token_no_timestamps;
  memcpy (seq + n_sot + 1, text, n_text * sizeof (gint32));
  seq[n - 1] = eot;

  /* The second convolution halves the frames (WhisperReplica::align). */
  const int n_keys = MIN (n_frames / 2, st->encoder_length);
  result->n_text = n_text;
  result->text_token_probs = g_new0 (float, n_text);

  WhisperAlignCapture cap = { 0 };
  cap.hook.layer = whisper_align_capture_layer;
  cap.heads = tm->heads;
  cap.n_frames = n_keys;
  cap.n_rows = n;
  if (n_keys > 0) {
    cap.device = op->alloc (be, (size_t) MAX (n * n_keys, n_keys * (d / tm->net->n_text_head)) + d,
                            error);
    if (!cap.device)
      return FALSE;
    cap.host_size = (gsize) tm->heads->n * n * n_keys;
    cap.host = g_new (float, cap.host_size);
    st->capture = &cap;
  }
  const int row0 = 0;
  whisper_decoder_forward (st, tm->net, seq, n, 0, &row0, 1);
  st->capture = NULL;

  /* text_token_probs: softmax over the text vocabulary (ids < eot) at
   * positions n_sot + t, taken at text[t]; two rows at a time through the
   * decoder's logit buffers (the work buffer x holds every row's final
   * residual). */
  const WhisperDecoderWork *work = &tm->net->dec_work;
  g_autofree float *host_logits = g_new (float, (size_t) 2 * V);
  for (int t = 0; t < n_text; t += 2) {
    const int rows = MIN (2, n_text - t);
    op->copy_rows (be, work->sel, d, work->x + (size_t) (n_sot + t) * d, d, rows, d);
    op->layer_norm (be, work->h, work->sel, tm->net->weights->ln.gamma,
                    tm->net->weights->ln.beta, rows, d, LN_EPS);
    op->linear (be, st->logits, V, work->h, d, &tm->net->weights->token_embedding, NULL, rows,
                WHISPER_LINEAR_DEFAULT);
    op->download (be, host_logits, st->logits, (size_t) rows * V * sizeof (float));
    op->sync (be);
    for (int r = 0; r < rows; r++) {
      const float *l = host_logits + (size_t) r * V;
      float max = -INFINITY;
      for (int i = 0; i < eot; i++)
        max = MAX (max, l[i]);
      double sum = 0.0;
      for (int i = 0; i < eot; i++)
        sum += exp ((double) l[i] - max);
      const gint32 tok = text[t + r];
      result->text_token_probs[t + r] =
          tok < eot ? (float) (exp ((double) l[tok] - max) / sum) : 0.0f;
    }
  }

  gboolean ok = !op->check || op->check (be, error);
  if (ok && n_keys > 0)
    whisper_align_postprocess (cap.host, tm->heads->n, n, n_keys, n_sot, n_text, 7, result);
  if (cap.device)
    op->free (be, cap.device);
  g_free (cap.host);
  if (!ok)
    whisper_align_result_clear (result);
  return ok;
}

WhisperAlignCapture *
whisper_align_step_capture_new (const WhisperTimingModel *tm, GError **error)
{
  WhisperAlignCapture *c = g_new0 (WhisperAlignCapture, 1);
  const size_t rows = tm->net->n_text_ctx, keys = tm->net->max_encoder_length;
  const size_t d_head = tm->net->d / tm->net->n_text_head;
  c->device = tm->net->backend->ops->alloc (tm->net->backend,
                                            MAX (rows * keys, keys * d_head) + tm->net->d, error);
  if (!c->device) {
    g_free (c);
    return NULL;
  }
  c->host_size = (gsize) tm->heads->n * rows * keys;
  c->host = g_new0 (float, c->host_size);
  c->per_step = TRUE;
  c->hook.layer = whisper_align_capture_layer;
  c->heads = tm->heads;
  return c;
}

void
whisper_align_step_capture_free (WhisperAlignCapture *c, const WhisperTimingModel *tm)
{
  if (!c)
    return;
  tm->net->backend->ops->free (tm->net->backend, c->device);
  g_free (c->host);
  g_free (c);
}

void
whisper_align_step_capture_start (WhisperAlignCapture *c, int n_frames)
{
  c->n_frames = n_frames / 2;
  c->n_rows = 0;
}

double
whisper_align_step_time (const WhisperAlignCapture *c, const WhisperTimingModel *tm,
                         double window_start)
{
  if (c->n_rows <= 0)
    return -1.0;
  const int f = whisper_align_capture_argmax (c, tm->heads->n, c->n_rows - 1);
  return f < 0 ? -1.0 : window_start + f / 50.0;
}
