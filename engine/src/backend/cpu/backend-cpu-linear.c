/* backend-cpu-linear.c: the CPU backend's linear (backend-cpu.c says
 * which kernel runs which shape). */
#include "backend-cpu-private.h"

#include <string.h>

/* ---- linear --------------------------------------------------------- */

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
  int rows_per_task;  /* matrix-vector products: weight rows; many-row: input rows */
  const float *w32;   /* many-row linears: the weight as float32 */
  const WhisperBf16Weight *bw; /* precision=fast many-row linears: the weight in bfloat16 */
  const uint16_t *wamx;        /* precision=fast on AMX, few rows: the packed weight */
} LinearJob;

static void
bias_act_block (float *y, int y_stride, const float *bias, int n, int c0, int c1, gboolean gelu)
{
  if (!bias && !gelu)
    return;
  for (int i = 0; i < n; i++)
    whisper_cpu_bias_gelu (y + (size_t) i * y_stride + c0, bias ? bias + c0 : NULL, c1 - c0, gelu);
}

static void
gemv_task (int task, int thread, gpointer data)
{
  (void) thread;
  LinearJob *job = data;
  const WhisperWeight *w = job->w;
  const int r0 = task * job->rows_per_task, r1 = MIN (r0 + job->rows_per_task, w->rows);
  const gboolean acc = (job->flags & WHISPER_LINEAR_ACCUMULATE) != 0;
  if (w->dtype == WEIGHT_F16_PACKED)
    whisper_cpu_gemv_f16_packed (job->y, w->data, job->x, r0, r1, w->cols, acc);
  else if (w->dtype == WEIGHT_F16)
    whisper_cpu_gemv_f16 (job->y, w->data, job->x, r0, r1, w->cols, acc);
  else
    whisper_cpu_gemv_f32 (job->y, w->data, job->x, r0, r1, w->cols, acc);
  bias_act_block (job->y, job->y_stride, job->bias, 1, r0, r1,
                  (job->flags & WHISPER_LINEAR_GELU) != 0);
}

/* Several input rows, the share of weight rows of gemv_task: per input row
 * the bits of gemv_task's, bias and GELU included. */
static void
gemv_rows_task (int task, int thread, gpointer data)
{
  (void) thread;
  LinearJob *job = data;
  const WhisperWeight *w = job->w;
  const int r0 = task * job->rows_per_task, r1 = MIN (r0 + job->rows_per_task, w->rows);
  const gboolean acc = (job->flags & WHISPER_LINEAR_ACCUMULATE) != 0;
  if (w->dtype == WEIGHT_F16_PACKED)
    whisper_cpu_gemv_f16_packed_rows (job->y, job->y_stride, w->data, job->x, job->x_stride,
                                      job->n, r0, r1, w->cols, acc);
  else if (w->dtype == WEIGHT_F16)
    whisper_cpu_gemv_f16_rows (job->y, job->y_stride, w->data, job->x, job->x_stride, job->n, r0,
                               r1, w->cols, acc);
  else
    whisper_cpu_gemv_f32_rows (job->y, job->y_stride, w->data, job->x, job->x_stride, job->n, r0,
                               r1, w->cols, acc);
  bias_act_block (job->y, job->y_stride, job->bias, job->n, r0, r1,
                  (job->flags & WHISPER_LINEAR_GELU) != 0);
}

static void
gemm_task (int task, int thread, gpointer data)
{
  LinearJob *job = data;
  const WhisperWeight *w = job->w;
  const int c0 = task * GEMM_BLOCK_COLS, c1 = MIN (c0 + GEMM_BLOCK_COLS, w->rows);
  const int nc = c1 - c0;
  const float *wblock;

  if (w->dtype != WEIGHT_F32) {
    float *tmp = whisper_cpu_thread_scratch (job->self, thread, (size_t) nc * w->cols);
    whisper_cpu_weight_rows_f32 (w, c0, c1, tmp);
    wblock = tmp;
  } else {
    wblock = (const float *) w->data + (size_t) c0 * w->cols;
  }
  const float beta = (job->flags & WHISPER_LINEAR_ACCUMULATE) ? 1.0f : 0.0f;
  whisper_cpu_sgemm (TRUE, job->n, nc, w->cols, 1.0f, job->x, job->x_stride, wblock, w->cols,
                     beta, job->y + c0, job->y_stride);
  bias_act_block (job->y, job->y_stride, job->bias, job->n, c0, c1,
                  (job->flags & WHISPER_LINEAR_GELU) != 0);
}

typedef struct {
  const WhisperWeight *w;
  float *dst;
} ConvertJob;

static void
convert_task (int task, int thread, gpointer data)
{
  (void) thread;
  ConvertJob *job = data;
  const WhisperWeight *w = job->w;
  const int r0 = task * CONVERT_BLOCK_ROWS, r1 = MIN (r0 + CONVERT_BLOCK_ROWS, w->rows);
  whisper_cpu_weight_rows_f32 (w, r0, r1, job->dst + (size_t) r0 * w->cols);
}

/* The weight as float32: itself, or the shared copy converted by the pool. */
static const float *
weight_as_f32 (WhisperBackendCpu *self, const WhisperWeight *w)
{
  if (w->dtype == WEIGHT_F32)
    return w->data;
  self->weight_f32 = whisper_cpu_grow_buffer (self->weight_f32, &self->weight_f32_size,
                                  (size_t) w->rows * w->cols, sizeof (float),
                                  "floats of a float32 weight copy");
  ConvertJob job = { w, self->weight_f32 };
  whisper_thread_pool_run (self->pool, (w->rows + CONVERT_BLOCK_ROWS - 1) / CONVERT_BLOCK_ROWS,
                           convert_task, &job);
  return self->weight_f32;
}

static void
gemm_rows_task (int task, int thread, gpointer data)
{
  (void) thread;
  LinearJob *job = data;
  const WhisperWeight *w = job->w;
  const int i0 = task * job->rows_per_task, ni = MIN (job->rows_per_task, job->n - i0);
  float *y = job->y + (size_t) i0 * job->y_stride;
  const float beta = (job->flags & WHISPER_LINEAR_ACCUMULATE) ? 1.0f : 0.0f;
  whisper_cpu_sgemm (TRUE, ni, w->rows, w->cols, 1.0f, job->x + (size_t) i0 * job->x_stride,
                     job->x_stride, job->w32, w->cols, beta, y, job->y_stride);
  bias_act_block (y, job->y_stride, job->bias, ni, 0, w->rows,
                  (job->flags & WHISPER_LINEAR_GELU) != 0);
}

/* precision=fast: gemm_rows_task's block in bfloat16 (bias inside the
 * product, GELU after it on the float32 result, as gemm_rows_task). */
static void
bf16_rows_task (int task, int thread, gpointer data)
{
  LinearJob *job = data;
  const WhisperWeight *w = job->w;
  const int i0 = task * job->rows_per_task, ni = MIN (job->rows_per_task, job->n - i0);
  float *y = job->y + (size_t) i0 * job->y_stride;
  const float *x = job->x + (size_t) i0 * job->x_stride;
  const gboolean acc = (job->flags & WHISPER_LINEAR_ACCUMULATE) != 0;

  if (whisper_bf16_matmul_linear (job->self->bf16, thread, y, x, job->x_stride, job->bw,
                                  job->bias, ni, acc)) {
    if (job->flags & WHISPER_LINEAR_GELU)
      bias_act_block (y, job->y_stride, NULL, ni, 0, w->rows, TRUE);
    return;
  }
  /* oneDNN could not (warned): the same block in float32 */
  float *w32 = whisper_cpu_thread_scratch (job->self, thread, (size_t) w->rows * w->cols);
  whisper_cpu_weight_rows_f32 (w, 0, w->rows, w32);
  whisper_cpu_sgemm (TRUE, ni, w->rows, w->cols, 1.0f, x, job->x_stride, w32, w->cols,
                     acc ? 1.0f : 0.0f, y, job->y_stride);
  bias_act_block (y, job->y_stride, job->bias, ni, 0, w->rows,
                  (job->flags & WHISPER_LINEAR_GELU) != 0);
}

/* The weight's copy in `table` (one of the precision=fast copies, keyed
 * by w->data, under bf16_lock), made by make() on first use; NULL (kept as
 * the answer) when make() cannot make one. */
static gpointer
weight_copy_for (WhisperBackendCpu *self, GHashTable *table, const WhisperWeight *w,
                 gpointer (*make) (WhisperBackendCpu *self, const WhisperWeight *w))
{
  g_mutex_lock (&self->bf16_lock);
  gpointer value = NULL;
  gboolean known = g_hash_table_lookup_extended (table, w->data, NULL, &value);
  g_mutex_unlock (&self->bf16_lock);
  if (known)
    return value;

  value = make (self, w);
  g_mutex_lock (&self->bf16_lock);
  g_hash_table_insert (table, w->data, value);
  g_mutex_unlock (&self->bf16_lock);
  return value;
}

/* oneDNN's blocked bfloat16 copy; NULL when oneDNN cannot lay it out
 * (warned once; the weight then stays float32) */
static gpointer
make_bf16_weight (WhisperBackendCpu *self, const WhisperWeight *w)
{
  g_autoptr (GError) error = NULL;
  WhisperBf16Weight *bw = whisper_bf16_weight_new (self->bf16, weight_as_f32 (self, w), w->rows,
                                                   w->cols, &error);
  if (!bw)
    g_warning ("%s; this weight stays float32", error->message);
  return bw;
}

/* The weight's oneDNN copy, made on first use, or NULL (float32). */
static const WhisperBf16Weight *
bf16_weight_for (WhisperBackendCpu *self, const WhisperWeight *w)
{
  return weight_copy_for (self, self->bf16_weights, w, make_bf16_weight);
}

/* precision=fast on AMX, a few rows: output rows [r0, r1) of the tiles'
 * product (cpu-amx-linear.h), then bias and GELU as gemv_rows_task. */
static void
amx_rows_task (int task, int thread, gpointer data)
{
  (void) thread;
  LinearJob *job = data;
  const WhisperWeight *w = job->w;
  const int r0 = task * job->rows_per_task, r1 = MIN (r0 + job->rows_per_task, w->rows);
  whisper_cpu_amx_linear_rows (job->y, job->y_stride, job->wamx, job->self->amx_x, job->n, r0,
                               r1, w->cols, (job->flags & WHISPER_LINEAR_ACCUMULATE) != 0);
  bias_act_block (job->y, job->y_stride, job->bias, job->n, r0, r1,
                  (job->flags & WHISPER_LINEAR_GELU) != 0);
}

/* The tiles' packed bfloat16 copy (cpu-amx-linear.h); NULL for a shape the
 * packing does not take. Zeroed (the padding rows), then filled a group of
 * rows at a time through a float32 scratch block, not a float32 copy of
 * the whole weight. */
static gpointer
make_amx_weight (WhisperBackendCpu *self, const WhisperWeight *w)
{
  if (!whisper_cpu_amx_packable (w->rows, w->cols))
    return NULL;
  uint16_t *packed = whisper_aligned_alloc (whisper_cpu_amx_packed_elements (w->rows, w->cols) *
                                            sizeof (uint16_t));
  if (!packed)
    g_error ("cpu backend: cannot allocate a %d x %d bfloat16 weight copy", w->rows, w->cols);
  float *block =
      whisper_cpu_thread_scratch (self, 0, (size_t) WHISPER_CPU_AMX_GROUP_ROWS * w->cols);
  for (int r0 = 0; r0 < w->rows; r0 += WHISPER_CPU_AMX_GROUP_ROWS) {
    const int r1 = MIN (r0 + WHISPER_CPU_AMX_GROUP_ROWS, w->rows);
    whisper_cpu_weight_rows_f32 (w, r0, r1, block);
    whisper_cpu_amx_pack_rows (packed, block, r0, r1, w->cols);
  }
  return packed;
}

/* precision=fast on AMX: x [n, w->cols] (n <= WHISPER_CPU_AMX_MAX_ROWS) on
 * the tiles; FALSE when the weight's shape cannot be packed. */
static gboolean
linear_amx (WhisperBackendCpu *self, LinearJob *job)
{
  const WhisperWeight *w = job->w;
  if (!(job->wamx = weight_copy_for (self, self->amx_weights, w, make_amx_weight)))
    return FALSE;
  self->amx_x = whisper_cpu_grow_buffer (self->amx_x, &self->amx_x_size,
                             whisper_cpu_amx_staged_elements (job->n, w->cols), sizeof (uint16_t),
                             "bfloat16 input values");
  whisper_cpu_amx_stage (self->amx_x, job->x, job->x_stride, job->n, w->cols);
  /* one share per thread, whole groups: one sequential stream each, as the
   * matrix-vector kernels read theirs */
  const int per = (w->rows + self->parent.n_threads - 1) / self->parent.n_threads;
  job->rows_per_task = (per + WHISPER_CPU_AMX_GROUP_ROWS - 1) / WHISPER_CPU_AMX_GROUP_ROWS *
                       WHISPER_CPU_AMX_GROUP_ROWS;
  whisper_thread_pool_run (self->pool, (w->rows + job->rows_per_task - 1) / job->rows_per_task,
                           amx_rows_task, job);
  return TRUE;
}

void
whisper_cpu_backend_linear (WhisperBackend *be, float *y, int y_stride, const float *x,
                            int x_stride, const WhisperWeight *w, const float *bias, int n,
                            WhisperLinearFlags flags)
{
  WhisperBackendCpu *self = (WhisperBackendCpu *) be;
  if (WEIGHT_IS_QBLOCK (w->dtype)) { /* ggml's blocks, in integers (backend-cpu-qblock.c) */
    whisper_cpu_qblock_linear (self, y, y_stride, x, x_stride, w, bias, n, flags);
    return;
  }
  if (w->dtype == WEIGHT_I8) {
    whisper_cpu_int8_linear (self, y, y_stride, x, x_stride, w, bias, n, flags);
    return;
  }
  LinearJob job = { self, y, y_stride, x, x_stride, w, bias, n, flags, 0, NULL, NULL, NULL };
  const gboolean amx = self->amx && n <= WHISPER_CPU_AMX_MAX_ROWS;
  if (amx && linear_amx (self, &job))
    return;
  /* with AMX, a weight it cannot take keeps the matrix-vector kernels up
   * to its row bound: their rows have their one-row bits for any n */
  if (n <= WHISPER_CPU_GEMV_MAX_ROWS || amx) {
    /* one contiguous share of the rows per thread: one sequential stream
     * each, which the prefetchers follow better than small tasks handed
     * out in turn; the same shares for several rows, so that each row's
     * sums are those of its one-row call */
    const int per = (w->rows + be->n_threads - 1) / be->n_threads;
    job.rows_per_task = MAX ((per + GEMV_ROW_ALIGN - 1) / GEMV_ROW_ALIGN * GEMV_ROW_ALIGN,
                             GEMV_ROW_ALIGN);
    whisper_thread_pool_run (self->pool, (w->rows + job.rows_per_task - 1) / job.rows_per_task,
                             n == 1 ? gemv_task : gemv_rows_task, &job);
  } else if (n >= GEMM_MIN_ROWS) {
    /* two blocks per thread, multiples of 16 rows: even shares when the
     * threads run alike, something to take over when one is slowed */
    const int per = (n + 2 * be->n_threads - 1) / (2 * be->n_threads);
    job.rows_per_task = (per + 15) / 16 * 16;
    /* precision=fast: bfloat16, into dense outputs only (cpu-bf16-matmul.c) */
    if (self->bf16 && y_stride == w->rows && (job.bw = bf16_weight_for (self, w))) {
      whisper_thread_pool_run (self->pool, (n + job.rows_per_task - 1) / job.rows_per_task,
                               bf16_rows_task, &job);
      return;
    }
    job.w32 = weight_as_f32 (self, w);
    whisper_thread_pool_run (self->pool, (n + job.rows_per_task - 1) / job.rows_per_task,
                             gemm_rows_task, &job);
  } else
    whisper_thread_pool_run (self->pool, (w->rows + GEMM_BLOCK_COLS - 1) / GEMM_BLOCK_COLS,
                             gemm_task, &job);
}

