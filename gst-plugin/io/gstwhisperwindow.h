/* gstwhisperwindow.h: the audio whispersink has received but not yet
 * transcribed, its timestamps, and the policy that decides which part of it
 * the engine gets next.
 *
 * A "run" is audio with continuous timestamps: it starts at a resync point
 * (the first buffer, a DISCONT, a GAP, a new SEGMENT) whose PTS is kept, and
 * the time of any sample of the run is that PTS plus its sample index
 * converted to time, so timestamps never drift however the audio was
 * buffered. Used by the src-pad task only; no locking. */
#pragma once

#include <gst/gst.h>
#include "settings/gstwhisperenums.h"

G_BEGIN_DECLS

typedef struct {
  GArray *pcm;              /* float samples; pcm[0] is run sample `base` */
  guint64 base;             /* run index of pcm[0] */
  guint64 seek;             /* run index of the next sample to transcribe */
  guint64 given;            /* run index up to which the engine has seen audio */
  GstClockTime resync_pts;  /* PTS of run sample 0 */
  gint rate;
} GstWhisperWindow;

typedef struct {
  gboolean live;
  GstWhisperOfflineMode offline;
  gsize window_samples;     /* audio per engine window (WhisperEngineInfo.window_samples) */
  gsize lookahead_samples;  /* windowed mode: audio needed beyond the window */
  gsize chunk_samples;      /* live: new audio that triggers an engine call */
  gsize budget_samples;     /* live: latency + lateness; a call covers at most 3 chunks,
                               and no more than the budget less one chunk (the time
                               left for inference) */
  gboolean commit;          /* live, local engine: the commit policy (gstwhisperlive.c):
                               each call decodes the whole uncommitted buffer */
} GstWhisperWindowPolicy;

/* What happens to the end of the audio handed to the engine. */
typedef enum {
  GST_WHISPER_CARRY_NONE,          /* everything is transcribed */
  GST_WHISPER_CARRY_AFTER_WINDOW,  /* only the engine's first window is kept; the audio
                                      from where it would seek next stays buffered */
  GST_WHISPER_CARRY_LAST_SEGMENT,  /* the last segment is not output; its audio stays
                                      buffered and is decoded again with what follows */
  GST_WHISPER_CARRY_COMMIT,        /* live commit policy: what is committed goes out,
                                      the buffer keeps what is not (gstwhisperlive.h) */
} GstWhisperCarry;

typedef struct {
  gsize n_samples;         /* samples from the seek point handed to the engine */
  GstWhisperCarry carry;
} GstWhisperRegion;

void gst_whisper_window_init (GstWhisperWindow *w, gint rate);
void gst_whisper_window_clear (GstWhisperWindow *w);
/* Starts a new run at `resync_pts`; drops all buffered audio. */
void gst_whisper_window_reset (GstWhisperWindow *w, GstClockTime resync_pts);
void gst_whisper_window_append (GstWhisperWindow *w, const float *samples, gsize n);

static inline guint64
gst_whisper_window_end (const GstWhisperWindow *w)
{
  return w->base + w->pcm->len;
}

static inline gsize
gst_whisper_window_pending (const GstWhisperWindow *w)
{
  return (gsize) (gst_whisper_window_end (w) - w->seek);
}

/* The samples from the seek point on. */
const float *gst_whisper_window_data (const GstWhisperWindow *w);
/* Time of a run sample index: resync PTS + index / rate (NONE without a resync PTS). */
GstClockTime gst_whisper_window_time_at (const GstWhisperWindow *w, guint64 run_index);
/* Run index of a time given in seconds from the seek point. */
guint64 gst_whisper_window_index_at (const GstWhisperWindow *w, double seconds_from_seek);

/* What to hand the engine now; FALSE when nothing is due. `drain` asks for
 * everything that is buffered (EOS, DISCONT, GAP, new SEGMENT). */
gboolean gst_whisper_window_next_region (const GstWhisperWindow *w,
    const GstWhisperWindowPolicy *policy, gboolean drain, GstWhisperRegion *region);
/* Live: the chunk of new audio that triggers a call for a latency budget:
 * a quarter of it, at least 0.5 s (GST_WHISPER_MIN_CHUNK_MS), at most a
 * window. */
#define GST_WHISPER_MIN_CHUNK_MS 500
gsize gst_whisper_window_chunk_for_latency (guint latency_ms, gint rate,
    gsize window_samples);
/* Live, the commit policy: the new audio that triggers a decode of the
 * buffer, a sixth of the budget, at least 0.5 s, at most a window. */
gsize gst_whisper_window_commit_chunk (guint latency_ms, gint rate, gsize window_samples);
/* Live: the most audio a call may cover and still hold back its last
 * segment (see gstwhisperwindow.c). */
gsize gst_whisper_window_carry_limit (const GstWhisperWindowPolicy *policy);
/* Live: the most audio that can be waiting while inference keeps up (takes
 * less than a chunk per call); more means it fell behind. */
gsize gst_whisper_window_backlog_limit (const GstWhisperWindowPolicy *policy);
/* Marks `n_given` samples from the seek point as seen by the engine and
 * `n_done` of them as transcribed: the seek point moves by n_done and the
 * samples before it are released. */
void gst_whisper_window_advance (GstWhisperWindow *w, gsize n_given, gsize n_done);
/* Live overload: drops the oldest pending samples so that at most `keep`
 * remain; returns how many were dropped (their time span starts at the old
 * seek point). */
gsize gst_whisper_window_drop_backlog (GstWhisperWindow *w, gsize keep);

/* Live calls: the deadline counts the next call as long as the longest of
 * the last GST_WHISPER_RECENT_CALLS (a call's time varies with the
 * machine's load and grows with the buffer: counted as the last one alone,
 * a slower next call made its words late). Zeroed: none yet. */
#define GST_WHISPER_RECENT_CALLS 4
typedef struct {
  GstClockTime recent[GST_WHISPER_RECENT_CALLS];  /* the newest at (n - 1) % the size */
  guint n;
} GstWhisperCallTimes;

/* Records a call's `duration`; returns how long the next call is counted. */
GstClockTime gst_whisper_call_times_add (GstWhisperCallTimes *t, GstClockTime duration);

G_END_DECLS
