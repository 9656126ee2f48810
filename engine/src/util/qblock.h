/* qblock.h: whisper.cpp's (ggml's) quantized blocks, kept as the model file
 * stores them.
 *
 * The 32-value types: each block holds 32 consecutive values of a row: a float16 scale d (and a
 * float16 minimum m for the _1 types), then the quants. Layouts as ggml
 * defines them (block_q4_0 ... block_q8_0 in
 * https://github.com/ggml-org/ggml/blob/master/src/ggml-common.h, decoded by
 * dequantize_row_q4_0 ... in src/ggml-quants.c):
 *
 *   q4_0  d, qs[16]          value j = d * ((qs[j] & 15) - 8),  j + 16: high nibble
 *   q4_1  d, m, qs[16]       value j = d * (qs[j] & 15) + m,   j + 16: high nibble
 *   q5_0  d, qh[4], qs[16]   as q4_0 with bit j of qh (little-endian) as bit 4 of
 *                            value j, minus 16 instead of 8
 *   q5_1  d, m, qh[4], qs[16]  as q4_1 with the fifth bit of q5_0
 *   q8_0  d, qs[32] (int8)   value j = d * qs[j]
 *
 * So every type decodes as value = d * (code - offset) + m with an unsigned
 * code (0..15, 0..31, or the int8 plus 128) and m = 0 for the _0 types: the
 * form the CPU kernels use (backend/cpu/cpu-qblock.h).
 *
 * The k-quants: super-blocks of 256 values (block_q4_K, block_q5_K,
 * block_q6_K in ggml-common.h, decoded by dequantize_row_q4_K ... and
 * get_scale_min_k4 in src/ggml-quants.c):
 *
 *   q4_K  d, dmin, scales[12], qs[128]   (144 bytes) 8 sub-blocks of 32 with
 *         a 6-bit scale sc and min m each (packed in scales[12]); value =
 *         (d * sc) * code - dmin * m, code 0..15: the 64 values of
 *         sub-blocks 2i, 2i + 1 are the low, then the high nibbles of
 *         qs[32 i .. 32 i + 32)
 *   q5_K  d, dmin, scales[12], qh[32], qs[128]   (176 bytes) as q4_K with
 *         bit s of qh[l] as bit 4 of value l of sub-block s
 *   q6_K  ql[128], qh[64], scales[16] (int8), d   (210 bytes) 16 sub-blocks
 *         of 16 with an int8 scale each; value = d * sc * (code - 32), code
 *         0..63: in each half of 128 values (ql + 64 h, qh + 32 h), value
 *         32 c + l (c = 0..3, l < 32) has the low (c < 2) or high nibble of
 *         ql[32 (c & 1) + l] and bits 2c, 2c + 1 of qh[l] as bits 4, 5
 *
 * The kernels take every type 32 values at a time (a "sub-block" below:
 * the block itself for the 32-value types) as code, scale and offset term
 * per half of 16: value i = d[i / 16] * code[i] + c[i / 16]
 * (whisper_qblock_unpack_sub). */
#pragma once

#include "tensor.h"

G_BEGIN_DECLS

#define WHISPER_QBLOCK_VALUES 32 /* values of a block, a k-quant's sub-block */
#define WHISPER_QBLOCK_K_VALUES 256 /* values of a k-quant's super-block */

/* ggml's type ids (enum ggml_type) of the block types kept as stored. */
enum {
  WHISPER_GGML_TYPE_Q4_0 = 2,
  WHISPER_GGML_TYPE_Q4_1 = 3,
  WHISPER_GGML_TYPE_Q5_0 = 6,
  WHISPER_GGML_TYPE_Q5_1 = 7,
  WHISPER_GGML_TYPE_Q8_0 = 8,
  WHISPER_GGML_TYPE_Q4_K = 12,
  WHISPER_GGML_TYPE_Q5_K = 13,
  WHISPER_GGML_TYPE_Q6_K = 14,
};

/* TRUE for WHISPER_DTYPE_Q4_0 ... Q8_0 and Q4_K ... Q6_K. */
gboolean whisper_dtype_is_qblock (WhisperDType type);
/* TRUE for the k-quants Q4_K, Q5_K, Q6_K. */
gboolean whisper_qblock_is_k (WhisperDType type);
/* Bytes of one block of `type` (a block type; a super-block for the
 * k-quants). */
gsize whisper_qblock_bytes (WhisperDType type);
/* Values of one block of `type`: 32, or 256 for the k-quants. */
int whisper_qblock_values (WhisperDType type);
/* The dtype of ggml type id `ggml_type`; FALSE when it is not a block type
 * this engine keeps. */
gboolean whisper_qblock_from_ggml (gint32 ggml_type, WhisperDType *type);

/* dst[0 .. whisper_qblock_values (type) * n_blocks) = the values of
 * n_blocks blocks of `type`, computed as ggml's dequantize_row_* does. */
void whisper_qblock_dequantize (WhisperDType type, const void *blocks, gsize n_blocks,
                                float *dst);

/* One block's 32 unsigned codes, scale d and minimum m (0 for the _0
 * types): value j = d * (code[j] - whisper_qblock_offset (type)) + m. The
 * 32-value types only. */
void whisper_qblock_unpack (WhisperDType type, const void *block, guint8 *code, float *d,
                            float *m);
/* 8 (q4_0), 16 (q5_0), 128 (q8_0: the int8 plus 128), 0 (q4_1, q5_1);
 * 32 (q6_K), 0 (q4_K, q5_K). */
int whisper_qblock_offset (WhisperDType type);

/* Values [32 sub, 32 sub + 32) of a row of blocks of `type` (any block
 * type): their unsigned codes (0..15, 0..31, 0..63 or 0..255) and, for each
 * half of 16, a scale d and term c: value j = d[j / 16] * code[j] +
 * c[j / 16], with c = m - offset * d (the 32-value types, d the block's
 * scale), -(dmin * m) (q4_K, q5_K: d = the super-block's d times the
 * sub-block's scale) or -32 * d (q6_K: d = its d times the 16 values'
 * scale). */
void whisper_qblock_unpack_sub (WhisperDType type, const void *row, gsize sub, guint8 *code,
                                float d[2], float c[2]);

/* FALSE when a block's scale (or minimum; d and dmin of a k-quant
 * super-block) is not a finite float16 (NaN or infinity: no quantizer writes
 * one), with the first such block's index in *bad_block. */
gboolean whisper_qblock_check (WhisperDType type, const void *blocks, gsize n_blocks,
                               gsize *bad_block);

G_END_DECLS
