/* cpu-attention-f16kv.c: the cross-attention of decode steps over keys and
 * values kept in float16, head-major (precision=fast; see cpu-kernels.h).
 *
 * A decode step's cross-attention reads every key and value of the window
 * once: for base that is 1500 x 512 x 2 floats per layer, 37 MB per step,
 * about a third of what the step reads. Kept in float16 it is half that.
 * The layout is head-major, [n_head][n_kv][dh] for the keys and then the
 * same for the values, so one head's keys are one run of memory.
 *
 * Numerics: every key and value is rounded once to float16 (round to
 * nearest even, relative error at most 2^-11); the products and sums are
 * float32. The scores are q.k summed over dh in four 16-lane partial sums
 * folded pairwise; the softmax is whisper_cpu_softmax(); the output is
 * sum_j p_j v_j in float32, keys in order, even and odd keys summed apart
 * and added at the end. Reference: the scaled dot-product attention of
 * "Attention Is All You Need", https://arxiv.org/abs/1706.03762, section
 * 3.2.1; CTranslate2 keeps the same tensors in float16 when a model runs
 * with compute_type float16 (https://opennmt.net/CTranslate2/quantization.html). */
#include "cpu-kernels.h"

#include <string.h>

/* kv[n, 2 * n_head * dh] -> K[n_head][n][dh], V[n_head][n][dh] in float16 */
void
whisper_cpu_kv_to_half_heads (uint16_t *dst, const float *kv, int kv_stride, int n, int n_head,
                              int dh)
{
  const size_t head = (size_t) n * dh;
  for (int j = 0; j < n; j++)
    for (int h = 0; h < 2 * n_head; h++) /* h < n_head: key head h; else value head h - n_head */
      whisper_float_to_half_n (dst + h * head + (size_t) j * dh,
                               kv + (size_t) j * kv_stride + (size_t) h * dh, dh);
}

static void
attention_f16kv_generic (float *out, int out_stride, const float *q, int q_stride,
                         const uint16_t *k, const uint16_t *v, int n_q, int n_kv, int dh,
                         float scale, float *scratch)
{
  float *row = scratch + (size_t) n_q * n_kv; /* one key or value row in float32 */
  for (int i = 0; i < n_q; i++) {
    float *s = scratch + (size_t) i * n_kv;
    for (int j = 0; j < n_kv; j++) {
      whisper_half_to_float_n (row, k + (size_t) j * dh, dh);
      s[j] = whisper_cpu_dot (q + (size_t) i * q_stride, row, dh) * scale;
    }
    whisper_cpu_softmax (s, n_kv);
  }
  for (int i = 0; i < n_q; i++)
    memset (out + (size_t) i * out_stride, 0, dh * sizeof (float));
  for (int j = 0; j < n_kv; j++) {
    whisper_half_to_float_n (row, v + (size_t) j * dh, dh);
    for (int i = 0; i < n_q; i++)
      whisper_cpu_axpy (out + (size_t) i * out_stride, scratch[(size_t) i * n_kv + j], row, dh);
  }
}

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX512_TARGET __attribute__ ((target ("avx512f,avx2,fma,f16c")))
#define DH 64               /* the head size of every Whisper model */
#define KEYS 16             /* keys whose scores one transposing reduction gives */
#define MAX_QUERIES 3       /* queries whose value sums stay in registers (24 zmm) */
#define PREFETCH_KEYS 32    /* keys ahead that are asked for */

/* The 16 lane sums of a[0..16) as one vector, lane t = sum of a[t]: three
 * folding levels across and within the 128-bit quarters, then one
 * permutation (after the folds, lane 4q + m holds key 4m + q). */
AVX512_TARGET static inline __m512
sum16 (const __m512 a[KEYS])
{
  __m512 b[8], c[4];
  for (int t = 0; t < 8; t++) /* quarters 0+2, 1+3 of a[2t] low, of a[2t+1] high */
    b[t] = _mm512_add_ps (_mm512_shuffle_f32x4 (a[2 * t], a[2 * t + 1], 0x44),
                          _mm512_shuffle_f32x4 (a[2 * t], a[2 * t + 1], 0xee));
  for (int t = 0; t < 4; t++) /* quarter m: 4 lanes summing to a[4t + m] */
    c[t] = _mm512_add_ps (_mm512_shuffle_f32x4 (b[2 * t], b[2 * t + 1], 0x88),
                          _mm512_shuffle_f32x4 (b[2 * t], b[2 * t + 1], 0xdd));
  const __m512 d0 = _mm512_add_ps (_mm512_unpacklo_ps (c[0], c[1]),
                                   _mm512_unpackhi_ps (c[0], c[1]));
  const __m512 d1 = _mm512_add_ps (_mm512_unpacklo_ps (c[2], c[3]),
                                   _mm512_unpackhi_ps (c[2], c[3]));
  const __m512 e = _mm512_add_ps (
      _mm512_castpd_ps (_mm512_unpacklo_pd (_mm512_castps_pd (d0), _mm512_castps_pd (d1))),
      _mm512_castpd_ps (_mm512_unpackhi_pd (_mm512_castps_pd (d0), _mm512_castps_pd (d1))));
  const __m512i order = _mm512_setr_epi32 (0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps (order, e);
}

AVX512_TARGET static inline __m512
load_half16 (const uint16_t *p)
{
  return _mm512_cvtph_ps (_mm256_loadu_si256 ((const __m256i *) p));
}

/* s[i][j] = scale * q_i . k_j: each block of 16 keys is converted once into
 * kb (4 KB, stays in L1) and used by every query. */
AVX512_TARGET static void
scores_avx512 (float *s, const float *q, int q_stride, const uint16_t *k, int n_q, int n_kv,
               float scale, float *kb)
{
  const __m512 vscale = _mm512_set1_ps (scale);
  int j0 = 0;
  for (; j0 + KEYS <= n_kv; j0 += KEYS) {
    const uint16_t *kj = k + (size_t) j0 * DH;
    if (j0 + PREFETCH_KEYS + KEYS <= n_kv)
      for (int t = 0; t < KEYS * DH; t += 32)
        _mm_prefetch ((const char *) (kj + PREFETCH_KEYS * DH + t), _MM_HINT_T0);
    for (int t = 0; t < KEYS * DH; t += 16)
      _mm512_storeu_ps (kb + t, load_half16 (kj + t));
    for (int i = 0; i < n_q; i++) {
      const float *qi = q + (size_t) i * q_stride;
      const __m512 q0 = _mm512_loadu_ps (qi), q1 = _mm512_loadu_ps (qi + 16);
      const __m512 q2 = _mm512_loadu_ps (qi + 32), q3 = _mm512_loadu_ps (qi + 48);
      __m512 a[KEYS];
      for (int t = 0; t < KEYS; t++) {
        const float *r = kb + t * DH;
        const __m512 lo = _mm512_fmadd_ps (q1, _mm512_loadu_ps (r + 16),
                                           _mm512_mul_ps (q0, _mm512_loadu_ps (r)));
        const __m512 hi = _mm512_fmadd_ps (q3, _mm512_loadu_ps (r + 48),
                                           _mm512_mul_ps (q2, _mm512_loadu_ps (r + 32)));
        a[t] = _mm512_add_ps (lo, hi);
      }
      _mm512_storeu_ps (s + (size_t) i * n_kv + j0, _mm512_mul_ps (sum16 (a), vscale));
    }
  }
  for (; j0 < n_kv; j0++) {
    const uint16_t *kj = k + (size_t) j0 * DH;
    const __m512 k0 = load_half16 (kj), k1 = load_half16 (kj + 16);
    const __m512 k2 = load_half16 (kj + 32), k3 = load_half16 (kj + 48);
    for (int i = 0; i < n_q; i++) {
      const float *qi = q + (size_t) i * q_stride;
      const __m512 lo = _mm512_fmadd_ps (_mm512_loadu_ps (qi + 16), k1,
                                         _mm512_mul_ps (_mm512_loadu_ps (qi), k0));
      const __m512 hi = _mm512_fmadd_ps (_mm512_loadu_ps (qi + 48), k3,
                                         _mm512_mul_ps (_mm512_loadu_ps (qi + 32), k2));
      s[(size_t) i * n_kv + j0] = _mm512_reduce_add_ps (_mm512_add_ps (lo, hi)) * scale;
    }
  }
}

/* out_i = sum_j p_i[j] v_j for NQ (1..MAX_QUERIES) queries: each value row
 * is converted once for all of them; even and odd keys in separate
 * accumulators (two independent chains per lane). */
AVX512_TARGET static inline __attribute__ ((always_inline)) void
values_avx512 (float *out, int out_stride, const float *p, int n_kv, const uint16_t *v,
               const int NQ)
{
  __m512 even[MAX_QUERIES][4], odd[MAX_QUERIES][4];
  for (int i = 0; i < NQ; i++)
    for (int c = 0; c < 4; c++)
      even[i][c] = odd[i][c] = _mm512_setzero_ps ();
  int j = 0;
  for (; j + 2 <= n_kv; j += 2) {
    const uint16_t *v0 = v + (size_t) j * DH;
    if (j + PREFETCH_KEYS + 2 <= n_kv)
      for (int t = 0; t < 2 * DH; t += 32) /* two rows, one 64-byte line per 32 halves */
        _mm_prefetch ((const char *) (v0 + PREFETCH_KEYS * DH + t), _MM_HINT_T0);
    __m512 a[4], b[4];
    for (int c = 0; c < 4; c++) {
      a[c] = load_half16 (v0 + 16 * c);
      b[c] = load_half16 (v0 + DH + 16 * c);
    }
    for (int i = 0; i < NQ; i++) {
      const __m512 p0 = _mm512_set1_ps (p[(size_t) i * n_kv + j]);
      const __m512 p1 = _mm512_set1_ps (p[(size_t) i * n_kv + j + 1]);
      for (int c = 0; c < 4; c++) {
        even[i][c] = _mm512_fmadd_ps (p0, a[c], even[i][c]);
        odd[i][c] = _mm512_fmadd_ps (p1, b[c], odd[i][c]);
      }
    }
  }
  if (j < n_kv) {
    const uint16_t *v0 = v + (size_t) j * DH;
    for (int i = 0; i < NQ; i++) {
      const __m512 p0 = _mm512_set1_ps (p[(size_t) i * n_kv + j]);
      for (int c = 0; c < 4; c++)
        even[i][c] = _mm512_fmadd_ps (p0, load_half16 (v0 + 16 * c), even[i][c]);
    }
  }
  for (int i = 0; i < NQ; i++)
    for (int c = 0; c < 4; c++)
      _mm512_storeu_ps (out + (size_t) i * out_stride + 16 * c,
                        _mm512_add_ps (even[i][c], odd[i][c]));
}

AVX512_TARGET static void
attention_f16kv_avx512 (float *out, int out_stride, const float *q, int q_stride,
                        const uint16_t *k, const uint16_t *v, int n_q, int n_kv, float scale,
                        float *scratch)
{
  float *kb = scratch + (size_t) n_q * n_kv;
  scores_avx512 (scratch, q, q_stride, k, n_q, n_kv, scale, kb);
  for (int i = 0; i < n_q; i++)
    whisper_cpu_softmax (scratch + (size_t) i * n_kv, n_kv);
  for (int i0 = 0; i0 < n_q; i0 += MAX_QUERIES) {
    float *o = out + (size_t) i0 * out_stride;
    const float *p = scratch + (size_t) i0 * n_kv;
    switch (MIN (MAX_QUERIES, n_q - i0)) {
    case 1: values_avx512 (o, out_stride, p, n_kv, v, 1); break;
    case 2: values_avx512 (o, out_stride, p, n_kv, v, 2); break;
    default: values_avx512 (o, out_stride, p, n_kv, v, 3); break;
    }
  }
}

/* ---- AVX2 (with F16C and FMA): CPUs without AVX-512 ------------------ */

#define AVX2_TARGET __attribute__ ((target ("avx2,fma,f16c")))
#define KEYS8 8 /* keys whose scores one transposing reduction gives */

AVX2_TARGET static inline __m256
load_half8 (const uint16_t *p)
{
  return _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) p));
}

/* q . r over DH values in two sums of four products each per lane (columns
 * c and c + 8, c + 16, c + 24 in one, the same plus 32 in the other),
 * added: the same expression for a key in a block or in the tail */
AVX2_TARGET static inline __m256
dot8 (const float *q, const float *r)
{
  __m256 lo = _mm256_mul_ps (_mm256_loadu_ps (q), _mm256_loadu_ps (r));
  __m256 hi = _mm256_mul_ps (_mm256_loadu_ps (q + 32), _mm256_loadu_ps (r + 32));
  for (int c = 8; c < 32; c += 8) {
    lo = _mm256_fmadd_ps (_mm256_loadu_ps (q + c), _mm256_loadu_ps (r + c), lo);
    hi = _mm256_fmadd_ps (_mm256_loadu_ps (q + 32 + c), _mm256_loadu_ps (r + 32 + c), hi);
  }
  return _mm256_add_ps (lo, hi);
}

/* The lane sums of a[0..8) as one vector, lane t = sum of a[t]'s lanes:
 * pairwise horizontal adds within the 128-bit halves, then the halves. */
AVX2_TARGET static inline __m256
sum8 (const __m256 a[KEYS8])
{
  const __m256 h0123 = _mm256_hadd_ps (_mm256_hadd_ps (a[0], a[1]), _mm256_hadd_ps (a[2], a[3]));
  const __m256 h4567 = _mm256_hadd_ps (_mm256_hadd_ps (a[4], a[5]), _mm256_hadd_ps (a[6], a[7]));
  return _mm256_add_ps (_mm256_permute2f128_ps (h0123, h4567, 0x20),
                        _mm256_permute2f128_ps (h0123, h4567, 0x31));
}

/* s[i][j] = scale * q_i . k_j: each block of 8 keys is converted once into
 * kb (2 KB) and used by every query; a last partial block goes through the
 * same sums, its missing keys zero. */
AVX2_TARGET static void
scores_avx2 (float *s, const float *q, int q_stride, const uint16_t *k, int n_q, int n_kv,
             float scale, float *kb)
{
  const __m256 vscale = _mm256_set1_ps (scale);
  for (int j0 = 0; j0 < n_kv; j0 += KEYS8) {
    const int nk = MIN (KEYS8, n_kv - j0);
    const uint16_t *kj = k + (size_t) j0 * DH;
    for (int t = 0; t < nk * DH; t += 8)
      _mm256_storeu_ps (kb + t, load_half8 (kj + t));
    for (int t = nk * DH; t < KEYS8 * DH; t += 8)
      _mm256_storeu_ps (kb + t, _mm256_setzero_ps ());
    for (int i = 0; i < n_q; i++) {
      const float *qi = q + (size_t) i * q_stride;
      __m256 a[KEYS8];
      for (int t = 0; t < KEYS8; t++)
        a[t] = dot8 (qi, kb + t * DH);
      const __m256 sums = _mm256_mul_ps (sum8 (a), vscale);
      if (nk == KEYS8) {
        _mm256_storeu_ps (s + (size_t) i * n_kv + j0, sums);
      } else {
        float lanes[KEYS8];
        _mm256_storeu_ps (lanes, sums);
        memcpy (s + (size_t) i * n_kv + j0, lanes, nk * sizeof (float));
      }
    }
  }
}

/* out_i = sum_j p_i[j] v_j, one query and one half of the head (32
 * values: 4 + 4 accumulators) at a time, even and odd keys apart and added
 * at the end, the last odd key with the even ones: per lane the operations
 * of values_avx512 (), so the same bits. */
AVX2_TARGET static void
values_avx2 (float *out, int out_stride, const float *p, int n_q, int n_kv, const uint16_t *v)
{
  for (int i = 0; i < n_q; i++) {
    const float *pi = p + (size_t) i * n_kv;
    for (int half = 0; half < DH; half += 32) {
      __m256 even[4], odd[4];
      for (int c = 0; c < 4; c++)
        even[c] = odd[c] = _mm256_setzero_ps ();
      int j = 0;
      for (; j + 2 <= n_kv; j += 2) {
        const uint16_t *v0 = v + (size_t) j * DH + half;
        const __m256 p0 = _mm256_set1_ps (pi[j]), p1 = _mm256_set1_ps (pi[j + 1]);
        for (int c = 0; c < 4; c++) {
          even[c] = _mm256_fmadd_ps (p0, load_half8 (v0 + 8 * c), even[c]);
          odd[c] = _mm256_fmadd_ps (p1, load_half8 (v0 + DH + 8 * c), odd[c]);
        }
      }
      if (j < n_kv) {
        const uint16_t *v0 = v + (size_t) j * DH + half;
        const __m256 p0 = _mm256_set1_ps (pi[j]);
        for (int c = 0; c < 4; c++)
          even[c] = _mm256_fmadd_ps (p0, load_half8 (v0 + 8 * c), even[c]);
      }
      for (int c = 0; c < 4; c++)
        _mm256_storeu_ps (out + (size_t) i * out_stride + half + 8 * c,
                          _mm256_add_ps (even[c], odd[c]));
    }
  }
}

AVX2_TARGET static void
attention_f16kv_avx2 (float *out, int out_stride, const float *q, int q_stride,
                      const uint16_t *k, const uint16_t *v, int n_q, int n_kv, float scale,
                      float *scratch)
{
  float *kb = scratch + (size_t) n_q * n_kv;
  scores_avx2 (scratch, q, q_stride, k, n_q, n_kv, scale, kb);
  for (int i = 0; i < n_q; i++)
    whisper_cpu_softmax (scratch + (size_t) i * n_kv, n_kv);
  values_avx2 (out, out_stride, scratch, n_q, n_kv, v);
}
#endif

void
whisper_cpu_attention_f16kv (float *out, int out_stride, const float *q, int q_stride,
                             const uint16_t *k, const uint16_t *v, int n_q, int n_kv, int dh,
                             float scale, float *scratch)
{
#if defined(__x86_64__)
  if (dh == DH && whisper_cpu_have_avx512 ()) {
    attention_f16kv_avx512 (out, out_stride, q, q_stride, k, v, n_q, n_kv, scale, scratch);
    return;
  }
  if (dh == DH && whisper_cpu_have_avx2 ()) {
    attention_f16kv_avx2 (out, out_stride, q, q_stride, k, v, n_q, n_kv, scale, scratch);
    return;
  }
#endif
  attention_f16kv_generic (out, out_stride, q, q_stride, k, v, n_q, n_kv, dh, scale, scratch);
}
