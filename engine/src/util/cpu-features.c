/* cpu-features.c: CPUID and the environment, read once (cpu-features.h). */
#include "cpu-features.h"

typedef struct {
  gboolean avx2;
  gboolean avx512_hw;  /* the CPU has it and the environment allows it */
} CpuFeatures;

static CpuFeatures features;
static gboolean avx512_enabled = TRUE;

static const CpuFeatures *
cpu_features (void)
{
  static gsize checked;
  if (g_once_init_enter (&checked)) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init ();
    const gboolean generic = g_getenv ("WHISPER_CPU_GENERIC") != NULL;
    features.avx2 = !generic && __builtin_cpu_supports ("avx2") &&
                    __builtin_cpu_supports ("fma") && __builtin_cpu_supports ("f16c");
    features.avx512_hw = features.avx2 && __builtin_cpu_supports ("avx512f") &&
                         g_getenv ("WHISPER_CPU_NO_AVX512") == NULL;
#endif
    g_once_init_leave (&checked, 1);
  }
  return &features;
}

gboolean
whisper_cpu_have_avx2 (void)
{
  return cpu_features ()->avx2;
}

gboolean
whisper_cpu_have_avx512 (void)
{
  return cpu_features ()->avx512_hw && avx512_enabled;
}

void
whisper_cpu_features_set_avx512 (gboolean enabled)
{
  avx512_enabled = enabled;
}
