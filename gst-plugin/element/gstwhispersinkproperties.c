/* gstwhispersinkproperties.c: whispersink's side of its properties (see
 * gstwhispersinkproperties.h). Their values are settings/'s, one group
 * per file; here are the element's rules around them: what the engine is
 * made with changes in NULL and READY only, a change may ask for a warning
 * or a LATENCY message, and the read-only properties are the element's
 * state (stats, max-observed-delay, max-encoder-length). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "element/gstwhispersinkproperties.h"
#include "element/gstwhispersinkengine.h"
#include "shared/gstwhisperregistries.h"

#define GST_CAT_DEFAULT gst_whisper_sink_debug

/* Object lock held. What the engine (or the device=remote client) is made
 * with may change in NULL and READY only; a change in PAUSED or PLAYING is
 * ignored, and *ignored names the property so that the caller posts a
 * warning once the lock is released. */
static gboolean
engine_property_writable (GstWhisperSink *self, GParamSpec *pspec, GstWhisperSettingLoads loads,
    const gchar **ignored)
{
  if (GST_STATE (self) > GST_STATE_READY || GST_STATE_PENDING (self) > GST_STATE_READY) {
    if (loads == GST_WHISPER_SETTING_LOADS_ENGINE)
      GST_WARNING_OBJECT (self, "'%s' can only be changed in the NULL or READY state; "
          "the change is ignored", pspec->name);
    *ignored = pspec->name;
    return FALSE;
  }
  if (self->engine || self->remote)
    self->engine_dirty = TRUE;    /* made again on the way to PAUSED */
  return TRUE;
}

/* After a property was set: the warnings and messages it asks for. */
static void
post_setting_change (GstWhisperSink *self, GParamSpec *pspec, const GValue *value,
    GstWhisperSettingChange change, GstWhisperSettingLoads loads, const gchar *ignored,
    const gchar *problem)
{
  if (change & (GST_WHISPER_SETTING_MAX_ENCODER_LENGTH | GST_WHISPER_SETTING_LATENCY))
    gst_whisper_sink_post_setting_warnings (self);
  if ((change & GST_WHISPER_SETTING_REFUSED) && g_str_equal (pspec->name, "language-code"))
    GST_ELEMENT_WARNING_WITH_DETAILS (self, LIBRARY, SETTINGS,
        ("language-code \"%s\" is ignored: %s", g_value_get_string (value), problem),
        ("the previous language stays"),
        ("reason", G_TYPE_STRING, "language-invalid", NULL));
  else if (change & GST_WHISPER_SETTING_REFUSED)
    GST_ELEMENT_WARNING_WITH_DETAILS (self, LIBRARY, SETTINGS,
        ("'%s' is ignored: %s", pspec->name, problem), ("the previous value stays"),
        ("reason", G_TYPE_STRING, "property-invalid", "property", G_TYPE_STRING, pspec->name,
            NULL));
  if ((change & GST_WHISPER_SETTING_LATENCY) && GST_STATE (self) >= GST_STATE_PAUSED)
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_latency (GST_OBJECT (self)));
  if (ignored)
    GST_ELEMENT_WARNING_WITH_DETAILS (self, LIBRARY, SETTINGS,
        ("The property '%s' cannot change while the element is PAUSED or PLAYING: the "
            "change is ignored", ignored),
        ("%s; set it in the NULL or READY state", loads == GST_WHISPER_SETTING_LOADS_REMOTE
            ? "the remote engine is made with it" : "the engine is loaded with it"),
        ("reason", G_TYPE_STRING, "property-ignored", "property", G_TYPE_STRING, ignored,
            NULL));
}

void
gst_whisper_sink_set_property (GObject *object, guint prop_id, const GValue *value,
    GParamSpec *pspec)
{
  GstWhisperSink *self = (GstWhisperSink *) object;   /* whispersink's own vfunc */
  GstWhisperSettingLoads loads = gst_whisper_settings_loads (prop_id);
  GstWhisperSettingChange change = GST_WHISPER_SETTING_SET;
  const gchar *ignored = NULL;
  g_autofree gchar *problem = NULL;

  GST_OBJECT_LOCK (self);
  if (loads == GST_WHISPER_SETTING_LOADS_NOTHING
      || engine_property_writable (self, pspec, loads, &ignored))
    change = gst_whisper_settings_set_property (&self->settings, prop_id, value, self->engine,
        &problem);
  if (change & GST_WHISPER_SETTING_MAX_ENCODER_LENGTH)
    self->max_encoder_length_warn = (change & GST_WHISPER_SETTING_TOO_SMALL) != 0;
  if (change & GST_WHISPER_SETTING_LATENCY)
    self->latency_warn = (change & GST_WHISPER_SETTING_TOO_SMALL) != 0;
  GST_OBJECT_UNLOCK (self);

  if (change == GST_WHISPER_SETTING_UNKNOWN) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    return;
  }
  post_setting_change (self, pspec, value, change, loads, ignored, problem);
}

static GstStructure *
get_stats (GstWhisperSink *self)
{
  GstStructure *s;
  guint queued, dropped;
  const GstWhisperSinkStats *st = &self->stats;

  gst_whisper_out_queue_get_stats (&self->outq, &queued, &dropped);
  GST_OBJECT_LOCK (self);
  s = gst_structure_new ("whispersink-stats",
      "audio-received", G_TYPE_UINT64, gst_whisper_sink_samples_to_time (st->audio_received),
      "audio-transcribed", G_TYPE_UINT64, gst_whisper_sink_samples_to_time (st->audio_transcribed),
      "audio-dropped", G_TYPE_UINT64, gst_whisper_sink_samples_to_time (st->audio_dropped),
      "text-dropped", G_TYPE_UINT, dropped, "output-queued", G_TYPE_UINT, queued,
      "samples-non-finite", G_TYPE_UINT64, st->samples_non_finite,
      "samples-clipped", G_TYPE_UINT64, st->samples_clipped,
      "windows-silent", G_TYPE_UINT64, st->windows_silent,
      "windows-no-voice", G_TYPE_UINT64, st->windows_no_voice,
      "windows-no-speech", G_TYPE_UINT64, st->windows_no_speech,
      "audio-filled", G_TYPE_UINT64, gst_whisper_sink_samples_to_time (st->audio_filled),
      "gaps-filled", G_TYPE_UINT, st->gaps_filled,
      "audio-overlap", G_TYPE_UINT64, gst_whisper_sink_samples_to_time (st->audio_overlap),
      "remote-deltas", G_TYPE_UINT64, st->remote_deltas,
      "encoder-passes", G_TYPE_UINT64, st->encoder_passes,
      "encoder-shared", G_TYPE_UINT64, st->encoder_shared,
      "engine-users", G_TYPE_UINT,
      self->engine ? gst_whisper_shared_users (&gst_whisper_engines, self->engine) : 0,
      "vad-users", G_TYPE_UINT,
      self->vad ? gst_whisper_shared_users (&gst_whisper_vads, self->vad) : 0, NULL);
  GST_OBJECT_UNLOCK (self);
  return s;
}

/* The read-only properties: the element's state, not settings. */
static void
get_state_property (GstWhisperSink *self, GValue *value, GParamSpec *pspec)
{
  if (g_str_equal (pspec->name, "stats")) {
    g_value_take_boxed (value, get_stats (self));
  } else if (g_str_equal (pspec->name, "max-observed-delay")) {
    GstClockTime d = gst_whisper_output_get_max_delay (&self->out);
    g_value_set_uint (value, (guint) MIN (d / GST_MSECOND, G_MAXUINT));
  } else if (g_str_equal (pspec->name, "max-encoder-length")) {
    GST_OBJECT_LOCK (self);
    g_value_set_int (value, self->max_encoder_length);
    GST_OBJECT_UNLOCK (self);
  } else {
    G_OBJECT_WARN_INVALID_PROPERTY_ID (self, pspec->param_id, pspec);
  }
}

void
gst_whisper_sink_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstWhisperSink *self = (GstWhisperSink *) object;   /* whispersink's own vfunc */
  gboolean done;

  GST_OBJECT_LOCK (self);
  done = gst_whisper_settings_get_property (&self->settings, prop_id, value);
  GST_OBJECT_UNLOCK (self);
  if (!done)
    get_state_property (self, value, pspec);
}

