/* gstwhispersinkengine.c: what whispersink loads at its state changes (see
 * gstwhispersinkengine.h). Everything is made from one copy of the
 * settings taken under the object lock; the loaded objects replace the old
 * ones under that lock and the old ones are given back outside it. The
 * engines and the detectors are shared between the elements of the process
 * (shared/gstwhisperregistries.h); with device=remote the client of the
 * server (remote/gstwhisperremote.h) stands in place of the engine, and the
 * inference task sends audio to the server instead of running the
 * engine. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "element/gstwhispersinkengine.h"
#include "shared/gstwhisperregistries.h"

#define GST_CAT_DEFAULT gst_whisper_sink_debug

/* What was loaded, handed over under the object lock. */
typedef struct {
  WhisperEngine *engine;
  WhisperVad *vad;
  GstWhisperRemote *remote;
  gint max_encoder_length;    /* the engine's, resolved: 0 without an engine */
} Loaded;

/* Puts `loaded` in place and gives back what was there. */
static void
swap_loaded (GstWhisperSink *self, Loaded *loaded)
{
  Loaded old;

  GST_OBJECT_LOCK (self);
  old.engine = self->engine;
  old.vad = self->vad;
  old.remote = self->remote;
  self->engine = loaded->engine;
  self->vad = loaded->vad;
  self->remote = loaded->remote;
  self->max_encoder_length = loaded->max_encoder_length;
  self->engine_dirty = FALSE;
  GST_OBJECT_UNLOCK (self);
  gst_whisper_shared_release (&gst_whisper_engines, old.engine);
  gst_whisper_shared_release (&gst_whisper_vads, old.vad);
  g_clear_pointer (&old.remote, gst_whisper_remote_free);
}

void
gst_whisper_sink_post_setting_warnings (GstWhisperSink *self)
{
  gboolean length_warn, latency_warn;
  gint frames;
  guint ms;

  GST_OBJECT_LOCK (self);
  if (GST_ELEMENT_BUS (self) == NULL) {
    GST_OBJECT_UNLOCK (self);
    return;
  }
  length_warn = self->max_encoder_length_warn;
  latency_warn = self->latency_warn;
  self->max_encoder_length_warn = self->latency_warn = FALSE;
  frames = self->settings.model.max_encoder_length;
  ms = self->settings.live.latency_ms;
  GST_OBJECT_UNLOCK (self);

  if (length_warn)
    GST_ELEMENT_WARNING_WITH_DETAILS (self, LIBRARY, SETTINGS,
        ("encoder-context=%d (%.2f s windows) is below %d frames: the transcript will be "
            "mostly wrong or loop", frames, frames * 0.02,
            GST_WHISPER_USEFUL_MAX_ENCODER_LENGTH),
        ("Whisper models are trained on 30-s windows (1500 frames); measured word error "
            "rates are in docs/benchmarks.md. Use 0 (the model's) or at least %d",
            GST_WHISPER_USEFUL_MAX_ENCODER_LENGTH),
        ("reason", G_TYPE_STRING, "encoder-context-too-short", "encoder-context",
            G_TYPE_INT, frames, "minimum", G_TYPE_INT, GST_WHISPER_USEFUL_MAX_ENCODER_LENGTH,
            NULL));
  if (latency_warn)
    GST_ELEMENT_WARNING_WITH_DETAILS (self, LIBRARY, SETTINGS,
        ("latency=%u is below %u ms: live transcripts will have many wrong words", ms,
            GST_WHISPER_USEFUL_LATENCY_MS),
        ("Most words are committed by the deadline before two decodes agree; measured "
            "word error rates are in docs/benchmarks.md"),
        ("reason", G_TYPE_STRING, "latency-too-short", "latency", G_TYPE_UINT, ms,
            "minimum", G_TYPE_UINT, (guint) GST_WHISPER_USEFUL_LATENCY_MS, NULL));
}

static void
post_progress (GstWhisperSink *self, GstProgressType type, const gchar *text)
{
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_progress (GST_OBJECT (self), type, "load-model", text));
}

static gboolean load_vad (GstWhisperSink *self, const GstWhisperSettings *s, WhisperVad **vad);

/* device=remote: the client of server-url, in place of an engine, and the
 * detector that cuts files into pieces (task/gstwhisperfleet.c). */
static gboolean
open_remote (GstWhisperSink *self, const GstWhisperSettings *s)
{
  g_autoptr (GError) err = NULL;
  Loaded loaded = { 0, };

  loaded.remote = gst_whisper_remote_new (GST_ELEMENT (self), &s->remote, &err);
  if (loaded.remote == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Could not set up the remote engine: %s", err->message),
        ("device=remote, server-url, server-model, server-requests"));
    return FALSE;
  }
  if (!load_vad (self, s, &loaded.vad)) {
    gst_whisper_remote_free (loaded.remote);
    return FALSE;
  }
  swap_loaded (self, &loaded);
  return TRUE;
}

/* The voice activity detector of vad-gate, vad-filter and
 * offline-mode=batched, into *vad (NULL: none). FALSE, with an error
 * posted, when a vad-model set by the user cannot be loaded, or when
 * vad-filter or offline-mode=batched need the missing default file; for
 * vad-gate alone, the default file missing only posts a warning. */
static gboolean
load_vad (GstWhisperSink *self, const GstWhisperSettings *s, WhisperVad **vad)
{
  g_autoptr (GError) err = NULL;
  g_autofree gchar *path = gst_whisper_vad_settings_path (&s->vad);
  /* offline-mode=batched cuts files where the detector finds no speech */
  const gboolean filter = s->vad.filter
      || s->input.offline_mode == GST_WHISPER_OFFLINE_BATCHED;

  *vad = NULL;
  if (!s->vad.gate && !filter)
    return TRUE;
  *vad = gst_whisper_vads_acquire (path, &err);
  if (*vad) {
    GST_INFO_OBJECT (self, "voice activity detector %s", path);
    return TRUE;
  }
  if (s->vad.model != NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Could not load the voice activity detector \"%s\" (vad-model): %s", path,
            err->message), (NULL));
    return FALSE;
  }
  if (filter) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("vad-filter=true and offline-mode=batched need the voice activity detector "
            "\"%s\": %s "
            "(tools/fetch-model.sh silero-vad installs it; or set vad-model)", path,
            err->message), (NULL));
    return FALSE;
  }
  GST_ELEMENT_WARNING_WITH_DETAILS (self, RESOURCE, NOT_FOUND,
      ("No voice activity detector: %s; noise may give text (vad-gate=false: no "
          "detector, no warning)", err->message),
      (NULL), ("reason", G_TYPE_STRING, "vad-missing", "path", G_TYPE_STRING, path, NULL));
  return TRUE;
}

/* The error of a failed engine load, naming the setting. */
static void
post_engine_error (GstWhisperSink *self, const gchar *model, const WhisperEngineOptions *opts,
    const GError *err)
{
  post_progress (self, GST_PROGRESS_TYPE_ERROR, "Loading the Whisper model failed");
  if (g_error_matches (err, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("Could not open the inference device for Whisper model \"%s\": %s", model,
            err->message), ("device property: %d", opts->device));
  } else if (g_error_matches (err, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING)) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("Invalid setting for Whisper model \"%s\": %s", model, err->message), (NULL));
  } else {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Could not load Whisper model \"%s\": %s", model,
            err ? err->message : "unknown error"), (NULL));
  }
}

/* The engine of the model settings, checked against language-code and
 * task, and its detector. */
static gboolean
open_engine (GstWhisperSink *self, const GstWhisperSettings *s)
{
  WhisperEngineOptions opts;
  g_autoptr (GError) err = NULL;
  g_autofree gchar *model = NULL, *text = NULL, *problem = NULL;
  const WhisperEngineInfo *info;
  Loaded loaded = { 0, };

  gst_whisper_model_settings_fill (&s->model, &opts, &model);
  gst_whisper_sink_post_setting_warnings (self);
  text = g_strdup_printf ("Loading Whisper model %s", model);
  post_progress (self, GST_PROGRESS_TYPE_START, text);
  GST_INFO_OBJECT (self, "loading model %s (device %d, %d threads, max encoder length %d)",
      model, opts.device, opts.n_threads, opts.max_encoder_length);

  loaded.engine = gst_whisper_engines_acquire (&opts, s->model.engine_group, &err);
  if (loaded.engine == NULL) {
    post_engine_error (self, model, &opts, err);
    return FALSE;
  }
  info = whisper_engine_get_info (loaded.engine);
  loaded.max_encoder_length = info->max_encoder_length;
  GST_INFO_OBJECT (self, "model %s on %s: %d encoder frames per window, %d samples",
      info->model_path ? info->model_path : model, info->device_name,
      info->max_encoder_length, info->window_samples);

  /* the language and the task against this model */
  problem = gst_whisper_decoding_check_language (&s->decoding, loaded.engine);
  if (problem) {
    gst_whisper_shared_release (&gst_whisper_engines, loaded.engine);
    post_progress (self, GST_PROGRESS_TYPE_ERROR, "Loading the Whisper model failed");
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("Invalid language-code \"%s\" or task for Whisper model \"%s\": %s",
            s->decoding.language_code, model, problem), (NULL));
    return FALSE;
  }
  if (!load_vad (self, s, &loaded.vad)) {
    gst_whisper_shared_release (&gst_whisper_engines, loaded.engine);
    post_progress (self, GST_PROGRESS_TYPE_ERROR, "Loading the voice activity detector failed");
    return FALSE;
  }
  swap_loaded (self, &loaded);   /* device was remote before: the client goes */

  text = (g_free (text), g_strdup_printf ("Loaded Whisper model %s", model));
  post_progress (self, GST_PROGRESS_TYPE_COMPLETE, text);
  return TRUE;
}

gboolean
gst_whisper_sink_engine_open (GstWhisperSink *self)
{
  GstWhisperSettings s;
  gboolean ok;

  GST_OBJECT_LOCK (self);
  gst_whisper_settings_copy (&s, &self->settings);
  GST_OBJECT_UNLOCK (self);

  if (s.model.device == GST_WHISPER_DEVICE_REMOTE)
    ok = open_remote (self, &s);   /* a server instead of a model */
  else
    ok = open_engine (self, &s);
  gst_whisper_settings_clear (&s);
  return ok;
}

void
gst_whisper_sink_engine_close (GstWhisperSink *self)
{
  Loaded none = { 0, };

  swap_loaded (self, &none);
}

gboolean
gst_whisper_sink_stream_open (GstWhisperSink *self)
{
  g_autoptr (GError) err = NULL;
  WhisperStream *stream;

  if (self->remote) {
    if (gst_whisper_translate_any (self))
      GST_ELEMENT_WARNING (self, STREAM, NOT_IMPLEMENTED,
          ("device=remote does not translate: the translate_src pads carry no text"),
          (NULL));
    return TRUE;                /* device=remote: no engine stream */
  }
  if (!gst_whisper_translate_open (self))
    return FALSE;
  stream = whisper_stream_new (self->engine, &err);
  if (stream == NULL) {
    GST_ELEMENT_ERROR (self, LIBRARY, INIT, ("Could not create a Whisper stream: %s",
            err ? err->message : "unknown error"), (NULL));
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  self->stream = stream;
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

void
gst_whisper_sink_stream_close (GstWhisperSink *self)
{
  WhisperStream *stream;

  GST_OBJECT_LOCK (self);
  stream = self->stream;
  self->stream = NULL;
  GST_OBJECT_UNLOCK (self);
  g_clear_pointer (&stream, whisper_stream_free);
  gst_whisper_translate_close (self);
}
