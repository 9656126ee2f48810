/* gstwhisperwords.h: turns the engine's per-step token events into words as
 * soon as each is complete.
 *
 * A word is complete when the next token starts with a space, or is a
 * timestamp, EOT or another special token. Token events only carry the time
 * of the timestamp that opened their segment, so word times inside a segment
 * are estimated: word k of a segment starts at segment start + k * the
 * current seconds-per-word estimate (an average over the segments completed
 * so far, 0.35 s at first), never before the end of the previous word; a
 * word closed by the segment's closing timestamp ends there. When the engine
 * re-decodes a window (temperature fallback), words that were already given
 * out for that window are not given out again: only words beyond their count
 * are. Used by the src-pad task only. */
#pragma once

#include <glib.h>
#include <whisper/whisper.h>

G_BEGIN_DECLS

typedef struct {
  gchar *text;          /* the word, without surrounding spaces */
  double start, end;    /* seconds from the start of the audio given to the engine */
  double avg_logprob;   /* mean log probability of its tokens */
  int step;             /* decode step whose token completed it */
  double segment_start; /* opening timestamp of its segment, seconds */
} GstWhisperWord;

typedef struct {
  gint32 token_eot;
  GString *text;
  double logprob_sum;
  guint n_tokens;
  double seg_start;
  gboolean seg_has_text;
  guint seg_words;
  double last_end;
  double sec_per_word;
  double window_start;
  gboolean window_seen;
  guint attempt_words;
  guint emitted_words;
  double aligned_start;   /* word timestamps: the word's first token's aligned time, or < 0 */
} GstWhisperWords;

#define GST_WHISPER_WORDS_INITIAL_SEC_PER_WORD 0.35
/* word-timestamps: a word starts this long before the frame its first
 * token's decode step attends to most (WhisperTokenEvent.aligned_time). On
 * the parity clips (tests/reference/test-words) that frame is on average
 * 0.17 s (tiny.en) and 0.22 s (base) after the word's DTW start; shifted by
 * 0.16 s the distance to the DTW start goes from mean 239 ms / p95 500 ms to
 * 172 / 360 ms on base (the shift was read off tiny.en). */
#define GST_WHISPER_WORDS_ALIGNED_SHIFT 0.16

void gst_whisper_words_init (GstWhisperWords *w, gint32 token_eot);
void gst_whisper_words_clear (GstWhisperWords *w);
/* Call before each whisper_stream_transcribe(). */
void gst_whisper_words_begin_call (GstWhisperWords *w);
/* Feeds one token event; returns TRUE and fills `word` when it completes a
 * word that has to be given out. */
gboolean gst_whisper_words_feed (GstWhisperWords *w, const WhisperTokenEvent *event,
    GstWhisperWord *word);
void gst_whisper_word_clear (GstWhisperWord *word);

G_END_DECLS
