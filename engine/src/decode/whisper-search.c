/* whisper-search.c: beam search, sampling and host-side greedy decoding of
 * one window (see whisper-search.h). The rules are CTranslate2's
 * (https://github.com/OpenNMT/CTranslate2/blob/master/src/decoding.cc),
 * which faster-whisper drives through Whisper.generate():
 *
 * - Beam search: each step takes the 2 * beam best (sequence score + token
 *   log probability) candidates over every beam's filtered log-softmax. A
 *   candidate among the first `beam` that is EOT (or any, at the last step)
 *   ends a hypothesis with its score, and the next non-EOT candidate past
 *   the first `beam` takes its place. The search stops when
 *   round(beam * patience) hypotheses are done (with length_penalty 0:
 *   as soon as the best beam is done), or at the last step. A hypothesis
 *   scores sum / length^length_penalty; the best one wins. Only the first
 *   beam is expanded at the first step (the others would be copies).
 * - Sampling (temperature > 0): best_of independent sequences, each token
 *   drawn from softmax(log_softmax(filtered logits) / temperature); its
 *   score is its log probability at temperature 1. Greedy: the argmax.
 * - A forced prefix counts as steps with score 0 (hard prefix), and at the
 *   first free step an EOT candidate of a secondary beam is replaced by
 *   token 0 with score -1e10 (CTranslate2's update_sample_with_prefix).
 *
 * Scores are float32 sums, as CTranslate2 keeps them, so that beams
 * compare the way they do there. */
#include "whisper-search.h"

#include <math.h>
#include <string.h>

struct _WhisperSearchBuffers {
  int n_slots, max_tokens, n_vocab, max_hyp;
  float *logits;                 /* [n_slots, n_vocab] host copy of a step's logits */
  gint32 *seq, *seq_next;        /* [n_slots, max_tokens] tokens of each row */
  int *len, *len_next;
  WhisperLogitState *state, *state_next;
  float *cum, *cum_next;         /* sequence scores (sum of log probabilities) */
  int *slot, *slot_next;         /* row -> cache slot */
  gboolean *claimed;             /* [n_slots] */
  gint32 *feed;                  /* [n_slots] tokens fed to the next step */
  int *feed_slot;
  int *alive;                    /* sampling: rows still decoding */
  /* beam candidates, [2 * n_slots] */
  gint32 *cand_id;
  int *cand_row;
  float *cand_score;
  int *active;                   /* [n_slots] candidate index of each next beam */
  /* finished hypotheses */
  gint32 *hyp_tokens;            /* [max_hyp, max_tokens] */
  int *hyp_len;
  float *hyp_cum;
  int n_hyp;
};

WhisperSearchBuffers *
whisper_search_buffers_new (int n_slots, int max_tokens, int n_vocab, int max_hypotheses)
{
  WhisperSearchBuffers *b = g_new0 (WhisperSearchBuffers, 1);
  b->n_slots = n_slots;
  b->max_tokens = max_tokens;
  b->n_vocab = n_vocab;
  b->max_hyp = max_hypotheses;
  b->logits = g_new (float, (size_t) n_slots * n_vocab);
  b->seq = g_new (gint32, (size_t) n_slots * max_tokens);
  b->seq_next = g_new (gint32, (size_t) n_slots * max_tokens);
  b->len = g_new0 (int, n_slots);
  b->len_next = g_new0 (int, n_slots);
  b->state = g_new0 (WhisperLogitState, n_slots);
  b->state_next = g_new0 (WhisperLogitState, n_slots);
  b->cum = g_new0 (float, n_slots);
  b->cum_next = g_new0 (float, n_slots);
  b->slot = g_new0 (int, n_slots);
  b->slot_next = g_new0 (int, n_slots);
  b->claimed = g_new0 (gboolean, n_slots);
  b->feed = g_new0 (gint32, n_slots);
  b->feed_slot = g_new0 (int, n_slots);
  b->alive = g_new0 (int, n_slots);
  b->cand_id = g_new0 (gint32, 2 * n_slots);
  b->cand_row = g_new0 (int, 2 * n_slots);
  b->cand_score = g_new0 (float, 2 * n_slots);
  b->active = g_new0 (int, n_slots);
  b->hyp_tokens = g_new (gint32, (size_t) max_hypotheses * max_tokens);
  b->hyp_len = g_new0 (int, max_hypotheses);
  b->hyp_cum = g_new0 (float, max_hypotheses);
  return b;
}

void
whisper_search_buffers_free (WhisperSearchBuffers *b)
{
  if (!b)
    return;
  gpointer all[] = { b->logits, b->seq, b->seq_next, b->len, b->len_next, b->state,
                     b->state_next, b->cum, b->cum_next, b->slot, b->slot_next, b->claimed,
                     b->feed, b->feed_slot, b->alive, b->cand_id, b->cand_row, b->cand_score,
                     b->active, b->hyp_tokens, b->hyp_len, b->hyp_cum };
  for (gsize i = 0; i < G_N_ELEMENTS (all); i++)
    g_free (all[i]);
  g_free (b);
}

int
whisper_search_buffers_slots (const WhisperSearchBuffers *b)
{
  return b->n_slots;
}

static inline gint32 *
row_seq (gint32 *base, const WhisperSearchBuffers *b, int row)
{
  return base + (size_t) row * b->max_tokens;
}

static gboolean
cancelled (const WhisperSearch *s, GError **error)
{
  if (!g_atomic_int_get (s->cancelled))
    return FALSE;
  g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_CANCELLED,
               "transcription cancelled");
  return TRUE;
}

/* Filtered log-softmax of row r of b->logits, with the row's history. */
static float *
process_row (const WhisperSearch *s, WhisperSearchBuffers *b, int r)
{
  float *row = b->logits + (size_t) r * b->n_vocab;
  whisper_logits_apply_all (row, s->config, &b->state[r], &s->extras, row_seq (b->seq, b, r),
                            b->len[r]);
  whisper_logits_log_softmax (row, b->n_vocab);
  return row;
}

/* The logits of `n_rows` rows into b->logits: the prompt's at the first
 * step (every row the same), else one batched forward pass. */
static void
step_logits (const WhisperSearch *s, WhisperSearchBuffers *b, gboolean first, int n_rows, int pos)
{
  const size_t V = b->n_vocab;
  if (first) {
    for (int r = 0; r < n_rows; r++)
      memcpy (b->logits + r * V, s->first_logits, V * sizeof (float));
    return;
  }
  WhisperBackend *be = s->net->backend;
  s->step (s->step_data, b->feed, b->feed_slot, n_rows, pos);
  be->ops->download (be, b->logits, s->dec->logits, n_rows * V * sizeof (float));
  be->ops->sync (be);
  (*s->decode_steps)++;
}

static void
add_hypothesis (WhisperSearchBuffers *b, const gint32 *tokens, int n, float cum)
{
  if (b->n_hyp >= b->max_hyp)
    return;  /* sized so that this never happens (whisper_search_buffers_new) */
  memcpy (row_seq (b->hyp_tokens, b, b->n_hyp), tokens, (size_t) n * sizeof (gint32));
  b->hyp_len[b->n_hyp] = n;
  b->hyp_cum[b->n_hyp] = cum;
  b->n_hyp++;
}

/* The best hypothesis by sum / length^length_penalty. */
static void
pick_best (const WhisperSearch *s, WhisperSearchBuffers *b, WhisperSearchResult *result)
{
  int best = 0;
  float best_score = -INFINITY;
  for (int i = 0; i < b->n_hyp; i++) {
    const float score = b->hyp_cum[i] / powf ((float) b->hyp_len[i], (float) s->length_penalty);
    if (i == 0 || score > best_score) {
      best = i;
      best_score = score;
    }
  }
  result->tokens = row_seq (b->hyp_tokens, b, best);
  result->n_tokens = b->hyp_len[best];
  result->cum_logprob = b->hyp_cum[best];
}

static void
init_rows (const WhisperSearch *s, WhisperSearchBuffers *b, int n_rows)
{
  const WhisperLogitState fresh = { .n_sampled = 0, .last_is_timestamp = FALSE,
                                    .penultimate_is_timestamp = TRUE, .last_timestamp = -1 };
  for (int r = 0; r < n_rows; r++) {
    memcpy (row_seq (b->seq, b, r), s->forced, (size_t) s->n_forced * sizeof (gint32));
    b->len[r] = s->n_forced;
    b->state[r] = fresh;
    b->cum[r] = 0.0f;
    b->slot[r] = r;
  }
  b->n_hyp = 0;
}

/* ---- greedy and sampling --------------------------------------------- */

static gint32
draw_token (const WhisperSearch *s, const float *logprobs, int n_vocab)
{
  if (s->temperature <= 0.0) {
    gint32 best = 0;
    for (int i = 1; i < n_vocab; i++)
      if (logprobs[i] > logprobs[best])
        best = i;
    return best;
  }
  float max = -INFINITY;
  for (int i = 0; i < n_vocab; i++)
    max = MAX (max, logprobs[i]);
  const double inv_t = 1.0 / s->temperature;
  double sum = 0.0;
  for (int i = 0; i < n_vocab; i++)
    sum += exp (((double) logprobs[i] - max) * inv_t);
  const double u = g_rand_double (s->rand) * sum;
  double acc = 0.0;
  gint32 last_allowed = 0;
  for (int i = 0; i < n_vocab; i++) {
    if (logprobs[i] == -INFINITY)
      continue;
    last_allowed = i;
    acc += exp (((double) logprobs[i] - max) * inv_t);
    if (acc > u)
      return i;
  }
  return last_allowed;
}

static gboolean
search_sampling (const WhisperSearch *s, WhisperSearchBuffers *b, WhisperSearchResult *result,
                 GError **error)
{
  const int n = MAX (1, s->best_of), eot = s->config->eot;
  init_rows (s, b, n);
  int n_alive = n;
  for (int r = 0; r < n; r++)
    b->alive[r] = r;

  for (int step = s->n_forced; step < s->max_steps && n_alive > 0; step++) {
    const gboolean first = step == s->n_forced;
    const gboolean last = step + 1 == s->max_steps;
    if (!first) {
      for (int i = 0; i < n_alive; i++) {
        const int r = b->alive[i];
        b->feed[i] = row_seq (b->seq, b, r)[b->len[r] - 1];
        b->feed_slot[i] = b->slot[r];
      }
      /* the rows' logits come back in alive order: move them to their rows */
      step_logits (s, b, FALSE, n_alive, s->n_prompt + (step - s->n_forced) - 1);
      for (int i = n_alive - 1; i >= 0; i--)
        if (b->alive[i] != i)
          memcpy (b->logits + (size_t) b->alive[i] * b->n_vocab,
                  b->logits + (size_t) i * b->n_vocab, b->n_vocab * sizeof (float));
    } else {
      step_logits (s, b, TRUE, n, 0);
    }

    int kept = 0;
    for (int i = 0; i < n_alive; i++) {
      const int r = b->alive[i];
      const float *lp = process_row (s, b, r);
      const gint32 token = draw_token (s, lp, b->n_vocab);
      b->cum[r] += lp[token];
      gint32 *seq = row_seq (b->seq, b, r);
      if (token == eot) {
        add_hypothesis (b, seq, b->len[r], b->cum[r]);
        continue;
      }
      seq[b->len[r]++] = token;
      whisper_logit_state_push (&b->state[r], s->config, token);
      if (last) {
        add_hypothesis (b, seq, b->len[r], b->cum[r]);
        continue;
      }
      b->alive[kept++] = r;
    }
    n_alive = kept;
    if (first)
      for (int i = 0; i < n_alive; i++)
        whisper_decoder_copy_slot (s->dec, s->net, b->slot[b->alive[i]], 0, s->n_prompt);
    if (cancelled (s, error))
      return FALSE;
  }
  pick_best (s, b, result);
  return TRUE;
}

/* ---- beam search ----------------------------------------------------- */

/* Keeps the n_cand best (score, row, id) in descending order; ties keep the
 * earlier (row, id). */
static void
topk_insert (WhisperSearchBuffers *b, int n_cand, int *n_have, float score, int row, gint32 id)
{
  int pos = *n_have;
  if (pos == n_cand) {
    if (!(score > b->cand_score[n_cand - 1]))
      return;
    pos = n_cand - 1;
  } else {
    (*n_have)++;
  }
  while (pos > 0 && score > b->cand_score[pos - 1]) {
    b->cand_score[pos] = b->cand_score[pos - 1];
    b->cand_row[pos] = b->cand_row[pos - 1];
    b->cand_id[pos] = b->cand_id[pos - 1];
    pos--;
  }
  b->cand_score[pos] = score;
  b->cand_row[pos] = row;
  b->cand_id[pos] = id;
}

static gboolean
search_beam (const WhisperSearch *s, WhisperSearchBuffers *b, WhisperSearchResult *result,
             GError **error)
{
  const int B = s->beam_size, C = 2 * B, eot = s->config->eot, V = b->n_vocab;
  const int max_candidates = (int) lround (B * s->patience);
  const gboolean early_exit = s->length_penalty == 0.0;
  init_rows (s, b, B);
  int n_rows = 1;  /* the first step expands the first beam only */

  for (int step = s->n_forced; step < s->max_steps; step++) {
    const gboolean first = step == s->n_forced;
    const gboolean last = step + 1 == s->max_steps;
    const int n_valid = s->n_prompt + (step - s->n_forced);  /* cache rows of each beam */
    if (!first) {
      for (int r = 0; r < n_rows; r++) {
        b->feed[r] = row_seq (b->seq, b, r)[b->len[r] - 1];
        b->feed_slot[r] = b->slot[r];
      }
    }
    step_logits (s, b, first, n_rows, n_valid - 1);

    int n_have = 0;
    for (int r = 0; r < n_rows; r++) {
      const float *lp = process_row (s, b, r);
      for (int i = 0; i < V; i++)
        if (lp[i] != -INFINITY)
          topk_insert (b, C, &n_have, b->cum[r] + lp[i], r, i);
    }
    for (int k = n_have; k < C; k++) {  /* fewer allowed tokens than candidates */
      b->cand_score[k] = -INFINITY;
      b->cand_row[k] = 0;
      b->cand_id[k] = 0;
    }
    if (first && s->n_forced > 0)
      for (int k = 1; k < C; k++)
        if (b->cand_id[k] == eot) {
          b->cand_id[k] = 0;
          b->cand_score[k] = -1e10f;
        }

    gboolean top_finished = FALSE;
    int secondary = B;
    for (int k = 0; k < B; k++) {
      int next = k;
      const gint32 id = b->cand_id[k];
      if (id == eot || last) {
        top_finished |= k == 0;
        const int r = b->cand_row[k];
        gint32 *seq = row_seq (b->seq, b, r);
        if (id == eot) {
          add_hypothesis (b, seq, b->len[r], b->cand_score[k]);
        } else {
          /* the last step: the hypothesis keeps its last token */
          add_hypothesis (b, seq, b->len[r], b->cand_score[k]);
          gint32 *h = row_seq (b->hyp_tokens, b, b->n_hyp - 1);
          h[b->hyp_len[b->n_hyp - 1]++] = id;
        }
        for (int j = secondary; j < C; j++)
          if (b->cand_id[j] != eot) {
            next = j;
            secondary = j + 1;
            break;
          }
      }
      b->active[k] = next;
    }
    const gboolean finished = last || (early_exit ? top_finished && b->n_hyp >= 1
                                                  : b->n_hyp >= max_candidates);
    if (finished)
      break;

    /* The next beams: each continues its candidate's row. A row's cache
     * slot goes to the first beam that continues it; a beam that continues
     * a row already taken gets a slot no beam continues, with a copy of
     * that row's cache. */
    memset (b->claimed, 0, (size_t) b->n_slots * sizeof (gboolean));
    for (int k = 0; k < B; k++) {
      const int r = b->cand_row[b->active[k]];
      b->slot_next[k] = -1;
      if (r < n_rows && !b->claimed[b->slot[r]]) {
        b->slot_next[k] = b->slot[r];
        b->claimed[b->slot[r]] = TRUE;
      }
    }
    int free_slot = 0;
    for (int k = 0; k < B; k++) {
      if (b->slot_next[k] >= 0)
        continue;
      while (b->claimed[free_slot])
        free_slot++;
      b->claimed[free_slot] = TRUE;
      b->slot_next[k] = free_slot;
      whisper_decoder_copy_slot (s->dec, s->net, free_slot, b->slot[b->cand_row[b->active[k]]],
                                 n_valid);
    }
    for (int k = 0; k < B; k++) {
      const int c = b->active[k], r = b->cand_row[c];
      const gint32 id = b->cand_id[c];
      gint32 *dst = row_seq (b->seq_next, b, k);
      memcpy (dst, row_seq (b->seq, b, r), (size_t) b->len[r] * sizeof (gint32));
      dst[b->len[r]] = id;
      b->len_next[k] = b->len[r] + 1;
      b->state_next[k] = b->state[r];
      whisper_logit_state_push (&b->state_next[k], s->config, id);
      b->cum_next[k] = b->cand_score[c];
    }
    /* swap the generations */
    gint32 *ts = b->seq; b->seq = b->seq_next; b->seq_next = ts;
    int *tl = b->len; b->len = b->len_next; b->len_next = tl;
    WhisperLogitState *tst = b->state; b->state = b->state_next; b->state_next = tst;
    float *tc = b->cum; b->cum = b->cum_next; b->cum_next = tc;
    int *tsl = b->slot; b->slot = b->slot_next; b->slot_next = tsl;
    n_rows = B;
    if (cancelled (s, error))
      return FALSE;
  }
  pick_best (s, b, result);
  return TRUE;
}

gboolean
whisper_search_run (const WhisperSearch *s, WhisperSearchBuffers *b, WhisperSearchResult *result,
                    GError **error)
{
  if (s->beam_size > 1)
    return search_beam (s, b, result, error);
  return search_sampling (s, b, result, error);
}
