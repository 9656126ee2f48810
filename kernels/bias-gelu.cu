// bias-gelu.cu: epilogue of a cuBLAS GEMM (y already holds x W^T, plus the
// old y when accumulating): y += bias, then exact GELU.
// CPU twin: cpu_bias_act().
#include "common.cuh"

#define BIAS_THREADS 256

__global__ void
wc_bias_act_kernel (WcBiasActArgs a)
{
  const int i = blockIdx.y;
  float *y = a.y + (size_t) i * a.y_stride;
  for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < a.rows; r += gridDim.x * blockDim.x) {
    float v = y[r];
    if (a.bias)
      v += a.bias[r];
    if (a.gelu)
      v = wc_gelu (v);
    y[r] = v;
  }
}

extern "C" void
wc_bias_act_plan (WcLaunch *l, const WcBiasActArgs *a)
{
  wc_fill (l, wc_bias_act_kernel, wc_div_up ((size_t) a->rows, BIAS_THREADS), a->n, 1,
           BIAS_THREADS);
}
