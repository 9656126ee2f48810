// gemv.cu: linear layer for a few rows (decode steps): y[i, r] for i < n <= 8,
// one warp per output feature r, fp16 weight row read once with 16-byte
// loads and used for every input row, fp32 activations and accumulation,
// with the epilogue fused (accumulate, bias, exact GELU in the order of the
// CPU twin: cpu_linear(), sgemv/sgemm with beta then cpu_bias_act()).
#include "common.cuh"

#define GEMV_WARPS 8

// Eight fp16 values (16 bytes, lowest address first) to float. Bit
// operations rather than a cast of the vector to __half2: no aliasing.
__device__ __forceinline__ void
unpack8 (uint4 u, float *w)
{
  const unsigned words[4] = { u.x, u.y, u.z, u.w };
#pragma unroll
  for (int j = 0; j < 4; j++) {
    w[2 * j] = wc_half_to_float ((uint16_t) (words[j] & 0xffffu));
    w[2 * j + 1] = wc_half_to_float ((uint16_t) (words[j] >> 16));
  }
}

__global__ void __launch_bounds__ (GEMV_WARPS * 32)
wc_gemv_kernel (WcGemvArgs a)
{
  const int lane = threadIdx.x % 32;
  const int r = blockIdx.x * GEMV_WARPS + threadIdx.x / 32;
  if (r >= a.rows)
    return;

  float acc[WC_GEMV_MAX_N];
#pragma unroll
  for (int i = 0; i < WC_GEMV_MAX_N; i++)
    acc[i] = 0.0f;

  const uint16_t *wrow = a.w + (size_t) r * a.cols;
  if (a.vec) {
    const int n_chunks = a.cols / 8;
    const uint4 *w8 = (const uint4 *) wrow;
    for (int c = lane; c < n_chunks; c += 32) {
      float w[8];
      unpack8 (__ldg (w8 + c), w);
#pragma unroll
      for (int i = 0; i < WC_GEMV_MAX_N; i++) {
        if (i < a.n) {
          const float4 *x4 = (const float4 *) (a.x + (size_t) i * a.x_stride) + 2 * c;
          const float4 x0 = __ldg (x4), x1 = __ldg (x4 + 1);
          float s = acc[i];
          s = fmaf (w[0], x0.x, s);
          s = fmaf (w[1], x0.y, s);
          s = fmaf (w[2], x0.z, s);
          s = fmaf (w[3], x0.w, s);
          s = fmaf (w[4], x1.x, s);
          s = fmaf (w[5], x1.y, s);
          s = fmaf (w[6], x1.z, s);
          s = fmaf (w[7], x1.w, s);
          acc[i] = s;
        }
      }
    }
  } else {
    for (int c = lane; c < a.cols; c += 32) {
      const float w = wc_half_to_float (wrow[c]);
#pragma unroll
      for (int i = 0; i < WC_GEMV_MAX_N; i++)
        if (i < a.n)
          acc[i] = fmaf (w, a.x[(size_t) i * a.x_stride + c], acc[i]);
    }
  }

#pragma unroll
  for (int i = 0; i < WC_GEMV_MAX_N; i++) {
    if (i < a.n) {
      const float dot = wc_warp_sum (acc[i]);
      if (lane == i) {
        float *y = a.y + (size_t) i * a.y_stride + r;
        float v = dot;
        if (a.flags & WC_ACT_ACCUMULATE)
          v = *y + v;
        if (a.bias)
          v += a.bias[r];
        if (a.flags & WC_ACT_GELU)
          v = wc_gelu (v);
        *y = v;
      }
    }
  }
}

extern "C" void
wc_gemv_plan (WcLaunch *l, const WcGemvArgs *a)
{
  wc_fill (l, wc_gemv_kernel, wc_div_up ((size_t) a->rows, GEMV_WARPS), 1, 1, GEMV_WARPS * 32);
}
