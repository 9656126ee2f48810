/* turn-lock.h: a lock granted in the order it was asked for (a ticket lock).
 *
 * The engine's compute lock is one: a stream that lets go of it between two
 * decode steps and asks again at once goes behind the streams already
 * waiting (to run their encoder, say), instead of taking it back before
 * they wake, as it would from a GMutex. So no stream runs a whole window of
 * steps while the others wait for their turn, and the others' steps reach
 * the step batcher in time to share its passes (whisper-step-batcher.h).
 * Nothing is allocated: a thread waits on a condition variable for its
 * ticket. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  GMutex mutex;
  GCond turn;
  guint64 next_ticket;  /* the ticket of the next thread to ask */
  guint64 serving;      /* the ticket that holds the lock (== next_ticket: free) */
} WhisperTurnLock;

void whisper_turn_lock_init (WhisperTurnLock *lock);
void whisper_turn_lock_clear (WhisperTurnLock *lock);
/* Waits for every thread that asked before, then holds the lock. */
void whisper_turn_lock_acquire (WhisperTurnLock *lock);
/* Holds the lock when it is free and nobody waits; FALSE otherwise. */
gboolean whisper_turn_lock_try (WhisperTurnLock *lock);
/* Hands the lock to the next thread in line. */
void whisper_turn_lock_release (WhisperTurnLock *lock);

G_END_DECLS
