/* aligned-memory.c: see aligned-memory.h. */
#include "aligned-memory.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

void *
whisper_aligned_alloc_sparse (size_t bytes)
{
  const long page_size = sysconf (_SC_PAGESIZE);
  const size_t page = page_size > 0 ? (size_t) page_size : 4096;
  void *p = NULL;

  /* a few pages: not worth a system call */
  if (bytes < 16 * page)
    return whisper_aligned_alloc (bytes);
  const size_t rounded = (bytes + page - 1) / page * page;
  if (posix_memalign (&p, page, rounded) != 0)
    return NULL;
  /* whole pages of this block only: p and rounded are multiples of page */
#ifdef MADV_NOHUGEPAGE
  (void) madvise (p, rounded, MADV_NOHUGEPAGE);
#endif
  if (madvise (p, rounded, MADV_DONTNEED) != 0)
    memset (p, 0, rounded);
  return p;
}

void
whisper_aligned_discard (void *p, size_t bytes)
{
  const long page_size = sysconf (_SC_PAGESIZE);
  const uintptr_t page = page_size > 0 ? (uintptr_t) page_size : 4096;
  const uintptr_t from = ((uintptr_t) p + page - 1) / page * page;
  const uintptr_t to = ((uintptr_t) p + bytes) / page * page;

  if (p && to > from)
    (void) madvise ((void *) from, to - from, MADV_DONTNEED);
}

void
whisper_aligned_free (void *ptr)
{
  free (ptr);
}
