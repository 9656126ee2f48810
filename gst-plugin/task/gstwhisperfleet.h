/* gstwhisperfleet.h: device=remote, file (non-live) input: the run cut at
 * non-speech into pieces of at most one window, up to server-requests of
 * them in flight at once on the servers of server-url, their text out in
 * the order of the audio (gstwhisperfleet.c). Inference task only. */
#pragma once

#include "task/gstwhispersink-private.h"

G_BEGIN_DECLS

/* One piece of the run, from the window's seek point on. */
typedef struct {
  guint64 start;              /* run index of its first sample */
  gsize n_samples;
  gboolean speech;            /* FALSE: no speech in it, nothing sent */
  GstWhisperRemoteJob *job;   /* its request (speech only) */
} GstWhisperFleetPiece;

/* Cuts what is buffered into pieces, sends them and pushes the text of
 * those answered, in order; with `drain`, all of the buffered audio, and
 * waits for every answer. */
GstFlowReturn gst_whisper_fleet_process (GstWhisperSink *self, gboolean drain);
/* Drops the pieces sent and not pushed (flushing, a new stream). */
void gst_whisper_fleet_reset (GstWhisperSink *self);

G_END_DECLS
