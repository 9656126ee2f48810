/* aligned-memory.c: see aligned-memory.h. */
#include "aligned-memory.h"

#include <stdlib.h>
#include <string.h>

#define ALIGNMENT ((size_t) 2 << 20)

void *
whisper_aligned_alloc (size_t bytes)
{
  bytes = MAX (bytes, 1);
  if (bytes < ALIGNMENT)
    return g_try_malloc0 (bytes);
  void *p = NULL;
  const size_t rounded = (bytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
  if (posix_memalign (&p, ALIGNMENT, rounded) != 0)
    return NULL;
  memset (p, 0, rounded);
  return p;
}

void
whisper_aligned_free (void *ptr)
{
  free (ptr);
}
