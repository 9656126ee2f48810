// embed.cu: token embedding (fp16 table) + learned positional embedding.
// CPU twin: cpu_embed().
#include "common.cuh"

#define EMBED_THREADS 128

__global__ void
wc_embed_kernel (WcEmbedArgs a)
{
  const int i = blockIdx.x;
  const uint16_t *e = a.emb + (size_t) a.tokens[i] * a.d;
  const float *p = a.pos + (size_t) (a.pos0 + i) * a.d;
  float *x = a.x + (size_t) i * a.d;
  for (int j = threadIdx.x; j < a.d; j += EMBED_THREADS)
    x[j] = wc_half_to_float (e[j]) + p[j];
}

extern "C" void
wc_embed_plan (WcLaunch *l, const WcEmbedArgs *a)
{
  wc_fill (l, wc_embed_kernel, a->n, 1, 1, EMBED_THREADS);
}
