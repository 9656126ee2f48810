// layer-norm.cu: LayerNorm over the last dimension.
// CPU twin: cpu_layer_norm() / whisper_cpu_layer_norm_row() (mean and variance
// in double, inverse standard deviation rounded to float, then
// (x - mean) * inv * gamma + beta in float).
#include "common.cuh"

#define LN_THREADS 128

__device__ static double
block_sum (double v, double *shared)
{
  v = wc_warp_sum_d (v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads ();  // shared may still be read from a previous call
  if (lane == 0)
    shared[warp] = v;
  __syncthreads ();
  double total = 0.0;
  for (int w = 0; w < LN_THREADS / 32; w++)
    total += shared[w];
  return total;
}

__global__ void
wc_layer_norm_kernel (WcLayerNormArgs a)
{
  __shared__ double shared[LN_THREADS / 32];
  const int row = blockIdx.x;
  const float *x = a.x + (size_t) row * a.d;
  float *y = a.y + (size_t) row * a.d;

  double s = 0.0;
  for (int j = threadIdx.x; j < a.d; j += LN_THREADS)
    s += x[j];
  const double mean = block_sum (s, shared) / a.d;

  double v = 0.0;
  for (int j = threadIdx.x; j < a.d; j += LN_THREADS) {
    const double c = x[j] - mean;
    v += c * c;
  }
  const double var = block_sum (v, shared) / a.d;

  const float inv = (float) (1.0 / sqrt (var + a.eps));
  const float m = (float) mean;
  for (int j = threadIdx.x; j < a.d; j += LN_THREADS)
    y[j] = (x[j] - m) * inv * a.gamma[j] + a.beta[j];
}

extern "C" void
wc_layer_norm_plan (WcLaunch *l, const WcLayerNormArgs *a)
{
  wc_fill (l, wc_layer_norm_kernel, a->n, 1, 1, LN_THREADS);
}
