/* backend.h: the tensor operations the encoder and decoder are written
 * against. Two implementations: engine/src/backend/cpu/ (GEMM on oneDNN or OpenBLAS,
 * our own kernels, on a fork-join pool) and the CUDA module (kernels/host/
 * + kernels/, loaded at run time by backend-cuda-loader.c).
 *
 * Conventions:
 * - Every `float *` an op takes or returns is backend memory (host memory for
 *   the CPU backend, device memory for CUDA), allocated with ops->alloc.
 * - Matrices are row-major; a "stride" is the distance in floats between two
 *   consecutive rows.
 * - Ops are queued in order on the backend's single stream; ops->sync waits
 *   for all of them. Host<->backend copies (upload/download) are ordered
 *   with the ops.
 * - fp32 everywhere except weight matrices, which a backend keeps in its
 *   own layout (fp16 on both backends when the model stores fp16); GEMMs
 *   accumulate in fp32.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "tensor.h"

G_BEGIN_DECLS

/* Bump when the table changes: the CUDA module checks it at load time. */
#define WHISPER_BACKEND_ABI_VERSION 11

typedef struct _WhisperBackend WhisperBackend;

/* A decode-step graph of a backend (ops->graph_new), opaque to the engine. */
typedef struct _WhisperGraph WhisperGraph;

/* A weight matrix [rows, cols] in the backend's preferred storage. */
typedef struct {
  void *data;
  int rows;
  int cols;
  int dtype; /* backend-private */
  /* set by the caller before weight_upload: a convolution's kernel, which
   * the CPU backend keeps in floating point (dequantized when the file
   * stores it in int8), as CTranslate2 runs its convolutions */
  gboolean keep_float;
} WhisperWeight;

typedef enum {
  WHISPER_LINEAR_DEFAULT = 0,
  WHISPER_LINEAR_ACCUMULATE = 1 << 0, /* y += x W^T + b (residual add) */
  WHISPER_LINEAR_GELU = 1 << 1,       /* y = gelu(x W^T + b), exact erf */
} WhisperLinearFlags;

/* Logit processing of one greedy decode step (the logit filters of
 * https://github.com/openai/whisper/blob/main/whisper/decoding.py), constant per
 * engine. whisper-logits.c is the host implementation; a backend may provide
 * the same on the device (ops->logits_select) so that a step copies back
 * only the chosen token and its log probability. */
typedef struct {
  int n_vocab;
  int eot;
  int no_timestamps;
  int timestamp_begin;         /* first timestamp token; all ids >= it are timestamps */
  int blank;                   /* id of " " (SuppressBlank) */
  gboolean suppress_blank;
  const int32_t *suppress_ids; /* SuppressTokens list (sorted, unique) */
  int n_suppress_ids;
  gboolean timestamps;         /* apply ApplyTimestampRules */
  int max_initial_timestamp_index; /* < 0: no limit */
  void *backend_cache;         /* a backend's own copy of the config, built by
                                  ops->logits_prepare, freed by ops->logits_release */
} WhisperLogitConfig;

/* What the rules need to know about the tokens sampled so far in the window. */
typedef struct {
  int n_sampled;               /* tokens sampled after the prompt */
  gboolean last_is_timestamp;
  gboolean penultimate_is_timestamp; /* TRUE when fewer than 2 tokens were sampled */
  int last_timestamp;          /* last timestamp token sampled, -1 if none */
} WhisperLogitState;

typedef struct {
  int32_t token;               /* argmax of the filtered logits */
  float logprob;               /* its log-softmax value (filtered logits) */
} WhisperLogitChoice;

typedef struct {
  int abi_version;
  const char *name;

  void (*destroy) (WhisperBackend *be);

  /* memory */
  float *(*alloc) (WhisperBackend *be, size_t n_floats, GError **error);
  void (*free) (WhisperBackend *be, void *ptr);
  void (*upload) (WhisperBackend *be, void *dst, const void *src, size_t bytes);
  void (*download) (WhisperBackend *be, void *dst, const void *src, size_t bytes);
  void (*sync) (WhisperBackend *be);

  /* Weights: a matrix [t->rows, t->cols] in the type the model file stores
   * (util/tensor.h); the backend converts or packs it once into its own
   * layout (w). The tensor stays owned by the caller and may be freed after
   * the call. */
  gboolean (*weight_upload) (WhisperBackend *be, WhisperWeight *w, const WhisperTensor *t,
                             GError **error);
  void (*weight_free) (WhisperBackend *be, WhisperWeight *w);

  /* y[n, w->rows] (row stride y_stride) = x[n, w->cols] (x_stride) W^T + bias,
   * with the flags above. bias may be NULL. */
  void (*linear) (WhisperBackend *be, float *y, int y_stride, const float *x, int x_stride,
                  const WhisperWeight *w, const float *bias, int n, WhisperLinearFlags flags);

  /* y[n, d] = layernorm(x[n, d]) * gamma + beta, eps given (contiguous rows). */
  void (*layer_norm) (WhisperBackend *be, float *y, const float *x, const float *gamma,
                      const float *beta, int n, int d, float eps);

  /* Conv1d with kernel 3, padding 1, then + bias, then exact GELU.
   * x is time-major [n_in_frames, c_in]; w is [c_out, c_in * 3] (PyTorch
   * [c_out, c_in, 3] flattened); y is time-major [n_out_frames, c_out] with
   * n_out_frames = (n_in_frames - 1) / stride + 1. scratch holds at least
   * n_out_frames * c_in * 3 floats. */
  void (*conv1d_gelu) (WhisperBackend *be, float *y, const float *x, int n_in_frames, int c_in,
                       const WhisperWeight *w, const float *bias, int stride, float *scratch);

  /* y[n, d] += pos[n, d] (positional embedding add). */
  void (*add) (WhisperBackend *be, float *y, const float *x, size_t n);

  /* x[i, :] = embedding[tokens[i], :] + positional[pos0 + i, :].
   * tokens is a host array; embedding is a weight matrix [n_vocab, d]. */
  void (*embed) (WhisperBackend *be, float *x, const WhisperWeight *embedding,
                 const float *positional, const int32_t *tokens, int n, int pos0, int d);

  /* Multi-head attention, softmax(q k^T / sqrt(d_head)) v, per head.
   * q[n_q, n_head*d_head] (q_stride), k and v [n_kv, n_head*d_head]
   * (kv_stride), out [n_q, n_head*d_head] (out_stride). With causal >= 0,
   * query i sees keys 0 .. causal + i only; causal < 0: no mask. */
  void (*attention) (WhisperBackend *be, float *out, int out_stride, const float *q, int q_stride,
                     const float *k, const float *v, int kv_stride, int n_q, int n_kv,
                     int n_head, int d_head, int causal);

  /* dst rows (dst_stride) = src rows (src_stride), n_rows x n_cols floats. */
  void (*copy_rows) (WhisperBackend *be, float *dst, int dst_stride, const float *src,
                     int src_stride, int n_rows, int n_cols);

  /* Optional (NULL: the engine downloads the logits and runs
   * whisper_logits_select() on the host). Same contract as that function:
   * logits[n_vocab] (backend memory, may be modified) in, choice out.
   * logits_prepare builds the backend's copy of what a config fixes (the
   * CUDA backend: the suppress mask on the device) into config->backend_cache;
   * call it once the config is set up and again whenever its fields change,
   * before logits_select, which reads only that copy and the step's state.
   * Failures of logits_prepare are kept for check(). logits_release frees
   * the copy (the config may be prepared again after it). */
  void (*logits_select) (WhisperBackend *be, float *logits, WhisperLogitConfig *config,
                         const WhisperLogitState *state, WhisperLogitChoice *choice);
  void (*logits_prepare) (WhisperBackend *be, WhisperLogitConfig *config);
  void (*logits_release) (WhisperBackend *be, WhisperLogitConfig *config);

  /* ---- optional; NULL where a backend has no use for them (CPU) ---- */

  /* Sticky error state. Ops return nothing, so a backend that fails inside
   * one (a kernel launch, a CUDA error) remembers the first failure; this
   * returns FALSE with that error (and keeps it: a failed device stays
   * failed). Call it after the encoder and after a decode loop. */
  gboolean (*check) (WhisperBackend *be, GError **error);

  /* Decode-step graphs (CUDA: one cudaGraph per WhisperGraph, replayed
   * each step).
   *
   *   graph = graph_new (be);            once, by the graph's owner (a stream)
   *   graph_begin (be, graph, error);    every op the calling thread issues
   *   ...the ops of one decode step...   from here is recorded, not run
   *   graph_end (be, error);             runs them all as one graph launch
   *   graph_free (be, graph);            with the owner
   *
   * The engine issues exactly the ops it would issue without a graph, with
   * this step's values (token, position, KV length, KV write row, logit
   * state). graph_end() compares the recorded ops with those `graph` holds:
   * when only kernel arguments differ (the usual case from one decode step
   * to the next) it patches those kernel nodes in place
   * (cudaGraphExecKernelNodeSetParams) and replays the graph; when anything
   * else differs (op sequence, shapes, a cuBLAS call), it captures and
   * instantiates the graph again. So per-step scalars need no device memory
   * of their own: they travel as patched kernel arguments, and a step looks
   * nothing up: the owner hands its graph over.
   *
   * Rules between graph_begin() and graph_end():
   * - no result may be read on the host before graph_end() returns: the
   *   choice of logits_select() and the bytes of download() are written
   *   when graph_end() returns (it waits for the graph only when there is
   *   such an output);
   * - upload() copies the host data at the call (it may be reused at once);
   * - sync() does nothing; free() is deferred to graph_end();
   * - alloc() works; weight_upload() and logits_prepare() are refused
   *   (error at graph_end()).
   * Use one WhisperGraph per kind of step (single-token step, beam step,
   * ...). If graph_end() fails, the step's outputs are undefined and the
   * error is also kept for check(). Graphs not freed by their owner are
   * freed with the backend. */
  WhisperGraph *(*graph_new) (WhisperBackend *be);
  gboolean (*graph_begin) (WhisperBackend *be, WhisperGraph *graph, GError **error);
  gboolean (*graph_end) (WhisperBackend *be, GError **error);
  void (*graph_free) (WhisperBackend *be, WhisperGraph *graph);

  /* Word timestamps (optional; NULL: the engine copies the head's q and k
   * slices back and computes the same on the host). One head's attention
   * probabilities, softmax over the first n_kv keys of
   * (q_h k_h^T) / sqrt(d_head): probs[n_q, n_kv] (probs_stride) from
   * q[n_q, .] (q_stride) and k[n_kv, .] (kv_stride), head h's columns
   * h*d_head .. (h+1)*d_head. Only these probabilities leave the op. */
  void (*attention_probs) (WhisperBackend *be, float *probs, int probs_stride, const float *q,
                           int q_stride, const float *k, int kv_stride, int n_q, int n_kv,
                           int head, int d_head);

  /* Optional (NULL: the steps' cross-attention reads the float32 K/V):
   * keys and values kept in float16 for the cross-attention of decode
   * steps, which reads every one of them at every step. The CPU backend
   * offers these in precision=fast only. half_kv_write rounds kv[n, 2 *
   * n_head * d_head] (kv_stride floats apart: a row's keys, then its
   * values) to float16 into dst (2 * n * n_head * d_head halves),
   * head-major: K[n_head][n][d_head], then V the same. attention_half_kv is
   * attention() without a mask, its keys and values the n_kv rows of such
   * a copy. */
  void (*half_kv_write) (WhisperBackend *be, uint16_t *dst, const float *kv, int kv_stride, int n,
                         int n_head, int d_head);
  void (*attention_half_kv) (WhisperBackend *be, float *out, int out_stride, const float *q,
                             int q_stride, const uint16_t *kv_half, int n_q, int n_kv,
                             int n_head, int d_head);

  /* Memory like alloc()'s (zeroed, freed with free()) that takes room only
   * where it is written: the CPU backend's whisper_aligned_alloc_sparse()
   * (util/aligned-memory.h). The decoder states' caches, sized for
   * n_text_ctx tokens and the longest encoder window, come from it: a live
   * decode writes a few dozen rows of 448, and a buffered encoder window a
   * fraction of 1500 frames. NULL: alloc() is used. */
  float *(*alloc_sparse) (WhisperBackend *be, size_t n_floats, GError **error);
  /* The n_floats at ptr (inside a block of alloc_sparse()) are not needed
   * any more: their memory may be handed back, and they read as zeros or
   * keep their values. The CPU backend's whisper_aligned_discard()
   * (util/aligned-memory.h); the decoder pool discards the caches of the
   * states it holds unlent. NULL: nothing is handed back. */
  void (*discard) (WhisperBackend *be, void *ptr, size_t n_floats);
} WhisperBackendOps;

struct _WhisperBackend {
  const WhisperBackendOps *ops;
  int n_threads;
  /* linear with 1 to max_exact_rows input rows gives every output row the
   * bits of its one-row call (at least 1): the bound of decode steps
   * batched across streams (whisper-step-batcher.h) */
  int max_exact_rows;
  /* TRUE (with half_kv_write and attention_half_kv): every cross-attention
   * reads the float16 copy of the K/V, prompt passes included, and the
   * decoder keeps the float32 K/V only for a state that asks for them
   * (WhisperDecoderState.keep_cross_f32: word timestamps). The CPU backend
   * in precision=int8. FALSE: the float16 copy serves the decode steps
   * alone (precision=fast). */
  gboolean half_kv_only;
};

/* How the CPU backend computes its linears. EXACT: float32. BF16: the
 * encoder's and prompt passes' products in bfloat16 on oneDNN
 * (src/backend/cpu/cpu-bf16-matmul.h); creation fails when this build or
 * this CPU cannot. INT8: every float weight quantized to int8 at load, the
 * products in integers (src/backend/cpu/cpu-int8.h). A model's int8
 * tensors stay int8 in all three. */
typedef enum {
  WHISPER_CPU_PRECISION_EXACT = 0,
  WHISPER_CPU_PRECISION_BF16 = 1,
  WHISPER_CPU_PRECISION_INT8 = 2,
} WhisperCpuPrecision;

WhisperBackend *whisper_backend_cpu_new (int n_threads, WhisperCpuPrecision precision,
                                         GError **error);

/* Loads the CUDA module (libwhisper-engine-cuda.so) and creates a backend on
 * GPU 0. Fails with a clear error when the module, the driver or a device is
 * missing. */
WhisperBackend *whisper_backend_cuda_new (GError **error);

/* Entry point the CUDA module exports (name: whisper_backend_cuda_module_new). */
typedef WhisperBackend *(*WhisperBackendModuleNewFunc) (int abi_version, GError **error);

static inline void
whisper_backend_destroy (WhisperBackend *be)
{
  if (be)
    be->ops->destroy (be);
}

G_END_DECLS
