/* turn-lock.c: a lock granted in the order it was asked for (turn-lock.h). */
#include "turn-lock.h"

void
whisper_turn_lock_init (WhisperTurnLock *l)
{
  g_mutex_init (&l->mutex);
  g_cond_init (&l->turn);
  l->next_ticket = l->serving = 0;
}

void
whisper_turn_lock_clear (WhisperTurnLock *l)
{
  g_warn_if_fail (l->next_ticket == l->serving);
  g_mutex_clear (&l->mutex);
  g_cond_clear (&l->turn);
}

void
whisper_turn_lock_acquire (WhisperTurnLock *l)
{
  g_mutex_lock (&l->mutex);
  const guint64 ticket = l->next_ticket++;
  while (l->serving != ticket)
    g_cond_wait (&l->turn, &l->mutex);
  g_mutex_unlock (&l->mutex);
}

gboolean
whisper_turn_lock_try (WhisperTurnLock *l)
{
  g_mutex_lock (&l->mutex);
  const gboolean free = l->serving == l->next_ticket;
  if (free)
    l->next_ticket++;
  g_mutex_unlock (&l->mutex);
  return free;
}

void
whisper_turn_lock_release (WhisperTurnLock *l)
{
  g_mutex_lock (&l->mutex);
  g_warn_if_fail (l->serving < l->next_ticket);
  l->serving++;
  /* every waiter looks at its ticket; the one whose turn it is goes on */
  g_cond_broadcast (&l->turn);
  g_mutex_unlock (&l->mutex);
}
