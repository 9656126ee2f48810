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

/* Updates `state` after `token` was sampled. */
void whisper_logit_state_push (WhisperLogitState *state, const WhisperLogitConfig *config,
                               int32_t token);

G_END_DECLS
