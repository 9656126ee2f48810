// logits.cu: logit filters and greedy choice of one decode step on the
// device, so that a step copies back only the token and its log probability.
// CPU twin: whisper_logits_select() (engine/src/decode/whisper-logits.c). Same rules:
// the host turns the step's state into suppressed ranges (SuppressBlank at
// the first step, the timestamp pairing rules, non-decreasing timestamps,
// the initial-timestamp window) and the config into a static bitmask
// (SuppressTokens, <|notimestamps|>); pass 1 applies both in place and
// reduces per block: max and first argmax of the text part [0, ts_begin)
// and of the timestamp part, and sum(exp(x - max)) of each, in double as the
// CPU twin does. Pass 2 merges the blocks in a fixed order, applies
// "logsumexp(timestamps) > max(text) forbids text", and writes the choice:
// the first index of the maximum and max - logsumexp(all allowed logits).
#include "common.cuh"

#define MASK_THREADS 256

struct Part {
  float tmax, smax;
  int targ, sarg;
  double tsum, ssum;
};

__device__ __forceinline__ void
push (float v, int i, float &max, int &arg, double &sum)
{
  if (v == -INFINITY || isnan (v))
    return;
  if (v > max) {
    sum = (max == -INFINITY ? 0.0 : sum * exp ((double) max - (double) v)) + 1.0;
    max = v;
    arg = i;
  } else {
    sum += exp ((double) v - (double) max);
  }
}

// Merges (max2, arg2, sum2) into (max, arg, sum); ties keep the lower index.
__device__ __forceinline__ void
merge (float &max, int &arg, double &sum, float max2, int arg2, double sum2)
{
  if (max2 == -INFINITY)
    return;
  if (max == -INFINITY) {
    max = max2;
    arg = arg2;
    sum = sum2;
    return;
  }
  const float m = fmaxf (max, max2);
  sum = sum * exp ((double) max - m) + sum2 * exp ((double) max2 - m);
  if (max2 > max || (max2 == max && arg2 < arg))
    arg = arg2;
  max = m;
}

__device__ __forceinline__ void
merge_part (Part &a, const Part &b)
{
  merge (a.tmax, a.targ, a.tsum, b.tmax, b.targ, b.tsum);
  merge (a.smax, a.sarg, a.ssum, b.smax, b.sarg, b.ssum);
}

__device__ __forceinline__ Part
shfl_part (const Part &p, int o)
{
  Part r;
  r.tmax = __shfl_xor_sync (WC_FULL_MASK, p.tmax, o);
  r.smax = __shfl_xor_sync (WC_FULL_MASK, p.smax, o);
  r.targ = __shfl_xor_sync (WC_FULL_MASK, p.targ, o);
  r.sarg = __shfl_xor_sync (WC_FULL_MASK, p.sarg, o);
  r.tsum = __shfl_xor_sync (WC_FULL_MASK, p.tsum, o);
  r.ssum = __shfl_xor_sync (WC_FULL_MASK, p.ssum, o);
  return r;
}

// Block-wide merge; the result is valid in thread 0. Lanes merge in a fixed
// pattern, so the result does not depend on timing.
template <int THREADS>
__device__ Part
block_merge (Part p)
{
  __shared__ Part shared[THREADS / 32];
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    Part q = shfl_part (p, o);
    // the lane with the lower id keeps its own order: merge is commutative
    // apart from rounding, so always merge (lower, higher)
    if ((threadIdx.x & o) == 0)
      merge_part (p, q);
    else {
      merge_part (q, p);
      p = q;
    }
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0)
    shared[warp] = p;
  __syncthreads ();
  if (threadIdx.x == 0)
    for (int w = 1; w < THREADS / 32; w++)
      merge_part (p, shared[w]);
  return p;
}

__device__ __forceinline__ Part
empty_part ()
{
  Part p;
  p.tmax = p.smax = -INFINITY;
  p.targ = p.sarg = 0;
  p.tsum = p.ssum = 0.0;
  return p;
}

__global__ void __launch_bounds__ (MASK_THREADS)
wc_logits_mask_kernel (WcLogitsMaskArgs a)
{
  Part p = empty_part ();
  const int stride = gridDim.x * MASK_THREADS;
  for (int i = blockIdx.x * MASK_THREADS + threadIdx.x; i < a.n_vocab; i += stride) {
    float v = a.logits[i];
    bool off = a.mask && ((a.mask[i >> 5] >> (i & 31)) & 1u);
    for (int r = 0; r < a.n_ranges; r++)
      off = off || (i >= a.range[r][0] && i < a.range[r][1]);
    if (off) {
      v = -INFINITY;
      a.logits[i] = v;
    }
    if (i < a.ts_begin)
      push (v, i, p.tmax, p.targ, p.tsum);
    else
      push (v, i, p.smax, p.sarg, p.ssum);
  }
  p = block_merge<MASK_THREADS> (p);
  if (threadIdx.x == 0) {
    WcLogitPartial *out = a.partial + blockIdx.x;
    out->text_max = p.tmax;
    out->text_arg = p.targ;
    out->text_sum = p.tsum;
    out->ts_max = p.smax;
    out->ts_arg = p.sarg;
    out->ts_sum = p.ssum;
  }
}

__global__ void __launch_bounds__ (WC_LOGITS_BLOCKS)
wc_logits_choose_kernel (WcLogitsChooseArgs a)
{
  Part p = empty_part ();
  if ((int) threadIdx.x < a.n_partial) {
    const WcLogitPartial *in = a.partial + threadIdx.x;
    p.tmax = in->text_max;
    p.targ = in->text_arg;
    p.tsum = in->text_sum;
    p.smax = in->ts_max;
    p.sarg = in->ts_arg;
    p.ssum = in->ts_sum;
  }
  p = block_merge<WC_LOGITS_BLOCKS> (p);
  if (threadIdx.x != 0)
    return;

  // logsumexp over the timestamps, against the best single text logit.
  const double ts_lse = p.smax == -INFINITY ? -INFINITY : p.smax + log (p.ssum);
  const bool forbid_text = a.timestamp_rule && ts_lse > (double) p.tmax;

  float max;
  int arg;
  double sum;
  if (forbid_text || (p.smax > p.tmax)) {
    max = p.smax;
    arg = p.sarg;
  } else {
    max = p.tmax;
    arg = p.targ;
  }
  if (forbid_text) {
    sum = p.ssum;
  } else {
    sum = 0.0;
    if (p.tmax != -INFINITY)
      sum += p.tsum * exp ((double) p.tmax - max);
    if (p.smax != -INFINITY)
      sum += p.ssum * exp ((double) p.smax - max);
  }
  WcChoice c;
  if (max == -INFINITY) {
    c.token = 0;
    c.logprob = NAN;
  } else {
    c.token = arg;
    c.logprob = (float) ((double) max - ((double) max + log (sum)));
  }
  *a.out = c;
}

extern "C" void
wc_logits_mask_plan (WcLaunch *l, const WcLogitsMaskArgs *a)
{
  (void) a;
  wc_fill (l, wc_logits_mask_kernel, WC_LOGITS_BLOCKS, 1, 1, MASK_THREADS);
}

extern "C" void
wc_logits_choose_plan (WcLaunch *l, const WcLogitsChooseArgs *a)
{
  (void) a;
  wc_fill (l, wc_logits_choose_kernel, 1, 1, 1, WC_LOGITS_BLOCKS);
}
