// common.cuh: small device helpers shared by the kernels (C++ for nvcc only).
#pragma once

#include "kernels.h"

#include <cuda_fp16.h>
#include <math.h>

#define WC_FULL_MASK 0xffffffffu

// Fills a WcLaunch for a kernel taking one argument struct.
template <typename Args>
static inline void
wc_fill (WcLaunch *l, void (*kernel) (Args), unsigned gx, unsigned gy, unsigned gz,
         unsigned bx, unsigned smem = 0)
{
  l->func = (const void *) kernel;
  l->grid[0] = gx ? gx : 1;
  l->grid[1] = gy ? gy : 1;
  l->grid[2] = gz ? gz : 1;
  l->block[0] = bx;
  l->block[1] = 1;
  l->block[2] = 1;
  l->smem = smem;
#ifdef WC_EMULATION
  // the CPU emulator (tests/gpu/emu) calls kernels through their arguments' type
  wc_emu_register_kernel ((const void *) kernel, sizeof (Args), wc_emu_call<Args>);
#endif
}

static inline unsigned
wc_div_up (size_t a, size_t b)
{
  return (unsigned) ((a + b - 1) / b);
}

// Exact GELU, 0.5 x (1 + erf(x / sqrt 2)), with the CUDA math library's erff.
// CPU twin: whisper_cpu_bias_gelu() (engine/src/backend/cpu/cpu-kernels.c; a rational erf,
// absolute error under 5e-7).
__device__ __forceinline__ float
wc_gelu (float x)
{
  return 0.5f * x * (1.0f + erff (x * 0.70710678118654752440f));
}

__device__ __forceinline__ float
wc_warp_sum (float v)
{
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync (WC_FULL_MASK, v, o);
  return v;
}

__device__ __forceinline__ double
wc_warp_sum_d (double v)
{
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync (WC_FULL_MASK, v, o);
  return v;
}

__device__ __forceinline__ float
wc_warp_max (float v)
{
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf (v, __shfl_xor_sync (WC_FULL_MASK, v, o));
  return v;
}

__device__ __forceinline__ float
wc_half_to_float (uint16_t bits)
{
  return __half2float (__ushort_as_half (bits));
}

__device__ __forceinline__ uint16_t
wc_float_to_half (float v)
{
  return __half_as_ushort (__float2half_rn (v));
}

// The largest finite fp16 value.
#define WC_HALF_MAX 65504.0f

// fp16 of v, and optionally the fp16 of what that rounding lost. Values
// beyond fp16's range saturate at +-65504 (hi + lo = +-65504, lo = 0):
// rounding them to +-inf would make lo = v - inf = -inf, and the GEMM's
// hi * w + lo * w = inf - inf a NaN. A NaN stays a NaN (the comparisons are
// false for it), so that bad input still shows.
__device__ __forceinline__ void
wc_split_half (float v, uint16_t *hi, uint16_t *lo)
{
  if (v > WC_HALF_MAX)
    v = WC_HALF_MAX;
  else if (v < -WC_HALF_MAX)
    v = -WC_HALF_MAX;
  const __half h = __float2half_rn (v);
  *hi = __half_as_ushort (h);
  if (lo)
    *lo = wc_float_to_half (v - __half2float (h));
}

// 2^x with the exponent -inf giving 0 (exp2f already does), and a guard for
// (-inf) - (-inf): callers pass a finite reference when all inputs are -inf.
__device__ __forceinline__ float
wc_safe_ref (float m)
{
  return m == -INFINITY ? 0.0f : m;
}
