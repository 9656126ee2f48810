// add.cu: y += x, element-wise (positional embedding add).
// CPU twin: cpu_add().
#include "common.cuh"

#define ADD_THREADS 256

__global__ void
wc_add_kernel (WcAddArgs a)
{
  const size_t stride = (size_t) gridDim.x * blockDim.x;
  size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x;
  const bool vec = ((uintptr_t) a.y % 16 == 0) && ((uintptr_t) a.x % 16 == 0);
  if (vec) {
    const size_t n4 = a.n / 4;
    float4 *y4 = (float4 *) a.y;
    const float4 *x4 = (const float4 *) a.x;
    for (size_t j = i; j < n4; j += stride) {
      float4 y = y4[j];
      const float4 x = x4[j];
      y.x += x.x;
      y.y += x.y;
      y.z += x.z;
      y.w += x.w;
      y4[j] = y;
    }
    for (size_t j = n4 * 4 + i; j < a.n; j += stride)
      a.y[j] += a.x[j];
  } else {
    for (size_t j = i; j < a.n; j += stride)
      a.y[j] += a.x[j];
  }
}

extern "C" void
wc_add_plan (WcLaunch *l, const WcAddArgs *a)
{
  size_t blocks = (a->n / 4 + ADD_THREADS - 1) / ADD_THREADS;
  if (blocks > 4096)
    blocks = 4096;
  wc_fill (l, wc_add_kernel, (unsigned) blocks, 1, 1, ADD_THREADS);
}
