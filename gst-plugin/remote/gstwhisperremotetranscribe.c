/* gstwhisperremotetranscribe.c: the remote engine's one-at-a-time path
 * (see gstwhisperremote.h): one request at a time to the first server of
 * server-url, with back-off and jitter after a failure, and the prompt
 * made of the committed text of the answers. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "remote/gstwhisperremote-private.h"
#include "io/gstwhisperdebug.h"

#include <string.h>

#define GST_CAT_DEFAULT gst_whisper_sink_debug

/* The prompt: the last this many bytes of committed text (Whisper keeps
 * 223 tokens of it, about 900 bytes of English). */
#define PROMPT_MAX_BYTES 900

/* A 2xx answer to the callbacks: an event stream (`stream`, fed as it
 * arrived) or a JSON body. */
static gboolean
take_answer (GstWhisperRemote *r, Request *q, GstWhisperRemoteStream *stream, double seconds,
    const GstWhisperRemoteRequest *req, WhisperSegmentFunc segment_func,
    GstWhisperRemoteWordFunc word_func, gpointer user_data, GError **error)
{
  const gchar *text;

  if (!q->event_stream)
    return gst_whisper_remote_deliver (r, q->body, seconds, req, segment_func, word_func,
        user_data, error);
  text = gst_whisper_remote_stream_finish (stream, error);
  if (text == NULL)
    return FALSE;
  GST_DEBUG_OBJECT (r->element, "streamed answer: %u deltas",
      gst_whisper_remote_stream_deltas (stream));
  gst_whisper_remote_deliver_text (r, text, seconds, segment_func, user_data);
  return TRUE;
}

/* One try. *retry: a failure worth trying again. */
static GstWhisperRemoteResult
try_once (GstWhisperRemote *r, const float *pcm, gsize n, const GstWhisperRemoteRequest *req,
    WhisperSegmentFunc segment_func, GstWhisperRemoteWordFunc word_func,
    GstWhisperRemoteCancelledFunc cancelled, gpointer user_data, GError **error)
{
  Request q = { 0, };
  GstWhisperRemoteStream *stream = NULL;
  GstWhisperRemoteResult result = GST_WHISPER_REMOTE_LATER;
  double seconds = n / (double) WHISPER_SAMPLE_RATE;
  gint64 t0 = g_get_monotonic_time ();
  GError *err = NULL;

  {
    g_autoptr (GBytes) wav = gst_whisper_remote_make_wav (pcm, n);
    q.msg = gst_whisper_remote_make_message (r, r->url, wav, req,
        req->condition ? r->prompt->str : NULL);
  }
  if (q.msg == NULL) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "server-url %s: cannot make a request to it", r->shown_url);
    return GST_WHISPER_REMOTE_FAILED;
  }
  GST_DEBUG_OBJECT (r->element, "POST %.2f s of audio to %s%s", seconds, r->shown_url,
      req->stream ? " (streamed answer)" : "");
  if (req->stream) {
    stream = gst_whisper_remote_stream_new (req->delta_func, user_data);
    q.data_func = gst_whisper_remote_stream_feed;
    q.data_user = stream;
  }
  if ((!gst_whisper_remote_run_request (r, &q, cancelled, user_data) && !q.timed_out)
      || (stream && gst_whisper_remote_stream_given_up (stream))) {
    gst_whisper_remote_request_clear (&q);
    gst_whisper_remote_stream_free (stream);
    return GST_WHISPER_REMOTE_CANCELLED;
  }

  if (q.stopped) {
    /* the event stream went wrong: read no further */
    take_answer (r, &q, stream, seconds, req, segment_func, word_func, user_data, &err);
    g_propagate_prefixed_error (error, err, "HTTP %u, but ", q.status);
  } else if (q.timed_out) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
        "no answer within server-timeout (%u ms)", r->timeout_ms);
  } else if (q.error && gst_whisper_remote_is_certificate_error (q.error, q.tls_errors)) {
    gst_whisper_remote_set_tls_error (error, r->shown_url, q.tls_errors, q.error);
    result = GST_WHISPER_REMOTE_FAILED;     /* the same certificate again */
  } else if (q.error) {
    g_set_error (error, q.error->domain, q.error->code, "%s", q.error->message);
  } else if (q.status >= 200 && q.status < 300) {
    if (take_answer (r, &q, stream, seconds, req, segment_func, word_func, user_data, &err)) {
      result = GST_WHISPER_REMOTE_DONE;
      GST_DEBUG_OBJECT (r->element, "answered in %.3f s",
          (g_get_monotonic_time () - t0) / 1e6);
    } else {
      g_propagate_prefixed_error (error, err, "HTTP %u, but ", q.status);
    }
  } else {
    g_autofree gchar *msg = gst_whisper_remote_server_message (q.body);
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
  gst_whisper_remote_request_clear (&q);
  gst_whisper_remote_stream_free (stream);
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

/* Keeps the prompt within PROMPT_MAX_BYTES: its end, from a word start
 * (and so from a character start). */
static void
trim_prompt (GString *prompt)
{
  const gchar *cut, *space;
  gsize drop;

  if (prompt->len <= PROMPT_MAX_BYTES)
    return;
  cut = prompt->str + prompt->len - PROMPT_MAX_BYTES;
  space = strchr (cut, ' ');
  drop = (space ? space : cut) - prompt->str;
  while (drop < prompt->len && (prompt->str[drop] & 0xC0) == 0x80)
    drop++;
  g_string_erase (prompt, 0, (gssize) drop);
}

void
gst_whisper_remote_commit_text (GstWhisperRemote *r, const gchar *text)
{
  g_string_append (r->prompt, text);
  trim_prompt (r->prompt);
}

void
gst_whisper_remote_reset (GstWhisperRemote *r)
{
  g_string_truncate (r->prompt, 0);
}
