/* gstwhisperremote.h: whispersink's remote engine (device=remote). Audio
 * goes as a 16-kHz WAV in a multipart POST to an OpenAI-compatible
 * transcription endpoint (https://platform.openai.com/docs/api-reference/audio/createTranscription:
 * vLLM's /v1/audio/transcriptions, whisper.cpp's whisper-server, servers
 * built on faster-whisper) and the verbose_json answer comes back as the
 * same WhisperSegment structures the local engine hands over, plus words.
 *
 * HTTP is libsoup 3 (https://libsoup.org/libsoup-3.0/): one SoupSession
 * (keep-alive, TLS certificates verified, GIO's default proxy resolver)
 * owned by a private thread that runs its own GMainContext; the inference
 * task hands a request over and waits for it, checking every 50 ms whether
 * the element is flushing (then the request is cancelled). Nothing runs on
 * the streaming thread.
 *
 * Faults: gst_whisper_remote_transcribe() tries once, or, when `block`,
 * retries with exponential back-off and jitter until the server answers,
 * the answer is refused for good (4xx) or the element flushes. A time-out,
 * a refused or reset connection, a 5xx and an answer that is not the
 * expected JSON are retried; a 4xx is an error naming the server's message.
 * Each failure posts a warning (details reason=server-unavailable), the
 * first success after failures an info message (reason=server-recovered),
 * so that the application sees the whole outage. The API key is sent in the
 * Authorization header only: never logged, never posted. */
#pragma once

#include <gst/gst.h>
#include "io/gstwhisperwords.h"
#include "settings/gstwhisperremotesettings.h"
#include <whisper/whisper.h>

G_BEGIN_DECLS

/* A text delta of a streamed answer (server-stream), on the caller's
 * thread as it arrives: the answer's text so far (`text`, of which `delta`
 * is the end that just came); FALSE gives the call up. */
typedef gboolean (*GstWhisperRemoteDeltaFunc) (const gchar *text, const gchar *delta,
    gpointer user_data);

/* Decoding asked of the server for one call. */
typedef struct {
  const gchar *language;    /* ISO 639-1, or NULL */
  gboolean condition;       /* send the previous committed text as `prompt` */
  gdouble temperature;
  gboolean words;           /* also ask for word timestamps */
  /* Ask for the answer as server-sent events (stream=true, as vLLM's
   * /v1/audio/transcriptions streams: `data:` chunks of object
   * "transcription.chunk" whose choices[0].delta.content are text deltas,
   * then `data: [DONE]`). Such an answer has text only: it becomes one
   * segment over the audio sent, with no words. `delta_func` sees each
   * delta (NULL: none). An answer that is not an event stream is read as
   * without it (a server that ignores stream=true). One-at-a-time calls
   * only (gst_whisper_remote_transcribe). */
  gboolean stream;
  GstWhisperRemoteDeltaFunc delta_func;
} GstWhisperRemoteRequest;

typedef struct _GstWhisperRemote GstWhisperRemote;

/* One word of the server's answer (times from the start of the audio sent);
 * the callee takes it. */
typedef gboolean (*GstWhisperRemoteWordFunc) (GstWhisperWord *word, gpointer user_data);
/* TRUE when the call should give up (the element is flushing). */
typedef gboolean (*GstWhisperRemoteCancelledFunc) (gpointer user_data);

typedef enum {
  GST_WHISPER_REMOTE_DONE,      /* answered: the segments went to the callbacks */
  GST_WHISPER_REMOTE_LATER,     /* the server is not answering; try again later */
  GST_WHISPER_REMOTE_FAILED,    /* refused for good (4xx) or a bad setting: *error set */
  GST_WHISPER_REMOTE_CANCELLED, /* the element is flushing */
} GstWhisperRemoteResult;

#define GST_WHISPER_REMOTE_WINDOW_SAMPLES (30 * WHISPER_SAMPLE_RATE)

/* Checks the settings (server-*) and starts the client's thread; posts warnings and
 * errors on `element`. No request is sent yet. */
GstWhisperRemote *gst_whisper_remote_new (GstElement *element,
    const GstWhisperRemoteSettings *settings, GError **error);
void gst_whisper_remote_free (GstWhisperRemote *remote);

/* The endpoint requests go to, without a password (for messages). */
const gchar *gst_whisper_remote_get_url (const GstWhisperRemote *remote);
/* Unsent audio kept while the server is down, in samples. */
gsize gst_whisper_remote_queue_samples (const GstWhisperRemote *remote);
/* Whether the last request failed and none succeeded since. */
gboolean gst_whisper_remote_is_down (const GstWhisperRemote *remote);

/* Sends `n` samples (16 kHz mono float) and hands the answer's segments to
 * `segment_func` (which takes them) and, with request->words, its words to
 * `word_func`, in order, each word before the segment it belongs to.
 * Without `block`, a failure (or a back-off that has not run out yet)
 * returns LATER at once; with it, the call retries until DONE, FAILED or
 * CANCELLED. */
GstWhisperRemoteResult gst_whisper_remote_transcribe (GstWhisperRemote *remote,
    const float *pcm, gsize n, const GstWhisperRemoteRequest *request, gboolean block,
    WhisperSegmentFunc segment_func, GstWhisperRemoteWordFunc word_func,
    GstWhisperRemoteCancelledFunc cancelled, gpointer user_data, GError **error);

/* The fleet (server-url's list, server-requests): file input in pieces
 * sent ahead. A job is one piece: submitted, it waits in the client's
 * queue until a server has room (the fewest requests in flight, at most
 * server-requests in all), and a failure that is worth another try puts it
 * back at the head of the queue (the order of submission) while its
 * server sits out a back-off, so that it goes to another server at once.
 * Every failure posts a warning naming the server (reason
 * server-unavailable), its first success after failures an info message
 * (server-recovered). Pieces carry no prompt. */
typedef struct _GstWhisperRemoteJob GstWhisperRemoteJob;

guint gst_whisper_remote_max_requests (const GstWhisperRemote *remote);
guint gst_whisper_remote_n_servers (const GstWhisperRemote *remote);
/* Copies the `n` samples and queues them; returns at once. */
GstWhisperRemoteJob *gst_whisper_remote_submit (GstWhisperRemote *remote, const float *pcm,
    gsize n, const GstWhisperRemoteRequest *request);
/* Whether the job's answer (or refusal) is in. */
gboolean gst_whisper_remote_job_is_done (GstWhisperRemote *remote, GstWhisperRemoteJob *job);
/* Waits for the job and hands its answer to the callbacks as
 * gst_whisper_remote_transcribe () does: DONE, FAILED (*error) or CANCELLED.
 * Frees the job. */
GstWhisperRemoteResult gst_whisper_remote_finish (GstWhisperRemote *remote,
    GstWhisperRemoteJob *job, WhisperSegmentFunc segment_func,
    GstWhisperRemoteWordFunc word_func, GstWhisperRemoteCancelledFunc cancelled,
    gpointer user_data, GError **error);
/* Gives a job up (flushing): cancels its request and frees it. */
void gst_whisper_remote_job_drop (GstWhisperRemote *remote, GstWhisperRemoteJob *job);

/* `text` is final and its audio will not be sent again (live: what
 * agreement committed when the window moved on): it becomes part of the
 * prompt of the next request. */
void gst_whisper_remote_commit_text (GstWhisperRemote *remote, const gchar *text);
/* Forgets the prompt (a new stream). */
void gst_whisper_remote_reset (GstWhisperRemote *remote);

G_END_DECLS
