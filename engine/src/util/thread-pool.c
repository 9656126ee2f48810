/* thread-pool.c: fork-join pool (see thread-pool.h). */
#include "thread-pool.h"

#include <sched.h>

/* Spin iterations a worker polls for the next job before sleeping: a few
 * tens of microseconds, longer than the gap between two ops of a decode step. */
#define SPIN_ITERATIONS 20000

struct _WhisperThreadPool {
  int n_threads;
  GThread **workers;

  GMutex lock;
  GCond wake;          /* workers sleep here between jobs */
  GCond done_cond;     /* the caller sleeps here if workers are still busy */
  gint generation;     /* bumped for every job (atomic) */
  gint stop;

  /* the current job */
  WhisperTaskFunc func;
  gpointer data;
  int n_tasks;
  gint next_task;      /* atomic: next task index to take */
  gint active;         /* atomic: workers still inside the job */
};

typedef struct {
  WhisperThreadPool *pool;
  int index;
} WorkerArgs;

static void
run_tasks (WhisperThreadPool *pool, int thread)
{
  int i;
  while ((i = g_atomic_int_add (&pool->next_task, 1)) < pool->n_tasks)
    pool->func (i, thread, pool->data);
}

static gpointer
worker_main (gpointer user_data)
{
  WorkerArgs *args = user_data;
  WhisperThreadPool *pool = args->pool;
  const int index = args->index;
  g_free (args);
  int seen = 0;

  for (;;) {
    int gen = g_atomic_int_get (&pool->generation);
    for (int spin = 0; gen == seen && spin < SPIN_ITERATIONS; spin++) {
      if ((spin & 255) == 255)
        sched_yield ();
      gen = g_atomic_int_get (&pool->generation);
    }
    if (gen == seen) {
      g_mutex_lock (&pool->lock);
      while ((gen = g_atomic_int_get (&pool->generation)) == seen &&
             !g_atomic_int_get (&pool->stop))
        g_cond_wait (&pool->wake, &pool->lock);
      g_mutex_unlock (&pool->lock);
    }
    if (g_atomic_int_get (&pool->stop))
      return NULL;
    seen = gen;
    run_tasks (pool, index);
    if (g_atomic_int_dec_and_test (&pool->active)) {
      g_mutex_lock (&pool->lock);
      g_cond_signal (&pool->done_cond);
      g_mutex_unlock (&pool->lock);
    }
  }
}

WhisperThreadPool *
whisper_thread_pool_new (int n_threads)
{
  WhisperThreadPool *pool = g_new0 (WhisperThreadPool, 1);
  pool->n_threads = MAX (n_threads, 1);
  g_mutex_init (&pool->lock);
  g_cond_init (&pool->wake);
  g_cond_init (&pool->done_cond);
  pool->workers = g_new0 (GThread *, pool->n_threads);
  for (int i = 1; i < pool->n_threads; i++) {
    WorkerArgs *args = g_new (WorkerArgs, 1);
    args->pool = pool;
    args->index = i;
    pool->workers[i] = g_thread_new ("whisper-cpu", worker_main, args);
  }
  return pool;
}

void
whisper_thread_pool_free (WhisperThreadPool *pool)
{
  if (!pool)
    return;
  g_mutex_lock (&pool->lock);
  g_atomic_int_set (&pool->stop, 1);
  g_atomic_int_inc (&pool->generation);
  g_cond_broadcast (&pool->wake);
  g_mutex_unlock (&pool->lock);
  for (int i = 1; i < pool->n_threads; i++)
    g_thread_join (pool->workers[i]);
  g_free (pool->workers);
  g_mutex_clear (&pool->lock);
  g_cond_clear (&pool->wake);
  g_cond_clear (&pool->done_cond);
  g_free (pool);
}

int
whisper_thread_pool_size (const WhisperThreadPool *pool)
{
  return pool->n_threads;
}

void
whisper_thread_pool_run (WhisperThreadPool *pool, int n_tasks, WhisperTaskFunc func,
                         gpointer data)
{
  if (n_tasks <= 0)
    return;
  if (pool->n_threads == 1 || n_tasks == 1) {
    for (int i = 0; i < n_tasks; i++)
      func (i, 0, data);
    return;
  }
  pool->func = func;
  pool->data = data;
  pool->n_tasks = n_tasks;
  g_atomic_int_set (&pool->next_task, 0);
  g_atomic_int_set (&pool->active, pool->n_threads - 1);

  g_mutex_lock (&pool->lock);
  g_atomic_int_inc (&pool->generation);
  g_cond_broadcast (&pool->wake);
  g_mutex_unlock (&pool->lock);

  run_tasks (pool, 0);

  /* wait for the workers to leave the job (they may still be finishing a task) */
  for (int spin = 0; g_atomic_int_get (&pool->active) > 0 && spin < SPIN_ITERATIONS; spin++)
    ;
  if (g_atomic_int_get (&pool->active) > 0) {
    g_mutex_lock (&pool->lock);
    while (g_atomic_int_get (&pool->active) > 0)
      g_cond_wait (&pool->done_cond, &pool->lock);
    g_mutex_unlock (&pool->lock);
  }
}
