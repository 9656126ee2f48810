/* backend-cpu-qblock.c: the CPU backend's weights in ggml's blocks
 * (util/qblock.h), kept as the file stores them, and their linear: the
 * input rows quantized once per call (as ggml's q8_0 for the 32-value
 * types, q8_K for the k-quants), then the integer block kernels of
 * cpu-qblock.h.
 *
 * - one to WHISPER_CPU_GEMV_MAX_ROWS input rows (decode steps, beams):
 *   the weight rows split over the threads in one contiguous share each,
 *   each weight row read once for all the input rows;
 * - more rows (encoder, prompt passes): the weight rows split over the
 *   threads in whole panels of 16 rows, each panel unpacked into the int8
 *   kernels' layout and multiplied by every input row, 4 at a time (the
 *   kernel set's gemm).
 * Up to WHISPER_CPU_GEMV_MAX_ROWS rows, every output row has the bits of
 * its one-row call (cpu-qblock.h), so max_exact_rows holds as for the
 * float16 kernels. */
#include "backend-cpu-private.h"
#include "qblock.h"

#define QX_BLOCK_BYTES (4 * sizeof (float) + 32) /* d, s, 2 s16 and 32 quants */
#define QUANTIZE_ROWS 64
#define PANEL_ROWS 16 /* the gemm's panel (cpu-qblock-x86.h) */

gboolean
whisper_cpu_qblock_weight_upload (WhisperWeight *w, const WhisperTensor *t, GError **error)
{
  const gsize bytes = whisper_tensor_bytes (t);
  void *data = g_try_malloc (MAX (bytes, 1));
  if (data == NULL) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                 "cpu backend: cannot allocate a %d x %d %s weight", t->rows, t->cols,
                 whisper_dtype_name (t->type));
    return FALSE;
  }
  memcpy (data, t->data, bytes);
  w->data = data;
  w->rows = t->rows;
  w->cols = t->cols;
  w->dtype = WEIGHT_QBLOCK + (int) t->type;
  return TRUE;
}

static WhisperDType
weight_qtype (const WhisperWeight *w)
{
  return (WhisperDType) (w->dtype - WEIGHT_QBLOCK);
}

typedef struct {
  WhisperBackendCpu *self;
  float *y;
  int y_stride;
  const float *x;
  int x_stride;
  const WhisperWeight *w;
  const float *bias;
  int n;
  WhisperLinearFlags flags;
  int per_task;      /* weight rows (few input rows) or input rows (many) */
  float *qd, *qs, *qs16; /* the quantized input rows (WhisperCpuQRows) */
  int8_t *qq;
} QLinearJob;

static void
quantize_task (int task, int thread, gpointer data)
{
  (void) thread;
  QLinearJob *job = data;
  const int i0 = task * QUANTIZE_ROWS, i1 = MIN (i0 + QUANTIZE_ROWS, job->n);
  if (whisper_qblock_is_k (weight_qtype (job->w))) /* as ggml's q8_K */
    whisper_cpu_qblock_quantize_rows_k (job->qd, job->qs, job->qs16, job->qq, job->x,
                                        job->x_stride, job->w->cols, i0, i1);
  else
    whisper_cpu_qblock_quantize_rows (job->qd, job->qs, job->qq, job->x, job->x_stride,
                                      job->w->cols, i0, i1);
}

static void
weight_rows_task (int task, int thread, gpointer data)
{
  QLinearJob *job = data;
  const WhisperWeight *w = job->w;
  const int r0 = task * job->per_task, r1 = MIN (r0 + job->per_task, w->rows);
  const WhisperCpuQRows x = { w->cols / WHISPER_QBLOCK_VALUES, job->qd, job->qs, job->qq,
                              whisper_qblock_is_k (weight_qtype (w)) ? job->qs16 : NULL };
  float *scratch = whisper_cpu_thread_scratch (job->self, thread,
                                               WHISPER_CPU_QBLOCK_GEMM_SCRATCH (x.n_blocks, job->n));
  job->self->qblock->gemv (weight_qtype (w), w->data, x.n_blocks, r0, r1, &x, 0, job->n, job->y,
                           job->y_stride, (job->flags & WHISPER_LINEAR_ACCUMULATE) != 0, scratch);
  if (job->bias || (job->flags & WHISPER_LINEAR_GELU))
    for (int i = 0; i < job->n; i++)
      whisper_cpu_bias_gelu (job->y + (size_t) i * job->y_stride + r0,
                             job->bias ? job->bias + r0 : NULL, r1 - r0,
                             (job->flags & WHISPER_LINEAR_GELU) != 0);
}

/* Many rows: the task's weight rows (whole panels of 16) by every input
 * row, in the kernel set's gemm (panels unpacked once per chunk of input
 * rows, cpu-qblock-x86.h). */
static void
panel_rows_task (int task, int thread, gpointer data)
{
  QLinearJob *job = data;
  const WhisperWeight *w = job->w;
  const int r0 = task * job->per_task, r1 = MIN (r0 + job->per_task, w->rows);
  const WhisperCpuQRows x = { w->cols / WHISPER_QBLOCK_VALUES, job->qd, job->qs, job->qq,
                              whisper_qblock_is_k (weight_qtype (w)) ? job->qs16 : NULL };
  float *scratch = whisper_cpu_thread_scratch (job->self, thread,
                                               WHISPER_CPU_QBLOCK_GEMM_SCRATCH (x.n_blocks, job->n));
  job->self->qblock->gemm (weight_qtype (w), w->data, x.n_blocks, r0, r1, &x, 0, job->n, job->y,
                           job->y_stride, (job->flags & WHISPER_LINEAR_ACCUMULATE) != 0, scratch);
  if (job->bias || (job->flags & WHISPER_LINEAR_GELU))
    for (int i = 0; i < job->n; i++)
      whisper_cpu_bias_gelu (job->y + (size_t) i * job->y_stride + r0,
                             job->bias ? job->bias + r0 : NULL, r1 - r0,
                             (job->flags & WHISPER_LINEAR_GELU) != 0);
}

void
whisper_cpu_qblock_linear (WhisperBackendCpu *self, float *y, int y_stride, const float *x,
                           int x_stride, const WhisperWeight *w, const float *bias, int n,
                           WhisperLinearFlags flags)
{
  const size_t n_blocks = (size_t) n * (w->cols / WHISPER_QBLOCK_VALUES);
  self->qx = whisper_cpu_grow_buffer (self->qx, &self->qx_size, n_blocks, QX_BLOCK_BYTES,
                                      "quantized input blocks");
  QLinearJob job = { self, y, y_stride, x, x_stride, w, bias, n, flags, 0, self->qx,
                     (float *) self->qx + n_blocks, (float *) self->qx + 2 * n_blocks,
                     (int8_t *) ((float *) self->qx + 4 * n_blocks) };
  whisper_thread_pool_run (self->pool, (n + QUANTIZE_ROWS - 1) / QUANTIZE_ROWS, quantize_task,
                           &job);
  const int threads = self->parent.n_threads;
  if (n <= WHISPER_CPU_GEMV_MAX_ROWS) {
    job.per_task = MAX ((w->rows + 4 * threads - 1) / (4 * threads) * 4, 4); /* whole tiles */
    whisper_thread_pool_run (self->pool, (w->rows + job.per_task - 1) / job.per_task,
                             weight_rows_task, &job);
  } else {
    /* about four tasks a thread, so that a thread slowed by others sharing
     * the CPU leaves its share to the rest */
    const int panels = (w->rows + PANEL_ROWS - 1) / PANEL_ROWS;
    job.per_task = MAX ((panels + 4 * threads - 1) / (4 * threads), 1) * PANEL_ROWS;
    whisper_thread_pool_run (self->pool, (w->rows + job.per_task - 1) / job.per_task,
                             panel_rows_task, &job);
  }
}
