// attention-probs.cu: one head's attention probabilities for word
// timestamps, softmax over the first n_kv keys of (q_h k_h^T) / sqrt(d_head)
// (backend.h attention_probs). One block per query row; the probabilities
// are the only output (no other head, no values).
// CPU twin: whisper_cpu_backend_attention_probs() (engine/src/backend/cpu/backend-cpu-attention.c).
#include "common.cuh"

#define PROBS_THREADS 256

__device__ static float
block_max (float v, float *shared)
{
  v = wc_warp_max (v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads ();  // shared may still be read from a previous reduction
  if (lane == 0)
    shared[warp] = v;
  __syncthreads ();
  float m = shared[0];
  for (int w = 1; w < PROBS_THREADS / 32; w++)
    m = fmaxf (m, shared[w]);
  return m;
}

__device__ static double
block_sum_d (double v, double *shared)
{
  v = wc_warp_sum_d (v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads ();
  if (lane == 0)
    shared[warp] = v;
  __syncthreads ();
  double s = 0.0;
  for (int w = 0; w < PROBS_THREADS / 32; w++)
    s += shared[w];
  return s;
}

__global__ void
wc_attention_probs_kernel (WcAttnProbsArgs a)
{
  __shared__ float shared_f[PROBS_THREADS / 32];
  __shared__ double shared_d[PROBS_THREADS / 32];
  const int row = blockIdx.x;
  const float *q = a.q + (size_t) row * a.q_stride + (size_t) a.head * a.d_head;
  const float *k = a.k + (size_t) a.head * a.d_head;
  float *p = a.probs + (size_t) row * a.probs_stride;

  float local_max = -INFINITY;
  for (int j = threadIdx.x; j < a.n_kv; j += PROBS_THREADS) {
    const float *kj = k + (size_t) j * a.kv_stride;
    float s = 0.0f;
    for (int c = 0; c < a.d_head; c++)
      s += q[c] * kj[c];
    s *= a.scale;
    p[j] = s;
    local_max = fmaxf (local_max, s);
  }
  const float max = block_max (local_max, shared_f);
  double local_sum = 0.0;
  for (int j = threadIdx.x; j < a.n_kv; j += PROBS_THREADS) {
    const float e = expf (p[j] - max);
    p[j] = e;
    local_sum += e;
  }
  const float inv = (float) (1.0 / block_sum_d (local_sum, shared_d));
  for (int j = threadIdx.x; j < a.n_kv; j += PROBS_THREADS)
    p[j] *= inv;
}

extern "C" void
wc_attention_probs_plan (WcLaunch *l, const WcAttnProbsArgs *a)
{
  wc_fill (l, wc_attention_probs_kernel, a->n_q, 1, 1, PROBS_THREADS);
}
