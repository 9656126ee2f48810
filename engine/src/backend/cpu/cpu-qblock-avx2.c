/* cpu-qblock-avx2.c: the block kernels on AVX2 (cpu-qblock.h): the byte
 * products with vpmaddubsw, summed to int32 with vpmaddwd. Codes reach 31
 * (q5) and the quants 127 in magnitude, so no pair sum saturates int16;
 * q8_0 goes by |w| (at most 128) and q with w's sign. */
#include "cpu-qblock.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define QB_TARGET __attribute__ ((target ("avx2,fma,f16c")))
#define QB_DOT(u, s) _mm256_madd_epi16 (_mm256_maddubs_epi16 ((u), (s)), _mm256_set1_epi16 (1))
#define QB_SUFFIX avx2
#define QB_TW 4
#define QB_TX 2 /* 8 accumulators: AVX2 has 16 registers */
#define QB_Q8_SIGNED 1
/* the panels' sums: vpmaddubsw then vpmaddwd by ones */
#define QB_PANEL_I16 1 /* int16 sums of 4 groups of codes up to 5 bits */
#define QB_PANEL_ACC(acc, u, s)                                                                \
  _mm256_add_epi32 ((acc), _mm256_madd_epi16 (_mm256_maddubs_epi16 ((u), (s)),               \
                                              _mm256_set1_epi16 (1)))

/* byte j of the result: 0x10 where bit j of bits is set (each byte gets
 * byte j / 8 of bits, then tests its own bit) */
QB_TARGET static inline __m256i
qb_fifth_avx2 (uint32_t bits)
{
  const __m256i spread = _mm256_set_epi64x (0x0303030303030303, 0x0202020202020202,
                                            0x0101010101010101, 0);
  __m256i v = _mm256_shuffle_epi8 (_mm256_set1_epi32 ((int) bits), spread);
  v = _mm256_or_si256 (v, _mm256_set1_epi64x ((long long) 0x7fbfdfeff7fbfdfeULL));
  v = _mm256_cmpeq_epi8 (v, _mm256_set1_epi64x (-1));
  return _mm256_and_si256 (v, _mm256_set1_epi8 (0x10));
}
#define QB_FIFTH(bits) qb_fifth_avx2 (bits)

#include "cpu-qblock-x86.h"

const WhisperCpuQblockKernels *
whisper_cpu_qblock_avx2 (void)
{
  static const WhisperCpuQblockKernels kernels = { "avx2", qb_dot_avx2, qb_gemm_avx2, qb_gemv_avx2 };
  return &kernels;
}
#else
const WhisperCpuQblockKernels *
whisper_cpu_qblock_avx2 (void)
{
  return NULL;
}
#endif
