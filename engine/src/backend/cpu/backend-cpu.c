/* backend-cpu.c: the backend operation table on the CPU.
 *
 * One fork-join pool (util/thread-pool.c) runs every op; the float32
 * matrix products (cpu-sgemm.h: oneDNN's where the CPU has AVX-512, else
 * OpenBLAS's) run single-threaded inside the pool's tasks, so two thread
 * pools never fight over the cores. Weights are kept in float16 when that
 * is lossless (the model was stored in float16), else float32: decode
 * steps are bound by memory bandwidth, and half the bytes is half the time.
 *
 * - linear, one row (decode steps): our own matrix-vector kernels, rows
 *   split over the threads (cpu-kernels.c), on weights packed so that each
 *   task reads one sequential stream (cpu-gemv-packed.c).
 * - linear, many rows (encoder, prompt passes): the weight is converted to
 *   float32 once per call, then one sgemm per block of input rows
 *   with the whole weight, bias and GELU fused in the task. Blocks of rows,
 *   not of output columns: OpenBLAS packs the row block once per call, and
 *   a 64-column split had it pack all 1500 rows again for every 64 columns
 *   (12 % of the encoder's time in sgemm's copy routines).
 * - linear, a few rows (2 to WHISPER_CPU_GEMV_MAX_ROWS: beams, best-of
 *   candidates decoded as one batch): the matrix-vector kernels for several
 *   vectors (cpu-kernels.h), rows split over the threads exactly as for one
 *   row, so each block of weight rows is read once for all the vectors and
 *   each output row has the bits it would have alone.
 * - linear, more rows up to 63: sgemm per block of output columns.
 * - precision=fast on a CPU with AMX: linears of 1 to 64 rows (decode
 *   steps, batched or not, and short prompt passes) on the tiles in
 *   bfloat16 (cpu-amx-linear.c), output rows split over the threads in
 *   whole groups; every row keeps its one-row bits, so max_exact_rows is
 *   64 there. Many-row linears go to oneDNN as above.
 * - attention: per (head, block of queries): scores = q k^T (sgemm),
 *   softmax, out = scores v (sgemm); the score block stays in cache and the
 *   full score matrix is never stored. Decode steps (up to
 *   WHISPER_CPU_GEMV_MAX_ROWS queries) use direct loops, each query's output
 *   bit-identical to its own one-query call: over a shared K/V
 *   (cross-attention of the beams) all the queries in one pass, each key
 *   and value row read from memory once; causal ones query by query.
 */
#include "backend.h"
#include "cpu-amx-linear.h"
#include "cpu-bf16-matmul.h"
#include "cpu-kernels.h"
#include "cpu-sgemm.h"
#include "aligned-memory.h"
#include "thread-pool.h"
#include "whisper-error.h"

#include <math.h>
#include <string.h>

/* F16_PACKED: float16 in blocks of rows (cpu-gemv-packed.c), for every
 * float16 matrix whose shape allows it; F16 row-major for the others. */
enum { WEIGHT_F32 = 0, WEIGHT_F16 = 1, WEIGHT_F16_PACKED = 2 };

#define GEMM_BLOCK_COLS 64   /* output columns per sgemm task (few rows) */
#define GEMM_MIN_ROWS 64     /* from this many input rows, split by rows */
#define CONVERT_BLOCK_ROWS 64 /* weight rows per float16 -> float32 task */
#define ATTN_BLOCK_ROWS 256   /* queries per attention task */
#define GEMV_ROW_ALIGN WHISPER_CPU_PACK_ROWS /* matrix-vector tasks start on packed blocks */

typedef struct {
  WhisperBackend parent;
  WhisperThreadPool *pool;
  /* Per-thread scratch, grown to the largest size asked and then reused. */
  float **scratch;
  size_t *scratch_size;
  /* One float32 copy of the weight of the current many-row linear, shared
   * by the tasks; grown to the largest weight seen, then reused. */
  float *weight_f32;
  size_t weight_f32_size;
  /* precision=fast (NULL: exact): many-row linears and attention in
   * bfloat16 (cpu-bf16-matmul.h). Each weight gets its blocked bfloat16
   * copy the first time a many-row linear uses it (the encoder's weights,
   * and the decoder's at its first prompt pass), keyed by w->data; a
   * weight oneDNN could not lay out maps to NULL and stays float32. */
  WhisperBf16Matmul *bf16;
  GMutex bf16_lock;
  GHashTable *bf16_weights;
  /* precision=fast on a CPU with AMX (cpu-amx-linear.h): linears of up to
   * WHISPER_CPU_AMX_MAX_ROWS rows on the tiles. Each weight gets its packed
   * bfloat16 copy the first time such a linear uses it (the decoder's at
   * its first step), keyed by w->data (under bf16_lock); a weight whose
   * shape cannot be packed maps to NULL and keeps the matrix-vector
   * kernels. amx_x: the current call's input rows in bfloat16. */
  gboolean amx;
  GHashTable *amx_weights;
  uint16_t *amx_x;
  size_t amx_x_size;
  /* q, k and v of the current many-query attention in bfloat16, head-major */
  uint16_t *attn_bf16;
  size_t attn_bf16_size;
  /* cpu_ops, plus the float16 cross K/V ops in precision=fast */
  WhisperBackendOps ops;
} WhisperBackendCpu;

/* `buf` (*capacity elements of elem_size bytes), or a larger one in its
 * place when it holds fewer than n (the old contents dropped): assign the
 * result back. `what` names the elements in the error. */
static void *
grow_buffer (void *buf, size_t *capacity, size_t n, size_t elem_size, const char *what)
{
  if (n <= *capacity)
    return buf;
  whisper_aligned_free (buf);
  buf = whisper_aligned_alloc (n * elem_size);
  if (!buf)
    g_error ("cpu backend: cannot allocate %zu %s", n, what);
  *capacity = n;
  return buf;
}

static float *
thread_scratch (WhisperBackendCpu *self, int thread, size_t n)
{
  self->scratch[thread] = grow_buffer (self->scratch[thread], &self->scratch_size[thread], n,
                                       sizeof (float), "floats of scratch memory");
  return self->scratch[thread];
}

static void
cpu_destroy (WhisperBackend *be)
{
  WhisperBackendCpu *self = (WhisperBackendCpu *) be;
  const int n = whisper_thread_pool_size (self->pool);
  whisper_thread_pool_free (self->pool);
  for (int i = 0; i < n; i++)
    whisper_aligned_free (self->scratch[i]);
  g_free (self->scratch);
  g_free (self->scratch_size);
  whisper_aligned_free (self->weight_f32);
  if (self->bf16_weights)
    g_hash_table_destroy (self->bf16_weights);
  if (self->amx_weights)
    g_hash_table_destroy (self->amx_weights);
  whisper_aligned_free (self->amx_x);
  whisper_bf16_matmul_free (self->bf16);
  g_mutex_clear (&self->bf16_lock);
  whisper_aligned_free (self->attn_bf16);
  g_free (self);
}

/* n_floats from `allocate` (whisper_aligned_alloc or its sparse twin),
 * or NULL with an error naming the size. */
static float *
cpu_alloc_floats (void *(*allocate) (size_t bytes), size_t n_floats, GError **error)
{
  float *p = n_floats <= G_MAXSIZE / sizeof (float) ? allocate (n_floats * sizeof (float)) : NULL;
  if (!p)
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                 "cpu backend: cannot allocate %zu floats", n_floats);
  return p;
}

static float *
cpu_alloc (WhisperBackend *be, size_t n_floats, GError **error)
{
  (void) be;
  return cpu_alloc_floats (whisper_aligned_alloc, n_floats, error);
}

static float *
cpu_alloc_sparse (WhisperBackend *be, size_t n_floats, GError **error)
{
  (void) be;
  return cpu_alloc_floats (whisper_aligned_alloc_sparse, n_floats, error);
}

static void
cpu_discard (WhisperBackend *be, void *ptr, size_t n_floats)
{
  (void) be;
  whisper_aligned_discard (ptr, n_floats * sizeof (float));
}

static void
cpu_free (WhisperBackend *be, void *ptr)
{
  (void) be;
  whisper_aligned_free (ptr);
}

static void
cpu_copy (WhisperBackend *be, void *dst, const void *src, size_t bytes)
{
  (void) be;
  if (bytes)
    memcpy (dst, src, bytes);
}

static void
cpu_sync (WhisperBackend *be)
{
  (void) be;
}

/* Float16 rows packed in blocks (one sequential stream per matrix-vector
 * task) where the shape allows, float16 row-major otherwise: a float16
 * tensor as it is stored, a float32 one when every value is exactly a half.
 * Float32 for everything else (bfloat16 and the quantized types are widened
 * once, here). */
static gboolean
cpu_weight_upload (WhisperBackend *be, WhisperWeight *w, const WhisperTensor *t, GError **error)
{
  (void) be;
  const int rows = t->rows, cols = t->cols;
  const size_t n = whisper_tensor_n_elements (t);
  const uint16_t *half = NULL;
  uint16_t *owned = NULL; /* a float16 copy this call made */

  /* plain malloc: written whole right away, and the huge-page advice
   * made the model load time vary 0.17 to 0.5 s for no steady gain */
  if (t->type == WHISPER_DTYPE_F16 && (uintptr_t) t->data % sizeof (uint16_t) == 0) {
    half = t->data;
  } else if (t->type == WHISPER_DTYPE_F16) {
    half = owned = g_try_malloc (MAX (n, 1) * sizeof (uint16_t)); /* realign */
    if (owned)
      memcpy (owned, t->data, n * sizeof (uint16_t));
  } else if (t->type == WHISPER_DTYPE_F32) {
    owned = g_try_malloc (MAX (n, 1) * sizeof (uint16_t));
    if (owned && whisper_float_to_half_exact_n (owned, t->data, n))
      half = owned;
    else
      g_clear_pointer (&owned, g_free);
  }

  if (half) {
    uint16_t *packed = whisper_cpu_packable (rows, cols) ? g_try_malloc (n * sizeof (uint16_t))
                                                         : NULL;
    if (packed) {
      whisper_cpu_pack_rows (packed, half, rows, cols);
      g_free (owned);
      w->data = packed;
      w->dtype = WEIGHT_F16_PACKED;
    } else {
      w->data = owned ? owned : g_memdup2 (half, n * sizeof (uint16_t));
      w->dtype = WEIGHT_F16;
    }
  } else {
    float *data = g_try_malloc (MAX (n, 1) * sizeof (float));
    if (!data) {
      g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                   "cpu backend: cannot allocate a %d x %d weight", rows, cols);
      return FALSE;
    }
    whisper_tensor_rows_to_f32 (t, 0, rows, data);
    w->data = data;
    w->dtype = WEIGHT_F32;
  }
  w->rows = rows;
  w->cols = cols;
  return TRUE;
}

static void
cpu_weight_free (WhisperBackend *be, WhisperWeight *w)
{
  WhisperBackendCpu *self = (WhisperBackendCpu *) be;
  if (self->bf16_weights && w->data) {
    g_mutex_lock (&self->bf16_lock);
    g_hash_table_remove (self->bf16_weights, w->data);
    if (self->amx_weights)
      g_hash_table_remove (self->amx_weights, w->data);
    g_mutex_unlock (&self->bf16_lock);
  }
  g_clear_pointer (&w->data, g_free);
}

/* dst = rows [r0, r1) of the weight as float32, row-major, whatever its
 * storage. */
static void
weight_rows_f32 (const WhisperWeight *w, int r0, int r1, float *dst)
{
  if (w->dtype == WEIGHT_F16_PACKED)
    whisper_cpu_unpack_rows (dst, w->data, r0, r1, w->cols);
  else if (w->dtype == WEIGHT_F16)
    whisper_half_to_float_n (dst, (const uint16_t *) w->data + (size_t) r0 * w->cols,
                               (size_t) (r1 - r0) * w->cols);
  else
    memcpy (dst, (const float *) w->data + (size_t) r0 * w->cols,
            (size_t) (r1 - r0) * w->cols * sizeof (float));
}

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
    float *tmp = thread_scratch (job->self, thread, (size_t) nc * w->cols);
    weight_rows_f32 (w, c0, c1, tmp);
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
  weight_rows_f32 (w, r0, r1, job->dst + (size_t) r0 * w->cols);
}

/* The weight as float32: itself, or the shared copy converted by the pool. */
static const float *
weight_as_f32 (WhisperBackendCpu *self, const WhisperWeight *w)
{
  if (w->dtype == WEIGHT_F32)
    return w->data;
  self->weight_f32 = grow_buffer (self->weight_f32, &self->weight_f32_size,
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
  float *w32 = thread_scratch (job->self, thread, (size_t) w->rows * w->cols);
  weight_rows_f32 (w, 0, w->rows, w32);
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
  float *block = thread_scratch (self, 0, (size_t) WHISPER_CPU_AMX_GROUP_ROWS * w->cols);
  for (int r0 = 0; r0 < w->rows; r0 += WHISPER_CPU_AMX_GROUP_ROWS) {
    const int r1 = MIN (r0 + WHISPER_CPU_AMX_GROUP_ROWS, w->rows);
    weight_rows_f32 (w, r0, r1, block);
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
  self->amx_x = grow_buffer (self->amx_x, &self->amx_x_size,
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

static void
cpu_linear (WhisperBackend *be, float *y, int y_stride, const float *x, int x_stride,
            const WhisperWeight *w, const float *bias, int n, WhisperLinearFlags flags)
{
  WhisperBackendCpu *self = (WhisperBackendCpu *) be;
  LinearJob job = { self, y, y_stride, x, x_stride, w, bias, n, flags, 0, NULL, NULL, NULL };
  const gboolean amx = self->amx && n <= WHISPER_CPU_AMX_MAX_ROWS;
  if (amx && linear_amx (self, &job))
    return;
  /* with AMX, a weight it cannot take keeps the matrix-vector kernels up
   * to its row bound: their rows have their one-row bits for any n */
  if (n <= WHISPER_CPU_GEMV_MAX_ROWS || amx) {
    /* one contiguous share of the rows per thread: one sequential stream
     * each, which the prefetchers follow (256-row tasks handed out in turn
     * read the 40-MB logits matrix at 33 GB/s, whole shares at ~40); the
     * same shares for several rows, so that each row's sums are those of
     * its one-row call */
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

/* ---- row-wise ops --------------------------------------------------- */

typedef struct {
  float *y;
  const float *x;
  const float *gamma, *beta;
  int n, d, rows_per_task;
  float eps;
} LayerNormJob;

static void
layer_norm_task (int task, int thread, gpointer data)
{
  (void) thread;
  LayerNormJob *job = data;
  const int i0 = task * job->rows_per_task, i1 = MIN (i0 + job->rows_per_task, job->n);
  for (int i = i0; i < i1; i++)
    whisper_cpu_layer_norm_row (job->y + (size_t) i * job->d, job->x + (size_t) i * job->d,
                            job->gamma, job->beta, job->d, job->eps);
}

static void
cpu_layer_norm (WhisperBackend *be, float *y, const float *x, const float *gamma,
                const float *beta, int n, int d, float eps)
{
  WhisperBackendCpu *self = (WhisperBackendCpu *) be;
  LayerNormJob job = { y, x, gamma, beta, n, d, 64, eps };
  whisper_thread_pool_run (self->pool, (n + job.rows_per_task - 1) / job.rows_per_task,
                           layer_norm_task, &job);
}

static void
cpu_conv1d_gelu (WhisperBackend *be, float *y, const float *x, int n_in_frames, int c_in,
                 const WhisperWeight *w, const float *bias, int stride, float *scratch)
{
  const int n_out = (n_in_frames - 1) / stride + 1;
  const int k3 = c_in * 3;

  /* im2col: row t holds x[t*stride + k - 1, c] at column c*3 + k, the
   * layout of the flattened PyTorch weight [c_out, c_in, 3]. */
  for (int t = 0; t < n_out; t++) {
    float *row = scratch + (size_t) t * k3;
    for (int k = 0; k < 3; k++) {
      const int src = t * stride + k - 1;
      const float *xs = (src < 0 || src >= n_in_frames) ? NULL : x + (size_t) src * c_in;
      for (int c = 0; c < c_in; c++)
        row[c * 3 + k] = xs ? xs[c] : 0.0f;
    }
  }
  cpu_linear (be, y, w->rows, scratch, k3, w, bias, n_out, WHISPER_LINEAR_GELU);
}

static void
cpu_add (WhisperBackend *be, float *y, const float *x, size_t n)
{
  (void) be;
  for (size_t i = 0; i < n; i++)
    y[i] += x[i];
}

static void
cpu_embed (WhisperBackend *be, float *x, const WhisperWeight *embedding, const float *positional,
           const int32_t *tokens, int n, int pos0, int d)
{
  (void) be;
  for (int i = 0; i < n; i++) {
    float *row = x + (size_t) i * d;
    weight_rows_f32 (embedding, tokens[i], tokens[i] + 1, row);
    const float *p = positional + (size_t) (pos0 + i) * d;
    for (int j = 0; j < d; j++)
      row[j] += p[j];
  }
}

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
    s = thread_scratch (job->self, thread,
                        WHISPER_CPU_ATTENTION_MULTI_SCRATCH (job->n_q, job->n_kv, dh, nh));
    whisper_cpu_attention_heads_multi (job->out + h0 * dh, job->out_stride, job->q + h0 * dh,
                                       job->q_stride, job->k + h0 * dh, job->v + h0 * dh,
                                       job->kv_stride, job->n_q, job->n_kv, dh, nh, job->scale,
                                       s);
    return;
  }
  s = thread_scratch (job->self, thread, WHISPER_CPU_ATTENTION_SCRATCH (job->n_kv, dh, nh));
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
  float *s = thread_scratch (job->self, thread, (size_t) nq * n_kv);

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
  float *s = thread_scratch (job->self, thread, n_s + (size_t) nq * dh + (n_s + 1) / 2);
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

static void
cpu_attention (WhisperBackend *be, float *out, int out_stride, const float *q, int q_stride,
               const float *k, const float *v, int kv_stride, int n_q, int n_kv, int n_head,
               int d_head, int causal)
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
    self->attn_bf16 = grow_buffer (self->attn_bf16, &self->attn_bf16_size, nq + 2 * nkv,
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

static void
cpu_copy_rows (WhisperBackend *be, float *dst, int dst_stride, const float *src, int src_stride,
               int n_rows, int n_cols)
{
  (void) be;
  for (int i = 0; i < n_rows; i++)
    memcpy (dst + (size_t) i * dst_stride, src + (size_t) i * src_stride,
            n_cols * sizeof (float));
}

/* precision=fast: the steps' cross-attention over float16 K/V (backend.h). */
static void
cpu_half_kv_write (WhisperBackend *be, uint16_t *dst, const float *kv, int kv_stride, int n,
                   int n_head, int d_head)
{
  (void) be;
  whisper_cpu_kv_to_half_heads (dst, kv, kv_stride, n, n_head, d_head);
}

/* one task per head: its keys and values are one run each */
static void
half_attention_task (int task, int thread, gpointer data)
{
  const AttentionJob *job = data;
  const int dh = job->d_head;
  const size_t head = (size_t) job->n_kv * dh;
  float *s = thread_scratch (job->self, thread,
                             WHISPER_CPU_ATTENTION_F16KV_SCRATCH (job->n_q, job->n_kv, dh));
  whisper_cpu_attention_f16kv (job->out + task * dh, job->out_stride, job->q + task * dh,
                               job->q_stride, job->kv_half + task * head,
                               job->kv_half + (job->n_head + task) * head, job->n_q, job->n_kv,
                               dh, job->scale, s);
}

static void
cpu_attention_half_kv (WhisperBackend *be, float *out, int out_stride, const float *q,
                       int q_stride, const uint16_t *kv_half, int n_q, int n_kv, int n_head,
                       int d_head)
{
  WhisperBackendCpu *self = (WhisperBackendCpu *) be;
  AttentionJob job = { .self = self, .out = out, .out_stride = out_stride, .q = q,
                       .q_stride = q_stride, .kv_half = kv_half, .n_q = n_q, .n_kv = n_kv,
                       .n_head = n_head, .d_head = d_head,
                       .scale = 1.0f / sqrtf ((float) d_head) };
  whisper_thread_pool_run (self->pool, n_head, half_attention_task, &job);
}

/* One head's attention probabilities (backend.h, word timestamps). */
static void
cpu_attention_probs (WhisperBackend *be, float *probs, int probs_stride, const float *q,
                     int q_stride, const float *k, int kv_stride, int n_q, int n_kv, int head,
                     int d_head)
{
  (void) be;
  whisper_cpu_sgemm (TRUE, n_q, n_kv, d_head, 1.0f / sqrtf ((float) d_head),
                     q + (size_t) head * d_head, q_stride, k + (size_t) head * d_head, kv_stride,
                     0.0f, probs, probs_stride);
  for (int i = 0; i < n_q; i++)
    whisper_cpu_softmax (probs + (size_t) i * probs_stride, n_kv);
}

static const WhisperBackendOps cpu_ops = {
  .abi_version = WHISPER_BACKEND_ABI_VERSION,
  .name = "cpu",
  .destroy = cpu_destroy,
  .alloc = cpu_alloc,
  .alloc_sparse = cpu_alloc_sparse,
  .discard = cpu_discard,
  .free = cpu_free,
  .upload = cpu_copy,
  .download = cpu_copy,
  .sync = cpu_sync,
  .weight_upload = cpu_weight_upload,
  .weight_free = cpu_weight_free,
  .linear = cpu_linear,
  .layer_norm = cpu_layer_norm,
  .conv1d_gelu = cpu_conv1d_gelu,
  .add = cpu_add,
  .embed = cpu_embed,
  .attention = cpu_attention,
  .copy_rows = cpu_copy_rows,
  .attention_probs = cpu_attention_probs,
  .logits_select = NULL,
  .logits_release = NULL,
};

WhisperBackend *
whisper_backend_cpu_new (int n_threads, gboolean fast, GError **error)
{
  if (n_threads < 0) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "cpu backend: thread count %d is negative", n_threads);
    return NULL;
  }
  if (n_threads == 0)
    n_threads = (int) g_get_num_processors ();

  WhisperBackendCpu *self = g_new0 (WhisperBackendCpu, 1);
  self->ops = cpu_ops;
  self->parent.ops = &self->ops;
  self->parent.n_threads = n_threads;
  self->parent.max_exact_rows = WHISPER_CPU_GEMV_MAX_ROWS;  /* the matrix-vector kernels */
  self->pool = whisper_thread_pool_new (n_threads);
  self->scratch = g_new0 (float *, n_threads);
  self->scratch_size = g_new0 (size_t, n_threads);
  g_mutex_init (&self->bf16_lock);
  whisper_cpu_sgemm_init ();
  if (fast) {
    self->bf16 = whisper_bf16_matmul_new (n_threads, error);
    if (!self->bf16) {
      cpu_destroy (&self->parent);
      return NULL;
    }
    self->bf16_weights = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
                                                (GDestroyNotify) whisper_bf16_weight_free);
    self->ops.half_kv_write = cpu_half_kv_write;
    self->ops.attention_half_kv = cpu_attention_half_kv;
    self->amx = whisper_cpu_amx_available ();
    if (self->amx) {
      self->amx_weights = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
                                                 whisper_aligned_free);
      self->parent.max_exact_rows = WHISPER_CPU_AMX_MAX_ROWS;
    }
    g_debug ("cpu backend: precision fast, bfloat16 products on oneDNN %s%s",
             whisper_bf16_matmul_impl (self->bf16),
             self->amx ? ", decode steps on AMX tiles" : "");
  }
  return &self->parent;
}
