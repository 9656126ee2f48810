/* gstwhispersink-private.h: the instance structure of whispersink. Only
 * the element (element/: pads, states, events, queries, properties,
 * loading) and the inference task (task/: the engine calls, the commit
 * policy, the translate_src pads) see it; settings/, io/, shared/ and
 * remote/ get what they need as arguments.
 *
 * Settings and state apart: `settings` holds every property's value, one
 * typed struct per group (settings/gstwhispersettings.h), under
 * GST_OBJECT_LOCK; the task works on `task_settings`, its own copy taken
 * under that lock before each engine call; the rest is runtime state.
 *
 * Threads, one way: upstream streaming thread -> queue (io/gstwhisperqueue.c)
 * -> inference task -> output queue (io/gstwhisperoutqueue.c) -> src pad task
 * (io/gstwhispersrc.c) -> downstream. Locks:
 *  - settings, the loaded engine, detector and client pointers, the stream
 *    pointer (for cancelling) and the counters of the stats property:
 *    GST_OBJECT_LOCK;
 *  - each queue has its own lock, never held while transcribing or pushing;
 *  - sink-side fields: the upstream streaming thread only;
 *  - task-side fields: the inference task only, src-side fields: the src
 *    pad task only (and the state change or the flush once they are
 *    stopped). */
#pragma once

#include <gst/gst.h>
#include <gst/audio/audio.h>

#include "io/gstwhisperalign.h"
#include "settings/gstwhisperenums.h"
#include "io/gstwhisperoutput.h"
#include "io/gstwhisperoutqueue.h"
#include "io/gstwhisperdebug.h"
#include "io/gstwhisperqueue.h"
#include "io/gstwhispersrc.h"
#include "remote/gstwhisperremote.h"
#include "io/gstwhisperwindow.h"
#include "io/gstwhisperwords.h"
#include <whisper/whisper.h>
#include "settings/gstwhispersettings.h"
#include "task/gstwhisperagree.h"
#include "task/gstwhisperlive.h"
#include "task/gstwhisperoverload.h"
#include "task/gstwhispertranslate.h"

G_BEGIN_DECLS

/* The element (element/gstwhispersink.h declares its type). */
typedef struct _GstWhisperSink GstWhisperSink;

/* The counters of the stats property, in samples, since READY->PAUSED. */
typedef struct {
  guint64 audio_received;     /* sink side */
  guint64 audio_transcribed;  /* task: audio the engine has been given */
  guint64 audio_dropped;      /* task: live audio dropped to catch up */
  guint64 samples_non_finite; /* sink side: NaN/Inf samples set to 0 */
  guint64 samples_clipped;    /* sink side: samples beyond +-1 clamped to it */
  guint64 windows_silent;     /* task: the engine's stats after each call */
  guint64 windows_no_voice;
  guint64 windows_no_speech;
  guint64 audio_filled;       /* sink side: silence put in holes (max-gap) */
  guint gaps_filled;          /* sink side: holes filled */
  guint64 audio_overlap;      /* sink side: received again, dropped */
  guint64 remote_deltas;      /* task: server-stream text deltas read */
  guint64 encoder_passes;     /* task: encoder windows run, translations' included */
  guint64 encoder_shared;     /* task: windows that took another stream's encoder output */
} GstWhisperSinkStats;

/* What the upstream streaming thread keeps (the state change or a flush
 * resets it while that thread is stopped). */
typedef struct {
  GstAudioInfo info;
  gboolean have_info;
  GstWhisperAlign align;      /* runs, holes filled, overlaps dropped */
  GstSegment segment;
  gboolean need_latency_query;
  /* when the last warning about non-finite or clipped samples was posted,
   * in samples received, or G_MAXUINT64 for never */
  guint64 sanitize_warned_at;
} GstWhisperSinkSide;

struct _GstWhisperSink {
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  /* Settings: every property but the read-only ones, one struct per
   * group (settings/gstwhispersettings.h). GST_OBJECT_LOCK; the task and
   * the engine's loading work on copies taken under it. */
  GstWhisperSettings settings;

  /* Setting state (GST_OBJECT_LOCK). */
  gboolean max_encoder_length_warn;  /* encoder-context below the useful minimum, not warned yet */
  gboolean latency_warn;             /* the same for latency */
  gboolean engine_dirty;      /* a setting the engine is made with changed in READY */
  gint max_encoder_length;    /* the engine's resolved maximum (max-encoder-length) */

  /* Loaded at NULL->READY (element/gstwhispersinkengine.c), given back at
   * READY->NULL; the pointers under the object lock, used by the task. */
  WhisperEngine *engine;
  WhisperVad *vad;            /* the detector of vad-gate, vad-filter, batched */
  GstWhisperRemote *remote;   /* device=remote: the client, in place of the engine */
  /* device=remote, file input (task/gstwhisperfleet.c): the pieces sent
   * and not pushed yet (GstWhisperFleetPiece, in order), and the run index
   * the audio is cut up to. Inference task only. */
  GQueue fleet;
  guint64 fleet_cut;

  /* Sink side (upstream streaming thread). */
  GstWhisperSinkSide sink;

  /* Hand-off from the streaming thread to the task (its own lock). */
  GstWhisperQueue queue;
  /* READY->PAUSED .. PAUSED->READY; the pointer under the object lock. */
  WhisperStream *stream;

  /* Counters of the stats property (object lock). */
  GstWhisperSinkStats stats;

  /* The inference task (not a pad task) and its lock. */
  GstTask *task;
  GRecMutex task_lock;

  /* Task side. */
  GstWhisperSettings task_settings;  /* the task's copy of settings, taken under
                                      * the object lock before each engine call */
  GstWhisperWindow window;
  GstWhisperOutput out;
  GstWhisperWords words;
  GstWhisperLive live;        /* live input, local engine: the commit policy */
  GstWhisperAgree agree;      /* live input, server-stream: its commit policy */
  GstWhisperOverload overload;  /* live input, local engine: the steps given up */
  /* Test hook (GST_WHISPER_TEST_SLOW_CALLS=MS:N, read at init): the next
   * slow_calls live calls take slow_ms longer. */
  guint slow_ms, slow_calls;
  gboolean seen_segment;
  gboolean caps_queued;
  gchar *announced_language;   /* the language last tagged downstream (task) */

  /* From the inference task to the src pad task (its own lock). */
  GstWhisperOutQueue outq;

  /* Src side: the src pad's task. */
  GstWhisperSrcLane src;

  /* translate_src_%u (task/gstwhispertranslate.c): their lanes, changed under
   * translate_lock and then the object lock. */
  GPtrArray *translate_lanes;
  GMutex translate_lock;
  guint translate_next;
};

/* The duration of n samples of the engine's rate. */
static inline GstClockTime
gst_whisper_sink_samples_to_time (guint64 n)
{
  return gst_util_uint64_scale_int (n, GST_SECOND, WHISPER_SAMPLE_RATE);
}

/* Adds a stream's encoder windows between two of its stats to the
 * element's counters (takes the object lock). */
static inline void
gst_whisper_sink_count_encoder (GstWhisperSink *self, const WhisperStreamStats *before,
    const WhisperStreamStats *after)
{
  const guint64 shared = after->encoder_shared - before->encoder_shared;
  GST_OBJECT_LOCK (self);
  self->stats.encoder_passes += after->windows - before->windows - shared;
  self->stats.encoder_shared += shared;
  GST_OBJECT_UNLOCK (self);
}

/* gstwhispersnapshot.c: the task's copy of the settings
 * (self->task_settings), taken under the object lock: what the next engine
 * call and its policy read, without the lock. Inference task only. */
void gst_whisper_sink_take_settings (GstWhisperSink *self);
/* gstwhispersnapshot.c: what a src pad adds to upstream's latency when
 * upstream is live: the latency property, plus translate-latency for a
 * translate_src_%u pad. The one place that reads latency outside the
 * task's settings snapshot (object lock taken). */
GstClockTime gst_whisper_sink_own_latency (GstWhisperSink *self, gboolean translate);

/* gstwhispertask.c: the inference task */
void gst_whisper_sink_task_init (GstWhisperSink *self);
void gst_whisper_sink_task_finalize (GstWhisperSink *self);
/* Forgets buffered audio and output position (task stopped). */
void gst_whisper_sink_task_reset (GstWhisperSink *self);
gboolean gst_whisper_sink_task_start (GstWhisperSink *self);
/* Pauses the task and waits until its loop function has returned. */
void gst_whisper_sink_task_pause (GstWhisperSink *self);
/* Stops the task and waits for its thread. */
void gst_whisper_sink_task_stop (GstWhisperSink *self);



G_END_DECLS
