/* cpu-amx-linear.h: linears of a few input rows (decode steps, short
 * prompt passes) on AMX tiles in bfloat16, for precision=fast on CPUs with
 * AMX-BF16 (Intel Sapphire Rapids and later).
 *
 * Why: precision=exact's matrix-vector kernels (cpu-kernels.h) widen every
 * float16 weight to float32 and spend one FMA lane per weight and row; with
 * the 15 rows of three streams' beams that is compute-bound at about half
 * of what the 2-core machine's memory could feed. One TDPBF16PS does
 * 16 x 16 x 32 products, so here the weights are only read: the product
 * costs about what reading the weight once costs, for 1 to 64 rows.
 *
 * Numerics: W rounded to bfloat16 (8 bits of mantissa, nearest, ties to
 * even) once; x split into two bfloat16 parts, x ~ hi + lo with
 * hi = bf16(x), lo = bf16(x - hi) (16 bits of mantissa in all), and both
 * parts multiplied with W, so the inputs' rounding is W's alone; products
 * summed in float32 by the tile unit, K in chunks of 32 in order (Intel's
 * description of TDPBF16PS: the Intel 64 and IA-32 Architectures Software
 * Developer's Manual, volume 2, "TDPBF16PS";
 * https://www.intel.com/content/www/us/en/developer/articles/technical/intel-sdm.html).
 * With x rounded like W (one part) the words drift further from
 * faster-whisper's float32 than with two parts (README.md, "Precision");
 * the second part costs tile work, not memory.
 *
 * Row independence: every output value is made by the same sequence of
 * tile instructions from its own input row and weight column, whatever the
 * other rows are, how many there are (they are padded to 16 with zeros) or
 * how the output rows are split over threads. So a row gets the bits of
 * its one-row call for any row count: decode steps batched across streams
 * keep the tokens each stream gets alone (whisper-step-batcher.h).
 *
 * Packed layout of W [rows, cols] (cols a multiple of 32): groups of 64
 * output rows (the last padded with zero rows); in a group, for each chunk
 * c of 32 columns, four B tiles, one per 16 rows j: tile row p holds, for
 * each of the 16 rows, the pair W[r][32c + 2p], W[r][32c + 2p + 1]
 * (the pair layout TDPBF16PS reads). A group is one sequential stream. */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

/* Output rows per packed group: the tasks split the rows on groups. */
#define WHISPER_CPU_AMX_GROUP_ROWS 64
/* Input rows one call takes at most (the backend's max_exact_rows when
 * AMX is used). */
#define WHISPER_CPU_AMX_MAX_ROWS 64

/* TRUE when the CPU has AMX-TILE and AMX-BF16, Linux lets this process use
 * the tile data (arch_prctl ARCH_REQ_XCOMP_PERM, asked once here), and
 * neither WHISPER_CPU_GENERIC, WHISPER_CPU_NO_AVX512 nor WHISPER_CPU_NO_AMX
 * is set. Decided once per process. */
gboolean whisper_cpu_amx_available (void);

/* Shapes the packing takes: cols a multiple of 32. */
gboolean whisper_cpu_amx_packable (int rows, int cols);
/* Elements (uint16_t) of the packed copy: rows rounded up to 64, times cols. */
size_t whisper_cpu_amx_packed_elements (int rows, int cols);
/* Rows [r0, r1) of W [rows, cols], given as float32 row-major
 * [r1 - r0, cols], rounded to bfloat16 into their places in dst
 * (whisper_cpu_amx_packed_elements, zeroed first for the padding rows):
 * a weight is packed a block of rows at a time, never widened whole. */
void whisper_cpu_amx_pack_rows (uint16_t *dst, const float *w_rows, int r0, int r1, int cols);

/* Staged input rows: n rows of x (row stride x_stride floats) as their
 * two bfloat16 parts, each dense [ceil16(n), cols] (hi, then lo), the rows
 * past n zeros. dst holds whisper_cpu_amx_staged_elements (n, cols). */
size_t whisper_cpu_amx_staged_elements (int n, int cols);
void whisper_cpu_amx_stage (uint16_t *dst, const float *x, int x_stride, int n, int cols);

/* For output rows [r0, r1) (r0 a multiple of 64, r1 <= rows) and every
 * input row i < n (1 <= n <= WHISPER_CPU_AMX_MAX_ROWS):
 * y[i * y_stride + r] = (accumulate ? y[...] : 0) + sum_k xb[i][k] W[r][k],
 * with xb from whisper_cpu_amx_stage and w from whisper_cpu_amx_pack.
 * Only on a thread of a process for which whisper_cpu_amx_available () is
 * TRUE; loads its tile configuration and releases the tiles itself. */
void whisper_cpu_amx_linear_rows (float *y, int y_stride, const uint16_t *w, const uint16_t *xb,
                                  int n, int r0, int r1, int cols, gboolean accumulate);

G_END_DECLS
