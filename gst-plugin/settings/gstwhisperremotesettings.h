/* gstwhisperremotesettings.h: whispersink's device=remote settings
 * (server-url, server-model, server-api-key, server-timeout,
 * server-queue, server-requests, server-ca-file, server-allow-insecure-key,
 * server-stream): the client (remote/gstwhisperremote.h) is made from them
 * at the change to READY, so they change in NULL and READY only.
 * A typed copy of the properties: set and read under the element's object
 * lock; no runtime state. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_WHISPER_REMOTE_DEFAULT_TIMEOUT_MS 30000
#define GST_WHISPER_REMOTE_DEFAULT_QUEUE_MS 120000
#define GST_WHISPER_REMOTE_DEFAULT_MODEL "whisper-1"
#define GST_WHISPER_REMOTE_DEFAULT_REQUESTS 2
#define GST_WHISPER_REMOTE_MAX_REQUESTS 256

typedef struct {
  gchar *url;                 /* the endpoint, or a base URL ("http://host:8000",
                                 ".../v1") to which /v1/audio/transcriptions or
                                 /audio/transcriptions is added; several,
                                 separated by commas or spaces: a fleet */
  gchar *model;               /* the form field `model` */
  gchar *api_key;             /* never logged, never readable; NULL: $OPENAI_API_KEY */
  guint timeout_ms;           /* per request, connecting included */
  guint queue_ms;             /* unsent audio kept while the server is down */
  guint requests;             /* file input: requests in flight at once, all
                                 servers together */
  gchar *ca_file;             /* PEM CA certificates for https, in place of the
                                 system's; NULL: the system's */
  gboolean allow_insecure_key; /* the key may go over plain http to a host that
                                  is not this machine */
  gboolean stream;            /* live: ask for server-sent text deltas (stream=true) */
} GstWhisperRemoteSettings;

void gst_whisper_remote_settings_init (GstWhisperRemoteSettings *s);
/* Wipes the key's memory before freeing it. */
void gst_whisper_remote_settings_clear (GstWhisperRemoteSettings *s);
void gst_whisper_remote_settings_copy (GstWhisperRemoteSettings *dst,
    const GstWhisperRemoteSettings *src);
/* The key to send: server-api-key, else $OPENAI_API_KEY, else NULL. Give
 * it back with gst_whisper_remote_settings_free_api_key (), which wipes it. */
gchar *gst_whisper_remote_settings_api_key (const GstWhisperRemoteSettings *s);
void gst_whisper_remote_settings_free_api_key (gchar *key);

/* Installs the group's properties with ids first.. and returns the id
 * after the last. */
guint gst_whisper_remote_settings_install (GObjectClass *klass, guint first);
/* FALSE when prop_id is not one of the group's. Object lock held. */
gboolean gst_whisper_remote_settings_set (GstWhisperRemoteSettings *s, guint prop_id,
    guint first, const GValue *value);
gboolean gst_whisper_remote_settings_get (const GstWhisperRemoteSettings *s, guint prop_id,
    guint first, GValue *value);

G_END_DECLS
