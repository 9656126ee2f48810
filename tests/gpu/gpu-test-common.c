/* gpu-test-common.c: see gpu-test-common.h. */
#include "gpu-test-common.h"
#include "gpu-probe.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static GRand *rng;

#ifndef WHISPER_GPU_TEST_BUILT_MODULE
#error "meson passes WHISPER_GPU_TEST_BUILT_MODULE (tests/gpu/meson.build)"
#endif

const char *
gpu_test_built_module (void)
{
  return WHISPER_GPU_TEST_BUILT_MODULE;
}

void
gpu_test_fail (const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  fflush (stdout);
  g_printerr ("FAIL: %s\n", message);
  exit (1);
}

void
gpu_test_skip (const char *reason)
{
  if (gpu_probe_require_cuda ())
    gpu_test_fail ("WHISPER_REQUIRE_CUDA=1, but this test would skip: %s", reason);
  g_print ("SKIP: %s\n", reason);
  exit (GPU_TEST_SKIP);
}

WhisperBackend *
gpu_test_cuda_or_skip (void)
{
  int n_devices;
  g_autofree char *reason = NULL;
  const GpuProbeResult probe = gpu_probe (&n_devices, &reason);
  if (gpu_probe_is_skip (probe))
    gpu_test_skip (reason);
  if (probe == GPU_PROBE_BROKEN)
    gpu_test_fail ("%s", reason);
  const char *env_module = g_getenv ("WHISPER_CUDA_MODULE");
  if (!(env_module && *env_module) && !*gpu_test_built_module ()) {
    g_autofree char *why =
        g_strdup_printf ("%s, but this build made no CUDA module (meson option cuda: configure "
                         "with -Dcuda=enabled and nvcc installed) and WHISPER_CUDA_MODULE is "
                         "not set",
                         reason);
    gpu_test_skip (why);
  }
  g_autoptr (GError) error = NULL;
  WhisperBackend *be = whisper_backend_cuda_new (&error);
  if (!be)
    gpu_test_fail ("%s, but the CUDA backend does not come up: %s", reason, error->message);
  return be;
}

WhisperBackend *
gpu_test_cpu (void)
{
  g_autoptr (GError) error = NULL;
  WhisperBackend *be = whisper_backend_cpu_new (0, FALSE, &error);
  if (!be)
    g_error ("CPU backend: %s", error->message);
  return be;
}

void
gpu_test_seed (guint32 seed)
{
  if (rng)
    g_rand_free (rng);
  rng = g_rand_new_with_seed (seed);
  g_test_message ("random seed %u", seed);
}

static GRand *
get_rng (void)
{
  if (!rng)
    gpu_test_seed (20261129);
  return rng;
}

float *
gpu_test_random (size_t n, float lo, float hi)
{
  float *p = g_new (float, MAX (n, 1));
  for (size_t i = 0; i < n; i++)
    p[i] = (float) g_rand_double_range (get_rng (), lo, hi);
  return p;
}

float *
gpu_test_random_half (size_t n, float scale)
{
  /* m / 1024 * scale with |m| <= 1024 and scale a power of two: 11
   * significant bits at most, inside fp16's range */
  float *p = g_new (float, MAX (n, 1));
  const float s = exp2f (roundf (log2f (scale)));
  for (size_t i = 0; i < n; i++)
    p[i] = (float) g_rand_int_range (get_rng (), -1024, 1025) / 1024.0f * s;
  return p;
}

float *
gpu_test_put (WhisperBackend *be, const float *host, size_t n)
{
  g_autoptr (GError) error = NULL;
  float *d = be->ops->alloc (be, n, &error);
  if (!d)
    g_error ("%s alloc: %s", be->ops->name, error->message);
  be->ops->upload (be, d, host, n * sizeof (float));
  return d;
}

float *
gpu_test_get (WhisperBackend *be, const float *dev, size_t n)
{
  float *h = g_new (float, MAX (n, 1));
  be->ops->download (be, h, dev, n * sizeof (float));
  be->ops->sync (be);
  if (be->ops->check) {
    g_autoptr (GError) error = NULL;
    if (!be->ops->check (be, &error))
      g_error ("%s backend failed: %s", be->ops->name, error->message);
  }
  return h;
}

double
gpu_test_max_err (const float *a, const float *b, const float *scale, size_t n, double floor,
                  size_t *worst)
{
  double max = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    const double s = scale ? fabs ((double) scale[i]) : fabs ((double) b[i]);
    double e = fabs ((double) a[i] - (double) b[i]) / (floor + s);
    if (isnan (a[i]) != isnan (b[i]) || isinf (a[i]) != isinf (b[i]))
      e = INFINITY;
    else if (isnan (a[i]) || (isinf (a[i]) && a[i] == b[i]))
      e = 0.0;
    if (e > max || isnan (e)) {
      max = isnan (e) ? INFINITY : e;
      at = i;
    }
  }
  if (worst)
    *worst = at;
  return max;
}

void
gpu_test_assert_close (const char *what, const float *gpu, const float *cpu, const float *scale,
                       size_t n, double floor, double tol)
{
  size_t worst;
  const double err = gpu_test_max_err (gpu, cpu, scale, n, floor, &worst);
  g_test_message ("%s: max error %.3g (tolerance %.3g) at %zu: gpu %.9g cpu %.9g", what, err,
                  tol, worst, n ? gpu[worst] : 0.0f, n ? cpu[worst] : 0.0f);
  if (!(err <= tol)) {
    g_printerr ("%s: max error %.3g > %.3g at %zu: gpu %.9g cpu %.9g\n", what, err, tol, worst,
                gpu[worst], cpu[worst]);
    g_test_fail ();
  }
}
