/* thread-pool.h: a fork-join pool (the CPU backend, log-mel). The calling thread
 * takes part; workers spin briefly between jobs (a decode step issues dozens
 * of small jobs back to back) and then sleep, so an idle engine costs no CPU. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _WhisperThreadPool WhisperThreadPool;

/* Runs task(i, data) for i in [0, n_tasks), spread over the pool's threads;
 * `thread` is the index (0..n_threads-1) of the thread running it, for
 * per-thread scratch memory. Returns when every task is done. */
typedef void (*WhisperTaskFunc) (int task, int thread, gpointer data);

WhisperThreadPool *whisper_thread_pool_new (int n_threads);
void whisper_thread_pool_free (WhisperThreadPool *pool);
int whisper_thread_pool_size (const WhisperThreadPool *pool);
void whisper_thread_pool_run (WhisperThreadPool *pool, int n_tasks, WhisperTaskFunc task,
                              gpointer data);

G_END_DECLS
