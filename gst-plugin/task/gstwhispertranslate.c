/* gstwhispertranslate.c: whispersink's `translate_src_%u` request pads.
 *
 * transcriberbin (gst-plugins-rs video/closedcaption/src/transcriberbin)
 * asks a transcriber for a request pad `translate_src_%u` per translation,
 * with a pad property `language-code`, and links it to its caption
 * branch. Whisper translates into English only (the `translate` task), so
 * a pad's language-code must be English ("en", "en-US", ...): another
 * value is refused with a warning and the pad keeps "en".
 *
 * Each pad owns a second WhisperStream on the element's engine, its own
 * output (gstwhisperoutput.h), output queue and src pad task
 * (gstwhispersrc.c), and, live, its own commit policy (gstwhisperlive.h).
 * Every engine call of the src pad is decoded again on the pad's stream
 * with task=translate, on the same audio, right after it: translation
 * costs one more decode per call. The pads follow the src pad's buffer:
 * the same SEGMENT, GAP and EOS, a STREAM_START with their own stream id,
 * a GST_TAG_LANGUAGE_CODE "en" tag. The LATENCY answer on a pad is the src
 * pad's plus `translate-latency`. device=remote has no translation: the
 * pads then carry GAPs only (a warning says so). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "task/gstwhispertranslate.h"
#include "io/gstwhisperlatency.h"
#include "task/gstwhispersink-private.h"
#include <whisper/whisper.h>

#include <math.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_whisper_sink_debug

struct _GstWhisperTranslatePad {
  GstPad parent;
  gchar *language_code;       /* object lock of the pad */
};

G_DEFINE_TYPE (GstWhisperTranslatePad, gst_whisper_translate_pad, GST_TYPE_PAD);

enum {
  PAD_PROP_0,
  PAD_PROP_LANGUAGE_CODE,
};

/* One pad's state. */
typedef struct {
  GstWhisperSink *self;
  GstPad *pad;
  GstWhisperOutQueue outq;
  GstWhisperOutput out;
  GstWhisperSrcLane src;
  GstWhisperLive live;
  WhisperStream *stream;      /* READY->PAUSED .. PAUSED->READY; shares the
                                 encoder output of the element's stream */
  GPtrArray *segments;        /* the call's translation, from transcribe to decode */
  gboolean tagged;            /* the language tag went out after the segment */
} Lane;

static GstStaticPadTemplate translate_template = GST_STATIC_PAD_TEMPLATE ("translate_src_%u",
    GST_PAD_SRC, GST_PAD_REQUEST, GST_STATIC_CAPS ("text/x-raw, format = (string) utf8"));

/* ------------------------------------------------------------------------ */
/* The pad class */

static void
gst_whisper_translate_pad_set_property (GObject *object, guint prop_id, const GValue *value,
    GParamSpec *pspec)
{
  GstWhisperTranslatePad *pad = GST_WHISPER_TRANSLATE_PAD (object);

  switch (prop_id) {
    case PAD_PROP_LANGUAGE_CODE:{
      const gchar *code = g_value_get_string (value);
      int index = -1;
      if (!code || !whisper_language_parse (code, WHISPER_N_LANGUAGES_MAX, &index, NULL)
          || index != 0) {
        GstObject *parent = gst_object_get_parent (GST_OBJECT (pad));
        if (parent && GST_IS_ELEMENT (parent))
          GST_ELEMENT_WARNING_WITH_DETAILS (parent, LIBRARY, SETTINGS,
              ("%s: language-code \"%s\" refused: Whisper translates into English only",
                  GST_OBJECT_NAME (pad), code ? code : "(null)"),
              ("the pad keeps \"%s\"", pad->language_code),
              ("reason", G_TYPE_STRING, "language-invalid", NULL));
        else
          g_warning ("%s: language-code \"%s\" refused: Whisper translates into English only",
              GST_OBJECT_NAME (pad), code ? code : "(null)");
        g_clear_object (&parent);
        break;
      }
      GST_OBJECT_LOCK (pad);
      g_free (pad->language_code);
      pad->language_code = g_strdup (code);
      GST_OBJECT_UNLOCK (pad);
      break;
    }
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_whisper_translate_pad_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstWhisperTranslatePad *pad = GST_WHISPER_TRANSLATE_PAD (object);

  switch (prop_id) {
    case PAD_PROP_LANGUAGE_CODE:
      GST_OBJECT_LOCK (pad);
      g_value_set_string (value, pad->language_code);
      GST_OBJECT_UNLOCK (pad);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_whisper_translate_pad_finalize (GObject *object)
{
  g_free (GST_WHISPER_TRANSLATE_PAD (object)->language_code);
  G_OBJECT_CLASS (gst_whisper_translate_pad_parent_class)->finalize (object);
}

static void
gst_whisper_translate_pad_class_init (GstWhisperTranslatePadClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);

  gobject_class->set_property = gst_whisper_translate_pad_set_property;
  gobject_class->get_property = gst_whisper_translate_pad_get_property;
  gobject_class->finalize = gst_whisper_translate_pad_finalize;
  g_object_class_install_property (gobject_class, PAD_PROP_LANGUAGE_CODE,
      g_param_spec_string ("language-code", "Language code",
          "Language of this pad's text: English (\"en\", \"en-US\", ...), the only "
          "language Whisper translates into", "en",
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
}

static void
gst_whisper_translate_pad_init (GstWhisperTranslatePad *pad)
{
  pad->language_code = g_strdup ("en");
}

/* ------------------------------------------------------------------------ */
/* Lanes */

static Lane *
lane_of (GstPad *pad)
{
  return g_object_get_data (G_OBJECT (pad), "gst-whisper-lane");
}

static void
lane_free (Lane *lane)
{
  g_clear_pointer (&lane->stream, whisper_stream_free);
  g_clear_pointer (&lane->segments, g_ptr_array_unref);
  gst_whisper_live_clear (&lane->live);
  gst_whisper_out_queue_clear (&lane->outq);
  g_free (lane);
}

static void
lane_reset (Lane *lane)
{
  gst_whisper_output_reset (&lane->out);
  gst_segment_init (&lane->out.segment, GST_FORMAT_TIME);
  gst_segment_init (&lane->out.out_segment, GST_FORMAT_TIME);
  gst_whisper_live_reset (&lane->live);
  lane->tagged = FALSE;
}

static gboolean
translate_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstWhisperSink *self = (GstWhisperSink *) parent;

  if (GST_QUERY_TYPE (query) == GST_QUERY_LATENCY)
    return gst_whisper_latency_answer (self->sinkpad, &self->queue,
        gst_whisper_sink_own_latency (self, TRUE), query);
  return gst_pad_query_default (pad, parent, query);
}

static gboolean
translate_activate_mode (GstPad *pad, GstObject *parent, GstPadMode mode, gboolean active)
{
  Lane *lane = lane_of (pad);

  (void) parent;
  if (mode != GST_PAD_MODE_PUSH || !lane)
    return FALSE;
  if (active) {
    gst_whisper_out_queue_set_flushing (&lane->outq, FALSE);
  return gst_pad_start_task (pad, gst_whisper_src_loop, &lane->src, NULL);
}
  gst_whisper_out_queue_set_flushing (&lane->outq, TRUE);
  return gst_pad_stop_task (pad);
}

static gboolean
lane_open (GstWhisperSink *self, Lane *lane)
{
  g_autoptr (GError) err = NULL;

  if (lane->stream || !self->engine)
    return TRUE;                /* device=remote: no stream, GAPs only */
  lane->stream = whisper_stream_new (self->engine, &err);
  if (!lane->stream) {
    GST_ELEMENT_ERROR (self, LIBRARY, INIT, ("Could not create a Whisper stream for %s: %s",
            GST_PAD_NAME (lane->pad), err ? err->message : "unknown error"), (NULL));
  return FALSE;
}
  /* decoded right after the element's stream, on the same audio: one
   * encoder pass for both */
  whisper_stream_set_share_encoder (lane->stream, TRUE);
  return TRUE;
}

static GstPad *
request_new_pad (GstElement *element, GstPadTemplate *templ, const gchar *name,
    const GstCaps *caps)
{
  GstWhisperSink *self = (GstWhisperSink *) element;  /* cast: the type check lives in gstwhispersink.c, which calls this file */
  Lane *lane;
  GstPad *pad;
  gchar *pad_name;
  GstState state;
  gboolean running;

  (void) caps;
  if (templ != gst_element_class_get_pad_template (GST_ELEMENT_GET_CLASS (element),
          "translate_src_%u"))
    return NULL;
  GST_OBJECT_LOCK (self);
  pad_name = name ? g_strdup (name)
      : g_strdup_printf ("translate_src_%u", self->translate_next++);
  GST_OBJECT_UNLOCK (self);

  pad = g_object_new (GST_TYPE_WHISPER_TRANSLATE_PAD, "name", pad_name,
      "direction", GST_PAD_SRC, "template", templ, NULL);
  g_free (pad_name);
  gst_pad_use_fixed_caps (pad);
  gst_pad_set_query_function (pad, GST_DEBUG_FUNCPTR (translate_query));
  gst_pad_set_activatemode_function (pad, GST_DEBUG_FUNCPTR (translate_activate_mode));

  lane = g_new0 (Lane, 1);
  lane->self = self;
  lane->pad = pad;
  gst_whisper_out_queue_init (&lane->outq, element);
  gst_whisper_output_init (&lane->out, element, &lane->outq);
  lane->out.pad_name = GST_PAD_NAME (pad);
  gst_whisper_live_init (&lane->live, WHISPER_SAMPLE_RATE);
  lane->src.element = GST_ELEMENT (self);
  lane->src.pad = pad;
  lane->src.outq = &lane->outq;
  lane->src.post_eos = FALSE;
  gst_whisper_src_reset (&lane->src);
  lane_reset (lane);
  g_object_set_data_full (G_OBJECT (pad), "gst-whisper-lane", lane, (GDestroyNotify) lane_free);

  /* The lanes change under both the translate lock (the inference task
   * holds it while it uses them) and the object lock (the streaming
   * thread's flush uses them under it, without waiting for a decode). */
  state = GST_STATE (element);
  running = state >= GST_STATE_PAUSED;
  g_mutex_lock (&self->translate_lock);
  if (running && !lane_open (self, lane)) {
    g_mutex_unlock (&self->translate_lock);
    gst_object_unref (gst_object_ref_sink (pad));
  return NULL;
}
  GST_OBJECT_LOCK (self);
  g_ptr_array_add (self->translate_lanes, lane);
  GST_OBJECT_UNLOCK (self);
  if (running) {
    /* what the src pad got before this pad existed (the queue takes items
     * once the pad is active) */
    gst_pad_set_active (pad, TRUE);
    GstCaps *text = gst_pad_template_get_caps (templ);
    gchar *id = gst_pad_create_stream_id (pad, element, GST_PAD_NAME (pad));
    GstEvent *start = gst_event_new_stream_start (id);
    gst_event_set_group_id (start, gst_util_group_id_next ());
    g_free (id);
    gst_whisper_out_queue_push_event (&lane->outq, start);
    gst_whisper_out_queue_push_event (&lane->outq, gst_event_new_caps (text));
    gst_caps_unref (text);
    if (self->seen_segment) {
      GST_OBJECT_LOCK (self);
      GstClockTime shift = (GstClockTime) self->settings.live.lateness_ms * GST_MSECOND;
      GST_OBJECT_UNLOCK (self);
      gst_whisper_output_start_segment (&lane->out, &self->out.segment, shift);
      /* after the segment (sticky order); else with the next segment */
      gst_whisper_out_queue_push_event (&lane->outq,
          gst_event_new_tag (gst_tag_list_new (GST_TAG_LANGUAGE_CODE, "en", NULL)));
      lane->tagged = TRUE;
    }
  }
  g_mutex_unlock (&self->translate_lock);
  gst_element_add_pad (element, pad);
  GST_INFO_OBJECT (self, "translation pad %s", GST_PAD_NAME (pad));
  return pad;
}

static void
release_pad (GstElement *element, GstPad *pad)
{
  GstWhisperSink *self = (GstWhisperSink *) element;
  Lane *lane = lane_of (pad);

  if (!lane)
    return;
  g_mutex_lock (&self->translate_lock);
  GST_OBJECT_LOCK (self);
  g_ptr_array_remove (self->translate_lanes, lane);
  GST_OBJECT_UNLOCK (self);
  g_mutex_unlock (&self->translate_lock);
  gst_pad_set_active (pad, FALSE);
  gst_element_remove_pad (element, pad);
}

void
gst_whisper_translate_class_init (GstElementClass *klass)
{
  gst_element_class_add_static_pad_template (klass, &translate_template);
  klass->request_new_pad = GST_DEBUG_FUNCPTR (request_new_pad);
  klass->release_pad = GST_DEBUG_FUNCPTR (release_pad);
  gst_type_mark_as_plugin_api (GST_TYPE_WHISPER_TRANSLATE_PAD, 0);
}

#define FOR_EACH_LANE(self, lane) \
  for (guint _i = 0; _i < (self)->translate_lanes->len; _i++) \
    for (Lane *lane = g_ptr_array_index ((self)->translate_lanes, _i); lane; lane = NULL)

/* The translate lock around a block that uses the lanes (the inference
 * task, state changes, FLUSH_STOP once the task is paused). */
#define LANES_LOCK(self) g_mutex_lock (&(self)->translate_lock)
#define LANES_UNLOCK(self) g_mutex_unlock (&(self)->translate_lock)

gboolean
gst_whisper_translate_open (GstWhisperSink *self)
{
  LANES_LOCK (self);
  FOR_EACH_LANE (self, lane) {
    if (!lane_open (self, lane)) {
      LANES_UNLOCK (self);
      return FALSE;
    }
    lane_reset (lane);
    gst_whisper_src_reset (&lane->src);
  }
  LANES_UNLOCK (self);
  return TRUE;
}

void
gst_whisper_translate_close (GstWhisperSink *self)
{
  LANES_LOCK (self);
  FOR_EACH_LANE (self, lane) {
    g_clear_pointer (&lane->stream, whisper_stream_free);
    lane_reset (lane);
    gst_whisper_src_reset (&lane->src);
  }
  LANES_UNLOCK (self);
}

void
gst_whisper_translate_set_flushing (GstWhisperSink *self, gboolean flushing)
{
  GST_OBJECT_LOCK (self);
  FOR_EACH_LANE (self, lane) {
    gst_whisper_out_queue_set_flushing (&lane->outq, flushing);
    if (flushing && lane->stream)
      whisper_stream_cancel (lane->stream);
  }
  GST_OBJECT_UNLOCK (self);
}

void
gst_whisper_translate_flush_start (GstWhisperSink *self, GstEvent *event)
{
  GST_OBJECT_LOCK (self);
  FOR_EACH_LANE (self, lane)
    gst_pad_push_event (lane->pad, gst_event_ref (event));
  GST_OBJECT_UNLOCK (self);
}

void
gst_whisper_translate_flush_stop (GstWhisperSink *self, GstEvent *event)
{
  LANES_LOCK (self);
  FOR_EACH_LANE (self, lane) {
    gst_pad_pause_task (lane->pad);
    lane_reset (lane);
    gst_whisper_src_reset (&lane->src);
    if (lane->stream)
      whisper_stream_reset (lane->stream);
    gst_pad_push_event (lane->pad, gst_event_ref (event));
    gst_whisper_out_queue_set_flushing (&lane->outq, FALSE);
    gst_pad_start_task (lane->pad, gst_whisper_src_loop, &lane->src, NULL);
  }
  LANES_UNLOCK (self);
}

void
gst_whisper_translate_push_preroll (GstWhisperSink *self)
{
  GST_OBJECT_LOCK (self);
  FOR_EACH_LANE (self, lane)
    gst_whisper_out_queue_push_preroll (&lane->outq);
  GST_OBJECT_UNLOCK (self);
}

/* ------------------------------------------------------------------------ */
/* Inference task side */

gboolean
gst_whisper_translate_any (GstWhisperSink *self)
{
  gboolean any;

  LANES_LOCK (self);
  any = self->translate_lanes->len > 0;
  LANES_UNLOCK (self);
  return any;
}

void
gst_whisper_translate_reset (GstWhisperSink *self)
{
  LANES_LOCK (self);
  FOR_EACH_LANE (self, lane)
    lane_reset (lane);
  LANES_UNLOCK (self);
}

void
gst_whisper_translate_set_limits (GstWhisperSink *self, gboolean live,
    GstClockTime text_limit, GstClockTime budget, GstClockTime upstream_min)
{
  LANES_LOCK (self);
  FOR_EACH_LANE (self, lane) {
    lane->out.live = live;
    lane->out.budget = budget;
    lane->out.upstream_min = upstream_min;
    gst_whisper_out_queue_set_limits (&lane->outq, live, text_limit);
  }
  LANES_UNLOCK (self);
}

void
gst_whisper_translate_start_segment (GstWhisperSink *self, const GstSegment *segment,
    GstClockTime base_shift)
{
  LANES_LOCK (self);
  FOR_EACH_LANE (self, lane) {
    gst_whisper_output_start_segment (&lane->out, segment, base_shift);
    gst_whisper_live_reset (&lane->live);
    if (lane->stream)
      whisper_stream_reset (lane->stream);
    if (!lane->tagged) {
      gst_whisper_out_queue_push_event (&lane->outq,
          gst_event_new_tag (gst_tag_list_new (GST_TAG_LANGUAGE_CODE, "en", NULL)));
      lane->tagged = TRUE;
    }
  }
  LANES_UNLOCK (self);
}

void
gst_whisper_translate_start_at (GstWhisperSink *self, GstClockTime t)
{
  LANES_LOCK (self);
  FOR_EACH_LANE (self, lane) {
    gst_whisper_output_start_at (&lane->out, t);
    gst_whisper_live_reset (&lane->live);
  }
  LANES_UNLOCK (self);
}

void
gst_whisper_translate_gap_until (GstWhisperSink *self, GstClockTime t)
{
  LANES_LOCK (self);
  FOR_EACH_LANE (self, lane)
    gst_whisper_output_gap_until (&lane->out, t);
  LANES_UNLOCK (self);
}

void
gst_whisper_translate_push_event (GstWhisperSink *self, GstEvent *event)
{
  LANES_LOCK (self);
  FOR_EACH_LANE (self, lane) {
    GstEvent *copy;
    switch (GST_EVENT_TYPE (event)) {
      case GST_EVENT_STREAM_START:{
        gchar *id = gst_pad_create_stream_id (lane->pad, GST_ELEMENT (self),
            GST_PAD_NAME (lane->pad));
        copy = gst_event_new_stream_start (id);
        gst_event_set_group_id (copy, gst_util_group_id_next ());
        g_free (id);
        break;
      }
      case GST_EVENT_TAG:
        continue;               /* the source language's: the pad's is "en" */
      default:
        copy = gst_event_ref (event);
        break;
    }
    gst_whisper_out_queue_push_event (&lane->outq, copy);
  }
  LANES_UNLOCK (self);
}

void
gst_whisper_translate_push_eos (GstWhisperSink *self)
{
  LANES_LOCK (self);
  FOR_EACH_LANE (self, lane)
    gst_whisper_out_queue_push_eos (&lane->outq);
  LANES_UNLOCK (self);
}

static gboolean
collect_segment (WhisperSegment *segment, gpointer user_data)
{
  g_ptr_array_add (user_data, segment);
  return TRUE;
}

/* A file's (non-commit) call: its segments that start before `done`, as
 * items (words with output=words). */
static GstFlowReturn
push_segments (GstWhisperSink *self, Lane *lane, const GstWhisperTranslateCall *call,
    GPtrArray *segments)
{
  GstWhisperWindow *w = &self->window;
  GstFlowReturn ret = GST_FLOW_OK;

  for (guint s = 0; s < segments->len && ret == GST_FLOW_OK; s++) {
    WhisperSegment *seg = g_ptr_array_index (segments, s);
    if (seg->start * WHISPER_SAMPLE_RATE >= call->done)
      break;
    gboolean words = call->output == GST_WHISPER_OUTPUT_WORDS && seg->n_words > 0;
    gsize n = words ? seg->n_words : 1;
    for (gsize k = 0; k < n && ret == GST_FLOW_OK; k++) {
      GstWhisperItem item = { 0, };
      double a = words ? seg->words[k].start : seg->start;
      double b = words ? seg->words[k].end : seg->end;
      GstClockTime start = gst_whisper_window_time_at (w, call->call_start
          + (guint64) llround (MAX (a, 0.0) * WHISPER_SAMPLE_RATE));
      GstClockTime end = gst_whisper_window_time_at (w, call->call_start
          + (guint64) llround (MIN (MAX (b, 0.0), call->n_samples / (double)
                  WHISPER_SAMPLE_RATE) * WHISPER_SAMPLE_RATE));
      gchar *text = g_strstrip (g_strdup (words ? seg->words[k].text : seg->text));
      if (*text && end > start) {
        item.text = text;
        item.pts = start;
        item.duration = end - start;
        item.avg_logprob = seg->avg_logprob;
        item.no_speech_prob = words ? NAN : seg->no_speech_prob;
        item.final = TRUE;
        item.granularity = words ? "word" : "segment";
        item.decode_step = -1;
        item.push = TRUE;
        ret = gst_whisper_output_push_item (&lane->out, &item);
      }
      g_free (text);
    }
  }
  return ret;
}

void
gst_whisper_translate_prepare (GstWhisperSink *self, const WhisperDecodeOptions *options,
    gboolean commit, GstWhisperOutputMode output)
{
  const GstWhisperSettings *s = &self->task_settings;

  LANES_LOCK (self);
  FOR_EACH_LANE (self, lane) {
    WhisperDecodeOptions opts = *options;
    if (!lane->stream)
      continue;
    /* English-only models hear English: their transcript is the English text */
    if (whisper_engine_get_info (self->engine)->is_multilingual)
      opts.task = WHISPER_TASK_TRANSLATE;
    if (output == GST_WHISPER_OUTPUT_WORDS)
      opts.word_timestamps = TRUE;
    whisper_stream_set_options (lane->stream, &opts);
    if (commit)
      gst_whisper_live_prepare (self, &lane->live, lane->stream, s->decoding.initial_prompt,
          s->live.prompt, s->live.min_probability);
  }
  LANES_UNLOCK (self);
}

GstFlowReturn
gst_whisper_translate_transcribe (GstWhisperSink *self, const float *pcm, gsize n_samples)
{
  GstFlowReturn ret = GST_FLOW_OK;
  LANES_LOCK (self);

  FOR_EACH_LANE (self, lane) {
    g_autoptr (GError) err = NULL;
    WhisperStreamStats before, after;

    g_clear_pointer (&lane->segments, g_ptr_array_unref);
    if (!lane->stream || ret != GST_FLOW_OK)
      continue;
    lane->segments = g_ptr_array_new_with_free_func ((GDestroyNotify) whisper_segment_free);
    whisper_stream_get_stats (lane->stream, &before);
    if (!whisper_stream_transcribe (lane->stream, pcm, n_samples, collect_segment,
            lane->segments, NULL, &err)) {
      g_clear_pointer (&lane->segments, g_ptr_array_unref);
      if (g_error_matches (err, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_CANCELLED)) {
        ret = GST_FLOW_FLUSHING;
        continue;
      }
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Translation failed: %s",
              err ? err->message : "unknown error"), ("pad %s", GST_PAD_NAME (lane->pad)));
      ret = GST_FLOW_ERROR;
      continue;
    }
    whisper_stream_get_stats (lane->stream, &after);
    gst_whisper_sink_count_encoder (self, &before, &after);
  }
  LANES_UNLOCK (self);
  return ret;
}

GstFlowReturn
gst_whisper_translate_decode (GstWhisperSink *self, const GstWhisperTranslateCall *call)
{
  GstFlowReturn ret = GST_FLOW_OK;
  LANES_LOCK (self);

  FOR_EACH_LANE (self, lane) {
    g_autoptr (GPtrArray) segments = g_steal_pointer (&lane->segments);

    if (!segments || ret != GST_FLOW_OK)
      continue;
    if (call->commit) {
      /* the same input as the element's stream (its context included) */
      gst_whisper_live_finish_call (self, &lane->live, &lane->out, call->in, segments,
          call->drain, call->call_duration, call->chunk, call->budget, call->output, &ret);
      /* the src pad's buffer decides what the next call sees */
      gst_whisper_commit_trim (&lane->live.commit, call->call_start + call->done);
    } else {
      ret = push_segments (self, lane, call, segments);
    }
    /* downstream of a translation pad may be unlinked or gone: the src
     * pad's text goes on */
    if (ret == GST_FLOW_NOT_LINKED || ret == GST_FLOW_EOS)
      ret = GST_FLOW_OK;
  }
  LANES_UNLOCK (self);
  return ret;
}

GstFlowReturn
gst_whisper_translate_flush (GstWhisperSink *self, GstWhisperOutputMode output)
{
  GstFlowReturn ret = GST_FLOW_OK;
  LANES_LOCK (self);

  FOR_EACH_LANE (self, lane) {
    if (ret == GST_FLOW_OK)
      ret = gst_whisper_live_flush (self, &lane->live, &lane->out, output);
  }
  LANES_UNLOCK (self);
  return ret;
}
