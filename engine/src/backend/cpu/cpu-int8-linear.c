/* cpu-int8-linear.c: the CPU backend's int8 weights and linears
 * (cpu-int8.h has the rule and the kernels).
 *
 * A CTranslate2 int8 tensor is kept as stored (its rows padded to the
 * kernels' column multiple); with precision=int8 every float weight
 * matrix is quantized at load, as CTranslate2 does for compute_type int8.
 * A linear quantizes its input rows (per row, each call), then:
 * - up to WHISPER_CPU_GEMV_MAX_ROWS rows (decode steps): the rows are
 *   quantized once and the weight rows split over the threads, one
 *   contiguous share each, as the float matrix-vector kernels do;
 * - more rows (encoder, prompt passes): blocks of input rows, each task
 *   quantizing its own block into its scratch and multiplying it by the
 *   whole weight.
 * The sums are exact integers, so every row gets the bits of its one-row
 * call whatever the split. */
#include "backend-cpu-private.h"

#define INT8_BLOCK_ROWS 256 /* most input rows per task of a many-row linear */

gboolean
whisper_cpu_int8_takes (const WhisperBackendCpu *self, const WhisperWeight *w,
                        const WhisperTensor *t)
{
  /* CTranslate2 runs its convolutions in floating point, on the
   * dequantized kernel when the file stores it in int8 */
  if (w->keep_float)
    return FALSE;
  return t->type == WHISPER_DTYPE_I8 ||
         (self->int8_quantize && (t->type == WHISPER_DTYPE_F16 || t->type == WHISPER_DTYPE_F32 ||
                                  t->type == WHISPER_DTYPE_BF16));
}

gboolean
whisper_cpu_int8_weight_upload (WhisperBackendCpu *self, WhisperWeight *w, const WhisperTensor *t,
                                GError **error)
{
  (void) self;
  WhisperCpuInt8Weight *q = whisper_cpu_int8_weight_new (t->rows, t->cols);
  float *row = t->type == WHISPER_DTYPE_I8 ? NULL : g_try_malloc (MAX (t->cols, 1) * sizeof (float));
  if (!q || (t->type != WHISPER_DTYPE_I8 && !row)) {
    g_free (q);
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                 "cpu backend: cannot allocate a %d x %d int8 weight", t->rows, t->cols);
    return FALSE;
  }
  for (int r = 0; r < t->rows; r++) {
    if (t->type == WHISPER_DTYPE_I8) {
      whisper_cpu_int8_weight_set_stored (q, r, (const int8_t *) t->data + (size_t) r * t->cols,
                                          t->scales[r]);
    } else {
      whisper_tensor_rows_to_f32 (t, r, r + 1, row);
      whisper_cpu_int8_weight_set_f32 (q, r, row);
    }
  }
  g_free (row);
  w->data = q;
  w->dtype = WEIGHT_I8;
  w->rows = t->rows;
  w->cols = t->cols;
  return TRUE;
}

typedef struct {
  WhisperBackendCpu *self;
  float *y;
  int y_stride;
  const float *x;
  int x_stride;
  const WhisperCpuInt8Weight *w;
  const float *bias;
  int n;
  WhisperLinearFlags flags;
  int per_task; /* weight rows (few input rows) or input rows (many) */
} Int8Job;

static void
bias_act (const Int8Job *job, float *y, int y_stride, int n, int r0, int r1)
{
  const gboolean gelu = (job->flags & WHISPER_LINEAR_GELU) != 0;
  if (!job->bias && !gelu)
    return;
  for (int i = 0; i < n; i++)
    whisper_cpu_bias_gelu (y + (size_t) i * y_stride + r0, job->bias ? job->bias + r0 : NULL,
                           r1 - r0, gelu);
}

/* Output columns [r0, r1) of n input rows: y = dot / scales, then bias
 * and GELU; with WHISPER_LINEAR_ACCUMULATE, y += (dot / scales + bias):
 * the bias joins the product before the residual, as CTranslate2's Dense
 * adds its residual after the dequantization's bias (src/layers/common.cc,
 * Dense::operator()), so each sum rounds as there. tmp: n * (r1 - r0)
 * floats of the caller's scratch, used only then. */
static void
rows_out (const Int8Job *job, float *y, const int8_t *xq, const float *xs, int n, int r0, int r1,
          float *tmp)
{
  const WhisperCpuInt8Isa isa = job->self->int8_isa;
  if (!(job->flags & WHISPER_LINEAR_ACCUMULATE) || (!job->bias &&
                                                   !(job->flags & WHISPER_LINEAR_GELU))) {
    whisper_cpu_int8_linear_rows (isa, y, job->y_stride, xq, xs, n, job->w, r0, r1,
                                  (job->flags & WHISPER_LINEAR_ACCUMULATE) != 0);
    bias_act (job, y, job->y_stride, n, r0, r1);
    return;
  }
  const int width = r1 - r0;
  /* tmp's column 0 is output column r0: the kernel writes tmp - r0 + r */
  whisper_cpu_int8_linear_rows (isa, tmp - r0, width, xq, xs, n, job->w, r0, r1, FALSE);
  for (int i = 0; i < n; i++) {
    float *t = tmp + (size_t) i * width;
    whisper_cpu_bias_gelu (t, job->bias ? job->bias + r0 : NULL, width,
                           (job->flags & WHISPER_LINEAR_GELU) != 0);
    float *yr = y + (size_t) i * job->y_stride + r0;
    for (int r = 0; r < width; r++)
      yr[r] += t[r];
  }
}

/* few input rows, already quantized into self->int8_x: weight rows
 * [r0, r1) of the task's share */
static void
int8_rows_task (int task, int thread, gpointer data)
{
  Int8Job *job = data;
  const int r0 = task * job->per_task, r1 = MIN (r0 + job->per_task, job->w->rows);
  float *tmp = (job->flags & WHISPER_LINEAR_ACCUMULATE)
                   ? whisper_cpu_thread_scratch (job->self, thread, (size_t) job->n * (r1 - r0))
                   : NULL;
  rows_out (job, job->y, job->self->int8_x, job->self->int8_scale, job->n, r0, r1, tmp);
}

/* many input rows: the task's block, quantized into the thread's scratch */
static void
int8_block_task (int task, int thread, gpointer data)
{
  Int8Job *job = data;
  const WhisperCpuInt8Weight *w = job->w;
  const int i0 = task * job->per_task, ni = MIN (job->per_task, job->n - i0);
  const size_t q_floats = ((size_t) ni * w->cols_pad + sizeof (float) - 1) / sizeof (float);
  const size_t tmp_floats = (job->flags & WHISPER_LINEAR_ACCUMULATE) ? (size_t) ni * w->rows : 0;
  float *scale = whisper_cpu_thread_scratch (job->self, thread, ni + q_floats + tmp_floats);
  int8_t *xq = (int8_t *) (scale + ni);
  for (int i = 0; i < ni; i++)
    scale[i] = whisper_cpu_int8_quantize_row (job->self->int8_isa, xq + (size_t) i * w->cols_pad,
                                              job->x + (size_t) (i0 + i) * job->x_stride,
                                              w->cols, w->cols_pad);
  rows_out (job, job->y + (size_t) i0 * job->y_stride, xq, scale, ni, 0, w->rows,
            scale + ni + q_floats);
}

void
whisper_cpu_int8_linear (WhisperBackendCpu *self, float *y, int y_stride, const float *x,
                         int x_stride, const WhisperWeight *w, const float *bias, int n,
                         WhisperLinearFlags flags)
{
  const WhisperCpuInt8Weight *q = w->data;
  Int8Job job = { self, y, y_stride, x, x_stride, q, bias, n, flags, 0 };
  const int threads = self->parent.n_threads;
  if (n > WHISPER_CPU_GEMV_MAX_ROWS) {
    /* up to INT8_BLOCK_ROWS rows a task (each task reads the whole weight
     * once), at least four tasks a thread where there are rows for them,
     * so that a thread slowed by others sharing the CPU leaves its share
     * to the rest */
    job.per_task = CLAMP ((n + 4 * threads - 1) / (4 * threads), 16, INT8_BLOCK_ROWS);
    whisper_thread_pool_run (self->pool, (n + job.per_task - 1) / job.per_task,
                             int8_block_task, &job);
    return;
  }
  self->int8_x = whisper_cpu_grow_buffer (self->int8_x, &self->int8_x_size,
                                          (size_t) n * q->cols_pad, 1, "int8 input values");
  self->int8_scale = whisper_cpu_grow_buffer (self->int8_scale, &self->int8_scale_size, n,
                                              sizeof (float), "int8 input scales");
  for (int i = 0; i < n; i++)
    self->int8_scale[i] = whisper_cpu_int8_quantize_row (
        self->int8_isa, self->int8_x + (size_t) i * q->cols_pad, x + (size_t) i * x_stride, q->cols, q->cols_pad);
  /* one contiguous share of whole panels per thread */
  const int per = (q->rows + threads - 1) / threads;
  job.per_task = MAX ((per + WHISPER_CPU_INT8_PANEL - 1) / WHISPER_CPU_INT8_PANEL *
                      WHISPER_CPU_INT8_PANEL, WHISPER_CPU_INT8_PANEL);
  whisper_thread_pool_run (self->pool, (q->rows + job.per_task - 1) / job.per_task,
                           int8_rows_task, &job);
}
