/* test-cpu-kernels.c: the CPU backend's vector kernels against plain double
 * precision references on seeded random inputs, the fork-join pool, and
 * the sparse allocation of the decoder caches. Run twice by meson: with the AVX2 kernels and with WHISPER_CPU_GENERIC=1. */
#include "aligned-memory.h"
#include "backend.h"
#include "cpu-amx-linear.h"
#include "cpu-kernels.h"
#include "cpu-sgemm.h"
#include "thread-pool.h"
#include "whisper-model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* whisper_cpu_max and whisper_cpu_sub_in_double against their scalar
 * loops: ties (the first index), -inf everywhere, NaNs, scalar tails. */
static void
test_max (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (23);
  const int sizes[] = { 0, 1, 7, 8, 9, 1501, 51864, 51867 };
  for (gsize s = 0; s < G_N_ELEMENTS (sizes); s++)
    for (int kind = 0; kind < 4; kind++) {
      const int n = sizes[s];
      g_autofree float *x = g_new0 (float, MAX (n, 1));
      for (int i = 0; i < n; i++) {
        switch (kind) {
        case 0: x[i] = rnd (r) * 30.0f; break;
        case 1: x[i] = roundf (rnd (r) * 3.0f); break;  /* many ties */
        case 2: x[i] = -INFINITY; break;
        default: x[i] = i % 5 == 0 ? NAN : rnd (r); break;
        }
      }
      float want = -INFINITY;
      int want_arg = 0;
      for (int i = 0; i < n; i++)
        if (x[i] > want) {
          want = x[i];
          want_arg = i;
        }
      int arg = -1;
      const float got = whisper_cpu_max (x, n, &arg);
      g_assert_true (memcmp (&got, &want, sizeof got) == 0);
      g_assert_cmpint (arg, ==, want_arg);
      g_assert_true (whisper_cpu_max (x, n, NULL) == got || n == 0);

      if (kind == 0) {
        g_autofree float *a = g_memdup2 (x, MAX (n, 1) * sizeof (float));
        const double c = 2.718281828459045 * (s + 1);
        for (int i = 0; i < n; i++)
          x[i] = (float) ((double) x[i] - c);
        whisper_cpu_sub_in_double (a, n, c);
        g_assert_true (memcmp (a, x, (size_t) n * sizeof (float)) == 0);
      }
    }
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

/* float32 -> float16 of precision=fast's cross K/V: round to nearest even,
 * overflow to infinity, subnormals; and the head-major layout. */
static void
test_kv_to_half (void)
{
  const struct { float in; float want; } cases[] = {
    { 1.0f, 1.0f }, { -2.5f, -2.5f }, { 65504.0f, 65504.0f }, { 65519.0f, 65504.0f },
    { 65520.0f, INFINITY }, { -1e6f, -INFINITY }, { 1.0f + 1.0f / 2048.0f, 1.0f } /* tie: even */,
    { 1.0f + 3.0f / 2048.0f, 1.0f + 1.0f / 512.0f } /* tie: even, up */,
    { 6.103515625e-05f, 6.103515625e-05f } /* smallest normal */,
    { 5.9604644775390625e-08f, 5.9604644775390625e-08f } /* smallest subnormal */,
    { 2.98023223876953125e-08f, 0.0f } /* half of it: tie, to even 0 */,
    { 4.0e-08f, 5.9604644775390625e-08f }, { 1e-9f, 0.0f }, { 0.0f, 0.0f },
  };
  /* one key head and one value head of 64 over 16 rows: every case sits
   * in row 0 of the key head, rows 1.. hold random values */
  enum { N = 16, DH = 64, STRIDE = 2 * DH };
  g_autoptr (GRand) r = g_rand_new_with_seed (23);
  float kv[N * STRIDE];
  guint16 half[2 * N * DH];
  for (int i = 0; i < N * STRIDE; i++)
    kv[i] = rnd (r) * 100.0f;
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    kv[i] = cases[i].in;
  whisper_cpu_kv_to_half_heads (half, kv, STRIDE, N, 1, DH);
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    g_assert_cmpfloat (whisper_half_to_float (half[i]), ==, cases[i].want);
  for (int j = 0; j < N; j++)
    for (int c = 0; c < 2 * DH; c++) {
      const float v = kv[j * STRIDE + c];
      const float got = whisper_half_to_float (half[(c / DH) * N * DH + j * DH + c % DH]);
      if (j == 0 && c < (int) G_N_ELEMENTS (cases))
        continue;
      /* the nearest half: within half a unit in the last place (10 bits) */
      int e;
      frexpf (got, &e);
      g_assert_cmpfloat (fabsf (got - v), <=, ldexpf (1.0f, e - 12));
    }
}

/* The float16-K/V attention against a double reference on the rounded keys
 * and values, and each query alone giving the bits it gets among others
 * (the beams of a step). */
static void
test_attention_f16kv (void)
{
  enum { DH = 64, MAX_KV = 301, MAX_Q = 5 };
  const int key_counts[] = { 301, 300, 33, 16, 7, 1 };
  g_autoptr (GRand) r = g_rand_new_with_seed (29);
  g_autofree float *kv = g_new (float, MAX_KV * 2 * DH);
  g_autofree guint16 *half = g_new (guint16, MAX_KV * 2 * DH);
  g_autofree float *scratch = g_new (float, WHISPER_CPU_ATTENTION_F16KV_SCRATCH (MAX_Q, MAX_KV,
                                                                             DH));
  g_autofree double *p = g_new (double, MAX_KV);
  float q[MAX_Q * DH], out[MAX_Q * DH], alone[DH];
  for (int i = 0; i < MAX_KV * 2 * DH; i++)
    kv[i] = rnd (r);
  for (int i = 0; i < MAX_Q * DH; i++)
    q[i] = rnd (r) * 3.0f;
  for (gsize t = 0; t < G_N_ELEMENTS (key_counts); t++) {
    const int n_kv = key_counts[t];
    whisper_cpu_kv_to_half_heads (half, kv, 2 * DH, n_kv, 1, DH);
    const guint16 *k = half, *v = half + (size_t) n_kv * DH;
    for (int n_q = 1; n_q <= MAX_Q; n_q++) {
      whisper_cpu_attention_f16kv (out, DH, q, DH, k, v, n_q, n_kv, DH, 0.125f, scratch);
      for (int i = 0; i < n_q; i++) {
        double max = -INFINITY, sum = 0.0;
        for (int j = 0; j < n_kv; j++) {
          double s = 0.0;
          for (int c = 0; c < DH; c++)
            s += (double) q[i * DH + c] * whisper_half_to_float (k[j * DH + c]);
          p[j] = s * 0.125;
          max = MAX (max, p[j]);
        }
        for (int j = 0; j < n_kv; j++)
          sum += (p[j] = exp (p[j] - max));
        for (int c = 0; c < DH; c++) {
          double want = 0.0;
          for (int j = 0; j < n_kv; j++)
            want += p[j] / sum * whisper_half_to_float (v[j * DH + c]);
          g_assert_cmpfloat (fabs (out[i * DH + c] - want), <=, 1e-5);
        }
        whisper_cpu_attention_f16kv (alone, DH, q + i * DH, DH, k, v, 1, n_kv, DH, 0.125f,
                                     scratch);
        g_assert_cmpmem (alone, sizeof alone, out + i * DH, sizeof alone);
      }
    }
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

/* ---- several input vectors at once (batched decode steps) ----------- */

#define MAXN WHISPER_CPU_GEMV_MAX_ROWS

/* Weights exactly representable in half (the float32 and float16 kernels
 * see equal values), n_vec input vectors of cols floats. */
typedef struct {
  int rows, cols;
  float *w;
  guint16 *wh;
  guint16 *packed; /* NULL where the shape is not packable */
  float *x;        /* [MAXN, cols] */
} GemvCase;

static GemvCase *
gemv_case_new (int rows, int cols, guint32 seed, gboolean with_f32)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (seed);
  GemvCase *c = g_new0 (GemvCase, 1);
  const size_t n = (size_t) rows * cols;
  c->rows = rows;
  c->cols = cols;
  c->w = g_new (float, n);
  c->wh = g_new (guint16, n);
  for (size_t i = 0; i < n; i++)
    c->w[i] = roundf (rnd (r) * 1024.0f) / 1024.0f;
  g_assert_true (whisper_float_to_half_exact_n (c->wh, c->w, n));
  if (!with_f32)
    g_clear_pointer (&c->w, g_free);
  if (whisper_cpu_packable (rows, cols)) {
    c->packed = g_new (guint16, n);
    whisper_cpu_pack_rows (c->packed, c->wh, rows, cols);
  }
  c->x = g_new (float, (size_t) MAXN * cols);
  for (size_t i = 0; i < (size_t) MAXN * cols; i++)
    c->x[i] = rnd (r);
  return c;
}

static void
gemv_case_free (GemvCase *c)
{
  g_free (c->w);
  g_free (c->wh);
  g_free (c->packed);
  g_free (c->x);
  g_free (c);
}

enum { KIND_F32, KIND_F16, KIND_PACKED };

static void
gemv_one (const GemvCase *c, int kind, float *y, const float *x, int r0, int r1, gboolean acc)
{
  if (kind == KIND_F32)
    whisper_cpu_gemv_f32 (y, c->w, x, r0, r1, c->cols, acc);
  else if (kind == KIND_F16)
    whisper_cpu_gemv_f16 (y, c->wh, x, r0, r1, c->cols, acc);
  else
    whisper_cpu_gemv_f16_packed (y, c->packed, x, r0, r1, c->cols, acc);
}

static void
gemv_many (const GemvCase *c, int kind, float *y, int y_stride, int n, int r0, int r1,
           gboolean acc)
{
  if (kind == KIND_F32)
    whisper_cpu_gemv_f32_rows (y, y_stride, c->w, c->x, c->cols, n, r0, r1, c->cols, acc);
  else if (kind == KIND_F16)
    whisper_cpu_gemv_f16_rows (y, y_stride, c->wh, c->x, c->cols, n, r0, r1, c->cols, acc);
  else
    whisper_cpu_gemv_f16_packed_rows (y, y_stride, c->packed, c->x, c->cols, n, r0, r1, c->cols,
                                      acc);
}

/* For each n of ns: the n-vector kernel over [r0, r1) gives, vector by
 * vector, the bits of the one-vector kernel over the same range, and
 * leaves the other rows alone. */
static void
check_gemv_rows (const GemvCase *c, int kind, const int *ns, int n_ns, int r0, int r1)
{
  const int rows = c->rows, y_stride = rows + 3; /* a stride that is not the width */
  g_autofree float *want = g_new (float, (size_t) MAXN * y_stride);
  g_autofree float *got = g_new (float, (size_t) MAXN * y_stride);
  for (int pass = 0; pass < 2; pass++) {
    const gboolean acc = pass == 1;
    for (size_t i = 0; i < (size_t) MAXN * y_stride; i++)
      want[i] = 0.25f * (float) (i % 1000);
    int max_n = 0;
    for (int t = 0; t < n_ns; t++)
      max_n = MAX (max_n, ns[t]);
    for (int i = 0; i < max_n; i++)
      gemv_one (c, kind, want + (size_t) i * y_stride, c->x + (size_t) i * c->cols, r0, r1, acc);
    for (int t = 0; t < n_ns; t++) {
      const int n = ns[t];
      for (size_t i = 0; i < (size_t) MAXN * y_stride; i++)
        got[i] = 0.25f * (float) (i % 1000);
      gemv_many (c, kind, got, y_stride, n, r0, r1, acc);
      for (int i = 0; i < n; i++)
        if (memcmp (got + (size_t) i * y_stride, want + (size_t) i * y_stride,
                    rows * sizeof (float)) != 0)
          g_error ("kind %d, %d x %d, rows [%d, %d), n %d, %s: vector %d differs from its "
                   "one-vector product", kind, rows, c->cols, r0, r1, n,
                   acc ? "accumulate" : "store", i);
      for (int i = n; i < MAXN; i++) /* vectors beyond n: untouched */
        for (int k = 0; k < rows; k++)
          g_assert_cmpfloat (got[(size_t) i * y_stride + k], ==,
                             0.25f * (float) (((size_t) i * y_stride + k) % 1000));
    }
  }
}

/* the decoder's shapes: d x d, 3d x d, 4d x d, d x 4d for d 384 (tiny),
 * 512 (base), 768, 1024, 1280, a few odd ones, and the logits matrices
 * (tiny.en 51864 x 384: packed; base 51865 x 512: row-major, 51865 not a
 * multiple of 8) */
typedef struct {
  int rows, cols;
} Shape;

static const Shape gemv_shapes[] = {
  { 8, 384 },    { 384, 384 },   { 1152, 384 },  { 1536, 384 }, { 384, 1536 },
  { 512, 512 },  { 2048, 512 },  { 512, 2048 },  { 768, 768 },  { 3072, 768 },
  { 1024, 1024 }, { 1024, 4096 }, { 1280, 1280 }, { 1280, 5120 }, { 37, 389 },
  { 45, 384 },   { 9, 13 },      { 3, 64 },
};

static void
test_gemv_rows (void)
{
  int all[MAXN];
  for (int i = 0; i < MAXN; i++)
    all[i] = i + 1;
  /* every n on the small shapes; on the large ones (the portable kernels
   * are slow) odd and even counts, the largest, and the second range on
   * f16 only */
  const int some[] = { 2, 3, 5, MAXN };
  /* the portable kernels (one row at a time, ~7 ns per weight) see the
   * large shapes' first 64 rows only: their sums are per row, and the
   * meson test must stay within its 30 s */
  const gboolean portable = !whisper_cpu_have_avx2 ();
  for (gsize s = 0; s < G_N_ELEMENTS (gemv_shapes); s++) {
    const int rows = gemv_shapes[s].rows, cols = gemv_shapes[s].cols;
    const gboolean large = (size_t) rows * cols > (portable ? 150000 : 1000000);
    GemvCase *c = gemv_case_new (rows, cols, 100 + s, TRUE);
    for (int kind = KIND_F32; kind <= KIND_PACKED; kind++) {
      if (kind == KIND_PACKED && !c->packed)
        continue;
      check_gemv_rows (c, kind, large ? some : all, large ? G_N_ELEMENTS (some) : MAXN, 0,
                       large && portable ? 64 : rows);
      /* a share of rows starting past 0, as a thread's (multiples of 8) */
      if (rows >= 24 && !large)
        check_gemv_rows (c, kind, all, MAXN, 8, rows / 16 * 8);
    }
    gemv_case_free (c);
  }
}

/* The logits shapes, float16 only (float32 would be 200 MB): fewer n, the
 * two-thread shares of the backend too. */
static void
test_gemv_rows_logits (void)
{
  const Shape logits[] = { { 51864, 384 }, { 51865, 512 } };
  const int ns[] = { 2, 5, MAXN, 15 };
  for (gsize s = 0; s < G_N_ELEMENTS (logits); s++) {
    const int rows = logits[s].rows, cols = logits[s].cols;
    GemvCase *c = gemv_case_new (rows, cols, 200 + s, FALSE);
    const int share = ((rows + 1) / 2 + 7) / 8 * 8;
    if (s == 0)
      g_assert_nonnull (c->packed);
    else
      g_assert_null (c->packed);
    /* portable kernels: the last 1024 rows only (see test_gemv_rows) */
    const int first = whisper_cpu_have_avx2 () ? 0 : (rows - 1024) / 8 * 8;
    for (int kind = KIND_F16; kind <= KIND_PACKED; kind++) {
      if (kind == KIND_PACKED && !c->packed)
        continue;
      check_gemv_rows (c, kind, ns, 3, first, rows);
      if (first == 0)
        check_gemv_rows (c, kind, ns + 3, 1, share, rows); /* the second thread's share */
    }
    gemv_case_free (c);
  }
}

/* A linear through the backend's table: W [rows, cols] of multiples of
 * 1/1024 (exact halves, kept float16, unless as_f32 moves one off them and
 * the backend keeps float32), a bias and maxn input rows, seeded. */
typedef struct {
  int rows, cols, maxn;
  float *w, *bias, *x, *want, *got;
  guint16 *wh;
  WhisperWeight wt;
} LinearRows;

static void
linear_rows_init (LinearRows *c, WhisperBackend *be, int rows, int cols, int maxn, guint32 seed,
                  gboolean as_f32)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (seed);
  g_autoptr (GError) error = NULL;
  const size_t nw = (size_t) rows * cols;
  memset (c, 0, sizeof *c);
  c->rows = rows;
  c->cols = cols;
  c->maxn = maxn;
  c->w = g_new (float, nw);
  c->wh = g_new (guint16, nw);
  c->bias = g_new (float, rows);
  c->x = g_new (float, (size_t) maxn * cols);
  c->want = g_new (float, (size_t) maxn * rows);
  c->got = g_new (float, (size_t) maxn * rows);
  for (size_t i = 0; i < nw; i++)
    c->w[i] = roundf (rnd (r) * 1024.0f) / 1024.0f;
  if (as_f32) /* not exactly halves: the backend keeps float32 */
    c->w[0] += 1e-6f;
  g_assert_true (whisper_float_to_half_exact_n (c->wh, c->w, nw) == !as_f32);
  for (int i = 0; i < rows; i++)
    c->bias[i] = rnd (r);
  for (size_t i = 0; i < (size_t) maxn * cols; i++)
    c->x[i] = rnd (r);
  const WhisperTensor t = { as_f32 ? (const void *) c->w : (const void *) c->wh,
                            as_f32 ? WHISPER_DTYPE_F32 : WHISPER_DTYPE_F16, NULL, rows, cols };
  g_assert_true (be->ops->weight_upload (be, &c->wt, &t, &error));
  g_assert_no_error (error);
}

static void
linear_rows_clear (LinearRows *c, WhisperBackend *be)
{
  be->ops->weight_free (be, &c->wt);
  g_free (c->w);
  g_free (c->wh);
  g_free (c->bias);
  g_free (c->x);
  g_free (c->want);
  g_free (c->got);
}

/* The outputs start as 0.5 * (index % 777), for the accumulating flag. */
static void
linear_rows_fill (float *y, size_t n)
{
  for (size_t i = 0; i < n; i++)
    y[i] = 0.5f * (float) (i % 777);
}

/* c->want = the maxn rows, each by its own one-row call. */
static void
linear_rows_one_by_one (LinearRows *c, WhisperBackend *be, const float *bias,
                        WhisperLinearFlags flags)
{
  linear_rows_fill (c->want, (size_t) c->maxn * c->rows);
  for (int i = 0; i < c->maxn; i++)
    be->ops->linear (be, c->want + (size_t) i * c->rows, c->rows, c->x + (size_t) i * c->cols,
                     c->cols, &c->wt, bias, 1, flags);
}

/* One call of n rows (n = 2, 2 + step, ... <= maxn) gives every row the
 * bits of its one-row call (c->want). */
static void
linear_rows_check_bits (LinearRows *c, WhisperBackend *be, const float *bias,
                        WhisperLinearFlags flags, int step, const char *what)
{
  for (int n = 2; n <= c->maxn; n += step) {
    linear_rows_fill (c->got, (size_t) c->maxn * c->rows);
    be->ops->linear (be, c->got, c->rows, c->x, c->cols, &c->wt, bias, n, flags);
    if (memcmp (c->got, c->want, (size_t) n * c->rows * sizeof (float)) != 0)
      g_error ("%s, %d x %d, flags %d, n %d: not the one-row bits", what, c->rows, c->cols,
               flags, n);
  }
}

/* precision=fast on a CPU with AMX (cpu-amx-linear.h), through the
 * backend's table: a linear with n <= WHISPER_CPU_AMX_MAX_ROWS input rows
 * gives, row by row, the bits of its one-row call, on one and two threads,
 * for weights the tiles take (a logits matrix, rows not a multiple of 64)
 * and one they do not (37 x 389: the matrix-vector kernels, which are
 * exact for any row count); and every value is the float32 sum of the
 * products of x's two bfloat16 parts and W rounded to bfloat16, against a
 * double reference. */
static guint16
to_bf16 (float f)
{
  guint32 u;
  memcpy (&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (guint16) (u >> 16);
}

static double
from_bf16 (guint16 h)
{
  const guint32 u = (guint32) h << 16;
  float f;
  memcpy (&f, &u, sizeof f);
  return f;
}

static void
test_backend_linear_amx (void)
{
  if (!whisper_cpu_amx_available ()) {
    g_test_skip ("this CPU (or WHISPER_CPU_* setting) has no AMX-BF16 tiles");
    return;
  }
  const Shape shapes[] = { { 1152, 384 }, { 51864, 384 }, { 200, 96 }, { 37, 389 } };
  const int maxn = WHISPER_CPU_AMX_MAX_ROWS;
  for (int threads = 1; threads <= 2; threads++) {
    g_autoptr (GError) error = NULL;
    WhisperBackend *be = whisper_backend_cpu_new (threads, TRUE, &error);
    if (!be) {
      g_test_skip (error->message);
      return;
    }
    g_assert_cmpint (be->max_exact_rows, ==, maxn);
    for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++) {
      const int rows = shapes[s].rows, cols = shapes[s].cols;
      const gboolean tiles = whisper_cpu_amx_packable (rows, cols);
      LinearRows c;
      linear_rows_init (&c, be, rows, cols, maxn, 500 + s, FALSE);
      const WhisperLinearFlags flag_sets[] = { WHISPER_LINEAR_DEFAULT, WHISPER_LINEAR_ACCUMULATE };
      for (gsize f = 0; f < G_N_ELEMENTS (flag_sets); f++) {
        const WhisperLinearFlags flags = flag_sets[f];
        const float *b = flags == WHISPER_LINEAR_ACCUMULATE ? NULL : c.bias;
        linear_rows_one_by_one (&c, be, b, flags);
        /* the values: x's two bfloat16 parts times W rounded (tiles), or
         * the float32 kernels */
        for (int i = 0; i < maxn; i += 13)
          for (int o = 0; o < rows; o += 7) {
            double ref = 0.0, mag = 0.0;
            for (int k = 0; k < cols; k++) {
              const float xv = c.x[(size_t) i * cols + k], wv = c.w[(size_t) o * cols + k];
              const float xh = (float) from_bf16 (to_bf16 (xv));
              const double x2 = xh + from_bf16 (to_bf16 (xv - xh));
              const double p = tiles ? x2 * from_bf16 (to_bf16 (wv)) : (double) xv * wv;
              ref += p;
              mag += fabs (p);
            }
            ref += b ? b[o] : 0.5 * (double) (((size_t) i * rows + o) % 777);
            g_assert_cmpfloat (fabs (c.want[(size_t) i * rows + o] - ref), <=, 1e-5 * (mag + 1.0));
          }
        g_autofree gchar *what = g_strdup_printf ("AMX, %d thread(s)", threads);
        linear_rows_check_bits (&c, be, b, flags, rows > 10000 ? 9 : 1, what);
      }
      linear_rows_clear (&c, be);
    }
    be->ops->destroy (be);
  }
}

/* Through the backend's table: a linear with n input rows gives, row by
 * row, the bits of n one-row linears, for the three weight storages
 * (packed float16, row-major float16, float32), bias, GELU, accumulate, on
 * one and two threads. */
static void
test_backend_linear_rows (void)
{
  const Shape shapes[] = { { 1536, 384 }, { 51864, 384 }, { 51865, 512 }, { 37, 389 } };
  for (int threads = 1; threads <= 2; threads++) {
    g_autoptr (GError) error = NULL;
    WhisperBackend *be = whisper_backend_cpu_new (threads, FALSE, &error);
    g_assert_no_error (error);
    for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
      for (int as_f32 = 0; as_f32 < 2; as_f32++) {
        const int rows = shapes[s].rows, cols = shapes[s].cols;
        /* the logits matrices: float16 only, and only with the AVX2
         * kernels (the portable ones, row by row, take ~7 ns per weight;
         * 37 x 389 has their odd rows and columns) */
        if (rows > 10000 && (as_f32 || !whisper_cpu_have_avx2 ()))
          continue;
        LinearRows c;
        linear_rows_init (&c, be, rows, cols, MAXN, 300 + s, as_f32);
        const WhisperLinearFlags flag_sets[] = { WHISPER_LINEAR_DEFAULT,
                                                 WHISPER_LINEAR_GELU,
                                                 WHISPER_LINEAR_ACCUMULATE };
        const int big = rows > 10000;
        /* the logits matrices: no bias and no flags, as in the decoder */
        for (gsize f = 0; f < (big ? 1 : G_N_ELEMENTS (flag_sets)); f++) {
          const WhisperLinearFlags flags = flag_sets[f];
          const float *b = flags == WHISPER_LINEAR_ACCUMULATE || big ? NULL : c.bias;
          g_autofree gchar *what = g_strdup_printf ("%d thread(s), %s", threads,
                                                    as_f32 ? "float32" : "float16");
          linear_rows_one_by_one (&c, be, b, flags);
          linear_rows_check_bits (&c, be, b, flags, big ? 7 : 1, what);
        }
        linear_rows_clear (&c, be);
      }
    be->ops->destroy (be);
  }
}

/* The backend's attention with n_q queries against one K/V gives, query by
 * query, the bits of one-query calls (query i alone: causal + i), causal
 * and not, on tiny.en's and base's head layouts. */
static void
test_backend_attention_rows (void)
{
  const struct {
    int n_head, d_head, n_kv;
  } cases[] = { { 6, 64, 1500 }, { 8, 64, 37 }, { 2, 12, 21 } };
  for (int threads = 1; threads <= 2; threads++) {
    g_autoptr (GError) error = NULL;
    WhisperBackend *be = whisper_backend_cpu_new (threads, FALSE, &error);
    g_assert_no_error (error);
    for (gsize t = 0; t < G_N_ELEMENTS (cases); t++) {
      const int d = cases[t].n_head * cases[t].d_head, n_kv = cases[t].n_kv;
      const int kv_stride = 2 * d, q_stride = d + 5;
      g_autoptr (GRand) r = g_rand_new_with_seed (400 + t);
      g_autofree float *kv = g_new (float, (size_t) n_kv * kv_stride);
      g_autofree float *q = g_new (float, (size_t) MAXN * q_stride);
      g_autofree float *want = g_new0 (float, (size_t) MAXN * d);
      g_autofree float *got = g_new0 (float, (size_t) MAXN * d);
      for (size_t i = 0; i < (size_t) n_kv * kv_stride; i++)
        kv[i] = rnd (r);
      for (size_t i = 0; i < (size_t) MAXN * q_stride; i++)
        q[i] = rnd (r) * 3.0f;
      /* causal: -1 (cross-attention), 0 (a prompt from position 0), and a
       * step late in the window that sees all but the last 16 keys */
      const int causals[] = { -1, 0, MAX (n_kv - MAXN, 0) };
      for (gsize ci = 0; ci < G_N_ELEMENTS (causals); ci++) {
        const int causal = causals[ci];
        for (int i = 0; i < MAXN; i++)
          be->ops->attention (be, want + (size_t) i * d, d, q + (size_t) i * q_stride, q_stride,
                              kv, kv + d, kv_stride, 1, n_kv, cases[t].n_head, cases[t].d_head,
                              causal < 0 ? -1 : causal + i);
        for (int n = 1; n <= MAXN; n++) {
          memset (got, 0, (size_t) MAXN * d * sizeof (float));
          be->ops->attention (be, got, d, q, q_stride, kv, kv + d, kv_stride, n, n_kv,
                              cases[t].n_head, cases[t].d_head, causal);
          if (memcmp (got, want, (size_t) n * d * sizeof (float)) != 0)
            g_error ("%d thread(s), %d heads of %d, %d keys, causal %d, n_q %d: not the "
                     "one-query bits", threads, cases[t].n_head, cases[t].d_head, n_kv, causal,
                     n);
        }
      }
    }
    be->ops->destroy (be);
  }
}

static void
count_task (int task, int thread, gpointer data)
{
  gint *hits = data;
  g_assert_cmpint (thread, >=, 0);
  g_atomic_int_inc (&hits[task]);
}

/* whisper_cpu_sgemm (), each implementation built in, against a double
 * reference: C = alpha A op(B) + beta C with strides wider than the rows,
 * B plain and transposed, beta 0 (C's old values must not leak in: NaN)
 * and 1. Tolerance: float32 sums of k products, |error| <= 2 k eps sum|ab|. */
static void
check_sgemm (GRand *r, gboolean trans_b, int m, int n, int k, float alpha, float beta)
{
  const int lda = k + 3, ldb = (trans_b ? k : n) + 5, ldc = n + 2;
  const int b_rows = trans_b ? n : k;
  g_autofree float *a = g_new (float, (gsize) m * lda);
  g_autofree float *b = g_new (float, (gsize) b_rows * ldb);
  g_autofree float *c = g_new (float, (gsize) m * ldc);
  g_autofree float *c0 = g_new (float, (gsize) m * ldc);
  for (int i = 0; i < m * lda; i++)
    a[i] = rnd (r);
  for (int i = 0; i < b_rows * ldb; i++)
    b[i] = rnd (r);
  for (int i = 0; i < m * ldc; i++)
    c0[i] = beta == 0.0f ? NAN : rnd (r);
  memcpy (c, c0, sizeof (float) * m * ldc);
  whisper_cpu_sgemm (trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  for (int i = 0; i < m; i++) {
    for (int j = 0; j < ldc; j++) {
      const float got = c[(gsize) i * ldc + j];
      if (j >= n) {  /* the gap between rows is left alone */
        g_assert_true (memcmp (&got, &c0[(gsize) i * ldc + j], sizeof got) == 0);
        continue;
      }
      double want = 0.0, mag = 0.0;
      for (int l = 0; l < k; l++) {
        const double bv = trans_b ? b[(gsize) j * ldb + l] : b[(gsize) l * ldb + j];
        want += (double) a[(gsize) i * lda + l] * bv;
        mag += fabs ((double) a[(gsize) i * lda + l] * bv);
      }
      want = alpha * want + (beta != 0.0f ? beta * (double) c0[(gsize) i * ldc + j] : 0.0);
      g_assert_cmpfloat (fabs (got - want), <=, 2.0 * k * 1.2e-7 * (fabs (alpha) * mag + 1.0));
    }
  }
}

static void
test_sgemm (void)
{
  static const char *const impls[] = { "openblas", "onednn" };
  const int shapes[][3] = { { 1, 1, 1 }, { 3, 17, 5 }, { 64, 48, 384 }, { 37, 129, 64 },
                            { 200, 96, 1500 } };
  g_autofree char *chosen = g_strdup (whisper_cpu_sgemm_name ());
  int ran = 0;
  for (gsize p = 0; p < G_N_ELEMENTS (impls); p++) {
    if (!whisper_cpu_sgemm_select (impls[p])) {
      g_test_message ("sgemm: %s is not built in", impls[p]);
      continue;
    }
    g_autoptr (GRand) r = g_rand_new_with_seed (31);
    for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
      for (int t = 0; t < 2; t++) {
        check_sgemm (r, t, shapes[s][0], shapes[s][1], shapes[s][2], 0.125f, 0.0f);
        check_sgemm (r, t, shapes[s][0], shapes[s][1], shapes[s][2], 1.0f, 1.0f);
      }
    ran++;
  }
  g_assert_cmpint (ran, >=, 1);
  g_assert_true (whisper_cpu_sgemm_select (chosen));
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

/* Resident pages of this process (/proc/self/statm's second field). */
static long
resident_pages (void)
{
  long size = 0, resident = -1;
  FILE *f = fopen ("/proc/self/statm", "r");
  if (f) {
    if (fscanf (f, "%ld %ld", &size, &resident) != 2)
      resident = -1;
    fclose (f);
  }
  return resident;
}

/* whisper_aligned_alloc_sparse(): zeros everywhere, also in memory the
 * allocator had handed out and got back written; 64 MiB of it cost no
 * resident memory until written, and a write per MiB about a page each
 * (the decoder states' caches, whisper-decoder.c). whisper_aligned_discard()
 * hands written pages back. */
static void
test_sparse_alloc (void)
{
  const size_t bytes = (size_t) 64 << 20, page = (size_t) sysconf (_SC_PAGESIZE);
  const size_t n = bytes / sizeof (float);

  for (int round = 0; round < 3; round++) {
    float *p = whisper_aligned_alloc_sparse (bytes);
    g_assert_nonnull (p);
    g_assert_cmpuint ((guintptr) p % page, ==, 0);
    for (size_t i = 0; i < n; i += 997)
      g_assert_cmpfloat (p[i], ==, 0.0f);
    g_assert_cmpfloat (p[n - 1], ==, 0.0f);
    /* written all over, then freed: the next round gets it back zeroed */
    for (size_t i = 0; i < n; i++)
      p[i] = 1.0f;
    whisper_aligned_free (p);
  }

  long before = resident_pages ();
  if (before < 0) {
    g_test_skip ("no /proc/self/statm");
    return;
  }
  float *p = whisper_aligned_alloc_sparse (bytes);
  g_assert_nonnull (p);
  long after_alloc = resident_pages ();
  for (size_t i = 0; i < n; i += ((size_t) 1 << 20) / sizeof (float))
    p[i] = 2.0f;
  long after_writes = resident_pages ();
  g_test_message ("resident pages: %ld before, %ld allocated, %ld after 64 writes", before,
                  after_alloc, after_writes);
  /* (allowance: the test's own heap and the kernel's page-table pages) */
  g_assert_cmpint ((after_alloc - before) * (long) page, <, 4L << 20);
  g_assert_cmpint ((after_writes - before) * (long) page, <, 8L << 20);
  g_assert_cmpfloat (p[1], ==, 0.0f);
  g_assert_cmpfloat (p[((size_t) 1 << 20) / sizeof (float)], ==, 2.0f);

  /* discarded: written all over, then [1 MiB + 10 floats, 63 MiB) handed
   * back: the whole pages in it read as zeros and take no memory, the
   * floats on the pages it covers in part keep their values */
  for (size_t i = 0; i < n; i++)
    p[i] = 3.0f;
  long written = resident_pages ();
  const size_t from = ((size_t) 1 << 20) / sizeof (float) + 10;
  const size_t to = ((size_t) 63 << 20) / sizeof (float);
  whisper_aligned_discard (p + from, (to - from) * sizeof (float));
  long discarded = resident_pages ();
  g_test_message ("resident pages: %ld written, %ld after discarding 62 MiB", written,
                  discarded);
  g_assert_cmpint ((written - discarded) * (long) page, >, 60L << 20);
  for (size_t i = from - 10; i < page / sizeof (float) * ((from * sizeof (float) + page - 1)
              / page); i++)
    g_assert_cmpfloat (p[i], ==, 3.0f);
  g_assert_cmpfloat (p[((size_t) 2 << 20) / sizeof (float)], ==, 0.0f);
  g_assert_cmpfloat (p[to - 1], ==, 0.0f);
  g_assert_cmpfloat (p[to], ==, 3.0f);
  g_assert_cmpfloat (p[n - 1], ==, 3.0f);
  /* nothing whole inside: nothing changes */
  whisper_aligned_discard (p + 1, 100 * sizeof (float));
  g_assert_cmpfloat (p[50], ==, 3.0f);
  whisper_aligned_free (p);

  /* small blocks fall back to the written allocation: still zeroed */
  float *small = whisper_aligned_alloc_sparse (100 * sizeof (float));
  g_assert_nonnull (small);
  for (int i = 0; i < 100; i++)
    g_assert_cmpfloat (small[i], ==, 0.0f);
  whisper_aligned_free (small);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cpu-kernels/softmax", test_softmax);
  g_test_add_func ("/cpu-kernels/sparse-alloc", test_sparse_alloc);
  g_test_add_func ("/cpu-kernels/sum-exp", test_sum_exp);
  g_test_add_func ("/cpu-kernels/max", test_max);
  g_test_add_func ("/cpu-kernels/gemv", test_gemv);
  g_test_add_func ("/cpu-kernels/gemv-packed", test_gemv_packed);
  g_test_add_func ("/cpu-kernels/gemv-rows", test_gemv_rows);
  g_test_add_func ("/cpu-kernels/gemv-rows-logits", test_gemv_rows_logits);
  g_test_add_func ("/cpu-kernels/backend-linear-rows", test_backend_linear_rows);
  g_test_add_func ("/cpu-kernels/backend-attention-rows", test_backend_attention_rows);
  g_test_add_func ("/cpu-kernels/backend-linear-amx", test_backend_linear_amx);
  g_test_add_func ("/cpu-kernels/half", test_half_conversions);
  g_test_add_func ("/cpu-kernels/dot-axpy", test_dot_axpy);
  g_test_add_func ("/cpu-kernels/bias-gelu", test_bias_gelu);
  g_test_add_func ("/cpu-kernels/attention-row", test_attention_row);
  g_test_add_func ("/cpu-kernels/attention-heads", test_attention_heads);
  g_test_add_func ("/cpu-kernels/attention-avx512", test_attention_avx512);
  g_test_add_func ("/cpu-kernels/kv-to-half", test_kv_to_half);
  g_test_add_func ("/cpu-kernels/attention-f16kv", test_attention_f16kv);
  g_test_add_func ("/cpu-kernels/sgemm", test_sgemm);
  g_test_add_func ("/cpu-kernels/thread-pool", test_thread_pool);
  return g_test_run ();
}
