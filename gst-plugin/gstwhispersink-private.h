/* gstwhispersink-private.h: the instance structure of whispersink, shared by
 * gstwhispersink.c (pads, states, properties, events, chain),
 * gstwhispertask.c (the inference task that runs the engine) and
 * gstwhispersrc.c (the src pad task that pushes downstream).
 *
 * Threads, one way: upstream streaming thread -> queue (gstwhisperqueue.c)
 * -> inference task -> output queue (gstwhisperoutqueue.c) -> src pad task
 * -> downstream. Locks:
 *  - properties, the stream pointer (for cancelling) and the counters of
 *    the stats property: GST_OBJECT_LOCK;
 *  - each queue has its own lock, never held while transcribing or pushing;
 *  - sink-side fields: the upstream streaming thread only;
 *  - task-side fields: the inference task only, src-side fields: the src
 *    pad task only (and the state change or the flush once they are
 *    stopped). */
#pragma once

#include <gst/gst.h>
#include <gst/audio/audio.h>

#include "gstwhispersink.h"
#include "gstwhisperalign.h"
#include "gstwhisperenums.h"
#include "gstwhisperoutput.h"
#include "gstwhisperoutqueue.h"
#include "gstwhisperdebug.h"
#include "gstwhisperqueue.h"
#include "gstwhisperremote.h"
#include "gstwhisperwindow.h"
#include "gstwhisperwords.h"
#include <whisper/whisper.h>
#include "gstwhisperdecoding.h"
#include "gstwhisperlive.h"
#include "gstwhispertranslate.h"

G_BEGIN_DECLS

/* A src pad and what its task pushes (gstwhispersrc.c): the src pad's,
 * and each translate_src_%u pad's (gstwhispertranslate.c). */
typedef struct {
  GstWhisperSink *self;
  GstPad *pad;
  GstWhisperOutQueue *outq;
  GstClockTime position;      /* end of what was pushed (src pad task) */
  gboolean post_eos;          /* the element's EOS message goes with this pad's EOS */
} GstWhisperSrcLane;

struct _GstWhisperSink {
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  /* Properties (GST_OBJECT_LOCK). */
  gchar *model;
  GstWhisperDevice device;
  GstWhisperPrecision precision;
  gint threads;
  gchar *engine_group;        /* NULL: the shared group (gstwhisperengines.h) */
  gchar *language_code;
  GstWhisperDecoding decoding;    /* task, search, prompts (gstwhisperdecoding.h) */
  guint latency_ms;
  guint lateness_ms;
  guint translate_latency_ms; /* translate_src_%u pads: added to their LATENCY answer */
  GstWhisperOutputMode output;
  gint encoder_context;
  gboolean encoder_context_warn;  /* set below the useful minimum, not warned yet */
  gboolean latency_warn;          /* the same for latency */
  gdouble no_speech_threshold;
  gboolean condition_on_previous_text;
  gboolean live_prompt;       /* live: condition on the committed text */
  GstWhisperLiveCommit live_commit;  /* live: when a word is committed */
  gdouble live_context;       /* live: seconds of committed speech before a decode */
  gdouble live_min_probability;  /* live: agreed words below it wait */
  GstWhisperLiveEncoder live_encoder;  /* live: the encoder window of a call */
  gint batch_size;                     /* offline-mode=batched: pieces decoded at once */
  gint channel;               /* -1: the mean of all channels */
  gdouble silence_threshold;  /* dBFS */
  gboolean strict_no_speech;
  gboolean word_timestamps;   /* faster-whisper's word_timestamps=True */
  gboolean vad_gate;
  gchar *vad_model;           /* NULL: whisper_vad_default_path () */
  gdouble vad_threshold;
  /* vad-filter and faster-whisper's VadOptions (gstwhispersink.c, the
   * "vad-filter" block); vad_threshold above is VadOptions.threshold. */
  gboolean vad_filter;
  gdouble vad_neg_threshold;  /* < 0: derived from vad_threshold */
  gint vad_min_speech_ms;
  gdouble vad_max_speech_s;   /* INFINITY: no limit */
  gint vad_min_silence_ms;
  gint vad_speech_pad_ms;
  guint max_gap_ms;           /* holes up to this are filled with silence */
  GstWhisperOfflineMode offline_mode;
  gint max_encoder_length;
  gboolean engine_dirty;      /* an engine property changed in READY */
  gboolean language_warned;

  /* Engine: created NULL->READY, freed READY->NULL (pointer under object lock). */
  WhisperEngine *engine;
  /* vad-gate's detector, loaded with the engine (NULL: no gate). */
  WhisperVad *vad;

  /* Sink side (upstream streaming thread). */
  GstAudioInfo info;
  gboolean have_info;
  GstWhisperAlign align;      /* runs, holes filled, overlaps dropped */
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
  guint64 samples_non_finite; /* sink side: NaN/Inf samples set to 0 */
  guint64 samples_clipped;    /* sink side: samples beyond +-1 clamped to it */
  guint64 windows_silent;     /* task: the engine's stats after each call */
  guint64 windows_no_voice;
  guint64 windows_no_speech;
  guint64 audio_filled;       /* sink side: silence put in holes (max-gap) */
  guint gaps_filled;          /* sink side: holes filled */
  guint64 audio_overlap;      /* sink side: received again, dropped */
  /* Sink side (streaming thread only): when the last warning about such
   * samples was posted, in samples received, or G_MAXUINT64 for never. */
  guint64 sanitize_warned_at;

  /* The inference task (not a pad task) and its lock. */
  GstTask *task;
  GRecMutex task_lock;

  /* Task side. */
  GstWhisperWindow window;
  GstWhisperOutput out;
  GstWhisperWords words;
  GstWhisperLive live;        /* live input, local engine: the commit policy */
  GstClockTime translate_duration;  /* the last call's translation (translate_src pads) */
  gboolean seen_segment;
  gboolean caps_queued;
  gchar *announced_language;   /* the language last tagged downstream (task) */

  /* From the inference task to the src pad task (its own lock). */
  GstWhisperOutQueue outq;

  /* Src side: the src pad's task. */
  GstWhisperSrcLane src;

  /* device=remote (gstwhispersinkremote.c): properties (object lock) and
   * the client, made at NULL->READY in place of the engine, freed at
   * READY->NULL (pointer under the object lock, used by the task). */
  gchar *server_url;
  gchar *server_model;
  gchar *server_api_key;      /* never logged, never readable */
  guint server_timeout_ms;
  guint server_queue_ms;
  GstWhisperRemote *remote;

  /* translate_src_%u (gstwhispertranslate.c): their lanes, changed under
   * translate_lock and then the object lock. */
  GPtrArray *translate_lanes;
  GMutex translate_lock;
  guint translate_next;
};

/* gstwhisperlatency.c: the LATENCY answer of a src pad: upstream's, plus
 * latency and `extra` when upstream is live (the queue learns upstream's
 * liveness and latency from it). */
gboolean gst_whisper_sink_answer_latency (GstWhisperSink *self, GstQuery *query,
    GstClockTime extra);

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

/* gstwhispersinkremote.c: device=remote; its properties take the ids
 * first_prop_id .. first_prop_id + GST_WHISPER_SINK_REMOTE_N_PROPS - 1. */
#define GST_WHISPER_SINK_REMOTE_N_PROPS 5
void gst_whisper_sink_remote_install_properties (GObjectClass *klass, guint first_prop_id);
void gst_whisper_sink_remote_init (GstWhisperSink *self);
void gst_whisper_sink_remote_finalize (GstWhisperSink *self);
/* FALSE when prop_id is none of its properties. */
gboolean gst_whisper_sink_remote_set_property (GstWhisperSink *self, guint prop_id,
    const GValue *value, GParamSpec *pspec);
gboolean gst_whisper_sink_remote_get_property (GstWhisperSink *self, guint prop_id,
    GValue *value);
gboolean gst_whisper_sink_remote_is_selected (GstWhisperSink *self);
/* Makes the client (replacing an engine); FALSE with an error posted. */
gboolean gst_whisper_sink_remote_open (GstWhisperSink *self);
void gst_whisper_sink_remote_close (GstWhisperSink *self);

/* gstwhispersrc.c: the src pad task */
/* Forgets the output position (task stopped). */
void gst_whisper_src_reset (GstWhisperSrcLane *lane);
/* The task of lane->pad; user_data is the lane. */
void gst_whisper_src_loop (gpointer user_data);

G_END_DECLS
