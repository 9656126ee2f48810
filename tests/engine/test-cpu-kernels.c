/* test-cpu-kernels.c: the CPU backend's vector kernels against plain double
 * precision references on seeded random inputs, and the fork-join pool.
 * Run twice by meson: with the AVX2 kernels and with WHISPER_CPU_GENERIC=1. */
#include "cpu-kernels.h"
#include "thread-pool.h"
#include "whisper-model.h"

#include <math.h>

static float
rnd (GRand *r)
{
  return (float) g_rand_double_range (r, -1.0, 1.0);
}

static void
test_softmax (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (7);
  const int sizes[] = { 1, 7, 8, 9, 64, 1500 };
  for (gsize s = 0; s < G_N_ELEMENTS (sizes); s++) {
    const int n = sizes[s];
    g_autofree float *x = g_new (float, n);
    g_autofree double *ref = g_new (double, n);
    for (int i = 0; i < n; i++)
      x[i] = rnd (r) * 40.0f; /* spans exp underflow of the smallest terms */
    float max = -INFINITY;
    double sum = 0.0;
    for (int i = 0; i < n; i++)
      max = MAX (max, x[i]);
    /* the reference takes the same float difference x - max, the one
     * rounding step both share */
    for (int i = 0; i < n; i++)
      sum += (ref[i] = exp ((double) (x[i] - max)));
    whisper_cpu_softmax (x, n);
    for (int i = 0; i < n; i++) {
      /* tolerance: 4 ulp relative + 1e-30 absolute (flushed tiny terms) */
      const double want = ref[i] / sum;
      g_assert_cmpfloat (fabs (x[i] - want), <=, 4 * 1.2e-7 * want + 1e-30);
    }
  }
}

static void
test_sum_exp (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (19);
  const int n = 51867; /* a vocabulary's size, with a scalar tail */
  g_autofree float *x = g_new (float, n);
  float max = -INFINITY;
  for (int i = 0; i < n; i++) {
    x[i] = i % 97 == 0 ? -INFINITY : rnd (r) * 30.0f; /* suppressed entries give 0 */
    max = MAX (max, x[i]);
  }
  double want = 0.0;
  for (int i = 0; i < n; i++)
    want += exp ((double) x[i] - max);
  const double got = whisper_cpu_sum_exp (x, n, max);
  g_assert_cmpfloat (fabs (got - want), <=, 2e-7 * want);
}

static void
test_gemv (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (11);
  const int rows = 37, cols = 389; /* odd sizes: vector body and scalar tails */
  g_autofree float *w = g_new (float, rows * cols);
  g_autofree guint16 *wh = g_new (guint16, rows * cols);
  g_autofree float *x = g_new (float, cols);
  g_autofree float *y = g_new (float, rows);
  for (int i = 0; i < rows * cols; i++) {
    /* values exactly representable in half, so both paths see equal weights */
    w[i] = roundf (rnd (r) * 1024.0f) / 1024.0f;
  }
  g_assert_true (whisper_float_to_half_exact_n (wh, w, rows * cols));
  for (int i = 0; i < cols; i++)
    x[i] = rnd (r);

  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < rows; i++)
      y[i] = 1.0f;
    if (pass == 0)
      whisper_cpu_gemv_f32 (y, w, x, 3, rows, cols, TRUE);
    else
      whisper_cpu_gemv_f16 (y, wh, x, 3, rows, cols, TRUE);
    for (int i = 0; i < rows; i++) {
      double ref = 0.0;
      for (int c = 0; c < cols; c++)
        ref += (double) w[i * cols + c] * x[c];
      const double want = i < 3 ? 1.0 : 1.0 + ref;
      /* fp32 accumulation of 389 terms of magnitude <= 1: 1e-4 absolute */
      g_assert_cmpfloat (fabs (y[i] - want), <=, 1e-4);
    }
  }
}

static void
test_gemv_packed (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (13);
  const int rows = 48, cols = 392;
  g_autofree float *w = g_new (float, rows * cols);
  g_autofree guint16 *wh = g_new (guint16, rows * cols);
  g_autofree guint16 *packed = g_new (guint16, rows * cols);
  g_autofree float *x = g_new (float, cols);
  g_autofree float *y_rows = g_new (float, rows);
  g_autofree float *y_packed = g_new (float, rows);
  g_autofree float *unpacked = g_new (float, rows * cols);

  g_assert_true (whisper_cpu_packable (rows, cols));
  g_assert_false (whisper_cpu_packable (rows + 1, cols));
  g_assert_false (whisper_cpu_packable (rows, cols - 4));
  for (int i = 0; i < rows * cols; i++)
    w[i] = roundf (rnd (r) * 1024.0f) / 1024.0f;
  for (int i = 0; i < cols; i++)
    x[i] = rnd (r);
  g_assert_true (whisper_float_to_half_exact_n (wh, w, rows * cols));
  whisper_cpu_pack_rows (packed, wh, rows, cols);

  /* the packed product gives the same bits as the row-major one, over a
   * sub-range of rows, with and without accumulation */
  for (int pass = 0; pass < 2; pass++) {
    const gboolean acc = pass == 1;
    for (int i = 0; i < rows; i++)
      y_rows[i] = y_packed[i] = 0.5f + i;
    whisper_cpu_gemv_f16 (y_rows, wh, x, 8, 40, cols, acc);
    whisper_cpu_gemv_f16_packed (y_packed, packed, x, 8, 40, cols, acc);
    g_assert_cmpmem (y_rows, rows * sizeof (float), y_packed, rows * sizeof (float));
    g_assert_cmpfloat (y_packed[7], ==, 7.5f);  /* outside the range: untouched */
    g_assert_cmpfloat (y_packed[40], ==, 40.5f);
  }

  /* unpacking any row range gives the original matrix */
  whisper_cpu_unpack_rows (unpacked, packed, 0, rows, cols);
  g_assert_cmpmem (unpacked, rows * cols * sizeof (float), w, rows * cols * sizeof (float));
  whisper_cpu_unpack_rows (unpacked, packed, 13, 14, cols);
  g_assert_cmpmem (unpacked, cols * sizeof (float), w + 13 * cols, cols * sizeof (float));
}

static void
test_half_conversions (void)
{
  const float exact[] = { 0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f /* min normal */,
                          5.9604644775390625e-08f /* min subnormal */, 0.333251953125f };
  guint16 h[G_N_ELEMENTS (exact)];
  float back[G_N_ELEMENTS (exact)];
  g_assert_true (whisper_float_to_half_exact_n (h, exact, G_N_ELEMENTS (exact)));
  whisper_half_to_float_n (back, h, G_N_ELEMENTS (exact));
  for (gsize i = 0; i < G_N_ELEMENTS (exact); i++) {
    g_assert_cmpfloat (back[i], ==, exact[i]);
    g_assert_cmpfloat (whisper_half_to_float (h[i]), ==, exact[i]);
  }
  const float inexact[] = { 0.1f, 65520.0f, 1e-9f, 1.0f + 1.0f / 4096.0f };
  for (gsize i = 0; i < G_N_ELEMENTS (inexact); i++) {
    guint16 out;
    g_assert_false (whisper_float_to_half_exact_n (&out, &inexact[i], 1));
  }
}

static void
test_dot_axpy (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (3);
  const int n = 67;
  float a[67], b[67], y[67];
  for (int i = 0; i < n; i++) {
    a[i] = rnd (r);
    b[i] = rnd (r);
    y[i] = rnd (r);
  }
  double ref = 0.0;
  for (int i = 0; i < n; i++)
    ref += (double) a[i] * b[i];
  g_assert_cmpfloat (fabs (whisper_cpu_dot (a, b, n) - ref), <=, 1e-5);
  float want[67];
  for (int i = 0; i < n; i++)
    want[i] = y[i] + 0.5f * a[i];
  whisper_cpu_axpy (y, 0.5f, a, n);
  for (int i = 0; i < n; i++)
    g_assert_cmpfloat (fabs (y[i] - want[i]), <=, 1e-6);
}

/* Random queries and a K|V cache of three 64-wide heads, for the attention
 * kernels at key counts 301, 300 and 7 (odd and even: the kernels pair
 * keys). */
#define ATTN_DH 64
#define ATTN_HEADS 3
#define ATTN_STRIDE (2 * ATTN_HEADS * ATTN_DH)
#define ATTN_MAX_KEYS 301
static const int attn_key_counts[] = { 301, 300, 7 };

typedef struct {
  float q[ATTN_HEADS * ATTN_DH];
  float kv[ATTN_MAX_KEYS * ATTN_STRIDE];
  float scratch[WHISPER_CPU_ATTENTION_SCRATCH (ATTN_MAX_KEYS, ATTN_DH, ATTN_HEADS)];
} AttentionCase;

static AttentionCase *
attention_case_new (guint32 seed)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (seed);
  AttentionCase *c = g_new (AttentionCase, 1);
  for (gsize i = 0; i < G_N_ELEMENTS (c->kv); i++)
    c->kv[i] = rnd (r);
  for (gsize i = 0; i < G_N_ELEMENTS (c->q); i++)
    c->q[i] = rnd (r) * 3.0f;
  return c;
}

/* out = the heads [h0, h0 + n_heads) of the case over n_kv keys. */
static void
attention_case_run (AttentionCase *c, float *out, int h0, int n_heads, int n_kv)
{
  const int off = h0 * ATTN_DH;
  whisper_cpu_attention_heads (out, c->q + off, c->kv + off, c->kv + ATTN_HEADS * ATTN_DH + off,
                               ATTN_STRIDE, n_kv, ATTN_DH, n_heads, 0.125f, c->scratch);
}

/* Three heads at once give the bits of three one-head calls. */
static void
test_attention_heads (void)
{
  g_autofree AttentionCase *c = attention_case_new (17);
  float together[ATTN_HEADS * ATTN_DH], alone[ATTN_HEADS * ATTN_DH];
  for (gsize t = 0; t < G_N_ELEMENTS (attn_key_counts); t++) {
    attention_case_run (c, together, 0, ATTN_HEADS, attn_key_counts[t]);
    for (int h = 0; h < ATTN_HEADS; h++)
      attention_case_run (c, alone + h * ATTN_DH, h, 1, attn_key_counts[t]);
    g_assert_cmpmem (together, sizeof together, alone, sizeof alone);
  }
}

/* The AVX-512 value sums give the bits of the AVX2 ones. Reported as
 * skipped, not passed, on a CPU without AVX-512 (or with it turned off):
 * there the two runs below would both take the AVX2 path. */
static void
test_attention_avx512 (void)
{
  if (!whisper_cpu_have_avx512 ()) {
    g_test_skip ("no AVX-512 on this CPU (or WHISPER_CPU_NO_AVX512 / WHISPER_CPU_GENERIC "
                 "set): nothing to compare with the AVX2 sums");
    return;
  }
  g_autofree AttentionCase *c = attention_case_new (19);
  float avx512[ATTN_HEADS * ATTN_DH], avx2[ATTN_HEADS * ATTN_DH];
  for (gsize t = 0; t < G_N_ELEMENTS (attn_key_counts); t++) {
    attention_case_run (c, avx512, 0, ATTN_HEADS, attn_key_counts[t]);
    whisper_cpu_features_set_avx512 (FALSE);
    g_assert_false (whisper_cpu_have_avx512 ());
    attention_case_run (c, avx2, 0, ATTN_HEADS, attn_key_counts[t]);
    whisper_cpu_features_set_avx512 (TRUE);
    g_assert_cmpmem (avx512, sizeof avx512, avx2, sizeof avx2);
  }
}

static void
test_bias_gelu (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (5);
  const int n = 1003;
  g_autofree float *x = g_new (float, n);
  g_autofree float *bias = g_new (float, n);
  g_autofree double *want = g_new (double, n);
  for (int i = 0; i < n; i++) {
    x[i] = rnd (r) * 6.0f;
    bias[i] = rnd (r);
    const double v = (double) x[i] + bias[i];
    want[i] = 0.5 * v * (1.0 + erf (v / sqrt (2.0)));
  }
  whisper_cpu_bias_gelu (x, bias, n, TRUE);
  for (int i = 0; i < n; i++)
    g_assert_cmpfloat (fabs (x[i] - want[i]), <=, 2e-6); /* erf error < 5e-7, |x| < 7 */
}

static void
test_attention_row (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (9);
  const int n_kv = 301, stride = 3 * 64;
  const int dims[] = { 64, 12 }; /* the AVX2 kernel (dh % 8 == 0) and the portable one */
  g_autofree float *k = g_new (float, n_kv * stride);
  g_autofree float *v = g_new (float, n_kv * stride);
  g_autofree float *scores = g_new (float, WHISPER_CPU_ATTENTION_SCRATCH (n_kv, 64, 1));
  g_autofree double *p = g_new (double, n_kv);
  for (int i = 0; i < n_kv * stride; i++) {
    k[i] = rnd (r);
    v[i] = rnd (r);
  }
  for (gsize t = 0; t < G_N_ELEMENTS (dims); t++) {
    const int dh = dims[t];
    float q[64], out[64];
    for (int c = 0; c < dh; c++)
      q[c] = rnd (r) * 3.0f;
    const double scale = 1.0 / sqrt (dh);
    double max = -INFINITY, sum = 0.0;
    for (int j = 0; j < n_kv; j++) {
      double s = 0.0;
      for (int c = 0; c < dh; c++)
        s += (double) q[c] * k[j * stride + c];
      p[j] = s * scale;
      max = MAX (max, p[j]);
    }
    for (int j = 0; j < n_kv; j++)
      sum += (p[j] = exp (p[j] - max));
    whisper_cpu_attention_heads (out, q, k, v, stride, n_kv, dh, 1, (float) scale, scores);
    for (int c = 0; c < dh; c++) {
      double want = 0.0;
      for (int j = 0; j < n_kv; j++)
        want += p[j] / sum * v[j * stride + c];
      g_assert_cmpfloat (fabs (out[c] - want), <=, 1e-5); /* fp32 sums of 301 terms */
    }
  }
}

static void
count_task (int task, int thread, gpointer data)
{
  gint *hits = data;
  g_assert_cmpint (thread, >=, 0);
  g_atomic_int_inc (&hits[task]);
}

static void
test_thread_pool (void)
{
  WhisperThreadPool *pool = whisper_thread_pool_new (3);
  gint hits[100];
  for (int round = 0; round < 200; round++) {
    const int n = 1 + round % 100;
    for (int i = 0; i < 100; i++)
      hits[i] = 0;
    whisper_thread_pool_run (pool, n, count_task, hits);
    for (int i = 0; i < 100; i++)
      g_assert_cmpint (hits[i], ==, i < n ? 1 : 0);
  }
  whisper_thread_pool_free (pool);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cpu-kernels/softmax", test_softmax);
  g_test_add_func ("/cpu-kernels/sum-exp", test_sum_exp);
  g_test_add_func ("/cpu-kernels/gemv", test_gemv);
  g_test_add_func ("/cpu-kernels/gemv-packed", test_gemv_packed);
  g_test_add_func ("/cpu-kernels/half", test_half_conversions);
  g_test_add_func ("/cpu-kernels/dot-axpy", test_dot_axpy);
  g_test_add_func ("/cpu-kernels/bias-gelu", test_bias_gelu);
  g_test_add_func ("/cpu-kernels/attention-row", test_attention_row);
  g_test_add_func ("/cpu-kernels/attention-heads", test_attention_heads);
  g_test_add_func ("/cpu-kernels/attention-avx512", test_attention_avx512);
  g_test_add_func ("/cpu-kernels/thread-pool", test_thread_pool);
  return g_test_run ();
}
