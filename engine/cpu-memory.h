/* cpu-memory.h: memory for the CPU backend's activations, caches and scratch. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* `bytes` of zeroed memory, or NULL. Blocks of 2 MiB and more are aligned to
 * 2 MiB and asked to be backed by transparent huge pages (madvise), which
 * spares the TLB misses of streaming tens of megabytes per decode step; every
 * page is written here, so that no page fault is left for the hot path.
 * Free with whisper_cpu_memory_free () (g_free () also works). */
void *whisper_cpu_memory_alloc (size_t bytes);
void whisper_cpu_memory_free (void *ptr);

G_END_DECLS
