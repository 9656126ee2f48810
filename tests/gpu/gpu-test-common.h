/* gpu-test-common.h: helpers of the GPU tests: a CUDA backend, or exit 77
 * (meson's "skipped") where the machine has no CUDA device, or exit 1
 * where it has one and the backend does not come up; random data, copies
 * to and from either backend, and error measures for comparing a kernel
 * with its CPU twin. */
#pragma once

#include "backend.h"

G_BEGIN_DECLS

#define GPU_TEST_SKIP 77

/* The CUDA backend. Whether the machine has a CUDA device is decided by the
 * tests' own probe (gpu-probe.h), not by the loader under test:
 * - no NVIDIA driver or no device: the reason and exit(77), or exit(1)
 *   under WHISPER_REQUIRE_CUDA=1 (gpu_test_skip);
 * - a driver that is installed but fails: exit(1) with the probe's words;
 * - a device, but no module (this build made none and WHISPER_CUDA_MODULE
 *   is not set): skip as above, the reason naming the meson option;
 * - a device, and whisper_backend_cuda_new() fails (module missing, not
 *   loadable, no entry point, other ABI, creation error): exit(1) with the
 *   loader's message.
 * The environment variables the backend reads (WHISPER_CUDA_*) are read
 * here. */
WhisperBackend *gpu_test_cuda_or_skip (void);

/* Prints "SKIP: <reason>" and exits 77; under WHISPER_REQUIRE_CUDA=1
 * prints a failure naming the reason and exits 1. */
_Noreturn void gpu_test_skip (const char *reason);

/* Prints "FAIL: <message>" on stderr and exits 1. */
_Noreturn void gpu_test_fail (const char *format, ...) G_GNUC_PRINTF (1, 2);

/* The path of the CUDA module this build made, "" when it made none
 * (meson passes it when compiling gpu-test-common.c). */
const char *gpu_test_built_module (void);
WhisperBackend *gpu_test_cpu (void);

/* Deterministic random floats in [lo, hi) (seed printed with -d). */
void gpu_test_seed (guint32 seed);
float *gpu_test_random (size_t n, float lo, float hi);
/* Random values exactly representable in fp16, in about [-scale, scale]:
 * weights that both backends store without rounding. */
float *gpu_test_random_half (size_t n, float scale);

/* A copy of host[n] in backend memory. */
float *gpu_test_put (WhisperBackend *be, const float *host, size_t n);
/* Backend memory [n] as a new host array. */
float *gpu_test_get (WhisperBackend *be, const float *dev, size_t n);

/* max over i of |a - b| / (floor + |scale_i|) where scale is `scale` (or |b|
 * when scale is NULL). */
double gpu_test_max_err (const float *a, const float *b, const float *scale, size_t n,
                         double floor, size_t *worst);

/* Fails the test when the error is above tol, printing the worst element. */
void gpu_test_assert_close (const char *what, const float *gpu, const float *cpu,
                            const float *scale, size_t n, double floor, double tol);

/* ops->weight_upload of a host float32 matrix [rows, cols]. */
static inline gboolean
gt_weight_upload_f32 (WhisperBackend *be, WhisperWeight *w, const float *host, int rows, int cols,
                      GError **error)
{
  const WhisperTensor t = { host, WHISPER_DTYPE_F32, NULL, rows, cols };
  return be->ops->weight_upload (be, w, &t, error);
}

G_END_DECLS
