/* gstwhisperremotesettings.c: whispersink's device=remote settings (see
 * gstwhisperremotesettings.h). */
#include "settings/gstwhisperremotesettings.h"

#include <string.h>

/* The environment variable the API key is read from when server-api-key is
 * not set (the name OpenAI's own client libraries read). */
#define API_KEY_ENV "OPENAI_API_KEY"

enum {
  P_SERVER_URL,
  P_SERVER_MODEL,
  P_SERVER_API_KEY,
  P_SERVER_TIMEOUT,
  P_SERVER_QUEUE,
  P_SERVER_REQUESTS,
  P_SERVER_CA_FILE,
  P_SERVER_ALLOW_INSECURE_KEY,
  P_SERVER_STREAM,
  N_PROPS
};

void
gst_whisper_remote_settings_init (GstWhisperRemoteSettings *s)
{
  memset (s, 0, sizeof *s);
  s->model = g_strdup (GST_WHISPER_REMOTE_DEFAULT_MODEL);
  s->timeout_ms = GST_WHISPER_REMOTE_DEFAULT_TIMEOUT_MS;
  s->queue_ms = GST_WHISPER_REMOTE_DEFAULT_QUEUE_MS;
  s->requests = GST_WHISPER_REMOTE_DEFAULT_REQUESTS;
}

/* The key leaves no copy in freed memory. */
static void
wipe (gchar **s)
{
  if (*s)
    memset (*s, 0, strlen (*s));
  g_clear_pointer (s, g_free);
}

void
gst_whisper_remote_settings_clear (GstWhisperRemoteSettings *s)
{
  g_clear_pointer (&s->url, g_free);
  g_clear_pointer (&s->model, g_free);
  g_clear_pointer (&s->ca_file, g_free);
  wipe (&s->api_key);
}

void
gst_whisper_remote_settings_copy (GstWhisperRemoteSettings *dst,
    const GstWhisperRemoteSettings *src)
{
  *dst = *src;
  dst->url = g_strdup (src->url);
  dst->model = g_strdup (src->model);
  dst->api_key = g_strdup (src->api_key);
  dst->ca_file = g_strdup (src->ca_file);
}

guint
gst_whisper_remote_settings_install (GObjectClass *klass, guint first)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;

  /**
   * GstWhisperSink:server-url:
   *
   * device=remote: the OpenAI-compatible transcription endpoint the audio
   * is sent to, for example http://127.0.0.1:8000/v1/audio/transcriptions
   * (vLLM, faster-whisper servers) or http://127.0.0.1:8080/inference
   * (whisper.cpp's whisper-server). A URL without a path gets
   * /v1/audio/transcriptions, one ending in /v1 gets /audio/transcriptions.
   * http and https (certificates verified); proxies from the environment.
   * Several URLs, separated by commas or spaces, make a fleet: file input
   * is cut into pieces at pauses and the pieces go to whichever server has
   * the fewest requests in flight (server-requests in all); a server that
   * fails is left out for a back-off and its pieces go to the others.
   * Live input goes to the first URL.
   */
  g_object_class_install_property (klass, first + P_SERVER_URL,
      g_param_spec_string ("server-url", "Server URL",
          "device=remote: the OpenAI-compatible transcription endpoint "
          "(http[s]://host:port/v1/audio/transcriptions; a bare host:port or .../v1 gets "
          "the rest); several, separated by commas or spaces: a fleet", NULL, rw));
  /**
   * GstWhisperSink:server-model:
   *
   * device=remote: the `model` field of each request, the name the server
   * knows the model by (vLLM: the name given to `vllm serve`, for example
   * openai/whisper-large-v3-turbo; OpenAI: whisper-1; whisper.cpp's server
   * ignores it).
   */
  g_object_class_install_property (klass, first + P_SERVER_MODEL,
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
  g_object_class_install_property (klass, first + P_SERVER_API_KEY,
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
  g_object_class_install_property (klass, first + P_SERVER_TIMEOUT,
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
  g_object_class_install_property (klass, first + P_SERVER_QUEUE,
      g_param_spec_uint ("server-queue", "Server queue",
          "device=remote: ms of unsent audio kept while the server is down; beyond it live "
          "audio is dropped (GAP and warning), files wait", 0, 24 * 3600 * 1000,
          GST_WHISPER_REMOTE_DEFAULT_QUEUE_MS, rw));
  /**
   * GstWhisperSink:server-requests:
   *
   * device=remote, file (non-live) input: how many requests may be in
   * flight at once, all servers of server-url together. The file is cut
   * into pieces of at most one window where the voice activity detector
   * finds no speech; the pieces are sent ahead, and their text goes out in
   * the order of the audio, so that the text and timestamps do not depend
   * on this number. One server: 2 keeps it busy while the next piece
   * uploads; a fleet: about one per GPU (or per request a server decodes
   * at once).
   */
  g_object_class_install_property (klass, first + P_SERVER_REQUESTS,
      g_param_spec_uint ("server-requests", "Server requests",
          "device=remote, file input: requests in flight at once, all servers together",
          1, GST_WHISPER_REMOTE_MAX_REQUESTS, GST_WHISPER_REMOTE_DEFAULT_REQUESTS, rw));
  /**
   * GstWhisperSink:server-ca-file:
   *
   * device=remote: a PEM file of the CA certificates that https servers'
   * certificates are checked against, in place of the system's (a private
   * CA). Unset: the system's CA store. A file that cannot be read fails the
   * change to READY; a certificate that does not check out is an error
   * naming the server and the reason (no retry).
   */
  g_object_class_install_property (klass, first + P_SERVER_CA_FILE,
      g_param_spec_string ("server-ca-file", "Server CA file",
          "device=remote: PEM CA certificates to check https servers against, in place of "
          "the system's", NULL, rw));
  /**
   * GstWhisperSink:server-allow-insecure-key:
   *
   * device=remote: whether the API key may be sent over plain http to a
   * host that is not this machine (localhost, 127.0.0.0/8, ::1). FALSE:
   * such a server-url with a key fails the change to READY before anything
   * is sent; TRUE: it is sent, with a warning (anyone on the path can read
   * it).
   */
  g_object_class_install_property (klass, first + P_SERVER_ALLOW_INSECURE_KEY,
      g_param_spec_boolean ("server-allow-insecure-key", "Allow an insecure key",
          "device=remote: send the API key over plain http to a host that is not this "
          "machine (with a warning)", FALSE, rw));
  /**
   * GstWhisperSink:server-stream:
   *
   * device=remote, live input: ask for the answer as server-sent events
   * (form field stream=true, vLLM's transcription stream: text deltas, no
   * timestamps) and read them as they arrive: each delta posts the call's
   * text so far as an interim whisper-text message, and words that two
   * consecutive answers agree on are committed at once, before the answer
   * ends (item times are estimates: the answers have none). A server that
   * ignores stream=true and answers JSON works, committing at the end of
   * each answer. File input never streams (it needs the segments' times).
   */
  g_object_class_install_property (klass, first + P_SERVER_STREAM,
      g_param_spec_boolean ("server-stream", "Server stream",
          "device=remote, live input: read the answer as server-sent text deltas as they "
          "arrive and commit agreed words before it ends (estimated times)", FALSE, rw));
  return first + N_PROPS;
}

gboolean
gst_whisper_remote_settings_set (GstWhisperRemoteSettings *s, guint prop_id, guint first,
    const GValue *value)
{
  if (prop_id < first || prop_id >= first + N_PROPS)
    return FALSE;
  switch (prop_id - first) {
    case P_SERVER_URL:
      g_free (s->url);
      s->url = g_value_dup_string (value);
      break;
    case P_SERVER_MODEL:
      g_free (s->model);
      s->model = g_value_dup_string (value);
      break;
    case P_SERVER_API_KEY:
      wipe (&s->api_key);
      s->api_key = g_value_dup_string (value);
      break;
    case P_SERVER_TIMEOUT:
      s->timeout_ms = g_value_get_uint (value);
      break;
    case P_SERVER_QUEUE:
      s->queue_ms = g_value_get_uint (value);
      break;
    case P_SERVER_REQUESTS:
      s->requests = g_value_get_uint (value);
      break;
    case P_SERVER_CA_FILE:
      g_free (s->ca_file);
      s->ca_file = g_value_dup_string (value);
      break;
    case P_SERVER_ALLOW_INSECURE_KEY:
      s->allow_insecure_key = g_value_get_boolean (value);
      break;
    case P_SERVER_STREAM:
      s->stream = g_value_get_boolean (value);
      break;
  }
  return TRUE;
}

gboolean
gst_whisper_remote_settings_get (const GstWhisperRemoteSettings *s, guint prop_id, guint first,
    GValue *value)
{
  if (prop_id < first || prop_id >= first + N_PROPS)
    return FALSE;
  switch (prop_id - first) {
    case P_SERVER_URL:
      g_value_set_string (value, s->url);
      break;
    case P_SERVER_MODEL:
      g_value_set_string (value, s->model);
      break;
    case P_SERVER_TIMEOUT:
      g_value_set_uint (value, s->timeout_ms);
      break;
    case P_SERVER_QUEUE:
      g_value_set_uint (value, s->queue_ms);
      break;
    case P_SERVER_REQUESTS:
      g_value_set_uint (value, s->requests);
      break;
    case P_SERVER_CA_FILE:
      g_value_set_string (value, s->ca_file);
      break;
    case P_SERVER_ALLOW_INSECURE_KEY:
      g_value_set_boolean (value, s->allow_insecure_key);
      break;
    case P_SERVER_STREAM:
      g_value_set_boolean (value, s->stream);
      break;
    default:                   /* the API key is write only */
      break;
  }
  return TRUE;
}

gchar *
gst_whisper_remote_settings_api_key (const GstWhisperRemoteSettings *s)
{
  return g_strdup (s->api_key ? s->api_key : g_getenv (API_KEY_ENV));
}

void
gst_whisper_remote_settings_free_api_key (gchar *key)
{
  wipe (&key);
}
