/* gstwhisperlive.h: the live commit path of whispersink's inference task
 * (see gstwhisperlive.c). Used by the inference task only. */
#pragma once

#include <gst/gst.h>

#include "task/gstwhispercommit.h"
#include "task/gstwhispercontext.h"
#include "settings/gstwhisperenums.h"
#include "io/gstwhisperoutput.h"
#include "io/gstwhisperwindow.h"
#include <whisper/whisper.h>

G_BEGIN_DECLS

/* The element (element/gstwhispersink.h declares its type). */
typedef struct _GstWhisperSink GstWhisperSink;

/* A buffer of uncommitted audio longer than this is cut at the committed
 * end (it stays within one 30-s window, and a decode's work stays small). */
#define GST_WHISPER_LIVE_MAX_BUFFER_S 20.0

typedef struct {
  gint rate;
  GstWhisperCommit commit;
  gchar *prompt_set;       /* the committed text of prompt_ids */
  gint32 *prompt_ids;      /* its tokens, the stream's history before each call */
  gsize n_prompt_ids;
  guint since_final;       /* items committed since the last final-transcript event */
  GstWhisperContext context;  /* committed speech before the buffer (gstwhispercontext.h) */
  double context_s;        /* live-context of the last call (0: none kept) */
  guint64 speech_from;     /* the last call's first speech not committed yet
                              (gst_whisper_live_speech_from; G_MAXUINT64: none known) */
  guint64 sentence_onset;  /* where the sentence after the pause the last call's
                              input left out starts, as the detector heard it
                              (G_MAXUINT64: no pause left out) */
  GstWhisperCallTimes calls;  /* the last calls' durations, for the deadline */
} GstWhisperLive;

void gst_whisper_live_init (GstWhisperLive *live, gint rate);

void gst_whisper_live_clear (GstWhisperLive *live);
/* A new run: nothing committed, nothing pending. */
void gst_whisper_live_reset (GstWhisperLive *live);
/* Before a call on the buffer (`window`, n samples from run index
 * window_start): runs the voice activity detector (`vad`, with `options`;
 * NULL: none loaded) over the buffer and sets *in to what the call
 * decodes: the buffer, after `context_s` seconds of committed speech
 * when there is some (gstwhispercontext.h; 0: never). The detector's
 * first speech not committed yet guards the silence trim of
 * gst_whisper_live_finish_call. Object lock not held (the detector takes
 * milliseconds per second of audio). */
void gst_whisper_live_begin_call (GstWhisperSink *self, GstWhisperLive *live,
    const WhisperVad *vad, const WhisperVadOptions *options, double context_s,
    const float *window, guint64 window_start, gsize n, GstWhisperLiveInput *in);
/* Before a call: the stream's prompt history becomes the initial prompt
 * (may be NULL) followed by the committed text before the buffer
 * (`committed`), or nothing; agreed words below `min_probability` wait
 * for their deadline (gstwhispercommit.h). */
void gst_whisper_live_prepare (GstWhisperSink *self, GstWhisperLive *live,
    WhisperStream *stream, const gchar *initial_prompt, gboolean committed,
    double min_probability);
/* After a call on `in` (gst_whisper_live_begin_call, or the buffer alone)
 * that gave `segments` (with words): commits, pushes to `out` and posts,
 * and returns how many samples from in->window_start the buffer may
 * release. `call_duration` is how long the call took, `chunk` the new
 * audio that triggers the next one, `budget` latency + lateness. *flow:
 * the output queue's answer. */
gsize gst_whisper_live_finish_call (GstWhisperSink *self, GstWhisperLive *live,
    GstWhisperOutput *out, const GstWhisperLiveInput *in, GPtrArray *segments, gboolean drain,
    GstClockTime call_duration, GstClockTime chunk, GstClockTime budget,
    GstWhisperOutputMode output, GstFlowReturn *flow);
/* Before a call that ends at `call_end` (a run sample index): how long it
 * may take before a pending word (read, not committed: it waits for this
 * call) reaches `out` later than `budget` after its end, less the
 * deadline's margin; 0 when one would be late already,
 * GST_CLOCK_TIME_NONE when no word is pending or there is no clock. */
GstClockTime gst_whisper_live_pending_slack (const GstWhisperLive *live,
    const GstWhisperOutput *out, const GstWhisperWindow *w, guint64 call_end,
    GstClockTime budget);
/* Commits and pushes what is pending without a decode (a drain without new
 * audio, or before audio is dropped). */
GstFlowReturn gst_whisper_live_flush (GstWhisperSink *self, GstWhisperLive *live,
    GstWhisperOutput *out, GstWhisperOutputMode output);

G_END_DECLS
