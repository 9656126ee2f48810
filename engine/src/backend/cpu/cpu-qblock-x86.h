/* cpu-qblock-x86.h: the body of the x86 block kernels (cpu-qblock.h), 256
 * bits wide, one block of 32 codes per vector. Included by
 * cpu-qblock-avx2.c and cpu-qblock-avx512.c, which define first:
 *
 *   QB_TARGET       the function attribute of their instruction set
 *   QB_DOT(u, s)    eight int32 sums of 4 products of unsigned bytes u by
 *                   signed bytes s each
 *   QB_FIFTH(bits)  32 bytes, 0x10 where bit j of the uint32 is set
 *   QB_SUFFIX       the name of their kernel set
 *   QB_TW, QB_TX    the many-row tile: weight rows by input rows
 *   QB_Q8_SIGNED    1: q8_0 by |w| and q with w's sign (no saturating
 *                   sums); 0: by its codes (int8 + 128), as the others
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

#define QB_IS_K(type) \
  ((type) == WHISPER_DTYPE_Q4_K || (type) == WHISPER_DTYPE_Q5_K || (type) == WHISPER_DTYPE_Q6_K)
/* a k-quant super-block's bytes (qblock.h), a constant where inlined */
#define QB_K_BYTES(type) \
  ((type) == WHISPER_DTYPE_Q4_K ? 144 : (type) == WHISPER_DTYPE_Q5_K ? 176 : 210)

/* Bytes of a weight row of n_blocks blocks of 32 values. */
static inline size_t
qb_row_bytes (WhisperDType type, int n_blocks)
{
  return whisper_dtype_row_bytes (type, 32 * n_blocks);
}

/* The 32 codes of block b (32 values) of the k-quant row w (qblock.h): q4_K
 * and q5_K the low or high nibbles of 32 bytes (and bit b % 8 of q5_K's
 * qh[32]), q6_K the low or high nibbles of 32 bytes of ql and 2 bits of
 * qh. */
QB_TARGET static inline __m256i
qb_k_codes (WhisperDType type, const uint8_t *w, int b)
{
  const uint8_t *blk = w + (size_t) (b / 8) * QB_K_BYTES (type);
  const int s = b % 8;
  const __m256i low = _mm256_set1_epi8 (0x0f);
  if (type == WHISPER_DTYPE_Q6_K) {
    const int h = s / 4, c = s % 4;
    const __m256i ql = _mm256_loadu_si256 ((const __m256i *) (blk + 64 * h + 32 * (c & 1)));
    const __m256i qh = _mm256_loadu_si256 ((const __m256i *) (blk + 128 + 32 * h));
    const __m256i lo = _mm256_and_si256 (_mm256_srl_epi16 (ql, _mm_cvtsi32_si128 (4 * (c >> 1))), low);
    const __m256i hi = _mm256_and_si256 (_mm256_srl_epi16 (qh, _mm_cvtsi32_si128 (2 * c)),
                                         _mm256_set1_epi8 (3));
    return _mm256_or_si256 (lo, _mm256_slli_epi16 (hi, 4)); /* hi < 4: no carry across bytes */
  }
  const __m256i qs = _mm256_loadu_si256 (
      (const __m256i *) (blk + (type == WHISPER_DTYPE_Q4_K ? 16 : 48) + 32 * (s / 2)));
  __m256i u = _mm256_and_si256 (_mm256_srl_epi16 (qs, _mm_cvtsi32_si128 (4 * (s & 1))), low);
  if (type == WHISPER_DTYPE_Q5_K) {
    const __m256i bit = _mm256_set1_epi8 ((char) (1 << s));
    const __m256i qh = _mm256_loadu_si256 ((const __m256i *) (blk + 16));
    u = _mm256_or_si256 (u, _mm256_and_si256 (_mm256_cmpeq_epi8 (_mm256_and_si256 (qh, bit), bit),
                                              _mm256_set1_epi8 (0x10)));
  }
  return u;
}

/* The scale and offset term per half of 16 (qblock.h) of the 8 blocks of
 * 32 of super-block blk. */
QB_TARGET static inline void
qb_k_scales8 (WhisperDType type, const uint8_t *blk, float d[8][2], float c[8][2])
{
  if (type == WHISPER_DTYPE_Q6_K) {
    const float dd = qb_half (blk + 208);
    for (int s = 0; s < 8; s++)
      for (int h = 0; h < 2; h++) {
        d[s][h] = dd * (float) (int8_t) blk[192 + 2 * s + h];
        c[s][h] = -32.0f * d[s][h];
      }
    return;
  }
  const float dd = qb_half (blk), dmin = qb_half (blk + 2);
  const uint8_t *q = blk + 4;
  for (int s = 0; s < 8; s++) {
    int sc, m;
    if (s < 4) {
      sc = q[s] & 63;
      m = q[s + 4] & 63;
    } else {
      sc = (q[s + 4] & 0x0f) | (q[s - 4] >> 6) << 4;
      m = (q[s + 4] >> 4) | (q[s] >> 6) << 4;
    }
    d[s][0] = d[s][1] = dd * (float) sc;
    c[s][0] = c[s][1] = -(dmin * (float) m);
  }
}

/* A vector of the two halves' scales: lanes 0-3 (the sums of values
 * 0..15) d[0], lanes 4-7 d[1]. */
QB_TARGET static inline __m256
qb_halves (const float d[2])
{
  return _mm256_set_m128 (_mm_set1_ps (d[1]), _mm_set1_ps (d[0]));
}

/* One weight row of `type` (a constant where this is inlined) against
 * input rows [i0, i1), QB_GROUP at a time; every row's sum takes the blocks
 * in order, whatever the group. */
QB_TARGET static inline __attribute__ ((always_inline)) void
qb_rows (WhisperDType type, const uint8_t *w, int n_blocks, const WhisperCpuQRows *x, int i0,
         int i1, float *out, size_t out_stride)
{
  const size_t bytes = QB_IS_K (type) ? 0 : whisper_qblock_bytes (type);
  const int has_min = type == WHISPER_DTYPE_Q4_1 || type == WHISPER_DTYPE_Q5_1;
  const float offset = type == WHISPER_DTYPE_Q4_0 ? 8.0f : type == WHISPER_DTYPE_Q5_0 ? 16.0f : 0.0f;
  for (int g0 = i0; g0 < i1; g0 += QB_GROUP) {
    const int ng = MIN (QB_GROUP, i1 - g0);
    __m256 acc[QB_GROUP];
    float corr[QB_GROUP];
    float kd[1][8][2], kc[1][8][2]; /* k-quants: the super-block's scales */
    for (int k = 0; k < QB_GROUP; k++) {
      acc[k] = _mm256_setzero_ps ();
      corr[k] = 0.0f;
    }
    for (int b = 0; b < n_blocks; b++) {
      if (QB_IS_K (type)) {
        if (b % 8 == 0)
          qb_k_scales8 (type, w + (size_t) (b / 8) * QB_K_BYTES (type), kd[0], kc[0]);
        const float *dk = kd[0][b % 8], *ck = kc[0][b % 8];
        const __m256i u = qb_k_codes (type, w, b);
        const __m256 dv = qb_halves (dk);
        for (int k = 0; k < ng; k++) {
          const size_t at = (size_t) (g0 + k) * x->n_blocks + b;
          const __m256i s = _mm256_loadu_si256 ((const __m256i *) (x->q + at * 32));
          acc[k] = _mm256_fmadd_ps (_mm256_cvtepi32_ps (QB_DOT (u, s)),
                                    _mm256_mul_ps (dv, _mm256_set1_ps (x->d[at])), acc[k]);
          corr[k] += ck[0] * x->s16[2 * at] + ck[1] * x->s16[2 * at + 1];
        }
        continue;
      }
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

/* Σ_b c[b] s[b]: the offset and minimum terms of a weight row and an
 * input row, in one pass after the products. */
QB_TARGET static inline float
qb_dot_f32 (const float *c, const float *s, int n)
{
  __m256 acc = _mm256_setzero_ps ();
  int b = 0;
  for (; b + 8 <= n; b += 8)
    acc = _mm256_fmadd_ps (_mm256_loadu_ps (c + b), _mm256_loadu_ps (s + b), acc);
  float sum = hsum256 (acc);
  for (; b < n; b++)
    sum += c[b] * s[b];
  return sum;
}

/* qb_tile's products for the k-quants: a super-block at a time, its 8
 * blocks' scales decoded once for the tile's weight rows. */
QB_TARGET static inline __attribute__ ((always_inline)) void
qb_tile_k (WhisperDType type, const uint8_t *w, size_t w_stride, int n_blocks,
           const WhisperCpuQRows *x, int i, const int tx, __m256 acc[QB_TW][QB_TX])
{
  for (int b0 = 0; b0 < n_blocks; b0 += 8) {
    float kd[QB_TW][8][2], kc[QB_TW][8][2];
    for (int k = 0; k < QB_TW; k++)
      qb_k_scales8 (type, w + k * w_stride + (size_t) (b0 / 8) * QB_K_BYTES (type), kd[k], kc[k]);
    for (int s = 0; s < 8; s++) {
      const int b = b0 + s;
      __m256i u[QB_TW];
      __m256 dw[QB_TW];
      for (int k = 0; k < QB_TW; k++) {
        dw[k] = qb_halves (kd[k][s]);
        u[k] = qb_k_codes (type, w + k * w_stride, b);
      }
      for (int j = 0; j < tx; j++) {
        const size_t at = (size_t) (i + j) * x->n_blocks + b;
        const __m256i q = _mm256_loadu_si256 ((const __m256i *) (x->q + at * 32));
        const __m256 dx = _mm256_broadcast_ss (x->d + at);
        for (int k = 0; k < QB_TW; k++)
          acc[k][j] = _mm256_fmadd_ps (_mm256_cvtepi32_ps (QB_DOT (u[k], q)),
                                       _mm256_mul_ps (dw[k], dx), acc[k][j]);
      }
    }
  }
}

/* Weight rows [r, r + QB_TW) by input rows [i, i + QB_TX): the block
 * products in registers (each weight block unpacked once for QB_TX input
 * rows, each input block loaded once for QB_TW weight rows), the offset
 * and minimum terms from c (QB_TW rows of n_blocks) afterwards. */
QB_TARGET static inline __attribute__ ((always_inline)) void
qb_tile (WhisperDType type, const uint8_t *w, size_t w_stride, int n_blocks,
         const WhisperCpuQRows *x, int i, const int tx, const float *c, float sums[QB_TW][QB_TX])
{
  const size_t bytes = QB_IS_K (type) ? 0 : whisper_qblock_bytes (type);
  const int head = type == WHISPER_DTYPE_Q4_1 || type == WHISPER_DTYPE_Q5_1 ? 4 : 2;
  const int signed_q8 = type == WHISPER_DTYPE_Q8_0 && QB_Q8_SIGNED;
  __m256 acc[QB_TW][QB_TX];
  for (int k = 0; k < QB_TW; k++)
    for (int j = 0; j < tx; j++)
      acc[k][j] = _mm256_setzero_ps ();
  if (QB_IS_K (type))
    qb_tile_k (type, w, w_stride, n_blocks, x, i, tx, acc);
  for (int b = 0; !QB_IS_K (type) && b < n_blocks; b++) {
    __m256i u[QB_TW], w8[QB_TW];
    __m256 dw[QB_TW];
    for (int k = 0; k < QB_TW; k++) {
      const uint8_t *blk = w + k * w_stride + (size_t) b * bytes;
      dw[k] = _mm256_set1_ps (qb_half (blk));
      switch (type) {
      case WHISPER_DTYPE_Q4_0:
      case WHISPER_DTYPE_Q4_1: u[k] = qb_nibbles (blk + head); break;
      case WHISPER_DTYPE_Q5_0:
      case WHISPER_DTYPE_Q5_1:
        u[k] = _mm256_or_si256 (qb_nibbles (blk + head + 4), QB_FIFTH (qb_le32 (blk + head)));
        break;
      default:
        w8[k] = _mm256_loadu_si256 ((const __m256i *) (blk + 2));
        u[k] = signed_q8 ? _mm256_sign_epi8 (w8[k], w8[k])
                         : _mm256_xor_si256 (w8[k], _mm256_set1_epi8 ((char) 0x80));
        break;
      }
    }
    for (int j = 0; j < tx; j++) {
      const size_t at = (size_t) (i + j) * x->n_blocks + b;
      const __m256i q = _mm256_loadu_si256 ((const __m256i *) (x->q + at * 32));
      const __m256 dx = _mm256_broadcast_ss (x->d + at);
      for (int k = 0; k < QB_TW; k++) {
        const __m256i s = signed_q8 ? _mm256_sign_epi8 (q, w8[k]) : q;
        acc[k][j] = _mm256_fmadd_ps (_mm256_cvtepi32_ps (QB_DOT (u[k], s)),
                                     _mm256_mul_ps (dw[k], dx), acc[k][j]);
      }
    }
  }
  /* the offset terms: one per block, q6_K's one per half of 16 */
  const int nc = type == WHISPER_DTYPE_Q6_K ? 2 * n_blocks : n_blocks;
  const float *xs = type == WHISPER_DTYPE_Q6_K ? x->s16 : x->s;
  for (int k = 0; k < QB_TW; k++)
    for (int j = 0; j < tx; j++)
      sums[k][j] = hsum256 (acc[k][j]) +
                   (c ? qb_dot_f32 (c + (size_t) k * nc, xs + (size_t) (i + j) * nc, nc) : 0.0f);
}

/* c[k][b] = m - offset * dw of weight row r + k's block b (the terms
 * qb_tile leaves out; q6_K: c[k][b][half]); FALSE when there are none
 * (q8_0 signed). */
QB_TARGET static inline gboolean
qb_offsets (WhisperDType type, const uint8_t *w, size_t w_stride, int n_blocks, float *c)
{
  if (type == WHISPER_DTYPE_Q8_0 && QB_Q8_SIGNED)
    return FALSE;
  if (QB_IS_K (type)) {
    const int per = type == WHISPER_DTYPE_Q6_K ? 2 : 1;
    for (int k = 0; k < QB_TW; k++)
      for (int b0 = 0; b0 < n_blocks; b0 += 8) {
        float dk[8][2], ck[8][2];
        qb_k_scales8 (type, w + k * w_stride + (size_t) (b0 / 8) * QB_K_BYTES (type), dk, ck);
        for (int b = b0; b < b0 + 8; b++)
          for (int h = 0; h < per; h++)
            c[((size_t) k * n_blocks + b) * per + h] = ck[b - b0][h];
      }
    return TRUE;
  }
  const size_t bytes = whisper_qblock_bytes (type);
  const int has_min = type == WHISPER_DTYPE_Q4_1 || type == WHISPER_DTYPE_Q5_1;
  const float offset = type == WHISPER_DTYPE_Q4_0   ? 8.0f
                       : type == WHISPER_DTYPE_Q5_0 ? 16.0f
                       : type == WHISPER_DTYPE_Q8_0 ? 128.0f : 0.0f;
  for (int k = 0; k < QB_TW; k++)
    for (int b = 0; b < n_blocks; b++) {
      const uint8_t *blk = w + k * w_stride + (size_t) b * bytes;
      c[(size_t) k * n_blocks + b] = (has_min ? qb_half (blk + 2) : 0.0f) - offset * qb_half (blk);
    }
  return TRUE;
}

/* y[i, r] (+)= the sums of rows [r0, r1) by [i0, i1): whole tiles, the
 * edges by qb_rows. */
static inline void
qb_store (float sums[QB_TW][QB_TX], int tx, float *y, size_t y_stride, int i, int r,
          gboolean accumulate)
{
  for (int k = 0; k < QB_TW; k++)
    for (int j = 0; j < tx; j++) {
      float *out = y + (size_t) (i + j) * y_stride + r + k;
      *out = (accumulate ? *out : 0.0f) + sums[k][j];
    }
}

QB_TARGET static inline __attribute__ ((always_inline)) void
qb_gemm (WhisperDType type, const uint8_t *w, int n_blocks, int r0, int r1,
         const WhisperCpuQRows *x, int i0, int i1, float *y, size_t y_stride,
         gboolean accumulate, float *scratch, const int one_row_tiles)
{
  const size_t w_stride = qb_row_bytes (type, n_blocks);
  int r = r0;
  for (; r < r1; r += QB_TW) {
    const int whole = r + QB_TW <= r1;
    const uint8_t *wr = w + (size_t) r * w_stride;
    /* decode steps stream the weights from memory: the next tile's rows
     * asked for ahead (without, AVX2's q8_0 tiles, which have no offset
     * pass over their rows first, waited on memory) */
    if (r + 2 * QB_TW <= r1)
      for (size_t at = 0; at < QB_TW * w_stride; at += 64)
        _mm_prefetch ((const char *) wr + QB_TW * w_stride + at, _MM_HINT_T0);
    const float *c = whole && qb_offsets (type, wr, w_stride, n_blocks, scratch) ? scratch : NULL;
    int i = i0;
    for (; whole && i + QB_TX <= i1; i += QB_TX) {
      float sums[QB_TW][QB_TX];
      qb_tile (type, wr, w_stride, n_blocks, x, i, QB_TX, c, sums);
      qb_store (sums, QB_TX, y, y_stride, i, r, accumulate);
    }
    /* one-row tiles for the rest in gemv (every row the same sums for any
     * number of rows), qb_rows below in gemm */
    for (; whole && one_row_tiles && i < i1; i++) {
      float sums[QB_TW][QB_TX];
      qb_tile (type, wr, w_stride, n_blocks, x, i, 1, c, sums);
      qb_store (sums, 1, y, y_stride, i, r, accumulate);
    }
    for (int k = 0; k < QB_TW && r + k < r1; k++) {
      float *col = scratch + (size_t) 2 * QB_TW * n_blocks;
      if (i < i1)
        qb_rows (type, wr + k * w_stride, n_blocks, x, i, i1, col, 1);
      for (int j = i; j < i1; j++) {
        float *out = y + (size_t) j * y_stride + r + k;
        *out = (accumulate ? *out : 0.0f) + col[j - i];
      }
    }
  }
}

/* ---- many input rows: panels ------------------------------------------
 *
 * qb_panels below is the set's gemm: 16 weight rows at a time are unpacked
 * (each task unpacks its own rows, into its scratch, once per chunk of
 * QB_PANEL_CHUNK input rows) into the layout of the int8 kernels
 * (cpu-int8.h): per block, 8 groups of 64 bytes, each 4 codes of the 16
 * rows in turn, with the 16 rows' block scales and offset terms as float
 * vectors. An input row's 4 quants of a group are one broadcast, so the 16
 * rows' sums land in the lanes of two vectors with no horizontal add, and
 * each block's scale is one multiply per 8 rows. */

#define QB_PANEL 16
#define QB_PANEL_TILE 4     /* input rows per pass over a panel */
#define QB_PANEL_CHUNK 256  /* input rows per unpacking of a panel */
#define QB_PANEL_KBLOCKS 32 /* blocks per pass over a chunk: 16 KiB of codes */

/* codes[nb * 8 groups][16 rows][4]; dw[nb][16]; c[nb][16] (the offset and
 * minimum term, m - offset * dw), rows past the weight's end zero; q6_K:
 * dw and c [nb][2 halves][16] */
QB_TARGET static inline __attribute__ ((always_inline)) void
qb_panel_unpack (WhisperDType type, const uint8_t *w, size_t w_stride, int n_blocks, int rows,
                 int8_t *codes, float *dw, float *c)
{
  const size_t bytes = QB_IS_K (type) ? 0 : whisper_qblock_bytes (type);
  const int has_min = type == WHISPER_DTYPE_Q4_1 || type == WHISPER_DTYPE_Q5_1;
  const int head = has_min ? 4 : 2;
  const int signed_q8 = type == WHISPER_DTYPE_Q8_0 && QB_Q8_SIGNED;
  const float offset = type == WHISPER_DTYPE_Q4_0   ? 8.0f
                       : type == WHISPER_DTYPE_Q5_0 ? 16.0f
                       : type == WHISPER_DTYPE_Q8_0 ? (signed_q8 ? 0.0f : 128.0f) : 0.0f;
  for (int k = 0; k < QB_PANEL; k++) {
    float d8[8][2] = { { 0.0f } }, c8[8][2] = { { 0.0f } };
    for (int b = 0; QB_IS_K (type) && b < n_blocks; b++) {
      uint8_t v[32];
      const float *dk = d8[b % 8], *ck = c8[b % 8];
      if (k < rows) {
        if (b % 8 == 0)
          qb_k_scales8 (type, w + k * w_stride + (size_t) (b / 8) * QB_K_BYTES (type), d8, c8);
        _mm256_storeu_si256 ((__m256i *) v, qb_k_codes (type, w + k * w_stride, b));
      } else {
        memset (v, 0, sizeof v);
      }
      for (int g = 0; g < 8; g++)
        memcpy (codes + ((size_t) b * 8 + g) * 64 + k * 4, v + 4 * g, 4);
      if (type == WHISPER_DTYPE_Q6_K) {
        for (int h = 0; h < 2; h++) {
          dw[((size_t) b * 2 + h) * QB_PANEL + k] = dk[h];
          c[((size_t) b * 2 + h) * QB_PANEL + k] = ck[h];
        }
      } else {
        dw[(size_t) b * QB_PANEL + k] = dk[0];
        c[(size_t) b * QB_PANEL + k] = ck[0];
      }
    }
    for (int b = 0; !QB_IS_K (type) && b < n_blocks; b++) {
      uint8_t v[32];
      float d = 0.0f, m = 0.0f;
      if (k < rows) {
        const uint8_t *blk = w + k * w_stride + (size_t) b * bytes;
        __m256i u;
        d = qb_half (blk);
        m = has_min ? qb_half (blk + 2) : 0.0f;
        switch (type) {
        case WHISPER_DTYPE_Q4_0:
        case WHISPER_DTYPE_Q4_1: u = qb_nibbles (blk + head); break;
        case WHISPER_DTYPE_Q5_0:
        case WHISPER_DTYPE_Q5_1:
          u = _mm256_or_si256 (qb_nibbles (blk + head + 4), QB_FIFTH (qb_le32 (blk + head)));
          break;
        default:
          u = _mm256_loadu_si256 ((const __m256i *) (blk + 2));
          if (!signed_q8)
            u = _mm256_xor_si256 (u, _mm256_set1_epi8 ((char) 0x80));
          break;
        }
        _mm256_storeu_si256 ((__m256i *) v, u);
      } else {
        memset (v, 0, sizeof v);
      }
      for (int g = 0; g < 8; g++)
        memcpy (codes + ((size_t) b * 8 + g) * 64 + k * 4, v + 4 * g, 4);
      dw[(size_t) b * QB_PANEL + k] = d;
      c[(size_t) b * QB_PANEL + k] = m - offset * d;
    }
  }
}

/* out[a][j] = the sum over blocks [b0, b1) of panel row j by input row
 * i + a, added to out's sum of the blocks before b0, a < NA (1 or
 * QB_PANEL_TILE), each half of 8 rows in turn (the sums of both at once
 * do not fit the 16 ymm registers of AVX2). Signed q8_0: |w| by q with
 * w's sign (by xor and subtract, off the multiplier ports), no offset
 * term; the other types: unsigned codes by q, then the offset term. */
QB_TARGET static inline __attribute__ ((always_inline)) void
qb_panel_rows (WhisperDType type, const int8_t *codes, const float *dw, const float *c,
               int b0, int b1, const WhisperCpuQRows *x, int i, const int NA, float (*out)[QB_PANEL])
{
  const int signed_q8 = type == WHISPER_DTYPE_Q8_0 && QB_Q8_SIGNED;
  const int8_t *xq[QB_PANEL_TILE];
  const float *xd[QB_PANEL_TILE], *xs[QB_PANEL_TILE], *xs16[QB_PANEL_TILE];
  for (int a = 0; a < NA; a++) {
    xq[a] = x->q + (size_t) (i + a) * x->n_blocks * 32;
    xd[a] = x->d + (size_t) (i + a) * x->n_blocks;
    xs[a] = x->s + (size_t) (i + a) * x->n_blocks;
    xs16[a] = x->s16 ? x->s16 + (size_t) (i + a) * x->n_blocks * 2 : NULL;
  }
  for (int h = 0; h < 2; h++) {
    __m256 facc[QB_PANEL_TILE];
    for (int a = 0; a < NA; a++) /* the sums of blocks [0, b0) so far */
      facc[a] = b0 == 0 ? _mm256_setzero_ps () : _mm256_loadu_ps (out[a] + 8 * h);
    for (int b = b0; b < b1; b++) {
      if (type == WHISPER_DTYPE_Q6_K) {
        /* each half of 16 values (groups 0-3, 4-7) its own scale and
         * offset term. AVX2: codes up to 63 by quants within 127 (q8_K),
         * so a vpmaddubsw pair reaches 16002 and only two groups' pairs
         * add up in int16 (32004) before the vpmaddwd to int32 */
        const int8_t *cb = codes + (size_t) b * 8 * 64 + 32 * h;
        for (int hv = 0; hv < 2; hv++) {
          __m256i iacc[QB_PANEL_TILE];
          for (int a = 0; a < NA; a++)
            iacc[a] = _mm256_setzero_si256 ();
#if QB_PANEL_I16
          for (int g = 4 * hv; g < 4 * hv + 4; g += 2) {
            const __m256i w0 = _mm256_loadu_si256 ((const __m256i *) (cb + 64 * g));
            const __m256i w1 = _mm256_loadu_si256 ((const __m256i *) (cb + 64 * (g + 1)));
            for (int a = 0; a < NA; a++) {
              int32_t v0, v1;
              memcpy (&v0, xq[a] + b * 32 + 4 * g, 4);
              memcpy (&v1, xq[a] + b * 32 + 4 * (g + 1), 4);
              const __m256i s16 = _mm256_add_epi16 (
                  _mm256_maddubs_epi16 (w0, _mm256_set1_epi32 (v0)),
                  _mm256_maddubs_epi16 (w1, _mm256_set1_epi32 (v1)));
              iacc[a] = _mm256_add_epi32 (iacc[a], _mm256_madd_epi16 (s16, _mm256_set1_epi16 (1)));
            }
          }
#else
          for (int g = 4 * hv; g < 4 * hv + 4; g++) {
            const __m256i w = _mm256_loadu_si256 ((const __m256i *) (cb + 64 * g));
            for (int a = 0; a < NA; a++) {
              int32_t v;
              memcpy (&v, xq[a] + b * 32 + 4 * g, 4);
              iacc[a] = QB_PANEL_ACC (iacc[a], w, _mm256_set1_epi32 (v));
            }
          }
#endif
          const size_t at = ((size_t) b * 2 + hv) * QB_PANEL + 8 * h;
          const __m256 d = _mm256_loadu_ps (dw + at), cv = _mm256_loadu_ps (c + at);
          for (int a = 0; a < NA; a++) {
            facc[a] = _mm256_fmadd_ps (_mm256_mul_ps (_mm256_cvtepi32_ps (iacc[a]), d),
                                       _mm256_broadcast_ss (xd[a] + b), facc[a]);
            facc[a] = _mm256_fmadd_ps (cv, _mm256_broadcast_ss (xs16[a] + 2 * b + hv), facc[a]);
          }
        }
        continue;
      }
#if QB_PANEL_I16 && QB_Q8_SIGNED /* q8_0 never here: its codes are not 5-bit */
      if (!signed_q8) {
        /* codes of at most 5 bits: four groups' vpmaddubsw pair sums (each
         * within 2 * 31 * 127) add up in int16 without saturating; one
         * vpmaddwd and one scaled add per four groups */
        const int8_t *cb = codes + (size_t) b * 8 * 64 + 32 * h;
        const __m256 d = _mm256_loadu_ps (dw + (size_t) b * QB_PANEL + 8 * h);
        for (int g0 = 0; g0 < 8; g0 += 4) {
          __m256i s16[QB_PANEL_TILE];
          for (int a = 0; a < NA; a++)
            s16[a] = _mm256_setzero_si256 ();
          for (int g = g0; g < g0 + 4; g++) {
            const __m256i w = _mm256_loadu_si256 ((const __m256i *) (cb + 64 * g));
            for (int a = 0; a < NA; a++) {
              int32_t v;
              memcpy (&v, xq[a] + b * 32 + 4 * g, 4);
              s16[a] = _mm256_add_epi16 (s16[a], _mm256_maddubs_epi16 (w, _mm256_set1_epi32 (v)));
            }
          }
          for (int a = 0; a < NA; a++)
            facc[a] = _mm256_fmadd_ps (
                _mm256_cvtepi32_ps (_mm256_madd_epi16 (s16[a], _mm256_set1_epi16 (1))),
                _mm256_mul_ps (d, _mm256_broadcast_ss (xd[a] + b)), facc[a]);
        }
        const __m256 cv = _mm256_loadu_ps (c + (size_t) b * QB_PANEL + 8 * h);
        for (int a = 0; a < NA; a++)
          facc[a] = _mm256_fmadd_ps (cv, _mm256_broadcast_ss (xs[a] + b), facc[a]);
        continue;
      }
#endif
      __m256i iacc[QB_PANEL_TILE];
      for (int a = 0; a < NA; a++)
        iacc[a] = _mm256_setzero_si256 ();
      const int8_t *cb = codes + (size_t) b * 8 * 64 + 32 * h;
      for (int g = 0; g < 8; g++) {
        const __m256i w = _mm256_loadu_si256 ((const __m256i *) (cb + 64 * g));
        if (signed_q8) {
          const __m256i aw = _mm256_abs_epi8 (w);
          const __m256i neg = _mm256_cmpgt_epi8 (_mm256_setzero_si256 (), w);
          for (int a = 0; a < NA; a++) {
            int32_t v;
            memcpy (&v, xq[a] + b * 32 + 4 * g, 4);
            const __m256i xb = _mm256_set1_epi32 (v);
            iacc[a] = QB_PANEL_ACC (iacc[a], aw,
                                    _mm256_sub_epi8 (_mm256_xor_si256 (xb, neg), neg));
          }
        } else {
          for (int a = 0; a < NA; a++) {
            int32_t v;
            memcpy (&v, xq[a] + b * 32 + 4 * g, 4);
            iacc[a] = QB_PANEL_ACC (iacc[a], w, _mm256_set1_epi32 (v));
          }
        }
      }
      const __m256 d = _mm256_loadu_ps (dw + (size_t) b * QB_PANEL + 8 * h);
      for (int a = 0; a < NA; a++)
        facc[a] = _mm256_fmadd_ps (_mm256_mul_ps (_mm256_cvtepi32_ps (iacc[a]), d),
                                   _mm256_broadcast_ss (xd[a] + b), facc[a]);
      if (!signed_q8) {
        const __m256 cv = _mm256_loadu_ps (c + (size_t) b * QB_PANEL + 8 * h);
        for (int a = 0; a < NA; a++)
          facc[a] = _mm256_fmadd_ps (cv, _mm256_broadcast_ss (xs[a] + b), facc[a]);
      }
    }
    for (int a = 0; a < NA; a++)
      _mm256_storeu_ps (out[a] + 8 * h, facc[a]);
  }
}

/* y[i, r] (+)= weight rows [r0, r1) by input rows [i0, i1); scratch holds
 * WHISPER_CPU_QBLOCK_GEMM_SCRATCH floats (a panel and the sums of a chunk
 * of input rows). The blocks go QB_PANEL_KBLOCKS at a time past all the
 * chunk's rows, so that the part of the panel they read stays in L1; each
 * sum still takes the blocks in order. */
QB_TARGET static inline __attribute__ ((always_inline)) void
qb_panels (WhisperDType type, const uint8_t *w, int n_blocks, int r0, int r1,
           const WhisperCpuQRows *x, int i0, int i1, float *y, size_t y_stride,
           gboolean accumulate, float *scratch)
{
  const size_t w_stride = qb_row_bytes (type, n_blocks);
  float *dw = scratch, *c = scratch + 2 * (size_t) n_blocks * QB_PANEL;
  float (*sums)[QB_PANEL] = (float (*)[QB_PANEL]) (scratch + 4 * (size_t) n_blocks * QB_PANEL);
  int8_t *codes = (int8_t *) (scratch + 4 * (size_t) n_blocks * QB_PANEL +
                              QB_PANEL_CHUNK * QB_PANEL);
  for (int c0 = i0; c0 < i1; c0 += QB_PANEL_CHUNK) {
    const int c1 = MIN (c0 + QB_PANEL_CHUNK, i1);
    for (int r = r0; r < r1; r += QB_PANEL) {
      const int nr = MIN (QB_PANEL, r1 - r);
      qb_panel_unpack (type, w + (size_t) r * w_stride, w_stride, n_blocks, nr, codes, dw, c);
      for (int b0 = 0; b0 < n_blocks; b0 += QB_PANEL_KBLOCKS) {
        const int b1 = MIN (b0 + QB_PANEL_KBLOCKS, n_blocks);
        int i = c0;
        for (; i + QB_PANEL_TILE <= c1; i += QB_PANEL_TILE)
          qb_panel_rows (type, codes, dw, c, b0, b1, x, i, QB_PANEL_TILE, sums + (i - c0));
        for (; i < c1; i++)
          qb_panel_rows (type, codes, dw, c, b0, b1, x, i, 1, sums + (i - c0));
      }
      for (int i = c0; i < c1; i++) {
        float *yr = y + (size_t) i * y_stride + r;
        for (int k = 0; k < nr; k++)
          yr[k] = (accumulate ? yr[k] : 0.0f) + sums[i - c0][k];
      }
    }
  }
}

#define QB_ROWS_OF(TYPE, tag)                                                                  \
  QB_TARGET static void QB_CAT (qb_rows_##tag##_, QB_SUFFIX) (                                 \
      const uint8_t *w, int n_blocks, const WhisperCpuQRows *x, int i0, int i1, float *out,    \
      size_t out_stride)                                                                       \
  {                                                                                            \
    qb_rows (TYPE, w, n_blocks, x, i0, i1, out, out_stride);                                   \
  }
#define QB_GEMM_OF(TYPE, tag)                                                                  \
  QB_TARGET static void QB_CAT (qb_gemm_##tag##_, QB_SUFFIX) (                                 \
      const uint8_t *w, int n_blocks, int r0, int r1, const WhisperCpuQRows *x, int i0, int i1, \
      float *y, size_t y_stride, gboolean accumulate, float *scratch)                         \
  {                                                                                            \
    qb_panels (TYPE, w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch);        \
  }                                                                                            \
  QB_TARGET static void QB_CAT (qb_gemv_##tag##_, QB_SUFFIX) (                                 \
      const uint8_t *w, int n_blocks, int r0, int r1, const WhisperCpuQRows *x, int i0, int i1, \
      float *y, size_t y_stride, gboolean accumulate, float *scratch)                         \
  {                                                                                            \
    qb_gemm (TYPE, w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch, 1);      \
  }
QB_GEMM_OF (WHISPER_DTYPE_Q4_0, q4_0)
QB_GEMM_OF (WHISPER_DTYPE_Q4_1, q4_1)
QB_GEMM_OF (WHISPER_DTYPE_Q5_0, q5_0)
QB_GEMM_OF (WHISPER_DTYPE_Q5_1, q5_1)
QB_GEMM_OF (WHISPER_DTYPE_Q8_0, q8_0)
QB_GEMM_OF (WHISPER_DTYPE_Q4_K, q4_K)
QB_GEMM_OF (WHISPER_DTYPE_Q5_K, q5_K)
QB_GEMM_OF (WHISPER_DTYPE_Q6_K, q6_K)

static void
QB_CAT (qb_gemm_, QB_SUFFIX) (WhisperDType type, const uint8_t *w, int n_blocks, int r0, int r1,
                              const WhisperCpuQRows *x, int i0, int i1, float *y,
                              size_t y_stride, gboolean accumulate, float *scratch)
{
  switch (type) {
  case WHISPER_DTYPE_Q4_0: QB_CAT (qb_gemm_q4_0_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  case WHISPER_DTYPE_Q4_1: QB_CAT (qb_gemm_q4_1_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  case WHISPER_DTYPE_Q5_0: QB_CAT (qb_gemm_q5_0_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  case WHISPER_DTYPE_Q5_1: QB_CAT (qb_gemm_q5_1_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  case WHISPER_DTYPE_Q8_0: QB_CAT (qb_gemm_q8_0_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  case WHISPER_DTYPE_Q4_K: QB_CAT (qb_gemm_q4_K_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  case WHISPER_DTYPE_Q5_K: QB_CAT (qb_gemm_q5_K_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  case WHISPER_DTYPE_Q6_K: QB_CAT (qb_gemm_q6_K_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  default: g_return_if_reached ();
  }
}

static void
QB_CAT (qb_gemv_, QB_SUFFIX) (WhisperDType type, const uint8_t *w, int n_blocks, int r0, int r1,
                              const WhisperCpuQRows *x, int i0, int i1, float *y,
                              size_t y_stride, gboolean accumulate, float *scratch)
{
  switch (type) {
  case WHISPER_DTYPE_Q4_0: QB_CAT (qb_gemv_q4_0_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  case WHISPER_DTYPE_Q4_1: QB_CAT (qb_gemv_q4_1_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  case WHISPER_DTYPE_Q5_0: QB_CAT (qb_gemv_q5_0_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  case WHISPER_DTYPE_Q5_1: QB_CAT (qb_gemv_q5_1_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  case WHISPER_DTYPE_Q8_0: QB_CAT (qb_gemv_q8_0_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  case WHISPER_DTYPE_Q4_K: QB_CAT (qb_gemv_q4_K_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  case WHISPER_DTYPE_Q5_K: QB_CAT (qb_gemv_q5_K_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  case WHISPER_DTYPE_Q6_K: QB_CAT (qb_gemv_q6_K_, QB_SUFFIX) (w, n_blocks, r0, r1, x, i0, i1, y, y_stride, accumulate, scratch); return;
  default: g_return_if_reached ();
  }
}

QB_ROWS_OF (WHISPER_DTYPE_Q4_0, q4_0)
QB_ROWS_OF (WHISPER_DTYPE_Q4_1, q4_1)
QB_ROWS_OF (WHISPER_DTYPE_Q5_0, q5_0)
QB_ROWS_OF (WHISPER_DTYPE_Q5_1, q5_1)
QB_ROWS_OF (WHISPER_DTYPE_Q8_0, q8_0)
QB_ROWS_OF (WHISPER_DTYPE_Q4_K, q4_K)
QB_ROWS_OF (WHISPER_DTYPE_Q5_K, q5_K)
QB_ROWS_OF (WHISPER_DTYPE_Q6_K, q6_K)

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
  case WHISPER_DTYPE_Q4_K: QB_CAT (qb_rows_q4_K_, QB_SUFFIX) (w, n_blocks, x, i0, i1, out, out_stride); return;
  case WHISPER_DTYPE_Q5_K: QB_CAT (qb_rows_q5_K_, QB_SUFFIX) (w, n_blocks, x, i0, i1, out, out_stride); return;
  case WHISPER_DTYPE_Q6_K: QB_CAT (qb_rows_q6_K_, QB_SUFFIX) (w, n_blocks, x, i0, i1, out, out_stride); return;
  default: g_return_if_reached ();
  }
}
