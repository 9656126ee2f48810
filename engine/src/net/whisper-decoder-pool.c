/* whisper-decoder-pool.c: the engine's decoder states, lent to its streams
 * one window at a time (whisper-decoder-pool.h). */
#include "whisper-decoder-pool.h"

struct _WhisperDecoderPool {
  GMutex lock;
  GCond returned;   /* a state was given back */
  GPtrArray *free;  /* WhisperPooledDecoder, most recently returned last */
  guint total, lent;
};

static void
pooled_free (WhisperPooledDecoder *d, WhisperNet *net)
{
  WhisperBackend *be = net->backend;

  if (d->step_graph)
    be->ops->graph_free (be, d->step_graph);
  whisper_decoder_state_clear (&d->dec, net);
  g_free (d);
}

WhisperDecoderPool *
whisper_decoder_pool_new (void)
{
  WhisperDecoderPool *pool = g_new0 (WhisperDecoderPool, 1);

  g_mutex_init (&pool->lock);
  g_cond_init (&pool->returned);
  pool->free = g_ptr_array_new ();
  return pool;
}

void
whisper_decoder_pool_free (WhisperDecoderPool *pool, WhisperNet *net)
{
  if (!pool)
    return;
  if (pool->lent > 0)
    g_critical ("whisper_decoder_pool_free: %u decoder states still lent", pool->lent);
  for (guint i = 0; i < pool->free->len; i++)
    pooled_free (g_ptr_array_index (pool->free, i), net);
  g_ptr_array_unref (pool->free);
  g_mutex_clear (&pool->lock);
  g_cond_clear (&pool->returned);
  g_free (pool);
}

WhisperPooledDecoder *
whisper_decoder_pool_acquire (WhisperDecoderPool *pool, WhisperNet *net, int n_slots,
                              GError **error)
{
  WhisperPooledDecoder *d = NULL;

  g_mutex_lock (&pool->lock);
  /* the most recently used one: its pages are the warmest */
  if (pool->free->len > 0)
    d = g_ptr_array_steal_index (pool->free, pool->free->len - 1);
  pool->lent++;
  if (!d)
    pool->total++;
  g_mutex_unlock (&pool->lock);

  if (!d) {
    g_debug ("decoder state %u of the engine (%u lent)", pool->total, pool->lent);
    d = g_new0 (WhisperPooledDecoder, 1);
    if (!whisper_decoder_state_init (&d->dec, net, error))
      goto failed;
    if (net->backend->ops->graph_new)
      d->step_graph = net->backend->ops->graph_new (net->backend);
  }
  if (!whisper_decoder_state_ensure_slots (&d->dec, net, n_slots, error))
    goto failed;
  return d;

failed:
  /* a state whose caches could not grow is given up, not kept half made */
  whisper_decoder_pool_discard (pool, net, d);
  return NULL;
}

void
whisper_decoder_pool_release (WhisperDecoderPool *pool, WhisperNet *net, WhisperPooledDecoder *d)
{
  if (!d)
    return;
  d->dec.capture = NULL;
  d->discarded = FALSE;
  g_mutex_lock (&pool->lock);
  /* (under the lock: a state is discarded only while nobody can take it) */
  if (pool->free->len > 0) {
    WhisperPooledDecoder *older = g_ptr_array_index (pool->free, pool->free->len - 1);
    if (!older->discarded) {
      whisper_decoder_state_discard (&older->dec, net);
      older->discarded = TRUE;
    }
  }
  g_ptr_array_add (pool->free, d);
  pool->lent--;
  g_cond_broadcast (&pool->returned);
  g_mutex_unlock (&pool->lock);
}

void
whisper_decoder_pool_discard (WhisperDecoderPool *pool, WhisperNet *net, WhisperPooledDecoder *d)
{
  pooled_free (d, net);
  g_mutex_lock (&pool->lock);
  pool->lent--;
  pool->total--;
  g_cond_broadcast (&pool->returned);
  g_mutex_unlock (&pool->lock);
}

void
whisper_decoder_pool_counts (WhisperDecoderPool *pool, guint *total, guint *lent)
{
  g_mutex_lock (&pool->lock);
  if (total)
    *total = pool->total;
  if (lent)
    *lent = pool->lent;
  g_mutex_unlock (&pool->lock);
}

gboolean
whisper_decoder_pool_wait_below (WhisperDecoderPool *pool, guint limit, gint64 deadline)
{
  g_mutex_lock (&pool->lock);
  while (pool->lent >= limit)
    if (!g_cond_wait_until (&pool->returned, &pool->lock, deadline))
      break;
  const gboolean below = pool->lent < limit;
  g_mutex_unlock (&pool->lock);
  return below;
}
