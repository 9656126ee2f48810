/* cpu-bf16-matmul.h: bfloat16 matrix products for precision=fast on the CPU,
 * through oneDNN's matmul primitive (https://oneapi-src.github.io/oneDNN/dev_guide_matmul.html):
 * AMX tiles where the CPU has them (Intel Sapphire Rapids and later),
 * AVX512-BF16 dot products where it has those (AMD Zen 4), inputs rounded
 * to bfloat16 (8 bits of mantissa), products summed in float32, results
 * float32.
 *
 * Threading: the CPU backend's fork-join pool calls these from its tasks,
 * one block of rows per task, each call on one thread (the caller's OpenMP
 * thread count is set to 1 for the call and restored after it), with that
 * thread's own oneDNN stream, scratchpad and bfloat16 staging buffers, so
 * tasks of one job run concurrently without sharing anything but the
 * read-only primitives and weights. Primitives are created on first use of
 * a shape and kept (a few per weight shape: one per block height).
 *
 * Everything here is built only with oneDNN (meson option `onednn`);
 * whisper_bf16_matmul_new() fails with a clear error otherwise. */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct _WhisperBf16Matmul WhisperBf16Matmul;
typedef struct _WhisperBf16Weight WhisperBf16Weight;

/* TRUE when this build has oneDNN. */
gboolean whisper_bf16_matmul_available (void);

/* One context for a backend whose pool has n_threads threads. Fails when
 * the build has no oneDNN or oneDNN cannot make a bfloat16 matmul on this
 * CPU (it needs AVX-512). */
WhisperBf16Matmul *whisper_bf16_matmul_new (int n_threads, GError **error);
void whisper_bf16_matmul_free (WhisperBf16Matmul *m);

/* The ISA oneDNN chose for bfloat16 products ("brg:avx512_core_amx_bf16",
 * ...), for logs and benchmarks. */
const char *whisper_bf16_matmul_impl (const WhisperBf16Matmul *m);

/* A weight W [rows, cols] (float32, row-major) rounded to bfloat16 and laid
 * out once in the blocked format oneDNN's kernels read. */
WhisperBf16Weight *whisper_bf16_weight_new (WhisperBf16Matmul *m, const float *w, int rows,
                                            int cols, GError **error);
void whisper_bf16_weight_free (WhisperBf16Weight *w);
/* bytes it holds */
size_t whisper_bf16_weight_size (const WhisperBf16Weight *w);

/* The two products return FALSE when oneDNN could not make or run the
 * primitive (a warning says which shape, once); the caller then computes
 * the same in float32.
 *
 * On pool thread `thread`:
 * y[n, W.rows] (dense: row stride W.rows) = (accumulate ? y : 0) + x[n, W.cols]
 * (x_stride) W^T + bias (bias NULL: none). x is rounded to bfloat16 here. */
gboolean whisper_bf16_matmul_linear (WhisperBf16Matmul *m, int thread, float *y,
                                     const float *x, int x_stride, const WhisperBf16Weight *w,
                                     const float *bias, int n, gboolean accumulate);

/* On pool thread `thread`: c[M, N] (dense float32) = scale * a[M, K] b, with
 * a dense bfloat16 and b bfloat16 given as [K, N] row-major, or, when
 * b_transposed, as its transpose [N, K] row-major (attention: q k^T). */
gboolean whisper_bf16_matmul_plain (WhisperBf16Matmul *m, int thread, float *c,
                                    const uint16_t *a, const uint16_t *b, gboolean b_transposed,
                                    int M, int K, int N, float scale);

/* dst[i] = src[i] rounded to the nearest bfloat16 (ties to even); finite
 * inputs (the engine sanitises its input). */
void whisper_bf16_from_f32 (uint16_t *dst, const float *src, size_t n);

G_END_DECLS
