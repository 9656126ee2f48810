/* gstwhisperfleet.c: device=remote, file input, in pieces sent ahead (see
 * gstwhisperfleet.h).
 *
 * The cutting: the voice activity detector's speech regions
 * (whisper_vad_speech_timestamps (), the detector and get_speech_timestamps
 * () offline-mode=batched cuts with, max_speech_duration_s one window)
 * joined in order while a piece stays within the window, as batched joins
 * them; unlike batched, a piece is the audio itself from one cut to the
 * next (the pause between two pieces is cut in its middle), not the speech
 * regions glued together, so that a piece's times are its start plus the
 * server's times. Audio with no speech region is not sent (a GAP covers
 * it). The detector reads SPAN samples from the last cut at a time (or
 * what is left at a drain), and a region that ends within TAIL of the end
 * of what it read waits for the next read: the cuts depend on the audio
 * only, never on when it arrived or how fast the servers answer, so that
 * the pieces (and so the text) are the same with any server-requests.
 * Without a detector (vad-model missing) the pieces are whole windows.
 *
 * The pieces go to gst_whisper_remote_submit () as they are cut, while
 * fewer than AHEAD x server-requests wait for their answer (the client
 * keeps server-requests of them in flight); the oldest piece's answer is
 * pushed as soon as it is in (each piece's text after the text of all
 * pieces before it), the task waiting for it when that many pieces are out
 * or at a drain. Retries (another server, a back-off) are
 * the client's (remote/gstwhisperremotefleet.c): a piece is never given up but for a
 * refusal (4xx: an error) or a flush. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "task/gstwhisperfleet.h"
#include "task/gstwhispercall.h"

#define GST_CAT_DEFAULT gst_whisper_sink_debug

#define SPAN (90 * WHISPER_SAMPLE_RATE)
#define TAIL (3 * WHISPER_SAMPLE_RATE)
/* Pieces sent and not pushed: this many times server-requests, so that the
 * servers go on with the pieces after one that waits for an answer (a
 * retry after a server died) instead of standing idle behind it. */
#define AHEAD 2

static void
add_piece (GArray *out, guint64 start, gsize n, gboolean speech)
{
  GstWhisperFleetPiece p = { start, n, speech, NULL };

  if (n == 0)
    return;
  g_array_append_val (out, p);
}

/* Cuts pcm[0..n) (run index `base`) into pieces of at most `max` samples
 * (see the top); `final`: the run ends there. Returns the samples cut. */
static gsize
cut_span (GstWhisperSink *self, const float *pcm, gsize n, guint64 base, gboolean final,
    gsize max, GArray *out)
{
  g_autoptr (GArray) speech = g_array_new (FALSE, FALSE, sizeof (WhisperVadSpeech));
  g_autoptr (GError) err = NULL;
  WhisperVadOptions vo;
  gsize pos = 0;
  guint i = 0;

  if (self->vad) {
    gst_whisper_vad_settings_fill_vad (&self->task_settings.vad, &vo);
    vo.max_speech_duration_s = max / (double) WHISPER_SAMPLE_RATE;
    if (!whisper_vad_speech_timestamps (self->vad, pcm, n, &vo, speech, &err)) {
      GST_WARNING_OBJECT (self, "detector failed (%s): whole windows", err->message);
      g_array_set_size (speech, 0);
    } else {
      goto regions;
    }
  }
  /* no detector: whole windows, all of them speech */
  while (n - pos >= max || (final && pos < n)) {
    gsize len = MIN (max, n - pos);
    add_piece (out, base + pos, len, TRUE);
    pos += len;
  }
  return pos;

regions:
#define R(k) (&g_array_index (speech, WhisperVadSpeech, (k)))
#define COMPLETE(k) (final || (gsize) R (k)->end_sample + TAIL <= n)
  while (i < speech->len && COMPLETE (i)) {
    gsize start, cut, next_start;
    guint j = i;
    /* silence that does not fit with the speech after it */
    if ((gsize) R (i)->end_sample - pos > max) {
      add_piece (out, base + pos, (gsize) R (i)->start_sample - pos, FALSE);
      pos = (gsize) R (i)->start_sample;
    }
    start = pos;
    while (j + 1 < speech->len && COMPLETE (j + 1)
        && (gsize) R (j + 1)->end_sample - start <= max)
      j++;
    next_start = j + 1 < speech->len ? (gsize) R (j + 1)->start_sample : n;
    cut = MIN (((gsize) R (j)->end_sample + next_start) / 2, start + max);
    cut = MAX (cut, (gsize) R (j)->end_sample);
    add_piece (out, base + start, cut - start, TRUE);
    pos = cut;
    i = j + 1;
  }
  if (final) {
    add_piece (out, base + pos, n - pos, FALSE);
    pos = n;
  } else if (i == speech->len) {
    /* no speech up to TAIL before the end */
    if (n - TAIL > pos) {
      add_piece (out, base + pos, n - TAIL - pos, FALSE);
      pos = n - TAIL;
    }
  } else if ((gsize) R (i)->start_sample > pos) {
    /* the silence before a region that goes on past what was read */
    add_piece (out, base + pos, (gsize) R (i)->start_sample - pos, FALSE);
    pos = (gsize) R (i)->start_sample;
  }
#undef COMPLETE
#undef R
  return pos;
}

/* Cuts the next span and sends its pieces; FALSE when there is not enough
 * audio for one (and not draining) or none left. */
static gboolean
cut_more (GstWhisperSink *self, gboolean drain)
{
  GstWhisperWindow *w = &self->window;
  const GstWhisperSettings *s = &self->task_settings;
  guint64 end = gst_whisper_window_end (w);
  gsize left, n, cut;
  gboolean final;
  g_autoptr (GArray) pieces = g_array_new (FALSE, FALSE, sizeof (GstWhisperFleetPiece));
  GstWhisperRemoteRequest req = { 0, };
  guint i;

  if (g_queue_is_empty (&self->fleet))
    self->fleet_cut = w->seek;
  left = (gsize) (end - self->fleet_cut);
  if (left == 0 || (left < SPAN && !drain))
    return FALSE;
  n = MIN (left, (gsize) SPAN);
  final = drain && left <= SPAN;
  cut = cut_span (self, gst_whisper_window_data (w) + (self->fleet_cut - w->seek), n,
      self->fleet_cut, final, GST_WHISPER_REMOTE_WINDOW_SAMPLES, pieces);
  if (cut == 0)
    return FALSE;
  self->fleet_cut += cut;

  req.language = s->decoding.language_code;
  req.temperature = 0.0;
  req.words = s->output.output == GST_WHISPER_OUTPUT_WORDS;
  for (i = 0; i < pieces->len; i++) {
    GstWhisperFleetPiece *p = g_new (GstWhisperFleetPiece, 1);
    *p = g_array_index (pieces, GstWhisperFleetPiece, i);
    if (p->speech)
      p->job = gst_whisper_remote_submit (self->remote,
          gst_whisper_window_data (w) + (p->start - w->seek), p->n_samples, &req);
    GST_LOG_OBJECT (self, "piece at %.2f s, %.2f s%s", p->start / (double) WHISPER_SAMPLE_RATE,
        p->n_samples / (double) WHISPER_SAMPLE_RATE, p->job ? "" : ", no speech");
    g_queue_push_tail (&self->fleet, p);
  }
  return TRUE;
}

static guint
n_sent (GstWhisperSink *self)
{
  guint n = 0;

  for (GList * l = self->fleet.head; l; l = l->next)
    n += ((GstWhisperFleetPiece *) l->data)->job != NULL;
  return n;
}

GstFlowReturn
gst_whisper_fleet_process (GstWhisperSink *self, gboolean drain)
{
  const guint max = AHEAD * gst_whisper_remote_max_requests (self->remote);

  for (;;) {
    GstWhisperFleetPiece *p;
    GstFlowReturn ret;

    while (n_sent (self) < max && cut_more (self, drain))
      ;
    p = g_queue_peek_head (&self->fleet);
    if (p == NULL)
      return GST_FLOW_OK;
    if (G_UNLIKELY (p->start != self->window.seek)) {
      /* not expected: the window moved without the pieces; cut again */
      GST_WARNING_OBJECT (self, "piece at %" G_GUINT64_FORMAT ", window at %" G_GUINT64_FORMAT,
          p->start, self->window.seek);
      gst_whisper_fleet_reset (self);
      continue;
    }
    if (p->job && !drain && n_sent (self) < max
        && !gst_whisper_remote_job_is_done (self->remote, p->job))
      return GST_FLOW_OK;       /* room for more: take more audio first */
    g_queue_pop_head (&self->fleet);
    ret = gst_whisper_call_remote_piece (self, p->job, p->n_samples);
    g_free (p);
    if (ret != GST_FLOW_OK) {
      /* that piece's audio is still in the window: the pieces after it go
       * too, and are cut again from there if the task goes on */
      gst_whisper_fleet_reset (self);
      return ret;
    }
  }
}

void
gst_whisper_fleet_reset (GstWhisperSink *self)
{
  GstWhisperFleetPiece *p;

  while ((p = g_queue_pop_head (&self->fleet))) {
    if (p->job)
      gst_whisper_remote_job_drop (self->remote, p->job);
    g_free (p);
  }
}
