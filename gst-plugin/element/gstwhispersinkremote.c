/* gstwhispersinkremote.c: whispersink's properties for device=remote and
 * the creation of the remote engine (gstwhisperremote.h) in place of a
 * local model. gstwhispersink.c hands these properties over and calls
 * gst_whisper_sink_remote_open () at the change to READY when device is
 * remote; the inference task (gstwhispertask.c) then sends audio to the
 * server instead of running the engine. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "element/gstwhispersink.h"
#include "task/gstwhispersink-private.h"
#include "shared/gstwhisperregistries.h"

#include <string.h>

#define GST_CAT_DEFAULT gst_whisper_sink_debug

/* The environment variable the API key is read from when server-api-key is
 * not set (the name OpenAI's own client libraries read). */
#define API_KEY_ENV "OPENAI_API_KEY"

static guint first_prop;

enum {
  RPROP_SERVER_URL,
  RPROP_SERVER_MODEL,
  RPROP_SERVER_API_KEY,
  RPROP_SERVER_TIMEOUT,
  RPROP_SERVER_QUEUE,
  N_RPROPS
};
G_STATIC_ASSERT (N_RPROPS == GST_WHISPER_SINK_REMOTE_N_PROPS);

void
gst_whisper_sink_remote_install_properties (GObjectClass *klass, guint first_prop_id)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;

  first_prop = first_prop_id;
  /**
   * GstWhisperSink:server-url:
   *
   * device=remote: the OpenAI-compatible transcription endpoint the audio
   * is sent to, for example http://127.0.0.1:8000/v1/audio/transcriptions
   * (vLLM, faster-whisper servers) or http://127.0.0.1:8080/inference
   * (whisper.cpp's whisper-server). A URL without a path gets
   * /v1/audio/transcriptions, one ending in /v1 gets /audio/transcriptions.
   * http and https (certificates verified); proxies from the environment.
   */
  g_object_class_install_property (klass, first_prop_id + RPROP_SERVER_URL,
      g_param_spec_string ("server-url", "Server URL",
          "device=remote: the OpenAI-compatible transcription endpoint "
          "(http[s]://host:port/v1/audio/transcriptions; a bare host:port or .../v1 gets "
          "the rest)", NULL, rw));
  /**
   * GstWhisperSink:server-model:
   *
   * device=remote: the `model` field of each request, the name the server
   * knows the model by (vLLM: the name given to `vllm serve`, for example
   * openai/whisper-large-v3-turbo; OpenAI: whisper-1; whisper.cpp's server
   * ignores it).
   */
  g_object_class_install_property (klass, first_prop_id + RPROP_SERVER_MODEL,
      g_param_spec_string ("server-model", "Server model",
          "device=remote: the model name sent in each request",
          GST_WHISPER_REMOTE_DEFAULT_MODEL, rw));
  /**
   * GstWhisperSink:server-api-key:
   *
   * device=remote: the key sent as "Authorization: Bearer KEY". Write
   * only: reading it gives NULL, and it is never logged or posted. Unset,
   * the key comes from the environment variable OPENAI_API_KEY (none: no
   * Authorization header).
   */
  g_object_class_install_property (klass, first_prop_id + RPROP_SERVER_API_KEY,
      g_param_spec_string ("server-api-key", "Server API key",
          "device=remote: API key (write only, never logged); unset: $" API_KEY_ENV,
          NULL, G_PARAM_WRITABLE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  /**
   * GstWhisperSink:server-timeout:
   *
   * device=remote: the longest a request may take, in ms, from connecting
   * to the last byte of the answer. A request that takes longer is
   * abandoned and sent again after a back-off, as after a refused
   * connection or a 5xx answer. Set it well above the server's time for a
   * 30-s window under load.
   */
  g_object_class_install_property (klass, first_prop_id + RPROP_SERVER_TIMEOUT,
      g_param_spec_uint ("server-timeout", "Server time-out",
          "device=remote: ms a request may take before it is abandoned and tried again",
          100, 3600000, GST_WHISPER_REMOTE_DEFAULT_TIMEOUT_MS, rw));
  /**
   * GstWhisperSink:server-queue:
   *
   * device=remote: how much audio, in ms, is kept while the server does not
   * answer. Below this the element keeps accepting audio, posts a warning
   * (reason server-unavailable) for every failed request and sends the
   * audio when the server answers again. Beyond it a live stream drops its
   * oldest audio (a GAP covers it, a warning with reason dropped-audio
   * says how much), and a non-live stream waits for the server (upstream
   * blocks). Live, at least latency + lateness is kept whatever this says.
   */
  g_object_class_install_property (klass, first_prop_id + RPROP_SERVER_QUEUE,
      g_param_spec_uint ("server-queue", "Server queue",
          "device=remote: ms of unsent audio kept while the server is down; beyond it live "
          "audio is dropped (GAP and warning), files wait", 0, 24 * 3600 * 1000,
          GST_WHISPER_REMOTE_DEFAULT_QUEUE_MS, rw));
}

void
gst_whisper_sink_remote_init (GstWhisperSink *self)
{
  self->server_model = g_strdup (GST_WHISPER_REMOTE_DEFAULT_MODEL);
  self->server_timeout_ms = GST_WHISPER_REMOTE_DEFAULT_TIMEOUT_MS;
  self->server_queue_ms = GST_WHISPER_REMOTE_DEFAULT_QUEUE_MS;
}

static void
wipe (gchar **s)
{
  if (*s)
    memset (*s, 0, strlen (*s));
  g_clear_pointer (s, g_free);
}

void
gst_whisper_sink_remote_finalize (GstWhisperSink *self)
{
  g_clear_pointer (&self->remote, gst_whisper_remote_free);
  g_free (self->server_url);
  g_free (self->server_model);
  wipe (&self->server_api_key);
}

gboolean
gst_whisper_sink_remote_set_property (GstWhisperSink *self, guint prop_id,
    const GValue *value, GParamSpec *pspec)
{
  gboolean ignored = FALSE;

  if (prop_id < first_prop || prop_id >= first_prop + N_RPROPS)
    return FALSE;
  GST_OBJECT_LOCK (self);
  if (GST_STATE (self) > GST_STATE_READY || GST_STATE_PENDING (self) > GST_STATE_READY) {
    ignored = TRUE;
  } else {
    if (self->engine || self->remote)
      self->engine_dirty = TRUE;  /* the client is made again on the way to PAUSED */
    switch (prop_id - first_prop) {
      case RPROP_SERVER_URL:
        g_free (self->server_url);
        self->server_url = g_value_dup_string (value);
        break;
      case RPROP_SERVER_MODEL:
        g_free (self->server_model);
        self->server_model = g_value_dup_string (value);
        break;
      case RPROP_SERVER_API_KEY:
        wipe (&self->server_api_key);
        self->server_api_key = g_value_dup_string (value);
        break;
      case RPROP_SERVER_TIMEOUT:
        self->server_timeout_ms = g_value_get_uint (value);
        break;
      case RPROP_SERVER_QUEUE:
        self->server_queue_ms = g_value_get_uint (value);
        break;
    }
  }
  GST_OBJECT_UNLOCK (self);
  if (ignored)
    GST_ELEMENT_WARNING_WITH_DETAILS (self, LIBRARY, SETTINGS,
        ("The property '%s' cannot change while the element is PAUSED or PLAYING: the "
            "change is ignored", pspec->name),
        ("the remote engine is made with it; set it in the NULL or READY state"),
        ("reason", G_TYPE_STRING, "property-ignored", "property", G_TYPE_STRING,
            pspec->name, NULL));
  return TRUE;
}

gboolean
gst_whisper_sink_remote_get_property (GstWhisperSink *self, guint prop_id, GValue *value)
{
  if (prop_id < first_prop || prop_id >= first_prop + N_RPROPS)
    return FALSE;
  GST_OBJECT_LOCK (self);
  switch (prop_id - first_prop) {
    case RPROP_SERVER_URL:
      g_value_set_string (value, self->server_url);
      break;
    case RPROP_SERVER_MODEL:
      g_value_set_string (value, self->server_model);
      break;
    case RPROP_SERVER_TIMEOUT:
      g_value_set_uint (value, self->server_timeout_ms);
      break;
    case RPROP_SERVER_QUEUE:
      g_value_set_uint (value, self->server_queue_ms);
      break;
    default:                   /* the API key is write only */
      break;
  }
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

gboolean
gst_whisper_sink_remote_is_selected (GstWhisperSink *self)
{
  gboolean remote;

  GST_OBJECT_LOCK (self);
  remote = self->device == GST_WHISPER_DEVICE_REMOTE;
  GST_OBJECT_UNLOCK (self);
  return remote;
}

gboolean
gst_whisper_sink_remote_open (GstWhisperSink *self)
{
  GstWhisperRemoteSettings s = { 0, };
  g_autofree gchar *url = NULL, *model = NULL;
  gchar *key = NULL;
  g_autoptr (GError) err = NULL;
  GstWhisperRemote *remote, *old;
  WhisperEngine *old_engine;
  WhisperVad *old_vad;

  GST_OBJECT_LOCK (self);
  url = g_strdup (self->server_url);
  model = g_strdup (self->server_model);
  key = g_strdup (self->server_api_key ? self->server_api_key : g_getenv (API_KEY_ENV));
  s.timeout_ms = self->server_timeout_ms;
  s.queue_ms = self->server_queue_ms;
  GST_OBJECT_UNLOCK (self);
  s.url = url;
  s.model = model;
  s.api_key = key;

  remote = gst_whisper_remote_new (GST_ELEMENT (self), &s, &err);
  wipe (&key);
  if (remote == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Could not set up the remote engine: %s", err->message),
        ("device=remote, server-url, server-model"));
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  old = self->remote;
  self->remote = remote;
  old_engine = self->engine;
  self->engine = NULL;
  old_vad = self->vad;
  self->vad = NULL;
  self->max_encoder_length = 0;
  self->engine_dirty = FALSE;
  GST_OBJECT_UNLOCK (self);
  g_clear_pointer (&old, gst_whisper_remote_free);
  gst_whisper_shared_release (&gst_whisper_engines, g_steal_pointer (&old_engine));
  gst_whisper_shared_release (&gst_whisper_vads, g_steal_pointer (&old_vad));
  return TRUE;
}

void
gst_whisper_sink_remote_close (GstWhisperSink *self)
{
  GstWhisperRemote *remote;

  GST_OBJECT_LOCK (self);
  remote = self->remote;
  self->remote = NULL;
  GST_OBJECT_UNLOCK (self);
  g_clear_pointer (&remote, gst_whisper_remote_free);
}
