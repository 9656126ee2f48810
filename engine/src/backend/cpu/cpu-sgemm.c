/* cpu-sgemm.c: float32 products on one thread, through oneDNN or OpenBLAS
 * (cpu-sgemm.h says which and why). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cpu-sgemm.h"

#include "cpu-features.h"

#include <cblas.h>
#include <string.h>

#ifdef HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#include "cpu-omp-scope.h"
#endif

static gboolean use_onednn;

void
whisper_cpu_sgemm_init (void)
{
  static gsize decided;
  if (g_once_init_enter (&decided)) {
    /* OpenBLAS runs inside the pool's tasks: one thread per call
     * (process-wide) */
    openblas_set_num_threads (1);
#ifdef HAVE_ONEDNN
    const char *want = g_getenv ("WHISPER_CPU_SGEMM");
    use_onednn = whisper_cpu_have_avx512 () && !(want && strcmp (want, "openblas") == 0);
#endif
    g_once_init_leave (&decided, 1);
  }
}

const char *
whisper_cpu_sgemm_name (void)
{
  return use_onednn ? "onednn" : "openblas";
}

gboolean
whisper_cpu_sgemm_select (const char *name)
{
  whisper_cpu_sgemm_init ();
  if (strcmp (name, "openblas") == 0) {
    use_onednn = FALSE;
    return TRUE;
  }
#ifdef HAVE_ONEDNN
  if (strcmp (name, "onednn") == 0) {
    use_onednn = TRUE;
    return TRUE;
  }
#endif
  return FALSE;
}

#ifdef HAVE_ONEDNN
/* dnnl_sgemm refuses only bad arguments (a leading dimension smaller than
 * a row, a negative size), which the backend never passes. */
static void
sgemm_onednn (gboolean trans_b, int m, int n, int k, float alpha, const float *a, int lda,
              const float *b, int ldb, float beta, float *c, int ldc)
{
  WhisperOmpScope omp = whisper_omp_scope_enter ();
  const dnnl_status_t st = dnnl_sgemm ('N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb,
                                       beta, c, ldc);
  whisper_omp_scope_leave (omp);
  if (st != dnnl_success)
    g_error ("cpu backend: oneDNN sgemm refused [%d, %d] x [%d, %d]%s (lda %d, ldb %d, ldc %d): "
             "status %d", m, k, trans_b ? n : k, trans_b ? k : n, trans_b ? " transposed" : "",
             lda, ldb, ldc, (int) st);
}
#endif

void
whisper_cpu_sgemm (gboolean trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                   const float *b, int ldb, float beta, float *c, int ldc)
{
#ifdef HAVE_ONEDNN
  if (use_onednn) {
    sgemm_onednn (trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#endif
  cblas_sgemm (CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha,
               a, lda, b, ldb, beta, c, ldc);
}
