/* gstwhisperwindow.c: buffered audio, drift-free timestamps and the window
 * policy of whispersink (see gstwhisperwindow.h). */
#include "io/gstwhisperwindow.h"

#include <math.h>
#include <string.h>

void
gst_whisper_window_init (GstWhisperWindow *w, gint rate)
{
  memset (w, 0, sizeof (*w));
  w->pcm = g_array_new (FALSE, FALSE, sizeof (float));
  w->rate = rate;
  w->resync_pts = GST_CLOCK_TIME_NONE;
}

void
gst_whisper_window_clear (GstWhisperWindow *w)
{
  g_clear_pointer (&w->pcm, g_array_unref);
}

void
gst_whisper_window_reset (GstWhisperWindow *w, GstClockTime resync_pts)
{
  g_array_set_size (w->pcm, 0);
  w->base = w->seek = w->given = 0;
  w->resync_pts = resync_pts;
}

void
gst_whisper_window_append (GstWhisperWindow *w, const float *samples, gsize n)
{
  g_array_append_vals (w->pcm, samples, n);
}

const float *
gst_whisper_window_data (const GstWhisperWindow *w)
{
  return &g_array_index (w->pcm, float, w->seek - w->base);
}

GstClockTime
gst_whisper_window_time_at (const GstWhisperWindow *w, guint64 run_index)
{
  if (!GST_CLOCK_TIME_IS_VALID (w->resync_pts))
    return GST_CLOCK_TIME_NONE;
  return w->resync_pts + gst_util_uint64_scale_int_round (run_index, GST_SECOND, w->rate);
}

guint64
gst_whisper_window_index_at (const GstWhisperWindow *w, double seconds_from_seek)
{
  if (seconds_from_seek <= 0.0)
    return w->seek;
  return w->seek + (guint64) llround (seconds_from_seek * w->rate);
}

gsize
gst_whisper_window_chunk_for_latency (guint latency_ms, gint rate, gsize window_samples)
{
  gsize chunk = gst_util_uint64_scale_int (latency_ms / 4, rate, 1000);
  gsize min = gst_util_uint64_scale_int (GST_WHISPER_MIN_CHUNK_MS, rate, 1000);

  return MIN (MAX (chunk, min), window_samples);
}

/* The commit policy (task/gstwhisperlive.c) commits a word once two
 * decodes agree on it, or at its deadline: the more decodes fit in the
 * budget, the more words agree before it, so the chunk is a sixth of the
 * latency rather than a quarter. */
gsize
gst_whisper_window_commit_chunk (guint latency_ms, gint rate, gsize window_samples)
{
  gsize chunk = gst_util_uint64_scale_int (latency_ms / 6, rate, 1000);
  gsize min = gst_util_uint64_scale_int (GST_WHISPER_MIN_CHUNK_MS, rate, 1000);

  return MIN (MAX (chunk, min), window_samples);
}

/* A sample waits for the call that outputs it at most as long as a call
 * covers (the limit below), and that call takes up to a chunk when inference
 * keeps up: with the limit at 3 chunks and the budget at 4 or more, text is
 * out within the budget. A chunk is never shorter than 0.5 s
 * (gst_whisper_window_chunk_for_latency ()), so with a budget under 4 chunks the limit shrinks to
 * budget - chunk, and to one chunk (nothing held back) below 2 chunks. */
gsize
gst_whisper_window_carry_limit (const GstWhisperWindowPolicy *p)
{
  gsize c = p->chunk_samples;
  gsize left = p->budget_samples > c ? p->budget_samples - c : 0;

  return MIN (MIN (3 * c, p->window_samples), MAX (left, c));
}

/* A call covers at most the carry limit, of which all but the newest chunk
 * may be held back from the call before; the audio that arrives while a
 * call runs, less than a chunk when inference keeps up, makes that newest
 * chunk longer. So up to the carry limit plus one chunk waits, which is the
 * budget unless the budget is under 2 chunks (then 2 chunks). Comparing the
 * budget alone with the waiting audio dropped the held-back segment
 * whenever the budget was under 3 chunks plus the audio of one call (any
 * latency under 2 s with 0.5-s chunks), however fast inference was. */
gsize
gst_whisper_window_backlog_limit (const GstWhisperWindowPolicy *p)
{
  return MAX (p->budget_samples,
      gst_whisper_window_carry_limit (p) + p->chunk_samples);
}

/* The call that moves the window on ends at the quietest moment of its last
 * `search` samples (frames of QUIET_FRAME_MS, the latest of equals; the
 * end itself when the last frame is the quietest), so that a word is seldom
 * cut in two: the rest waits for the next call. */
#define QUIET_SEARCH_MS 600
#define QUIET_FRAME_MS 20

static gsize
quiet_end (const GstWhisperWindow *w, gsize n, gsize search)
{
  const float *x = gst_whisper_window_data (w);
  gsize frame = (gsize) w->rate * QUIET_FRAME_MS / 1000, best = n, at;
  double best_energy = G_MAXDOUBLE;

  if (frame == 0 || search < frame || n < 2 * search)
    return n;
  for (at = n; at >= n - search + frame; at -= frame) {
    double e = 0.0;
    for (gsize i = at - frame; i < at; i++)
      e += (double) x[i] * x[i];
    if (e < best_energy) {
      best_energy = e;
      best = at - frame / 2;
    }
  }
  return best == n - frame / 2 ? n : best;
}

gboolean
gst_whisper_window_next_region (const GstWhisperWindow *w,
    const GstWhisperWindowPolicy *p, gboolean drain, GstWhisperRegion *region)
{
  gsize pending = gst_whisper_window_pending (w);
  guint64 end = gst_whisper_window_end (w);

  region->n_samples = 0;
  region->carry = GST_WHISPER_CARRY_NONE;
  if (pending == 0)
    return FALSE;

  if (p->live && p->commit) {
    gsize fresh = (gsize) (end - MAX (w->given, w->seek));

    /* A drain with nothing new commits what is pending without a call. */
    if (drain ? fresh == 0 : (p->chunk_samples == 0 || fresh < p->chunk_samples))
      return FALSE;
    region->n_samples = MIN (pending, p->window_samples);
    region->carry = GST_WHISPER_CARRY_COMMIT;
    return TRUE;
  }

  if (drain) {
    region->n_samples = pending;
    return TRUE;
  }

  if (p->live) {
    guint64 from = MAX (w->given, w->seek);
    gsize fresh = (gsize) (end - from), limit = gst_whisper_window_carry_limit (p), take;

    if (p->chunk_samples == 0 || fresh < p->chunk_samples)
      return FALSE;
    /* One chunk past the end of the last call, so that where a call ends
     * depends on the audio, not on how much arrived while the one before
     * ran: a call slower than a chunk is followed at once by the next, a
     * chunk on. Only two chunks behind does a call take all the whole
     * chunks waiting. */
    take = fresh < 2 * p->chunk_samples ? p->chunk_samples : fresh - fresh % p->chunk_samples;
    region->n_samples = MIN ((gsize) (from - w->seek) + take, p->window_samples);
    /* The last segment may be cut by the edge of the audio: decode it again
     * with the next chunk, as long as that call stays within the limit. */
    if (region->n_samples + p->chunk_samples <= limit)
      region->carry = GST_WHISPER_CARRY_LAST_SEGMENT;
    else if (limit >= 2 * p->chunk_samples)
      region->n_samples = quiet_end (w, region->n_samples,
          MIN (p->chunk_samples / 2, (gsize) w->rate * QUIET_SEARCH_MS / 1000));
    return TRUE;
  }

  if (p->offline == GST_WHISPER_OFFLINE_WINDOWED
      && pending >= p->window_samples + p->lookahead_samples) {
    region->n_samples = p->window_samples + p->lookahead_samples;
    region->carry = GST_WHISPER_CARRY_AFTER_WINDOW;
    return TRUE;
  }
  return FALSE;
}

static void
release_before_seek (GstWhisperWindow *w)
{
  gsize n = (gsize) (w->seek - w->base);

  if (n == 0)
    return;
  g_array_remove_range (w->pcm, 0, MIN (n, w->pcm->len));
  w->base = w->seek;
}

void
gst_whisper_window_advance (GstWhisperWindow *w, gsize n_given, gsize n_done)
{
  g_return_if_fail (n_done <= n_given);
  g_return_if_fail (n_given <= gst_whisper_window_pending (w));

  w->given = MAX (w->given, w->seek + n_given);
  w->seek += n_done;
  release_before_seek (w);
}

gsize
gst_whisper_window_drop_backlog (GstWhisperWindow *w, gsize keep)
{
  gsize pending = gst_whisper_window_pending (w);
  gsize drop;

  if (pending <= keep)
    return 0;
  drop = pending - keep;
  w->seek += drop;
  w->given = MAX (w->given, w->seek);
  release_before_seek (w);
  return drop;
}

GstClockTime
gst_whisper_call_times_add (GstWhisperCallTimes *t, GstClockTime duration)
{
  GstClockTime longest = 0;
  const guint n = MIN (t->n + 1, GST_WHISPER_RECENT_CALLS);

  t->recent[t->n++ % GST_WHISPER_RECENT_CALLS] = duration;
  for (guint i = 0; i < n; i++)
    longest = MAX (longest, t->recent[i]);
  return longest;
}
