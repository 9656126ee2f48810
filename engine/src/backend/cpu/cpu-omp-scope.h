/* cpu-omp-scope.h: oneDNN calls made from one thread of the CPU backend's
 * pool run on that thread alone.
 *
 * oneDNN (built with OpenMP, as Debian's libdnnl is) plans its parallel
 * work from the calling thread's OpenMP thread count and runs that many
 * threads: every call from a pool task sets the count to 1 for the call
 * and gives the caller's setting back after it. The pool already runs one
 * task per core; a second level of threads would only compete with it. */
#pragma once

#include <omp.h>

typedef struct {
  int saved;
} WhisperOmpScope;

static inline WhisperOmpScope
whisper_omp_scope_enter (void)
{
  WhisperOmpScope s = { omp_get_max_threads () };
  if (s.saved != 1)
    omp_set_num_threads (1);
  return s;
}

static inline void
whisper_omp_scope_leave (WhisperOmpScope s)
{
  if (s.saved != 1)
    omp_set_num_threads (s.saved);
}
