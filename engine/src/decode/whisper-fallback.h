/* whisper-fallback.h: the temperature fallback of faster-whisper's
 * generate_with_fallback() (transcribe.py): when a window's decode at one
 * temperature is kept, and which of the attempts is kept when every
 * temperature of the list fails. */
#pragma once

#include "whisper.h"

G_BEGIN_DECLS

/* One decode of a window at one temperature. */
typedef struct {
  int n_tokens;             /* sampled tokens, EOT excluded */
  double sum_logprob;       /* sum of the sampled tokens' log probabilities (EOT included) */
  double avg_logprob;       /* sum_logprob / (n_tokens + 1) */
  double compression_ratio; /* of its text (whisper_compression_ratio()) */
  gboolean not_a_loop;      /* compression ratio within compression_ratio_threshold */
} WhisperAttempt;

/* len(utf8) / len(zlib.compress(utf8)) of `text`, as the reference
 * computes it; 0 for "". */
double whisper_compression_ratio (const char *text);

/* Scores attempt `a` (n_tokens and sum_logprob set; `text` its stripped
 * text) and tells whether the window is to be decoded again at the next
 * temperature: its text is a loop, or it is unlikely (average log
 * probability below logprob_threshold) while the window is not likely
 * silent (the no-speech rule then decides). */
gboolean whisper_fallback_needed (WhisperAttempt *a, const char *text, double no_speech_prob,
                                  const WhisperDecodeOptions *options);

/* When every temperature failed: the index of the most likely of the n
 * attempts that are not loops (of all of them where every one is). */
int whisper_fallback_choose (const WhisperAttempt *attempts, int n);

G_END_DECLS
