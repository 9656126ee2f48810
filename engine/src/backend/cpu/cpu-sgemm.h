/* cpu-sgemm.h: the CPU backend's float32 matrix products, on the calling
 * thread.
 *
 * Row-major C[m, n] = alpha * A[m, k] op(B) + beta * C, op(B) = B[k, n] or,
 * with trans_b, B[n, k] transposed (the layout of a linear weight). Every
 * call runs on one thread: the pool's tasks call it on their blocks.
 *
 * Two implementations compute it, both in float32 with float32 sums (only
 * the order of the sums differs, as between any two BLAS libraries):
 *  - OpenBLAS's cblas_sgemm;
 *  - oneDNN's dnnl_sgemm (https://oneapi-src.github.io/oneDNN/group_dnnl_api_blas.html),
 *    row-major, its JIT kernels chosen from CPUID.
 * oneDNN is used where it is built in and the CPU has AVX-512: Debian's
 * OpenBLAS 0.3.21 does not know AMD Zen 4 and Zen 5 and runs its AVX2
 * (Haswell) kernels there, where dnnl_sgemm's AVX-512 kernels are faster
 * on the encoder's shapes; CTranslate2 itself multiplies with oneDNN on AMD
 * CPUs. WHISPER_CPU_SGEMM=openblas (read once, when the first
 * CPU backend is made) keeps OpenBLAS, for comparisons. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Decides the implementation and sets OpenBLAS to one thread, once per
 * process (reads the environment): call where no other thread may run
 * setenv(), before any product. */
void whisper_cpu_sgemm_init (void);
/* "onednn" or "openblas": what whisper_cpu_sgemm () runs. */
const char *whisper_cpu_sgemm_name (void);

/* For tests that compare the two in one process: runs `name` ("onednn"
 * or "openblas") from now on. FALSE, and nothing changes, when it is not
 * built in. Not thread-safe against running products. */
gboolean whisper_cpu_sgemm_select (const char *name);

void whisper_cpu_sgemm (gboolean trans_b, int m, int n, int k, float alpha, const float *a,
                        int lda, const float *b, int ldb, float beta, float *c, int ldc);

G_END_DECLS
