/* backend-cpu-attention.c: the CPU backend's attention ops (backend-cpu.c
 * says how queries are blocked). */
#include "backend-cpu-private.h"
#include "half.h"

#include <math.h>
#include <string.h>

/* ---- attention ------------------------------------------------------ */

typedef struct {
  WhisperBackendCpu *self;
  float *out;
  int out_stride;
  const float *q;
  int q_stride;
  const float *k, *v;
  int kv_stride, n_q, n_kv, n_head, d_head, causal, n_blocks;
  float scale;
  int heads_per_task;
  /* precision=fast: q [n_head][n_q][d_head], k and v [n_head][n_kv][d_head]
   * in bfloat16 (bf16_split_task) */
  const uint16_t *qh, *kh, *vh;
  /* precision=fast decode steps: the float16 cross K/V (backend.h's
   * half_kv_write()) instead of k and v */
  const uint16_t *kv_half;
} AttentionJob;

/* Few queries (decode steps): direct loops, one task per group of
 * consecutive heads (one group per thread), so that a task reads whole runs
 * of each key row rather than one head's slice of it. */
static void
attention_direct_task (int task, int thread, gpointer data)
{
  AttentionJob *job = data;
  const int dh = job->d_head, h0 = task * job->heads_per_task;
  const int nh = MIN (job->heads_per_task, job->n_head - h0);
  float *s;

  if (job->causal < 0) {
    /* every query sees every key (cross-attention of the beams): the key
     * and value rows are read once for all of them */
    s = whisper_cpu_thread_scratch (job->self, thread,
                        WHISPER_CPU_ATTENTION_MULTI_SCRATCH (job->n_q, job->n_kv, dh, nh));
    whisper_cpu_attention_heads_multi (job->out + h0 * dh, job->out_stride, job->q + h0 * dh,
                                       job->q_stride, job->k + h0 * dh, job->v + h0 * dh,
                                       job->kv_stride, job->n_q, job->n_kv, dh, nh, job->scale,
                                       s);
    return;
  }
  s = whisper_cpu_thread_scratch (job->self, thread,
                                  WHISPER_CPU_ATTENTION_SCRATCH (job->n_kv, dh, nh));
  for (int i = 0; i < job->n_q; i++) {
    const int n_visible = MIN (job->n_kv, job->causal + i + 1);
    whisper_cpu_attention_heads (job->out + (size_t) i * job->out_stride + h0 * dh,
                                 job->q + (size_t) i * job->q_stride + h0 * dh, job->k + h0 * dh,
                                 job->v + h0 * dh, job->kv_stride, n_visible, dh, nh, job->scale,
                                 s);
  }
}

/* The scores s[nq, n_kv] of queries i0.. of a block become probabilities:
 * softmax over the keys each query may see, 0 for the others. */
static void
block_softmax (const AttentionJob *job, float *s, int i0, int nq, int n_kv)
{
  for (int i = 0; i < nq; i++) {
    float *row = s + (size_t) i * n_kv;
    const int n_visible = job->causal < 0 ? n_kv : MIN (n_kv, job->causal + i0 + i + 1);
    whisper_cpu_softmax (row, n_visible);
    for (int j = n_visible; j < n_kv; j++)
      row[j] = 0.0f;
  }
}

/* Many queries: one task per (head, block of queries), two sgemm calls. */
static void
attention_block_task (int task, int thread, gpointer data)
{
  AttentionJob *job = data;
  const int h = task / job->n_blocks, blk = task % job->n_blocks;
  const int i0 = blk * ATTN_BLOCK_ROWS, nq = MIN (ATTN_BLOCK_ROWS, job->n_q - i0);
  const int dh = job->d_head;
  /* keys beyond what the block's last query may see are not computed */
  const int n_kv = job->causal < 0 ? job->n_kv : MIN (job->n_kv, job->causal + i0 + nq);
  float *s = whisper_cpu_thread_scratch (job->self, thread, (size_t) nq * n_kv);

  whisper_cpu_sgemm (TRUE, nq, n_kv, dh, job->scale, job->q + (size_t) i0 * job->q_stride + h * dh,
                     job->q_stride, job->k + h * dh, job->kv_stride, 0.0f, s, n_kv);
  block_softmax (job, s, i0, nq, n_kv);
  whisper_cpu_sgemm (FALSE, nq, dh, n_kv, 1.0f, s, n_kv, job->v + h * dh, job->kv_stride, 0.0f,
                     job->out + (size_t) i0 * job->out_stride + h * dh, job->out_stride);
}

/* precision=fast, before the blocks: task 3h + {0, 1, 2} writes head h of
 * q, k or v in bfloat16, head-major and dense (the matmuls' plain layouts). */
static void
bf16_split_task (int task, int thread, gpointer data)
{
  (void) thread;
  AttentionJob *job = data;
  const int h = task / 3, which = task % 3, dh = job->d_head;
  const int n = which == 0 ? job->n_q : job->n_kv;
  const int stride = which == 0 ? job->q_stride : job->kv_stride;
  const float *src = (which == 0 ? job->q : which == 1 ? job->k : job->v) + h * dh;
  uint16_t *dst = (uint16_t *) (which == 0 ? job->qh : which == 1 ? job->kh : job->vh) +
                  (size_t) h * n * dh;
  for (int i = 0; i < n; i++)
    whisper_bf16_from_f32 (dst + (size_t) i * dh, src + (size_t) i * stride, dh);
}

/* attention_block_task in bfloat16: scores = scale q k^T and out = p v on
 * oneDNN, the softmax in float32 on the scores, rounded to bfloat16 for
 * the second product. */
static void
bf16_attention_block_task (int task, int thread, gpointer data)
{
  AttentionJob *job = data;
  const int h = task / job->n_blocks, blk = task % job->n_blocks;
  const int i0 = blk * ATTN_BLOCK_ROWS, nq = MIN (ATTN_BLOCK_ROWS, job->n_q - i0);
  const int dh = job->d_head;
  const int n_kv = job->causal < 0 ? job->n_kv : MIN (job->n_kv, job->causal + i0 + nq);
  const size_t n_s = (size_t) nq * n_kv;
  /* scores, then the output block, then the probabilities in bfloat16 */
  float *s = whisper_cpu_thread_scratch (job->self, thread, n_s + (size_t) nq * dh + (n_s + 1) / 2);
  float *o = s + n_s;
  uint16_t *p = (uint16_t *) (o + (size_t) nq * dh);
  WhisperBf16Matmul *m = job->self->bf16;

  if (!whisper_bf16_matmul_plain (m, thread, s, job->qh + ((size_t) h * job->n_q + i0) * dh,
                                  job->kh + (size_t) h * job->n_kv * dh, TRUE, nq, dh, n_kv,
                                  job->scale)) {
    attention_block_task (task, thread, data);
    return;
  }
  block_softmax (job, s, i0, nq, n_kv);
  whisper_bf16_from_f32 (p, s, n_s);
  if (!whisper_bf16_matmul_plain (m, thread, o, p, job->vh + (size_t) h * job->n_kv * dh, FALSE,
                                  nq, n_kv, dh, 1.0f)) {
    attention_block_task (task, thread, data);
    return;
  }
  for (int i = 0; i < nq; i++)
    memcpy (job->out + (size_t) (i0 + i) * job->out_stride + h * dh, o + (size_t) i * dh,
            dh * sizeof (float));
}

void
whisper_cpu_backend_attention (WhisperBackend *be, float *out, int out_stride, const float *q,
                               int q_stride, const float *k, const float *v, int kv_stride, int n_q,
                               int n_kv, int n_head, int d_head, int causal)
{
  WhisperBackendCpu *self = (WhisperBackendCpu *) be;
  AttentionJob job = { self, out, out_stride, q, q_stride, k, v, kv_stride, n_q, n_kv, n_head,
                       d_head, causal, (n_q + ATTN_BLOCK_ROWS - 1) / ATTN_BLOCK_ROWS,
                       1.0f / sqrtf ((float) d_head),
                       (n_head + be->n_threads - 1) / be->n_threads, NULL, NULL, NULL, NULL };
  if (n_q <= WHISPER_CPU_GEMV_MAX_ROWS) {
    whisper_thread_pool_run (self->pool, (n_head + job.heads_per_task - 1) / job.heads_per_task,
                             attention_direct_task, &job);
  } else if (self->bf16) {
    const size_t nq = (size_t) n_head * n_q * d_head, nkv = (size_t) n_head * n_kv * d_head;
    self->attn_bf16 = whisper_cpu_grow_buffer (self->attn_bf16, &self->attn_bf16_size, nq + 2 * nkv,
                                   sizeof (uint16_t), "bfloat16 values for attention");
    job.qh = self->attn_bf16;
    job.kh = self->attn_bf16 + nq;
    job.vh = self->attn_bf16 + nq + nkv;
    whisper_thread_pool_run (self->pool, 3 * n_head, bf16_split_task, &job);
    whisper_thread_pool_run (self->pool, n_head * job.n_blocks, bf16_attention_block_task, &job);
  } else {
    whisper_thread_pool_run (self->pool, n_head * job.n_blocks, attention_block_task, &job);
  }
}

void
whisper_cpu_backend_copy_rows (WhisperBackend *be, float *dst, int dst_stride, const float *src,
                               int src_stride, int n_rows, int n_cols)
{
  (void) be;
  for (int i = 0; i < n_rows; i++)
    memcpy (dst + (size_t) i * dst_stride, src + (size_t) i * src_stride,
            n_cols * sizeof (float));
}

typedef struct {
  uint16_t *dst;
  const float *kv;
  int kv_stride, n, n_head, d_head;
} HalfKvJob;

/* task h: key head h (h < n_head) or value head h - n_head, as
 * whisper_cpu_kv_to_half_heads () writes it */
static void
half_kv_task (int task, int thread, gpointer data)
{
  (void) thread;
  const HalfKvJob *job = data;
  const int dh = job->d_head;
  uint16_t *dst = job->dst + (size_t) task * job->n * dh;
  for (int j = 0; j < job->n; j++)
    whisper_float_to_half_n (dst + (size_t) j * dh,
                             job->kv + (size_t) j * job->kv_stride + (size_t) task * dh, dh);
}

/* precision=fast and int8: the cross-attention over float16 K/V
 * (backend.h), one task per head of the keys and of the values. */
void
whisper_cpu_backend_half_kv_write (WhisperBackend *be, uint16_t *dst, const float *kv,
                                   int kv_stride, int n, int n_head, int d_head)
{
  WhisperBackendCpu *self = (WhisperBackendCpu *) be;
  HalfKvJob job = { dst, kv, kv_stride, n, n_head, d_head };
  whisper_thread_pool_run (self->pool, 2 * n_head, half_kv_task, &job);
}

/* one task per head: its keys and values are one run each */
static void
half_attention_task (int task, int thread, gpointer data)
{
  const AttentionJob *job = data;
  const int dh = job->d_head;
  const size_t head = (size_t) job->n_kv * dh;
  float *s = whisper_cpu_thread_scratch (job->self, thread,
                             WHISPER_CPU_ATTENTION_F16KV_SCRATCH (job->n_q, job->n_kv, dh));
  whisper_cpu_attention_f16kv (job->out + task * dh, job->out_stride, job->q + task * dh,
                               job->q_stride, job->kv_half + task * head,
                               job->kv_half + (job->n_head + task) * head, job->n_q, job->n_kv,
                               dh, job->scale, s);
}

void
whisper_cpu_backend_attention_half_kv (WhisperBackend *be, float *out, int out_stride,
                                       const float *q, int q_stride, const uint16_t *kv_half,
                                       int n_q, int n_kv, int n_head, int d_head)
{
  WhisperBackendCpu *self = (WhisperBackendCpu *) be;
  AttentionJob job = { .self = self, .out = out, .out_stride = out_stride, .q = q,
                       .q_stride = q_stride, .kv_half = kv_half, .n_q = n_q, .n_kv = n_kv,
                       .n_head = n_head, .d_head = d_head,
                       .scale = 1.0f / sqrtf ((float) d_head) };
  whisper_thread_pool_run (self->pool, n_head, half_attention_task, &job);
}

/* One head's attention probabilities (backend.h, word timestamps). */
void
whisper_cpu_backend_attention_probs (WhisperBackend *be, float *probs, int probs_stride,
                                     const float *q, int q_stride, const float *k, int kv_stride,
                                     int n_q, int n_kv, int head, int d_head)
{
  (void) be;
  whisper_cpu_sgemm (TRUE, n_q, n_kv, d_head, 1.0f / sqrtf ((float) d_head),
                     q + (size_t) head * d_head, q_stride, k + (size_t) head * d_head, kv_stride,
                     0.0f, probs, probs_stride);
  for (int i = 0; i < n_q; i++)
    whisper_cpu_softmax (probs + (size_t) i * probs_stride, n_kv);
}

