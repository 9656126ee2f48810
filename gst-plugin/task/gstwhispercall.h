/* gstwhispercall.h: one engine call of whispersink's inference task
 * (gstwhispercall.c). Inference task only; the call reads the task's copy
 * of the settings (self->task_settings). */
#pragma once

#include "task/gstwhispersink-private.h"

G_BEGIN_DECLS

/* Transcribes `region` (from the window's seek point) with the engine and
 * pushes what it gives; the transcribed part leaves the window. */
GstFlowReturn gst_whisper_call_transcribe (GstWhisperSink *self,
    const GstWhisperRegion *region, const GstWhisperWindowPolicy *policy, gboolean drain);
/* device=remote, live input: one request for `region`; *later when the
 * server did not answer (the audio stays buffered). Blocks (retries) when
 * draining. */
GstFlowReturn gst_whisper_call_transcribe_remote (GstWhisperSink *self,
    const GstWhisperRegion *region, gboolean drain, gboolean *later);
/* device=remote, file input: the answer of a piece of `n_samples` from the
 * window's seek point (gstwhisperfleet.c; job NULL: no speech, a GAP),
 * pushed; the piece leaves the window. Takes the job. */
GstFlowReturn gst_whisper_call_remote_piece (GstWhisperSink *self, GstWhisperRemoteJob *job,
    gsize n_samples);
/* `done` samples of `region` are transcribed: they leave the window, the
 * stats count them, and the output (and the translate_src pads) get a GAP
 * up to there where nothing covered it. */
void gst_whisper_call_advance (GstWhisperSink *self, const GstWhisperRegion *region,
    gsize done);

G_END_DECLS
