/* test-cuda-ops.c: every CUDA op against its CPU twin (the CPU backend) on
 * random inputs. One test path per op family; meson runs each as its own
 * test (-p /cuda/<op>). Exits 77 (skipped) only where the machine has no
 * NVIDIA driver or no CUDA device; with one, a backend that does not come
 * up fails (gpu-test-common.h).
 *
 * Tolerances (stated again at each test):
 * - element-wise fp32 ops (add, copy_rows, embed): exact;
 * - layer norm: |gpu - cpu| <= 1e-5 (1 + |cpu|);
 * - linear and conv1d, normalised by the output's magnitude
 *   m = sum |x_k w_k| + |bias| (+ |y| when accumulating):
 *     fused GEMV (fp32 activations, n <= 8):           |gpu - cpu| <= 1e-5 m
 *     cuBLAS, split precision (fp16 hi + lo, default): |gpu - cpu| <= 2e-5 m
 *     cuBLAS, fast precision (one fp16 activation):    |gpu - cpu| <= 3e-3 m
 *   (weights are exactly representable in fp16, so both backends hold the
 *   same values; the differences are activation rounding and summation
 *   order);
 * - attention: |gpu - cpu| <= 2e-5 (1 + |cpu|), values in [-1, 1] (fp32
 *   softmax both sides, other summation order);
 * - attention_probs (word timestamps): |gpu - cpu| <= 1e-6 (1 + |cpu|),
 *   probabilities in [0, 1] (fp32 scores, other summation order);
 * - logits_select: the same token, log probability within 1e-5;
 * - weight_upload (read back through embed): exact.
 */
#include "gpu-test-common.h"
#include "half.h"
#include "qblock.h"
#include "whisper-logits.h"

#include <math.h>
#include <string.h>

static WhisperBackend *gpu, *gpu_fast, *cpu;
/* WHISPER_GPU_TEST_QUICK=1: smaller shapes and fewer trials (the CPU
 * emulator of CUDA, emu/, runs these tests too, a thousand times slower) */
static gboolean quick;

static int
size_q (int full, int small)
{
  return quick ? small : full;
}

static WhisperBackend *
fast_backend (void)
{
  if (!gpu_fast) {
    g_setenv ("WHISPER_CUDA_PRECISION", "fast", TRUE);
    gpu_fast = gpu_test_cuda_or_skip ();
    g_unsetenv ("WHISPER_CUDA_PRECISION");
  }
  return gpu_fast;
}

static void
free_on (WhisperBackend *be, void *p)
{
  be->ops->free (be, p);
}

/* ---- layer norm -------------------------------------------------------- */

static void
test_layer_norm (void)
{
  const int n = 37, d = 384;
  g_autofree float *x = gpu_test_random ((size_t) n * d, 1.0f, 5.0f);
  g_autofree float *gamma = gpu_test_random (d, 0.5f, 1.5f);
  g_autofree float *beta = gpu_test_random (d, -0.5f, 0.5f);
  float *out[2];
  WhisperBackend *bes[2] = { gpu, cpu };
  for (int b = 0; b < 2; b++) {
    WhisperBackend *be = bes[b];
    float *dx = gpu_test_put (be, x, (size_t) n * d);
    float *dg = gpu_test_put (be, gamma, d), *db = gpu_test_put (be, beta, d);
    float *dy = gpu_test_put (be, x, (size_t) n * d);
    be->ops->layer_norm (be, dy, dx, dg, db, n, d, 1e-5f);
    out[b] = gpu_test_get (be, dy, (size_t) n * d);
    free_on (be, dx), free_on (be, dg), free_on (be, db), free_on (be, dy);
  }
  /* tolerance: |gpu - cpu| <= 1e-5 (1 + |cpu|) */
  gpu_test_assert_close ("layer_norm", out[0], out[1], NULL, (size_t) n * d, 1.0, 1e-5);
  g_free (out[0]);
  g_free (out[1]);
}

/* ---- linear ------------------------------------------------------------ */

typedef struct {
  int n, rows, cols, x_stride, y_stride, misalign;
  WhisperLinearFlags flags;
  gboolean bias;
} LinearCase;

static void
run_linear (WhisperBackend *g, const LinearCase *c, double tol, const char *what)
{
  const size_t xn = (size_t) c->n * c->x_stride + c->misalign;
  const size_t yn = (size_t) c->n * c->y_stride + c->misalign;
  g_autofree float *x = gpu_test_random (xn, -1.0f, 1.0f);
  g_autofree float *w = gpu_test_random_half ((size_t) c->rows * c->cols, 0.125f);
  g_autofree float *bias = gpu_test_random (c->rows, -0.5f, 0.5f);
  g_autofree float *y0 = gpu_test_random (yn, -2.0f, 2.0f);
  float *out[2];
  WhisperBackend *bes[2] = { g, cpu };

  for (int b = 0; b < 2; b++) {
    WhisperBackend *be = bes[b];
    g_autoptr (GError) error = NULL;
    WhisperWeight wt = { 0 };
    if (!gt_weight_upload_f32 (be, &wt, w, c->rows, c->cols, &error))
      g_error ("weight_upload: %s", error->message);
    float *dx = gpu_test_put (be, x, xn), *dy = gpu_test_put (be, y0, yn);
    float *db = gpu_test_put (be, bias, c->rows);
    be->ops->linear (be, dy + c->misalign, c->y_stride, dx + c->misalign, c->x_stride, &wt,
                     c->bias ? db : NULL, c->n, c->flags);
    out[b] = gpu_test_get (be, dy, yn);
    be->ops->weight_free (be, &wt);
    free_on (be, dx), free_on (be, dy), free_on (be, db);
  }

  /* compare the written part, normalised by the output's magnitude */
  const size_t m = (size_t) c->n * c->rows;
  g_autofree float *pg = g_new (float, m), *pc = g_new (float, m), *mag = g_new (float, m);
  for (int i = 0; i < c->n; i++)
    for (int r = 0; r < c->rows; r++) {
      const size_t o = (size_t) c->misalign + (size_t) i * c->y_stride + r;
      double s = c->bias ? fabsf (bias[r]) : 0.0;
      for (int k = 0; k < c->cols; k++)
        s += fabsf (x[c->misalign + (size_t) i * c->x_stride + k] * w[(size_t) r * c->cols + k]);
      if (c->flags & WHISPER_LINEAR_ACCUMULATE)
        s += fabsf (y0[o]);
      pg[(size_t) i * c->rows + r] = out[0][o];
      pc[(size_t) i * c->rows + r] = out[1][o];
      mag[(size_t) i * c->rows + r] = (float) s;
    }
  gpu_test_assert_close (what, pg, pc, mag, m, 1e-6, tol);
  /* what lies outside the written rows is untouched */
  for (size_t i = 0; i < yn; i++) {
    const size_t j = i >= (size_t) c->misalign ? i - c->misalign : (size_t) -1;
    const gboolean written = j != (size_t) -1 && (int) (j % c->y_stride) < c->rows;
    if (!written && out[0][i] != y0[i]) {
      g_printerr ("%s: y[%zu] outside the output was changed\n", what, i);
      g_test_fail ();
      break;
    }
  }
  g_free (out[0]);
  g_free (out[1]);
}

static const WhisperLinearFlags all_flags[] = {
  WHISPER_LINEAR_DEFAULT, WHISPER_LINEAR_ACCUMULATE, WHISPER_LINEAR_GELU,
  WHISPER_LINEAR_ACCUMULATE | WHISPER_LINEAR_GELU,
};

static void
test_linear_gemv (void)
{
  /* fused GEMV (n <= 8, fp32 activations): |gpu - cpu| <= 1e-5 m */
  const LinearCase cases[] = {
    { .n = 1, .rows = 1152, .cols = 384, .x_stride = 384, .y_stride = 1152, .bias = TRUE },
    { .n = 3, .rows = 384, .cols = 1536, .x_stride = 1540, .y_stride = 400, .bias = TRUE },
    { .n = 8, .rows = 5000, .cols = 384, .x_stride = 384, .y_stride = 5000, .bias = FALSE },
    /* the same with the output stride larger than the rows */
    { .n = 8, .rows = 600, .cols = 384, .x_stride = 384, .y_stride = 608, .bias = FALSE },
    /* scalar path: columns not a multiple of 8, misaligned rows */
    { .n = 2, .rows = 77, .cols = 100, .x_stride = 101, .y_stride = 90, .misalign = 1,
      .bias = TRUE },
  };
  for (gsize i = quick ? 1 : 0; i < G_N_ELEMENTS (cases); i++)
    for (gsize f = 0; f < G_N_ELEMENTS (all_flags); f++) {
      LinearCase c = cases[i];
      if (quick && c.rows == 5000)
        continue;
      c.flags = all_flags[f];
      g_autofree char *what = g_strdup_printf ("gemv n=%d %dx%d flags=%d", c.n, c.rows, c.cols,
                                               c.flags);
      run_linear (gpu, &c, 1e-5, what);
    }
}

static void
test_linear_gemm (void)
{
  /* cuBLAS: split precision |gpu - cpu| <= 2e-5 m; fast 3e-3 m */
  const LinearCase cases[] = {
    { .n = 300, .rows = 1536, .cols = 384, .x_stride = 384, .y_stride = 1536, .bias = TRUE },
    { .n = 9, .rows = 384, .cols = 1536, .x_stride = 1536, .y_stride = 1152, .bias = TRUE },
    { .n = 33, .rows = 100, .cols = 70, .x_stride = 71, .y_stride = 103, .misalign = 1,
      .bias = FALSE },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    for (gsize f = 0; f < G_N_ELEMENTS (all_flags); f++) {
      LinearCase c = cases[i];
      c.n = size_q (c.n, MIN (c.n, 12));
      c.flags = all_flags[f];
      g_autofree char *what = g_strdup_printf ("gemm n=%d %dx%d flags=%d", c.n, c.rows, c.cols,
                                               c.flags);
      run_linear (gpu, &c, 2e-5, what);
      g_autofree char *what_fast = g_strconcat (what, " (fast)", NULL);
      run_linear (fast_backend (), &c, 3e-3, what_fast);
    }
}

/* Activations beyond fp16's range (+-65504) on the cuBLAS path: the fp16
 * hi/lo split saturates them, so the output is the CPU's on the clamped
 * activations (split precision, |gpu - cpu| <= 2e-5 m) and never a NaN
 * (inf - inf) or an infinity; a NaN activation still gives NaNs. */
static void
test_linear_half_range (void)
{
  const int n = 12, rows = 40, cols = 64;
  g_autofree float *x = gpu_test_random ((size_t) n * cols, -1.0f, 1.0f);
  g_autofree float *w = gpu_test_random_half ((size_t) rows * cols, 0.125f);
  const float big[] = { 7e4f, -7e4f, 1e6f, -3e38f, 65504.0f, 65519.0f };
  for (int i = 0; i < n; i++)
    x[(size_t) i * cols + (i * 5) % cols] = big[i % G_N_ELEMENTS (big)];
  g_autofree float *clamped = g_memdup2 (x, (size_t) n * cols * sizeof (float));
  for (int i = 0; i < n * cols; i++)
    clamped[i] = CLAMP (clamped[i], -65504.0f, 65504.0f);

  float *out[2];
  WhisperBackend *bes[2] = { gpu, cpu };
  const float *inputs[2] = { x, clamped };
  for (int b = 0; b < 2; b++) {
    WhisperBackend *be = bes[b];
    g_autoptr (GError) error = NULL;
    WhisperWeight wt = { 0 };
    if (!gt_weight_upload_f32 (be, &wt, w, rows, cols, &error))
      g_error ("weight_upload: %s", error->message);
    float *dx = gpu_test_put (be, inputs[b], (size_t) n * cols);
    float *dy = be->ops->alloc (be, (size_t) n * rows, &error);
    be->ops->linear (be, dy, rows, dx, cols, &wt, NULL, n, WHISPER_LINEAR_DEFAULT);
    out[b] = gpu_test_get (be, dy, (size_t) n * rows);
    be->ops->weight_free (be, &wt);
    free_on (be, dx), free_on (be, dy);
  }
  g_autofree float *mag = g_new (float, (size_t) n * rows);
  for (int i = 0; i < n; i++)
    for (int r = 0; r < rows; r++) {
      double m = 0.0;
      for (int k = 0; k < cols; k++)
        m += fabsf (clamped[(size_t) i * cols + k] * w[(size_t) r * cols + k]);
      mag[(size_t) i * rows + r] = (float) m;
      g_assert_true (isfinite (out[0][(size_t) i * rows + r]));
    }
  gpu_test_assert_close ("linear beyond fp16 range", out[0], out[1], mag, (size_t) n * rows, 1e-6,
                         2e-5);
  g_free (out[0]);
  g_free (out[1]);

  /* a NaN is not hidden by the saturation */
  x[0] = NAN;
  g_autoptr (GError) error = NULL;
  WhisperWeight wt = { 0 };
  if (!gt_weight_upload_f32 (gpu, &wt, w, rows, cols, &error))
    g_error ("weight_upload: %s", error->message);
  float *dx = gpu_test_put (gpu, x, (size_t) n * cols);
  float *dy = gpu->ops->alloc (gpu, (size_t) n * rows, &error);
  gpu->ops->linear (gpu, dy, rows, dx, cols, &wt, NULL, n, WHISPER_LINEAR_DEFAULT);
  g_autofree float *y = gpu_test_get (gpu, dy, (size_t) n * rows);
  g_assert_true (isnan (y[0]));
  gpu->ops->weight_free (gpu, &wt);
  free_on (gpu, dx), free_on (gpu, dy);
}

/* ---- weight upload ----------------------------------------------------- */

/* Every stored type reaches the device as the same fp16 values: float16
 * tensors as they are (any alignment of the source), the others converted.
 * Read back through embed (row + a zero positional row), exactly. */
static void
test_weight_upload (void)
{
  const int rows = 70, cols = 37; /* more rows than one embed launch takes */
  g_autofree float *w = gpu_test_random_half ((size_t) rows * cols, 2.0f);
  g_autofree uint16_t *half = g_new (uint16_t, (size_t) rows * cols);
  g_assert_true (whisper_float_to_half_exact_n (half, w, (size_t) rows * cols));
  /* one spare element in front: a float16 source that is 2-byte aligned only */
  g_autofree uint16_t *odd = g_new (uint16_t, (size_t) rows * cols + 1);
  memcpy (odd + 1, half, (size_t) rows * cols * sizeof (uint16_t));
  const WhisperTensor tensors[] = {
    { w, WHISPER_DTYPE_F32, NULL, rows, cols },
    { half, WHISPER_DTYPE_F16, NULL, rows, cols },
    { odd + 1, WHISPER_DTYPE_F16, NULL, rows, cols },
  };
  const char *names[] = { "float32", "float16", "float16, misaligned" };
  g_autofree int32_t *tokens = g_new (int32_t, rows);
  for (int i = 0; i < rows; i++)
    tokens[i] = rows - 1 - i;
  g_autofree float *want = g_new (float, (size_t) rows * cols);
  for (int i = 0; i < rows; i++)
    memcpy (want + (size_t) i * cols, w + (size_t) tokens[i] * cols, cols * sizeof (float));

  g_autoptr (GError) error = NULL;
  float *zero = gpu->ops->alloc (gpu, (size_t) rows * cols, &error); /* zeroed */
  float *dx = gpu->ops->alloc (gpu, (size_t) rows * cols, &error);
  g_assert_nonnull (zero);
  g_assert_nonnull (dx);
  for (gsize k = 0; k < G_N_ELEMENTS (tensors); k++) {
    WhisperWeight wt = { 0 };
    if (!gpu->ops->weight_upload (gpu, &wt, &tensors[k], &error))
      g_error ("weight_upload (%s): %s", names[k], error->message);
    g_assert_cmpint (wt.rows, ==, rows);
    g_assert_cmpint (wt.cols, ==, cols);
    gpu->ops->embed (gpu, dx, &wt, zero, tokens, rows, 0, cols);
    g_autofree float *got = gpu_test_get (gpu, dx, (size_t) rows * cols);
    g_autofree char *what = g_strdup_printf ("weight_upload of %s", names[k]);
    gpu_test_assert_close (what, got, want, NULL, (size_t) rows * cols, 1.0, 0.0);
    gpu->ops->weight_free (gpu, &wt);
  }
  free_on (gpu, zero);
  free_on (gpu, dx);
}

/* ggml's block types (q8_0, q5_0, q4_1) and k-quants (q4_K, q6_K) are
 * widened on upload: the device holds each value decoded on the host
 * (util/qblock.h) and rounded to fp16 (round to nearest even), read back
 * through embed, exactly. */
static void
test_weight_upload_qblock (void)
{
  const int rows = 6;
  const WhisperDType types[] = { WHISPER_DTYPE_Q8_0, WHISPER_DTYPE_Q5_0, WHISPER_DTYPE_Q4_1,
                                 WHISPER_DTYPE_Q4_K, WHISPER_DTYPE_Q6_K };
  int32_t tokens[6] = { 5, 4, 3, 2, 1, 0 };
  g_autoptr (GError) error = NULL;
  g_autoptr (GRand) r = g_rand_new_with_seed (29);
  float *zero = gpu->ops->alloc (gpu, (size_t) rows * 256, &error);
  float *dx = gpu->ops->alloc (gpu, (size_t) rows * 256, &error);
  g_assert_nonnull (dx);
  for (gsize k = 0; k < G_N_ELEMENTS (types); k++) {
    const int cols = whisper_qblock_is_k (types[k]) ? 256 : 64; /* whole blocks */
    const gsize n_blocks = (gsize) rows * cols / whisper_qblock_values (types[k]);
    const gsize bytes = whisper_qblock_bytes (types[k]);
    g_autofree guint8 *blocks = g_new (guint8, n_blocks * bytes);
    for (gsize i = 0; i < n_blocks * bytes; i++)
      blocks[i] = (guint8) g_rand_int_range (r, 0, 256);
    for (gsize b = 0; b < n_blocks; b++) { /* finite scales (and minima): exponent below 0x1f */
      if (types[k] == WHISPER_DTYPE_Q6_K) {
        blocks[b * bytes + 209] &= 0x3f;
        continue;
      }
      blocks[b * bytes + 1] &= 0x3f;
      blocks[b * bytes + 3] &= types[k] == WHISPER_DTYPE_Q4_1 || types[k] == WHISPER_DTYPE_Q4_K
                                   ? 0x3f : 0xff;
    }
    const WhisperTensor t = { blocks, types[k], NULL, rows, cols };
    g_autofree float *values = whisper_tensor_to_f32 (&t);
    g_autofree uint16_t *half = g_new (uint16_t, (size_t) rows * cols);
    whisper_float_to_half_n (half, values, (size_t) rows * cols);
    g_autofree float *want = g_new (float, (size_t) rows * cols);
    for (int i = 0; i < rows; i++)
      for (int c = 0; c < cols; c++)
        want[i * cols + c] = whisper_half_to_float (half[tokens[i] * cols + c]);
    WhisperWeight wt = { 0 };
    if (!gpu->ops->weight_upload (gpu, &wt, &t, &error))
      g_error ("weight_upload (%s): %s", whisper_dtype_name (types[k]), error->message);
    gpu->ops->embed (gpu, dx, &wt, zero, tokens, rows, 0, cols);
    g_autofree float *got = gpu_test_get (gpu, dx, (size_t) rows * cols);
    g_autofree char *what = g_strdup_printf ("weight_upload of %s", whisper_dtype_name (types[k]));
    gpu_test_assert_close (what, got, want, NULL, (size_t) rows * cols, 1.0, 0.0);
    gpu->ops->weight_free (gpu, &wt);
  }
  free_on (gpu, zero);
  free_on (gpu, dx);
}

/* ---- conv1d + GELU ----------------------------------------------------- */

static void
run_conv (WhisperBackend *g, int n_in, int c_in, int c_out, int stride, double tol,
          const char *what)
{
  const int n_out = (n_in - 1) / stride + 1;
  g_autofree float *x = gpu_test_random ((size_t) n_in * c_in, -1.0f, 1.0f);
  g_autofree float *w = gpu_test_random_half ((size_t) c_out * c_in * 3, 0.0625f);
  g_autofree float *bias = gpu_test_random (c_out, -0.5f, 0.5f);
  float *out[2];
  WhisperBackend *bes[2] = { g, cpu };
  for (int b = 0; b < 2; b++) {
    WhisperBackend *be = bes[b];
    g_autoptr (GError) error = NULL;
    WhisperWeight wt = { 0 };
    if (!gt_weight_upload_f32 (be, &wt, w, c_out, c_in * 3, &error))
      g_error ("weight_upload: %s", error->message);
    float *dx = gpu_test_put (be, x, (size_t) n_in * c_in);
    float *db = gpu_test_put (be, bias, c_out);
    float *dy = be->ops->alloc (be, (size_t) n_out * c_out, &error);
    float *scratch = be->ops->alloc (be, (size_t) n_out * c_in * 3, &error);
    g_assert_nonnull (dy);
    g_assert_nonnull (scratch);
    be->ops->conv1d_gelu (be, dy, dx, n_in, c_in, &wt, db, stride, scratch);
    out[b] = gpu_test_get (be, dy, (size_t) n_out * c_out);
    be->ops->weight_free (be, &wt);
    free_on (be, dx), free_on (be, db), free_on (be, dy), free_on (be, scratch);
  }
  g_autofree float *mag = g_new (float, (size_t) n_out * c_out);
  for (int t = 0; t < n_out; t++)
    for (int o = 0; o < c_out; o++) {
      double s = fabsf (bias[o]);
      for (int c = 0; c < c_in; c++)
        for (int k = 0; k < 3; k++) {
          const int src = t * stride + k - 1;
          if (src >= 0 && src < n_in)
            s += fabsf (x[(size_t) src * c_in + c] * w[((size_t) o * c_in + c) * 3 + k]);
        }
      mag[(size_t) t * c_out + o] = (float) s;
    }
  gpu_test_assert_close (what, out[0], out[1], mag, (size_t) n_out * c_out, 1e-6, tol);
  g_free (out[0]);
  g_free (out[1]);
}

static void
test_conv1d (void)
{
  /* cuBLAS after im2col: split precision 2e-5 m, fast 3e-3 m */
  run_conv (gpu, size_q (300, 40), 80, 384, 1, 2e-5, "conv1 (stride 1)");
  run_conv (gpu, size_q (300, 40), 384, 384, 2, 2e-5, "conv2 (stride 2)");
  run_conv (gpu, 301, 80, 64, 2, 2e-5, "conv (odd length, stride 2)");
  run_conv (fast_backend (), size_q (300, 40), 80, 384, 1, 3e-3, "conv1 (fast)");
}

/* ---- add, copy_rows, embed: exact ------------------------------------- */

static void
test_add (void)
{
  const size_t n = quick ? 10003 : 1000003;
  g_autofree float *x = gpu_test_random (n + 1, -3.0f, 3.0f);
  g_autofree float *y = gpu_test_random (n + 1, -3.0f, 3.0f);
  for (int misalign = 0; misalign < 2; misalign++) {
    float *out[2];
    WhisperBackend *bes[2] = { gpu, cpu };
    for (int b = 0; b < 2; b++) {
      float *dx = gpu_test_put (bes[b], x, n + 1), *dy = gpu_test_put (bes[b], y, n + 1);
      bes[b]->ops->add (bes[b], dy + misalign, dx + 1 - misalign, n);
      out[b] = gpu_test_get (bes[b], dy, n + 1);
      free_on (bes[b], dx), free_on (bes[b], dy);
    }
    /* tolerance: exact (the same fp32 addition) */
    gpu_test_assert_close ("add", out[0], out[1], NULL, n + 1, 1.0, 0.0);
    g_free (out[0]);
    g_free (out[1]);
  }
}

static void
test_copy_rows (void)
{
  const int rows = 40, cols = 768, src_stride = 1152, dst_stride = 800;
  g_autofree float *src = gpu_test_random ((size_t) rows * src_stride + 1, -1.0f, 1.0f);
  g_autofree float *dst = gpu_test_random ((size_t) rows * dst_stride + 1, -1.0f, 1.0f);
  for (int misalign = 0; misalign < 2; misalign++) {
    float *out[2];
    WhisperBackend *bes[2] = { gpu, cpu };
    for (int b = 0; b < 2; b++) {
      float *ds = gpu_test_put (bes[b], src, (size_t) rows * src_stride + 1);
      float *dd = gpu_test_put (bes[b], dst, (size_t) rows * dst_stride + 1);
      bes[b]->ops->copy_rows (bes[b], dd + misalign, dst_stride, ds + 1, src_stride, rows,
                              cols - misalign);
      out[b] = gpu_test_get (bes[b], dd, (size_t) rows * dst_stride + 1);
      free_on (bes[b], ds), free_on (bes[b], dd);
    }
    /* tolerance: exact; everything outside the rows untouched */
    gpu_test_assert_close ("copy_rows", out[0], out[1], NULL, (size_t) rows * dst_stride + 1,
                           1.0, 0.0);
    g_free (out[0]);
    g_free (out[1]);
  }
}

static void
test_embed (void)
{
  const int vocab = 1000, d = 384, ctx = 448;
  g_autofree float *emb = gpu_test_random_half ((size_t) vocab * d, 1.0f);
  g_autofree float *pos = gpu_test_random ((size_t) ctx * d, -1.0f, 1.0f);
  const int cases[][2] = { { 1, 17 }, { 100, 5 }, { 3, 0 } }; /* n, pos0 */
  for (gsize c = 0; c < G_N_ELEMENTS (cases); c++) {
    const int n = cases[c][0], pos0 = cases[c][1];
    g_autofree int32_t *tokens = g_new (int32_t, n);
    for (int i = 0; i < n; i++)
      tokens[i] = (int32_t) ((i * 7919 + 13) % vocab);
    float *out[2];
    WhisperBackend *bes[2] = { gpu, cpu };
    for (int b = 0; b < 2; b++) {
      WhisperBackend *be = bes[b];
      g_autoptr (GError) error = NULL;
      WhisperWeight wt = { 0 };
      if (!gt_weight_upload_f32 (be, &wt, emb, vocab, d, &error))
        g_error ("weight_upload: %s", error->message);
      float *dp = gpu_test_put (be, pos, (size_t) ctx * d);
      float *dx = be->ops->alloc (be, (size_t) n * d, &error);
      be->ops->embed (be, dx, &wt, dp, tokens, n, pos0, d);
      out[b] = gpu_test_get (be, dx, (size_t) n * d);
      be->ops->weight_free (be, &wt);
      free_on (be, dp), free_on (be, dx);
    }
    /* tolerance: exact (fp16 table values, one fp32 addition) */
    gpu_test_assert_close ("embed", out[0], out[1], NULL, (size_t) n * d, 1.0, 0.0);
    g_free (out[0]);
    g_free (out[1]);
  }
}

/* ---- attention --------------------------------------------------------- */

typedef struct {
  const char *name;
  int n_q, n_kv, n_head, d_head, causal;
  gboolean packed; /* encoder layout: q | k | v in one [n, 3d] buffer */
  int pad;         /* extra floats per row (odd: misaligned rows) */
} AttnCase;

static void
run_attention (const AttnCase *c)
{
  const int d = c->n_head * c->d_head;
  int q_stride, kv_stride, out_stride = d + c->pad;
  size_t qn, kvn;
  if (c->packed) {
    g_assert_cmpint (c->n_q, ==, c->n_kv);
    q_stride = kv_stride = 3 * d + c->pad;
    qn = 0;
    kvn = (size_t) c->n_kv * kv_stride;
  } else {
    q_stride = d + c->pad;
    kv_stride = 2 * d + c->pad;
    qn = (size_t) c->n_q * q_stride;
    kvn = (size_t) c->n_kv * kv_stride;
  }
  g_autofree float *q = gpu_test_random (MAX (qn, 1), -1.0f, 1.0f);
  g_autofree float *kv = gpu_test_random (kvn, -1.0f, 1.0f);
  const size_t on = (size_t) c->n_q * out_stride;
  float *out[2];
  WhisperBackend *bes[2] = { gpu, cpu };
  for (int b = 0; b < 2; b++) {
    WhisperBackend *be = bes[b];
    g_autoptr (GError) error = NULL;
    float *dkv = gpu_test_put (be, kv, kvn);
    float *dq = c->packed ? NULL : gpu_test_put (be, q, qn);
    float *dout = be->ops->alloc (be, on, &error);
    if (c->packed)
      be->ops->attention (be, dout, out_stride, dkv, q_stride, dkv + d, dkv + 2 * d, kv_stride,
                          c->n_q, c->n_kv, c->n_head, c->d_head, c->causal);
    else
      be->ops->attention (be, dout, out_stride, dq, q_stride, dkv, dkv + d, kv_stride, c->n_q,
                          c->n_kv, c->n_head, c->d_head, c->causal);
    out[b] = gpu_test_get (be, dout, on);
    free_on (be, dkv), free_on (be, dout);
    if (dq)
      free_on (be, dq);
  }
  /* tolerance: |gpu - cpu| <= 2e-5 (1 + |cpu|) (values are in [-1, 1]) */
  g_autofree char *what = g_strdup_printf ("attention %s (n_q %d, n_kv %d, heads %d x %d, "
                                           "causal %d)",
                                           c->name, c->n_q, c->n_kv, c->n_head, c->d_head,
                                           c->causal);
  /* only the written columns */
  g_autofree float *pg = g_new (float, (size_t) c->n_q * d);
  g_autofree float *pc = g_new (float, (size_t) c->n_q * d);
  for (int i = 0; i < c->n_q; i++) {
    memcpy (pg + (size_t) i * d, out[0] + (size_t) i * out_stride, d * sizeof (float));
    memcpy (pc + (size_t) i * d, out[1] + (size_t) i * out_stride, d * sizeof (float));
  }
  size_t worst;
  double err = gpu_test_max_err (pg, pc, NULL, (size_t) c->n_q * d, 1.0, &worst);
  g_test_message ("%s: max error %.3g", what, err);
  if (!(err <= 2e-5)) {
    g_printerr ("%s: max error %.3g > 2e-5 at %zu: gpu %.9g cpu %.9g\n", what, err, worst,
                pg[worst], pc[worst]);
    g_test_fail ();
  }
  g_free (out[0]);
  g_free (out[1]);
}

static void
test_attention (void)
{
  const AttnCase cases[] = {
    /* encoder self-attention, the real shape (flash kernel) */
    { "encoder", 1500, 1500, 6, 64, -1, TRUE, 0 },
    /* decoder prompt, causal (flash kernel) */
    { "prompt", 20, 25, 6, 64, 5, FALSE, 0 },
    /* decode step over the self-attention cache (split kernel) */
    { "self decode", 1, 37, 6, 64, 36, FALSE, 0 },
    /* cross-attention over the cached encoder K/V (split kernel) */
    { "cross decode", 1, 1500, 6, 64, -1, FALSE, 0 },
    /* a few causal queries (split kernel) */
    { "short prompt", 3, 10, 8, 64, 7, FALSE, 0 },
    /* other head size, misaligned rows: split kernel for many queries */
    { "d_head 80", 50, 70, 4, 80, -1, FALSE, 1 },
    /* misaligned encoder-like layout: split fallback */
    { "misaligned", 40, 40, 6, 64, -1, TRUE, 1 },
    /* a causal block whose last tile is partly masked */
    { "causal tiles", 130, 200, 2, 64, 60, FALSE, 0 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
    AttnCase c = cases[i];
    if (quick && c.n_kv == 1500) { /* the encoder and cross shapes, smaller */
      c.n_kv = 200;
      c.n_q = c.packed ? 200 : c.n_q;
    }
    run_attention (&c);
  }
}

/* ---- attention_probs (word timestamps) -------------------------------- */

static void
test_attention_probs (void)
{
  /* the alignment pass's shape: [sot, lang, task, no_timestamps, text..., eot]
   * queries over a window's frames (num_frames / 2), one head of the
   * decoder's cross K/V (q stride d, kv stride 2d); then one decode step
   * with odd frames and an odd stride */
  const struct { int n_q, n_kv, n_head, d_head, head, pad; } cases[] = {
    { 40, 1500, 8, 64, 5, 0 }, { 1, 733, 6, 64, 0, 1 }, { 7, 31, 4, 80, 3, 3 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
    const int n_q = cases[i].n_q, n_head = cases[i].n_head, d_head = cases[i].d_head;
    const int n_kv = quick ? MIN (cases[i].n_kv, 300) : cases[i].n_kv;
    const int d = n_head * d_head, q_stride = d + cases[i].pad,
              kv_stride = 2 * d + cases[i].pad, p_stride = n_kv + cases[i].pad;
    g_autofree float *q = gpu_test_random ((size_t) n_q * q_stride, -2.0f, 2.0f);
    g_autofree float *kv = gpu_test_random ((size_t) n_kv * kv_stride, -2.0f, 2.0f);
    const size_t pn = (size_t) n_q * p_stride;
    float *out[2];
    WhisperBackend *bes[2] = { gpu, cpu };
    for (int b = 0; b < 2; b++) {
      WhisperBackend *be = bes[b];
      g_autoptr (GError) error = NULL;
      float *dq = gpu_test_put (be, q, (size_t) n_q * q_stride);
      float *dkv = gpu_test_put (be, kv, (size_t) n_kv * kv_stride);
      g_autofree float *zero = g_new0 (float, pn);
      float *dp = gpu_test_put (be, zero, pn);
      g_assert_nonnull (be->ops->attention_probs);
      be->ops->attention_probs (be, dp, p_stride, dq, q_stride, dkv, kv_stride, n_q, n_kv,
                                cases[i].head, d_head);
      out[b] = gpu_test_get (be, dp, pn);
      free_on (be, dq), free_on (be, dkv), free_on (be, dp);
    }
    /* tolerance: |gpu - cpu| <= 1e-6 (1 + |cpu|) over the whole buffer (the
     * padding columns must stay untouched: 0 on both) */
    g_autofree char *what = g_strdup_printf ("attention_probs (n_q %d, n_kv %d, head %d of %d "
                                             "x %d)", n_q, n_kv, cases[i].head, n_head, d_head);
    gpu_test_assert_close (what, out[0], out[1], NULL, pn, 1.0, 1e-6);
    g_free (out[0]);
    g_free (out[1]);
  }
}

/* ---- logits ------------------------------------------------------------ */

enum { V = 51864, EOT = 50256, SOT = 50257, NO_TS = 50362, TS_BEGIN = 50363, BLANK = 220 };

static int
cmp_int32 (const void *a, const void *b)
{
  return (*(const int32_t *) a > *(const int32_t *) b) - (*(const int32_t *) a < *(const int32_t *) b);
}

static void
test_logits_select (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (4242);
  int32_t suppress[120];
  int n_suppress = 0;
  for (int i = 0; i < 90; i++)
    suppress[n_suppress++] = g_rand_int_range (r, 0, EOT);
  for (int id = SOT; id < SOT + 8; id++)
    suppress[n_suppress++] = id;
  qsort (suppress, n_suppress, sizeof (int32_t), cmp_int32);
  int u = 0;
  for (int i = 0; i < n_suppress; i++)
    if (u == 0 || suppress[u - 1] != suppress[i])
      suppress[u++] = suppress[i];
  n_suppress = u;

  WhisperLogitConfig configs[4];
  for (int k = 0; k < 4; k++) {
    configs[k] = (WhisperLogitConfig) {
      .n_vocab = V, .eot = EOT, .no_timestamps = NO_TS, .timestamp_begin = TS_BEGIN,
      .blank = BLANK, .suppress_blank = k != 1, .suppress_ids = suppress,
      .n_suppress_ids = k == 2 ? 0 : n_suppress, .timestamps = k != 3,
      .max_initial_timestamp_index = k == 0 ? 50 : -1,
    };
    gpu->ops->logits_prepare (gpu, &configs[k]);
  }

  g_autofree float *logits = g_new (float, V), *host = g_new (float, V);
  g_autoptr (GError) error = NULL;
  float *dev = gpu->ops->alloc (gpu, V, &error);
  g_assert_nonnull (dev);
  int mismatches = 0, fired = 0, built = 0, not_fired = 0, off_fired = 0;
  const int trials = size_q (400, 40);
  for (int trial = 0; trial < trials; trial++) {
    WhisperLogitConfig *c = &configs[trial % 4];
    /* a random history of text and timestamp tokens */
    WhisperLogitState s = { 0, FALSE, TRUE, -1 };
    const int n_hist = g_rand_int_range (r, 0, 6);
    int ts = TS_BEGIN + g_rand_int_range (r, 0, 20);
    for (int h = 0; h < n_hist; h++) {
      int32_t t;
      if (g_rand_boolean (r)) {
        ts += g_rand_int_range (r, 0, 3);
        t = ts;
      } else {
        t = g_rand_int_range (r, 0, EOT);
      }
      whisper_logit_state_push (&s, c, t);
    }
    /* Case 1 is built for the timestamp rule ("if the timestamps together
     * are more likely than any single text token, a timestamp must come",
     * engine/src/decode/whisper-logits.c): the history ends in a text token, so text
     * and the later timestamps are both allowed; one unsuppressed text
     * token (10) beats every single timestamp (8 to 9.5) and every other
     * token (below 8), but the timestamps' log-sum-exp (at least
     * 8 + log 1400, about 15) beats it. Argmax alone would choose the text
     * token; the rule must make it a timestamp (with timestamps on). */
    const gboolean rule_case = trial % 5 == 1;
    int32_t strong_text = -1;
    if (rule_case) {
      whisper_logit_state_push (&s, c, g_rand_int_range (r, 0, EOT));
      do
        strong_text = g_rand_int_range (r, 0, EOT);
      while (strong_text == BLANK ||
             bsearch (&strong_text, suppress, n_suppress, sizeof (int32_t), cmp_int32));
    }
    for (int i = 0; i < V; i++)
      logits[i] = (float) g_rand_double_range (r, -8.0, 8.0);
    switch (trial % 5) {
    case 1:
      for (int i = TS_BEGIN; i < V; i++)
        logits[i] = (float) g_rand_double_range (r, 8.0, 9.5);
      logits[strong_text] = 10.0f;
      break;
    case 2: /* exact ties at the maximum */
      for (int k = 0; k < 6; k++)
        logits[g_rand_int_range (r, 0, V)] = 30.0f;
      break;
    case 3: /* one strong text token */
      logits[g_rand_int_range (r, 0, EOT)] = 25.0f;
      break;
    default:
      break;
    }
    memcpy (host, logits, V * sizeof (float));
    WhisperLogitChoice want, got;
    whisper_logits_select (host, c, &s, &want);
    gpu->ops->upload (gpu, dev, logits, V * sizeof (float));
    gpu->ops->logits_select (gpu, dev, c, &s, &got);
    fired += want.token >= TS_BEGIN;
    if (got.token != want.token || !(fabsf (got.logprob - want.logprob) <= 1e-5f)) {
      if (mismatches++ < 10)
        g_printerr ("logits trial %d (config %d, n_sampled %d): gpu %d %.7g, cpu %d %.7g\n",
                    trial, trial % 4, s.n_sampled, got.token, got.logprob, want.token,
                    want.logprob);
    }
    if (rule_case && c->timestamps) {
      built++;
      /* both sides: the CPU reference and the device must apply the rule */
      if (want.token < TS_BEGIN || got.token < TS_BEGIN) {
        if (not_fired++ < 10)
          g_printerr ("logits trial %d (config %d): the timestamp rule did not fire: strongest "
                      "text token %d, chosen cpu %d, gpu %d (a timestamp is >= %d)\n",
                      trial, trial % 4, strong_text, want.token, got.token, TS_BEGIN);
      }
    } else if (rule_case) {
      /* timestamps off (config 3): no timestamp, the strong text token */
      if (want.token != strong_text || got.token != strong_text) {
        if (off_fired++ < 10)
          g_printerr ("logits trial %d (config %d, timestamps off): chose cpu %d, gpu %d, "
                      "not the strongest text token %d\n",
                      trial, trial % 4, want.token, got.token, strong_text);
      }
    }
  }
  g_test_message ("logits_select: %d of %d trials chose a timestamp, %d mismatches; the "
                  "timestamp rule fired in %d of the %d trials built for it",
                  fired, trials, mismatches, built - not_fired, built);
  if (mismatches)
    g_test_fail ();
  /* the trials built for the rule exist (trials 1, 6, 11, 16 with
   * timestamps on, whatever the size), and it fired in every one */
  g_assert_cmpint (built, >=, 3);
  if (not_fired || off_fired) {
    g_printerr ("logits: the timestamp rule did not fire in %d of %d trials built for it; %d "
                "trials without timestamps chose otherwise than the strongest text token\n",
                not_fired, built, off_fired);
    g_test_fail ();
  }

  /* a config whose fields change is prepared again: config 2 (no suppress
   * list) gets the list, and its strongest logit on a suppressed token */
  for (int round = 0; round < 2; round++) {
    WhisperLogitConfig *c = &configs[2];
    c->n_suppress_ids = round == 0 ? 0 : n_suppress;
    gpu->ops->logits_prepare (gpu, c);
    WhisperLogitState s = { 3, FALSE, FALSE, -1 };
    for (int i = 0; i < V; i++)
      logits[i] = (float) g_rand_double_range (r, -8.0, 8.0);
    logits[suppress[0]] = 30.0f;
    memcpy (host, logits, V * sizeof (float));
    WhisperLogitChoice want, got;
    whisper_logits_select (host, c, &s, &want);
    gpu->ops->upload (gpu, dev, logits, V * sizeof (float));
    gpu->ops->logits_select (gpu, dev, c, &s, &got);
    g_test_message ("prepared again with %d suppressed ids: gpu %d, cpu %d", c->n_suppress_ids,
                    got.token, want.token);
    g_assert_cmpint (want.token == suppress[0], ==, round == 0);
    g_assert_cmpint (got.token, ==, want.token);
  }
  for (int k = 0; k < 4; k++)
    gpu->ops->logits_release (gpu, &configs[k]);
  free_on (gpu, dev);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  quick = g_strcmp0 (g_getenv ("WHISPER_GPU_TEST_QUICK"), "1") == 0;
  gpu = gpu_test_cuda_or_skip ();
  cpu = gpu_test_cpu ();
  g_test_add_func ("/cuda/layer-norm", test_layer_norm);
  g_test_add_func ("/cuda/linear-gemv", test_linear_gemv);
  g_test_add_func ("/cuda/linear-gemm", test_linear_gemm);
  g_test_add_func ("/cuda/linear-half-range", test_linear_half_range);
  g_test_add_func ("/cuda/weight-upload", test_weight_upload);
  g_test_add_func ("/cuda/weight-upload-qblock", test_weight_upload_qblock);
  g_test_add_func ("/cuda/conv1d-gelu", test_conv1d);
  g_test_add_func ("/cuda/add", test_add);
  g_test_add_func ("/cuda/copy-rows", test_copy_rows);
  g_test_add_func ("/cuda/embed", test_embed);
  g_test_add_func ("/cuda/attention", test_attention);
  g_test_add_func ("/cuda/attention-probs", test_attention_probs);
  g_test_add_func ("/cuda/logits-select", test_logits_select);
  const int rc = g_test_run ();
  whisper_backend_destroy (gpu_fast);
  whisper_backend_destroy (gpu);
  whisper_backend_destroy (cpu);
  return rc;
}
