// convert.cu: fp32 -> fp16 (round to nearest even), for activations that
// feed a cuBLAS GEMM and for weights at upload. CPU twin: none needed (the
// CPU backend keeps fp32); tests compare the GEMM results it feeds.
#include "common.cuh"

#define CONVERT_THREADS 256

__global__ void
wc_to_half_kernel (WcToHalfArgs a)
{
  const int row = blockIdx.y;
  const float *src = a.src + (size_t) row * a.src_stride;
  uint16_t *dst = a.dst + (size_t) row * a.cols;
  uint16_t *lo = a.dst_lo ? a.dst_lo + (size_t) row * a.cols : NULL;
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < a.cols; c += gridDim.x * blockDim.x)
    wc_split_half (src[c], dst + c, lo ? lo + c : NULL);
}

extern "C" void
wc_to_half_plan (WcLaunch *l, const WcToHalfArgs *a)
{
  unsigned gx = wc_div_up ((size_t) a->cols, CONVERT_THREADS);
  if (gx > 65535)
    gx = 65535;
  wc_fill (l, wc_to_half_kernel, gx, a->rows, 1, CONVERT_THREADS);
}
