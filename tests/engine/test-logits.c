/* test-logits.c: the logit filters and timestamp rules on hand-made logit
 * vectors, one rule at a time (the rules of
 * https://github.com/openai/whisper/blob/main/whisper/decoding.py). */
#include "whisper-logits.h"

#include <math.h>

/* A toy vocabulary: text 0..9, eot 10, blank 3, no_timestamps 12,
 * timestamps 14..29 (<|0.00|> .. <|0.30|>). */
enum { N_VOCAB = 30, EOT = 10, NO_TS = 12, BEGIN = 14, BLANK = 3 };

static WhisperLogitConfig
toy_config (void)
{
  static const int32_t suppress[] = { 5, 11 };
  WhisperLogitConfig c = {
    .n_vocab = N_VOCAB, .eot = EOT, .no_timestamps = NO_TS, .timestamp_begin = BEGIN,
    .blank = BLANK, .suppress_blank = FALSE, .suppress_ids = suppress, .n_suppress_ids = 0,
    .timestamps = TRUE, .max_initial_timestamp_index = -1,
  };
  return c;
}

static WhisperLogitState
state_after (const WhisperLogitConfig *c, const int32_t *tokens, int n)
{
  WhisperLogitState s = { 0, FALSE, TRUE, -1 };
  for (int i = 0; i < n; i++)
    whisper_logit_state_push (&s, c, tokens[i]);
  return s;
}

static void
fill (float *logits, float value)
{
  for (int i = 0; i < N_VOCAB; i++)
    logits[i] = value;
}

static void
assert_suppressed (const float *logits, int from, int to)
{
  for (int i = from; i < to; i++)
    if (!isinf (logits[i]) || logits[i] > 0)
      g_error ("token %d should be suppressed, logit is %g", i, logits[i]);
}

static void
assert_allowed (const float *logits, int from, int to)
{
  for (int i = from; i < to; i++)
    if (isinf (logits[i]))
      g_error ("token %d should be allowed, it was suppressed", i);
}

static void
test_no_timestamps_always_suppressed (void)
{
  WhisperLogitConfig c = toy_config ();
  const int32_t seq[] = { BEGIN, 1, 2 };
  WhisperLogitState s = state_after (&c, seq, 3);
  float logits[N_VOCAB];
  fill (logits, 0.0f);
  logits[NO_TS] = 50.0f;
  whisper_logits_apply_filters (logits, &c, &s);
  assert_suppressed (logits, NO_TS, NO_TS + 1);
}

static void
test_first_step_forces_timestamp (void)
{
  WhisperLogitConfig c = toy_config ();
  c.max_initial_timestamp_index = 5;
  WhisperLogitState s = state_after (&c, NULL, 0);
  float logits[N_VOCAB];
  fill (logits, 0.0f);
  logits[2] = 30.0f; /* a very likely text token */
  whisper_logits_apply_filters (logits, &c, &s);
  assert_suppressed (logits, 0, BEGIN);
  /* the maximum initial timestamp is inclusive: BEGIN+5 allowed, BEGIN+6 not */
  assert_allowed (logits, BEGIN, BEGIN + 6);
  assert_suppressed (logits, BEGIN + 6, N_VOCAB);
}

static void
test_pair_of_timestamps_forbids_timestamps (void)
{
  WhisperLogitConfig c = toy_config ();
  const int32_t seq[] = { BEGIN, 1, BEGIN + 4, BEGIN + 4 };
  WhisperLogitState s = state_after (&c, seq, 4);
  g_assert_true (s.last_is_timestamp && s.penultimate_is_timestamp);
  float logits[N_VOCAB];
  fill (logits, 0.0f);
  whisper_logits_apply_filters (logits, &c, &s);
  assert_suppressed (logits, BEGIN, N_VOCAB);
  assert_allowed (logits, 0, NO_TS);
}

static void
test_single_timestamp_forbids_text (void)
{
  WhisperLogitConfig c = toy_config ();
  const int32_t seq[] = { BEGIN, 1, BEGIN + 4 };
  WhisperLogitState s = state_after (&c, seq, 3);
  g_assert_true (s.last_is_timestamp && !s.penultimate_is_timestamp);
  float logits[N_VOCAB];
  fill (logits, 0.0f);
  logits[EOT] = 5.0f; /* likelier than all timestamps together: EOT stays possible */
  whisper_logits_apply_filters (logits, &c, &s);
  assert_suppressed (logits, 0, EOT);          /* no text */
  assert_allowed (logits, EOT, EOT + 1);       /* EOT may end */
  /* the closing pair may repeat the same timestamp, not go below it */
  assert_suppressed (logits, BEGIN, BEGIN + 4);
  assert_allowed (logits, BEGIN + 4, N_VOCAB);
}

static void
test_one_token_counts_as_pair (void)
{
  /* With one sampled token the penultimate counts as a timestamp. */
  WhisperLogitConfig c = toy_config ();
  const int32_t seq[] = { BEGIN + 2 };
  WhisperLogitState s = state_after (&c, seq, 1);
  g_assert_true (s.penultimate_is_timestamp);
  float logits[N_VOCAB];
  fill (logits, 0.0f);
  whisper_logits_apply_filters (logits, &c, &s);
  assert_suppressed (logits, BEGIN, N_VOCAB);
}

static void
test_timestamps_never_decrease (void)
{
  WhisperLogitConfig c = toy_config ();
  const int32_t seq[] = { BEGIN + 3, 1, 2 };
  WhisperLogitState s = state_after (&c, seq, 3);
  float logits[N_VOCAB];
  fill (logits, 0.0f);
  whisper_logits_apply_filters (logits, &c, &s);
  /* after text, a timestamp must be strictly later than the last one */
  assert_suppressed (logits, BEGIN, BEGIN + 4);
  assert_allowed (logits, BEGIN + 4, N_VOCAB);
}

static void
test_timestamp_mass_beats_text (void)
{
  WhisperLogitConfig c = toy_config ();
  const int32_t seq[] = { BEGIN, 1 };
  WhisperLogitState s = state_after (&c, seq, 2);
  float logits[N_VOCAB];
  /* every timestamp a bit less likely than the best text token, but
   * together more likely: text must be forbidden */
  fill (logits, -20.0f);
  logits[2] = 1.0f;
  for (int i = BEGIN + 1; i < N_VOCAB; i++)
    logits[i] = 0.0f;
  WhisperLogitChoice choice;
  whisper_logits_select (logits, &c, &s, &choice);
  assert_suppressed (logits, 0, BEGIN);
  g_assert_cmpint (choice.token, ==, BEGIN + 1);

  /* one strong text token: the rule does not fire */
  fill (logits, -20.0f);
  logits[2] = 5.0f;
  for (int i = BEGIN + 1; i < N_VOCAB; i++)
    logits[i] = 0.0f;
  whisper_logits_select (logits, &c, &s, &choice);
  g_assert_cmpint (choice.token, ==, 2);
}

static void
test_suppress_blank_and_list (void)
{
  WhisperLogitConfig c = toy_config ();
  c.timestamps = FALSE;
  c.suppress_blank = TRUE;
  c.n_suppress_ids = 2;
  WhisperLogitState s = state_after (&c, NULL, 0);
  float logits[N_VOCAB];
  fill (logits, 0.0f);
  whisper_logits_apply_filters (logits, &c, &s);
  assert_suppressed (logits, BLANK, BLANK + 1);
  assert_suppressed (logits, EOT, EOT + 1);
  assert_suppressed (logits, 5, 6);
  assert_suppressed (logits, 11, 12);
  assert_allowed (logits, 0, BLANK);

  /* SuppressBlank only at the first sampled position */
  const int32_t seq[] = { 1 };
  s = state_after (&c, seq, 1);
  fill (logits, 0.0f);
  whisper_logits_apply_filters (logits, &c, &s);
  assert_allowed (logits, BLANK, BLANK + 1);
  assert_allowed (logits, EOT, EOT + 1);
}

static void
test_logprob_of_choice (void)
{
  WhisperLogitConfig c = toy_config ();
  c.timestamps = FALSE;
  WhisperLogitState s = state_after (&c, NULL, 0);
  float logits[N_VOCAB];
  double sum = 0.0;
  for (int i = 0; i < N_VOCAB; i++) {
    logits[i] = (float) (i % 7) * 0.5f;
    sum += exp (logits[i]);
  }
  WhisperLogitChoice choice;
  whisper_logits_select (logits, &c, &s, &choice);
  g_assert_cmpint (choice.token, ==, 6); /* first of the maxima (i % 7 == 6) */
  g_assert_cmpfloat_with_epsilon (choice.logprob, 3.0 - log (sum), 1e-6);
  g_assert_cmpfloat_with_epsilon (whisper_logits_softmax_at (logits, N_VOCAB, 6),
                                  exp (3.0) / sum, 1e-9);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/logits/no-timestamps-suppressed", test_no_timestamps_always_suppressed);
  g_test_add_func ("/logits/first-step-timestamp", test_first_step_forces_timestamp);
  g_test_add_func ("/logits/pair-forbids-timestamps", test_pair_of_timestamps_forbids_timestamps);
  g_test_add_func ("/logits/single-forbids-text", test_single_timestamp_forbids_text);
  g_test_add_func ("/logits/one-token-is-pair", test_one_token_counts_as_pair);
  g_test_add_func ("/logits/never-decrease", test_timestamps_never_decrease);
  g_test_add_func ("/logits/timestamp-mass", test_timestamp_mass_beats_text);
  g_test_add_func ("/logits/suppress-blank-and-list", test_suppress_blank_and_list);
  g_test_add_func ("/logits/logprob", test_logprob_of_choice);
  return g_test_run ();
}
