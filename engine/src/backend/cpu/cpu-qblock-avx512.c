/* cpu-qblock-avx512.c: the block kernels with AVX-512 VNNI (cpu-qblock.h):
 * each 4-byte product sum in one vpdpbusd (on 256-bit vectors, AVX512-VL),
 * the fifth bits of q5 by a byte mask (AVX512-BW). */
#include "cpu-qblock.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define QB_TARGET \
  __attribute__ ((target ("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define QB_DOT(u, s) _mm256_dpbusd_epi32 (_mm256_setzero_si256 (), (u), (s))
#define QB_FIFTH(bits) _mm256_maskz_mov_epi8 ((__mmask32) (bits), _mm256_set1_epi8 (0x10))
#define QB_SUFFIX avx512
#define QB_TW 4
#define QB_TX 4 /* 16 accumulators of the 32 registers */
#define QB_Q8_SIGNED 0 /* vpdpbusd does not saturate */
#define QB_PANEL_I16 0 /* int16 sums of 4 groups of codes up to 5 bits */
#define QB_PANEL_ACC(acc, u, s) _mm256_dpbusd_epi32 ((acc), (u), (s))

#include "cpu-qblock-x86.h"

const WhisperCpuQblockKernels *
whisper_cpu_qblock_avx512 (void)
{
  static const WhisperCpuQblockKernels kernels = { "avx512", qb_dot_avx512, qb_gemm_avx512, qb_gemv_avx512 };
  return &kernels;
}
#else
const WhisperCpuQblockKernels *
whisper_cpu_qblock_avx512 (void)
{
  return NULL;
}
#endif
