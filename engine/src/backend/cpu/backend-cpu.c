/* backend-cpu.c: the backend operation table on the CPU: memory, weights,
 * the row-wise ops and the table itself; the linears are in
 * backend-cpu-linear.c, the attention in backend-cpu-attention.c.
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
 *   not of output columns: OpenBLAS packs the row block once per call,
 *   where a split by output columns has it pack every input row again for
 *   each block of columns.
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
 * - int8 weights (a CTranslate2 int8 model, or precision=int8): input
 *   rows quantized per call, integer products (cpu-int8-linear.c).
 * - attention: per (head, block of queries): scores = q k^T (sgemm),
 *   softmax, out = scores v (sgemm); the score block stays in cache and the
 *   full score matrix is never stored. Decode steps (up to
 *   WHISPER_CPU_GEMV_MAX_ROWS queries) use direct loops, each query's output
 *   bit-identical to its own one-query call: over a shared K/V
 *   (cross-attention of the beams) all the queries in one pass, each key
 *   and value row read from memory once; causal ones query by query.
 */
#include "backend-cpu-private.h"
#include "qblock.h"

#include <math.h>
#include <string.h>

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
  whisper_aligned_free (self->int8_x);
  whisper_aligned_free (self->int8_scale);
  whisper_bf16_matmul_free (self->bf16);
  g_mutex_clear (&self->bf16_lock);
  whisper_aligned_free (self->attn_bf16);
  whisper_aligned_free (self->qx);
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
 * ggml's quantized blocks as stored (backend-cpu-qblock.c). Int8
 * (cpu-int8-linear.c) for an int8 tensor, and for every float one with
 * precision=int8, but the convolutions' (w->keep_float). Float32 for
 * everything else (bfloat16 and int16 are widened once, here). */
static gboolean
cpu_weight_upload (WhisperBackend *be, WhisperWeight *w, const WhisperTensor *t, GError **error)
{
  if (whisper_dtype_is_qblock (t->type)) /* kept as stored */
    return whisper_cpu_qblock_weight_upload (w, t, error);
  const int rows = t->rows, cols = t->cols;
  const size_t n = whisper_tensor_n_elements (t);
  if (whisper_cpu_int8_takes ((WhisperBackendCpu *) be, w, t))
    return whisper_cpu_int8_weight_upload ((WhisperBackendCpu *) be, w, t, error);
  const uint16_t *half = NULL;
  uint16_t *owned = NULL; /* a float16 copy this call made */

  /* plain malloc: written whole right away; no huge-page advice, which
   * makes the model load time unsteady for no steady gain */
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
cpu_layer_norm (WhisperBackend *be, float *y, const float *x, const float *gamma, const float *beta,
                int n, int d, float eps)
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
  whisper_cpu_backend_linear (be, y, w->rows, scratch, k3, w, bias, n_out, WHISPER_LINEAR_GELU);
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
    whisper_cpu_weight_rows_f32 (embedding, tokens[i], tokens[i] + 1, row);
    const float *p = positional + (size_t) (pos0 + i) * d;
    for (int j = 0; j < d; j++)
      row[j] += p[j];
  }
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
  .linear = whisper_cpu_backend_linear,
  .layer_norm = cpu_layer_norm,
  .conv1d_gelu = cpu_conv1d_gelu,
  .add = cpu_add,
  .embed = cpu_embed,
  .attention = whisper_cpu_backend_attention,
  .copy_rows = whisper_cpu_backend_copy_rows,
  .attention_probs = whisper_cpu_backend_attention_probs,
  .logits_select = NULL,
  .logits_release = NULL,
};

WhisperBackend *
whisper_backend_cpu_new (int n_threads, WhisperCpuPrecision precision, GError **error)
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
  if (!(self->qblock = whisper_cpu_qblock_select (error))) {
    cpu_destroy (&self->parent);
    return NULL;
  }
  whisper_cpu_sgemm_init ();
  /* int8 weights may come from the model in any precision */
  if (!whisper_cpu_int8_isa_choose (&self->int8_isa, error)) {
    cpu_destroy (&self->parent);
    return NULL;
  }
  self->int8_quantize = precision == WHISPER_CPU_PRECISION_INT8;
  if (self->int8_quantize) {
    /* a decode step reads the whole cross K/V, as many bytes as the
     * step's int8 weights: in float16 they are half that, and the float32
     * copy is not kept (backend.h, cpu-attention-f16kv.c) */
    self->ops.half_kv_write = whisper_cpu_backend_half_kv_write;
    self->ops.attention_half_kv = whisper_cpu_backend_attention_half_kv;
    self->parent.half_kv_only = TRUE;
  }
  g_debug ("cpu backend: int8 products on the %s kernels%s",
           whisper_cpu_int8_isa_name (self->int8_isa),
           self->int8_quantize ? ", float weights quantized at load (precision int8)" : "");
  if (precision == WHISPER_CPU_PRECISION_BF16) {
    self->bf16 = whisper_bf16_matmul_new (n_threads, error);
    if (!self->bf16) {
      cpu_destroy (&self->parent);
      return NULL;
    }
    self->bf16_weights = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
                                                (GDestroyNotify) whisper_bf16_weight_free);
    self->ops.half_kv_write = whisper_cpu_backend_half_kv_write;
    self->ops.attention_half_kv = whisper_cpu_backend_attention_half_kv;
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
