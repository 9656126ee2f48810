// cuda_fp16.h (emulation): the few fp16 types and conversions the kernels
// use, on the host CPU with GCC's _Float16 (IEEE binary16, round to nearest
// even). Only for building kernels/*.cu with the CUDA emulator (emu/).
#pragma once

#include <stdint.h>
#include <string.h>

struct __half {
  uint16_t bits;
};
struct __half2 {
  __half x, y;
};

static inline __half
__ushort_as_half (uint16_t b)
{
  __half h;
  h.bits = b;
  return h;
}

static inline uint16_t
__half_as_ushort (__half h)
{
  return h.bits;
}

static inline float
__half2float (__half h)
{
  _Float16 f;
  memcpy (&f, &h.bits, 2);
  return (float) f;
}

static inline __half
__float2half_rn (float v)
{
  _Float16 f = (_Float16) v;
  __half h;
  memcpy (&h.bits, &f, 2);
  return h;
}

struct float2_emu_ {
  float x, y;
};

static inline float2_emu_
__half22float2 (__half2 h)
{
  float2_emu_ r = { __half2float (h.x), __half2float (h.y) };
  return r;
}
