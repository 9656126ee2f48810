/* cpu-weighted-sum-avx512.c: the value side of one-query attention,
 * out_h = sum_j p_h[j] v_j[h], on AVX-512 with every accumulator in a
 * register (see cpu-kernels.h).
 *
 * The AVX2 version keeps its accumulators in memory: 64 floats per head,
 * even and odd keys apart, are 16 ymm registers per head, more than AVX2
 * has, so every key costs a load and a store per 8 floats. Here a head's
 * 128 accumulator floats are 8 zmm, three heads 24 of the 32. Each float
 * lane still sees the AVX2 version's operations in the same order (even keys
 * and odd keys summed apart by fused multiply-adds, then added), so the
 * results are bit-identical to it. */
#include "cpu-kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX512_TARGET __attribute__ ((target ("avx512f,avx2,fma")))
#define DH 64            /* the head size of every Whisper model */
#define MAX_GROUP 3      /* heads per pass: 24 accumulators */
#define PREFETCH_ROWS 16

AVX512_TARGET static inline __attribute__ ((always_inline)) void
weighted_sum_group (float *out, const float *p, int p_stride, const float *v, int kv_stride,
                    int n_kv, const int nh)
{
  __m512 even[MAX_GROUP][DH / 16], odd[MAX_GROUP][DH / 16];
  for (int h = 0; h < nh; h++)
    for (int c = 0; c < DH / 16; c++)
      even[h][c] = odd[h][c] = _mm512_setzero_ps ();
  int j = 0;
  for (; j + 2 <= n_kv; j += 2) {
    const float *v0 = v + (size_t) j * kv_stride, *v1 = v0 + kv_stride;
    if (j + PREFETCH_ROWS + 2 <= n_kv)
      for (int c = 0; c < nh * DH; c += 16) {
        _mm_prefetch ((const char *) (v0 + PREFETCH_ROWS * (size_t) kv_stride + c), _MM_HINT_T0);
        _mm_prefetch ((const char *) (v1 + PREFETCH_ROWS * (size_t) kv_stride + c), _MM_HINT_T0);
      }
    for (int h = 0; h < nh; h++) {
      const __m512 p0 = _mm512_set1_ps (p[(size_t) h * p_stride + j]);
      const __m512 p1 = _mm512_set1_ps (p[(size_t) h * p_stride + j + 1]);
      for (int c = 0; c < DH / 16; c++) {
        even[h][c] = _mm512_fmadd_ps (p0, _mm512_loadu_ps (v0 + h * DH + 16 * c), even[h][c]);
        odd[h][c] = _mm512_fmadd_ps (p1, _mm512_loadu_ps (v1 + h * DH + 16 * c), odd[h][c]);
      }
    }
  }
  if (j < n_kv) {
    const float *v0 = v + (size_t) j * kv_stride;
    for (int h = 0; h < nh; h++) {
      const __m512 p0 = _mm512_set1_ps (p[(size_t) h * p_stride + j]);
      for (int c = 0; c < DH / 16; c++)
        even[h][c] = _mm512_fmadd_ps (p0, _mm512_loadu_ps (v0 + h * DH + 16 * c), even[h][c]);
    }
  }
  for (int h = 0; h < nh; h++)
    for (int c = 0; c < DH / 16; c++)
      _mm512_storeu_ps (out + h * DH + 16 * c, _mm512_add_ps (even[h][c], odd[h][c]));
}

AVX512_TARGET static void
weighted_sum_avx512 (float *out, const float *p, int p_stride, const float *v, int kv_stride,
                     int n_kv, int n_heads)
{
  for (int h0 = 0; h0 < n_heads; h0 += MAX_GROUP) {
    float *o = out + h0 * DH;
    const float *ph = p + (size_t) h0 * p_stride, *vh = v + h0 * DH;
    switch (MIN (MAX_GROUP, n_heads - h0)) {
    case 1: weighted_sum_group (o, ph, p_stride, vh, kv_stride, n_kv, 1); break;
    case 2: weighted_sum_group (o, ph, p_stride, vh, kv_stride, n_kv, 2); break;
    default: weighted_sum_group (o, ph, p_stride, vh, kv_stride, n_kv, 3); break;
    }
  }
}

#endif

gboolean
whisper_cpu_weighted_sum_avx512 (float *out, const float *p, int p_stride, const float *v,
                                 int kv_stride, int n_kv, int dh, int n_heads)
{
#if defined(__x86_64__)
  if (dh == DH && whisper_cpu_have_avx512 ()) {
    weighted_sum_avx512 (out, p, p_stride, v, kv_stride, n_kv, n_heads);
    return TRUE;
  }
#else
  (void) out; (void) p; (void) p_stride; (void) v; (void) kv_stride; (void) n_kv; (void) dh;
  (void) n_heads;
#endif
  return FALSE;
}
