/* gstwhisperremote-private.h: what the files of the remote engine share
 * (gstwhisperremoteclient.c, gstwhisperremoterequest.c,
 * gstwhisperremotetranscribe.c, gstwhisperremotefleet.c): the engine's
 * state and the functions that one file calls in another. They call one
 * way: transcribe and fleet -> stream, request and client; stream,
 * request and client call none of the others. Not for users of
 * gstwhisperremote.h. */
#pragma once

#include "remote/gstwhisperremote.h"

#include <libsoup/soup.h>

G_BEGIN_DECLS

/* Back-off after the k-th failure in a row: min (BASE * 2^(k-1), MAX),
 * times a random factor in [0.5, 1) so that clients that failed together
 * do not come back together. */
#define BACKOFF_BASE_MS 250
#define BACKOFF_MAX_MS 5000
/* How often a waiting task checks whether the element is flushing. */
#define POLL_US (50 * G_TIME_SPAN_MILLISECOND)
#define TIME_EPSILON 0.005

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
  guint failures;           /* in a row */
  gint64 retry_at;          /* monotonic time of the next try after a failure */
  gint64 down_since;
};

/* Bytes of a streamed answer, on the task's thread, as they arrive; FALSE
 * stops the request (the answer is no good). */
typedef gboolean (*RequestDataFunc) (const guint8 *data, gsize len, gpointer user_data);

/* One request, from the task to the client thread and back. */
typedef struct {
  GstWhisperRemote *remote;
  SoupMessage *msg;
  GCancellable *cancellable;
  GSource *timer;
  gboolean timed_out;
  GTlsCertificateFlags tls_errors;  /* why the server's certificate was refused */
  /* Set: the body is read as it arrives and, when it is an event stream
   * (text/event-stream), handed to data_func as it comes in. */
  RequestDataFunc data_func;
  gpointer data_user;
  GInputStream *input;      /* client thread: the body being read */
  gsize handed;             /* task: bytes of `arrived` given to data_func */
  gboolean stopped;         /* task: data_func said stop */
  /* Results (under remote->lock until done). */
  gboolean event_stream;    /* a 2xx answer of type text/event-stream */
  GByteArray *arrived;      /* data_func: the body so far */
  gboolean done;
  guint status;
  gchar *reason;
  GBytes *body;
  GError *error;
} Request;

/* gstwhisperremoteclient.c */

/* Sends the request's message on the client's thread and waits for the
 * answer (with q->data_func, handing an event stream's bytes to it as they
 * arrive); FALSE when cancelled (the request is then cancelled and waited
 * for too). */
gboolean gst_whisper_remote_run_request (GstWhisperRemote *r, Request *q,
    GstWhisperRemoteCancelledFunc cancelled, gpointer user_data);
void gst_whisper_remote_request_clear (Request *q);
/* A message's "accept-certificate" handler: refuses the certificate and
 * keeps why in *(GTlsCertificateFlags *) data. */
gboolean gst_whisper_remote_on_accept_certificate (SoupMessage *msg, GTlsCertificate *cert,
    GTlsCertificateFlags errors, gpointer data);
/* The error of a refused certificate, naming the server and the reason. */
void gst_whisper_remote_set_tls_error (GError **error, const gchar *shown_url,
    GTlsCertificateFlags flags, const GError *cause);
gboolean gst_whisper_remote_is_certificate_error (const GError *error,
    GTlsCertificateFlags flags);

/* gstwhisperremoterequest.c */

/* 16-bit PCM WAV, 16 kHz mono. */
GBytes *gst_whisper_remote_make_wav (const float *pcm, gsize n);
/* The multipart POST to `url`; NULL when `url` is no URL. */
SoupMessage *gst_whisper_remote_make_message (GstWhisperRemote *r, const gchar *url,
    GBytes *wav, const GstWhisperRemoteRequest *req, const gchar *prompt);
/* The server's own words about a refusal (at most a few hundred bytes). */
gchar *gst_whisper_remote_server_message (GBytes *body);
/* Hands the answer to the callbacks; FALSE (with *error) when it is not a
 * transcription. */
gboolean gst_whisper_remote_deliver (GstWhisperRemote *r, GBytes *body, double duration,
    const GstWhisperRemoteRequest *req, WhisperSegmentFunc segment_func,
    GstWhisperRemoteWordFunc word_func, gpointer user_data, GError **error);

/* A text-only answer: one segment over the `duration` seconds sent. */
void gst_whisper_remote_deliver_text (GstWhisperRemote *r, const gchar *text, double duration,
    WhisperSegmentFunc segment_func, gpointer user_data);

/* gstwhisperremotestream.c: a streamed answer (server-sent events in
 * vLLM's transcription stream format) read as it arrives. */
typedef struct _GstWhisperRemoteStream GstWhisperRemoteStream;

/* `delta_func` (may be NULL) sees each text delta. */
GstWhisperRemoteStream *gst_whisper_remote_stream_new (GstWhisperRemoteDeltaFunc delta_func,
    gpointer user_data);
void gst_whisper_remote_stream_free (GstWhisperRemoteStream *s);
/* A RequestDataFunc (user_data: the stream): FALSE when the bytes are not
 * a transcription stream or the delta function gave up. */
gboolean gst_whisper_remote_stream_feed (const guint8 *data, gsize len, gpointer stream);
/* After the last byte: the whole text (the stream keeps it), or NULL with
 * *error saying what was wrong (not an event stream, a malformed event,
 * the server's error, no `data: [DONE]`). */
const gchar *gst_whisper_remote_stream_finish (GstWhisperRemoteStream *s, GError **error);
/* Text deltas read so far. */
guint gst_whisper_remote_stream_deltas (const GstWhisperRemoteStream *s);
/* Whether the delta function gave the call up. */
gboolean gst_whisper_remote_stream_given_up (const GstWhisperRemoteStream *s);

G_END_DECLS
