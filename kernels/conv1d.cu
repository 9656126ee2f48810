// conv1d.cu: im2col of the encoder's kernel-3 / padding-1 convolutions,
// written as fp16 (and the fp16 remainder in split precision) for the cuBLAS
// GEMM that follows (bias and GELU come from bias-gelu.cu). CPU twin: the im2col loop of cpu_conv1d_gelu().
#include "common.cuh"

#define IM2COL_THREADS 256

__global__ void
wc_im2col_kernel (WcIm2colArgs a)
{
  const int t = blockIdx.y;
  const int k3 = a.c_in * 3;
  uint16_t *row = a.dst + (size_t) t * k3;
  uint16_t *lo = a.dst_lo ? a.dst_lo + (size_t) t * k3 : NULL;
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < k3; j += gridDim.x * blockDim.x) {
    const int c = j / 3, k = j - c * 3;
    const int src = t * a.stride + k - 1;
    const float v = (src >= 0 && src < a.n_in) ? a.x[(size_t) src * a.c_in + c] : 0.0f;
    wc_split_half (v, row + j, lo ? lo + j : NULL);
  }
}

extern "C" void
wc_im2col_plan (WcLaunch *l, const WcIm2colArgs *a)
{
  wc_fill (l, wc_im2col_kernel, wc_div_up ((size_t) a->c_in * 3, IM2COL_THREADS), a->n_out, 1,
           IM2COL_THREADS);
}
