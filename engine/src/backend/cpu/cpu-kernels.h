/* cpu-kernels.h: the CPU backend's vector kernels: matrix-vector products on
 * float32 or float16 weights, dot products, softmax, attention. Each has
 * a portable version and an AVX2/FMA/F16C version chosen at run time. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "cpu-features.h"
#include "half.h"

G_BEGIN_DECLS

/* y[r] = (accumulate ? y[r] : 0) + sum_c W[r, c] x[c] for rows [r0, r1).
 * W is [rows, cols] row-major, float32 (w32) or IEEE half (w16). */
void whisper_cpu_gemv_f32 (float *y, const float *w32, const float *x, int r0, int r1, int cols,
                           gboolean accumulate);
void whisper_cpu_gemv_f16 (float *y, const uint16_t *w16, const float *x, int r0, int r1,
                           int cols, gboolean accumulate);

/* The same for n input vectors at once: for each i < n,
 * y + i * y_stride gets exactly the bits the one-vector kernel gives for
 * x + i * x_stride over the same [r0, r1), while each group of weight rows
 * is read from memory once for all n (batched decode steps: beams, best-of
 * candidates). Any n >= 1; the backend uses them for
 * 2 <= n <= WHISPER_CPU_GEMV_MAX_ROWS and keeps sgemm above. The bound: the
 * engine batches up to 16 sequences; the kernels still beat the sgemm path
 * at 24 and 32 rows (tests/engine/bench-cpu-linear.c, README.md), but the
 * attention's direct path shares the bound and reads the K/V once per
 * query, so more rows (prompt passes, which need no bit-identity) are left
 * to the sgemm blocks. */
#define WHISPER_CPU_GEMV_MAX_ROWS 16
void whisper_cpu_gemv_f32_rows (float *y, int y_stride, const float *w32, const float *x,
                                int x_stride, int n, int r0, int r1, int cols,
                                gboolean accumulate);
void whisper_cpu_gemv_f16_rows (float *y, int y_stride, const uint16_t *w16, const float *x,
                                int x_stride, int n, int r0, int r1, int cols,
                                gboolean accumulate);

/* Float16 weights packed in blocks of WHISPER_CPU_PACK_ROWS rows, one
 * sequential stream for the matrix-vector product (cpu-gemv-packed.c);
 * the results are bit-identical to whisper_cpu_gemv_f16 on the row-major
 * matrix. Only shapes with whisper_cpu_packable () can be packed. */
#define WHISPER_CPU_PACK_ROWS 8
gboolean whisper_cpu_packable (int rows, int cols);
void whisper_cpu_pack_rows (uint16_t *dst, const uint16_t *src, int rows, int cols);
/* r0, r1 multiples of WHISPER_CPU_PACK_ROWS */
void whisper_cpu_gemv_f16_packed (float *y, const uint16_t *packed, const float *x, int r0,
                                  int r1, int cols, gboolean accumulate);
/* n input vectors, bit-identical per vector to whisper_cpu_gemv_f16_packed
 * (see whisper_cpu_gemv_f16_rows) */
void whisper_cpu_gemv_f16_packed_rows (float *y, int y_stride, const uint16_t *packed,
                                       const float *x, int x_stride, int n, int r0, int r1,
                                       int cols, gboolean accumulate);
/* dst = rows [r0, r1) as float32, row-major [r1 - r0, cols] */
void whisper_cpu_unpack_rows (float *dst, const uint16_t *packed, int r0, int r1, int cols);

float whisper_cpu_dot (const float *a, const float *b, int n);
/* y += a x */
void whisper_cpu_axpy (float *y, float a, const float *x, int n);

/* x[0..n) = softmax(x[0..n)) in place (exp with ~1 ulp error). */
void whisper_cpu_softmax (float *x, int n);
/* sum of exp(x[i] - max) over n floats, in double; max >= every x[i]. The
 * AVX2 version takes each term in float (relative error about 1 ulp), the
 * portable one in double. */
double whisper_cpu_sum_exp (const float *x, int n, float max);
/* The largest of x[0..n) (NaNs skipped; -inf when there is none) and, when
 * arg is not NULL, the index of its first occurrence (0 when there is
 * none): what a scalar loop keeping the first strictly larger value gives. */
float whisper_cpu_max (const float *x, int n, int *arg);
/* x[i] = (float) ((double) x[i] - c): log-softmax's last pass, in double as
 * the scalar loop is. */
void whisper_cpu_sub_in_double (float *x, int n, double c);
/* x[i] = x[i] + bias[i] (bias may be NULL), then exact-erf GELU if gelu. */
void whisper_cpu_bias_gelu (float *x, const float *bias, int n, gboolean gelu);

/* One query against n_kv keys, for n_heads consecutive heads (head h at
 * offset h * dh in q, k, v and out): out = softmax(q k^T * scale) v per head.
 * k and v rows are kv_stride floats apart; scratch holds
 * WHISPER_CPU_ATTENTION_SCRATCH (n_kv, dh, n_heads) floats. */
#define WHISPER_CPU_ATTENTION_SCRATCH(n_kv, dh, n_heads) \
  WHISPER_CPU_ATTENTION_MULTI_SCRATCH (1, n_kv, dh, n_heads)
void whisper_cpu_attention_heads (float *out, const float *q, const float *k, const float *v,
                                  int kv_stride, int n_kv, int dh, int n_heads, float scale,
                                  float *scratch);
/* n_q queries (q_stride and out_stride floats apart) against the same keys
 * and values (cross-attention of the beams of a decode step): query i's
 * output has the bits of whisper_cpu_attention_heads () on it alone, and
 * each key and value row is read from memory once for all the queries
 * rather than once per query. scratch holds
 * WHISPER_CPU_ATTENTION_MULTI_SCRATCH (n_q, n_kv, dh, n_heads) floats. */
#define WHISPER_CPU_ATTENTION_MULTI_SCRATCH(n_q, n_kv, dh, n_heads) \
  ((size_t) (n_q) * (n_heads) * (n_kv) + 2 * (size_t) (n_q) * (n_heads) * (dh) \
   + WHISPER_CPU_WEIGHTED_SUM_SCRATCH (n_q))
void whisper_cpu_attention_heads_multi (float *out, int out_stride, const float *q, int q_stride,
                                        const float *k, const float *v, int kv_stride, int n_q,
                                        int n_kv, int dh, int n_heads, float scale,
                                        float *scratch);
/* For each of n_q queries i: out_i[h * dh + c] = sum_j p_i[h * p_stride + j]
 * v[j * kv_stride + h * dh + c] for n_heads heads, where p_i = p + i *
 * p_query_stride and out_i = out + i * out_stride, on AVX-512 with the sums
 * of the AVX2 attention (cpu-weighted-sum-avx512.c); every value row is
 * read from memory once for all the queries. scratch holds
 * WHISPER_CPU_WEIGHTED_SUM_SCRATCH (n_q) floats. Returns FALSE, having done
 * nothing, where it does not apply: dh != 64 or no AVX-512
 * (whisper_cpu_have_avx512 ()). */
#define WHISPER_CPU_WEIGHTED_SUM_SCRATCH(n_q) ((size_t) (n_q) * 2 * 3 * 64)
gboolean whisper_cpu_weighted_sum_avx512 (float *out, int out_stride, const float *p,
                                          int p_stride, size_t p_query_stride, const float *v,
                                          int kv_stride, int n_kv, int dh, int n_heads, int n_q,
                                          float *scratch);

/* precision=fast: the cross-attention of decode steps over float16 keys and
 * values (cpu-attention-f16kv.c). kv_to_half_heads rounds kv[n, 2 * n_head
 * * dh] (kv_stride floats apart: a row's keys, then its values) to
 * float16, head-major: dst holds K[n_head][n][dh] then V[n_head][n][dh]. */
void whisper_cpu_kv_to_half_heads (uint16_t *dst, const float *kv, int kv_stride, int n,
                                   int n_head, int dh);
/* One head: out_i = softmax(scale q_i k^T) v for n_q queries (q_stride,
 * out_stride floats apart), k and v [n_kv, dh] float16 (one head of
 * whisper_cpu_kv_to_half_heads ()'s layout). scratch holds
 * WHISPER_CPU_ATTENTION_F16KV_SCRATCH (n_q, n_kv, dh) floats. */
#define WHISPER_CPU_ATTENTION_F16KV_SCRATCH(n_q, n_kv, dh) \
  ((size_t) (n_q) * (n_kv) + 16 * (size_t) (dh))
void whisper_cpu_attention_f16kv (float *out, int out_stride, const float *q, int q_stride,
                                  const uint16_t *k, const uint16_t *v, int n_q, int n_kv,
                                  int dh, float scale, float *scratch);

/* One row of LayerNorm (mean and variance in double): y may equal x. */
void whisper_cpu_layer_norm_row (float *y, const float *x, const float *gamma, const float *beta,
                                 int d, float eps);

G_END_DECLS
