/* cpu-gemv-packed.c: float16 weights packed in blocks of eight rows, for
 * the decoder's matrix-vector products (see cpu-kernels.h).
 *
 * Why: a row-major product reads eight rows at once, eight separate
 * streams the hardware prefetcher follows badly, far below the bandwidth of
 * a plain sequential read. Packed, the same bytes are one sequential stream
 * and the arithmetic is unchanged: every row is still summed in the
 * same order, lane by lane, so the results are bit-identical to the
 * row-major kernels of cpu-kernels.c.
 *
 * Layout: block b holds rows [8b, 8b + 8); inside it, column chunk k holds
 * 64 halves: row 8b's columns [8k, 8k + 8), then row 8b + 1's, ... */
#include "cpu-kernels.h"
#include "half.h"

#include <string.h>

#include "cpu-features.h"
#include "cpu-simd.h"

#define PACK_ROWS WHISPER_CPU_PACK_ROWS
#define PACK_COLS 8

gboolean
whisper_cpu_packable (int rows, int cols)
{
  return rows > 0 && cols > 0 && rows % PACK_ROWS == 0 && cols % PACK_COLS == 0;
}

static inline size_t
packed_index (int r, int c, int cols)
{
  const size_t block = (size_t) (r / PACK_ROWS) * cols * PACK_ROWS;
  return block + (size_t) (c / PACK_COLS) * (PACK_ROWS * PACK_COLS) +
         (size_t) (r % PACK_ROWS) * PACK_COLS + (size_t) (c % PACK_COLS);
}

void
whisper_cpu_pack_rows (uint16_t *dst, const uint16_t *src, int rows, int cols)
{
  g_return_if_fail (whisper_cpu_packable (rows, cols));
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c += PACK_COLS)
      memcpy (dst + packed_index (r, c, cols), src + (size_t) r * cols + c,
              PACK_COLS * sizeof (uint16_t));
}

static void
unpack_rows_generic (float *dst, const uint16_t *packed, int r0, int r1, int cols)
{
  for (int r = r0; r < r1; r++)
    for (int c = 0; c < cols; c++)
      dst[(size_t) (r - r0) * cols + c] = whisper_half_to_float (packed[packed_index (r, c, cols)]);
}

/* The same sums as gemv_f16_generic: one running float per row, column by
 * column. */
static void
gemv_packed_generic (float *y, const uint16_t *w, const float *x, int r0, int r1, int cols,
                     gboolean accumulate)
{
  for (int r = r0; r < r1; r++) {
    float s = 0.0f;
    for (int c = 0; c < cols; c++)
      s += whisper_half_to_float (w[packed_index (r, c, cols)]) * x[c];
    y[r] = accumulate ? y[r] + s : s;
  }
}


/* n input vectors: for each, the sums of gemv_packed_generic, row by row;
 * the eight rows of a block stay in cache for all n. */
static void
gemv_packed_rows_generic (float *y, int y_stride, const uint16_t *w, const float *x, int x_stride,
                          int n, int r0, int r1, int cols, gboolean accumulate)
{
  for (int r = r0; r < r1; r++)
    for (int i = 0; i < n; i++)
      gemv_packed_generic (y + (size_t) i * y_stride, w, x + (size_t) i * x_stride, r, r + 1,
                           cols, accumulate);
}

#ifdef HAVE_X86
AVX2_TARGET static void
unpack_rows_avx2 (float *dst, const uint16_t *packed, int r0, int r1, int cols)
{
  for (int r = r0; r < r1; r++) {
    const uint16_t *src = packed + packed_index (r, 0, cols);
    float *out = dst + (size_t) (r - r0) * cols;
    for (int c = 0; c < cols; c += PACK_COLS, src += PACK_ROWS * PACK_COLS)
      _mm256_storeu_ps (out + c, _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) src)));
  }
}

#define LOAD_ROW(i) _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) (w + 8 * (i))))

/* The same sums as gemv_f16_avx2: per row, eight lanes accumulated over the
 * column chunks in order, then hsum256. */
AVX2_TARGET static void
gemv_packed_avx2 (float *y, const uint16_t *w, const float *x, int r0, int r1, int cols,
                  gboolean accumulate)
{
  w += (size_t) r0 * cols;
  for (int r = r0; r < r1; r += PACK_ROWS) {
    __m256 a0 = _mm256_setzero_ps (), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
           a7 = a0;
    for (int c = 0; c < cols; c += PACK_COLS, w += PACK_ROWS * PACK_COLS) {
      const __m256 xv = _mm256_loadu_ps (x + c);
      a0 = _mm256_fmadd_ps (LOAD_ROW (0), xv, a0);
      a1 = _mm256_fmadd_ps (LOAD_ROW (1), xv, a1);
      a2 = _mm256_fmadd_ps (LOAD_ROW (2), xv, a2);
      a3 = _mm256_fmadd_ps (LOAD_ROW (3), xv, a3);
      a4 = _mm256_fmadd_ps (LOAD_ROW (4), xv, a4);
      a5 = _mm256_fmadd_ps (LOAD_ROW (5), xv, a5);
      a6 = _mm256_fmadd_ps (LOAD_ROW (6), xv, a6);
      a7 = _mm256_fmadd_ps (LOAD_ROW (7), xv, a7);
    }
    const float s[PACK_ROWS] = { hsum256 (a0), hsum256 (a1), hsum256 (a2), hsum256 (a3),
                                 hsum256 (a4), hsum256 (a5), hsum256 (a6), hsum256 (a7) };
    for (int k = 0; k < PACK_ROWS; k++)
      y[r + k] = accumulate ? y[r + k] + s[k] : s[k];
  }
}

/* Several input vectors on one packed block (block: its first half).
 *
 * packed_block_x1: one vector, the eight rows of the block: the loop of
 * gemv_packed_avx2. packed_half_x2: two vectors, four rows (half 0: rows
 * 0-3 of the block, the first 32 halves of each chunk; half 1: rows 4-7):
 * every weight chunk loaded and converted once for both vectors, eight
 * accumulators. Per (row, vector) the accumulator sees the same FMAs in
 * the same order as in gemv_packed_avx2 and ends in the same hsum256, so
 * the sums are bit-identical; only which loads are shared differs. */
AVX2_TARGET static inline void
store_sum (float *y, __m256 a, gboolean accumulate)
{
  const float s = hsum256 (a);
  *y = accumulate ? *y + s : s;
}

AVX2_TARGET static void
packed_block_x1 (float *y, const uint16_t *w, const float *x, int cols, gboolean accumulate)
{
  __m256 a0 = _mm256_setzero_ps (), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
         a7 = a0;
  for (int c = 0; c < cols; c += PACK_COLS, w += PACK_ROWS * PACK_COLS) {
    const __m256 xv = _mm256_loadu_ps (x + c);
    a0 = _mm256_fmadd_ps (LOAD_ROW (0), xv, a0);
    a1 = _mm256_fmadd_ps (LOAD_ROW (1), xv, a1);
    a2 = _mm256_fmadd_ps (LOAD_ROW (2), xv, a2);
    a3 = _mm256_fmadd_ps (LOAD_ROW (3), xv, a3);
    a4 = _mm256_fmadd_ps (LOAD_ROW (4), xv, a4);
    a5 = _mm256_fmadd_ps (LOAD_ROW (5), xv, a5);
    a6 = _mm256_fmadd_ps (LOAD_ROW (6), xv, a6);
    a7 = _mm256_fmadd_ps (LOAD_ROW (7), xv, a7);
  }
  store_sum (y + 0, a0, accumulate);
  store_sum (y + 1, a1, accumulate);
  store_sum (y + 2, a2, accumulate);
  store_sum (y + 3, a3, accumulate);
  store_sum (y + 4, a4, accumulate);
  store_sum (y + 5, a5, accumulate);
  store_sum (y + 6, a6, accumulate);
  store_sum (y + 7, a7, accumulate);
}

AVX2_TARGET static void
packed_half_x2 (float *y0, float *y1, const uint16_t *w, const float *x0, const float *x1,
                int cols, gboolean accumulate)
{
  __m256 a00 = _mm256_setzero_ps (), a10 = a00, a20 = a00, a30 = a00;
  __m256 a01 = a00, a11 = a00, a21 = a00, a31 = a00;
  for (int c = 0; c < cols; c += PACK_COLS, w += PACK_ROWS * PACK_COLS) {
    const __m256 xv0 = _mm256_loadu_ps (x0 + c), xv1 = _mm256_loadu_ps (x1 + c);
    __m256 wv = LOAD_ROW (0);
    a00 = _mm256_fmadd_ps (wv, xv0, a00);
    a01 = _mm256_fmadd_ps (wv, xv1, a01);
    wv = LOAD_ROW (1);
    a10 = _mm256_fmadd_ps (wv, xv0, a10);
    a11 = _mm256_fmadd_ps (wv, xv1, a11);
    wv = LOAD_ROW (2);
    a20 = _mm256_fmadd_ps (wv, xv0, a20);
    a21 = _mm256_fmadd_ps (wv, xv1, a21);
    wv = LOAD_ROW (3);
    a30 = _mm256_fmadd_ps (wv, xv0, a30);
    a31 = _mm256_fmadd_ps (wv, xv1, a31);
  }
  store_sum (y0 + 0, a00, accumulate);
  store_sum (y0 + 1, a10, accumulate);
  store_sum (y0 + 2, a20, accumulate);
  store_sum (y0 + 3, a30, accumulate);
  store_sum (y1 + 0, a01, accumulate);
  store_sum (y1 + 1, a11, accumulate);
  store_sum (y1 + 2, a21, accumulate);
  store_sum (y1 + 3, a31, accumulate);
}

/* Block by block: the block (8 rows x cols halves, 6 KB at d = 384, 32 KB
 * for base's fc2) is read from memory once, then stays in L1/L2 while every
 * vector is applied to it, two vectors at a time. */
AVX2_TARGET static void
gemv_packed_rows_avx2 (float *y, int y_stride, const uint16_t *w, const float *x, int x_stride,
                       int n, int r0, int r1, int cols, gboolean accumulate)
{
  const size_t block = (size_t) PACK_ROWS * cols;
  w += (size_t) r0 * cols;
  for (int r = r0; r < r1; r += PACK_ROWS, w += block) {
    int i = 0;
    for (; i + 2 <= n; i += 2) {
      float *y0 = y + (size_t) i * y_stride + r, *y1 = y0 + y_stride;
      const float *x0 = x + (size_t) i * x_stride, *x1 = x0 + x_stride;
      packed_half_x2 (y0, y1, w, x0, x1, cols, accumulate);
      packed_half_x2 (y0 + 4, y1 + 4, w + 4 * PACK_COLS, x0, x1, cols, accumulate);
    }
    if (i < n)
      packed_block_x1 (y + (size_t) i * y_stride + r, w, x + (size_t) i * x_stride, cols,
                       accumulate);
  }
}
#undef LOAD_ROW

#define AVX512_TARGET __attribute__ ((target ("avx512f,avx2,fma,f16c")))

/* The sums of gemv_packed_rows_avx2 (so of gemv_packed_avx2), with twice
 * the work per instruction: one 512-bit register holds two rows' eight
 * lanes of a column chunk (rows 2j and 2j + 1 are adjacent in the block:
 * one 32-byte load, one conversion), and the vector's chunk is repeated in
 * both halves. Every (row, lane) accumulator therefore sees the FMAs of the
 * AVX2 kernel in the same order, and each half ends in the same hsum256:
 * the bits are those of the one-row product. NV vectors (1 to 4) at a time
 * share each converted chunk: 4 x NV accumulators. */
AVX512_TARGET static inline __attribute__ ((always_inline)) void
packed_block_avx512 (float *y, int y_stride, const uint16_t *w, const float *x, int x_stride,
                     int cols, gboolean accumulate, const int nv)
{
  __m512 a[4][4];
  for (int v = 0; v < nv; v++)
    for (int j = 0; j < 4; j++)
      a[v][j] = _mm512_setzero_ps ();
  for (int c = 0; c < cols; c += PACK_COLS, w += PACK_ROWS * PACK_COLS) {
    __m512 wv[4];
    for (int j = 0; j < 4; j++)
      wv[j] = _mm512_cvtph_ps (_mm256_loadu_si256 ((const __m256i *) (w + 16 * j)));
    for (int v = 0; v < nv; v++) {
      const __m256 x8 = _mm256_loadu_ps (x + (size_t) v * x_stride + c);
      const __m512 xv = _mm512_castpd_ps (_mm512_broadcast_f64x4 (_mm256_castps_pd (x8)));
      for (int j = 0; j < 4; j++)
        a[v][j] = _mm512_fmadd_ps (wv[j], xv, a[v][j]);
    }
  }
  for (int v = 0; v < nv; v++)
    for (int j = 0; j < 4; j++) {
      float *yr = y + (size_t) v * y_stride + 2 * j;
      const __m256 lo = _mm512_castps512_ps256 (a[v][j]);
      const __m256 hi = _mm256_castpd_ps (_mm512_extractf64x4_pd (_mm512_castps_pd (a[v][j]), 1));
      store_sum (yr, lo, accumulate);
      store_sum (yr + 1, hi, accumulate);
    }
}

AVX512_TARGET static void
gemv_packed_rows_avx512 (float *y, int y_stride, const uint16_t *w, const float *x,
                         int x_stride, int n, int r0, int r1, int cols, gboolean accumulate)
{
  const size_t block = (size_t) PACK_ROWS * cols;
  w += (size_t) r0 * cols;
  for (int r = r0; r < r1; r += PACK_ROWS, w += block) {
    int i = 0;
    for (; i + 4 <= n; i += 4)
      packed_block_avx512 (y + (size_t) i * y_stride + r, y_stride, w,
                           x + (size_t) i * x_stride, x_stride, cols, accumulate, 4);
    switch (n - i) {
    case 3:
      packed_block_avx512 (y + (size_t) i * y_stride + r, y_stride, w,
                           x + (size_t) i * x_stride, x_stride, cols, accumulate, 3);
      break;
    case 2:
      packed_block_avx512 (y + (size_t) i * y_stride + r, y_stride, w,
                           x + (size_t) i * x_stride, x_stride, cols, accumulate, 2);
      break;
    case 1:
      packed_block_avx512 (y + (size_t) i * y_stride + r, y_stride, w,
                           x + (size_t) i * x_stride, x_stride, cols, accumulate, 1);
      break;
    default:
      break;
    }
  }
}
#endif

void
whisper_cpu_unpack_rows (float *dst, const uint16_t *packed, int r0, int r1, int cols)
{
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ()) {
    unpack_rows_avx2 (dst, packed, r0, r1, cols);
    return;
  }
#endif
  unpack_rows_generic (dst, packed, r0, r1, cols);
}

void
whisper_cpu_gemv_f16_packed (float *y, const uint16_t *w, const float *x, int r0, int r1,
                             int cols, gboolean accumulate)
{
  g_return_if_fail (r0 % PACK_ROWS == 0 && r1 % PACK_ROWS == 0 && cols % PACK_COLS == 0);
#ifdef HAVE_X86
  if (whisper_cpu_have_avx512 ()) {
    /* one vector: the same bits, half the instructions
     * (tests/engine/bench-cpu-linear.c times it) */
    gemv_packed_rows_avx512 (y, 0, w, x, 0, 1, r0, r1, cols, accumulate);
    return;
  }
  if (whisper_cpu_have_avx2 ()) {
    gemv_packed_avx2 (y, w, x, r0, r1, cols, accumulate);
    return;
  }
#endif
  gemv_packed_generic (y, w, x, r0, r1, cols, accumulate);
}

void
whisper_cpu_gemv_f16_packed_rows (float *y, int y_stride, const uint16_t *w, const float *x,
                                  int x_stride, int n, int r0, int r1, int cols,
                                  gboolean accumulate)
{
  g_return_if_fail (r0 % PACK_ROWS == 0 && r1 % PACK_ROWS == 0 && cols % PACK_COLS == 0);
#ifdef HAVE_X86
  if (whisper_cpu_have_avx512 ()) {
    gemv_packed_rows_avx512 (y, y_stride, w, x, x_stride, n, r0, r1, cols, accumulate);
    return;
  }
  if (whisper_cpu_have_avx2 ()) {
    gemv_packed_rows_avx2 (y, y_stride, w, x, x_stride, n, r0, r1, cols, accumulate);
    return;
  }
#endif
  gemv_packed_rows_generic (y, y_stride, w, x, x_stride, n, r0, r1, cols, accumulate);
}
