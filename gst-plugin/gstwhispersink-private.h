/* gstwhispersink-private.h: the instance structure of whispersink, shared by
 * gstwhispersink.c (pads, states, properties, events, chain) and
 * gstwhispertask.c (the src-pad task that runs the engine).
 *
 * Threads and locks:
 *  - properties, the stream pointer (for cancelling) and the counters of
 *    the stats property: GST_OBJECT_LOCK;
 *  - the hand-off from the streaming thread to the task: the queue's own
 *    lock (gstwhisperqueue.c), never held while transcribing or pushing;
 *  - sink-side fields: the upstream streaming thread only;
 *  - task-side fields: the src-pad task only (and the state change once the
 *    task is stopped). */
#pragma once

#include <gst/gst.h>
#include <gst/audio/audio.h>

#include "gstwhispersink.h"
#include "gstwhisperenums.h"
#include "gstwhisperoutput.h"
#include "gstwhisperqueue.h"
#include "gstwhisperwindow.h"
#include "gstwhisperwords.h"
#include "whisper-engine.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_whisper_sink_debug);

struct _GstWhisperSink {
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  /* Properties (GST_OBJECT_LOCK). */
  gchar *model;
  GstWhisperDevice device;
  gint threads;
  gchar *language_code;
  guint latency_ms;
  guint lateness_ms;
  GstWhisperOutputMode output;
  gint encoder_context;
  gdouble no_speech_threshold;
  GstWhisperOfflineMode offline_mode;
  gint max_encoder_length;
  gboolean engine_dirty;      /* an engine property changed in READY */
  gboolean language_warned;

  /* Engine: created NULL->READY, freed READY->NULL (pointer under object lock). */
  WhisperEngine *engine;

  /* Sink side (upstream streaming thread). */
  GstAudioInfo info;
  gboolean have_info;
  GstAudioStreamAlign *align;
  GstSegment sink_segment;
  gboolean need_latency_query;

  /* Hand-off from the streaming thread to the task (its own lock). */
  GstWhisperQueue queue;
  /* READY->PAUSED .. PAUSED->READY; the pointer under the object lock. */
  WhisperStream *stream;

  /* Counters of the stats property, in samples, since READY->PAUSED
   * (object lock). */
  guint64 audio_received;     /* sink side */
  guint64 audio_transcribed;  /* task: audio the engine has been given */
  guint64 audio_dropped;      /* task: live audio dropped to catch up */

  /* Task side. */
  GstWhisperWindow window;
  GstWhisperOutput out;
  GstWhisperWords words;
  gboolean seen_segment;
};

/* gstwhispertask.c */
void gst_whisper_sink_task_init (GstWhisperSink *self);
void gst_whisper_sink_task_finalize (GstWhisperSink *self);
/* Forgets buffered audio and output position (task stopped). */
void gst_whisper_sink_task_reset (GstWhisperSink *self);
void gst_whisper_sink_task_loop (gpointer user_data);

G_END_DECLS
