/* backend-cuda-graph.c: how work reaches the stream, and decode-step CUDA
 * graphs.
 *
 * Every op turns into records (a kernel launch with its argument struct, a
 * cuBLAS GEMM, a copy). Outside graph_begin()/graph_end() a record runs at
 * once. Between them, the calling thread's records are kept; graph_end()
 * then compares them with what the caller's WhisperGraph holds (the caller
 * owns it: a step looks nothing up):
 *
 * - same records apart from kernel arguments (the usual case from one
 *   decode step to the next: the token, the position, the KV length, the KV
 *   write row, the logit state, all travel as kernel arguments): patch the
 *   kernel nodes whose arguments changed (cudaGraphExecKernelNodeSetParams)
 *   and launch the executable graph;
 * - anything else (first step, other shapes, a GEMM with other pointers):
 *   capture the records into a new graph (stream capture, which also takes
 *   cuBLAS calls), instantiate it, remember which node each kernel record
 *   became, and launch it;
 * - when capture or instantiation fails, the step runs its records one by
 *   one, so that a step never fails for the graph's sake alone; after three
 *   failures in a row that WhisperGraph stays without a CUDA graph (with a
 *   warning).
 *
 * Host outputs of the step (logit choice, downloads) are written to pinned
 * staging memory by the graph and copied to the caller's memory after the
 * graph is waited for; that wait is the only host synchronisation of a step.
 */
#include "backend-cuda-private.h"
#include "whisper-error.h"

#include <gmodule.h>
#include <string.h>

#define STAGING_CHUNK (256u << 10)

/* The cudaStreamGetCaptureInfo() of CUDA 13 has the edge data of CUDA 12's
 * cudaStreamGetCaptureInfo_v3() (7 arguments); CUDA 12's plain name is
 * the 6-argument _v2 (https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html). */
#if CUDART_VERSION >= 13000
#define CAPTURE_INFO(stream, status, deps, n_deps)                                                 \
  cudaStreamGetCaptureInfo ((stream), (status), NULL, NULL, (deps), NULL, (n_deps))
#elif CUDART_VERSION >= 12000
#define CAPTURE_INFO(stream, status, deps, n_deps)                                                 \
  cudaStreamGetCaptureInfo ((stream), (status), NULL, NULL, (deps), (n_deps))
#else
#error "the CUDA module needs CUDA 12.0 or newer (CUDART_VERSION from cuda_runtime_api.h)"
#endif

struct _WhisperGraph {
  guint id;                 /* for messages: 1, 2, ... in creation order */
  GArray *records;          /* what the executable graph holds now */
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaGraphNode_t *nodes;   /* per record: its kernel node, or NULL */
  int failed_captures;      /* in a row */
  gboolean eager_only;      /* capture failed too often: run records one by one */
  guint64 launches, patches, captures;
};

/* ---- running one record ----------------------------------------------- */

static cudaError_t
launch_kernel (WcBackend *self, const WcRecord *r)
{
  const WcLaunch *l = &r->u.kernel.launch;
  void *params[] = { (void *) r->u.kernel.args.bytes };
  return cudaLaunchKernel (l->func, (dim3) { l->grid[0], l->grid[1], l->grid[2] },
                           (dim3) { l->block[0], l->block[1], l->block[2] }, params, l->smem,
                           self->stream);
}

static cublasStatus_t
run_gemm (WcBackend *self, const WcGemm *g)
{
  return cublasGemmEx (self->cublas, g->ta, g->tb, g->m, g->n, g->k, &g->alpha, g->a, CUDA_R_16F,
                       g->lda, g->b, CUDA_R_16F, g->ldb, &g->beta, g->c, CUDA_R_32F, g->ldc,
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

/* Runs (or, under stream capture, adds) one record; FALSE on failure, with
 * the sticky error set. */
static gboolean
run_record (WcBackend *self, const WcRecord *r)
{
  switch (r->kind) {
  case WC_REC_KERNEL:
    return !wc_fail (self, launch_kernel (self, r), "kernel launch");
  case WC_REC_GEMM:
    return !wc_fail_cublas (self, run_gemm (self, &r->u.gemm), "cublasGemmEx");
  case WC_REC_COPY:
    return !wc_fail (self,
                     cudaMemcpyAsync (r->u.copy.dst, r->u.copy.src, r->u.copy.bytes,
                                      r->u.copy.kind, self->stream),
                     "cudaMemcpyAsync");
  }
  return FALSE;
}

gboolean
wc_is_recording (WcBackend *self)
{
  return self->recording && !self->record_passthrough &&
         self->record_thread == g_thread_self ();
}

static WcRecord *
append_record (WcBackend *self, WcRecordKind kind)
{
  g_array_set_size (self->records, self->records->len + 1);
  WcRecord *r = &g_array_index (self->records, WcRecord, self->records->len - 1);
  r->kind = kind;
  return r;
}

void
wc_submit_kernel (WcBackend *self, const WcLaunch *launch, const void *args, size_t size)
{
  g_assert (size <= WC_MAX_ARGS);
  if (self->error)
    return; /* a failed device stays failed: do not queue more */
  WcRecord local, *r = &local;
  if (wc_is_recording (self))
    r = append_record (self, WC_REC_KERNEL);
  r->kind = WC_REC_KERNEL;
  r->u.kernel.launch = *launch;
  r->u.kernel.size = (guint32) size;
  memcpy (r->u.kernel.args.bytes, args, size);
  if (r == &local)
    run_record (self, r);
}

void
wc_submit_gemm (WcBackend *self, const WcGemm *gemm)
{
  if (self->error)
    return;
  if (wc_is_recording (self)) {
    WcRecord *r = append_record (self, WC_REC_GEMM);
    r->u.gemm = *gemm;
    return;
  }
  WcRecord r = { .kind = WC_REC_GEMM, .u.gemm = *gemm };
  run_record (self, &r);
}

void
wc_submit_copy (WcBackend *self, const WcCopy *copy)
{
  if (self->error)
    return;
  if (wc_is_recording (self)) {
    WcRecord *r = append_record (self, WC_REC_COPY);
    r->u.copy = *copy;
    return;
  }
  WcRecord r = { .kind = WC_REC_COPY, .u.copy = *copy };
  run_record (self, &r);
}

/* ---- staging ---------------------------------------------------------- */

static void
pinned_free (gpointer p)
{
  WcPinned *c = p;
  cudaFreeHost (c->host);
  g_free (c);
}

/* Chunks are handed out in the same order every step, so a step that
 * stages the same sizes gets the same addresses, and its graph needs no
 * other change. */
gboolean
wc_staging_alloc (WcBackend *self, size_t bytes, WcPinned *out)
{
  bytes = (bytes + 15) & ~(size_t) 15;
  while (self->staging_chunk < self->staging->len) {
    WcPinned *c = g_ptr_array_index (self->staging, self->staging_chunk);
    if (self->staging_used + bytes <= c->size) {
      out->host = c->host + self->staging_used;
      out->dev = c->dev + self->staging_used;
      out->size = bytes;
      self->staging_used += bytes;
      return TRUE;
    }
    self->staging_chunk++;
    self->staging_used = 0;
  }
  WcPinned *c = g_new0 (WcPinned, 1);
  c->size = MAX (bytes, STAGING_CHUNK);
  if (wc_fail (self, cudaHostAlloc ((void **) &c->host, c->size, cudaHostAllocMapped),
               "cudaHostAlloc (graph staging)") ||
      wc_fail (self, cudaHostGetDevicePointer ((void **) &c->dev, c->host, 0),
               "cudaHostGetDevicePointer")) {
    if (c->host)
      cudaFreeHost (c->host);
    g_free (c);
    return FALSE;
  }
  g_ptr_array_add (self->staging, c);
  self->staging_chunk = self->staging->len - 1;
  self->staging_used = bytes;
  out->host = c->host;
  out->dev = c->dev;
  out->size = bytes;
  return TRUE;
}

void
wc_copy_out (WcBackend *self, void *host_dst, const void *staging, size_t bytes)
{
  WcCopyOut c = { .host_dst = host_dst, .staging = staging, .bytes = bytes };
  g_array_append_val (self->copy_outs, c);
}

/* ---- graphs ----------------------------------------------------------- */

static void
graph_destroy_exec (WhisperGraph *g)
{
  if (g->exec)
    cudaGraphExecDestroy (g->exec);
  if (g->graph)
    cudaGraphDestroy (g->graph);
  g->exec = NULL;
  g->graph = NULL;
  g_clear_pointer (&g->nodes, g_free);
}

static void
graph_free (gpointer p)
{
  WhisperGraph *g = p;
  graph_destroy_exec (g);
  g_array_unref (g->records);
  g_free (g);
}

void
wc_graphs_init (WcBackend *self)
{
  self->records = g_array_new (FALSE, FALSE, sizeof (WcRecord));
  self->copy_outs = g_array_new (FALSE, FALSE, sizeof (WcCopyOut));
  self->staging = g_ptr_array_new_with_free_func (pinned_free);
  self->graphs = g_ptr_array_new_with_free_func (graph_free);
}

void
wc_graphs_clear (WcBackend *self)
{
  g_clear_pointer (&self->graphs, g_ptr_array_unref);
  g_clear_pointer (&self->staging, g_ptr_array_unref);
  g_clear_pointer (&self->records, g_array_unref);
  g_clear_pointer (&self->copy_outs, g_array_unref);
  g_clear_pointer (&self->record_refused, g_free);
}

/* Field by field: the structs' padding bytes are not initialised. */
static gboolean
same_launch (const WcLaunch *a, const WcLaunch *b)
{
  return a->func == b->func && a->smem == b->smem && memcmp (a->grid, b->grid, sizeof a->grid) == 0 &&
         memcmp (a->block, b->block, sizeof a->block) == 0;
}

static gboolean
same_gemm (const WcGemm *a, const WcGemm *b)
{
  return a->ta == b->ta && a->tb == b->tb && a->m == b->m && a->n == b->n && a->k == b->k &&
         a->alpha == b->alpha && a->beta == b->beta && a->a == b->a && a->lda == b->lda &&
         a->b == b->b && a->ldb == b->ldb && a->c == b->c && a->ldc == b->ldc;
}

static gboolean
same_copy (const WcCopy *a, const WcCopy *b)
{
  return a->dst == b->dst && a->src == b->src && a->bytes == b->bytes && a->kind == b->kind;
}

/* Same work apart from kernel arguments, and every kernel node known. */
static gboolean
same_shape (const WhisperGraph *g, const GArray *records)
{
  if (!g->exec || g->records->len != records->len)
    return FALSE;
  for (guint i = 0; i < records->len; i++) {
    const WcRecord *a = &g_array_index (g->records, WcRecord, i);
    const WcRecord *b = &g_array_index (records, WcRecord, i);
    if (a->kind != b->kind)
      return FALSE;
    switch (a->kind) {
    case WC_REC_KERNEL:
      if (!g->nodes[i] || a->u.kernel.size != b->u.kernel.size ||
          !same_launch (&a->u.kernel.launch, &b->u.kernel.launch))
        return FALSE;
      break;
    case WC_REC_GEMM:
      if (!same_gemm (&a->u.gemm, &b->u.gemm))
        return FALSE;
      break;
    case WC_REC_COPY:
      if (!same_copy (&a->u.copy, &b->u.copy))
        return FALSE;
      break;
    }
  }
  return TRUE;
}

/* Patches the kernel nodes whose arguments changed; FALSE if a patch was
 * refused (the graph is then captured again). */
static gboolean
patch (WhisperGraph *g, GArray *records)
{
  for (guint i = 0; i < records->len; i++) {
    WcRecord *a = &g_array_index (g->records, WcRecord, i);
    WcRecord *b = &g_array_index (records, WcRecord, i);
    if (b->kind != WC_REC_KERNEL ||
        memcmp (a->u.kernel.args.bytes, b->u.kernel.args.bytes, b->u.kernel.size) == 0)
      continue;
    const WcLaunch *l = &b->u.kernel.launch;
    void *params[] = { b->u.kernel.args.bytes };
    struct cudaKernelNodeParams p = {
      .func = (void *) l->func,
      .gridDim = { l->grid[0], l->grid[1], l->grid[2] },
      .blockDim = { l->block[0], l->block[1], l->block[2] },
      .sharedMemBytes = l->smem,
      .kernelParams = params,
      .extra = NULL,
    };
    cudaError_t err = cudaGraphExecKernelNodeSetParams (g->exec, g->nodes[i], &p);
    if (err != cudaSuccess) {
      g_debug ("CUDA graph %u: node %u not patchable (%s), capturing again", g->id, i,
               cudaGetErrorString (err));
      cudaGetLastError ();
      return FALSE;
    }
    memcpy (a->u.kernel.args.bytes, b->u.kernel.args.bytes, b->u.kernel.size);
    g->patches++;
  }
  return TRUE;
}

/* Captures the records into g (stream capture); FALSE when capture or
 * instantiation failed (not a device failure: the records can still run one
 * by one). */
static gboolean
capture (WcBackend *self, WhisperGraph *g, GArray *records)
{
  graph_destroy_exec (g);
  g->nodes = g_new0 (cudaGraphNode_t, MAX (records->len, 1));

  cudaError_t err = cudaStreamBeginCapture (self->stream, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) {
    g_warning ("CUDA graph: cannot begin capture: %s", cudaGetErrorString (err));
    cudaGetLastError ();
    return FALSE;
  }
  gboolean ok = TRUE;
  for (guint i = 0; i < records->len && ok; i++) {
    const WcRecord *r = &g_array_index (records, WcRecord, i);
    if (r->kind == WC_REC_KERNEL) {
      err = launch_kernel (self, r);
      if (err != cudaSuccess) {
        ok = FALSE;
        break;
      }
      enum cudaStreamCaptureStatus status;
      const cudaGraphNode_t *deps = NULL;
      size_t n_deps = 0;
      err = CAPTURE_INFO (self->stream, &status, &deps, &n_deps);
      if (err == cudaSuccess && status == cudaStreamCaptureStatusActive && n_deps == 1)
        g->nodes[i] = deps[0];
    } else if (r->kind == WC_REC_GEMM) {
      cublasStatus_t st = run_gemm (self, &r->u.gemm);
      if (st != CUBLAS_STATUS_SUCCESS) {
        g_warning ("CUDA graph: cuBLAS failed under capture: %s", cublasGetStatusString (st));
        ok = FALSE;
      }
    } else {
      err = cudaMemcpyAsync (r->u.copy.dst, r->u.copy.src, r->u.copy.bytes, r->u.copy.kind,
                             self->stream);
      ok = err == cudaSuccess;
    }
  }
  cudaGraph_t graph = NULL;
  cudaError_t end = cudaStreamEndCapture (self->stream, &graph);
  if (!ok || end != cudaSuccess || !graph) {
    g_warning ("CUDA graph: capture failed: %s",
               cudaGetErrorString (ok ? end : (err != cudaSuccess ? err : end)));
    if (graph)
      cudaGraphDestroy (graph);
    cudaGetLastError ();
    return FALSE;
  }
  g->graph = graph;
  err = cudaGraphInstantiate (&g->exec, graph, 0);
  if (err != cudaSuccess) {
    g_warning ("CUDA graph: instantiation failed: %s", cudaGetErrorString (err));
    g->exec = NULL;
    cudaGetLastError ();
    return FALSE;
  }
  g_array_set_size (g->records, records->len);
  if (records->len)
    memcpy (g->records->data, records->data, records->len * sizeof (WcRecord));
  g->captures++;
  return TRUE;
}

static void
run_one_by_one (WcBackend *self, GArray *records)
{
  for (guint i = 0; i < records->len && !self->error; i++)
    run_record (self, &g_array_index (records, WcRecord, i));
}

WhisperGraph *
wc_cuda_graph_new (WhisperBackend *be)
{
  WcBackend *self = (WcBackend *) be;
  WhisperGraph *g = g_new0 (WhisperGraph, 1);
  g->records = g_array_new (FALSE, FALSE, sizeof (WcRecord));
  g_mutex_lock (&self->lock);
  g->id = ++self->graph_ids;
  g_ptr_array_add (self->graphs, g);
  g_mutex_unlock (&self->lock);
  return g;
}

gboolean
wc_cuda_graph_begin (WhisperBackend *be, WhisperGraph *graph, GError **error)
{
  WcBackend *self = (WcBackend *) be;
  gboolean ok = FALSE;
  wc_enter (self);
  if (self->error) {
    g_propagate_error (error, g_error_copy (self->error));
  } else if (!graph) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                 "CUDA backend: graph_begin() without a graph (make one with graph_new())");
  } else if (self->recording) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                 "CUDA backend: graph_begin() of graph %u while graph %u is being recorded; "
                 "graphs do not nest",
                 graph->id, self->record_graph->id);
  } else {
    self->recording = TRUE;
    self->record_passthrough = !self->graphs_enabled;
    self->record_thread = g_thread_self ();
    self->record_graph = graph;
    g_array_set_size (self->records, 0);
    g_array_set_size (self->copy_outs, 0);
    /* the last graph may still read staging memory this step will reuse */
    if (self->staging_in_flight)
      wc_fail (self, cudaStreamSynchronize (self->stream), "graph synchronize");
    self->staging_in_flight = FALSE;
    self->staging_chunk = 0;
    self->staging_used = 0;
    ok = TRUE;
  }
  wc_leave (self);
  return ok;
}

gboolean
wc_cuda_graph_end (WhisperBackend *be, GError **error)
{
  WcBackend *self = (WcBackend *) be;
  wc_enter (self);
  if (!self->recording || self->record_thread != g_thread_self ()) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                 "CUDA backend: graph_end() without graph_begin() in this thread");
    wc_leave (self);
    return FALSE;
  }
  const gboolean passthrough = self->record_passthrough;
  WhisperGraph *g = self->record_graph;
  self->recording = FALSE;
  self->record_passthrough = FALSE;
  self->record_thread = NULL;
  self->record_graph = NULL;

  if (self->record_refused) {
    wc_fail_msg (self, "refused while recording a graph: %s", self->record_refused);
    g_clear_pointer (&self->record_refused, g_free);
  }
  if (!passthrough && !self->error) {
    gboolean ready = FALSE;
    if (!g->eager_only) {
      ready = same_shape (g, self->records) && patch (g, self->records);
      if (!ready && !(ready = capture (self, g, self->records))) {
        /* this step runs op by op (which also loads whatever the capture
         * may have lacked); after three failures in a row, every step */
        graph_destroy_exec (g);
        g->eager_only = ++g->failed_captures >= 3;
        if (g->eager_only)
          g_warning ("CUDA graph %u: capture failed three times in a row; its steps run "
                     "without a graph from now on",
                     g->id);
      } else if (ready) {
        g->failed_captures = 0;
      }
    }
    if (ready) {
      wc_fail (self, cudaGraphLaunch (g->exec, self->stream), "cudaGraphLaunch");
      g->launches++;
    } else {
      run_one_by_one (self, self->records);
    }
  }

  self->staging_in_flight = self->staging_chunk > 0 || self->staging_used > 0;
  if (self->copy_outs->len > 0 || self->deferred_free->len > 0) {
    self->staging_in_flight = FALSE;
    wc_fail (self, cudaStreamSynchronize (self->stream), "graph synchronize");
    for (guint i = 0; i < self->copy_outs->len && !self->error; i++) {
      const WcCopyOut *c = &g_array_index (self->copy_outs, WcCopyOut, i);
      memcpy (c->host_dst, c->staging, c->bytes);
    }
    wc_run_deferred_frees (self);
  }
  g_array_set_size (self->copy_outs, 0);
  g_array_set_size (self->records, 0);

  gboolean ok = self->error == NULL;
  if (!ok)
    g_propagate_error (error, g_error_copy (self->error));
  wc_leave (self);
  return ok;
}

void
wc_cuda_graph_free (WhisperBackend *be, WhisperGraph *graph)
{
  WcBackend *self = (WcBackend *) be;
  if (!graph)
    return;
  wc_enter (self);
  if (self->recording && self->record_graph == graph)
    wc_fail_msg (self, "graph_free() of graph %u while it is being recorded", graph->id);
  else if (!g_ptr_array_remove_fast (self->graphs, graph))
    wc_fail_msg (self, "graph_free() of a graph this backend does not hold");
  wc_leave (self);
}

/* For tests and diagnostics (not part of the backend table): how often
 * `graph` was launched, captured and patched (kernel nodes). */
G_MODULE_EXPORT void
whisper_backend_cuda_graph_stats (WhisperBackend *be, WhisperGraph *graph, guint64 *launches,
                                  guint64 *captures, guint64 *patches)
{
  WcBackend *self = (WcBackend *) be;
  g_mutex_lock (&self->lock);
  *launches = graph->launches;
  *captures = graph->captures;
  *patches = graph->patches;
  g_mutex_unlock (&self->lock);
}
