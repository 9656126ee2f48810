/* gstwhisperremoteclient.c: the remote engine's HTTP client (see
 * gstwhisperremote.h): the SoupSession on its own thread, one request sent
 * there and waited for (its body read as it arrives when the task takes
 * an event stream), the server's TLS certificate checks, server-url's
 * URLs and endpoints, the rule for the API key over plain http, and the
 * engine's setup and teardown. Calls no other file of remote/ but
 * gstwhisperremotehost.c. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "remote/gstwhisperremote-private.h"
#include "io/gstwhisperdebug.h"
#include "remote/gstwhisperremotehost.h"

#include <string.h>

#define GST_CAT_DEFAULT gst_whisper_sink_debug

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
  return G_SOURCE_REMOVE;       /* finish_request () drops the reference */
}

/* The request is over (client thread): its results for the task. */
static void
finish_request (Request *q, GBytes *body, GError *error)
{
  GstWhisperRemote *r = q->remote;

  if (q->timer) {
    g_source_destroy (q->timer);
    g_source_unref (q->timer);
    q->timer = NULL;
  }
  g_clear_object (&q->input);
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

static void
on_read (GObject *source, GAsyncResult *res, gpointer data)
{
  GError *error = NULL;
  GBytes *body = soup_session_send_and_read_finish (SOUP_SESSION (source), res, &error);

  finish_request (data, body, error);
}

static void read_more (Request *q);

/* A piece of a body read as it arrives: kept for the task, which is woken. */
static void
on_piece (GObject *source, GAsyncResult *res, gpointer data)
{
  Request *q = data;
  GstWhisperRemote *r = q->remote;
  GError *error = NULL;
  GBytes *piece = g_input_stream_read_bytes_finish (G_INPUT_STREAM (source), res, &error);

  if (piece == NULL) {
    finish_request (q, NULL, error);
    return;
  }
  if (g_bytes_get_size (piece) == 0) {
    g_bytes_unref (piece);
    finish_request (q, g_bytes_new (q->arrived->data, q->arrived->len), NULL);
    return;
  }
  g_mutex_lock (&r->lock);
  g_byte_array_append (q->arrived, g_bytes_get_data (piece, NULL), g_bytes_get_size (piece));
  g_cond_broadcast (&r->cond);
  g_mutex_unlock (&r->lock);
  g_bytes_unref (piece);
  read_more (q);
}

static void
read_more (Request *q)
{
  g_input_stream_read_bytes_async (q->input, 16384, G_PRIORITY_DEFAULT, q->cancellable,
      on_piece, q);
}

/* The answer's headers are in: its body is read piece by piece. */
static void
on_sent (GObject *source, GAsyncResult *res, gpointer data)
{
  Request *q = data;
  GstWhisperRemote *r = q->remote;
  GError *error = NULL;
  const gchar *type;
  guint status;

  q->input = soup_session_send_finish (SOUP_SESSION (source), res, &error);
  if (q->input == NULL) {
    finish_request (q, NULL, error);
    return;
  }
  status = soup_message_get_status (q->msg);
  type = soup_message_headers_get_content_type (soup_message_get_response_headers (q->msg),
      NULL);
  g_mutex_lock (&r->lock);
  q->event_stream = status >= 200 && status < 300 && type
      && g_ascii_strcasecmp (type, "text/event-stream") == 0;
  g_mutex_unlock (&r->lock);
  read_more (q);
}

/* A certificate that did not check out: refused, and why is kept for the
 * error (libsoup's own error says only that it was refused). */
gboolean
gst_whisper_remote_on_accept_certificate (G_GNUC_UNUSED SoupMessage *msg,
    G_GNUC_UNUSED GTlsCertificate *cert, GTlsCertificateFlags errors, gpointer data)
{
  *(GTlsCertificateFlags *) data = errors;
  return FALSE;
}

/* The error of a refused certificate, naming the server and the reason. */
void
gst_whisper_remote_set_tls_error (GError **error, const gchar *shown_url,
    GTlsCertificateFlags flags, const GError *cause)
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

gboolean
gst_whisper_remote_is_certificate_error (const GError *error, GTlsCertificateFlags flags)
{
  return flags != 0 || g_error_matches (error, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE);
}

static gboolean
start_request (gpointer data)
{
  Request *q = data;
  GstWhisperRemote *r = q->remote;

  g_signal_connect (q->msg, "accept-certificate",
      G_CALLBACK (gst_whisper_remote_on_accept_certificate), &q->tls_errors);
  q->timer = g_timeout_source_new (r->timeout_ms);
  g_source_set_callback (q->timer, on_timeout, q, NULL);
  g_source_attach (q->timer, r->context);
  if (q->data_func)
    soup_session_send_async (r->session, q->msg, G_PRIORITY_DEFAULT, q->cancellable, on_sent,
        q);
  else
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

/* Hands what arrived of an event stream since the last time to data_func
 * (lock held; dropped during the call). */
static void
hand_arrived (GstWhisperRemote *r, Request *q)
{
  while (q->data_func && q->event_stream && !q->stopped && q->arrived->len > q->handed) {
    gsize from = q->handed, len = q->arrived->len - from;
    guint8 *copy = g_memdup2 (q->arrived->data + from, len);
    q->handed += len;
    g_mutex_unlock (&r->lock);
    if (!q->data_func (copy, len, q->data_user)) {
      q->stopped = TRUE;
      g_cancellable_cancel (q->cancellable);
    }
    g_free (copy);
    g_mutex_lock (&r->lock);
  }
}

/* Sends the message and waits for the answer; FALSE when cancelled (the
 * request is then cancelled and waited for too). */
gboolean
gst_whisper_remote_run_request (GstWhisperRemote *r, Request *q,
    GstWhisperRemoteCancelledFunc cancelled, gpointer user_data)
{
  gboolean was_cancelled = FALSE;

  q->remote = r;
  q->cancellable = g_cancellable_new ();
  if (q->data_func)
    q->arrived = g_byte_array_new ();
  g_main_context_invoke (r->context, start_request, q);
  g_mutex_lock (&r->lock);
  while (!q->done) {
    g_cond_wait_until (&r->cond, &r->lock, g_get_monotonic_time () + POLL_US);
    if (!was_cancelled)
      hand_arrived (r, q);
    if (!q->done && !was_cancelled) {
      g_mutex_unlock (&r->lock);
      if (cancelled && cancelled (user_data)) {
        was_cancelled = TRUE;
        g_cancellable_cancel (q->cancellable);
      }
      g_mutex_lock (&r->lock);
    }
  }
  if (!was_cancelled && q->error == NULL)
    hand_arrived (r, q);
  g_mutex_unlock (&r->lock);
  return !was_cancelled;
}

void
gst_whisper_remote_request_clear (Request *q)
{
  g_clear_object (&q->cancellable);
  g_clear_pointer (&q->body, g_bytes_unref);
  g_clear_pointer (&q->arrived, g_byte_array_unref);
  g_clear_error (&q->error);
  g_free (q->reason);
}
