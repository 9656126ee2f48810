/* aligned-memory.h: page-written, large-block-aligned memory for activations, caches and scratch. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* `bytes` of zeroed memory, or NULL. Every page is written here, when the
 * engine or stream is created, so that the first window takes no page
 * faults. Blocks of 2 MiB and more are 2-MiB aligned, which lets
 * transparent huge pages back them where the system enables them for all
 * memory. They are not asked for with madvise: the direct compaction it
 * triggers makes engine creation take an unsteady time, for no gain in
 * decode speed.
 * Free with whisper_aligned_free () (g_free () also works). */
void *whisper_aligned_alloc (size_t bytes);
/* `bytes` of zeroed memory, or NULL, whose pages take memory only once
 * written (until then they are the kernel's zero page): for caches sized
 * for the longest window of which most windows use a part, the decoder
 * states' self- and cross-attention caches (whisper-decoder.c). The pages
 * are handed back with madvise(MADV_DONTNEED), which makes an anonymous
 * private mapping read as zeros until written (madvise(2)), and kept out
 * of transparent huge pages, which would make a 4-KiB row cost 2 MiB; where
 * madvise fails, they are written with zeros instead. Page-aligned. Free
 * with whisper_aligned_free (). */
void *whisper_aligned_alloc_sparse (size_t bytes);
/* The `bytes` at `p`, in a block of either allocator, are not needed any
 * more: the whole pages among them are handed back to the system
 * (madvise(MADV_DONTNEED)) and read as zeros until written again; the bytes
 * on partly covered pages at either end keep their values, and where
 * madvise fails nothing changes. Pages of a sparse block handed back take
 * no memory until written, as when the block was new. */
void whisper_aligned_discard (void *p, size_t bytes);
void whisper_aligned_free (void *ptr);

G_END_DECLS
