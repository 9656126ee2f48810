// attention-split.cu: attention for few queries (decode steps: self-attention
// over the KV cache, cross-attention over the cached encoder K/V), split over
// the keys ("flash decoding"). Block (split s, head h, query i) runs an
// online softmax over its share of the keys this query sees, four warps
// each taking every fourth batch of keys, and writes one partial
// (max, sum, acc[d_head]) in base-2 units; wc_attn_combine_kernel merges the
// splits. The grid never depends on n_kv: a captured decode step stays valid
// while the cache grows, only the arguments change.
// CPU twin: cpu_attention() (attention_direct).
#include "common.cuh"

#define WARPS 4
#define KB 4                        // keys per warp per batch (loads in flight)
#define DPL (WC_SPLIT_MAX_D / 32)   // dimensions per lane, at most

__global__ void __launch_bounds__ (WARPS * 32)
wc_attn_split_kernel (WcAttnSplitArgs sa)
{
  const WcAttnArgs a = sa.a;
  const int s = blockIdx.x, h = blockIdx.y, qi = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int D = a.d_head;

  const int limit = a.causal < 0 ? a.n_kv : min (a.n_kv, a.causal + qi + 1);
  const int chunk = (limit + sa.n_split - 1) / sa.n_split;
  const int begin = s * chunk;
  const int end = min (limit, begin + chunk);

  float q[DPL], acc[DPL];
  const float *qrow = a.q + (size_t) qi * a.q_stride + h * D;
#pragma unroll
  for (int t = 0; t < DPL; t++) {
    const int d = lane + 32 * t;
    q[t] = d < D ? qrow[d] * a.scale_log2 : 0.0f;
    acc[t] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;

  for (int j0 = begin + warp * KB; j0 < end; j0 += WARPS * KB) {
    float kv[KB][DPL], vv[KB][DPL];
#pragma unroll
    for (int b = 0; b < KB; b++) {
      const int j = j0 + b;
      const float *krow = a.k + (size_t) j * a.kv_stride + h * D;
      const float *vrow = a.v + (size_t) j * a.kv_stride + h * D;
#pragma unroll
      for (int t = 0; t < DPL; t++) {
        const int d = lane + 32 * t;
        const bool ok = j < end && d < D;
        kv[b][t] = ok ? krow[d] : 0.0f;
        vv[b][t] = ok ? vrow[d] : 0.0f;
      }
    }
    float sc[KB];
    float batch_max = -INFINITY;
#pragma unroll
    for (int b = 0; b < KB; b++) {
      float p = 0.0f;
#pragma unroll
      for (int t = 0; t < DPL; t++)
        p = fmaf (q[t], kv[b][t], p);
      p = wc_warp_sum (p);
      sc[b] = (j0 + b < end) ? p : -INFINITY;
      batch_max = fmaxf (batch_max, sc[b]);
    }
    const float m_new = fmaxf (m, batch_max);
    const float ref = wc_safe_ref (m_new);
    const float corr = exp2f (m - ref);
    l *= corr;
#pragma unroll
    for (int t = 0; t < DPL; t++)
      acc[t] *= corr;
#pragma unroll
    for (int b = 0; b < KB; b++) {
      const float p = exp2f (sc[b] - ref);
      l += p;
#pragma unroll
      for (int t = 0; t < DPL; t++)
        acc[t] = fmaf (p, vv[b][t], acc[t]);
    }
    m = m_new;
  }

  // Merge the four warps in shared memory, then write the block's partial.
  __shared__ float sm[WARPS], sl[WARPS];
  __shared__ float sacc[WARPS][WC_SPLIT_MAX_D];
  if (lane == 0) {
    sm[warp] = m;
    sl[warp] = l;
  }
#pragma unroll
  for (int t = 0; t < DPL; t++)
    sacc[warp][lane + 32 * t] = acc[t];
  __syncthreads ();

  float M = -INFINITY;
  for (int w = 0; w < WARPS; w++)
    M = fmaxf (M, sm[w]);
  const float ref = wc_safe_ref (M);
  float *out = sa.partial + (((size_t) qi * a.n_head + h) * sa.n_split + s) * (D + 2);
  for (int d = threadIdx.x; d < D; d += WARPS * 32) {
    float v = 0.0f;
    for (int w = 0; w < WARPS; w++)
      v += sacc[w][d] * exp2f (sm[w] - ref);
    out[2 + d] = v;
  }
  if (threadIdx.x == 0) {
    float L = 0.0f;
    for (int w = 0; w < WARPS; w++)
      L += sl[w] * exp2f (sm[w] - ref);
    out[0] = M;
    out[1] = L;
  }
}

__global__ void
wc_attn_combine_kernel (WcAttnCombineArgs c)
{
  const int h = blockIdx.x, qi = blockIdx.y;
  const int D = c.d_head;
  const float *p = c.partial + ((size_t) qi * c.n_head + h) * c.n_split * (D + 2);

  float M = -INFINITY;
  for (int s = 0; s < c.n_split; s++)
    M = fmaxf (M, p[(size_t) s * (D + 2)]);
  const float ref = wc_safe_ref (M);
  float L = 0.0f;
  for (int s = 0; s < c.n_split; s++)
    L += p[(size_t) s * (D + 2) + 1] * exp2f (p[(size_t) s * (D + 2)] - ref);
  const float inv = L > 0.0f ? 1.0f / L : 0.0f;

  float *out = c.out + (size_t) qi * c.out_stride + h * D;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float v = 0.0f;
    for (int s = 0; s < c.n_split; s++)
      v += p[(size_t) s * (D + 2) + 2 + d] * exp2f (p[(size_t) s * (D + 2)] - ref);
    out[d] = v * inv;
  }
}

extern "C" void
wc_attn_split_plan (WcLaunch *l, const WcAttnSplitArgs *a)
{
  wc_fill (l, wc_attn_split_kernel, a->n_split, a->a.n_head, a->a.n_q, WARPS * 32);
}

extern "C" void
wc_attn_combine_plan (WcLaunch *l, const WcAttnCombineArgs *a)
{
  wc_fill (l, wc_attn_combine_kernel, a->n_head, a->n_q, 1, WC_SPLIT_MAX_D);
}
