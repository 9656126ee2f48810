/* cpu-memory.c: see cpu-memory.h. */
#include "cpu-memory.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t) 2 << 20)

void *
whisper_cpu_memory_alloc (size_t bytes)
{
  bytes = MAX (bytes, 1);
  if (bytes < HUGE_PAGE)
    return g_try_malloc0 (bytes);
  void *p = NULL;
  const size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
  if (posix_memalign (&p, HUGE_PAGE, rounded) != 0)
    return NULL;
#ifdef MADV_HUGEPAGE
  /* advice only: without transparent huge pages the memory works the same */
  (void) madvise (p, rounded, MADV_HUGEPAGE);
#endif
  memset (p, 0, rounded);
  return p;
}

void
whisper_cpu_memory_free (void *ptr)
{
  free (ptr);
}
