/* gstwhisperalign.h: the timeline of the audio whispersink receives. It
 * decides, buffer by buffer from the timestamps, whether the audio goes on
 * the current run (continuous audio whose sample times are the run's start
 * plus the sample index), goes on after a small hole filled with silence,
 * loses a leading part that overlaps what was received already, or starts
 * a new run.
 *
 * Lossy live sources (network audio, `identity drop-probability`) lose a
 * buffer now and then; without filling, every such hole ended the run (the
 * engine transcribed what it had and started again), cutting the words on
 * either side. A hole up to `max_gap` is filled with zeros, so the run goes
 * on and sample times stay those of the timestamps; a larger one starts a
 * new run. Timestamp jitter within `tolerance` is ignored (the audio is
 * taken as continuous), as GstAudioStreamAlign's alignment threshold does.
 * The DISCONT flag alone does not end a run: a source marks the buffer
 * after a loss with it, and the timestamps say how much was lost.
 *
 * Used by the upstream streaming thread only (gstwhispersink.c); no
 * locking. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

typedef struct {
  gint rate;
  GstClockTime tolerance;   /* jitter taken as continuous */
  GstClockTime run_start;   /* PTS of the run's first sample; NONE: no run */
  guint64 run_samples;      /* samples of the run so far, silence included */
} GstWhisperAlign;

typedef struct {
  gboolean resync;          /* the buffer starts a new run at `pts` */
  GstClockTime pts;         /* time of the first sample kept (after the fill) */
  gsize fill;               /* zero samples to put before the buffer */
  gsize skip;               /* samples to drop from the start of the buffer */
} GstWhisperAlignResult;

void gst_whisper_align_init (GstWhisperAlign *a, gint rate, GstClockTime tolerance);
/* The next buffer starts a new run (SEGMENT, GAP, flush, new stream). */
void gst_whisper_align_mark_discont (GstWhisperAlign *a);
/* Time of the sample after the run's last one (NONE without a run): the
 * PTS of a buffer that has none. */
GstClockTime gst_whisper_align_next_pts (const GstWhisperAlign *a);
/* Places a buffer of `n` samples at `pts` (valid): continuous within the
 * tolerance, a hole up to `max_gap` filled, an overlap up to `max_gap`
 * skipped (all of the buffer when it lies entirely before the run's end),
 * anything larger a new run. `max_gap` 0 never fills nor skips. */
void gst_whisper_align_process (GstWhisperAlign *a, GstClockTime pts, gsize n,
    GstClockTime max_gap, GstWhisperAlignResult *result);

G_END_DECLS
