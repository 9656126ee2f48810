/* gstwhisperremotefleet.c: the remote engine's fleet (see
 * gstwhisperremote.h): jobs sent ahead, on any server of server-url, at
 * most server-requests in flight; a server that fails sits out a back-off
 * while its job goes to another. Requests go out on the client's thread,
 * through its session (gstwhisperremoteclient.c). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "remote/gstwhisperremote-private.h"
#include "io/gstwhisperdebug.h"

#include <json-glib/json-glib.h>

#define GST_CAT_DEFAULT gst_whisper_sink_debug

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
  job->wav = gst_whisper_remote_make_wav (pcm, n);
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

/* A server's back-off after its k-th failure in a row (see gstwhisperremote-private.h). */
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
    g_autofree gchar *msg = gst_whisper_remote_server_message (body);
    /* as try_once () (gstwhisperremotetranscribe.c): 408, 429 and 5xx
     * again, any other 4xx is final */
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
  if (problem && gst_whisper_remote_is_certificate_error (error, job->tls_errors))
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
  } else if (problem && gst_whisper_remote_is_certificate_error (error, job->tls_errors)) {
    gst_whisper_remote_set_tls_error (&job->error, srv->shown_url, job->tls_errors, error);
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
    job->msg = gst_whisper_remote_make_message (r, srv->url, job->wav, &job->req, NULL);
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
    g_signal_connect (job->msg, "accept-certificate",
        G_CALLBACK (gst_whisper_remote_on_accept_certificate), &job->tls_errors);
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
  } else if (gst_whisper_remote_deliver (r, job->body, job->n / (double) WHISPER_SAMPLE_RATE,
          &job->req, segment_func, word_func, user_data, &err)) {
    res = GST_WHISPER_REMOTE_DONE;
  } else {
    /* judge_answer () read it as a transcription */
    g_propagate_prefixed_error (error, err, "Transcription server answer: ");
    res = GST_WHISPER_REMOTE_FAILED;
  }
  job_free (job);
  return res;
}
