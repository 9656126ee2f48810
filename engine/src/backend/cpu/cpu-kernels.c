/* cpu-kernels.c: vector kernels of the CPU backend (see cpu-kernels.h). */
#include "cpu-kernels.h"
#include "cpu-features.h"

#include <math.h>
#include <string.h>

#include "cpu-simd.h"

/* ---- portable versions ---------------------------------------------- */

static float
dot_generic (const float *a, const float *b, int n)
{
  float acc[4] = { 0, 0, 0, 0 };
  int i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; k++)
      acc[k] += a[i + k] * b[i + k];
  float s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  for (; i < n; i++)
    s += a[i] * b[i];
  return s;
}

static void
axpy_generic (float *y, float a, const float *x, int n)
{
  for (int i = 0; i < n; i++)
    y[i] += a * x[i];
}

static void
softmax_generic (float *x, int n)
{
  float max = -INFINITY;
  for (int i = 0; i < n; i++)
    max = x[i] > max ? x[i] : max;
  double sum = 0.0;
  for (int i = 0; i < n; i++) {
    x[i] = expf (x[i] - max);
    sum += x[i];
  }
  const float inv = (float) (1.0 / sum);
  for (int i = 0; i < n; i++)
    x[i] *= inv;
}

static void
bias_gelu_generic (float *x, const float *bias, int n, gboolean gelu)
{
  for (int i = 0; i < n; i++) {
    float v = bias ? x[i] + bias[i] : x[i];
    x[i] = gelu ? 0.5f * v * (1.0f + erff (v * 0.70710678118654752440f)) : v;
  }
}

/* ---- AVX2 / FMA / F16C versions ------------------------------------- */

#ifdef HAVE_X86
/* exp(x) for x <= 0 (softmax inputs after the max is subtracted): range
 * reduction x = n ln2 + r, |r| <= ln2/2, then a degree-6 polynomial;
 * relative error about 1 ulp. Inputs below -87.3 give 0. */
AVX2_TARGET static inline __m256
exp_avx2 (__m256 x)
{
  const __m256 lo = _mm256_set1_ps (-87.3f);
  const __m256 underflow = _mm256_cmp_ps (x, lo, _CMP_LT_OQ);
  x = _mm256_max_ps (x, lo);
  const __m256 n = _mm256_round_ps (_mm256_mul_ps (x, _mm256_set1_ps (1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps (n, _mm256_set1_ps (0.693359375f), x);
  r = _mm256_fnmadd_ps (n, _mm256_set1_ps (-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps (1.9875691500e-4f);
  p = _mm256_fmadd_ps (p, r, _mm256_set1_ps (1.3981999507e-3f));
  p = _mm256_fmadd_ps (p, r, _mm256_set1_ps (8.3334519073e-3f));
  p = _mm256_fmadd_ps (p, r, _mm256_set1_ps (4.1665795894e-2f));
  p = _mm256_fmadd_ps (p, r, _mm256_set1_ps (1.6666665459e-1f));
  p = _mm256_fmadd_ps (p, r, _mm256_set1_ps (5.0000001201e-1f));
  p = _mm256_fmadd_ps (p, _mm256_mul_ps (r, r), _mm256_add_ps (r, _mm256_set1_ps (1.0f)));
  const __m256i e = _mm256_slli_epi32 (_mm256_add_epi32 (_mm256_cvtps_epi32 (n),
                                                         _mm256_set1_epi32 (127)), 23);
  const __m256 result = _mm256_mul_ps (p, _mm256_castsi256_ps (e));
  return _mm256_andnot_ps (underflow, result);
}

/* erf(x) as x P(x^2) / Q(x^2) on [-4, 4] (beyond, erf is +-1 in float):
 * absolute error below 5e-7 (tests/engine/test-cpu-kernels.c). */
AVX2_TARGET static inline __m256
erf_avx2 (__m256 x)
{
  x = _mm256_min_ps (_mm256_max_ps (x, _mm256_set1_ps (-4.0f)), _mm256_set1_ps (4.0f));
  const __m256 x2 = _mm256_mul_ps (x, x);
  __m256 p = _mm256_set1_ps (-2.72614225801306e-10f);
  p = _mm256_fmadd_ps (p, x2, _mm256_set1_ps (2.77068142495902e-08f));
  p = _mm256_fmadd_ps (p, x2, _mm256_set1_ps (-2.10102402082508e-06f));
  p = _mm256_fmadd_ps (p, x2, _mm256_set1_ps (-5.69250639462346e-05f));
  p = _mm256_fmadd_ps (p, x2, _mm256_set1_ps (-7.34990630326855e-04f));
  p = _mm256_fmadd_ps (p, x2, _mm256_set1_ps (-2.95459980854025e-03f));
  p = _mm256_fmadd_ps (p, x2, _mm256_set1_ps (-1.60960333262415e-02f));
  __m256 q = _mm256_set1_ps (-1.45660718464996e-05f);
  q = _mm256_fmadd_ps (q, x2, _mm256_set1_ps (-2.13374055278905e-04f));
  q = _mm256_fmadd_ps (q, x2, _mm256_set1_ps (-1.68282697438203e-03f));
  q = _mm256_fmadd_ps (q, x2, _mm256_set1_ps (-7.37332916720468e-03f));
  q = _mm256_fmadd_ps (q, x2, _mm256_set1_ps (-1.42647390514189e-02f));
  return _mm256_div_ps (_mm256_mul_ps (x, p), q);
}

AVX2_TARGET static void
bias_gelu_avx2 (float *x, const float *bias, int n, gboolean gelu)
{
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps (x + i);
    if (bias)
      v = _mm256_add_ps (v, _mm256_loadu_ps (bias + i));
    if (gelu) {
      const __m256 e = erf_avx2 (_mm256_mul_ps (v, _mm256_set1_ps (0.70710678118654752440f)));
      v = _mm256_mul_ps (_mm256_mul_ps (_mm256_set1_ps (0.5f), v),
                         _mm256_add_ps (_mm256_set1_ps (1.0f), e));
    }
    _mm256_storeu_ps (x + i, v);
  }
  bias_gelu_generic (x + i, bias ? bias + i : NULL, n - i, gelu);
}

/* sum_i exp(x[i] - max) in double, each term through exp_avx2 (float, about
 * 1 ulp): -inf terms give 0. */
AVX2_TARGET static double
sum_exp_avx2 (const float *x, int n, float max)
{
  const __m256 m = _mm256_set1_ps (max);
  __m256d acc0 = _mm256_setzero_pd (), acc1 = acc0;
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp_avx2 (_mm256_sub_ps (_mm256_loadu_ps (x + i), m));
    acc0 = _mm256_add_pd (acc0, _mm256_cvtps_pd (_mm256_castps256_ps128 (e)));
    acc1 = _mm256_add_pd (acc1, _mm256_cvtps_pd (_mm256_extractf128_ps (e, 1)));
  }
  double buf[4];
  _mm256_storeu_pd (buf, _mm256_add_pd (acc0, acc1));
  double sum = (buf[0] + buf[1]) + (buf[2] + buf[3]);
  for (; i < n; i++)
    sum += exp ((double) x[i] - max);
  return sum;
}

/* The maximum of 8 lanes at a time: _mm256_max_ps (x, acc) keeps acc where
 * x is a NaN (Intel's MAXPS: "the second operand ... is written"), as the
 * scalar loop skips NaNs. The first index of the maximum is then the first
 * lane equal to it. */
AVX2_TARGET static float
max_avx2 (const float *x, int n, int *arg)
{
  __m256 acc = _mm256_set1_ps (-INFINITY);
  int i = 0;
  for (; i + 8 <= n; i += 8)
    acc = _mm256_max_ps (_mm256_loadu_ps (x + i), acc);
  float buf[8];
  _mm256_storeu_ps (buf, acc);
  float max = -INFINITY;
  for (int k = 0; k < 8; k++)
    max = buf[k] > max ? buf[k] : max;
  for (; i < n; i++)
    max = x[i] > max ? x[i] : max;
  if (arg) {
    *arg = 0;
    const __m256 m = _mm256_set1_ps (max);
    for (i = 0; i + 8 <= n; i += 8) {
      const int mask = _mm256_movemask_ps (_mm256_cmp_ps (_mm256_loadu_ps (x + i), m, _CMP_EQ_OQ));
      if (mask) {
        *arg = i + __builtin_ctz ((unsigned) mask);
        return max;
      }
    }
    for (; i < n; i++)
      if (x[i] == max) {
        *arg = i;
        return max;
      }
  }
  return max;
}

AVX2_TARGET static void
softmax_avx2 (float *x, int n)
{
  const float max = max_avx2 (x, n, NULL);
  int i;
  const __m256 m = _mm256_set1_ps (max);
  __m256 vsum = _mm256_setzero_ps ();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = exp_avx2 (_mm256_sub_ps (_mm256_loadu_ps (x + i), m));
    _mm256_storeu_ps (x + i, e);
    vsum = _mm256_add_ps (vsum, e);
  }
  double sum = hsum256 (vsum);
  for (; i < n; i++) {
    x[i] = expf (x[i] - max);
    sum += x[i];
  }
  const __m256 inv = _mm256_set1_ps ((float) (1.0 / sum));
  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps (x + i, _mm256_mul_ps (_mm256_loadu_ps (x + i), inv));
  for (; i < n; i++)
    x[i] *= (float) (1.0 / sum);
}

AVX2_TARGET static float
dot_avx2 (const float *a, const float *b, int n)
{
  __m256 acc0 = _mm256_setzero_ps (), acc1 = acc0;
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps (_mm256_loadu_ps (a + i), _mm256_loadu_ps (b + i), acc0);
    acc1 = _mm256_fmadd_ps (_mm256_loadu_ps (a + i + 8), _mm256_loadu_ps (b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8)
    acc0 = _mm256_fmadd_ps (_mm256_loadu_ps (a + i), _mm256_loadu_ps (b + i), acc0);
  float s = hsum256 (_mm256_add_ps (acc0, acc1));
  for (; i < n; i++)
    s += a[i] * b[i];
  return s;
}

AVX2_TARGET static void
axpy_avx2 (float *y, float a, const float *x, int n)
{
  const __m256 av = _mm256_set1_ps (a);
  int i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps (y + i, _mm256_fmadd_ps (av, _mm256_loadu_ps (x + i), _mm256_loadu_ps (y + i)));
  for (; i < n; i++)
    y[i] += a * x[i];
}

#endif

#ifdef HAVE_X86
/* dh a multiple of 8. Heads h = 0..n_heads-1 sit dh floats apart in q, k, v
 * and out, so one key row of the group is one contiguous run of
 * n_heads * dh floats: the rows are walked once for all the group's heads,
 * which the prefetchers follow far better than one head's short slices of
 * the long rows. No software prefetch: the hardware's stream prefetchers
 * follow the rows, and asking for the rows 16 keys ahead (24 KB of tiny's
 * rows, more of larger models') evicted from L1 the lines still in use;
 * bench-cpu-linear's cross-attention, K/V read from memory, measures it.
 * Per head the sums are those of a one-head loop: same order, same lanes. */
AVX2_TARGET static void
attention_heads_avx2 (float *out, int out_stride, const float *q, int q_stride, const float *k,
                      const float *v, int kv_stride, int n_q, int n_kv, int dh, int n_heads,
                      float scale, float *scratch)
{
  const __m256 vscale = _mm256_set1_ps (scale);
  const int span = n_heads * dh; /* floats of one row the group reads */
  const size_t per_query = (size_t) n_heads * n_kv; /* one query's scores */
  float *acc = scratch + (size_t) n_q * per_query;
  int j = 0;
  /* scores: eight keys at a time, eight accumulators, then one transposing
   * reduction gives their eight scores (no horizontal sum per key); the
   * eight key rows stay in L1 while every query uses them */
  for (; j + 8 <= n_kv; j += 8) {
    for (int i = 0; i < n_q; i++) {
      const float *qi = q + (size_t) i * q_stride;
      float *si = scratch + i * per_query;
      for (int h = 0; h < n_heads; h++) {
        const float *qh = qi + h * dh, *kh = k + h * dh;
        __m256 a[8];
        for (int t = 0; t < 8; t++)
          a[t] = _mm256_setzero_ps ();
        for (int c = 0; c < dh; c += 8) {
          const __m256 qv = _mm256_loadu_ps (qh + c);
          for (int t = 0; t < 8; t++)
            a[t] = _mm256_fmadd_ps (qv, _mm256_loadu_ps (kh + (size_t) (j + t) * kv_stride + c),
                                    a[t]);
        }
        const __m256 h0123 = _mm256_hadd_ps (_mm256_hadd_ps (a[0], a[1]),
                                             _mm256_hadd_ps (a[2], a[3]));
        const __m256 h4567 = _mm256_hadd_ps (_mm256_hadd_ps (a[4], a[5]),
                                             _mm256_hadd_ps (a[6], a[7]));
        const __m256 sum = _mm256_add_ps (_mm256_permute2f128_ps (h0123, h4567, 0x20),
                                          _mm256_permute2f128_ps (h0123, h4567, 0x31));
        _mm256_storeu_ps (si + (size_t) h * n_kv + j, _mm256_mul_ps (sum, vscale));
      }
    }
  }
  for (; j < n_kv; j++)
    for (int i = 0; i < n_q; i++)
      for (int h = 0; h < n_heads; h++) {
        const float *kj = k + (size_t) j * kv_stride + h * dh;
        const float *qh = q + (size_t) i * q_stride + h * dh;
        __m256 a = _mm256_setzero_ps ();
        for (int c = 0; c < dh; c += 8)
          a = _mm256_fmadd_ps (_mm256_loadu_ps (qh + c), _mm256_loadu_ps (kj + c), a);
        scratch[i * per_query + (size_t) h * n_kv + j] = hsum256 (a) * scale;
      }
  for (int i = 0; i < n_q; i++)
    for (int h = 0; h < n_heads; h++)
      softmax_avx2 (scratch + i * per_query + (size_t) h * n_kv, n_kv);

  /* out = p v: even keys summed in acc0, odd keys in acc1, then added */
  if (whisper_cpu_weighted_sum_avx512 (out, out_stride, scratch, n_kv, per_query, v, kv_stride,
                                       n_kv, dh, n_heads, n_q, acc))
    return;
  memset (acc, 0, (size_t) n_q * 2 * span * sizeof (float));
  for (j = 0; j < n_kv; j += 2) {
    const float *v0 = v + (size_t) j * kv_stride, *v1 = v0 + kv_stride;
    const gboolean pair = j + 2 <= n_kv; /* else the last key, summed with the even ones */
    for (int i = 0; i < n_q; i++) {
      const float *pi = scratch + i * per_query;
      float *acc0 = acc + (size_t) i * 2 * span, *acc1 = acc0 + span;
      for (int h = 0; h < n_heads; h++) {
        const __m256 p0 = _mm256_set1_ps (pi[(size_t) h * n_kv + j]);
        const __m256 p1 = _mm256_set1_ps (pair ? pi[(size_t) h * n_kv + j + 1] : 0.0f);
        for (int c = h * dh; c < (h + 1) * dh; c += 8) {
          _mm256_storeu_ps (acc0 + c, _mm256_fmadd_ps (p0, _mm256_loadu_ps (v0 + c),
                                                       _mm256_loadu_ps (acc0 + c)));
          if (pair)
            _mm256_storeu_ps (acc1 + c, _mm256_fmadd_ps (p1, _mm256_loadu_ps (v1 + c),
                                                         _mm256_loadu_ps (acc1 + c)));
        }
      }
    }
  }
  for (int i = 0; i < n_q; i++) {
    const float *acc0 = acc + (size_t) i * 2 * span, *acc1 = acc0 + span;
    float *oi = out + (size_t) i * out_stride;
    for (int c = 0; c < span; c += 8)
      _mm256_storeu_ps (oi + c, _mm256_add_ps (_mm256_loadu_ps (acc0 + c),
                                               _mm256_loadu_ps (acc1 + c)));
  }
}
#endif

static void
attention_row_generic (float *out, const float *q, const float *k, const float *v, int kv_stride,
                       int n_kv, int dh, float scale, float *scores)
{
  for (int j = 0; j < n_kv; j++)
    scores[j] = dot_generic (q, k + (size_t) j * kv_stride, dh) * scale;
  softmax_generic (scores, n_kv);
  for (int c = 0; c < dh; c++)
    out[c] = 0.0f;
  for (int j = 0; j < n_kv; j++)
    axpy_generic (out, scores[j], v + (size_t) j * kv_stride, dh);
}

/* ---- dispatch ------------------------------------------------------- */

void
whisper_cpu_bias_gelu (float *x, const float *bias, int n, gboolean gelu)
{
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ()) {
    bias_gelu_avx2 (x, bias, n, gelu);
    return;
  }
#endif
  bias_gelu_generic (x, bias, n, gelu);
}

void
whisper_cpu_softmax (float *x, int n)
{
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ()) {
    softmax_avx2 (x, n);
    return;
  }
#endif
  softmax_generic (x, n);
}

#ifdef HAVE_X86
AVX2_TARGET static void
sub_in_double_avx2 (float *x, int n, double c)
{
  const __m256d vc = _mm256_set1_pd (c);
  int i = 0;
  for (; i + 4 <= n; i += 4)
    _mm_storeu_ps (x + i, _mm256_cvtpd_ps (_mm256_sub_pd (_mm256_cvtps_pd (_mm_loadu_ps (x + i)),
                                                          vc)));
  for (; i < n; i++)
    x[i] = (float) ((double) x[i] - c);
}
#endif

float
whisper_cpu_max (const float *x, int n, int *arg)
{
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ())
    return max_avx2 (x, n, arg);
#endif
  float max = -INFINITY;
  int best = 0;
  for (int i = 0; i < n; i++)
    if (x[i] > max) {
      max = x[i];
      best = i;
    }
  if (arg)
    *arg = best;
  return max;
}

void
whisper_cpu_sub_in_double (float *x, int n, double c)
{
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ()) {
    sub_in_double_avx2 (x, n, c);
    return;
  }
#endif
  for (int i = 0; i < n; i++)
    x[i] = (float) ((double) x[i] - c);
}

double
whisper_cpu_sum_exp (const float *x, int n, float max)
{
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ())
    return sum_exp_avx2 (x, n, max);
#endif
  double sum = 0.0;
  for (int i = 0; i < n; i++)
    sum += exp ((double) x[i] - max);
  return sum;
}

void
whisper_cpu_attention_heads_multi (float *out, int out_stride, const float *q, int q_stride,
                                   const float *k, const float *v, int kv_stride, int n_q,
                                   int n_kv, int dh, int n_heads, float scale, float *scratch)
{
#ifdef HAVE_X86
  if (dh % 8 == 0 && whisper_cpu_have_avx2 ()) {
    attention_heads_avx2 (out, out_stride, q, q_stride, k, v, kv_stride, n_q, n_kv, dh, n_heads,
                          scale, scratch);
    return;
  }
#endif
  for (int i = 0; i < n_q; i++)
    for (int h = 0; h < n_heads; h++)
      attention_row_generic (out + (size_t) i * out_stride + h * dh,
                             q + (size_t) i * q_stride + h * dh, k + h * dh, v + h * dh,
                             kv_stride, n_kv, dh, scale, scratch);
}

void
whisper_cpu_attention_heads (float *out, const float *q, const float *k, const float *v,
                             int kv_stride, int n_kv, int dh, int n_heads, float scale,
                             float *scratch)
{
  whisper_cpu_attention_heads_multi (out, 0, q, 0, k, v, kv_stride, 1, n_kv, dh, n_heads, scale,
                                     scratch);
}

float
whisper_cpu_dot (const float *a, const float *b, int n)
{
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ())
    return dot_avx2 (a, b, n);
#endif
  return dot_generic (a, b, n);
}

void
whisper_cpu_axpy (float *y, float a, const float *x, int n)
{
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ()) {
    axpy_avx2 (y, a, x, n);
    return;
  }
#endif
  axpy_generic (y, a, x, n);
}

void
whisper_cpu_layer_norm_row (float *y, const float *x, const float *gamma, const float *beta,
                            int d, float eps)
{
  double mean = 0.0, var = 0.0;
  for (int j = 0; j < d; j++)
    mean += x[j];
  mean /= d;
  for (int j = 0; j < d; j++) {
    const double c = x[j] - mean;
    var += c * c;
  }
  var /= d;
  const float inv = (float) (1.0 / sqrt (var + eps));
  const float m = (float) mean;
  for (int j = 0; j < d; j++)
    y[j] = (x[j] - m) * inv * gamma[j] + beta[j];
}
