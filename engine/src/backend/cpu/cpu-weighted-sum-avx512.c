/* cpu-weighted-sum-avx512.c: the value side of attention for a few
 * queries (decode steps), out_h = sum_j p_h[j] v_j[h], on AVX-512 with the
 * accumulators in registers while a block of keys is summed (see
 * cpu-kernels.h).
 *
 * The AVX2 version keeps its accumulators in memory: 64 floats per head,
 * even and odd keys apart, are 16 ymm registers per head, more than AVX2
 * has, so every key costs a load and a store per 8 floats. Here a head's
 * 128 accumulator floats are 8 zmm, three heads 24 of the 32. Each float
 * lane still sees the AVX2 version's operations in the same order (even keys
 * and odd keys summed apart by fused multiply-adds, then added), so the
 * results are bit-identical to it. */
#include "cpu-kernels.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX512_TARGET __attribute__ ((target ("avx512f,avx2,fma")))
#define DH 64            /* the head size of every Whisper model */
#define MAX_GROUP 3      /* heads per pass: 24 accumulators */
#define KEY_BLOCK 256    /* keys whose value rows stay cached for every query (even) */
#define ACC_FLOATS (2 * MAX_GROUP * DH) /* one query's accumulators */

/* Keys [j0, j1) (j0 even) added to one query's accumulators of nh heads:
 * `acc` holds them in memory (per head DH floats of even keys, then DH of
 * odd keys), loaded into registers
 * for the range and stored back, so a call over a range and a call over
 * two halves of it give the same bits. A last odd key (j1 odd) goes to the
 * even sums, as in the AVX2 version. */
AVX512_TARGET static inline __attribute__ ((always_inline)) void
weighted_sum_range (float *acc, const float *p, int p_stride, const float *v, int kv_stride,
                    int j0, int j1, int n_kv, const int nh)
{
  (void) n_kv; /* no software prefetch (see cpu-kernels.c's attention_heads_avx2) */
  __m512 even[MAX_GROUP][DH / 16], odd[MAX_GROUP][DH / 16];
  for (int h = 0; h < nh; h++)
    for (int c = 0; c < DH / 16; c++) {
      even[h][c] = _mm512_loadu_ps (acc + (2 * h) * DH + 16 * c);
      odd[h][c] = _mm512_loadu_ps (acc + (2 * h + 1) * DH + 16 * c);
    }
  int j = j0;
  for (; j + 2 <= j1; j += 2) {
    const float *v0 = v + (size_t) j * kv_stride, *v1 = v0 + kv_stride;
    for (int h = 0; h < nh; h++) {
      const __m512 p0 = _mm512_set1_ps (p[(size_t) h * p_stride + j]);
      const __m512 p1 = _mm512_set1_ps (p[(size_t) h * p_stride + j + 1]);
      for (int c = 0; c < DH / 16; c++) {
        even[h][c] = _mm512_fmadd_ps (p0, _mm512_loadu_ps (v0 + h * DH + 16 * c), even[h][c]);
        odd[h][c] = _mm512_fmadd_ps (p1, _mm512_loadu_ps (v1 + h * DH + 16 * c), odd[h][c]);
      }
    }
  }
  if (j < j1) {
    const float *v0 = v + (size_t) j * kv_stride;
    for (int h = 0; h < nh; h++) {
      const __m512 p0 = _mm512_set1_ps (p[(size_t) h * p_stride + j]);
      for (int c = 0; c < DH / 16; c++)
        even[h][c] = _mm512_fmadd_ps (p0, _mm512_loadu_ps (v0 + h * DH + 16 * c), even[h][c]);
    }
  }
  for (int h = 0; h < nh; h++)
    for (int c = 0; c < DH / 16; c++) {
      _mm512_storeu_ps (acc + (2 * h) * DH + 16 * c, even[h][c]);
      _mm512_storeu_ps (acc + (2 * h + 1) * DH + 16 * c, odd[h][c]);
    }
}

/* out = even + odd for nh heads of one query's accumulators. */
AVX512_TARGET static inline void
weighted_sum_finish (float *out, const float *acc, int nh)
{
  for (int h = 0; h < nh; h++)
    for (int c = 0; c < DH / 16; c++)
      _mm512_storeu_ps (out + h * DH + 16 * c,
                        _mm512_add_ps (_mm512_loadu_ps (acc + (2 * h) * DH + 16 * c),
                                       _mm512_loadu_ps (acc + (2 * h + 1) * DH + 16 * c)));
}

/* Keys [j0, j1) for group size nh, dispatched to a constant nh so that the
 * accumulators stay in registers. */
AVX512_TARGET static void
weighted_sum_range_any (float *acc, const float *p, int p_stride, const float *v, int kv_stride,
                        int j0, int j1, int n_kv, int nh)
{
  switch (nh) {
  case 1: weighted_sum_range (acc, p, p_stride, v, kv_stride, j0, j1, n_kv, 1); break;
  case 2: weighted_sum_range (acc, p, p_stride, v, kv_stride, j0, j1, n_kv, 2); break;
  default: weighted_sum_range (acc, p, p_stride, v, kv_stride, j0, j1, n_kv, 3); break;
  }
}

/* n_q queries (query i: probabilities at p + i * p_query_stride, output at
 * out + i * out_stride) over the same values: per group of heads and block
 * of KEY_BLOCK keys every query in turn, so the block's value rows come
 * from memory once and from cache for the other queries. */
AVX512_TARGET static void
weighted_sum_avx512 (float *out, int out_stride, const float *p, int p_stride,
                     size_t p_query_stride, const float *v, int kv_stride, int n_kv,
                     int n_heads, int n_q, float *acc)
{
  for (int h0 = 0; h0 < n_heads; h0 += MAX_GROUP) {
    const int nh = MIN (MAX_GROUP, n_heads - h0);
    const float *vh = v + h0 * DH;
    memset (acc, 0, (size_t) n_q * ACC_FLOATS * sizeof (float));
    for (int j0 = 0; j0 < n_kv; j0 += KEY_BLOCK) {
      const int j1 = MIN (n_kv, j0 + KEY_BLOCK);
      for (int i = 0; i < n_q; i++)
        weighted_sum_range_any (acc + (size_t) i * ACC_FLOATS,
                                p + i * p_query_stride + (size_t) h0 * p_stride, p_stride, vh,
                                kv_stride, j0, j1, n_kv, nh);
    }
    for (int i = 0; i < n_q; i++)
      weighted_sum_finish (out + (size_t) i * out_stride + h0 * DH, acc + (size_t) i * ACC_FLOATS,
                           nh);
  }
}

#endif

gboolean
whisper_cpu_weighted_sum_avx512 (float *out, int out_stride, const float *p, int p_stride,
                                 size_t p_query_stride, const float *v, int kv_stride, int n_kv,
                                 int dh, int n_heads, int n_q, float *scratch)
{
#if defined(__x86_64__)
  if (dh == DH && whisper_cpu_have_avx512 ()) {
    weighted_sum_avx512 (out, out_stride, p, p_stride, p_query_stride, v, kv_stride, n_kv,
                         n_heads, n_q, scratch);
    return TRUE;
  }
#else
  (void) out; (void) out_stride; (void) p; (void) p_stride; (void) p_query_stride; (void) v;
  (void) kv_stride; (void) n_kv; (void) dh; (void) n_heads; (void) n_q; (void) scratch;
#endif
  return FALSE;
}
