/* gstwhispercontext.h: the left context of whispersink's live decodes.
 *
 * Live, the buffer a call decodes starts where the text before it was
 * committed and released (gstwhisperlive.c). A decode that starts on the
 * first syllable of an utterance, with nothing before it, is the one that
 * goes wrong most: a small model misreads the first words until a second
 * or two more of audio arrives, and with a budget of a few seconds the
 * deadline often commits them before that.
 * The context is the audio of the last few seconds of committed speech,
 * kept as it leaves the buffer; a call's input is that audio followed by
 * the buffer from its first speech (less a pad), so the model continues
 * speech it has heard instead of starting cold. The words the decode gives
 * for the context are dropped (their centre is before the splice); the
 * buffer's own words keep their times, as the buffer's part of the input
 * is its audio unchanged from the splice on.
 *
 * With the silence trim guarded (gst_whisper_live_speech_from) the context
 * gives fewer wrong words, and fewer still with live-min-probability and
 * committed speech released at once (tests/element/live-commit.sh --paced
 * measures it; docs/benchmarks.md, "Live context and minimum probability").
 * Keeping committed audio in the buffer itself instead (so the decode
 * sees it, and its text is dropped) lost words: the model ended its
 * segment after the kept audio's text and skipped what followed.
 *
 * Pure bookkeeping, no GStreamer and no model: times are run sample
 * indices (gstwhisperwindow.h); the speech regions come from the caller's
 * voice activity detector. Used by the inference task only. */
#pragma once

#include <glib.h>

#include <whisper/whisper.h>

G_BEGIN_DECLS

/* Context older than this (its newest sample before the end of the call's
 * audio) is not used: after a long pause the next utterance starts anew. */
#define GST_WHISPER_CONTEXT_MAX_AGE_S 30.0
/* The buffer's part of the input starts this long before its first
 * speech (the detector's own padding comes on top). */
#define GST_WHISPER_CONTEXT_SPLICE_PAD_S 0.2
/* Released audio joins the context up to this long after the end of the
 * last committed word (its last sound; what follows is another word's). */
#define GST_WHISPER_CONTEXT_AFTER_WORD_S 0.15

typedef struct {
  gint rate;
  GArray *audio;          /* float: committed speech released from the buffer,
                             oldest first, at most the last `max` seconds kept */
  guint64 through;        /* run index: released audio before it was looked at */
  guint64 newest_end;     /* run index of the end of the newest sample in audio */
  GArray *input;          /* float: the last call's input when it has context */
} GstWhisperContext;

/* What one live call decodes. `pcm` holds `n` samples, the first of which
 * the words' times count as run index `start`; from run index `splice` on
 * it is the buffer's audio unchanged (words centred before it are the
 * context's, and dropped). `window` is the buffer itself, from run index
 * `window_start`, `window_n` samples (what the call releases is counted
 * from window_start). Without context: pcm = window, start = splice =
 * window_start, n = window_n. */
typedef struct {
  const float *pcm;
  gsize n;
  guint64 start;
  guint64 splice;
  const float *window;
  guint64 window_start;
  gsize window_n;
} GstWhisperLiveInput;

void gst_whisper_context_init (GstWhisperContext *ctx, gint rate);
void gst_whisper_context_clear (GstWhisperContext *ctx);
/* A new run (new segment, GAP, flush): no context. */
void gst_whisper_context_reset (GstWhisperContext *ctx);

/* The buffer's audio [window_start, to) is released (`window` holds it
 * from window_start). The part of it not looked at before that is
 * committed speech (before committed_end + GST_WHISPER_CONTEXT_AFTER_WORD_S;
 * nothing when `any_committed` is FALSE) joins the context, and the
 * context keeps its last `max_s` seconds (max_s <= 0: it is emptied). */
void gst_whisper_context_keep (GstWhisperContext *ctx, const float *window,
    guint64 window_start, guint64 to, guint64 committed_end, gboolean any_committed,
    double max_s);

/* The input of a call on the buffer (`window`, n samples from run index
 * window_start) whose first speech to transcribe starts at run index
 * `speech_start` (G_MAXUINT64: none found). With context that is recent
 * enough and such speech: the context, then the buffer from that speech
 * less GST_WHISPER_CONTEXT_SPLICE_PAD_S (in->pcm points into ctx->input,
 * valid until the next call). Otherwise the buffer alone. The caller
 * (gstwhisperlive.c) passes the buffer's first speech, or, after a
 * finished sentence and a pause, the next sentence's first speech. */
void gst_whisper_context_input (GstWhisperContext *ctx, const float *window,
    guint64 window_start, gsize n, guint64 speech_start, GstWhisperLiveInput *in);

/* Where the buffer's first speech not committed yet starts: the first
 * region of `speech` (WhisperVadSpeech, in samples of the window; NULL or
 * empty: none found) that ends more than `margin` samples after
 * committed_end, from its start or committed_end, whichever is later;
 * G_MAXUINT64 when there is none. The live silence trim keeps the buffer
 * from this point less a pad (gstwhisperlive.c): cutting into speech the
 * model has not given words for yet lost them. */
guint64 gst_whisper_live_speech_from (const GArray *speech, guint64 window_start,
    guint64 committed_end, guint64 margin);

G_END_DECLS
