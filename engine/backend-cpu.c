/* backend-cpu.c: the backend operation table on the CPU.
 * GEMMs go to OpenBLAS (threaded by OpenBLAS itself); element-wise loops and
 * attention use OpenMP threads. Weights stay float32. */
#include "backend.h"
#include "whisper-cpu-math.h"
#include "whisper-engine.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

typedef struct {
  WhisperBackend parent;
  /* Attention scratch, grown on first use to the largest shape seen and
   * then reused (no allocation on later calls of the same size). */
  float *scores;
  size_t scores_size;
} WhisperBackendCpu;

static void
cpu_destroy (WhisperBackend *be)
{
  WhisperBackendCpu *self = (WhisperBackendCpu *) be;
  g_free (self->scores);
  g_free (self);
}

static float *
cpu_alloc (WhisperBackend *be, size_t n_floats, GError **error)
{
  (void) be;
  float *p = g_try_malloc0_n (MAX (n_floats, 1), sizeof (float));
  if (!p)
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                 "cpu backend: cannot allocate %zu floats", n_floats);
  return p;
}

static void
cpu_free (WhisperBackend *be, void *ptr)
{
  (void) be;
  g_free (ptr);
}

static void
cpu_copy (WhisperBackend *be, void *dst, const void *src, size_t bytes)
{
  (void) be;
  if (bytes)
    memcpy (dst, src, bytes);
}

static void
cpu_sync (WhisperBackend *be)
{
  (void) be;
}

static gboolean
cpu_weight_upload (WhisperBackend *be, WhisperWeight *w, const float *host, int rows, int cols,
                   GError **error)
{
  float *data = cpu_alloc (be, (size_t) rows * cols, error);
  if (!data)
    return FALSE;
  memcpy (data, host, (size_t) rows * cols * sizeof (float));
  w->data = data;
  w->rows = rows;
  w->cols = cols;
  w->dtype = 0;
  return TRUE;
}

static void
cpu_weight_free (WhisperBackend *be, WhisperWeight *w)
{
  (void) be;
  g_clear_pointer (&w->data, g_free);
}

static void
cpu_bias_act (float *y, int y_stride, const float *bias, int n, int d, gboolean gelu)
{
  if (!bias && !gelu)
    return;
#pragma omp parallel for schedule(static) if ((size_t) n * d > 32768)
  for (int i = 0; i < n; i++) {
    float *row = y + (size_t) i * y_stride;
    if (bias)
      for (int j = 0; j < d; j++)
        row[j] += bias[j];
    if (gelu)
      for (int j = 0; j < d; j++)
        row[j] = whisper_gelu (row[j]);
  }
}

static void
cpu_linear (WhisperBackend *be, float *y, int y_stride, const float *x, int x_stride,
            const WhisperWeight *w, const float *bias, int n, WhisperLinearFlags flags)
{
  (void) be;
  const float beta = (flags & WHISPER_LINEAR_ACCUMULATE) ? 1.0f : 0.0f;
  const float *wdata = w->data;

  if (n == 1)
    cblas_sgemv (CblasRowMajor, CblasNoTrans, w->rows, w->cols, 1.0f, wdata, w->cols, x, 1,
                 beta, y, 1);
  else
    cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, n, w->rows, w->cols, 1.0f, x,
                 x_stride, wdata, w->cols, beta, y, y_stride);
  cpu_bias_act (y, y_stride, bias, n, w->rows, (flags & WHISPER_LINEAR_GELU) != 0);
}

static void
cpu_layer_norm (WhisperBackend *be, float *y, const float *x, const float *gamma,
                const float *beta, int n, int d, float eps)
{
  (void) be;
#pragma omp parallel for schedule(static) if ((size_t) n * d > 32768)
  for (int i = 0; i < n; i++)
    whisper_layer_norm_row (y + (size_t) i * d, x + (size_t) i * d, gamma, beta, d, eps);
}

static void
cpu_conv1d_gelu (WhisperBackend *be, float *y, const float *x, int n_in_frames, int c_in,
                 const WhisperWeight *w, const float *bias, int stride, float *scratch)
{
  const int n_out = (n_in_frames - 1) / stride + 1;
  const int k3 = c_in * 3;

  /* im2col: row t holds x[t*stride + k - 1, c] at column c*3 + k, the
   * layout of the flattened PyTorch weight [c_out, c_in, 3]. */
#pragma omp parallel for schedule(static)
  for (int t = 0; t < n_out; t++) {
    float *row = scratch + (size_t) t * k3;
    for (int k = 0; k < 3; k++) {
      const int src = t * stride + k - 1;
      if (src < 0 || src >= n_in_frames) {
        for (int c = 0; c < c_in; c++)
          row[c * 3 + k] = 0.0f;
      } else {
        const float *xs = x + (size_t) src * c_in;
        for (int c = 0; c < c_in; c++)
          row[c * 3 + k] = xs[c];
      }
    }
  }
  cpu_linear (be, y, w->rows, scratch, k3, w, bias, n_out, WHISPER_LINEAR_GELU);
}

static void
cpu_add (WhisperBackend *be, float *y, const float *x, size_t n)
{
  (void) be;
#pragma omp parallel for schedule(static) if (n > 65536)
  for (size_t i = 0; i < n; i++)
    y[i] += x[i];
}

static void
cpu_embed (WhisperBackend *be, float *x, const WhisperWeight *embedding, const float *positional,
           const int32_t *tokens, int n, int pos0, int d)
{
  (void) be;
  const float *emb = embedding->data;
  for (int i = 0; i < n; i++) {
    const float *e = emb + (size_t) tokens[i] * d;
    const float *p = positional + (size_t) (pos0 + i) * d;
    float *row = x + (size_t) i * d;
    for (int j = 0; j < d; j++)
      row[j] = e[j] + p[j];
  }
}

/* Small attention (decoder steps): direct loops, one OpenMP task per head. */
static void
attention_direct (float *out, int out_stride, const float *q, int q_stride, const float *k,
                  const float *v, int kv_stride, int n_q, int n_kv, int n_head, int d_head,
                  int causal, float *scratch)
{
  const float scale = 1.0f / sqrtf ((float) d_head);
#pragma omp parallel for schedule(static) if (n_head > 1 && (size_t) n_q * n_kv * d_head > 16384)
  for (int h = 0; h < n_head; h++) {
    float *s = scratch + (size_t) h * n_kv;
    for (int i = 0; i < n_q; i++) {
      const float *qi = q + (size_t) i * q_stride + h * d_head;
      const int n_visible = causal < 0 ? n_kv : MIN (n_kv, causal + i + 1);
      for (int j = 0; j < n_visible; j++)
        s[j] = whisper_dot (qi, k + (size_t) j * kv_stride + h * d_head, d_head) * scale;
      whisper_softmax_inplace (s, n_visible);
      float *oi = out + (size_t) i * out_stride + h * d_head;
      memset (oi, 0, d_head * sizeof (float));
      for (int j = 0; j < n_visible; j++)
        whisper_axpy (oi, s[j], v + (size_t) j * kv_stride + h * d_head, d_head);
    }
  }
}

/* Large attention (encoder, decoder prompts): per head, scores = q k^T with
 * one GEMM, softmax by rows, out = scores v with a second GEMM. */
static void
attention_gemm (float *out, int out_stride, const float *q, int q_stride, const float *k,
                const float *v, int kv_stride, int n_q, int n_kv, int n_head, int d_head,
                int causal, float *scores)
{
  const float scale = 1.0f / sqrtf ((float) d_head);
  for (int h = 0; h < n_head; h++) {
    cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, n_q, n_kv, d_head, scale,
                 q + h * d_head, q_stride, k + h * d_head, kv_stride, 0.0f, scores, n_kv);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n_q; i++) {
      float *row = scores + (size_t) i * n_kv;
      const int n_visible = causal < 0 ? n_kv : MIN (n_kv, causal + i + 1);
      whisper_softmax_inplace (row, n_visible);
      for (int j = n_visible; j < n_kv; j++)
        row[j] = 0.0f;
    }
    cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, n_q, d_head, n_kv, 1.0f, scores,
                 n_kv, v + h * d_head, kv_stride, 0.0f, out + h * d_head, out_stride);
  }
}

static float *
cpu_scratch (WhisperBackendCpu *self, size_t n)
{
  if (n > self->scores_size) {
    g_free (self->scores);
    self->scores = g_malloc (n * sizeof (float));
    self->scores_size = n;
  }
  return self->scores;
}

static void
cpu_attention (WhisperBackend *be, float *out, int out_stride, const float *q, int q_stride,
               const float *k, const float *v, int kv_stride, int n_q, int n_kv, int n_head,
               int d_head, int causal)
{
  WhisperBackendCpu *self = (WhisperBackendCpu *) be;
  if (n_q <= 4) {
    float *s = cpu_scratch (self, (size_t) n_head * n_kv);
    attention_direct (out, out_stride, q, q_stride, k, v, kv_stride, n_q, n_kv, n_head, d_head,
                      causal, s);
  } else {
    float *s = cpu_scratch (self, (size_t) n_q * n_kv);
    attention_gemm (out, out_stride, q, q_stride, k, v, kv_stride, n_q, n_kv, n_head, d_head,
                    causal, s);
  }
}

static void
cpu_copy_rows (WhisperBackend *be, float *dst, int dst_stride, const float *src, int src_stride,
               int n_rows, int n_cols)
{
  (void) be;
  for (int i = 0; i < n_rows; i++)
    memcpy (dst + (size_t) i * dst_stride, src + (size_t) i * src_stride,
            n_cols * sizeof (float));
}

static const WhisperBackendOps cpu_ops = {
  .abi_version = WHISPER_BACKEND_ABI_VERSION,
  .name = "cpu",
  .destroy = cpu_destroy,
  .alloc = cpu_alloc,
  .free = cpu_free,
  .upload = cpu_copy,
  .download = cpu_copy,
  .sync = cpu_sync,
  .weight_upload = cpu_weight_upload,
  .weight_free = cpu_weight_free,
  .linear = cpu_linear,
  .layer_norm = cpu_layer_norm,
  .conv1d_gelu = cpu_conv1d_gelu,
  .add = cpu_add,
  .embed = cpu_embed,
  .attention = cpu_attention,
  .copy_rows = cpu_copy_rows,
  .logits_select = NULL,
  .logits_release = NULL,
};

WhisperBackend *
whisper_backend_cpu_new (int n_threads, GError **error)
{
  if (n_threads < 0) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "cpu backend: thread count %d is negative", n_threads);
    return NULL;
  }
  if (n_threads == 0)
    n_threads = (int) g_get_num_processors ();

  WhisperBackendCpu *self = g_new0 (WhisperBackendCpu, 1);
  self->parent.ops = &cpu_ops;
  self->parent.n_threads = n_threads;
  /* Both settings are process-wide in OpenBLAS and libgomp. */
  openblas_set_num_threads (n_threads);
  omp_set_num_threads (n_threads);
  return &self->parent;
}
