/* whisper-words.h: words of a window and their times (internal), as
 * faster-whisper computes them (add_word_timestamps(), find_alignment(),
 * merge_punctuations() and the hallucination_silence_threshold rule of
 * generate_segments() in faster_whisper/transcribe.py, split_to_word_tokens()
 * in faster_whisper/tokenizer.py, https://github.com/SYSTRAN/faster-whisper).
 *
 * whisper-word-split.c: tokens -> words, punctuation merging.
 * whisper-words.c: one window's alignment -> each segment's words. */
#pragma once

#include "whisper-alignment.h"

G_BEGIN_DECLS

#define WHISPER_DEFAULT_PREPEND_PUNCTUATIONS "\"'“¿([{-"
#define WHISPER_DEFAULT_APPEND_PUNCTUATIONS "\"'.。,，!！?？:：”)]}、"

typedef struct {
  GString *text;
  int tok_start;        /* index of its first token in the token list split */
  int n_tok;            /* 0 once merged into a neighbour */
  double start, end;    /* seconds from the window start */
  double probability;
} WhisperAlignWord;

void whisper_align_word_free (WhisperAlignWord *w);

/* TRUE for the languages split at unicode boundaries, not spaces
 * (zh, ja, th, lo, my, yue). */
gboolean whisper_words_split_on_unicode (const char *language);

/* split_to_word_tokens(): words of tokens[0..n) (WhisperAlignWord *, times
 * unset). */
GPtrArray *whisper_words_split (const WhisperTimingModel *tm, const gint32 *tokens, int n,
                                gboolean on_unicode);

/* merge_punctuations() in place. */
void whisper_words_merge_punctuations (GPtrArray *words, const char *prepended,
                                       const char *appended);

/* add_word_timestamps() for one window: segments (WhisperSegment *) are the
 * window's, in order; each gets its words, and its start/end as the words
 * set them. *last_speech_timestamp is read and updated. Caller holds the
 * compute lock; st holds the window's cross K/V. */
gboolean whisper_words_add (WhisperDecoderState *st, const WhisperTimingModel *tm,
                            GPtrArray *segments, const gint32 *sot_sequence, int n_sot,
                            const char *language, double time_offset, int segment_size,
                            const char *prepended, const char *appended,
                            double last_speech_timestamp, GError **error);

/* get_end(): the last word's end, else the last segment's end; FALSE when
 * there is no segment. */
gboolean whisper_words_get_end (GPtrArray *segments, double *end);

/* The hallucination_silence_threshold block of generate_segments(). Returns
 * TRUE when the whole window is to be dropped (*seek set: "continue");
 * otherwise it may truncate `segments` and set *seek. */
gboolean whisper_words_hallucination_skip (GPtrArray *segments, double threshold,
                                           double time_offset, double segment_duration,
                                           double window_end_time, double content_duration,
                                           gsize content_frames, gsize previous_seek,
                                           double last_speech_timestamp, gsize *seek);

/* One window's word timestamps in generate_segments()'s order
 * (faster_whisper/transcribe.py): whisper_words_add() on its segments, the
 * seek moved to the last word's end unless the window's tokens end with a
 * single timestamp, then the hallucination_silence_threshold rule
 * (threshold < 0: off), then *last_speech_timestamp. sampled: the window's
 * tokens; *seek: absolute frames (set where the reference sets it);
 * *skip_window: the reference drops the window's segments ("continue");
 * *n_keep: how many of them to keep (the rest are the caller's to free).
 * Takes the compute lock. */
gboolean whisper_words_window (WhisperDecoderState *st, const WhisperTimingModel *tm,
                               GPtrArray *window, const gint32 *sampled, int n_sampled,
                               const gint32 *sot_sequence, int n_sot, const char *language,
                               double time_offset, int segment_size, gsize previous_seek,
                               gsize content_frames, const char *prepended, const char *appended,
                               double hallucination_silence_threshold,
                               double *last_speech_timestamp, gsize *seek, gboolean *skip_window,
                               guint *n_keep, GError **error);

G_END_DECLS
