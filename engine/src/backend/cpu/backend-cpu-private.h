/* backend-cpu-private.h: the CPU backend's state and what its files share
 * (backend-cpu.c, backend-cpu-linear.c, backend-cpu-attention.c). */
#pragma once

#include "backend.h"
#include "cpu-amx-linear.h"
#include "cpu-bf16-matmul.h"
#include "cpu-int8.h"
#include "cpu-kernels.h"
#include "cpu-qblock.h"
#include "cpu-sgemm.h"
#include "aligned-memory.h"
#include "thread-pool.h"
#include "whisper-error.h"

#include <math.h>
#include <string.h>

G_BEGIN_DECLS

/* F16_PACKED: float16 in blocks of rows (cpu-gemv-packed.c), for every
 * float16 matrix whose shape allows it; F16 row-major for the others.
 * I8: a WhisperCpuInt8Weight (cpu-int8.h, cpu-int8-linear.c). */
enum { WEIGHT_F32 = 0, WEIGHT_F16 = 1, WEIGHT_F16_PACKED = 2, WEIGHT_I8 = 3 };
/* ggml's blocks as stored (backend-cpu-qblock.c): WEIGHT_QBLOCK plus the
 * block type's WhisperDType */
enum { WEIGHT_QBLOCK = 64 };
#define WEIGHT_IS_QBLOCK(dtype) ((dtype) >= WEIGHT_QBLOCK)

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
  /* int8 linears (cpu-int8-linear.c): the kernel path chosen at creation;
   * int8_quantize: precision=int8, float weights quantized at load;
   * int8_x, int8_scale: the current few-row call's quantized input rows */
  WhisperCpuInt8Isa int8_isa;
  gboolean int8_quantize;
  int8_t *int8_x;
  size_t int8_x_size;
  float *int8_scale;
  size_t int8_scale_size;
  /* ggml block weights: the kernel set chosen at creation, and the
   * current call's input rows quantized (backend-cpu-qblock.c) */
  const WhisperCpuQblockKernels *qblock;
  void *qx;
  size_t qx_size;
  /* cpu_ops, plus the float16 cross K/V ops in precision=fast */
  WhisperBackendOps ops;
} WhisperBackendCpu;

/* `buf` (*capacity elements of elem_size bytes), or a larger one in its
 * place when it holds fewer than n (the old contents dropped): assign the
 * result back. `what` names the elements in the error. */
void *whisper_cpu_grow_buffer (void *buf, size_t *capacity, size_t n, size_t elem_size,
                               const char *what);
/* Thread `thread`'s scratch of at least n floats. */
float *whisper_cpu_thread_scratch (WhisperBackendCpu *self, int thread, size_t n);
/* dst = rows [r0, r1) of the weight as float32, row-major, whatever its
 * storage. */
void whisper_cpu_weight_rows_f32 (const WhisperWeight *w, int r0, int r1, float *dst);

/* backend-cpu-linear.c: WhisperBackendOps.linear */
void whisper_cpu_backend_linear (WhisperBackend *be, float *y, int y_stride, const float *x,
                                 int x_stride, const WhisperWeight *w, const float *bias, int n,
                                 WhisperLinearFlags flags);

/* cpu-int8-linear.c: whether the int8 weights take tensor t for w (unless
 * w->keep_float: an int8 tensor, or a float one with precision=int8), the
 * upload, and linear on a WEIGHT_I8 weight. */
gboolean whisper_cpu_int8_takes (const WhisperBackendCpu *self, const WhisperWeight *w,
                                 const WhisperTensor *t);
gboolean whisper_cpu_int8_weight_upload (WhisperBackendCpu *self, WhisperWeight *w,
                                         const WhisperTensor *t, GError **error);
void whisper_cpu_int8_linear (WhisperBackendCpu *self, float *y, int y_stride, const float *x,
                              int x_stride, const WhisperWeight *w, const float *bias, int n,
                              WhisperLinearFlags flags);
/* backend-cpu-qblock.c: weights in ggml's blocks (WEIGHT_QBLOCK) */
gboolean whisper_cpu_qblock_weight_upload (WhisperWeight *w, const WhisperTensor *t,
                                           GError **error);
void whisper_cpu_qblock_linear (WhisperBackendCpu *self, float *y, int y_stride, const float *x,
                                int x_stride, const WhisperWeight *w, const float *bias, int n,
                                WhisperLinearFlags flags);

/* backend-cpu-attention.c: WhisperBackendOps.attention, copy_rows,
 * half_kv_write, attention_half_kv, attention_probs */
void whisper_cpu_backend_attention (WhisperBackend *be, float *out, int out_stride, const float *q,
                                    int q_stride, const float *k, const float *v, int kv_stride,
                                    int n_q, int n_kv, int n_head, int d_head, int causal);
void whisper_cpu_backend_copy_rows (WhisperBackend *be, float *dst, int dst_stride,
                                    const float *src, int src_stride, int n_rows, int n_cols);
void whisper_cpu_backend_half_kv_write (WhisperBackend *be, uint16_t *dst, const float *kv,
                                        int kv_stride, int n, int n_head, int d_head);
void whisper_cpu_backend_attention_half_kv (WhisperBackend *be, float *out, int out_stride,
                                            const float *q, int q_stride, const uint16_t *kv_half,
                                            int n_q, int n_kv, int n_head, int d_head);
void whisper_cpu_backend_attention_probs (WhisperBackend *be, float *probs, int probs_stride,
                                          const float *q, int q_stride, const float *k,
                                          int kv_stride, int n_q, int n_kv, int head, int d_head);

G_END_DECLS
