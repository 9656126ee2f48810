/* cpu-features.h: which x86 vector extensions the kernels may use, decided
 * once per process from CPUID and the environment.
 *
 * WHISPER_CPU_GENERIC (any value) turns off every vector version;
 * WHISPER_CPU_NO_AVX512 turns off the AVX-512 ones only. Both are read the
 * first time a kernel asks, never again: the kernels run on worker threads
 * and must not call getenv() while the host application may setenv(). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* AVX2, FMA and F16C are all there and not turned off. */
gboolean whisper_cpu_have_avx2 (void);
/* AVX-512F as well (implies whisper_cpu_have_avx2 ()). */
gboolean whisper_cpu_have_avx512 (void);

/* For tests that compare the AVX-512 and AVX2 kernels in one process:
 * turns the AVX-512 versions off (FALSE) or back on where the CPU has
 * them (TRUE). Not thread-safe against running kernels. */
void whisper_cpu_features_set_avx512 (gboolean enabled);

G_END_DECLS
