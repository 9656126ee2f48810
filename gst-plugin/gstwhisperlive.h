/* gstwhisperlive.h: the live commit path of whispersink's inference task
 * (see gstwhisperlive.c). Used by the inference task only. */
#pragma once

#include <gst/gst.h>

#include "gstwhispercommit.h"
#include "gstwhispersink.h"
#include "gstwhisperenums.h"
#include "gstwhisperoutput.h"
#include "whisper-engine.h"

G_BEGIN_DECLS

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
} GstWhisperLive;

void gst_whisper_live_init (GstWhisperLive *live, gint rate);
void gst_whisper_live_clear (GstWhisperLive *live);
/* A new run: nothing committed, nothing pending. */
void gst_whisper_live_reset (GstWhisperLive *live);
/* Before a call: the stream's prompt history becomes the initial prompt
 * (may be NULL) followed by the committed text before the buffer
 * (`committed`), or nothing. */
void gst_whisper_live_prepare (GstWhisperSink *self, GstWhisperLive *live,
    WhisperStream *stream, const gchar *initial_prompt, gboolean committed);
/* After a call on `n_samples` from run index `call_start` that gave
 * `segments` (with words): commits, pushes to `out` and posts, and returns how many
 * samples from call_start the buffer may release. `call_duration` is how
 * long the call took, `chunk` the new audio that triggers the next one,
 * `budget` latency + lateness. *flow: the output queue's answer. */
gsize gst_whisper_live_finish_call (GstWhisperSink *self, GstWhisperLive *live,
    GstWhisperOutput *out, guint64 call_start, gsize n_samples, GPtrArray *segments, gboolean drain,
    GstClockTime call_duration, GstClockTime chunk, GstClockTime budget,
    GstWhisperOutputMode output, GstFlowReturn *flow);
/* Commits and pushes what is pending without a decode (a drain without new
 * audio, or before audio is dropped). */
GstFlowReturn gst_whisper_live_flush (GstWhisperSink *self, GstWhisperLive *live,
    GstWhisperOutput *out, GstWhisperOutputMode output);

G_END_DECLS
