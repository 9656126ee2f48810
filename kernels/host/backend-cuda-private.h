/* backend-cuda-private.h: state of the CUDA backend module, shared by its
 * files. They depend on each other one way, top to bottom:
 *   backend-cuda.c         creation, memory, weights, op table
 *   backend-cuda-ops.c     compute ops
 *   backend-cuda-logits.c  logit choice
 *   backend-cuda-graph.c   submission, recording and CUDA graphs
 *   backend-cuda-core.c    entering from a thread, errors, device memory */
#pragma once

#include "backend.h"
#include "kernels.h"
#include "whisper-error.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

G_BEGIN_DECLS


#define WC_DTYPE_F16 1
#define WC_MAX_ARGS 512 /* bytes of one kernel's argument struct, at most */

/* One GEMM: fp16 A and B, fp32 C, fp32 compute (cublasGemmEx). */
typedef struct {
  cublasOperation_t ta, tb;
  int m, n, k;
  float alpha, beta;
  const void *a;
  int lda;
  const void *b;
  int ldb;
  void *c;
  int ldc;
} WcGemm;

typedef struct {
  void *dst;
  const void *src;
  size_t bytes;
  enum cudaMemcpyKind kind;
} WcCopy;

typedef enum {
  WC_REC_KERNEL,
  WC_REC_GEMM,
  WC_REC_COPY,
} WcRecordKind;

/* One unit of work on the stream: run at once, or kept while recording. */
typedef struct {
  WcRecordKind kind;
  union {
    struct {
      WcLaunch launch;
      guint32 size;
      union {
        guint8 bytes[WC_MAX_ARGS];
        double align_; /* kernel arguments are at most 8-byte aligned */
      } args;
    } kernel;
    WcGemm gemm;
    WcCopy copy;
  } u;
} WcRecord;

/* Pinned host memory, mapped into the device's address space. */
typedef struct {
  guint8 *host;
  guint8 *dev;
  size_t size;
} WcPinned;

/* A device buffer that grows on demand (workspaces). */
typedef struct {
  void *ptr;
  size_t size;
} WcBuffer;

typedef struct {
  WhisperBackend parent;

  int device;
  char device_name[256];
  int cc_major, cc_minor;
  cudaStream_t stream;
  cublasHandle_t cublas;
  void *cublas_workspace;

  GMutex lock;     /* every entry holds it while it talks to CUDA (wc_enter) */
  GError *error;   /* first failure (sticky), see wc_fail() */

  int gemv_max_n;  /* linear with n <= this runs the fused GEMV kernel */
  gboolean split_precision; /* cuBLAS on fp16 hi + lo activations (2 GEMMs) */
  gboolean graphs_enabled;

  WcBuffer ws_half;   /* fp16 activations for cuBLAS */
  WcBuffer ws_attn;   /* split-attention partials */
  WcLogitPartial *logit_partial;
  float *upload_chunk; /* fp32 staging of weight_upload, on the device */
  WcPinned choice;     /* eager logits_select result */

  /* Recording (graph_begin .. graph_end), by one thread at a time. */
  gboolean recording;
  gboolean record_passthrough; /* graphs disabled: ops run at once */
  GThread *record_thread;
  WhisperGraph *record_graph;
  GArray *records;         /* WcRecord */
  GArray *copy_outs;       /* WcCopyOut */
  GPtrArray *staging;      /* WcPinned chunks, reused from step to step */
  guint staging_chunk;
  size_t staging_used;
  gboolean staging_in_flight; /* a launched graph read staging, not waited for */
  char *record_refused;    /* why an op could not be recorded */
  GPtrArray *deferred_free; /* device pointers freed while recording */

  GPtrArray *graphs;       /* WhisperGraph: every live one, freed with the backend */
  guint graph_ids;         /* the last WhisperGraph id handed out */
} WcBackend;

typedef struct {
  void *host_dst;
  const void *staging;
  size_t bytes;
} WcCopyOut;

/* backend-cuda-core.c */
/* Every entry point: takes the lock and makes the backend's device current
 * on the calling thread (a failure is kept as the sticky error). */
void wc_enter (WcBackend *self);
void wc_leave (WcBackend *self);
/* Keep the first failure (sticky); TRUE when there was one. */
gboolean wc_fail (WcBackend *self, cudaError_t err, const char *what);
gboolean wc_fail_cublas (WcBackend *self, cublasStatus_t st, const char *what);
void wc_fail_msg (WcBackend *self, const char *format, ...) G_GNUC_PRINTF (2, 3);
void *wc_buffer_reserve (WcBackend *self, WcBuffer *buf, size_t bytes);
/* cudaFree now, or at graph_end() while recording. */
void wc_device_free (WcBackend *self, void *ptr);
void wc_run_deferred_frees (WcBackend *self);

/* backend-cuda-graph.c */
gboolean wc_is_recording (WcBackend *self);
void wc_submit_kernel (WcBackend *self, const WcLaunch *launch, const void *args, size_t size);
void wc_submit_gemm (WcBackend *self, const WcGemm *gemm);
void wc_submit_copy (WcBackend *self, const WcCopy *copy);
/* Host memory that a recorded step reads (upload) or writes (download,
 * logit choice): pinned, mapped, valid until the next graph_begin(). */
gboolean wc_staging_alloc (WcBackend *self, size_t bytes, WcPinned *out);
void wc_copy_out (WcBackend *self, void *host_dst, const void *staging, size_t bytes);
WhisperGraph *wc_cuda_graph_new (WhisperBackend *be);
gboolean wc_cuda_graph_begin (WhisperBackend *be, WhisperGraph *graph, GError **error);
gboolean wc_cuda_graph_end (WhisperBackend *be, GError **error);
void wc_cuda_graph_free (WhisperBackend *be, WhisperGraph *graph);
void wc_graphs_init (WcBackend *self);
void wc_graphs_clear (WcBackend *self);

/* backend-cuda-ops.c */
void wc_cuda_linear (WhisperBackend *be, float *y, int y_stride, const float *x, int x_stride,
                     const WhisperWeight *w, const float *bias, int n, WhisperLinearFlags flags);
void wc_cuda_layer_norm (WhisperBackend *be, float *y, const float *x, const float *gamma,
                         const float *beta, int n, int d, float eps);
void wc_cuda_conv1d_gelu (WhisperBackend *be, float *y, const float *x, int n_in_frames,
                          int c_in, const WhisperWeight *w, const float *bias, int stride,
                          float *scratch);
void wc_cuda_add (WhisperBackend *be, float *y, const float *x, size_t n);
void wc_cuda_embed (WhisperBackend *be, float *x, const WhisperWeight *embedding,
                    const float *positional, const int32_t *tokens, int n, int pos0, int d);
void wc_cuda_attention (WhisperBackend *be, float *out, int out_stride, const float *q,
                        int q_stride, const float *k, const float *v, int kv_stride, int n_q,
                        int n_kv, int n_head, int d_head, int causal);
void wc_cuda_copy_rows (WhisperBackend *be, float *dst, int dst_stride, const float *src,
                        int src_stride, int n_rows, int n_cols);
void wc_cuda_attention_probs (WhisperBackend *be, float *probs, int probs_stride,
                              const float *q, int q_stride, const float *k, int kv_stride,
                              int n_q, int n_kv, int head, int d_head);

/* backend-cuda-logits.c */
void wc_cuda_logits_select (WhisperBackend *be, float *logits, WhisperLogitConfig *config,
                            const WhisperLogitState *state, WhisperLogitChoice *choice);
void wc_cuda_logits_prepare (WhisperBackend *be, WhisperLogitConfig *config);
void wc_cuda_logits_release (WhisperBackend *be, WhisperLogitConfig *config);

G_END_DECLS
