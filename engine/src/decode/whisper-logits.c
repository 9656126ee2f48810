/* whisper-logits.c: logit filters and the greedy choice (see whisper-logits.h). */
#include "whisper-logits.h"
#include "cpu-kernels.h"

#include <math.h>
#include <string.h>

static void
suppress_range (float *logits, int from, int to)
{
  for (int i = MAX (from, 0); i < to; i++)
    logits[i] = -INFINITY;
}

/* log(sum(exp(x[from..to)))) - log(sum(exp(x[0..n)))) etc. are computed from
 * these two primitives in double precision. */
static double
log_sum_exp (const float *x, int from, int to, float max)
{
  if (max == -INFINITY)
    return -INFINITY;
  double sum = 0.0;
  for (int i = from; i < to; i++)
    sum += exp ((double) x[i] - max);
  return max + log (sum);
}

/* the first largest of x[from..to) and its index (cpu-kernels.h) */
static float
range_max (const float *x, int from, int to, int *arg)
{
  if (to <= from) {
    if (arg)
      *arg = from;
    return -INFINITY;
  }
  const float max = whisper_cpu_max (x + from, to - from, arg);
  if (arg)
    *arg += from;
  return max;
}

static void
apply_timestamp_rules (float *logits, const WhisperLogitConfig *c, const WhisperLogitState *s)
{
  const int begin = c->timestamp_begin;
  const int n = c->n_vocab;

  logits[c->no_timestamps] = -INFINITY;

  if (s->last_is_timestamp) {
    if (s->penultimate_is_timestamp)
      suppress_range (logits, begin, n);     /* after a pair: text or EOT */
    else
      suppress_range (logits, 0, c->eot);    /* after a single one: timestamp or EOT */
  }

  if (s->last_timestamp >= 0) {
    /* Timestamps never decrease; a segment cannot have zero length. */
    const int limit = (s->last_is_timestamp && !s->penultimate_is_timestamp)
                          ? s->last_timestamp
                          : s->last_timestamp + 1;
    suppress_range (logits, begin, MIN (limit, n));
  }

  if (s->n_sampled == 0) {
    suppress_range (logits, 0, begin);
    if (c->max_initial_timestamp_index >= 0)
      suppress_range (logits, begin + c->max_initial_timestamp_index + 1, n);
  }

  /* If the timestamps together are more likely than any single text token,
   * a timestamp must come. Compared in log-softmax space, where the common
   * normaliser cancels: logsumexp(ts) > max(text). */
  const float text_max = range_max (logits, 0, begin, NULL);
  const float max_all = MAX (text_max, range_max (logits, begin, n, NULL));
  const double ts_lse = log_sum_exp (logits, begin, n, max_all);
  if (ts_lse > (double) text_max)
    suppress_range (logits, 0, begin);
}

void
whisper_logits_apply_filters (float *logits, const WhisperLogitConfig *config,
                              const WhisperLogitState *state)
{
  if (config->suppress_blank && state->n_sampled == 0) {
    logits[config->blank] = -INFINITY;
    logits[config->eot] = -INFINITY;
  }
  for (int i = 0; i < config->n_suppress_ids; i++)
    logits[config->suppress_ids[i]] = -INFINITY;
  if (config->timestamps)
    apply_timestamp_rules (logits, config, state);
}

void
whisper_logits_select (float *logits, const WhisperLogitConfig *config,
                       const WhisperLogitState *state, WhisperLogitChoice *choice)
{
  whisper_logits_apply_filters (logits, config, state);
  int best;
  const float max = range_max (logits, 0, config->n_vocab, &best);
  /* over the whole vocabulary, once per step: the vector sum (its rounding
   * differs from a scalar loop's in the last bits of the logprob, which
   * feeds avg_logprob, not the choice) */
  const double lse = max == -INFINITY ? -INFINITY
                     : max + log (whisper_cpu_sum_exp (logits, config->n_vocab, max));
  choice->token = best;
  choice->logprob = (float) ((double) max - lse);
}

double
whisper_logits_softmax_at (const float *logits, int n_vocab, int id)
{
  const float max = range_max (logits, 0, n_vocab, NULL);
  const double lse = log_sum_exp (logits, 0, n_vocab, max);
  return exp ((double) logits[id] - lse);
}

void
whisper_logit_state_push (WhisperLogitState *state, const WhisperLogitConfig *config,
                          int32_t token)
{
  const gboolean is_ts = token >= config->timestamp_begin;
  state->penultimate_is_timestamp = state->n_sampled == 0 ? TRUE : state->last_is_timestamp;
  state->last_is_timestamp = is_ts;
  if (is_ts)
    state->last_timestamp = token;
  state->n_sampled++;
}

gboolean
whisper_logit_extras_are_plain (const WhisperLogitExtras *x)
{
  return x->repetition_penalty == 1.0f && x->no_repeat_ngram_size <= 0 && !x->after_prefix;
}

/* RepetitionPenalty: every token of the sequence, once, from its own
 * value: divided by the penalty where positive, multiplied where
 * negative. */
static void
penalize_repeats (float *logits, const int32_t *seq, int n, float penalty, int n_vocab)
{
  for (int i = 0; i < n; i++) {
    const int32_t id = seq[i];
    gboolean seen = FALSE;
    for (int j = 0; j < i && !seen; j++)
      seen = seq[j] == id;
    if (seen || id < 0 || id >= n_vocab)
      continue;
    const float v = logits[id];
    logits[id] = v < 0.0f ? v * penalty : v / penalty;
  }
}

/* NoRepeatNgram: where the sequence's last n-1 tokens occurred before,
 * the token that followed them then is banned now. */
static void
ban_repeated_ngrams (float *logits, const int32_t *seq, int len, int n, int n_vocab)
{
  if (len < n)
    return;
  const int32_t *tail = seq + len - (n - 1);
  for (int i = 0; i + n <= len; i++) {
    if (memcmp (seq + i, tail, (size_t) (n - 1) * sizeof (int32_t)) == 0) {
      const int32_t id = seq[i + n - 1];
      if (id >= 0 && id < n_vocab)
        logits[id] = -INFINITY;
    }
  }
}

void
whisper_logits_apply_all (float *logits, const WhisperLogitConfig *config,
                          const WhisperLogitState *state, const WhisperLogitExtras *extras,
                          const int32_t *sequence, int n_sequence)
{
  if (extras->repetition_penalty != 1.0f)
    penalize_repeats (logits, sequence, n_sequence, extras->repetition_penalty, config->n_vocab);
  if (extras->no_repeat_ngram_size > 0)
    ban_repeated_ngrams (logits, sequence, n_sequence, extras->no_repeat_ngram_size,
                         config->n_vocab);
  if (extras->after_prefix && state->n_sampled == 0) {
    if (config->suppress_blank) {
      logits[config->blank] = -INFINITY;
      logits[config->eot] = -INFINITY;
    }
    for (int i = 0; i < config->n_suppress_ids; i++)
      logits[config->suppress_ids[i]] = -INFINITY;
    if (config->timestamps)
      logits[config->no_timestamps] = -INFINITY;
    return;
  }
  whisper_logits_apply_filters (logits, config, state);
}

void
whisper_logits_log_softmax (float *logits, int n_vocab)
{
  const float max = range_max (logits, 0, n_vocab, NULL);
  if (max == -INFINITY)
    return;
  const double lse = max + log (whisper_cpu_sum_exp (logits, n_vocab, max));
  whisper_cpu_sub_in_double (logits, n_vocab, lse);
}
