// attention.cu: fused ("flash") multi-head attention for many queries
// (encoder self-attention over up to 1500 frames, decoder prompt steps).
// Each block takes WC_FLASH_BQ queries of one head; keys and values stream
// through shared memory in tiles of WC_FLASH_BK rows; the softmax is kept
// online in fp32 (running max and sum, in base 2), so no score matrix ever
// reaches global memory. Four threads share a query, each owning 16 of its
// 64 dimensions (float4 chunks part, part + 4, part + 8, part + 12).
// CPU twin: cpu_attention() (scores scaled by 1/sqrt(d_head), softmax in
// fp32 over keys 0 .. causal + i, then the weighted sum of values).
#include "common.cuh"

#define D 64
#define BQ WC_FLASH_BQ
#define BK WC_FLASH_BK
#define THREADS (BQ * 4)

__global__ void __launch_bounds__ (THREADS)
wc_flash_kernel (WcAttnArgs a)
{
  __shared__ float4 sk[BK][D / 4];
  __shared__ float4 sv[BK][D / 4];

  const int h = blockIdx.y;
  const int q0 = blockIdx.x * BQ;
  const int tq = threadIdx.x / 4, part = threadIdx.x % 4;
  const int qi = q0 + tq;
  const bool valid = qi < a.n_q;

  // Keys this query may see, and the furthest any query of the block sees.
  const int q_last = min (q0 + BQ, a.n_q) - 1;
  const int limit = a.causal < 0 ? a.n_kv : min (a.n_kv, a.causal + qi + 1);
  const int block_limit = a.causal < 0 ? a.n_kv : min (a.n_kv, a.causal + q_last + 1);

  float4 q[4];
  const float4 *qrow = (const float4 *) (a.q + (size_t) (valid ? qi : 0) * a.q_stride + h * D);
#pragma unroll
  for (int c = 0; c < 4; c++)
    q[c] = qrow[part + 4 * c];

  float4 acc[4];
#pragma unroll
  for (int c = 0; c < 4; c++)
    acc[c] = make_float4 (0.f, 0.f, 0.f, 0.f);
  float m = -INFINITY, l = 0.0f;

  for (int k0 = 0; k0 < block_limit; k0 += BK) {
    __syncthreads ();
    for (int idx = threadIdx.x; idx < BK * (D / 4); idx += THREADS) {
      const int j = idx / (D / 4), c = idx % (D / 4);
      const int key = k0 + j;
      float4 kv = make_float4 (0.f, 0.f, 0.f, 0.f), vv = kv;
      if (key < block_limit) {
        kv = ((const float4 *) (a.k + (size_t) key * a.kv_stride + h * D))[c];
        vv = ((const float4 *) (a.v + (size_t) key * a.kv_stride + h * D))[c];
      }
      sk[j][c] = kv;
      sv[j][c] = vv;
    }
    __syncthreads ();

    float s[BK];
    float tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < BK; j++) {
      float p = 0.0f;
#pragma unroll
      for (int c = 0; c < 4; c++) {
        const float4 kk = sk[j][part + 4 * c];
        p = fmaf (q[c].x, kk.x, p);
        p = fmaf (q[c].y, kk.y, p);
        p = fmaf (q[c].z, kk.z, p);
        p = fmaf (q[c].w, kk.w, p);
      }
      p += __shfl_xor_sync (WC_FULL_MASK, p, 1);
      p += __shfl_xor_sync (WC_FULL_MASK, p, 2);
      s[j] = (k0 + j < limit) ? p * a.scale_log2 : -INFINITY;
      tile_max = fmaxf (tile_max, s[j]);
    }

    const float m_new = fmaxf (m, tile_max);
    const float ref = wc_safe_ref (m_new);
    const float corr = exp2f (m - ref);
    l *= corr;
#pragma unroll
    for (int c = 0; c < 4; c++) {
      acc[c].x *= corr;
      acc[c].y *= corr;
      acc[c].z *= corr;
      acc[c].w *= corr;
    }
#pragma unroll
    for (int j = 0; j < BK; j++) {
      const float p = exp2f (s[j] - ref);
      l += p;
#pragma unroll
      for (int c = 0; c < 4; c++) {
        const float4 vv = sv[j][part + 4 * c];
        acc[c].x = fmaf (p, vv.x, acc[c].x);
        acc[c].y = fmaf (p, vv.y, acc[c].y);
        acc[c].z = fmaf (p, vv.z, acc[c].z);
        acc[c].w = fmaf (p, vv.w, acc[c].w);
      }
    }
    m = m_new;
  }

  if (!valid)
    return;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  float4 *orow = (float4 *) (a.out + (size_t) qi * a.out_stride + h * D);
#pragma unroll
  for (int c = 0; c < 4; c++)
    orow[part + 4 * c] =
        make_float4 (acc[c].x * inv, acc[c].y * inv, acc[c].z * inv, acc[c].w * inv);
}

extern "C" int
wc_flash_supported (const WcAttnArgs *a)
{
  const uintptr_t mis = (uintptr_t) a->out | (uintptr_t) a->q | (uintptr_t) a->k | (uintptr_t) a->v;
  return a->d_head == D && a->out_stride % 4 == 0 && a->q_stride % 4 == 0 &&
         a->kv_stride % 4 == 0 && mis % 16 == 0;
}

extern "C" void
wc_flash_plan (WcLaunch *l, const WcAttnArgs *a)
{
  wc_fill (l, wc_flash_kernel, wc_div_up ((size_t) a->n_q, BQ), a->n_head, 1, THREADS);
}
