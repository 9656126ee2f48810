// copy-rows.cu: strided row copy (KV-cache append, row selection).
// CPU twin: cpu_copy_rows().
#include "common.cuh"

#define COPY_THREADS 256

__global__ void
wc_copy_rows_kernel (WcCopyRowsArgs a)
{
  const int row = blockIdx.y;
  const float *src = a.src + (size_t) row * a.src_stride;
  float *dst = a.dst + (size_t) row * a.dst_stride;
  const bool vec = ((uintptr_t) src % 16 == 0) && ((uintptr_t) dst % 16 == 0) && a.n_cols % 4 == 0;
  const int first = blockIdx.x * blockDim.x + threadIdx.x;
  const int step = gridDim.x * blockDim.x;
  if (vec) {
    for (int c = first; c < a.n_cols / 4; c += step)
      ((float4 *) dst)[c] = ((const float4 *) src)[c];
  } else {
    for (int c = first; c < a.n_cols; c += step)
      dst[c] = src[c];
  }
}

extern "C" void
wc_copy_rows_plan (WcLaunch *l, const WcCopyRowsArgs *a)
{
  unsigned gx = wc_div_up ((size_t) a->n_cols, 4 * COPY_THREADS);
  wc_fill (l, wc_copy_rows_kernel, gx, a->n_rows, 1, COPY_THREADS);
}
