/* gstwhisperalign.c: continuous runs, small holes filled with silence and
 * overlaps dropped, from the buffer timestamps (see gstwhisperalign.h). */
#include "io/gstwhisperalign.h"

void
gst_whisper_align_init (GstWhisperAlign *a, gint rate, GstClockTime tolerance)
{
  a->rate = rate;
  a->tolerance = tolerance;
  gst_whisper_align_mark_discont (a);
}

void
gst_whisper_align_mark_discont (GstWhisperAlign *a)
{
  a->run_start = GST_CLOCK_TIME_NONE;
  a->run_samples = 0;
}

/* Time of run sample `index`. */
static GstClockTime
time_at (const GstWhisperAlign *a, guint64 index)
{
  return a->run_start + gst_util_uint64_scale_int_round (index, GST_SECOND, a->rate);
}

GstClockTime
gst_whisper_align_next_pts (const GstWhisperAlign *a)
{
  if (!GST_CLOCK_TIME_IS_VALID (a->run_start))
    return GST_CLOCK_TIME_NONE;
  return time_at (a, a->run_samples);
}

/* Run sample index of `pts` (not before the run's start). */
static guint64
index_at (const GstWhisperAlign *a, GstClockTime pts)
{
  return gst_util_uint64_scale_int_round (pts - a->run_start, a->rate, GST_SECOND);
}

static void
new_run (GstWhisperAlign *a, GstClockTime pts, gsize n, GstWhisperAlignResult *r)
{
  a->run_start = pts;
  a->run_samples = n;
  r->resync = TRUE;
  r->pts = pts;
}

void
gst_whisper_align_process (GstWhisperAlign *a, GstClockTime pts, gsize n,
    GstClockTime max_gap, GstWhisperAlignResult *r)
{
  GstClockTime expected;

  r->resync = FALSE;
  r->fill = r->skip = 0;
  g_return_if_fail (GST_CLOCK_TIME_IS_VALID (pts));

  if (!GST_CLOCK_TIME_IS_VALID (a->run_start)) {
    new_run (a, pts, n, r);
    return;
  }
  expected = gst_whisper_align_next_pts (a);

  if (pts > expected + a->tolerance) {
    /* A hole: samples are missing. */
    if (pts - expected > max_gap) {
      new_run (a, pts, n, r);
      return;
    }
    r->fill = (gsize) (index_at (a, pts) - a->run_samples);
  } else if (pts + a->tolerance < expected) {
    /* An overlap: the start of the buffer was received already. */
    if (expected - pts > max_gap) {
      new_run (a, pts, n, r);
      return;
    }
    r->skip = (gsize) MIN ((guint64) n, a->run_samples - (pts > a->run_start
            ? index_at (a, pts) : 0));
  }
  r->pts = time_at (a, a->run_samples + r->fill);
  a->run_samples += r->fill + (n - r->skip);
}
