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
accumulate_generic (float *restrict y, int n_t, int n_out, const float *restrict x,
                    int x_stride, int n_in, const float *restrict wt)
{
  for (int t = 0; t < n_t; t++) {
    float *restrict yt = y + (gsize) t * n_out;
    const float *restrict xt = x + (gsize) t * x_stride;
    for (int i = 0; i < n_in; i++) {
      const float xi = xt[i];
      if (xi == 0.0f)
        continue;
      const float *restrict row = wt + (gsize) i * n_out;
      for (int o = 0; o < n_out; o++)
        yt[o] += xi * row[o];
    }
  }
}

#ifdef HAVE_X86
/* The accumulators are named variables, not arrays: GCC keeps an array of
 * vectors on the stack (a store and a load around every multiply-add). */

/* Outputs [o, o + 16) of 4 steps: 8 accumulators; per input, 2 weight
 * loads serve the 4 steps. */
AVX2_TARGET static void
block_4x16 (float *y, int n_out, const float *x, int x_stride, int n_in, const float *wt, int o)
{
  float *y0 = y + o, *y1 = y0 + n_out, *y2 = y1 + n_out, *y3 = y2 + n_out;
  const float *x0 = x, *x1 = x0 + x_stride, *x2 = x1 + x_stride, *x3 = x2 + x_stride;
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

/* Outputs [o, o + 32) of one step: 4 independent accumulators, so that
 * the multiply-adds of one input do not wait for each other. */
AVX2_TARGET static void
block_1x32 (float *y, const float *x, int n_in, const float *wt, int n_out, int o)
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

/* Output o of one step, one input at a time (fmaf: the rounding of the
 * vector lanes). */
AVX2_TARGET static void
single_output (float *y, const float *x, int n_in, const float *wt, int n_out, int o)
{
  float acc = y[o];
  for (int i = 0; i < n_in; i++)
    acc = __builtin_fmaf (x[i], wt[(gsize) i * n_out + o], acc);
  y[o] = acc;
}

/* Groups of 4 steps in blocks of 16 outputs, every other step in blocks
 * of 32; the outputs past the last whole block one by one. */
AVX2_TARGET static void
accumulate_avx2 (float *y, int n_t, int n_out, const float *x, int x_stride, int n_in,
                 const float *wt)
{
  int t = 0;
  for (; t + 4 <= n_t; t += 4) {
    float *yt = y + (gsize) t * n_out;
    const float *xt = x + (gsize) t * x_stride;
    int o = 0;
    for (; o + 16 <= n_out; o += 16)
      block_4x16 (yt, n_out, xt, x_stride, n_in, wt, o);
    for (int k = 0; k < 4; k++)
      for (int r = o; r < n_out; r++)
        single_output (yt + (gsize) k * n_out, xt + (gsize) k * x_stride, n_in, wt, n_out, r);
  }
  for (; t < n_t; t++) {
    float *yt = y + (gsize) t * n_out;
    const float *xt = x + (gsize) t * x_stride;
    int o = 0;
    for (; o + 32 <= n_out; o += 32)
      block_1x32 (yt, xt, n_in, wt, n_out, o);
    for (; o < n_out; o++)
      single_output (yt, xt, n_in, wt, n_out, o);
  }
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
