/* whisper-logits.h: logit filters and greedy choice of one decode step
 * (OpenAI's https://github.com/openai/whisper/blob/main/whisper/decoding.py): SuppressBlank, SuppressTokens, ApplyTimestampRules (with
 * the maximum initial timestamp), then log-softmax and argmax. */
#pragma once

#include "backend.h"

G_BEGIN_DECLS

/* Applies every rule of `config` to logits[n_vocab] in place (suppressed
 * entries become -INFINITY) and picks the greedy token. */
void whisper_logits_select (float *logits, const WhisperLogitConfig *config,
                            const WhisperLogitState *state, WhisperLogitChoice *choice);

/* Only the filters (no choice): logits[n_vocab] in place. */
void whisper_logits_apply_filters (float *logits, const WhisperLogitConfig *config,
                                   const WhisperLogitState *state);

/* softmax(logits)[id] over the raw logits (no-speech probability). */
double whisper_logits_softmax_at (const float *logits, int n_vocab, int id);

/* The host-only logit processors of CTranslate2's decoding loop
 * (https://github.com/OpenNMT/CTranslate2/blob/master/src/decoding_utils.cc
 * RepetitionPenalty, NoRepeatNgram; the timestamp rule of
 * https://github.com/OpenNMT/CTranslate2/blob/master/src/models/whisper.cc
 * after a forced prefix), applied before the filters above. */
typedef struct {
  float repetition_penalty;     /* 1: off; > 1 penalises tokens already in the sequence */
  int no_repeat_ngram_size;     /* 0: off; n: no n-gram of the sequence twice */
  gboolean after_prefix;        /* the window's tokens start with a forced prefix: its
                                   first sampled token gets no timestamp rule but the
                                   <|notimestamps|> ban (CTranslate2's sample_begin) */
} WhisperLogitExtras;

/* TRUE when `extras` change nothing (the greedy fast path may be used). */
gboolean whisper_logit_extras_are_plain (const WhisperLogitExtras *extras);

/* Every processor and filter of one step: repetition penalty and n-gram
 * ban over `sequence` (the window's tokens so far, forced prefix included),
 * then the filters of `config` and `state`. logits[n_vocab] in place. */
void whisper_logits_apply_all (float *logits, const WhisperLogitConfig *config,
                               const WhisperLogitState *state, const WhisperLogitExtras *extras,
                               const int32_t *sequence, int n_sequence);

/* In place: logits[i] - logsumexp(logits) (log-softmax), as the greedy
 * choice computes its log probability. */
void whisper_logits_log_softmax (float *logits, int n_vocab);

/* Updates `state` after `token` was sampled. */
void whisper_logit_state_push (WhisperLogitState *state, const WhisperLogitConfig *config,
                               int32_t token);

G_END_DECLS
