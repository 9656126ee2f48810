/* backend-cuda.c: the CUDA backend module (libwhisper-engine-cuda.so):
 * entry point, device checks, memory, weights and the op table. Compute ops
 * are in backend-cuda-ops.c, the logit choice in backend-cuda-logits.c,
 * submission and CUDA graphs in backend-cuda-graph.c, errors and the entry
 * of a thread (lock, current device) in backend-cuda-core.c, device code in
 * kernels/.
 *
 * One device, one non-blocking stream, one cuBLAS handle with a fixed
 * workspace. Every buffer the engine uses comes from ops->alloc; the
 * backend's own workspaces grow on first use (encoder shapes) and then stay,
 * so that a decode step allocates nothing.
 *
 * Environment (for tests and benchmarks):
 *   WHISPER_CUDA_DEVICE=N      device index (default 0)
 *   WHISPER_CUDA_GEMV_MAX_N=N  linear with n <= N rows uses the fused GEMV
 *                              kernel, larger n cuBLAS (default 8, 0: cuBLAS only)
 *   WHISPER_CUDA_GRAPHS=0      graph_begin/graph_end run the ops at once
 *   WHISPER_CUDA_PRECISION=    how cuBLAS GEMMs (encoder, prompts, n > GEMV
 *                              limit) see fp32 activations:
 *        split (default)       as fp16 hi + fp16 lo, two GEMMs into one fp32
 *                              accumulator: about 22 bits, close to the CPU
 *        fast                  as one fp16 value (11 bits), one GEMM
 *   Weights are fp16 either way, accumulation fp32 (CUBLAS_COMPUTE_32F).
 */
#include "backend-cuda-private.h"
#include "whisper-error.h"

#include <gmodule.h>
#include <stdlib.h>
#include <string.h>

#define CUBLAS_WORKSPACE_BYTES (32u << 20)
#define UPLOAD_CHUNK_FLOATS ((size_t) 4 << 20)

static gboolean
cuda_check (WhisperBackend *be, GError **error)
{
  WcBackend *self = (WcBackend *) be;
  wc_enter (self);
  const cudaError_t err = cudaStreamQuery (self->stream);
  if (err != cudaErrorNotReady)
    wc_fail (self, err, "a queued CUDA operation failed");
  gboolean ok = self->error == NULL;
  if (!ok)
    g_propagate_error (error, g_error_copy (self->error));
  wc_leave (self);
  return ok;
}

/* ---- memory ----------------------------------------------------------- */

static float *
cuda_alloc (WhisperBackend *be, size_t n_floats, GError **error)
{
  WcBackend *self = (WcBackend *) be;
  void *p = NULL;
  const size_t bytes = MAX (n_floats, 1) * sizeof (float);
  /* under the lock: the memset goes on the shared stream, which must not
   * take it while another thread's graph_end() captures that stream */
  wc_enter (self);
  cudaError_t err = cudaMalloc (&p, bytes);
  /* zeroed, as on the CPU backend; on the stream, so that later ops see it
   * (while this thread records a graph too: it runs before the graph) */
  if (err == cudaSuccess)
    err = cudaMemsetAsync (p, 0, bytes, self->stream);
  if (err != cudaSuccess && p) {
    cudaFree (p);
    p = NULL;
  }
  wc_leave (self);
  if (err != cudaSuccess) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "CUDA backend: cannot allocate %zu floats on %s: %s", n_floats,
                 self->device_name, cudaGetErrorString (err));
    return NULL;
  }
  return p;
}

static void
cuda_free (WhisperBackend *be, void *ptr)
{
  WcBackend *self = (WcBackend *) be;
  wc_enter (self);
  wc_device_free (self, ptr);
  wc_leave (self);
}

static void
cuda_upload (WhisperBackend *be, void *dst, const void *src, size_t bytes)
{
  WcBackend *self = (WcBackend *) be;
  if (!bytes)
    return;
  wc_enter (self);
  WcCopy c = { .dst = dst, .src = src, .bytes = bytes, .kind = cudaMemcpyHostToDevice };
  WcPinned st;
  if (wc_is_recording (self)) {
    /* the step reads the data when it runs: keep a copy now */
    if (wc_staging_alloc (self, bytes, &st)) {
      memcpy (st.host, src, bytes);
      c.src = st.host;
      wc_submit_copy (self, &c);
    }
  } else {
    /* pageable source: the call returns once the data is staged */
    wc_submit_copy (self, &c);
  }
  wc_leave (self);
}

static void
cuda_download (WhisperBackend *be, void *dst, const void *src, size_t bytes)
{
  WcBackend *self = (WcBackend *) be;
  if (!bytes)
    return;
  wc_enter (self);
  WcPinned st;
  if (wc_is_recording (self)) {
    if (wc_staging_alloc (self, bytes, &st)) {
      WcCopy c = { .dst = st.host, .src = src, .bytes = bytes, .kind = cudaMemcpyDeviceToHost };
      wc_submit_copy (self, &c);
      wc_copy_out (self, dst, st.host, bytes);
    }
  } else {
    WcCopy c = { .dst = dst, .src = src, .bytes = bytes, .kind = cudaMemcpyDeviceToHost };
    wc_submit_copy (self, &c);
    wc_fail (self, cudaStreamSynchronize (self->stream), "download");
  }
  wc_leave (self);
}

static void
cuda_sync (WhisperBackend *be)
{
  WcBackend *self = (WcBackend *) be;
  wc_enter (self);
  if (!wc_is_recording (self)) {
    wc_fail (self, cudaStreamSynchronize (self->stream), "stream synchronize");
    if (!self->recording)
      wc_run_deferred_frees (self);
  }
  wc_leave (self);
}

/* ---- weights ---------------------------------------------------------- */

/* A float16 tensor as it is: one copy (from pageable memory, so the call
 * returns once the source is read). */
static cudaError_t
upload_f16 (WcBackend *self, uint16_t *data, const WhisperTensor *t)
{
  return cudaMemcpyAsync (data, t->data, whisper_tensor_n_elements (t) * sizeof (uint16_t),
                          cudaMemcpyHostToDevice, self->stream);
}

/* Any other stored type: chunks of whole rows widened to float32 on the
 * host, then converted to fp16 (round to nearest even) on the device. The
 * copy is from pageable memory, so it has read the staging rows when
 * cudaMemcpyAsync returns and they can be reused. */
static cudaError_t
upload_converted (WcBackend *self, uint16_t *data, const WhisperTensor *t)
{
  const int rows = t->rows, cols = t->cols;
  cudaError_t err = cudaSuccess;
  if (!self->upload_chunk &&
      (err = cudaMalloc ((void **) &self->upload_chunk, UPLOAD_CHUNK_FLOATS * sizeof (float))) !=
          cudaSuccess)
    return err;
  const int chunk_rows = (int) MAX ((size_t) 1, UPLOAD_CHUNK_FLOATS / (size_t) cols);
  g_autofree float *staging = g_new (float, (size_t) MIN (chunk_rows, rows) * cols);
  for (int r0 = 0; r0 < rows && err == cudaSuccess; r0 += chunk_rows) {
    const int r1 = MIN (rows, r0 + chunk_rows);
    const size_t off = (size_t) r0 * cols, n = (size_t) (r1 - r0) * cols;
    whisper_tensor_rows_to_f32 (t, r0, r1, staging);
    err = cudaMemcpyAsync (self->upload_chunk, staging, n * sizeof (float),
                           cudaMemcpyHostToDevice, self->stream);
    if (err != cudaSuccess)
      break;
    WcToHalfArgs a;
    memset (&a, 0, sizeof a);
    a.dst = data + off;
    a.src = self->upload_chunk;
    a.rows = 1;
    a.cols = (int) n;
    a.src_stride = (int) n;
    WcLaunch l;
    wc_to_half_plan (&l, &a);
    void *params[] = { &a };
    err = cudaLaunchKernel (l.func, (dim3) { l.grid[0], l.grid[1], l.grid[2] },
                            (dim3) { l.block[0], l.block[1], l.block[2] }, params, l.smem,
                            self->stream);
  }
  return err;
}

static gboolean
cuda_weight_upload (WhisperBackend *be, WhisperWeight *w, const WhisperTensor *t, GError **error)
{
  WcBackend *self = (WcBackend *) be;
  const int rows = t->rows, cols = t->cols;
  uint16_t *data = NULL;
  gboolean ok = FALSE;
  cudaError_t err;

  wc_enter (self);
  if (wc_is_recording (self)) {
    if (!self->record_refused)
      self->record_refused = g_strdup ("weight_upload() inside graph_begin()/graph_end()");
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "CUDA backend: weight_upload() is not allowed while recording a graph");
    goto out;
  }
  if (rows <= 0 || cols <= 0) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "CUDA backend: weight of shape [%d, %d]", rows, cols);
    goto out;
  }
  err = cudaMalloc ((void **) &data, (size_t) rows * cols * sizeof (uint16_t));
  if (err == cudaSuccess)
    err = t->type == WHISPER_DTYPE_F16 ? upload_f16 (self, data, t)
                                       : upload_converted (self, data, t);
  if (err == cudaSuccess)
    err = cudaStreamSynchronize (self->stream);
  if (err != cudaSuccess) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "CUDA backend: cannot upload a [%d, %d] %s weight to %s: %s (%s)", rows, cols,
                 whisper_dtype_name (t->type), self->device_name, cudaGetErrorString (err),
                 cudaGetErrorName (err));
    goto out;
  }
  w->data = g_steal_pointer (&data);
  w->rows = rows;
  w->cols = cols;
  w->dtype = WC_DTYPE_F16;
  ok = TRUE;
out:
  if (data)
    cudaFree (data);
  wc_leave (self);
  return ok;
}

static void
cuda_weight_free (WhisperBackend *be, WhisperWeight *w)
{
  WcBackend *self = (WcBackend *) be;
  wc_enter (self);
  wc_device_free (self, w->data);
  wc_leave (self);
  w->data = NULL;
}

/* ---- life cycle ------------------------------------------------------- */

static void
cuda_destroy (WhisperBackend *be)
{
  WcBackend *self = (WcBackend *) be;
  /* maybe on another thread than the one that created the backend */
  cudaSetDevice (self->device);
  if (self->stream)
    cudaStreamSynchronize (self->stream);
  self->recording = FALSE;
  wc_graphs_clear (self);
  wc_run_deferred_frees (self);
  cudaFree (self->ws_half.ptr);
  cudaFree (self->ws_attn.ptr);
  cudaFree (self->logit_partial);
  cudaFree (self->upload_chunk);
  cudaFree (self->cublas_workspace);
  if (self->choice.host)
    cudaFreeHost (self->choice.host);
  if (self->cublas)
    cublasDestroy (self->cublas);
  if (self->stream)
    cudaStreamDestroy (self->stream);
  g_ptr_array_unref (self->deferred_free);
  g_clear_error (&self->error);
  g_mutex_clear (&self->lock);
  g_free (self);
}

static const WhisperBackendOps cuda_ops = {
  .abi_version = WHISPER_BACKEND_ABI_VERSION,
  .name = "cuda",
  .destroy = cuda_destroy,
  .alloc = cuda_alloc,
  .free = cuda_free,
  .upload = cuda_upload,
  .download = cuda_download,
  .sync = cuda_sync,
  .weight_upload = cuda_weight_upload,
  .weight_free = cuda_weight_free,
  .linear = wc_cuda_linear,
  .layer_norm = wc_cuda_layer_norm,
  .conv1d_gelu = wc_cuda_conv1d_gelu,
  .add = wc_cuda_add,
  .embed = wc_cuda_embed,
  .attention = wc_cuda_attention,
  .copy_rows = wc_cuda_copy_rows,
  .logits_select = wc_cuda_logits_select,
  .logits_prepare = wc_cuda_logits_prepare,
  .logits_release = wc_cuda_logits_release,
  .check = cuda_check,
  .graph_new = wc_cuda_graph_new,
  .graph_begin = wc_cuda_graph_begin,
  .graph_end = wc_cuda_graph_end,
  .graph_free = wc_cuda_graph_free,
  .attention_probs = wc_cuda_attention_probs,
};

static int
env_int (const char *name, int fallback)
{
  const char *v = g_getenv (name);
  if (!v || !*v)
    return fallback;
  char *end = NULL;
  long n = strtol (v, &end, 10);
  return (end && *end == '\0') ? (int) n : fallback;
}

static gboolean
device_error (GError **error, cudaError_t err, const char *what)
{
  g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE, "%s: %s (%s)", what,
               cudaGetErrorString (err), cudaGetErrorName (err));
  return FALSE;
}

/* Every kernel of the module must have code for this device. Asking for
 * its attributes also loads it now (CUDA loads kernels lazily, at their
 * first launch): a kernel first launched inside a graph capture would
 * otherwise have to be loaded there. */
static gboolean
preload_kernels (GError **error)
{
  WcLaunch l[16];
  int n = 0;
  WcLayerNormArgs ln = { 0 };
  WcGemvArgs gemv = { 0 };
  WcBiasActArgs bias = { 0 };
  WcToHalfArgs half = { 0 };
  WcAddArgs add = { 0 };
  WcEmbedArgs embed = { 0 };
  WcIm2colArgs im2col = { 0 };
  WcAttnArgs attn = { 0 };
  WcAttnSplitArgs split = { 0 };
  WcAttnCombineArgs combine = { 0 };
  WcCopyRowsArgs copy = { 0 };
  WcLogitsMaskArgs mask = { 0 };
  WcLogitsChooseArgs choose = { 0 };
  wc_layer_norm_plan (&l[n++], &ln);
  wc_gemv_plan (&l[n++], &gemv);
  wc_bias_act_plan (&l[n++], &bias);
  wc_to_half_plan (&l[n++], &half);
  wc_add_plan (&l[n++], &add);
  wc_embed_plan (&l[n++], &embed);
  wc_im2col_plan (&l[n++], &im2col);
  wc_flash_plan (&l[n++], &attn);
  wc_attn_split_plan (&l[n++], &split);
  wc_attn_combine_plan (&l[n++], &combine);
  wc_copy_rows_plan (&l[n++], &copy);
  wc_logits_mask_plan (&l[n++], &mask);
  wc_logits_choose_plan (&l[n++], &choose);
  for (int i = 0; i < n; i++) {
    struct cudaFuncAttributes attr;
    cudaError_t err = cudaFuncGetAttributes (&attr, l[i].func);
    if (err != cudaSuccess)
      return device_error (error, err, "the CUDA module has no code for this device");
  }
  return TRUE;
}

/* Picks the device and checks that it can run this module's kernels. */
static gboolean
open_device (WcBackend *self, GError **error)
{
  int count = 0;
  cudaError_t err = cudaGetDeviceCount (&count);
  if (err != cudaSuccess)
    return device_error (error, err, "no usable CUDA device (cudaGetDeviceCount)");
  if (count == 0) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "no CUDA device: the driver reports none");
    return FALSE;
  }
  self->device = env_int ("WHISPER_CUDA_DEVICE", 0);
  if (self->device < 0 || self->device >= count) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "WHISPER_CUDA_DEVICE=%d: there are %d CUDA devices", self->device, count);
    return FALSE;
  }
  if ((err = cudaSetDevice (self->device)) != cudaSuccess)
    return device_error (error, err, "cudaSetDevice");

  struct cudaDeviceProp prop;
  if ((err = cudaGetDeviceProperties (&prop, self->device)) != cudaSuccess)
    return device_error (error, err, "cudaGetDeviceProperties");
  g_strlcpy (self->device_name, prop.name, sizeof self->device_name);
  self->cc_major = prop.major;
  self->cc_minor = prop.minor;
  if (prop.major < 8) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "CUDA device %d (%s) has compute capability %d.%d; this module is built "
                 "for 8.0 and newer",
                 self->device, prop.name, prop.major, prop.minor);
    return FALSE;
  }

  return preload_kernels (error);
}

static gboolean
create_resources (WcBackend *self, GError **error)
{
  cudaError_t err;
  if ((err = cudaStreamCreateWithFlags (&self->stream, cudaStreamNonBlocking)) != cudaSuccess)
    return device_error (error, err, "cudaStreamCreate");

  cublasStatus_t st = cublasCreate (&self->cublas);
  if (st != CUBLAS_STATUS_SUCCESS) {
    self->cublas = NULL;
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "cuBLAS initialisation failed: %s", cublasGetStatusString (st));
    return FALSE;
  }
  if ((err = cudaMalloc (&self->cublas_workspace, CUBLAS_WORKSPACE_BYTES)) != cudaSuccess)
    return device_error (error, err, "cudaMalloc (cuBLAS workspace)");
  /* A fixed workspace keeps cuBLAS from allocating inside a captured graph. */
  if ((st = cublasSetStream (self->cublas, self->stream)) != CUBLAS_STATUS_SUCCESS ||
      (st = cublasSetWorkspace (self->cublas, self->cublas_workspace, CUBLAS_WORKSPACE_BYTES)) !=
          CUBLAS_STATUS_SUCCESS ||
      (st = cublasSetMathMode (self->cublas, CUBLAS_DEFAULT_MATH)) != CUBLAS_STATUS_SUCCESS) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "cuBLAS setup failed: %s", cublasGetStatusString (st));
    return FALSE;
  }
  if ((err = cudaMalloc ((void **) &self->logit_partial,
                         WC_LOGITS_BLOCKS * sizeof (WcLogitPartial))) != cudaSuccess)
    return device_error (error, err, "cudaMalloc (logit partials)");
  /* Split-attention partials of decode steps (up to WC_GEMV_MAX_N queries,
   * 32 heads, the widest head), sized now so that no decode step, not even
   * the first, allocates; larger shapes grow it outside the decode path. */
  if (!wc_buffer_reserve (self, &self->ws_attn,
                          (size_t) WC_GEMV_MAX_N * 32 * WC_SPLIT_MAX * (WC_SPLIT_MAX_D + 2) *
                              sizeof (float))) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "cudaMalloc (attention workspace): %s", self->error->message);
    return FALSE;
  }
  if ((err = cudaHostAlloc ((void **) &self->choice.host, 256, cudaHostAllocMapped)) !=
      cudaSuccess)
    return device_error (error, err, "cudaHostAlloc");
  if ((err = cudaHostGetDevicePointer ((void **) &self->choice.dev, self->choice.host, 0)) !=
      cudaSuccess)
    return device_error (error, err, "cudaHostGetDevicePointer");
  self->choice.size = 256;
  return TRUE;
}

G_MODULE_EXPORT WhisperBackend *
whisper_backend_cuda_module_new (int abi_version, GError **error)
{
  if (abi_version != WHISPER_BACKEND_ABI_VERSION) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "backend ABI mismatch: the engine has version %d, this CUDA module %d; "
                 "rebuild the module with the engine",
                 abi_version, WHISPER_BACKEND_ABI_VERSION);
    return NULL;
  }
  WcBackend *self = g_new0 (WcBackend, 1);
  self->parent.ops = &cuda_ops;
  self->parent.n_threads = 1;
  g_mutex_init (&self->lock);
  self->deferred_free = g_ptr_array_new ();
  self->gemv_max_n = CLAMP (env_int ("WHISPER_CUDA_GEMV_MAX_N", WC_GEMV_MAX_N), 0, WC_GEMV_MAX_N);
  /* the fused GEMV sums each row alone; cuBLAS above it may not */
  self->parent.max_exact_rows = MAX (1, self->gemv_max_n);
  self->graphs_enabled = env_int ("WHISPER_CUDA_GRAPHS", 1) != 0;
  self->split_precision = g_strcmp0 (g_getenv ("WHISPER_CUDA_PRECISION"), "fast") != 0;
  wc_graphs_init (self);

  if (!open_device (self, error) || !create_resources (self, error)) {
    cuda_destroy (&self->parent);
    return NULL;
  }
  g_debug ("CUDA backend on device %d: %s (compute capability %d.%d)", self->device,
           self->device_name, self->cc_major, self->cc_minor);
  return &self->parent;
}
