/* cpu-gemv.c: the matrix-vector kernels of the CPU backend on row-major
 * weights, for one input vector and for several (see cpu-kernels.h); the
 * packed float16 ones are in cpu-gemv-packed.c. */
#include "cpu-kernels.h"
#include "cpu-features.h"

#include <string.h>

#include "cpu-simd.h"

/* ---- portable versions ---------------------------------------------- */

static void
gemv_f32_generic (float *y, const float *w, const float *x, int r0, int r1, int cols,
                  gboolean accumulate)
{
  for (int r = r0; r < r1; r++) {
    const float *row = w + (size_t) r * cols;
    float acc[4] = { 0, 0, 0, 0 };
    int c = 0;
    for (; c + 4 <= cols; c += 4)
      for (int k = 0; k < 4; k++)
        acc[k] += row[c + k] * x[c + k];
    float s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (; c < cols; c++)
      s += row[c] * x[c];
    y[r] = accumulate ? y[r] + s : s;
  }
}

static void
gemv_f16_generic (float *y, const uint16_t *w, const float *x, int r0, int r1, int cols,
                  gboolean accumulate)
{
  for (int r = r0; r < r1; r++) {
    const uint16_t *row = w + (size_t) r * cols;
    float s = 0.0f;
    for (int c = 0; c < cols; c++)
      s += whisper_half_to_float (row[c]) * x[c];
    y[r] = accumulate ? y[r] + s : s;
  }
}

/* n input vectors (x + i * x_stride -> y + i * y_stride): row by row, each
 * vector's sum is that of the one-vector kernel, while the row is in L1. */
static void
gemv_f32_rows_generic (float *y, int y_stride, const float *w, const float *x, int x_stride,
                       int n, int r0, int r1, int cols, gboolean accumulate)
{
  for (int r = r0; r < r1; r++)
    for (int i = 0; i < n; i++)
      gemv_f32_generic (y + (size_t) i * y_stride, w, x + (size_t) i * x_stride, r, r + 1, cols,
                        accumulate);
}

static void
gemv_f16_rows_generic (float *y, int y_stride, const uint16_t *w, const float *x, int x_stride,
                       int n, int r0, int r1, int cols, gboolean accumulate)
{
  for (int r = r0; r < r1; r++)
    for (int i = 0; i < n; i++)
      gemv_f16_generic (y + (size_t) i * y_stride, w, x + (size_t) i * x_stride, r, r + 1, cols,
                        accumulate);
}

/* ---- AVX2 / FMA / F16C versions ------------------------------------- */

#ifdef HAVE_X86

/* Four rows at a time share each load of x. */
AVX2_TARGET static void
gemv_f16_avx2 (float *y, const uint16_t *w, const float *x, int r0, int r1, int cols,
               gboolean accumulate)
{
  const int vc = cols & ~7;
  int r = r0;
  for (; r + 4 <= r1; r += 4) {
    const uint16_t *w0 = w + (size_t) r * cols, *w1 = w0 + cols, *w2 = w1 + cols, *w3 = w2 + cols;
    __m256 a0 = _mm256_setzero_ps (), a1 = a0, a2 = a0, a3 = a0;
    /* prefetch the rows two blocks ahead, one cache line (32 halfs) per row every
     * fourth iteration: four row streams at once are more than the hardware
     * prefetcher follows on its own */
    const uint16_t *next = w3 + 5 * (size_t) cols;
    for (int c = 0; c < vc; c += 8) {
      const __m256 xv = _mm256_loadu_ps (x + c);
      if (r + 12 <= r1 && (c & 31) == 0) {
        _mm_prefetch ((const char *) (next + c), _MM_HINT_T0);
        _mm_prefetch ((const char *) (next + cols + c), _MM_HINT_T0);
        _mm_prefetch ((const char *) (next + 2 * cols + c), _MM_HINT_T0);
        _mm_prefetch ((const char *) (next + 3 * cols + c), _MM_HINT_T0);
      }
      a0 = _mm256_fmadd_ps (_mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) (w0 + c))), xv, a0);
      a1 = _mm256_fmadd_ps (_mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) (w1 + c))), xv, a1);
      a2 = _mm256_fmadd_ps (_mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) (w2 + c))), xv, a2);
      a3 = _mm256_fmadd_ps (_mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) (w3 + c))), xv, a3);
    }
    float s[4] = { hsum256 (a0), hsum256 (a1), hsum256 (a2), hsum256 (a3) };
    for (int c = vc; c < cols; c++) {
      s[0] += whisper_half_to_float (w0[c]) * x[c];
      s[1] += whisper_half_to_float (w1[c]) * x[c];
      s[2] += whisper_half_to_float (w2[c]) * x[c];
      s[3] += whisper_half_to_float (w3[c]) * x[c];
    }
    for (int k = 0; k < 4; k++)
      y[r + k] = accumulate ? y[r + k] + s[k] : s[k];
  }
  if (r < r1)
    gemv_f16_generic (y, w, x, r, r1, cols, accumulate);
}

AVX2_TARGET static void
gemv_f32_avx2 (float *y, const float *w, const float *x, int r0, int r1, int cols,
               gboolean accumulate)
{
  const int vc = cols & ~7;
  int r = r0;
  for (; r + 4 <= r1; r += 4) {
    const float *w0 = w + (size_t) r * cols, *w1 = w0 + cols, *w2 = w1 + cols, *w3 = w2 + cols;
    __m256 a0 = _mm256_setzero_ps (), a1 = a0, a2 = a0, a3 = a0;
    for (int c = 0; c < vc; c += 8) {
      const __m256 xv = _mm256_loadu_ps (x + c);
      a0 = _mm256_fmadd_ps (_mm256_loadu_ps (w0 + c), xv, a0);
      a1 = _mm256_fmadd_ps (_mm256_loadu_ps (w1 + c), xv, a1);
      a2 = _mm256_fmadd_ps (_mm256_loadu_ps (w2 + c), xv, a2);
      a3 = _mm256_fmadd_ps (_mm256_loadu_ps (w3 + c), xv, a3);
    }
    float s[4] = { hsum256 (a0), hsum256 (a1), hsum256 (a2), hsum256 (a3) };
    for (int c = vc; c < cols; c++) {
      s[0] += w0[c] * x[c];
      s[1] += w1[c] * x[c];
      s[2] += w2[c] * x[c];
      s[3] += w3[c] * x[c];
    }
    for (int k = 0; k < 4; k++)
      y[r + k] = accumulate ? y[r + k] + s[k] : s[k];
  }
  if (r < r1)
    gemv_f32_generic (y, w, x, r, r1, cols, accumulate);
}

/* Several input vectors on row-major weights: the four-row groups of
 * gemv_f16_avx2 / gemv_f32_avx2, each group applied to every vector (two
 * at a time: each weight load serves both) while its rows are in L1. Per
 * (row, vector): the same lane FMAs in the same order, the same hsum256,
 * the same scalar tail, and the rows left after the last group go to the
 * generic kernel as there, so every output is bit-identical to the
 * one-vector kernel's over the same [r0, r1). */
#define GEMV_ROWS_AVX2(NAME, T, LOAD, TO_FLOAT, GENERIC, PREFETCH)                            \
  AVX2_TARGET static void NAME##_x2 (float *y0, float *y1, const T *w0, const float *x0,     \
                                     const float *x1, int cols, gboolean accumulate,         \
                                     const T *next)                                          \
  {                                                                                           \
    const int vc = cols & ~7;                                                                 \
    const T *w1 = w0 + cols, *w2 = w1 + cols, *w3 = w2 + cols;                                \
    __m256 a00 = _mm256_setzero_ps (), a10 = a00, a20 = a00, a30 = a00;                       \
    __m256 a01 = a00, a11 = a00, a21 = a00, a31 = a00;                                        \
    for (int c = 0; c < vc; c += 8) {                                                         \
      const __m256 xv0 = _mm256_loadu_ps (x0 + c), xv1 = _mm256_loadu_ps (x1 + c);           \
      if (PREFETCH && next && (c & 31) == 0) {                                                \
        _mm_prefetch ((const char *) (next + c), _MM_HINT_T0);                                \
        _mm_prefetch ((const char *) (next + cols + c), _MM_HINT_T0);                         \
        _mm_prefetch ((const char *) (next + 2 * (size_t) cols + c), _MM_HINT_T0);            \
        _mm_prefetch ((const char *) (next + 3 * (size_t) cols + c), _MM_HINT_T0);            \
      }                                                                                       \
      __m256 wv = LOAD (w0 + c);                                                              \
      a00 = _mm256_fmadd_ps (wv, xv0, a00);                                                   \
      a01 = _mm256_fmadd_ps (wv, xv1, a01);                                                   \
      wv = LOAD (w1 + c);                                                                     \
      a10 = _mm256_fmadd_ps (wv, xv0, a10);                                                   \
      a11 = _mm256_fmadd_ps (wv, xv1, a11);                                                   \
      wv = LOAD (w2 + c);                                                                     \
      a20 = _mm256_fmadd_ps (wv, xv0, a20);                                                   \
      a21 = _mm256_fmadd_ps (wv, xv1, a21);                                                   \
      wv = LOAD (w3 + c);                                                                     \
      a30 = _mm256_fmadd_ps (wv, xv0, a30);                                                   \
      a31 = _mm256_fmadd_ps (wv, xv1, a31);                                                   \
    }                                                                                         \
    float s0[4] = { hsum256 (a00), hsum256 (a10), hsum256 (a20), hsum256 (a30) };             \
    float s1[4] = { hsum256 (a01), hsum256 (a11), hsum256 (a21), hsum256 (a31) };             \
    for (int c = vc; c < cols; c++) {                                                         \
      s0[0] += TO_FLOAT (w0[c]) * x0[c];                                                      \
      s0[1] += TO_FLOAT (w1[c]) * x0[c];                                                      \
      s0[2] += TO_FLOAT (w2[c]) * x0[c];                                                      \
      s0[3] += TO_FLOAT (w3[c]) * x0[c];                                                      \
      s1[0] += TO_FLOAT (w0[c]) * x1[c];                                                      \
      s1[1] += TO_FLOAT (w1[c]) * x1[c];                                                      \
      s1[2] += TO_FLOAT (w2[c]) * x1[c];                                                      \
      s1[3] += TO_FLOAT (w3[c]) * x1[c];                                                      \
    }                                                                                         \
    for (int k = 0; k < 4; k++) {                                                             \
      y0[k] = accumulate ? y0[k] + s0[k] : s0[k];                                             \
      y1[k] = accumulate ? y1[k] + s1[k] : s1[k];                                             \
    }                                                                                         \
  }                                                                                           \
                                                                                              \
  AVX2_TARGET static void NAME##_x1 (float *y, const T *w0, const float *x, int cols,        \
                                     gboolean accumulate, const T *next)                      \
  {                                                                                           \
    const int vc = cols & ~7;                                                                 \
    const T *w1 = w0 + cols, *w2 = w1 + cols, *w3 = w2 + cols;                                \
    __m256 a0 = _mm256_setzero_ps (), a1 = a0, a2 = a0, a3 = a0;                              \
    for (int c = 0; c < vc; c += 8) {                                                         \
      const __m256 xv = _mm256_loadu_ps (x + c);                                              \
      if (PREFETCH && next && (c & 31) == 0) {                                                \
        _mm_prefetch ((const char *) (next + c), _MM_HINT_T0);                                \
        _mm_prefetch ((const char *) (next + cols + c), _MM_HINT_T0);                         \
        _mm_prefetch ((const char *) (next + 2 * (size_t) cols + c), _MM_HINT_T0);            \
        _mm_prefetch ((const char *) (next + 3 * (size_t) cols + c), _MM_HINT_T0);            \
      }                                                                                       \
      a0 = _mm256_fmadd_ps (LOAD (w0 + c), xv, a0);                                           \
      a1 = _mm256_fmadd_ps (LOAD (w1 + c), xv, a1);                                           \
      a2 = _mm256_fmadd_ps (LOAD (w2 + c), xv, a2);                                           \
      a3 = _mm256_fmadd_ps (LOAD (w3 + c), xv, a3);                                           \
    }                                                                                         \
    float s[4] = { hsum256 (a0), hsum256 (a1), hsum256 (a2), hsum256 (a3) };                  \
    for (int c = vc; c < cols; c++) {                                                         \
      s[0] += TO_FLOAT (w0[c]) * x[c];                                                        \
      s[1] += TO_FLOAT (w1[c]) * x[c];                                                        \
      s[2] += TO_FLOAT (w2[c]) * x[c];                                                        \
      s[3] += TO_FLOAT (w3[c]) * x[c];                                                        \
    }                                                                                         \
    for (int k = 0; k < 4; k++)                                                               \
      y[k] = accumulate ? y[k] + s[k] : s[k];                                                 \
  }                                                                                           \
                                                                                              \
  AVX2_TARGET static void NAME (float *y, int y_stride, const T *w, const float *x,          \
                                int x_stride, int n, int r0, int r1, int cols,                \
                                gboolean accumulate)                                          \
  {                                                                                           \
    int r = r0;                                                                               \
    for (; r + 4 <= r1; r += 4) {                                                             \
      const T *w0 = w + (size_t) r * cols;                                                    \
      /* the first pass over the group prefetches the group two ahead */                      \
      const T *next = PREFETCH && r + 12 <= r1 ? w0 + 8 * (size_t) cols : NULL;               \
      int i = 0;                                                                              \
      for (; i + 2 <= n; i += 2, next = NULL)                                                 \
        NAME##_x2 (y + (size_t) i * y_stride + r, y + (size_t) (i + 1) * y_stride + r, w0,    \
                   x + (size_t) i * x_stride, x + (size_t) (i + 1) * x_stride, cols,          \
                   accumulate, next);                                                         \
      if (i < n)                                                                              \
        NAME##_x1 (y + (size_t) i * y_stride + r, w0, x + (size_t) i * x_stride, cols,        \
                   accumulate, next);                                                         \
    }                                                                                         \
    if (r < r1)                                                                               \
      for (int i = 0; i < n; i++)                                                             \
        GENERIC (y + (size_t) i * y_stride, w, x + (size_t) i * x_stride, r, r1, cols,        \
                 accumulate);                                                                 \
  }

#define LOAD_F16(p) _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) (p)))
#define F32_IDENTITY(v) (v)
/* the row-major float16 kernel prefetches two groups ahead (gemv_f16_avx2) */
GEMV_ROWS_AVX2 (gemv_f16_rows_avx2, uint16_t, LOAD_F16, whisper_half_to_float,
                gemv_f16_generic, 1)
GEMV_ROWS_AVX2 (gemv_f32_rows_avx2, float, _mm256_loadu_ps, F32_IDENTITY, gemv_f32_generic, 0)
#undef LOAD_F16
#undef F32_IDENTITY
#undef GEMV_ROWS_AVX2

#endif /* HAVE_X86 */

/* ---- dispatch ------------------------------------------------------- */

void
whisper_cpu_gemv_f32 (float *y, const float *w, const float *x, int r0, int r1, int cols,
                      gboolean accumulate)
{
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ()) {
    gemv_f32_avx2 (y, w, x, r0, r1, cols, accumulate);
    return;
  }
#endif
  gemv_f32_generic (y, w, x, r0, r1, cols, accumulate);
}

void
whisper_cpu_gemv_f16 (float *y, const uint16_t *w, const float *x, int r0, int r1, int cols,
                      gboolean accumulate)
{
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ()) {
    gemv_f16_avx2 (y, w, x, r0, r1, cols, accumulate);
    return;
  }
#endif
  gemv_f16_generic (y, w, x, r0, r1, cols, accumulate);
}

void
whisper_cpu_gemv_f32_rows (float *y, int y_stride, const float *w, const float *x, int x_stride,
                           int n, int r0, int r1, int cols, gboolean accumulate)
{
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ()) {
    gemv_f32_rows_avx2 (y, y_stride, w, x, x_stride, n, r0, r1, cols, accumulate);
    return;
  }
#endif
  gemv_f32_rows_generic (y, y_stride, w, x, x_stride, n, r0, r1, cols, accumulate);
}

void
whisper_cpu_gemv_f16_rows (float *y, int y_stride, const uint16_t *w, const float *x,
                           int x_stride, int n, int r0, int r1, int cols, gboolean accumulate)
{
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ()) {
    gemv_f16_rows_avx2 (y, y_stride, w, x, x_stride, n, r0, r1, cols, accumulate);
    return;
  }
#endif
  gemv_f16_rows_generic (y, y_stride, w, x, x_stride, n, r0, r1, cols, accumulate);
}
