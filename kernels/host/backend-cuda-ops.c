/* backend-cuda-ops.c: the compute ops of the CUDA backend: argument checks,
 * choice of kernel, argument structs (zeroed, so that equal arguments
 * compare equal byte for byte when a graph is patched). Device code is in
 * kernels/; the CPU twin of each op is in backend-cpu.c. */
#include "backend-cuda-private.h"

#include <math.h>
#include <string.h>

#define LOCK(self) wc_enter (self)
#define UNLOCK(self) wc_leave (self)

static gboolean
aligned16 (const void *p)
{
  return ((uintptr_t) p & 15) == 0;
}

static gboolean
grid_ok (WcBackend *self, const char *op, long y, long z)
{
  if (y > 65535 || z > 65535) {
    wc_fail_msg (self, "%s: %ld rows is more than one launch takes", op, MAX (y, z));
    return FALSE;
  }
  return TRUE;
}

#define SUBMIT(self, plan, args)                                                                 \
  do {                                                                                           \
    WcLaunch l_;                                                                                 \
    plan (&l_, &(args));                                                                         \
    wc_submit_kernel ((self), &l_, &(args), sizeof (args));                                      \
  } while (0)

/* y (fp32, ldc y_stride) = xh (fp16 [n, k]) W^T (+ y when accumulate). */
static void
gemm_f16 (WcBackend *self, float *y, int y_stride, const uint16_t *xh, int ldx,
          const WhisperWeight *w, int n, gboolean accumulate)
{
  WcGemm g;
  memset (&g, 0, sizeof g);
  g.ta = CUBLAS_OP_T; /* row-major W [rows, cols] is column-major W^T */
  g.tb = CUBLAS_OP_N;
  g.m = w->rows;
  g.n = n;
  g.k = w->cols;
  g.alpha = 1.0f;
  g.beta = accumulate ? 1.0f : 0.0f;
  g.a = w->data;
  g.lda = w->cols;
  g.b = xh;
  g.ldb = ldx;
  g.c = y;
  g.ldc = y_stride;
  wc_submit_gemm (self, &g);
}

static void
bias_act (WcBackend *self, float *y, int y_stride, const float *bias, int rows, int n,
          gboolean gelu)
{
  if (!bias && !gelu)
    return;
  WcBiasActArgs a;
  memset (&a, 0, sizeof a);
  a.y = y;
  a.bias = bias;
  a.y_stride = y_stride;
  a.rows = rows;
  a.n = n;
  a.gelu = gelu;
  SUBMIT (self, wc_bias_act_plan, a);
}

static gboolean
weight_ok (WcBackend *self, const char *op, const WhisperWeight *w)
{
  if (!w || !w->data || w->dtype != WC_DTYPE_F16) {
    wc_fail_msg (self, "%s: weight not uploaded by this backend", op);
    return FALSE;
  }
  return TRUE;
}

void
wc_cuda_linear (WhisperBackend *be, float *y, int y_stride, const float *x, int x_stride,
                const WhisperWeight *w, const float *bias, int n, WhisperLinearFlags flags)
{
  WcBackend *self = (WcBackend *) be;
  if (n <= 0)
    return;
  LOCK (self);
  if (!weight_ok (self, "linear", w) || !grid_ok (self, "linear", n, 0))
    goto out;
  const gboolean acc = (flags & WHISPER_LINEAR_ACCUMULATE) != 0;
  const gboolean gelu = (flags & WHISPER_LINEAR_GELU) != 0;

  if (n <= self->gemv_max_n) {
    WcGemvArgs a;
    memset (&a, 0, sizeof a);
    a.y = y;
    a.x = x;
    a.w = w->data;
    a.bias = bias;
    a.y_stride = y_stride;
    a.x_stride = x_stride;
    a.rows = w->rows;
    a.cols = w->cols;
    a.n = n;
    a.flags = (acc ? WC_ACT_ACCUMULATE : 0) | (gelu ? WC_ACT_GELU : 0);
    a.vec = w->cols % 8 == 0 && aligned16 (x) && (n == 1 || x_stride % 4 == 0);
    SUBMIT (self, wc_gemv_plan, a);
    goto out;
  }

  /* cuBLAS: activations to fp16 (and their fp16 remainder in split
   * precision), GEMM(s) with fp32 accumulation, epilogue */
  const size_t elems = (size_t) n * w->cols;
  const gboolean split = self->split_precision;
  uint16_t *xh = wc_buffer_reserve (self, &self->ws_half, elems * 2 * (split ? 2 : 1));
  if (!xh)
    goto out;
  WcToHalfArgs c;
  memset (&c, 0, sizeof c);
  c.dst = xh;
  c.dst_lo = split ? xh + elems : NULL;
  c.src = x;
  c.rows = n;
  c.cols = w->cols;
  c.src_stride = x_stride;
  SUBMIT (self, wc_to_half_plan, c);
  gemm_f16 (self, y, y_stride, xh, w->cols, w, n, acc);
  if (split)
    gemm_f16 (self, y, y_stride, xh + elems, w->cols, w, n, TRUE);
  bias_act (self, y, y_stride, bias, w->rows, n, gelu);
out:
  UNLOCK (self);
}

void
wc_cuda_layer_norm (WhisperBackend *be, float *y, const float *x, const float *gamma,
                    const float *beta, int n, int d, float eps)
{
  WcBackend *self = (WcBackend *) be;
  if (n <= 0)
    return;
  LOCK (self);
  WcLayerNormArgs a;
  memset (&a, 0, sizeof a);
  a.y = y;
  a.x = x;
  a.gamma = gamma;
  a.beta = beta;
  a.n = n;
  a.d = d;
  a.eps = eps;
  SUBMIT (self, wc_layer_norm_plan, a);
  UNLOCK (self);
}

void
wc_cuda_conv1d_gelu (WhisperBackend *be, float *y, const float *x, int n_in_frames, int c_in,
                     const WhisperWeight *w, const float *bias, int stride, float *scratch)
{
  WcBackend *self = (WcBackend *) be;
  const int n_out = (n_in_frames - 1) / stride + 1;
  LOCK (self);
  if (!weight_ok (self, "conv1d_gelu", w) || !grid_ok (self, "conv1d_gelu", n_out, 0))
    goto out;
  if (w->cols != 3 * c_in) {
    wc_fail_msg (self, "conv1d_gelu: weight has %d columns, expected 3 * %d", w->cols, c_in);
    goto out;
  }
  /* im2col as fp16 into the caller's scratch (n_out * c_in * 3 floats: room
   * for the fp16 columns and their fp16 remainders), then one GEMM (two in
   * split precision) and the bias + GELU epilogue */
  const size_t elems = (size_t) n_out * 3 * c_in;
  const gboolean split = self->split_precision;
  WcIm2colArgs a;
  memset (&a, 0, sizeof a);
  a.dst = (uint16_t *) scratch;
  a.dst_lo = split ? (uint16_t *) scratch + elems : NULL;
  a.x = x;
  a.n_in = n_in_frames;
  a.c_in = c_in;
  a.n_out = n_out;
  a.stride = stride;
  SUBMIT (self, wc_im2col_plan, a);
  gemm_f16 (self, y, w->rows, (const uint16_t *) scratch, 3 * c_in, w, n_out, FALSE);
  if (split)
    gemm_f16 (self, y, w->rows, (const uint16_t *) scratch + elems, 3 * c_in, w, n_out, TRUE);
  bias_act (self, y, w->rows, bias, w->rows, n_out, TRUE);
out:
  UNLOCK (self);
}

void
wc_cuda_add (WhisperBackend *be, float *y, const float *x, size_t n)
{
  WcBackend *self = (WcBackend *) be;
  if (!n)
    return;
  LOCK (self);
  WcAddArgs a;
  memset (&a, 0, sizeof a);
  a.y = y;
  a.x = x;
  a.n = n;
  SUBMIT (self, wc_add_plan, a);
  UNLOCK (self);
}

void
wc_cuda_embed (WhisperBackend *be, float *x, const WhisperWeight *embedding,
               const float *positional, const int32_t *tokens, int n, int pos0, int d)
{
  WcBackend *self = (WcBackend *) be;
  LOCK (self);
  if (!weight_ok (self, "embed", embedding))
    goto out;
  if (embedding->cols != d) {
    wc_fail_msg (self, "embed: table has %d columns, d is %d", embedding->cols, d);
    goto out;
  }
  for (int i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= embedding->rows) {
      wc_fail_msg (self, "embed: token %d outside the vocabulary (%d)", tokens[i],
                   embedding->rows);
      goto out;
    }
  /* the ids travel inside the kernel arguments, WC_EMBED_MAX per launch */
  for (int first = 0; first < n; first += WC_EMBED_MAX) {
    WcEmbedArgs a;
    memset (&a, 0, sizeof a);
    a.n = MIN (WC_EMBED_MAX, n - first);
    a.x = x + (size_t) first * d;
    a.emb = embedding->data;
    a.pos = positional;
    a.pos0 = pos0 + first;
    a.d = d;
    memcpy (a.tokens, tokens + first, a.n * sizeof (int32_t));
    SUBMIT (self, wc_embed_plan, a);
  }
out:
  UNLOCK (self);
}

void
wc_cuda_attention (WhisperBackend *be, float *out, int out_stride, const float *q, int q_stride,
                   const float *k, const float *v, int kv_stride, int n_q, int n_kv, int n_head,
                   int d_head, int causal)
{
  WcBackend *self = (WcBackend *) be;
  if (n_q <= 0 || n_head <= 0)
    return;
  LOCK (self);
  WcAttnArgs a;
  memset (&a, 0, sizeof a);
  a.out = out;
  a.q = q;
  a.k = k;
  a.v = v;
  a.out_stride = out_stride;
  a.q_stride = q_stride;
  a.kv_stride = kv_stride;
  a.n_q = n_q;
  a.n_kv = n_kv;
  a.n_head = n_head;
  a.d_head = d_head;
  a.causal = causal;
  a.scale_log2 = (float) (1.4426950408889634 / sqrt ((double) d_head));

  if (n_q > WC_GEMV_MAX_N && wc_flash_supported (&a)) {
    if (grid_ok (self, "attention", n_head, 0))
      SUBMIT (self, wc_flash_plan, a);
    goto out;
  }
  if (d_head > WC_SPLIT_MAX_D) {
    wc_fail_msg (self, "attention: d_head %d is not supported (at most %d, or 64)", d_head,
                 WC_SPLIT_MAX_D);
    goto out;
  }
  if (!grid_ok (self, "attention", n_head, n_q))
    goto out;
  /* Few queries (decode): a fixed number of splits, so that the launch
   * shape stays the same as the KV cache grows. */
  int n_split = WC_SPLIT_MAX;
  if (n_q > WC_GEMV_MAX_N)
    n_split = CLAMP ((n_kv + 127) / 128, 1, WC_SPLIT_MAX);
  const size_t partial_floats = (size_t) n_q * n_head * n_split * (d_head + 2);
  float *partial = wc_buffer_reserve (self, &self->ws_attn, partial_floats * sizeof (float));
  if (!partial)
    goto out;
  WcAttnSplitArgs s;
  memset (&s, 0, sizeof s);
  s.a = a;
  s.partial = partial;
  s.n_split = n_split;
  SUBMIT (self, wc_attn_split_plan, s);
  WcAttnCombineArgs c;
  memset (&c, 0, sizeof c);
  c.out = out;
  c.partial = partial;
  c.out_stride = out_stride;
  c.n_q = n_q;
  c.n_head = n_head;
  c.d_head = d_head;
  c.n_split = n_split;
  SUBMIT (self, wc_attn_combine_plan, c);
out:
  UNLOCK (self);
}

/* word timestamps: attention-probs.cu */
void
wc_cuda_attention_probs (WhisperBackend *be, float *probs, int probs_stride, const float *q,
                         int q_stride, const float *k, int kv_stride, int n_q, int n_kv,
                         int head, int d_head)
{
  WcBackend *self = (WcBackend *) be;
  if (n_q <= 0 || n_kv <= 0)
    return;
  LOCK (self);
  WcAttnProbsArgs a;
  memset (&a, 0, sizeof a);
  a.probs = probs;
  a.q = q;
  a.k = k;
  a.probs_stride = probs_stride;
  a.q_stride = q_stride;
  a.kv_stride = kv_stride;
  a.n_q = n_q;
  a.n_kv = n_kv;
  a.head = head;
  a.d_head = d_head;
  a.scale = (float) (1.0 / sqrt ((double) d_head));
  SUBMIT (self, wc_attention_probs_plan, a);
  UNLOCK (self);
}

void
wc_cuda_copy_rows (WhisperBackend *be, float *dst, int dst_stride, const float *src,
                   int src_stride, int n_rows, int n_cols)
{
  WcBackend *self = (WcBackend *) be;
  if (n_rows <= 0 || n_cols <= 0)
    return;
  LOCK (self);
  if (grid_ok (self, "copy_rows", n_rows, 0)) {
    WcCopyRowsArgs a;
    memset (&a, 0, sizeof a);
    a.dst = dst;
    a.src = src;
    a.dst_stride = dst_stride;
    a.src_stride = src_stride;
    a.n_rows = n_rows;
    a.n_cols = n_cols;
    SUBMIT (self, wc_copy_rows_plan, a);
  }
  UNLOCK (self);
}
