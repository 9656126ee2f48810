/* cpu-qblock-x86.h: the body of the x86 block kernels (cpu-qblock.h), 256
 * bits wide, one block of 32 codes per vector. Included by
 * cpu-qblock-avx2.c and cpu-qblock-avx512.c, which define first:
 *
 *   QB_TARGET       the function attribute of their instruction set
 *   QB_DOT(u, s)    eight int32 sums of 4 products of unsigned bytes u by
 *                   signed bytes s each
 *   QB_FIFTH(bits)  32 bytes, 0x10 where bit j of the uint32 is set
 *   QB_SUFFIX       the name of their kernel set
 */
#include "cpu-qblock.h"
#include "cpu-simd.h"
#include "qblock.h"

#include <string.h>

#define QB_CAT2(a, b) a##b
#define QB_CAT(a, b) QB_CAT2 (a, b)
#define QB_GROUP 4 /* input rows per pass over a weight row's blocks */

QB_TARGET static inline float
qb_half (const uint8_t *p)
{
  uint16_t h;
  memcpy (&h, p, 2);
  return _cvtsh_ss (h);
}

/* codes 0..15: the low nibbles of qs[0..16) then the high ones */
QB_TARGET static inline __m256i
qb_nibbles (const uint8_t *qs)
{
  const __m128i v = _mm_loadu_si128 ((const __m128i *) qs), low = _mm_set1_epi8 (0x0f);
  return _mm256_set_m128i (_mm_and_si128 (_mm_srli_epi16 (v, 4), low), _mm_and_si128 (v, low));
}

QB_TARGET static inline uint32_t
qb_le32 (const uint8_t *p)
{
  uint32_t v;
  memcpy (&v, p, 4);
  return GUINT32_FROM_LE (v);
}

/* One weight row of `type` (a constant where this is inlined) against
 * input rows [i0, i1), QB_GROUP at a time; every row's sum takes the blocks
 * in order, whatever the group. */
QB_TARGET static inline __attribute__ ((always_inline)) void
qb_rows (WhisperDType type, const uint8_t *w, int n_blocks, const WhisperCpuQRows *x, int i0,
         int i1, float *out, size_t out_stride)
{
  const size_t bytes = whisper_qblock_bytes (type);
  const int has_min = type == WHISPER_DTYPE_Q4_1 || type == WHISPER_DTYPE_Q5_1;
  const float offset = type == WHISPER_DTYPE_Q4_0 ? 8.0f : type == WHISPER_DTYPE_Q5_0 ? 16.0f : 0.0f;
  for (int g0 = i0; g0 < i1; g0 += QB_GROUP) {
    const int ng = MIN (QB_GROUP, i1 - g0);
    __m256 acc[QB_GROUP];
    float corr[QB_GROUP];
    for (int k = 0; k < QB_GROUP; k++) {
      acc[k] = _mm256_setzero_ps ();
      corr[k] = 0.0f;
    }
    for (int b = 0; b < n_blocks; b++) {
      const uint8_t *blk = w + (size_t) b * bytes;
      const float dw = qb_half (blk), m = has_min ? qb_half (blk + 2) : 0.0f;
      const float c = m - offset * dw; /* q8_0: |w| by q with w's sign, no offset */
      __m256i u, w8 = _mm256_setzero_si256 ();
      switch (type) {
      case WHISPER_DTYPE_Q4_0: u = qb_nibbles (blk + 2); break;
      case WHISPER_DTYPE_Q4_1: u = qb_nibbles (blk + 4); break;
      case WHISPER_DTYPE_Q5_0:
        u = _mm256_or_si256 (qb_nibbles (blk + 6), QB_FIFTH (qb_le32 (blk + 2)));
        break;
      case WHISPER_DTYPE_Q5_1:
        u = _mm256_or_si256 (qb_nibbles (blk + 8), QB_FIFTH (qb_le32 (blk + 4)));
        break;
      default:
        w8 = _mm256_loadu_si256 ((const __m256i *) (blk + 2));
        u = _mm256_sign_epi8 (w8, w8);
        break;
      }
      for (int k = 0; k < ng; k++) {
        const size_t at = (size_t) (g0 + k) * x->n_blocks + b;
        __m256i s = _mm256_loadu_si256 ((const __m256i *) (x->q + at * 32));
        if (type == WHISPER_DTYPE_Q8_0)
          s = _mm256_sign_epi8 (s, w8);
        acc[k] = _mm256_fmadd_ps (_mm256_cvtepi32_ps (QB_DOT (u, s)),
                                  _mm256_set1_ps (dw * x->d[at]), acc[k]);
        corr[k] += c * x->s[at];
      }
    }
    for (int k = 0; k < ng; k++)
      out[(size_t) (g0 - i0 + k) * out_stride] = hsum256 (acc[k]) + corr[k];
  }
}

#define QB_ROWS_OF(TYPE, tag)                                                                  \
  QB_TARGET static void QB_CAT (qb_rows_##tag##_, QB_SUFFIX) (                                 \
      const uint8_t *w, int n_blocks, const WhisperCpuQRows *x, int i0, int i1, float *out,    \
      size_t out_stride)                                                                       \
  {                                                                                            \
    qb_rows (TYPE, w, n_blocks, x, i0, i1, out, out_stride);                                   \
  }
QB_ROWS_OF (WHISPER_DTYPE_Q4_0, q4_0)
QB_ROWS_OF (WHISPER_DTYPE_Q4_1, q4_1)
QB_ROWS_OF (WHISPER_DTYPE_Q5_0, q5_0)
QB_ROWS_OF (WHISPER_DTYPE_Q5_1, q5_1)
QB_ROWS_OF (WHISPER_DTYPE_Q8_0, q8_0)

static void
QB_CAT (qb_dot_, QB_SUFFIX) (WhisperDType type, const uint8_t *w, int n_blocks,
                             const WhisperCpuQRows *x, int i0, int i1, float *out,
                             size_t out_stride)
{
  switch (type) {
  case WHISPER_DTYPE_Q4_0: QB_CAT (qb_rows_q4_0_, QB_SUFFIX) (w, n_blocks, x, i0, i1, out, out_stride); return;
  case WHISPER_DTYPE_Q4_1: QB_CAT (qb_rows_q4_1_, QB_SUFFIX) (w, n_blocks, x, i0, i1, out, out_stride); return;
  case WHISPER_DTYPE_Q5_0: QB_CAT (qb_rows_q5_0_, QB_SUFFIX) (w, n_blocks, x, i0, i1, out, out_stride); return;
  case WHISPER_DTYPE_Q5_1: QB_CAT (qb_rows_q5_1_, QB_SUFFIX) (w, n_blocks, x, i0, i1, out, out_stride); return;
  case WHISPER_DTYPE_Q8_0: QB_CAT (qb_rows_q8_0_, QB_SUFFIX) (w, n_blocks, x, i0, i1, out, out_stride); return;
  default: g_return_if_reached ();
  }
}
