/* gstwhisperagree.h: the commit policy of live answers from a server
 * (device=remote, streamed with server-stream or not): LocalAgreement-2
 * over the answers' words.
 *
 * Live, each call sends the audio from the window's start, which stays put
 * while the answer is carried (gstwhisperwindow.h), so consecutive answers
 * read the same audio from the same start, the later one a chunk longer. A
 * word is committed once two consecutive answers from one window start
 * agree on it and on every word before it (compared without case and
 * punctuation), as gstwhispercommit.h does with timed words (Macháček,
 * Dabre and Bojar, https://arxiv.org/abs/2307.14743). The words of a
 * streamed answer are compared as they arrive (its last word may still
 * grow, so it waits for the next delta or the end), so an agreed word is
 * out before the answer ends; the words committed by the end of an answer
 * are the same either way. When the window moves on (the answer is not
 * carried: the carry limit, or a drain) every word of that answer not out
 * yet is committed, and the window moves to the end of the audio sent (a
 * streamed answer has no times to cut elsewhere; the window ends that call
 * at a quiet moment instead), so a word across the cut may still be read
 * twice, half each time.
 *
 * Times are estimates: a word's place in the text, in characters, at the
 * previous answer's characters per second of audio (GST_WHISPER_AGREE_CPS
 * before there is one), within the audio sent; the caller may time the
 * words better from an answer's segments (GstWhisperAgreedWord's offsets).
 *
 * Pure bookkeeping, no GStreamer. Inference task only. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Characters of English text per second of speech, before an answer says. */
#define GST_WHISPER_AGREE_CPS 15.0

typedef struct {
  GPtrArray *prev;          /* words (Whisper's spacing) of the last complete answer from
                               this window start */
  guint committed;          /* words from this window start that are out */
  guint64 start;            /* the window start (run index) they belong to */
  double cps;               /* the last answer's characters per second of audio */
} GstWhisperAgree;

/* A committed word: its text (without surrounding spaces), estimated
 * times, in seconds from the start of the audio sent, and where it is in
 * the answer it was committed from (bytes [from, to) of that text), so
 * that an answer with times can time it better. */
typedef struct {
  gchar *text;
  double start, end;
  gsize from, to;
} GstWhisperAgreedWord;

void gst_whisper_agree_init (GstWhisperAgree *a);
void gst_whisper_agree_clear (GstWhisperAgree *a);
/* A new run (new segment, flush): nothing from before counts. */
void gst_whisper_agree_reset (GstWhisperAgree *a);

/* A call from window start `start` (run index) begins: another start than
 * the last forgets the last answer's words. */
void gst_whisper_agree_begin (GstWhisperAgree *a, guint64 start);

/* The answer so far (`text`; `complete`: all of it) of `seconds` of audio:
 * appends the words committed now to `out` (a GArray of
 * GstWhisperAgreedWord that the caller clears) and returns how many. */
guint gst_whisper_agree_update (GstWhisperAgree *a, const gchar *text, gboolean complete,
    double seconds, GArray *out);

/* A complete answer that is not carried (the window moves on past it):
 * commits its words not out yet and appends its text to `gone` (the next
 * request's prompt). */
void gst_whisper_agree_finish (GstWhisperAgree *a, const gchar *text, double seconds,
    GArray *out, GString *gone);

/* A complete answer that is carried: the next answer is compared with it. */
void gst_whisper_agree_keep (GstWhisperAgree *a, const gchar *text, double seconds);

void gst_whisper_agreed_word_clear (gpointer word);

G_END_DECLS
