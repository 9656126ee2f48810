/* gstwhispersink.c: whispersink's pads, properties (their values live in
 * settings/, one file per group), state changes, sink-pad chain and
 * events, and the LATENCY query. The upstream streaming thread only
 * converts and queues audio (io/gstwhisperqueue.c); what is loaded at the
 * state changes is gstwhispersinkengine.c's; the engine runs in the
 * inference task (task/gstwhispertask.c), whose output the src pad task
 * (io/gstwhispersrc.c) pushes downstream from the output queue
 * (io/gstwhisperoutqueue.c).
 *
 * SECTION:element-whispersink
 *
 * Turns 16 kHz speech (mono, or several channels mixed or one of them
 * picked, see the channel property) into text with an OpenAI Whisper model.
 * The name is historical: it is a filter (audio in, text out) that can also
 * end a pipeline. Every
 * text buffer has a PTS and a DURATION in running time and GAP
 * events cover the time without text, so srtenc, webvttenc and textoverlay
 * work with their default settings. Each item is also posted on the bus as
 * a "whisper-text" element message. The src pad may stay unlinked.
 *
 * |[
 * gst-launch-1.0 filesrc location=speech.wav ! wavparse ! audioconvert ! \
 *     audioresample ! whispersink ! srtenc ! filesink location=speech.srt
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "element/gstwhispersink.h"
#include "task/gstwhispersink-private.h"
#include "io/gstwhisperlatency.h"
#include "element/gstwhispersinkengine.h"
#include "element/gstwhispersinkproperties.h"
#include "shared/gstwhisperregistries.h"
#include "settings/gstwhisperdecoding.h"
#include <whisper/whisper.h>

#include <math.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_whisper_sink_debug

/* Timestamp jitter taken as continuous audio (GstAudioStreamAlign's
 * alignment threshold as this element used it). */
#define ALIGN_TOLERANCE (40 * GST_MSECOND)

enum {
  PROP_0,
  PROP_SETTINGS_FIRST,        /* settings/gstwhispersettings.c numbers them */
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("audio/x-raw, format = (string) { F32LE, S16LE }, "
        "rate = (int) 16000, channels = (int) [ 1, 64 ], layout = (string) interleaved"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("text/x-raw, format = (string) utf8"));

#define gst_whisper_sink_parent_class parent_class
G_DEFINE_TYPE_WITH_CODE (GstWhisperSink, gst_whisper_sink, GST_TYPE_ELEMENT,
    gst_whisper_debug_init ());
GST_ELEMENT_REGISTER_DEFINE (whispersink, "whispersink", GST_RANK_NONE,
    GST_TYPE_WHISPER_SINK);

static void gst_whisper_sink_finalize (GObject *object);
static GstStateChangeReturn gst_whisper_sink_change_state (GstElement *element,
    GstStateChange transition);
static GstFlowReturn gst_whisper_sink_chain (GstPad *pad, GstObject *parent,
    GstBuffer *buffer);
static gboolean gst_whisper_sink_sink_event (GstPad *pad, GstObject *parent,
    GstEvent *event);
static gboolean gst_whisper_sink_sink_query (GstPad *pad, GstObject *parent,
    GstQuery *query);
static gboolean gst_whisper_sink_src_query (GstPad *pad, GstObject *parent,
    GstQuery *query);
static gboolean gst_whisper_sink_src_activate_mode (GstPad *pad, GstObject *parent,
    GstPadMode mode, gboolean active);
static gboolean gst_whisper_sink_sink_activate_mode (GstPad *pad, GstObject *parent,
    GstPadMode mode, gboolean active);

/* ------------------------------------------------------------------------ */

static void
gst_whisper_sink_class_init (GstWhisperSinkClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  gobject_class->set_property = gst_whisper_sink_set_property;
  gobject_class->get_property = gst_whisper_sink_get_property;
  gobject_class->finalize = gst_whisper_sink_finalize;

  /* every property: settings/, one file per group */
  gst_whisper_settings_install (gobject_class, PROP_SETTINGS_FIRST);
  gst_whisper_translate_class_init (element_class);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  /* Audio in, text out: a filter, classified as the transcribers of
   * gst-plugins-rs are (awstranscriber, speechmatics, deepgram:
   * "Audio/Text/Filter"), so that applications looking for speech-to-text
   * find it. Not "Sink", though it can end a pipeline (the src pad may stay
   * unlinked, the text is on the bus): autoaudiosink picks elements whose
   * class has both "Sink" and "Audio". */
  gst_element_class_set_static_metadata (element_class,
      "Whisper speech-to-text transcriber",
      "Audio/Text/Filter",
      "Transcribes speech (16 kHz audio, any number of channels) into timestamped text "
      "with an OpenAI Whisper model, pushed on the src pad and posted on the bus; the src "
      "pad may stay unlinked (the 'sink' in the name is historical)",
      "gst-whisper project");

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_whisper_sink_change_state);

  /* Register the engine's error domain from libwhisper-engine itself before
   * any CUDA module can: a module that registers it from its own static
   * string and is then unloaded (no GPU) would leave a dangling quark. */
  (void) whisper_engine_error_quark ();

  gst_type_mark_as_plugin_api (GST_TYPE_WHISPER_DEVICE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_WHISPER_OUTPUT_MODE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_WHISPER_OFFLINE_MODE, 0);
}

static void
gst_whisper_sink_init (GstWhisperSink *self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad, GST_DEBUG_FUNCPTR (gst_whisper_sink_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_whisper_sink_sink_event));
  gst_pad_set_query_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_whisper_sink_sink_query));
  gst_pad_set_activatemode_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_whisper_sink_sink_activate_mode));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_pad_set_query_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_whisper_sink_src_query));
  gst_pad_set_activatemode_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_whisper_sink_src_activate_mode));
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  /* It ends pipelines (`... ! whispersink`): the bin waits for its EOS. */
  GST_OBJECT_FLAG_SET (self, GST_ELEMENT_FLAG_SINK);

  gst_whisper_settings_init (&self->settings);
  gst_whisper_align_init (&self->sink.align, WHISPER_SAMPLE_RATE, ALIGN_TOLERANCE);
  gst_segment_init (&self->sink.segment, GST_FORMAT_TIME);
  gst_whisper_queue_init (&self->queue);
  gst_whisper_out_queue_init (&self->outq, GST_ELEMENT (self));
  self->src.element = GST_ELEMENT (self);
  self->src.pad = self->srcpad;
  self->src.outq = &self->outq;
  self->src.post_eos = TRUE;
  gst_whisper_src_reset (&self->src);

  self->translate_lanes = g_ptr_array_new ();
  g_mutex_init (&self->translate_lock);
  gst_whisper_sink_task_init (self);
}

static void
gst_whisper_sink_finalize (GObject *object)
{
  GstWhisperSink *self = GST_WHISPER_SINK (object);

  gst_whisper_sink_task_finalize (self);
  g_clear_pointer (&self->remote, gst_whisper_remote_free);
  gst_whisper_queue_clear (&self->queue);
  gst_whisper_out_queue_clear (&self->outq);
  g_clear_pointer (&self->translate_lanes, g_ptr_array_unref);
  g_mutex_clear (&self->translate_lock);
  g_clear_pointer (&self->stream, whisper_stream_free);
  gst_whisper_shared_release (&gst_whisper_engines, g_steal_pointer (&self->engine));
  gst_whisper_shared_release (&gst_whisper_vads, g_steal_pointer (&self->vad));
  gst_whisper_settings_clear (&self->settings);

  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* ------------------------------------------------------------------------ */
/* Engine and stream */

static void
reset_sink_side (GstWhisperSink *self)
{
  gst_whisper_align_mark_discont (&self->sink.align);
  gst_segment_init (&self->sink.segment, GST_FORMAT_TIME);
  self->sink.need_latency_query = TRUE;
}

static GstStateChangeReturn
gst_whisper_sink_change_state (GstElement *element, GstStateChange transition)
{
  GstWhisperSink *self = GST_WHISPER_SINK (element);
  GstStateChangeReturn ret;
  gboolean dirty;

  switch (transition) {
    case GST_STATE_CHANGE_NULL_TO_READY:
      if (!gst_whisper_sink_engine_open (self))
        return GST_STATE_CHANGE_FAILURE;
      break;
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      GST_OBJECT_LOCK (self);
      dirty = self->engine_dirty;
      GST_OBJECT_UNLOCK (self);
      if (dirty && !gst_whisper_sink_engine_open (self))
        return GST_STATE_CHANGE_FAILURE;
      if (!gst_whisper_sink_stream_open (self))
        return GST_STATE_CHANGE_FAILURE;
      self->sink.have_info = FALSE;
      reset_sink_side (self);
      gst_whisper_sink_task_reset (self);
      gst_whisper_src_reset (&self->src);
      gst_whisper_out_queue_reset_stats (&self->outq);
      GST_OBJECT_LOCK (self);
      self->stats.audio_received = self->stats.audio_transcribed = self->stats.audio_dropped = 0;
      self->stats.samples_non_finite = self->stats.samples_clipped = 0;
      self->stats.windows_silent = self->stats.windows_no_voice = self->stats.windows_no_speech = 0;
      self->stats.audio_filled = self->stats.audio_overlap = 0;
      self->stats.gaps_filled = 0;
      self->stats.remote_deltas = 0;
      self->stats.encoder_passes = self->stats.encoder_shared = 0;
      self->sink.sanitize_warned_at = G_MAXUINT64;
      GST_OBJECT_UNLOCK (self);
      break;
    case GST_STATE_CHANGE_PLAYING_TO_PAUSED:
      /* Sinks preroll again: without new audio (a branch beside this one
       * holds it back until every sink has prerolled) they would wait for
       * the next text, which may need all of the audio. */
      gst_whisper_out_queue_push_preroll (&self->outq);
      gst_whisper_translate_push_preroll (self);
      break;
    default:
      break;
  }

  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE)
    return ret;

  switch (transition) {
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      /* The pads are inactive and both tasks are stopped. */
      gst_whisper_sink_stream_close (self);
      gst_whisper_sink_task_reset (self);
      gst_whisper_src_reset (&self->src);
      break;
    case GST_STATE_CHANGE_READY_TO_NULL:
      gst_whisper_sink_engine_close (self);
      break;
    default:
      break;
  }
  return ret;
}

/* ------------------------------------------------------------------------ */
/* Hand-off to the task */

/* Refuses data, drops the queued text, wakes everyone, and stops a
 * running transcription (the inference task checks the queue's flushing
 * state after every decode step). */
static void
set_flushing (GstWhisperSink *self)
{
  gst_whisper_queue_set_flushing (&self->queue, TRUE);
  gst_whisper_out_queue_set_flushing (&self->outq, TRUE);
  gst_whisper_translate_set_flushing (self, TRUE);
  GST_OBJECT_LOCK (self);
  if (self->stream)
    whisper_stream_cancel (self->stream);
  GST_OBJECT_UNLOCK (self);
}

static void
unset_flushing (GstWhisperSink *self)
{
  gst_whisper_out_queue_set_flushing (&self->outq, FALSE);
  gst_whisper_translate_set_flushing (self, FALSE);
  gst_whisper_queue_set_flushing (&self->queue, FALSE);
}

/* Both tasks, the src pad's first: it takes what inference produces. */
static gboolean
start_tasks (GstWhisperSink *self)
{
  if (!gst_pad_start_task (self->srcpad, gst_whisper_src_loop, &self->src, NULL)) {
    GST_ELEMENT_ERROR (self, CORE, THREAD, ("Could not start the src pad task"),
        (NULL));
    return FALSE;
  }
  if (!gst_whisper_sink_task_start (self)) {
    GST_ELEMENT_ERROR (self, CORE, THREAD, ("Could not start the inference task"),
        (NULL));
    return FALSE;
  }
  return TRUE;
}

static gboolean
gst_whisper_sink_src_activate_mode (GstPad *pad, GstObject *parent, GstPadMode mode,
    gboolean active)
{
  GstWhisperSink *self = GST_WHISPER_SINK (parent);

  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  if (active) {
    unset_flushing (self);
    return start_tasks (self);
  }
  set_flushing (self);
  gst_whisper_sink_task_stop (self);
  return gst_pad_stop_task (pad);
}

static gboolean
gst_whisper_sink_sink_activate_mode (GstPad *pad, GstObject *parent, GstPadMode mode,
    gboolean active)
{
  GstWhisperSink *self = GST_WHISPER_SINK (parent);

  (void) pad;
  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  if (!active)
    set_flushing (self);   /* wakes a chain waiting for room */
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Sink pad */

static void
query_upstream_latency (GstWhisperSink *self)
{
  GstQuery *q = gst_query_new_latency ();
  gboolean live = FALSE;
  GstClockTime min = 0, max = GST_CLOCK_TIME_NONE;

  if (gst_pad_peer_query (self->sinkpad, q))
    gst_query_parse_latency (q, &live, &min, &max);
  gst_query_unref (q);

  GST_DEBUG_OBJECT (self, "upstream live %d, min latency %" GST_TIME_FORMAT, live,
      GST_TIME_ARGS (min));
  gst_whisper_queue_set_upstream (&self->queue, live, min);
}

/* Sample i of an interleaved buffer as float. The memory of a buffer need
 * not be aligned to its sample size (GST_READ_UINT16_LE and friends then
 * read through a misaligned pointer, undefined behaviour): memcpy. */
static inline float
sample_at (const guint8 *data, gboolean s16, gsize i)
{
  if (s16) {
    guint16 v;
    memcpy (&v, data + 2 * i, sizeof v);
    return (gint16) GUINT16_FROM_LE (v) / 32768.0f;
  } else {
    guint32 bits;
    float f;
    memcpy (&bits, data + 4 * i, sizeof bits);
    bits = GUINT32_FROM_LE (bits);
    memcpy (&f, &bits, sizeof f);
    return f;
  }
}

/* The buffer's frames as mono float: one channel (channel >= 0) or the mean
 * of all of them. */
static GArray *
buffer_to_float (GstWhisperSink *self, GstBuffer *buffer, gint channel)
{
  const gboolean s16 = GST_AUDIO_INFO_FORMAT (&self->sink.info) == GST_AUDIO_FORMAT_S16LE;
  const gint channels = GST_AUDIO_INFO_CHANNELS (&self->sink.info);
  GstMapInfo map;
  GArray *pcm;
  gsize n, i;
  gint c;

  if (!gst_buffer_map (buffer, &map, GST_MAP_READ))
    return NULL;
  n = map.size / GST_AUDIO_INFO_BPF (&self->sink.info);
  pcm = g_array_sized_new (FALSE, FALSE, sizeof (float), n);
  g_array_set_size (pcm, n);
  if (channels == 1 || channel >= 0) {
    const gint take = channels == 1 ? 0 : channel;
    for (i = 0; i < n; i++)
      g_array_index (pcm, float, i) = sample_at (map.data, s16, i * channels + take);
  } else {
    for (i = 0; i < n; i++) {
      float sum = 0.0f;
      for (c = 0; c < channels; c++)
        sum += sample_at (map.data, s16, i * channels + c);
      g_array_index (pcm, float, i) = sum / channels;
    }
  }
  gst_buffer_unmap (buffer, &map);
  return pcm;
}

/* Warn again about bad samples after this much more audio at the most. */
#define SANITIZE_WARN_INTERVAL (10 * WHISPER_SAMPLE_RATE)

/* F32 input: NaN/Inf samples to 0, samples beyond full scale clamped to
 * +-1 (whisper-pcm.h), counted in the stats property; a warning at the
 * first such buffer, then at most once per 10 s of audio. S16 needs
 * nothing: every value is within range. */
static void
sanitize_samples (GstWhisperSink *self, GArray *pcm, GstClockTime ts)
{
  WhisperPcmFixes fixes = { 0, 0 };
  guint64 received, non_finite, clipped;

  if (GST_AUDIO_INFO_FORMAT (&self->sink.info) != GST_AUDIO_FORMAT_F32LE)
    return;
  whisper_pcm_sanitize_in_place ((float *) pcm->data, pcm->len, &fixes);
  if (fixes.non_finite == 0 && fixes.clipped == 0)
    return;
  GST_OBJECT_LOCK (self);
  self->stats.samples_non_finite += fixes.non_finite;
  self->stats.samples_clipped += fixes.clipped;
  received = self->stats.audio_received;
  non_finite = self->stats.samples_non_finite;
  clipped = self->stats.samples_clipped;
  GST_OBJECT_UNLOCK (self);
  if (self->sink.sanitize_warned_at != G_MAXUINT64
      && received < self->sink.sanitize_warned_at + SANITIZE_WARN_INTERVAL)
    return;
  self->sink.sanitize_warned_at = received;
  GST_ELEMENT_WARNING_WITH_DETAILS (self, STREAM, FORMAT,
      ("Invalid audio samples: %" G_GUINT64_FORMAT " not finite (set to 0) and %"
          G_GUINT64_FORMAT " beyond full scale (clamped to +-1) so far, the latest in the "
          "buffer at %" GST_TIME_FORMAT, non_finite, clipped, GST_TIME_ARGS (ts)),
      ("F32 input must be finite and within [-1, 1]; a single bad sample would otherwise "
          "ruin the transcription of its whole window"),
      ("reason", G_TYPE_STRING, "invalid-samples", "timestamp", G_TYPE_UINT64, ts,
          "non-finite", G_TYPE_UINT64, non_finite, "clipped", G_TYPE_UINT64, clipped, NULL));
}

/* `fill` zero samples before the samples of `pcm` from `skip` on. */
static GArray *
fill_and_skip (GArray *pcm, gsize fill, gsize skip)
{
  gsize keep = pcm->len - MIN (skip, pcm->len);
  GArray *out;

  if (fill == 0) {
    g_array_remove_range (pcm, 0, pcm->len - keep);
    return pcm;
  }
  out = g_array_sized_new (FALSE, TRUE, sizeof (float), fill + keep);
  g_array_set_size (out, fill);
  g_array_append_vals (out, (const float *) pcm->data + (pcm->len - keep), keep);
  g_array_unref (pcm);
  return out;
}

static GstFlowReturn
gst_whisper_sink_chain (GstPad *pad, GstObject *parent, GstBuffer *buffer)
{
  GstWhisperSink *self = GST_WHISPER_SINK (parent);
  GstWhisperAlignResult placed;
  GstClockTime pts;
  GArray *pcm;
  guint n;
  gint channel;
  guint max_gap_ms;
  GstFlowReturn ret = GST_FLOW_OK;

  (void) pad;
  if (!self->sink.have_info) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL), ("audio before caps"));
    gst_buffer_unref (buffer);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (self->sink.need_latency_query) {
    self->sink.need_latency_query = FALSE;
    query_upstream_latency (self);
  }

  GST_OBJECT_LOCK (self);
  channel = self->settings.input.channel;
  max_gap_ms = self->settings.input.max_gap_ms;
  GST_OBJECT_UNLOCK (self);
  if (channel >= GST_AUDIO_INFO_CHANNELS (&self->sink.info)
      && GST_AUDIO_INFO_CHANNELS (&self->sink.info) > 1) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("channel=%d, but the stream has %d channels",
            channel, GST_AUDIO_INFO_CHANNELS (&self->sink.info)), (NULL));
    gst_buffer_unref (buffer);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  pcm = buffer_to_float (self, buffer, channel);
  if (pcm == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, (NULL), ("cannot map buffer"));
    gst_buffer_unref (buffer);
    return GST_FLOW_ERROR;
  }

  pts = GST_BUFFER_PTS (buffer);
  if (!GST_CLOCK_TIME_IS_VALID (pts))
    pts = gst_whisper_align_next_pts (&self->sink.align);
  if (!GST_CLOCK_TIME_IS_VALID (pts))
    pts = self->sink.segment.start;
  gst_buffer_unref (buffer);

  /* Audio that ends past the largest valid timestamp cannot be timed: its
   * text's PTS + DURATION would wrap around. Dropped (found by
   * tests/fuzz/element-fuzz.c with timestamps near G_MAXUINT64); the next
   * buffer starts a new run, as the dropped one may have. */
  if (GST_CLOCK_TIME_IS_VALID (pts)
      && gst_whisper_sink_samples_to_time (pcm->len) > GST_CLOCK_TIME_NONE - 1 - pts) {
    GST_WARNING_OBJECT (self, "dropping %u samples at %" G_GUINT64_FORMAT
        " ns: they end past the largest timestamp", pcm->len, pts);
    gst_whisper_align_mark_discont (&self->sink.align);
    g_array_unref (pcm);
    return GST_FLOW_OK;
  }

  n = pcm->len;
  gst_whisper_align_process (&self->sink.align, pts, n, (GstClockTime) max_gap_ms * GST_MSECOND,
      &placed);
  if (placed.fill > 0 || placed.skip > 0) {
    GST_DEBUG_OBJECT (self, "buffer at %" GST_TIME_FORMAT ": %" G_GSIZE_FORMAT
        " samples of silence before it, %" G_GSIZE_FORMAT " overlapping samples dropped",
        GST_TIME_ARGS (pts), placed.fill, placed.skip);
    pcm = fill_and_skip (pcm, placed.fill, placed.skip);
    GST_OBJECT_LOCK (self);
    self->stats.audio_filled += placed.fill;
    self->stats.gaps_filled += placed.fill > 0;
    self->stats.audio_overlap += placed.skip;
    GST_OBJECT_UNLOCK (self);
  }

  sanitize_samples (self, pcm, placed.pts);
  if (pcm->len == 0 && !placed.resync) {
    /* All of it was received already. */
    g_array_unref (pcm);
  } else {
    ret = gst_whisper_queue_push_audio (&self->queue, pcm, placed.resync, placed.pts);
    if (ret != GST_FLOW_OK) {
      GST_DEBUG_OBJECT (self, "refusing buffer: %s", gst_flow_get_name (ret));
      return ret;
    }
  }
  GST_OBJECT_LOCK (self);
  self->stats.audio_received += n;
  GST_OBJECT_UNLOCK (self);
  return GST_FLOW_OK;
}

static gboolean
handle_caps (GstWhisperSink *self, GstCaps *caps)
{
  GstAudioInfo info;

  if (!gst_audio_info_from_caps (&info, caps)
      || GST_AUDIO_INFO_RATE (&info) != WHISPER_SAMPLE_RATE
      || GST_AUDIO_INFO_CHANNELS (&info) < 1
      || (GST_AUDIO_INFO_FORMAT (&info) != GST_AUDIO_FORMAT_F32LE
          && GST_AUDIO_INFO_FORMAT (&info) != GST_AUDIO_FORMAT_S16LE)) {
    GST_WARNING_OBJECT (self, "unsupported caps %" GST_PTR_FORMAT, caps);
    return FALSE;
  }
  self->sink.info = info;
  self->sink.have_info = TRUE;
  return TRUE;
}

/* One sticky event of the sink pad onto the src pad (see
 * restore_sticky_events ()). */
static gboolean
restore_sticky_event (GstPad *pad, GstEvent **event, gpointer user_data)
{
  GstWhisperSink *self = user_data;
  GstEvent *ev = *event;

  (void) pad;
  switch (GST_EVENT_TYPE (ev)) {
    case GST_EVENT_SEGMENT:
    case GST_EVENT_EOS:
      break;                    /* upstream sends a new SEGMENT after a flush */
    case GST_EVENT_CAPS:{
      if (!gst_pad_has_current_caps (self->srcpad)) {
        GstCaps *caps = gst_pad_get_pad_template_caps (self->srcpad);
        GstEvent *text_caps = gst_event_new_caps (caps);
        gst_pad_store_sticky_event (self->srcpad, text_caps);
        gst_event_unref (text_caps);
        gst_caps_unref (caps);
      }
      break;
    }
    default:
      /* Replaces an older one of its type (the sink pad's is the latest);
       * the same event again changes nothing. */
      gst_pad_store_sticky_event (self->srcpad, ev);
      break;
  }
  return TRUE;
}

/* A flush drops the queued events that had not gone out yet, among them
 * sticky ones upstream sends only once (STREAM_START, CAPS, TAG): the sink
 * pad's are stored on the src pad (CAPS as the text caps, when it has
 * none), so they go out before the next output, as GStreamer's queue
 * element keeps them (gst_queue_locked_flush () in
 * plugins/elements/gstqueue.c). Found by tests/fuzz/element-fuzz.c: text
 * after a flush came without STREAM_START. */
static void
restore_sticky_events (GstWhisperSink *self)
{
  gst_pad_sticky_events_foreach (self->sinkpad, restore_sticky_event, self);
}

static gboolean
gst_whisper_sink_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstWhisperSink *self = GST_WHISPER_SINK (parent);

  GST_LOG_OBJECT (self, "event %" GST_PTR_FORMAT, event);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_FLUSH_START:
      /* Never blocks: cancel the engine, wake everyone, let the task pause itself. */
      set_flushing (self);
      gst_whisper_translate_flush_start (self, event);
      return gst_pad_push_event (self->srcpad, event);

    case GST_EVENT_FLUSH_STOP:{
      gboolean ret;

      /* Serialized: upstream holds the stream lock; wait for both tasks to
       * stop (flushing again in case no FLUSH_START came first). */
      set_flushing (self);
      gst_whisper_sink_task_pause (self);
      gst_pad_pause_task (self->srcpad);
      gst_whisper_sink_task_reset (self);
      gst_whisper_src_reset (&self->src);
      reset_sink_side (self);
      gst_whisper_translate_flush_stop (self, event);
      ret = gst_pad_push_event (self->srcpad, event);
      restore_sticky_events (self);
      unset_flushing (self);
      /* Both tasks are paused: nothing else uses the stream. */
      GST_OBJECT_LOCK (self);
      if (self->stream)
        whisper_stream_reset (self->stream);
      if (self->remote)
        gst_whisper_remote_reset (self->remote);
      GST_OBJECT_UNLOCK (self);
      start_tasks (self);
      return ret;
    }

    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gst_event_parse_caps (event, &caps);
      if (!handle_caps (self, caps)) {
        gst_event_unref (event);
        return FALSE;
      }
      return gst_whisper_queue_push_event (&self->queue, event);
    }

    case GST_EVENT_SEGMENT:{
      const GstSegment *segment;
      gst_event_parse_segment (event, &segment);
      if (segment->format != GST_FORMAT_TIME) {
        GST_ELEMENT_ERROR (self, STREAM, FORMAT, (NULL),
            ("only TIME segments are supported, got %s",
                gst_format_get_name (segment->format)));
        gst_event_unref (event);
        return FALSE;
      }
      if (segment->rate < 0.0) {
        GST_ELEMENT_ERROR (self, STREAM, FORMAT,
            ("Reverse playback is not supported (segment rate %g)", segment->rate),
            ("speech is transcribed forwards only"));
        gst_event_unref (event);
        return FALSE;
      }
      self->sink.segment = *segment;
      gst_whisper_align_mark_discont (&self->sink.align);
      return gst_whisper_queue_push_event (&self->queue, event);
    }

    case GST_EVENT_GAP:
      gst_whisper_align_mark_discont (&self->sink.align);
      return gst_whisper_queue_push_event (&self->queue, event);

    case GST_EVENT_STREAM_START:
      self->sink.need_latency_query = TRUE;
      return gst_whisper_queue_push_event (&self->queue, event);

    default:
      if (GST_EVENT_IS_SERIALIZED (event))
        return gst_whisper_queue_push_event (&self->queue, event);
      return gst_pad_event_default (pad, parent, event);
  }
}

static gboolean
gst_whisper_sink_sink_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_ALLOCATION:
      return FALSE;             /* audio in, text out: nothing to share */
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

/* ------------------------------------------------------------------------ */
/* Src pad */

static gboolean
gst_whisper_sink_src_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstWhisperSink *self = GST_WHISPER_SINK (parent);

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_LATENCY:
      return gst_whisper_latency_answer (self->sinkpad, &self->queue,
          gst_whisper_sink_own_latency (self, FALSE), query);
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

