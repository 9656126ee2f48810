/* whisper-search.h: the search over one window's decode steps when it is
 * not plain greedy decoding: beam search, sampling (best of N) and greedy
 * decoding with the host-only logit processors, as CTranslate2's
 * BeamSearch and GreedySearch do them
 * (https://github.com/OpenNMT/CTranslate2/blob/master/src/decoding.cc),
 * every sequence of a step decoded as one batch of rows (the weights read
 * once for all of them, the cross-attention K/V shared). */
#pragma once

#include "whisper-net.h"
#include "whisper-logits.h"

G_BEGIN_DECLS

/* Host memory of a search, sized once for `n_slots` sequences (beams or
 * samples) of up to `max_tokens` tokens; a step allocates nothing. */
typedef struct _WhisperSearchBuffers WhisperSearchBuffers;

WhisperSearchBuffers *whisper_search_buffers_new (int n_slots, int max_tokens, int n_vocab,
                                                  int max_hypotheses);
void whisper_search_buffers_free (WhisperSearchBuffers *buffers);
int whisper_search_buffers_slots (const WhisperSearchBuffers *buffers);

typedef struct {
  WhisperNet *net;
  WhisperDecoderState *dec;            /* slot 0 holds the prompt's n_prompt positions */
  const WhisperLogitConfig *config;
  WhisperLogitExtras extras;
  const gint32 *forced;                /* forced prefix tokens (in the prompt already): the
                                          start of every sequence */
  int n_forced;
  int n_prompt;                        /* positions in slot 0's cache */
  const float *first_logits;           /* host [n_vocab]: logits after the prompt's last token */
  int max_steps;                       /* CTranslate2's max_length: steps, forced ones included */
  int beam_size;                       /* > 1: beam search */
  int best_of;                         /* sequences sampled (temperature > 0) */
  double patience, length_penalty, temperature;
  GRand *rand;                         /* temperature > 0 */
  gint *cancelled;                     /* checked between steps */
  guint64 *decode_steps;               /* incremented per forward pass */
  /* Runs the forward pass of one step: row r feeds tokens[r] at `pos` into
   * slot slots[r] of dec; the logits are left in dec->logits (the stream
   * batches it with other streams' steps: whisper-step-batcher.h). */
  void (*step) (gpointer step_data, const gint32 *tokens, const int *slots, int n_rows, int pos);
  gpointer step_data;
} WhisperSearch;

typedef struct {
  const gint32 *tokens;  /* the best sequence: forced prefix + sampled, EOT excluded;
                            valid until the buffers are used again */
  int n_tokens;
  double cum_logprob;    /* sum of the sampled tokens' log probabilities (EOT included) */
} WhisperSearchResult;

/* Runs the search (beam search when beam_size > 1, else greedy or
 * sampling). Caller holds the engine's compute lock. FALSE only when
 * cancelled (error set). */
gboolean whisper_search_run (const WhisperSearch *search, WhisperSearchBuffers *buffers,
                             WhisperSearchResult *result, GError **error);

G_END_DECLS
