/* whisper-vad-kernel.c: the one product every layer of the VAD network is
 * made of (whisper-vad-private.h, vad_accumulate_fn), in a portable version
 * and an AVX2 + FMA version, picked once per process (util/cpu-features.h:
 * WHISPER_CPU_GENERIC=1 forces the portable one).
 *
 * Both add the inputs in the same order (i = 0, 1, ... for each output);
 * they differ only in rounding (the AVX2 version fuses each multiply-add). */
#include "whisper-vad-private.h"

#include "cpu-features.h"
#include "cpu-simd.h"

/* The portable version: one weight row times one input value at a time,
 * a loop the compiler vectorizes without reordering any sum. Inputs that
 * are zero (most ReLU outputs) add nothing and are skipped. */
static void
accumulate_generic (int n_rows, float *const *y_rows, const float *const *x_rows, int n_out,
                    int n_in, const float *restrict wt)
{
  for (int r = 0; r < n_rows; r++) {
    float *restrict y = y_rows[r];
    const float *restrict x = x_rows[r];
    for (int i = 0; i < n_in; i++) {
      const float xi = x[i];
      if (xi == 0.0f)
        continue;
      const float *restrict row = wt + (gsize) i * n_out;
      for (int o = 0; o < n_out; o++)
        y[o] += xi * row[o];
    }
  }
}

#ifdef HAVE_X86
/* The accumulators are named variables, not arrays: GCC keeps an array of
 * vectors on the stack (a store and a load around every multiply-add). */

/* Outputs [o, o + 16) of 4 rows: 8 accumulators; per input, 2 weight
 * loads serve the 4 rows. */
AVX2_TARGET static void
block_4x16 (float *const *y_rows, const float *const *x_rows, int n_out, int n_in,
            const float *wt, int o)
{
  float *y0 = y_rows[0] + o, *y1 = y_rows[1] + o, *y2 = y_rows[2] + o, *y3 = y_rows[3] + o;
  const float *x0 = x_rows[0], *x1 = x_rows[1], *x2 = x_rows[2], *x3 = x_rows[3];
  __m256 a0 = _mm256_loadu_ps (y0), b0 = _mm256_loadu_ps (y0 + 8);
  __m256 a1 = _mm256_loadu_ps (y1), b1 = _mm256_loadu_ps (y1 + 8);
  __m256 a2 = _mm256_loadu_ps (y2), b2 = _mm256_loadu_ps (y2 + 8);
  __m256 a3 = _mm256_loadu_ps (y3), b3 = _mm256_loadu_ps (y3 + 8);
  const float *w = wt + o;
  for (int i = 0; i < n_in; i++, w += n_out) {
    const __m256 wa = _mm256_loadu_ps (w), wb = _mm256_loadu_ps (w + 8);
    __m256 xb = _mm256_broadcast_ss (x0 + i);
    a0 = _mm256_fmadd_ps (xb, wa, a0);
    b0 = _mm256_fmadd_ps (xb, wb, b0);
    xb = _mm256_broadcast_ss (x1 + i);
    a1 = _mm256_fmadd_ps (xb, wa, a1);
    b1 = _mm256_fmadd_ps (xb, wb, b1);
    xb = _mm256_broadcast_ss (x2 + i);
    a2 = _mm256_fmadd_ps (xb, wa, a2);
    b2 = _mm256_fmadd_ps (xb, wb, b2);
    xb = _mm256_broadcast_ss (x3 + i);
    a3 = _mm256_fmadd_ps (xb, wa, a3);
    b3 = _mm256_fmadd_ps (xb, wb, b3);
  }
  _mm256_storeu_ps (y0, a0), _mm256_storeu_ps (y0 + 8, b0);
  _mm256_storeu_ps (y1, a1), _mm256_storeu_ps (y1 + 8, b1);
  _mm256_storeu_ps (y2, a2), _mm256_storeu_ps (y2 + 8, b2);
  _mm256_storeu_ps (y3, a3), _mm256_storeu_ps (y3 + 8, b3);
}

/* Outputs [o, o + 32) of one row: 4 independent accumulators, so that
 * the multiply-adds of one input do not wait for each other. */
AVX2_TARGET static void
block_1x32 (float *y, const float *x, int n_out, int n_in, const float *wt, int o)
{
  float *y0 = y + o;
  __m256 a = _mm256_loadu_ps (y0), b = _mm256_loadu_ps (y0 + 8);
  __m256 c = _mm256_loadu_ps (y0 + 16), d = _mm256_loadu_ps (y0 + 24);
  const float *w = wt + o;
  for (int i = 0; i < n_in; i++, w += n_out) {
    const __m256 xb = _mm256_broadcast_ss (x + i);
    a = _mm256_fmadd_ps (xb, _mm256_loadu_ps (w), a);
    b = _mm256_fmadd_ps (xb, _mm256_loadu_ps (w + 8), b);
    c = _mm256_fmadd_ps (xb, _mm256_loadu_ps (w + 16), c);
    d = _mm256_fmadd_ps (xb, _mm256_loadu_ps (w + 24), d);
  }
  _mm256_storeu_ps (y0, a), _mm256_storeu_ps (y0 + 8, b);
  _mm256_storeu_ps (y0 + 16, c), _mm256_storeu_ps (y0 + 24, d);
}

/* Output o of one row, one input at a time (fmaf: the rounding of the
 * vector lanes). */
AVX2_TARGET static void
single_output (float *y, const float *x, int n_out, int n_in, const float *wt, int o)
{
  float acc = y[o];
  for (int i = 0; i < n_in; i++)
    acc = __builtin_fmaf (x[i], wt[(gsize) i * n_out + o], acc);
  y[o] = acc;
}

/* Rows in groups of 4, 16 outputs at a time (the block's weights, n_in x 16,
 * stay in the L1 cache from one group to the next); the rows left over 32
 * outputs at a time; the outputs past the last whole block one by one. */
AVX2_TARGET static void
accumulate_avx2 (int n_rows, float *const *y_rows, const float *const *x_rows, int n_out,
                 int n_in, const float *wt)
{
  const int grouped = n_rows - n_rows % 4;
  int o = 0;
  if (grouped > 0) {
    for (; o + 16 <= n_out; o += 16)
      for (int r = 0; r < grouped; r += 4)
        block_4x16 (y_rows + r, x_rows + r, n_out, n_in, wt, o);
    for (int r = 0; r < grouped; r++)
      for (int k = o; k < n_out; k++)
        single_output (y_rows[r], x_rows[r], n_out, n_in, wt, k);
  }
  o = 0;
  for (; o + 32 <= n_out; o += 32)
    for (int r = grouped; r < n_rows; r++)
      block_1x32 (y_rows[r], x_rows[r], n_out, n_in, wt, o);
  for (int r = grouped; r < n_rows; r++)
    for (int k = o; k < n_out; k++)
      single_output (y_rows[r], x_rows[r], n_out, n_in, wt, k);
}
#endif

vad_accumulate_fn
vad_pick_accumulate (void)
{
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ())
    return accumulate_avx2;
#endif
  return accumulate_generic;
}
