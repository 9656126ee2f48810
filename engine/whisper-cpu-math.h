/* whisper-cpu-math.h: scalar/vector helpers of the CPU backend (the CPU
 * twins of the CUDA kernels' inner math). */
#pragma once

#include <math.h>
#include <stddef.h>

/* Exact GELU: 0.5 x (1 + erf(x / sqrt 2)). */
static inline float
whisper_gelu (float x)
{
  return 0.5f * x * (1.0f + erff (x * 0.70710678118654752440f));
}

static inline float
whisper_dot (const float *a, const float *b, int n)
{
  float s = 0.0f;
  for (int i = 0; i < n; i++)
    s += a[i] * b[i];
  return s;
}

/* y += a x */
static inline void
whisper_axpy (float *y, float a, const float *x, int n)
{
  for (int i = 0; i < n; i++)
    y[i] += a * x[i];
}

static inline void
whisper_softmax_inplace (float *x, int n)
{
  float max = -INFINITY;
  for (int i = 0; i < n; i++)
    max = x[i] > max ? x[i] : max;
  double sum = 0.0;
  for (int i = 0; i < n; i++) {
    x[i] = expf (x[i] - max);
    sum += x[i];
  }
  const float inv = (float) (1.0 / sum);
  for (int i = 0; i < n; i++)
    x[i] *= inv;
}

/* One row of LayerNorm: mean and variance in double. */
static inline void
whisper_layer_norm_row (float *y, const float *x, const float *gamma, const float *beta, int d,
                        float eps)
{
  double mean = 0.0, var = 0.0;
  for (int j = 0; j < d; j++)
    mean += x[j];
  mean /= d;
  for (int j = 0; j < d; j++) {
    const double c = x[j] - mean;
    var += c * c;
  }
  var /= d;
  const float inv = (float) (1.0 / sqrt (var + eps));
  const float m = (float) mean;
  for (int j = 0; j < d; j++)
    y[j] = (x[j] - m) * inv * gamma[j] + beta[j];
}
