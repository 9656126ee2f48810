/* qblock.h: whisper.cpp's (ggml's) quantized blocks, kept as the model file
 * stores them.
 *
 * Each block holds 32 consecutive values of a row: a float16 scale d (and a
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
 * form the CPU kernels use (backend/cpu/cpu-qblock.h). */
#pragma once

#include "tensor.h"

G_BEGIN_DECLS

#define WHISPER_QBLOCK_VALUES 32

/* ggml's type ids (enum ggml_type) of the block types kept as stored. */
enum {
  WHISPER_GGML_TYPE_Q4_0 = 2,
  WHISPER_GGML_TYPE_Q4_1 = 3,
  WHISPER_GGML_TYPE_Q5_0 = 6,
  WHISPER_GGML_TYPE_Q5_1 = 7,
  WHISPER_GGML_TYPE_Q8_0 = 8,
};

/* TRUE for WHISPER_DTYPE_Q4_0 ... Q8_0. */
gboolean whisper_dtype_is_qblock (WhisperDType type);
/* Bytes of one block of `type` (a block type). */
gsize whisper_qblock_bytes (WhisperDType type);
/* The dtype of ggml type id `ggml_type`; FALSE when it is not a block type
 * this engine keeps. */
gboolean whisper_qblock_from_ggml (gint32 ggml_type, WhisperDType *type);

/* dst[0 .. 32 * n_blocks) = the values of n_blocks blocks of `type`. */
void whisper_qblock_dequantize (WhisperDType type, const void *blocks, gsize n_blocks,
                                float *dst);

/* One block's 32 unsigned codes, scale d and minimum m (0 for the _0
 * types): value j = d * (code[j] - whisper_qblock_offset (type)) + m. */
void whisper_qblock_unpack (WhisperDType type, const void *block, guint8 *code, float *d,
                            float *m);
/* 8 (q4_0), 16 (q5_0), 128 (q8_0: the int8 plus 128), 0 (q4_1, q5_1). */
int whisper_qblock_offset (WhisperDType type);

/* FALSE when a block's scale (or minimum) is not a finite float16 (NaN or
 * infinity: no quantizer writes one), with the first such block's index in
 * *bad_block. */
gboolean whisper_qblock_check (WhisperDType type, const void *blocks, gsize n_blocks,
                               gsize *bad_block);

G_END_DECLS
