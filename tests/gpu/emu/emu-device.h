// emu-device.h (emulation): force-included before each kernels/*.cu when
// the kernels are built as plain C++ for the CUDA emulator (emu-runtime.cc).
// GPU threads run as fibers; __syncthreads and warp shuffles are barriers
// of the emulator's scheduler; __shared__ variables are function statics
// (blocks run one after the other).
#pragma once

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct EmuDim3 {
  unsigned x, y, z;
};

extern "C" {
const EmuDim3 *wc_emu_thread_idx (void);
const EmuDim3 *wc_emu_block_idx (void);
const EmuDim3 *wc_emu_block_dim (void);
const EmuDim3 *wc_emu_grid_dim (void);
void wc_emu_syncthreads (void);
/* Exchanges 8 bytes with lane (own lane ^ offset) of the same warp. */
uint64_t wc_emu_shfl_xor (uint64_t v, int offset);
typedef void (*WcEmuCall) (const void *fn, const void *args);
void wc_emu_register_kernel (const void *fn, size_t args_size, WcEmuCall call);
}

#define threadIdx (*wc_emu_thread_idx ())
#define blockIdx (*wc_emu_block_idx ())
#define blockDim (*wc_emu_block_dim ())
#define gridDim (*wc_emu_grid_dim ())

static inline void
__syncthreads (void)
{
  wc_emu_syncthreads ();
}

template <typename T>
static inline T
__shfl_xor_sync (unsigned mask, T v, int offset)
{
  static_assert (sizeof (T) <= 8, "shuffle of more than 8 bytes");
  (void) mask;
  uint64_t bits = 0;
  memcpy (&bits, &v, sizeof (T));
  bits = wc_emu_shfl_xor (bits, offset);
  T r;
  memcpy (&r, &bits, sizeof (T));
  return r;
}

struct float4 {
  float x, y, z, w;
};
struct uint4 {
  unsigned x, y, z, w;
};
typedef struct float2_emu_ float2;

static inline float4
make_float4 (float x, float y, float z, float w)
{
  float4 r = { x, y, z, w };
  return r;
}

template <typename T>
static inline T
__ldg (const T *p)
{
  return *p;
}

template <typename Args>
static void
wc_emu_call (const void *fn, const void *args)
{
  ((void (*) (Args)) fn) (*(const Args *) args);
}

#include <cmath>
using std::isnan;

static inline int
min (int a, int b)
{
  return a < b ? a : b;
}

static inline int
max (int a, int b)
{
  return a > b ? a : b;
}
