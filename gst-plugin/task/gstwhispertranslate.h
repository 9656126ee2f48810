/* gstwhispertranslate.h: whispersink's request pads `translate_src_%u`,
 * the English translation of the same speech (a second decode of every
 * engine call with task=translate), as transcriberbin asks of a
 * transcriber (see gstwhispertranslate.c). */
#pragma once

#include <gst/gst.h>

#include "task/gstwhisperlive.h"
#include "io/gstwhisperoutput.h"
#include "io/gstwhisperoutqueue.h"
#include <whisper/whisper.h>

G_BEGIN_DECLS

/* The element (element/gstwhispersink.h declares its type). */
typedef struct _GstWhisperSink GstWhisperSink;

#define GST_TYPE_WHISPER_TRANSLATE_PAD (gst_whisper_translate_pad_get_type ())
G_DECLARE_FINAL_TYPE (GstWhisperTranslatePad, gst_whisper_translate_pad, GST,
    WHISPER_TRANSLATE_PAD, GstPad)

/* Element class set-up: the pad template and the request/release vfuncs. */
void gst_whisper_translate_class_init (GstElementClass *klass);

/* READY->PAUSED (the engine exists): a stream for every pad; FALSE with an
 * error posted. PAUSED->READY: the streams go. */
gboolean gst_whisper_translate_open (GstWhisperSink *self);
void gst_whisper_translate_close (GstWhisperSink *self);
/* Flushing state of the pads' output queues (with the element's). */
void gst_whisper_translate_set_flushing (GstWhisperSink *self, gboolean flushing);
/* FLUSH_START / FLUSH_STOP onto every pad; FLUSH_STOP waits for their
 * tasks, resets them and restarts them. */
void gst_whisper_translate_flush_start (GstWhisperSink *self, GstEvent *event);
void gst_whisper_translate_flush_stop (GstWhisperSink *self, GstEvent *event);
/* PLAYING->PAUSED: the pads' sinks preroll again. */
void gst_whisper_translate_push_preroll (GstWhisperSink *self);

/* Inference task side (gstwhispertask.c): what the src pad gets, the
 * pads get too. */
gboolean gst_whisper_translate_any (GstWhisperSink *self);
void gst_whisper_translate_reset (GstWhisperSink *self);
void gst_whisper_translate_set_limits (GstWhisperSink *self, gboolean live,
    GstClockTime text_limit, GstClockTime budget, GstClockTime upstream_min);
void gst_whisper_translate_start_segment (GstWhisperSink *self, const GstSegment *segment,
    GstClockTime base_shift);
void gst_whisper_translate_start_at (GstWhisperSink *self, GstClockTime t);
void gst_whisper_translate_gap_until (GstWhisperSink *self, GstClockTime t);
/* A copy of a serialized event (STREAM_START gets the pad's own stream id,
 * CAPS the text caps, TAG the English language code). */
void gst_whisper_translate_push_event (GstWhisperSink *self, GstEvent *event);
void gst_whisper_translate_push_eos (GstWhisperSink *self);

/* One engine call of the src pad's, decoded again with task=translate for
 * the pads: gst_whisper_translate_prepare () before the call, then
 * gst_whisper_translate_transcribe () right after the src pad's decode on
 * the same input (the pads' streams take its encoder output: no encoder
 * pass of their own), then gst_whisper_translate_decode () once the src
 * pad's call knows `done`, how much of its audio (`pcm`, n_samples from
 * run index call_start) it transcribed (the pads output the segments that
 * start before it). Live (commit) calls commit the translation by the
 * same policy, on the src pad's input `in` (its context included). */
/* Before the call (inference task): the pads' streams get the options
 * (task=translate) and, live, their prompts from the task's copy of the
 * settings. Takes the translate lock (the pads change under it and then
 * the object lock). */
void gst_whisper_translate_prepare (GstWhisperSink *self, const WhisperDecodeOptions *options,
    gboolean commit, GstWhisperOutputMode output);

/* Every pad's translation of the call's input (`pcm`: the src pad's, the
 * same samples), kept for gst_whisper_translate_decode; the encoder passes
 * are counted in the element's stats. */
GstFlowReturn gst_whisper_translate_transcribe (GstWhisperSink *self, const float *pcm,
    gsize n_samples);

typedef struct {
  const float *pcm;
  const GstWhisperLiveInput *in;
  guint64 call_start;
  gsize n_samples;
  gsize done;
  gboolean commit;
  gboolean drain;
  GstClockTime call_duration, chunk, budget;
  GstWhisperOutputMode output;
} GstWhisperTranslateCall;

GstFlowReturn gst_whisper_translate_decode (GstWhisperSink *self,
    const GstWhisperTranslateCall *call);
/* A drain without new audio: the pads' pending words are committed. */
GstFlowReturn gst_whisper_translate_flush (GstWhisperSink *self, GstWhisperOutputMode output);

G_END_DECLS
