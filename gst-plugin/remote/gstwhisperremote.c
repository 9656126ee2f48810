/* gstwhisperremote.c: the remote engine's HTTP client (see
 * gstwhisperremote.h). The request is the OpenAI transcription API's
 * (https://platform.openai.com/docs/api-reference/audio/createTranscription):
 * multipart/form-data with `file`, `model`, `language`, `prompt`,
 * `temperature`, `response_format=verbose_json` and
 * `timestamp_granularities[]`; the answer's `segments` (and `words`, at the
 * top level as OpenAI puts them or inside each segment as whisper.cpp's
 * server does) carry times in seconds from the start of the file sent. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "remote/gstwhisperremote.h"
#include "remote/gstwhisperremotehost.h"
#include "io/gstwhisperdebug.h"

#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <math.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_whisper_sink_debug

/* Back-off after the k-th failure in a row: min (BASE * 2^(k-1), MAX),
 * times a random factor in [0.5, 1) so that clients that failed together
 * do not come back together. */
#define BACKOFF_BASE_MS 250
#define BACKOFF_MAX_MS 5000
/* How often a waiting task checks whether the element is flushing. */
#define POLL_US (50 * G_TIME_SPAN_MILLISECOND)
/* The prompt: the last this many bytes of committed text (Whisper keeps
 * 223 tokens of it, about 900 bytes of English). */
#define PROMPT_MAX_BYTES 900
/* Server messages quoted in errors at most this long. */
#define MESSAGE_MAX 300
#define TIME_EPSILON 0.005

typedef struct {
  double start;
  gchar *text;
} SentSegment;

/* One server of the fleet (server-url's list). Client thread only, but
 * for `url` and `shown_url`, which do not change. */
typedef struct {
  gchar *url;
  gchar *shown_url;         /* without a password, for messages */
  guint in_flight;
  guint failures;           /* in a row */
  gint64 retry_at;          /* monotonic time it may be tried again */
  gint64 down_since;
} Server;

struct _GstWhisperRemote {
  GstElement *element;      /* not a reference: the element owns this */
  gchar *url, *model, *api_key;
  gchar *shown_url;         /* url without a password, for messages */
  guint timeout_ms, queue_ms;
  GTlsDatabase *tls_db;     /* server-ca-file's CAs, or NULL: the system's */

  /* The fleet: every URL of server-url (the first is url); jobs wait in
   * `waiting` (under lock, in the order of their seq) until a server has
   * room. */
  Server *servers;
  guint n_servers;
  guint next_server;        /* round robin among equally loaded servers */
  guint max_requests, in_flight;
  GQueue waiting;
  guint64 next_seq;
  GSource *wake;            /* a dispatch when a server's back-off ends */

  /* The client thread and its context; the session is used there only. */
  GThread *thread;
  GMainContext *context;
  GMainLoop *loop;
  SoupSession *session;
  GMutex lock;
  GCond cond;
  gboolean ready;

  /* Inference task only. */
  GString *prompt;
  GArray *sent;             /* SentSegment of the last answer */
  guint failures;           /* in a row */
  gint64 retry_at;          /* monotonic time of the next try after a failure */
  gint64 down_since;
};

/* One request, from the task to the client thread and back. */
typedef struct {
  GstWhisperRemote *remote;
  SoupMessage *msg;
  GCancellable *cancellable;
  GSource *timer;
  gboolean timed_out;
  GTlsCertificateFlags tls_errors;  /* why the server's certificate was refused */
  /* Results (under remote->lock until done). */
  gboolean done;
  guint status;
  gchar *reason;
  GBytes *body;
  GError *error;
} Request;

static void
sent_segment_clear (gpointer p)
{
  g_free (((SentSegment *) p)->text);
}

/* ------------------------------------------------------------------------ */
/* The client thread */

static gpointer
client_thread (gpointer data)
{
  GstWhisperRemote *r = data;

  g_main_context_push_thread_default (r->context);
  /* timeout: no byte for that long fails the request (the task's own timer
   * bounds the whole request); TLS certificates are checked against the
   * system's CA store by default; the proxy comes from GIO's default
   * resolver (glib-networking: the environment, http_proxy/no_proxy). */
  /* max-conns(-per-host): libsoup's defaults (10 in all, 2 per host) would
   * hold back requests that server-requests lets go (one URL behind a load
   * balancer, or a fleet of more than 10) */
  r->session = soup_session_new_with_options ("timeout", MAX (1u, (r->timeout_ms + 999) / 1000),
      "idle-timeout", 60, "user-agent", "gst-whisper/" VERSION,
      "max-conns", MAX (10u, r->max_requests + 2),
      "max-conns-per-host", MAX (2u, r->max_requests + 1), NULL);
  /* server-ca-file: its CAs in place of the system's */
  if (r->tls_db)
    soup_session_set_tls_database (r->session, r->tls_db);
  g_mutex_lock (&r->lock);
  r->ready = TRUE;
  g_cond_broadcast (&r->cond);
  g_mutex_unlock (&r->lock);

  g_main_loop_run (r->loop);

  if (r->wake) {
    g_source_destroy (r->wake);
    g_clear_pointer (&r->wake, g_source_unref);
  }
  soup_session_abort (r->session);
  g_clear_object (&r->session);
  /* Let the aborted operations finish. */
  while (g_main_context_iteration (r->context, FALSE))
    ;
  g_main_context_pop_thread_default (r->context);
  return NULL;
}

static gboolean
on_timeout (gpointer data)
{
  Request *q = data;

  q->timed_out = TRUE;
  g_cancellable_cancel (q->cancellable);
  return G_SOURCE_REMOVE;       /* on_read () drops the reference */
}

static void
on_read (GObject *source, GAsyncResult *res, gpointer data)
{
  Request *q = data;
  GstWhisperRemote *r = q->remote;
  GError *error = NULL;
  GBytes *body = soup_session_send_and_read_finish (SOUP_SESSION (source), res, &error);

  if (q->timer) {
    g_source_destroy (q->timer);
    g_source_unref (q->timer);
    q->timer = NULL;
  }
  g_mutex_lock (&r->lock);
  q->body = body;
  q->error = error;
  q->status = soup_message_get_status (q->msg);
  q->reason = g_strdup (soup_message_get_reason_phrase (q->msg));
  g_clear_object (&q->msg);
  q->done = TRUE;
  g_cond_broadcast (&r->cond);
  g_mutex_unlock (&r->lock);
}

/* A certificate that did not check out: refused, and why is kept for the
 * error (libsoup's own error says only that it was refused). */
static gboolean
on_accept_certificate (G_GNUC_UNUSED SoupMessage *msg, G_GNUC_UNUSED GTlsCertificate *cert,
    GTlsCertificateFlags errors, gpointer data)
{
  *(GTlsCertificateFlags *) data = errors;
  return FALSE;
}

/* The error of a refused certificate, naming the server and the reason. */
static void
set_tls_error (GError **error, const gchar *shown_url, GTlsCertificateFlags flags,
    const GError *cause)
{
  GString *why = g_string_new (NULL);
  static const struct {
    GTlsCertificateFlags flag;
    const gchar *text;
  } reasons[] = {
    {G_TLS_CERTIFICATE_UNKNOWN_CA, "signed by an unknown CA"},
    {G_TLS_CERTIFICATE_BAD_IDENTITY, "not for this host name"},
    {G_TLS_CERTIFICATE_NOT_ACTIVATED, "not valid yet"},
    {G_TLS_CERTIFICATE_EXPIRED, "expired"},
    {G_TLS_CERTIFICATE_REVOKED, "revoked"},
    {G_TLS_CERTIFICATE_INSECURE, "insecure algorithm"},
    {G_TLS_CERTIFICATE_GENERIC_ERROR, "invalid"},
  };

  for (guint i = 0; i < G_N_ELEMENTS (reasons); i++)
    if (flags & reasons[i].flag)
      g_string_append_printf (why, "%s%s", why->len ? ", " : "", reasons[i].text);
  g_set_error (error, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE,
      "server-url %s: the server's TLS certificate is refused (%s: %s); for a private CA "
      "set server-ca-file to its PEM file", shown_url, why->len ? why->str : "not trusted",
      cause ? cause->message : "bad certificate");
  g_string_free (why, TRUE);
}

static gboolean
is_certificate_error (const GError *error, GTlsCertificateFlags flags)
{
  return flags != 0 || g_error_matches (error, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE);
}

static gboolean
start_request (gpointer data)
{
  Request *q = data;
  GstWhisperRemote *r = q->remote;

  g_signal_connect (q->msg, "accept-certificate", G_CALLBACK (on_accept_certificate),
      &q->tls_errors);
  q->timer = g_timeout_source_new (r->timeout_ms);
  g_source_set_callback (q->timer, on_timeout, q, NULL);
  g_source_attach (q->timer, r->context);
  soup_session_send_and_read_async (r->session, q->msg, G_PRIORITY_DEFAULT, q->cancellable,
      on_read, q);
  return G_SOURCE_REMOVE;
}

/* ------------------------------------------------------------------------ */
/* Setup */

/* The endpoint of a URL the user gave (see gstwhisperremote.h). */
static GUri *
endpoint_url (const gchar *url, GError **error)
{
  g_autoptr (GUri) uri = NULL;
  g_autoptr (GUri) full = NULL;
  const gchar *scheme, *path;
  g_autofree gchar *new_path = NULL;
  GError *err = NULL;

  if (url == NULL || *url == '\0') {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "device=remote needs server-url (for example "
        "http://127.0.0.1:8000/v1/audio/transcriptions)");
    return NULL;
  }
  uri = g_uri_parse (url, SOUP_HTTP_URI_FLAGS, &err);
  if (uri == NULL) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "server-url \"%s\" is not a URL: %s", url, err->message);
    g_error_free (err);
    return NULL;
  }
  scheme = g_uri_get_scheme (uri);
  if (g_ascii_strcasecmp (scheme, "http") != 0 && g_ascii_strcasecmp (scheme, "https") != 0) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "server-url \"%s\": the scheme must be http or https, not %s", url, scheme);
    return NULL;
  }
  if (g_uri_get_host (uri) == NULL || *g_uri_get_host (uri) == '\0') {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "server-url \"%s\" has no host", url);
    return NULL;
  }
  path = g_uri_get_path (uri);
  if (*path == '\0' || strcmp (path, "/") == 0)
    new_path = g_strdup ("/v1/audio/transcriptions");
  else if (g_str_has_suffix (path, "/v1") || g_str_has_suffix (path, "/v1/"))
    new_path = g_strconcat (path, g_str_has_suffix (path, "/") ? "" : "/",
        "audio/transcriptions", NULL);
  else
    return g_steal_pointer (&uri);
  full = g_uri_build (g_uri_get_flags (uri), g_uri_get_scheme (uri), g_uri_get_userinfo (uri),
      g_uri_get_host (uri), g_uri_get_port (uri), new_path, g_uri_get_query (uri), NULL);
  return g_steal_pointer (&full);
}

/* server-url's URLs: one or more, separated by commas or white space. */
static gchar **
split_urls (const gchar *list)
{
  g_auto (GStrv) parts = g_strsplit_set (list ? list : "", ", \t\r\n", -1);
  GPtrArray *urls = g_ptr_array_new ();
  guint i;

  for (i = 0; parts[i]; i++)
    if (*parts[i] != '\0')
      g_ptr_array_add (urls, g_strdup (parts[i]));
  g_ptr_array_add (urls, NULL);
  return (gchar **) g_ptr_array_free (urls, FALSE);
}

static void
free_uris (GUri **uris, guint n)
{
  for (guint i = 0; i < n; i++)
    g_clear_pointer (&uris[i], g_uri_unref);
  g_free (uris);
}

/* The key over plain http to a host that is not this machine: refused
 * unless server-allow-insecure-key, then with a warning. */
static gboolean
check_key_transport (GstElement *element, GUri *uri, gboolean have_key, gboolean allow,
    GError **error)
{
  g_autofree gchar *shown = NULL;

  if (!have_key || g_ascii_strcasecmp (g_uri_get_scheme (uri), "http") != 0
      || gst_whisper_remote_host_is_local (g_uri_get_host (uri)))
    return TRUE;
  shown = g_uri_to_string_partial (uri, G_URI_HIDE_PASSWORD | G_URI_HIDE_AUTH_PARAMS);
  if (!allow) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
        "server-url %s: the API key (server-api-key or $OPENAI_API_KEY) would go over plain "
        "http to %s, which is not this machine, where anyone on the way can read it; use "
        "https, or set server-allow-insecure-key=true", shown, g_uri_get_host (uri));
    return FALSE;
  }
  GST_ELEMENT_WARNING_WITH_DETAILS (element, RESOURCE, SETTINGS,
      ("The API key goes over plain http to %s (server-allow-insecure-key=true): anyone "
          "on the way can read it", shown), ("server-url, server-allow-insecure-key"),
      ("reason", G_TYPE_STRING, "insecure-key", "url", G_TYPE_STRING, shown, NULL));
  return TRUE;
}

GstWhisperRemote *
gst_whisper_remote_new (GstElement *element, const GstWhisperRemoteSettings *s,
    GError **error)
{
  GstWhisperRemote *r;
  gchar *key;
  g_auto (GStrv) urls = split_urls (s->url);
  guint i, n = g_strv_length (urls);
  GUri **uris;
  GTlsDatabase *db = NULL;
  gboolean have_key;

  if (n == 0) {
    endpoint_url (NULL, error);     /* the message of a missing server-url */
    return NULL;
  }
  key = gst_whisper_remote_settings_api_key (s);
  have_key = key && *key;
  uris = g_new0 (GUri *, n);
  for (i = 0; i < n; i++) {
    uris[i] = endpoint_url (urls[i], error);
    if (uris[i] == NULL
        || !check_key_transport (element, uris[i], have_key, s->allow_insecure_key, error)) {
      free_uris (uris, n);
      gst_whisper_remote_settings_free_api_key (key);
      return NULL;
    }
  }
  if (s->ca_file && *s->ca_file) {
    GError *err = NULL;
    db = g_tls_file_database_new (s->ca_file, &err);
    if (db == NULL) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
          "server-ca-file \"%s\" is not a readable PEM file of CA certificates: %s",
          s->ca_file, err->message);
      g_error_free (err);
      free_uris (uris, n);
      gst_whisper_remote_settings_free_api_key (key);
      return NULL;
    }
  }
  r = g_new0 (GstWhisperRemote, 1);
  r->element = element;
  r->tls_db = db;
  r->n_servers = n;
  r->servers = g_new0 (Server, n);
  for (i = 0; i < n; i++) {
    r->servers[i].url = g_uri_to_string (uris[i]);
    r->servers[i].shown_url = g_uri_to_string_partial (uris[i],
        G_URI_HIDE_PASSWORD | G_URI_HIDE_AUTH_PARAMS);
  }
  free_uris (uris, n);
  r->url = g_strdup (r->servers[0].url);
  r->shown_url = g_strdup (r->servers[0].shown_url);
  r->max_requests = CLAMP (s->requests, 1u, GST_WHISPER_REMOTE_MAX_REQUESTS);
  g_queue_init (&r->waiting);
  r->model = g_strdup (s->model && *s->model ? s->model : GST_WHISPER_REMOTE_DEFAULT_MODEL);
  r->api_key = have_key ? g_strdup (key) : NULL;
  gst_whisper_remote_settings_free_api_key (key);
  r->timeout_ms = MAX (s->timeout_ms, 1u);
  r->queue_ms = s->queue_ms;
  r->prompt = g_string_new (NULL);
  r->sent = g_array_new (FALSE, FALSE, sizeof (SentSegment));
  g_array_set_clear_func (r->sent, sent_segment_clear);
  g_mutex_init (&r->lock);
  g_cond_init (&r->cond);
  r->context = g_main_context_new ();
  r->loop = g_main_loop_new (r->context, FALSE);
  r->thread = g_thread_new ("whisper-remote", client_thread, r);
  g_mutex_lock (&r->lock);
  while (!r->ready)
    g_cond_wait (&r->cond, &r->lock);
  g_mutex_unlock (&r->lock);
  GST_INFO_OBJECT (element, "remote engine: %s (%u server%s), model %s, %s API key, "
      "time-out %u ms, queue %u ms, %u requests in flight", r->shown_url, r->n_servers,
      r->n_servers > 1 ? "s" : "", r->model, r->api_key ? "with an" : "no", r->timeout_ms,
      r->queue_ms, r->max_requests);
  return r;
}

static gboolean
quit_loop (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

void
gst_whisper_remote_free (GstWhisperRemote *r)
{
  if (r == NULL)
    return;
  g_main_context_invoke (r->context, quit_loop, r->loop);
  g_thread_join (r->thread);
  g_main_loop_unref (r->loop);
  g_main_context_unref (r->context);
  g_mutex_clear (&r->lock);
  g_cond_clear (&r->cond);
  g_string_free (r->prompt, TRUE);
  g_array_unref (r->sent);
  if (r->api_key)
    memset (r->api_key, 0, strlen (r->api_key));
  g_free (r->api_key);
  for (guint i = 0; i < r->n_servers; i++) {
    g_free (r->servers[i].url);
    g_free (r->servers[i].shown_url);
  }
  g_free (r->servers);
  g_clear_object (&r->tls_db);
  g_free (r->url);
  g_free (r->shown_url);
  g_free (r->model);
  g_free (r);
}

const gchar *
gst_whisper_remote_get_url (const GstWhisperRemote *r)
{
  return r->shown_url;
}

gsize
gst_whisper_remote_queue_samples (const GstWhisperRemote *r)
{
  return gst_util_uint64_scale_int (r->queue_ms, WHISPER_SAMPLE_RATE, 1000);
}

gboolean
gst_whisper_remote_is_down (const GstWhisperRemote *r)
{
  return r->failures > 0;
}

/* ------------------------------------------------------------------------ */
/* The request */

/* 16-bit PCM WAV, 16 kHz mono: what every server reads. */
static GBytes *
make_wav (const float *pcm, gsize n)
{
  const guint32 data_bytes = (guint32) (n * 2);
  guint8 *buf = g_malloc (44 + (gsize) data_bytes);
  guint8 *p = buf;
  gsize i;

#define PUT4(s) (memcpy (p, s, 4), p += 4)
#define PUT32(v) (GST_WRITE_UINT32_LE (p, v), p += 4)
#define PUT16(v) (GST_WRITE_UINT16_LE (p, v), p += 2)
  PUT4 ("RIFF");
  PUT32 (36 + data_bytes);
  PUT4 ("WAVE");
  PUT4 ("fmt ");
  PUT32 (16);
  PUT16 (1);                    /* PCM */
  PUT16 (1);                    /* mono */
  PUT32 (WHISPER_SAMPLE_RATE);
  PUT32 (WHISPER_SAMPLE_RATE * 2);
  PUT16 (2);
  PUT16 (16);
  PUT4 ("data");
  PUT32 (data_bytes);
  for (i = 0; i < n; i++) {
    /* S16 input came in as v / 32768: this gives back the same v. */
    float v = pcm[i] * 32768.0f;
    gint16 s = (gint16) (v >= 32767.0f ? 32767 : v <= -32768.0f ? -32768 : lrintf (v));
    PUT16 ((guint16) s);
  }
#undef PUT4
#undef PUT32
#undef PUT16
  return g_bytes_new_take (buf, 44 + (gsize) data_bytes);
}

/* "en-US", "en_GB", "eng"... -> "en"; NULL when it is no language code. */
static gchar *
language_field (const gchar *code)
{
  gsize len;

  if (code == NULL || *code == '\0')
    return NULL;
  len = strcspn (code, "-_");
  if (len < 2 || len > 3)
    return NULL;
  if (len == 3 && g_ascii_strncasecmp (code, "eng", 3) == 0)
    return g_strdup ("en");
  return g_ascii_strdown (code, (gssize) len);
}

static SoupMessage *
make_message (GstWhisperRemote *r, const gchar *url, GBytes *wav,
    const GstWhisperRemoteRequest *req, const gchar *prompt)
{
  SoupMultipart *mp = soup_multipart_new (SOUP_FORM_MIME_TYPE_MULTIPART);
  g_autofree gchar *language = language_field (req->language);
  gchar temperature[G_ASCII_DTOSTR_BUF_SIZE];
  SoupMessage *msg;

  soup_multipart_append_form_file (mp, "file", "audio.wav", "audio/wav", wav);
  soup_multipart_append_form_string (mp, "model", r->model);
  if (language)
    soup_multipart_append_form_string (mp, "language", language);
  if (prompt && *prompt)
    soup_multipart_append_form_string (mp, "prompt", prompt);
  g_ascii_dtostr (temperature, sizeof temperature, req->temperature);
  soup_multipart_append_form_string (mp, "temperature", temperature);
  soup_multipart_append_form_string (mp, "response_format", "verbose_json");
  soup_multipart_append_form_string (mp, "timestamp_granularities[]", "segment");
  if (req->words)
    soup_multipart_append_form_string (mp, "timestamp_granularities[]", "word");
  msg = soup_message_new_from_multipart (url, mp);
  soup_multipart_free (mp);
  if (msg && r->api_key) {
    g_autofree gchar *auth = g_strconcat ("Bearer ", r->api_key, NULL);
    soup_message_headers_replace (soup_message_get_request_headers (msg), "Authorization",
        auth);
    memset (auth, 0, strlen (auth));
  }
  return msg;
}

/* Sends the message and waits for the answer; FALSE when cancelled (the
 * request is then cancelled and waited for too). */
static gboolean
run_request (GstWhisperRemote *r, Request *q, GstWhisperRemoteCancelledFunc cancelled,
    gpointer user_data)
{
  gboolean was_cancelled = FALSE;

  q->remote = r;
  q->cancellable = g_cancellable_new ();
  g_main_context_invoke (r->context, start_request, q);
  g_mutex_lock (&r->lock);
  while (!q->done) {
    g_cond_wait_until (&r->cond, &r->lock, g_get_monotonic_time () + POLL_US);
    if (!q->done && !was_cancelled) {
      g_mutex_unlock (&r->lock);
      if (cancelled && cancelled (user_data)) {
        was_cancelled = TRUE;
        g_cancellable_cancel (q->cancellable);
      }
      g_mutex_lock (&r->lock);
    }
  }
  g_mutex_unlock (&r->lock);
  return !was_cancelled;
}

static void
request_clear (Request *q)
{
  g_clear_object (&q->cancellable);
  g_clear_pointer (&q->body, g_bytes_unref);
  g_clear_error (&q->error);
  g_free (q->reason);
}

/* The server's own words about a refusal: error.message (OpenAI, vLLM),
 * detail (FastAPI), message, else the start of the body. */
static gchar *
server_message (GBytes *body)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  gsize len = 0;
  const gchar *data = body ? g_bytes_get_data (body, &len) : NULL;
  gchar *msg = NULL;

  if (data == NULL || len == 0)
    return g_strdup ("(empty answer)");
  if (json_parser_load_from_data (parser, data, (gssize) len, NULL)
      && JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser))) {
    JsonObject *o = json_node_get_object (json_parser_get_root (parser));
    JsonNode *n = NULL;
    if (json_object_has_member (o, "error")) {
      JsonNode *e = json_object_get_member (o, "error");
      if (JSON_NODE_HOLDS_OBJECT (e) && json_object_has_member (json_node_get_object (e),
              "message"))
        n = json_object_get_member (json_node_get_object (e), "message");
      else
        n = e;
    } else if (json_object_has_member (o, "detail")) {
      n = json_object_get_member (o, "detail");
    } else if (json_object_has_member (o, "message")) {
      n = json_object_get_member (o, "message");
    }
    if (n && JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_STRING)
      msg = g_strdup (json_node_get_string (n));
    else if (n)
      msg = json_to_string (n, FALSE);
  }
  if (msg == NULL)
    msg = g_utf8_make_valid (data, (gssize) MIN (len, (gsize) MESSAGE_MAX));
  if (strlen (msg) > MESSAGE_MAX)
    strcpy (msg + MESSAGE_MAX - 3, "...");
  return msg;
}

static double
member_double (JsonObject *o, const gchar *name, double fallback)
{
  JsonNode *n = json_object_get_member (o, name);

  if (n == NULL || !JSON_NODE_HOLDS_VALUE (n))
    return fallback;
  switch (json_node_get_value_type (n)) {
    case G_TYPE_DOUBLE:
    case G_TYPE_INT64:
      return json_node_get_double (n);
    default:
      return fallback;
  }
}

static const gchar *
member_string (JsonObject *o, const gchar *name)
{
  JsonNode *n = json_object_get_member (o, name);

  if (n == NULL || !JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_STRING)
    return NULL;
  return json_node_get_string (n);
}

static JsonArray *
member_array (JsonObject *o, const gchar *name)
{
  JsonNode *n = json_object_get_member (o, name);

  return n && JSON_NODE_HOLDS_ARRAY (n) ? json_node_get_array (n) : NULL;
}

typedef struct {
  double start, end, probability;
  const gchar *text;
} AnswerWord;

static void
collect_words (JsonArray *a, GArray *out)
{
  guint i;

  for (i = 0; a && i < json_array_get_length (a); i++) {
    JsonNode *n = json_array_get_element (a, i);
    JsonObject *o;
    AnswerWord w;
    if (!JSON_NODE_HOLDS_OBJECT (n))
      continue;
    o = json_node_get_object (n);
    w.text = member_string (o, "word");
    if (w.text == NULL)
      w.text = member_string (o, "text");
    w.start = member_double (o, "start", NAN);
    w.end = member_double (o, "end", NAN);
    w.probability = member_double (o, "probability", NAN);
    if (w.text && isfinite (w.start) && isfinite (w.end))
      g_array_append_val (out, w);
  }
}

/* Hands the answer to the callbacks; FALSE (with *error) when it is not a
 * transcription. */
static gboolean
deliver (GstWhisperRemote *r, GBytes *body, double duration,
    const GstWhisperRemoteRequest *req, WhisperSegmentFunc segment_func,
    GstWhisperRemoteWordFunc word_func, gpointer user_data, GError **error)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GArray) words = g_array_new (FALSE, FALSE, sizeof (AnswerWord));
  gsize len = 0;
  const gchar *data = g_bytes_get_data (body, &len);
  GError *err = NULL;
  JsonObject *root;
  JsonArray *segments;
  const gchar *text;
  guint i, n_seg, w = 0;
  gboolean go_on = TRUE;

  if (data == NULL || !json_parser_load_from_data (parser, data, (gssize) len, &err)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "the answer is not JSON: %s",
        err ? err->message : "empty");
    g_clear_error (&err);
    return FALSE;
  }
  if (!JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser))) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
        "the answer is not a JSON object");
    return FALSE;
  }
  root = json_node_get_object (json_parser_get_root (parser));
  segments = member_array (root, "segments");
  text = member_string (root, "text");
  if (segments == NULL && text == NULL) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
        "the answer has neither \"segments\" nor \"text\"");
    return FALSE;
  }
  n_seg = segments ? json_array_get_length (segments) : 0;
  for (i = 0; i < n_seg; i++) {
    JsonNode *n = json_array_get_element (segments, i);
    if (!JSON_NODE_HOLDS_OBJECT (n) || member_string (json_node_get_object (n), "text") == NULL
        || !isfinite (member_double (json_node_get_object (n), "start", NAN))
        || !isfinite (member_double (json_node_get_object (n), "end", NAN))) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
          "segment %u of the answer has no text, start or end", i);
      return FALSE;
    }
  }
  if (req->words) {
    collect_words (member_array (root, "words"), words);
    for (i = 0; words->len == 0 && i < n_seg; i++)
      collect_words (member_array (json_node_get_object (json_array_get_element (segments, i)),
              "words"), words);
  }

  g_array_set_size (r->sent, 0);
  for (i = 0; go_on && i < MAX (n_seg, 1u); i++) {
    WhisperSegment *seg = g_new0 (WhisperSegment, 1);
    SentSegment sent;
    if (n_seg > 0) {
      JsonObject *o = json_node_get_object (json_array_get_element (segments, i));
      seg->start = member_double (o, "start", 0.0);
      seg->end = member_double (o, "end", 0.0);
      seg->text = g_strdup (member_string (o, "text"));
      seg->avg_logprob = member_double (o, "avg_logprob", 0.0);
      seg->no_speech_prob = member_double (o, "no_speech_prob", 0.0);
      seg->compression_ratio = member_double (o, "compression_ratio", 0.0);
      seg->temperature = member_double (o, "temperature", req->temperature);
    } else {
      /* A plain "text" answer: one segment over all of the audio. */
      seg->start = 0.0;
      seg->end = duration;
      seg->text = g_strdup (text);
    }
    seg->start = CLAMP (seg->start, 0.0, duration);
    seg->end = CLAMP (seg->end, seg->start, duration);
    /* Words of this segment: those that start before its end (the last
     * segment takes the rest). */
    while (go_on && w < words->len && (i + 1 >= MAX (n_seg, 1u)
            || g_array_index (words, AnswerWord, w).start < seg->end - TIME_EPSILON)) {
      AnswerWord *aw = &g_array_index (words, AnswerWord, w++);
      GstWhisperWord word = { 0, };
      word.text = g_strstrip (g_strdup (aw->text));
      word.start = CLAMP (aw->start, 0.0, duration);
      word.end = CLAMP (aw->end, word.start, duration);
      word.avg_logprob = isfinite (aw->probability) && aw->probability > 0.0
          ? log (aw->probability) : 0.0;
      word.step = -1;
      word.segment_start = seg->start;
      if (*word.text == '\0' || word_func == NULL) {
        g_free (word.text);
        continue;
      }
      go_on = word_func (&word, user_data);
    }
    sent.start = seg->start;
    sent.text = g_strdup (seg->text);
    g_array_append_val (r->sent, sent);
    if (go_on && segment_func)
      go_on = segment_func (seg, user_data);
    else
      whisper_segment_free (seg);
  }
  return TRUE;
}

/* One try. *retry: a failure worth trying again. */
static GstWhisperRemoteResult
try_once (GstWhisperRemote *r, const float *pcm, gsize n, const GstWhisperRemoteRequest *req,
    WhisperSegmentFunc segment_func, GstWhisperRemoteWordFunc word_func,
    GstWhisperRemoteCancelledFunc cancelled, gpointer user_data, GError **error)
{
  Request q = { 0, };
  GstWhisperRemoteResult result = GST_WHISPER_REMOTE_LATER;
  double seconds = n / (double) WHISPER_SAMPLE_RATE;
  gint64 t0 = g_get_monotonic_time ();
  GError *err = NULL;

  {
    g_autoptr (GBytes) wav = make_wav (pcm, n);
    q.msg = make_message (r, r->url, wav, req, req->condition ? r->prompt->str : NULL);
  }
  if (q.msg == NULL) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "server-url %s: cannot make a request to it", r->shown_url);
    return GST_WHISPER_REMOTE_FAILED;
  }
  GST_DEBUG_OBJECT (r->element, "POST %.2f s of audio to %s", seconds, r->shown_url);
  if (!run_request (r, &q, cancelled, user_data) && !q.timed_out) {
    request_clear (&q);
    return GST_WHISPER_REMOTE_CANCELLED;
  }

  if (q.timed_out) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
        "no answer within server-timeout (%u ms)", r->timeout_ms);
  } else if (q.error && is_certificate_error (q.error, q.tls_errors)) {
    set_tls_error (error, r->shown_url, q.tls_errors, q.error);
    result = GST_WHISPER_REMOTE_FAILED;     /* the same certificate again */
  } else if (q.error) {
    g_set_error (error, q.error->domain, q.error->code, "%s", q.error->message);
  } else if (q.status >= 200 && q.status < 300) {
    if (deliver (r, q.body, seconds, req, segment_func, word_func, user_data, &err)) {
      result = GST_WHISPER_REMOTE_DONE;
      GST_DEBUG_OBJECT (r->element, "answered in %.3f s",
          (g_get_monotonic_time () - t0) / 1e6);
    } else {
      g_propagate_prefixed_error (error, err, "HTTP %u, but ", q.status);
    }
  } else {
    g_autofree gchar *msg = server_message (q.body);
    /* 408 (time-out) and 429 (too many requests) are worth trying again
     * (https://www.rfc-editor.org/rfc/rfc9110#name-status-codes,
     * https://www.rfc-editor.org/rfc/rfc6585#section-4); any other 4xx
     * will be refused again. */
    gboolean retry = q.status >= 500 || q.status == 408 || q.status == 429 || q.status < 200;
    g_set_error (error, G_IO_ERROR, retry ? G_IO_ERROR_FAILED : G_IO_ERROR_PERMISSION_DENIED,
        "HTTP %u %s: %s", q.status, q.reason ? q.reason : "", msg);
    if (!retry)
      result = GST_WHISPER_REMOTE_FAILED;
  }
  request_clear (&q);
  return result;
}

/* Sleeps until `until` (monotonic) in short steps; FALSE when cancelled. */
static gboolean
wait_until (gint64 until, GstWhisperRemoteCancelledFunc cancelled, gpointer user_data)
{
  for (;;) {
    gint64 now = g_get_monotonic_time ();
    if (cancelled && cancelled (user_data))
      return FALSE;
    if (now >= until)
      return TRUE;
    g_usleep (MIN (until - now, POLL_US));
  }
}

GstWhisperRemoteResult
gst_whisper_remote_transcribe (GstWhisperRemote *r, const float *pcm, gsize n,
    const GstWhisperRemoteRequest *req, gboolean block, WhisperSegmentFunc segment_func,
    GstWhisperRemoteWordFunc word_func, GstWhisperRemoteCancelledFunc cancelled,
    gpointer user_data, GError **error)
{
  for (;;) {
    GstWhisperRemoteResult res;
    GError *err = NULL;
    gint64 delay;

    if (r->failures > 0 && g_get_monotonic_time () < r->retry_at) {
      if (!block)
        return GST_WHISPER_REMOTE_LATER;
      if (!wait_until (r->retry_at, cancelled, user_data))
        return GST_WHISPER_REMOTE_CANCELLED;
    }
    res = try_once (r, pcm, n, req, segment_func, word_func, cancelled, user_data, &err);
    if (res == GST_WHISPER_REMOTE_DONE) {
      if (r->failures > 0) {
        double outage = (g_get_monotonic_time () - r->down_since) / 1e6;
        GST_ELEMENT_INFO_WITH_DETAILS (r->element, RESOURCE, READ,
            ("Transcription server %s answers again after %u failed requests (%.1f s); "
                "sending the queued audio", r->shown_url, r->failures, outage), (NULL),
            ("reason", G_TYPE_STRING, "server-recovered", "url", G_TYPE_STRING, r->shown_url,
                "failures", G_TYPE_UINT, r->failures, NULL));
      }
      r->failures = 0;
      return res;
    }
    if (res == GST_WHISPER_REMOTE_CANCELLED)
      return res;
    if (res == GST_WHISPER_REMOTE_FAILED && err->domain == G_TLS_ERROR) {
      g_propagate_error (error, err);   /* names the server itself */
      return res;
    }
    if (res == GST_WHISPER_REMOTE_FAILED) {
      g_propagate_prefixed_error (error, err, "Transcription server %s refused the request: ",
          r->shown_url);
      return res;
    }
    /* Worth another try, after a back-off. */
    if (r->failures == 0)
      r->down_since = g_get_monotonic_time ();
    r->failures++;
    delay = (gint64) BACKOFF_BASE_MS << MIN (r->failures - 1, 16u);
    delay = MIN (delay, BACKOFF_MAX_MS) * G_TIME_SPAN_MILLISECOND;
    delay = (gint64) (delay * g_random_double_range (0.5, 1.0));
    r->retry_at = g_get_monotonic_time () + delay;
    GST_ELEMENT_WARNING_WITH_DETAILS (r->element, RESOURCE, READ,
        ("Transcription server %s failed (%s); %.1f s of audio kept, trying again in "
            "%.1f s", r->shown_url, err->message, n / (double) WHISPER_SAMPLE_RATE, delay / 1e6),
        ("attempt %u in a row; the audio waits (up to server-queue) until the server "
            "answers", r->failures),
        ("reason", G_TYPE_STRING, "server-unavailable", "url", G_TYPE_STRING, r->shown_url,
            "error", G_TYPE_STRING, err->message, "failures", G_TYPE_UINT, r->failures,
            "retry-in", G_TYPE_UINT64, (guint64) delay * 1000, NULL));
    g_error_free (err);
    if (!block)
      return GST_WHISPER_REMOTE_LATER;
  }
}

void
gst_whisper_remote_commit (GstWhisperRemote *r, double seconds)
{
  guint i;

  for (i = 0; i < r->sent->len; i++) {
    SentSegment *s = &g_array_index (r->sent, SentSegment, i);
    if (s->start >= seconds - TIME_EPSILON || s->text == NULL)
      continue;
    g_string_append (r->prompt, s->text);
  }
  g_array_set_size (r->sent, 0);
  if (r->prompt->len > PROMPT_MAX_BYTES) {
    /* Keep the end, from a word start (and so from a character start). */
    const gchar *cut = r->prompt->str + r->prompt->len - PROMPT_MAX_BYTES;
    const gchar *space = strchr (cut, ' ');
    gsize drop = (space ? space : cut) - r->prompt->str;
    while (drop < r->prompt->len && (r->prompt->str[drop] & 0xC0) == 0x80)
      drop++;
    g_string_erase (r->prompt, 0, (gssize) drop);
  }
}

void
gst_whisper_remote_reset (GstWhisperRemote *r)
{
  g_string_truncate (r->prompt, 0);
  g_array_set_size (r->sent, 0);
}

/* ------------------------------------------------------------------------ */
/* The fleet: jobs sent ahead, on any server */

struct _GstWhisperRemoteJob {
  GstWhisperRemote *remote;
  guint64 seq;              /* the order of submission: retries go first */
  GBytes *wav;
  gsize n;
  gchar *language;
  GstWhisperRemoteRequest req;
  guint attempts;
  /* In flight (client thread): */
  Server *server;
  SoupMessage *msg;
  GCancellable *cancellable;
  GSource *timer;
  gboolean timed_out;
  GTlsCertificateFlags tls_errors;
  /* Under remote->lock: */
  gboolean queued;          /* in remote->waiting */
  gboolean sending;         /* a request is in flight */
  gboolean done;            /* answered (body) or refused for good (error) */
  gboolean dropped;         /* the task gave it up: freed when it comes back */
  GBytes *body;
  GError *error;
};

static gboolean fleet_dispatch (gpointer data);

static void
job_free (GstWhisperRemoteJob *job)
{
  g_bytes_unref (job->wav);
  g_free (job->language);
  g_clear_object (&job->cancellable);
  g_clear_pointer (&job->body, g_bytes_unref);
  g_clear_error (&job->error);
  g_free (job);
}

guint
gst_whisper_remote_max_requests (const GstWhisperRemote *r)
{
  return r->max_requests;
}

guint
gst_whisper_remote_n_servers (const GstWhisperRemote *r)
{
  return r->n_servers;
}

/* Back into the waiting queue, in the order of submission (lock held). */
static void
queue_job_locked (GstWhisperRemote *r, GstWhisperRemoteJob *job)
{
  GList *l;

  for (l = r->waiting.head; l; l = l->next)
    if (((GstWhisperRemoteJob *) l->data)->seq > job->seq)
      break;
  if (l)
    g_queue_insert_before (&r->waiting, l, job);
  else
    g_queue_push_tail (&r->waiting, job);
  job->queued = TRUE;
}

GstWhisperRemoteJob *
gst_whisper_remote_submit (GstWhisperRemote *r, const float *pcm, gsize n,
    const GstWhisperRemoteRequest *req)
{
  GstWhisperRemoteJob *job = g_new0 (GstWhisperRemoteJob, 1);

  job->remote = r;
  job->wav = make_wav (pcm, n);
  job->n = n;
  job->req = *req;
  job->language = g_strdup (req->language);
  job->req.language = job->language;
  job->req.condition = FALSE;   /* pieces go ahead of the text before them */
  g_mutex_lock (&r->lock);
  job->seq = r->next_seq++;
  queue_job_locked (r, job);
  g_mutex_unlock (&r->lock);
  g_main_context_invoke (r->context, fleet_dispatch, r);
  return job;
}

/* A server's back-off after its k-th failure in a row (see the top). */
static gint64
backoff_us (guint failures)
{
  gint64 delay = (gint64) BACKOFF_BASE_MS << MIN (failures - 1, 16u);

  delay = MIN (delay, BACKOFF_MAX_MS) * G_TIME_SPAN_MILLISECOND;
  return (gint64) (delay * g_random_double_range (0.5, 1.0));
}

/* What an answer is: NULL when a transcription, else why not; *retry when
 * worth trying again (on another server). */
static gchar *
judge_answer (GstWhisperRemote *r, GstWhisperRemoteJob *job, GError *error, guint status,
    const gchar *reason, GBytes *body, gboolean *retry)
{
  *retry = TRUE;
  if (job->timed_out)
    return g_strdup_printf ("no answer within server-timeout (%u ms)", r->timeout_ms);
  if (error)
    return g_strdup (error->message);
  if (status >= 200 && status < 300) {
    g_autoptr (JsonParser) parser = json_parser_new ();
    gsize len = 0;
    const gchar *data = body ? g_bytes_get_data (body, &len) : NULL;
    JsonObject *o;
    if (data == NULL || !json_parser_load_from_data (parser, data, (gssize) len, NULL)
        || !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)))
      return g_strdup_printf ("HTTP %u, but the answer is not a JSON object", status);
    o = json_node_get_object (json_parser_get_root (parser));
    if (!json_object_has_member (o, "segments") && !json_object_has_member (o, "text"))
      return g_strdup_printf ("HTTP %u, but the answer has neither \"segments\" nor "
          "\"text\"", status);
    return NULL;
  } else {
    g_autofree gchar *msg = server_message (body);
    /* as try_once (): 408, 429 and 5xx again, any other 4xx is final */
    *retry = status >= 500 || status == 408 || status == 429 || status < 200;
    return g_strdup_printf ("HTTP %u %s: %s", status, reason ? reason : "", msg);
  }
}

typedef struct {
  gboolean warn, recovered;
  gchar *url, *problem;
  guint failures;
  gint64 delay;
  double seconds, outage;
} FleetNote;

static void
post_note (GstWhisperRemote *r, FleetNote *note)
{
  if (note->warn)
    GST_ELEMENT_WARNING_WITH_DETAILS (r->element, RESOURCE, READ,
        ("Transcription server %s failed (%s); its %.1f s of audio goes to %s, the "
            "server is tried again in %.1f s", note->url, note->problem, note->seconds,
            r->n_servers > 1 ? "another server" : "it again", note->delay / 1e6),
        ("server-url: attempt %u in a row on this server; nothing is lost: the audio waits "
            "until a server answers", note->failures),
        ("reason", G_TYPE_STRING, "server-unavailable", "url", G_TYPE_STRING, note->url,
            "error", G_TYPE_STRING, note->problem, "failures", G_TYPE_UINT, note->failures,
            "retry-in", G_TYPE_UINT64, (guint64) note->delay * 1000, NULL));
  if (note->recovered)
    GST_ELEMENT_INFO_WITH_DETAILS (r->element, RESOURCE, READ,
        ("Transcription server %s answers again after %u failed requests (%.1f s)",
            note->url, note->failures, note->outage), (NULL),
        ("reason", G_TYPE_STRING, "server-recovered", "url", G_TYPE_STRING, note->url,
            "failures", G_TYPE_UINT, note->failures, NULL));
  g_free (note->url);
  g_free (note->problem);
}

static gboolean
fleet_on_timeout (gpointer data)
{
  GstWhisperRemoteJob *job = data;

  job->timed_out = TRUE;
  g_cancellable_cancel (job->cancellable);
  return G_SOURCE_REMOVE;
}

static void
fleet_on_read (GObject *source, GAsyncResult *res, gpointer data)
{
  GstWhisperRemoteJob *job = data;
  GstWhisperRemote *r = job->remote;
  Server *srv = job->server;
  GError *error = NULL;
  GBytes *body = soup_session_send_and_read_finish (SOUP_SESSION (source), res, &error);
  guint status = soup_message_get_status (job->msg);
  gboolean retry = FALSE, dropped;
  gchar *problem = NULL;
  FleetNote note = { 0, };

  if (job->timer) {
    g_source_destroy (job->timer);
    g_clear_pointer (&job->timer, g_source_unref);
  }
  g_mutex_lock (&r->lock);
  dropped = job->dropped;
  g_mutex_unlock (&r->lock);
  /* the task gave it up (flushing): no verdict on the server */
  if (!dropped)
    problem = judge_answer (r, job, error, status,
        soup_message_get_reason_phrase (job->msg), body, &retry);
  if (problem && is_certificate_error (error, job->tls_errors))
    retry = FALSE;              /* the same certificate again: an error */
  g_clear_object (&job->msg);
  if (dropped) {
  } else if (problem == NULL) {
    if (srv->failures > 0) {
      note.recovered = TRUE;
      note.url = g_strdup (srv->shown_url);
      note.failures = srv->failures;
      note.outage = (g_get_monotonic_time () - srv->down_since) / 1e6;
    }
    srv->failures = 0;
  } else if (retry) {
    /* the server is left out for a back-off; the audio goes first to
     * whichever server has room */
    if (srv->failures == 0)
      srv->down_since = g_get_monotonic_time ();
    srv->failures++;
    note.delay = backoff_us (srv->failures);
    srv->retry_at = g_get_monotonic_time () + note.delay;
    note.warn = TRUE;
    note.url = g_strdup (srv->shown_url);
    note.problem = g_strdup (problem);
    note.failures = srv->failures;
    note.seconds = job->n / (double) WHISPER_SAMPLE_RATE;
  }
  /* posted before the task can see the answer, so that the messages come
   * before the text they are about (and before EOS) */
  if (note.warn || note.recovered)
    post_note (r, &note);

  g_mutex_lock (&r->lock);
  job->sending = FALSE;
  job->server = NULL;
  srv->in_flight--;
  r->in_flight--;
  dropped = job->dropped;
  if (dropped) {
  } else if (problem && is_certificate_error (error, job->tls_errors)) {
    set_tls_error (&job->error, srv->shown_url, job->tls_errors, error);
    job->done = TRUE;
  } else if (problem == NULL) {
    job->body = g_steal_pointer (&body);
    job->done = TRUE;
  } else if (retry) {
    job->attempts++;
    g_clear_object (&job->cancellable);
    queue_job_locked (r, job);
  } else {
    g_set_error (&job->error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
        "Transcription server %s refused the request: %s", srv->shown_url, problem);
    job->done = TRUE;
  }
  g_cond_broadcast (&r->cond);
  g_mutex_unlock (&r->lock);
  if (dropped)
    job_free (job);
  g_free (problem);
  g_clear_pointer (&body, g_bytes_unref);
  g_clear_error (&error);
  fleet_dispatch (r);
}

/* The server the next request goes to: the one with the fewest requests in
 * flight, a server that failed only when its back-off is over and it has
 * none in flight (one request finds out whether it is back); NULL when none
 * has room (*wake_at: when one may have). Lock held. */
static Server *
pick_server (GstWhisperRemote *r, gint64 now, gint64 *wake_at)
{
  Server *best = NULL;
  guint i, best_i = 0;

  *wake_at = G_MAXINT64;
  for (i = 0; i < r->n_servers; i++) {
    guint k = (r->next_server + i) % r->n_servers;
    Server *srv = &r->servers[k];
    if (srv->failures > 0) {
      if (now < srv->retry_at) {
        *wake_at = MIN (*wake_at, srv->retry_at);
        continue;
      }
      if (srv->in_flight > 0)
        continue;
    }
    if (best == NULL || srv->in_flight < best->in_flight) {
      best = srv;
      best_i = k;
    }
  }
  if (best)
    r->next_server = (best_i + 1) % r->n_servers;
  return best;
}

static gboolean
fleet_wake (gpointer data)
{
  GstWhisperRemote *r = data;

  g_clear_pointer (&r->wake, g_source_unref);
  fleet_dispatch (r);
  return G_SOURCE_REMOVE;
}

/* Client thread: sends waiting jobs while there is room. */
static gboolean
fleet_dispatch (gpointer data)
{
  GstWhisperRemote *r = data;
  gint64 wake_at = G_MAXINT64;

  g_mutex_lock (&r->lock);
  while (r->in_flight < r->max_requests && !g_queue_is_empty (&r->waiting)) {
    gint64 now = g_get_monotonic_time ();
    Server *srv = pick_server (r, now, &wake_at);
    GstWhisperRemoteJob *job;
    if (srv == NULL)
      break;
    job = g_queue_pop_head (&r->waiting);
    job->queued = FALSE;
    job->msg = make_message (r, srv->url, job->wav, &job->req, NULL);
    if (job->msg == NULL) {
      g_set_error (&job->error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
          "server-url %s: cannot make a request to it", srv->shown_url);
      job->done = TRUE;
      g_cond_broadcast (&r->cond);
      continue;
    }
    job->server = srv;
    job->sending = TRUE;
    job->timed_out = FALSE;
    job->tls_errors = 0;
    g_signal_connect (job->msg, "accept-certificate", G_CALLBACK (on_accept_certificate),
        &job->tls_errors);
    job->cancellable = g_cancellable_new ();
    srv->in_flight++;
    r->in_flight++;
    GST_DEBUG_OBJECT (r->element, "piece %" G_GUINT64_FORMAT " (%.2f s) to %s, %u in flight",
        job->seq, job->n / (double) WHISPER_SAMPLE_RATE, srv->shown_url, r->in_flight);
    job->timer = g_timeout_source_new (r->timeout_ms);
    g_source_set_callback (job->timer, fleet_on_timeout, job, NULL);
    g_source_attach (job->timer, r->context);
    soup_session_send_and_read_async (r->session, job->msg, G_PRIORITY_DEFAULT,
        job->cancellable, fleet_on_read, job);
  }
  if (!g_queue_is_empty (&r->waiting) && r->in_flight < r->max_requests
      && wake_at != G_MAXINT64 && r->wake == NULL) {
    gint64 wait_ms = MAX ((wake_at - g_get_monotonic_time ()) / 1000, 1);
    r->wake = g_timeout_source_new ((guint) MIN (wait_ms, (gint64) G_MAXUINT));
    g_source_set_callback (r->wake, fleet_wake, r, NULL);
    g_source_attach (r->wake, r->context);
  }
  g_mutex_unlock (&r->lock);
  return G_SOURCE_REMOVE;
}

gboolean
gst_whisper_remote_job_is_done (GstWhisperRemote *r, GstWhisperRemoteJob *job)
{
  gboolean done;

  g_mutex_lock (&r->lock);
  done = job->done;
  g_mutex_unlock (&r->lock);
  return done;
}

void
gst_whisper_remote_job_drop (GstWhisperRemote *r, GstWhisperRemoteJob *job)
{
  gboolean free_now = TRUE;

  if (job == NULL)
    return;
  g_mutex_lock (&r->lock);
  if (job->queued) {
    g_queue_remove (&r->waiting, job);
    job->queued = FALSE;
  } else if (job->sending) {
    job->dropped = TRUE;        /* fleet_on_read () frees it */
    g_cancellable_cancel (job->cancellable);
    free_now = FALSE;
  }
  g_mutex_unlock (&r->lock);
  if (free_now)
    job_free (job);
}

GstWhisperRemoteResult
gst_whisper_remote_finish (GstWhisperRemote *r, GstWhisperRemoteJob *job,
    WhisperSegmentFunc segment_func, GstWhisperRemoteWordFunc word_func,
    GstWhisperRemoteCancelledFunc cancelled, gpointer user_data, GError **error)
{
  GstWhisperRemoteResult res;
  GError *err = NULL;

  g_mutex_lock (&r->lock);
  while (!job->done) {
    g_cond_wait_until (&r->cond, &r->lock, g_get_monotonic_time () + POLL_US);
    if (!job->done && cancelled && cancelled (user_data)) {
      g_mutex_unlock (&r->lock);
      gst_whisper_remote_job_drop (r, job);
      return GST_WHISPER_REMOTE_CANCELLED;
    }
  }
  g_mutex_unlock (&r->lock);
  if (job->error) {
    g_propagate_error (error, g_steal_pointer (&job->error));
    res = GST_WHISPER_REMOTE_FAILED;
  } else if (deliver (r, job->body, job->n / (double) WHISPER_SAMPLE_RATE, &job->req,
          segment_func, word_func, user_data, &err)) {
    res = GST_WHISPER_REMOTE_DONE;
  } else {
    /* judge_answer () read it as a transcription */
    g_propagate_prefixed_error (error, err, "Transcription server answer: ");
    res = GST_WHISPER_REMOTE_FAILED;
  }
  job_free (job);
  return res;
}
