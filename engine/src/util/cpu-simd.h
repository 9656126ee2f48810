/* cpu-simd.h: what the CPU kernels' x86 versions share: the target
 * attribute and the one horizontal sum whose order every kernel that must
 * give the same bits as another uses. */
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#define AVX2_TARGET __attribute__ ((target ("avx2,fma,f16c")))

/* (v0 + v4, v1 + v5, v2 + v6, v3 + v7), then ((a0 + a2) + (a1 + a3)) */
AVX2_TARGET static inline float
hsum256 (__m256 v)
{
  __m128 lo = _mm256_castps256_ps128 (v), hi = _mm256_extractf128_ps (v, 1);
  lo = _mm_add_ps (lo, hi);
  lo = _mm_add_ps (lo, _mm_movehl_ps (lo, lo));
  lo = _mm_add_ss (lo, _mm_shuffle_ps (lo, lo, 1));
  return _mm_cvtss_f32 (lo);
}
#endif
