/* kernels.h: the C interface of the CUDA kernels (the .cu files in kernels/).
 *
 * Every kernel takes exactly one parameter: one of the argument structs
 * below, by value. A `wc_*_plan()` function (extern "C", defined next to the
 * kernel) fills a WcLaunch: the kernel's address and its launch shape. The
 * host code (engine/backend-cuda*.c, plain C) then launches it with
 * cudaLaunchKernel(launch.func, grid, block, &argptr, smem, stream), or adds
 * it to a CUDA graph, or patches the argument struct of a graph node: one
 * argument struct per kernel is what makes a decode step's kernels patchable
 * in place (cudaGraphExecKernelNodeSetParams).
 *
 * fp16 data is passed as uint16_t (IEEE binary16 bits). All matrices are
 * row-major; strides count elements. Each family has its CPU twin in
 * engine/src/backend/cpu/ (named in each .cu file).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const void *func; /* __global__ function */
  unsigned grid[3];
  unsigned block[3];
  unsigned smem;    /* dynamic shared memory, bytes */
} WcLaunch;

/* ---- layer-norm.cu: y = (x - mean) / sqrt(var + eps) * gamma + beta per row */
typedef struct {
  float *y;
  const float *x;
  const float *gamma, *beta;
  int n, d;
  float eps;
} WcLayerNormArgs;
void wc_layer_norm_plan (WcLaunch *l, const WcLayerNormArgs *a);

/* ---- gemv.cu: linear for a few rows (n <= WC_GEMV_MAX_N), fp16 weights,
 * fp32 activations, fp32 accumulation, fused epilogue:
 * t = x W^T; if ACCUMULATE t = y + t; t += bias; if GELU t = gelu(t); y = t. */
#define WC_GEMV_MAX_N 8
#define WC_ACT_ACCUMULATE 1
#define WC_ACT_GELU 2
typedef struct {
  float *y;
  const float *x;
  const uint16_t *w; /* [rows, cols] */
  const float *bias; /* [rows] or NULL */
  int y_stride, x_stride;
  int rows, cols, n;
  int flags;         /* WC_ACT_* */
  int vec;           /* 1: 16-byte loads (cols % 8 == 0, x 16-byte aligned, x_stride % 4 == 0) */
} WcGemvArgs;
void wc_gemv_plan (WcLaunch *l, const WcGemvArgs *a);

/* ---- bias-gelu.cu: epilogue of a cuBLAS GEMM, in place on y:
 * y = y + bias (bias may be NULL), then exact GELU if gelu. */
typedef struct {
  float *y;
  const float *bias;
  int y_stride, rows, n;
  int gelu;
} WcBiasActArgs;
void wc_bias_act_plan (WcLaunch *l, const WcBiasActArgs *a);

/* ---- convert.cu: fp32 -> fp16 (round to nearest even):
 * dst[i * cols + c] = src[i * src_stride + c] (activations before a GEMM,
 * and weights of stored types other than float16 at upload, with rows = 1).
 * With dst_lo, also the remainder: dst_lo = fp16(src - dst), so that hi + lo
 * carries about 22 bits of the fp32 value ("split" precision: two GEMMs, hi
 * and lo, one accumulator). Values beyond fp16's range saturate at +-65504
 * (wc_split_half in common.cuh); NaN stays NaN. */
typedef struct {
  uint16_t *dst;
  uint16_t *dst_lo; /* or NULL */
  const float *src;
  int rows, cols, src_stride;
} WcToHalfArgs;
void wc_to_half_plan (WcLaunch *l, const WcToHalfArgs *a);

/* ---- add.cu: y[i] += x[i] */
typedef struct {
  float *y;
  const float *x;
  size_t n;
} WcAddArgs;
void wc_add_plan (WcLaunch *l, const WcAddArgs *a);

/* ---- embed.cu: x[i, :] = emb[tokens[i], :] + pos[pos0 + i, :], for up to
 * WC_EMBED_MAX tokens per launch (the ids travel in the arguments). */
#define WC_EMBED_MAX 64
typedef struct {
  float *x;
  const uint16_t *emb; /* [n_vocab, d] fp16 */
  const float *pos;    /* [n_ctx, d] */
  int n, pos0, d;
  int32_t tokens[WC_EMBED_MAX];
} WcEmbedArgs;
void wc_embed_plan (WcLaunch *l, const WcEmbedArgs *a);

/* ---- conv1d.cu: im2col of a kernel-3, padding-1 convolution, to fp16:
 * dst[t, c * 3 + k] = x[t * stride + k - 1, c] (0 outside), t < n_out. */
typedef struct {
  uint16_t *dst;    /* [n_out, 3 * c_in] */
  uint16_t *dst_lo; /* remainder, as in WcToHalfArgs, or NULL */
  const float *x;   /* [n_in, c_in] time-major */
  int n_in, c_in, n_out, stride;
} WcIm2colArgs;
void wc_im2col_plan (WcLaunch *l, const WcIm2colArgs *a);

/* ---- attention.cu / attention-split.cu: softmax(q k^T / sqrt(d_head)) v
 * per head; causal >= 0: query i sees keys 0 .. causal + i. */
typedef struct {
  float *out;
  const float *q, *k, *v;
  int out_stride, q_stride, kv_stride;
  int n_q, n_kv, n_head, d_head;
  int causal;
  float scale_log2; /* log2(e) / sqrt(d_head) */
} WcAttnArgs;

/* Flash kernel (attention.cu): d_head == 64, strides % 4 == 0, 16-byte
 * aligned pointers. Blocks of WC_FLASH_BQ queries, keys streamed through
 * shared memory with an online softmax; no score matrix in global memory.
 * 32 x 32: 128 threads and about 130 registers each, so three blocks fit on
 * a multiprocessor and the encoder's 47 x n_head blocks (1500 frames) run in
 * one wave on an H200's 132 multiprocessors (64 x 64 took 197 registers,
 * one block per multiprocessor, and left a second wave of 12 blocks). */
#define WC_FLASH_BQ 32
#define WC_FLASH_BK 32
int wc_flash_supported (const WcAttnArgs *a);
void wc_flash_plan (WcLaunch *l, const WcAttnArgs *a);

/* Split kernel (attention-split.cu): any d_head <= 128, any alignment;
 * for few queries (decode). Each block handles one (split of the keys, head,
 * query) and writes a partial (max, sum, acc[d_head]); the combine kernel
 * merges the splits. The grid depends on n_q, n_head and n_split only, never
 * on n_kv, so a decode step's graph keeps its shape as the cache grows. */
#define WC_SPLIT_MAX_D 128
#define WC_SPLIT_MAX 32
typedef struct {
  WcAttnArgs a;
  float *partial; /* [n_q, n_head, n_split, d_head + 2] */
  int n_split;
} WcAttnSplitArgs;
typedef struct {
  float *out;
  const float *partial;
  int out_stride, n_q, n_head, d_head, n_split;
} WcAttnCombineArgs;
void wc_attn_split_plan (WcLaunch *l, const WcAttnSplitArgs *a);
void wc_attn_combine_plan (WcLaunch *l, const WcAttnCombineArgs *a);

/* ---- attention-probs.cu: one head's attention probabilities (word
 * timestamps): probs[i, j] = softmax_j ((q_h[i] . k_h[j]) * scale), j < n_kv. */
typedef struct {
  float *probs;
  const float *q, *k;
  int probs_stride, q_stride, kv_stride;
  int n_q, n_kv, head, d_head;
  float scale; /* 1 / sqrt(d_head) */
} WcAttnProbsArgs;
void wc_attention_probs_plan (WcLaunch *l, const WcAttnProbsArgs *a);

/* ---- copy-rows.cu: dst rows = src rows, n_rows x n_cols floats */
typedef struct {
  float *dst;
  const float *src;
  int dst_stride, src_stride, n_rows, n_cols;
} WcCopyRowsArgs;
void wc_copy_rows_plan (WcLaunch *l, const WcCopyRowsArgs *a);

/* ---- logits.cu: logit filters and greedy choice (whisper-logits.c):
 * pass 1 (WC_LOGITS_BLOCKS blocks) applies the masks in place and reduces
 * per block; pass 2 (one block) merges, applies the timestamp rule
 * logsumexp(ts) > max(text) and writes the choice. */
#define WC_LOGITS_BLOCKS 64
#define WC_LOGITS_MAX_RANGES 8
typedef struct {
  double text_sum, ts_sum; /* sum of exp(x - max) over the part */
  float text_max, ts_max;
  int text_arg, ts_arg;    /* first index of the maximum */
} WcLogitPartial;
typedef struct {
  int32_t token;
  float logprob;
} WcChoice;
typedef struct {
  float *logits;
  const uint32_t *mask; /* static suppress bitmask, n_vocab bits, or NULL */
  WcLogitPartial *partial;
  int n_vocab, ts_begin;
  int n_ranges;
  int range[WC_LOGITS_MAX_RANGES][2]; /* per-step suppressed [from, to) */
} WcLogitsMaskArgs;
typedef struct {
  const WcLogitPartial *partial;
  WcChoice *out;        /* device-visible (mapped host memory) */
  int n_partial;
  int timestamp_rule;   /* apply the logsumexp rule */
} WcLogitsChooseArgs;
void wc_logits_mask_plan (WcLaunch *l, const WcLogitsMaskArgs *a);
void wc_logits_choose_plan (WcLaunch *l, const WcLogitsChooseArgs *a);

#ifdef __cplusplus
}
#endif
