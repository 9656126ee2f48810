/* whisper-step-batcher.c: decode steps of several streams as one forward
 * pass (whisper-step-batcher.h). The hand-off between the streams' threads
 * is in the batcher_locked_* helpers, each called with batcher->lock held;
 * lock order: the engine's compute lock, then batcher->lock (a pass is run
 * without batcher->lock). */
#include "whisper-step-batcher.h"

typedef struct _StepRequest StepRequest;
struct _StepRequest {
  StepRequest *next;  /* posted after it (an intrusive list: a step allocates nothing) */
  const WhisperStepRows *rows;
  WhisperStepMember *member;
  gboolean done;
  int n_parts;  /* streams in the pass that ran it */
};

struct _WhisperStepBatcher {
  GMutex lock;
  GCond cond;
  StepRequest *posted, *posted_last;  /* in order of posting */
  int n_expected;     /* streams of the last pass that have not posted or left since */
  gboolean running;   /* a pass is being run (parts and taken belong to its runner) */
  int max_rows;            /* the backend's max_exact_rows */
  float *logits;           /* [max_rows, n_vocab]: a pass's logits, before they go to the states
                              (its other work buffers are the engine's dec_work) */
  WhisperStepRows *parts;  /* [max_rows]: the pass's parts */
  StepRequest **taken;     /* [max_rows]: their requests */
  gint64 last_pass_us;     /* how long the last pass took */
  guint64 passes, steps;
};

WhisperStepBatcher *
whisper_step_batcher_new (WhisperNet *net, GError **error)
{
  WhisperBackend *be = net->backend;
  WhisperStepBatcher *b = g_new0 (WhisperStepBatcher, 1);
  /* (the engine's work buffers hold n_text_ctx rows, more than any pass) */
  const int rows = CLAMP (be->max_exact_rows, 1, net->n_text_ctx);
  g_mutex_init (&b->lock);
  g_cond_init (&b->cond);
  b->max_rows = rows;
  b->parts = g_new0 (WhisperStepRows, rows);
  b->taken = g_new0 (StepRequest *, rows);
  b->logits = be->ops->alloc (be, (size_t) rows * net->n_vocab, error);
  if (!b->logits) {
    whisper_step_batcher_free (b, net);
    return NULL;
  }
  return b;
}

void
whisper_step_batcher_free (WhisperStepBatcher *b, WhisperNet *net)
{
  if (!b)
    return;
  g_warn_if_fail (!b->posted && !b->running);
  if (b->logits)
    net->backend->ops->free (net->backend, b->logits);
  g_free (b->parts);
  g_free (b->taken);
  g_mutex_clear (&b->lock);
  g_cond_clear (&b->cond);
  g_free (b);
}

/* The member is back (it posted) or gone (it left): the next pass no
 * longer waits for it. */
static void
batcher_locked_leave (WhisperStepBatcher *b, WhisperStepMember *member)
{
  if (!member->expected)
    return;
  member->expected = FALSE;
  if (--b->n_expected == 0)
    g_cond_broadcast (&b->cond);
}

/* The member's next step is posted. */
static void
batcher_locked_post (WhisperStepBatcher *b, StepRequest *req, WhisperStepMember *member)
{
  batcher_locked_leave (b, member);
  if (b->posted_last)
    b->posted_last->next = req;
  else
    b->posted = req;
  b->posted_last = req;
  g_cond_broadcast (&b->cond);
}

/* A pass may start: none is running, and every stream of the last one is
 * back or gone, or the wait is over. */
static gboolean
batcher_locked_may_start (WhisperStepBatcher *b, gint64 deadline)
{
  return !b->running && b->posted &&
         (b->n_expected == 0 || g_get_monotonic_time () >= deadline);
}

/* The posted steps of the next pass, in order of posting, up to max_rows
 * rows (the first always, alone if it has more). */
static int
batcher_locked_take (WhisperStepBatcher *b)
{
  int n = 0, rows = 0;
  while (b->posted) {
    StepRequest *req = b->posted;
    if (n > 0 && rows + req->rows->n_rows > b->max_rows)
      break;
    b->posted = req->next;
    if (!b->posted)
      b->posted_last = NULL;
    b->taken[n] = req;
    b->parts[n] = *req->rows;
    rows += req->rows->n_rows;
    n++;
  }
  b->running = TRUE;
  return n;
}

/* The pass of the n taken steps ran: their streams are expected back. */
static void
batcher_locked_finish (WhisperStepBatcher *b, int n)
{
  for (int i = 0; i < n; i++) {
    StepRequest *req = b->taken[i];
    req->done = TRUE;
    req->n_parts = n;
    req->member->expected = TRUE;
  }
  b->n_expected += n;
  b->passes++;
  b->steps += n;
  b->running = FALSE;
  g_cond_broadcast (&b->cond);
}

/* Runs the next pass; batcher->lock is let go during it. The steps are
 * taken once the compute lock is held: those posted while it was busy (by
 * a stream whose encoder ran meanwhile) join this pass. */
static void
batcher_locked_run_pass (WhisperStepBatcher *b, WhisperNet *net)
{
  b->running = TRUE;
  g_mutex_unlock (&b->lock);
  whisper_turn_lock_acquire (&net->compute_lock);
  g_mutex_lock (&b->lock);
  const int n = batcher_locked_take (b);
  g_mutex_unlock (&b->lock);
  const gint64 t0 = g_get_monotonic_time ();
  whisper_decoder_forward_batch (net, b->logits, b->max_rows, b->parts, n);
  const gint64 took = g_get_monotonic_time () - t0;
  whisper_turn_lock_release (&net->compute_lock);
  g_mutex_lock (&b->lock);
  b->last_pass_us = took;
  batcher_locked_finish (b, n);
}

int
whisper_step_batcher_run (WhisperStepBatcher *b, WhisperNet *net, const WhisperStepRows *rows,
                          WhisperStepMember *member)
{
  StepRequest req = { .rows = rows, .member = member };

  g_mutex_lock (&b->lock);
  batcher_locked_post (b, &req, member);
  whisper_turn_lock_release (&net->compute_lock);
  const gint64 deadline =
      g_get_monotonic_time () + CLAMP (b->last_pass_us, 100, WHISPER_STEP_BATCHER_WAIT_US);
  while (!req.done) {
    if (batcher_locked_may_start (b, deadline))
      batcher_locked_run_pass (b, net);
    else if (b->running || b->n_expected == 0)
      g_cond_wait (&b->cond, &b->lock);
    else
      g_cond_wait_until (&b->cond, &b->lock, deadline);
  }
  g_mutex_unlock (&b->lock);
  whisper_turn_lock_acquire (&net->compute_lock);
  return req.n_parts;
}

void
whisper_step_batcher_leave (WhisperStepBatcher *b, WhisperStepMember *member)
{
  /* a pass sets it only while the stream waits in whisper_step_batcher_run() */
  if (!member->expected)
    return;
  g_mutex_lock (&b->lock);
  batcher_locked_leave (b, member);
  g_mutex_unlock (&b->lock);
}

void
whisper_step_batcher_counts (WhisperStepBatcher *b, guint64 *passes, guint64 *steps)
{
  g_mutex_lock (&b->lock);
  if (passes)
    *passes = b->passes;
  if (steps)
    *steps = b->steps;
  g_mutex_unlock (&b->lock);
}
