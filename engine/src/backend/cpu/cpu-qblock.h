/* cpu-qblock.h: matrix products with ggml's block weights (util/qblock.h)
 * kept as stored, in integer arithmetic, as whisper.cpp computes them.
 *
 * The input rows are quantized per block of 32 values to int8 with one
 * float scale (ggml's q8_0 / q8_1: d = max|x| / 127, q = round(x / d),
 * plus s = d * sum(q) for the types with a minimum). With a weight value
 * w = dw * (code - offset) + m (qblock.h), a block's share of a dot
 * product is
 *
 *   dw * dx * sum(code * q) + (m - offset * dw) * s
 *
 * an unsigned-by-signed byte product summed in int32: one vpdpbusd on
 * AVX-512 VNNI, vpmaddubsw + vpmaddwd on AVX2 (for q8_0, whose codes
 * reach 255, AVX2 takes |w| and q with w's sign instead, which cannot
 * saturate). In `dot` each output row's sum runs over the blocks in
 * order, the same for any number of input rows, so a row has the bits of
 * its one-row call; `gemm` (many rows) sums the minimum and offset terms
 * apart.
 *
 * The k-quants (q4_K, q5_K, q6_K) go 32 values at a time too, each such
 * sub-block in the same form (whisper_qblock_unpack_sub: q4_K / q5_K as
 * q4_1 / q5_1 with dw = d * sc and m = -dmin * min, q6_K with a scale per
 * 16 values and offset 32), against input rows quantized as whisper.cpp's
 * vec_dot for these types takes them (ggml's q8_K: one scale per 256
 * values, d = 1 / (-127 / the value of largest magnitude), quants at most
 * 127). q6_K's scale per half is applied to each half's four int32 lanes,
 * its offset term through the sums of the 16-value halves (s16); its codes
 * reach 63, so AVX2 adds only two groups of its vpmaddubsw pairs (each at
 * most 2 * 63 * 127) in int16 before widening to int32, not four.
 *
 * Kernel sets: portable C, AVX2 (AVX2 + FMA + F16C), AVX-512 (F, BW, VL
 * and VNNI). The best the CPU has is chosen when a backend is created;
 * WHISPER_CPU_QBLOCK=portable|avx2|avx512 picks one (an error names the
 * setting where the CPU lacks it). */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "tensor.h"

G_BEGIN_DECLS

/* Input rows quantized in blocks: row i's block b has scale d[i * n_blocks
 * + b], s (d * sum of its quants) at the same index, and its 32 quants
 * from q + (i * n_blocks + b) * 32; for the k-quants also s16 (d * the sum
 * of each half of 16 quants, at 2 (i * n_blocks + b) and the next), NULL
 * for the 32-value types. The k-quants' n_blocks counts blocks of 32 too
 * (8 a super-block). */
typedef struct {
  int n_blocks;
  const float *d;
  const float *s;
  const int8_t *q;
  const float *s16;
} WhisperCpuQRows;

/* out[(i - i0) * out_stride] = sum over the blocks of the weight row w
 * (n_blocks blocks of `type`) times input row i, for i in [i0, i1). */
typedef void (*WhisperCpuQblockDotFunc) (WhisperDType type, const uint8_t *w, int n_blocks,
                                         const WhisperCpuQRows *x, int i0, int i1, float *out,
                                         size_t out_stride);

/* Many input rows: y[i * y_stride + r] = (accumulate ? that : 0) + the
 * sum of weight row r (of the matrix w, n_blocks blocks a row) by input
 * row i, for r in [r0, r1), i in [i0, i1), in register tiles (sums in
 * another order than dot's). scratch holds
 * WHISPER_CPU_QBLOCK_GEMM_SCRATCH (n_blocks, i1 - i0) floats. */
typedef void (*WhisperCpuQblockGemmFunc) (WhisperDType type, const uint8_t *w, int n_blocks,
                                          int r0, int r1, const WhisperCpuQRows *x, int i0,
                                          int i1, float *y, size_t y_stride,
                                          gboolean accumulate, float *scratch);
/* gemv: 4 rows of 2 n_blocks terms and a column of n_rows; gemm: a panel
 * of 16 rows unpacked (cpu-qblock-x86.h), 32 bytes and 4 floats a block,
 * and the 16 sums of 256 input rows */
#define WHISPER_CPU_QBLOCK_GEMM_SCRATCH(n_blocks, n_rows) \
  (192 * (size_t) (n_blocks) + 16 * 256 + (n_rows))

typedef struct {
  const char *name; /* "portable", "avx2", "avx512" */
  WhisperCpuQblockDotFunc dot;
  WhisperCpuQblockGemmFunc gemm;
  /* gemm's contract for the few rows of decode steps: each output row has
   * the bits it gets with any other number of input rows (the same tiles
   * down to one row) */
  WhisperCpuQblockGemmFunc gemv;
} WhisperCpuQblockKernels;

/* The kernel set WHISPER_CPU_QBLOCK names, else the best the CPU has;
 * NULL with an error naming the setting when it is unknown or the CPU
 * lacks it. */
const WhisperCpuQblockKernels *whisper_cpu_qblock_select (GError **error);

/* The sets of each file (NULL where the build has no x86 code). */
const WhisperCpuQblockKernels *whisper_cpu_qblock_portable (void);
const WhisperCpuQblockKernels *whisper_cpu_qblock_avx2 (void);
const WhisperCpuQblockKernels *whisper_cpu_qblock_avx512 (void);
/* Whether this CPU runs the set's instructions. */
gboolean whisper_cpu_qblock_avx512_supported (void);

/* Quantizes row i of x (x_stride floats apart, cols a multiple of 32) for
 * i in [i0, i1) into rows (laid out as WhisperCpuQRows, writable). */
void whisper_cpu_qblock_quantize_rows (float *d, float *s, int8_t *q, const float *x,
                                       int x_stride, int cols, int i0, int i1);
/* The same for the k-quants (cols a multiple of 256), as ggml's
 * quantize_row_q8_K_ref: per 256 values d = 1 / (-127 / v) with v the
 * value of largest magnitude (the first of equals), q = min(127,
 * round-half-even(x * -127 / v)); d (the same for the 8 blocks of 32), s
 * and s16 as WhisperCpuQRows has them. */
void whisper_cpu_qblock_quantize_rows_k (float *d, float *s, float *s16, int8_t *q,
                                         const float *x, int x_stride, int cols, int i0,
                                         int i1);

G_END_DECLS
