/* backend-cuda-logits.c: ops->logits_select on the device, the same
 * contract as whisper_logits_select() (engine/src/decode/whisper-logits.c): the rules
 * of a step become a static bitmask (built once per config by
 * ops->logits_prepare, kept on the device) plus a few suppressed ranges
 * computed here from the step's state; kernels/logits.cu applies them,
 * reduces and picks; only the choice (8 bytes) comes back. */
#include "backend-cuda-private.h"

#include <string.h>

/* The choice kernel writes a WcChoice where the caller wants a
 * WhisperLogitChoice: the same layout. */
G_STATIC_ASSERT (sizeof (WcChoice) == sizeof (WhisperLogitChoice));
G_STATIC_ASSERT (G_STRUCT_OFFSET (WcChoice, logprob) == G_STRUCT_OFFSET (WhisperLogitChoice, logprob));

typedef struct {
  uint32_t *mask;     /* device, n_vocab bits: SuppressTokens + <|notimestamps|> */
  /* what the mask was built from */
  int n_vocab, no_timestamps, n_suppress_ids;
  gboolean timestamps;
  int32_t *suppress_ids;
} WcLogitCache;

static void
cache_free (WcBackend *self, WcLogitCache *cache)
{
  if (!cache)
    return;
  wc_device_free (self, cache->mask);
  g_free (cache->suppress_ids);
  g_free (cache);
}

/* Whether the mask in `cache` is the one `c` asks for (the element sets the
 * same options before every transcription: no new mask then). */
static gboolean
cache_matches (const WcLogitCache *cache, const WhisperLogitConfig *c)
{
  return cache && cache->n_vocab == c->n_vocab && cache->no_timestamps == c->no_timestamps &&
         cache->timestamps == (c->timestamps != 0) && cache->n_suppress_ids == c->n_suppress_ids &&
         (c->n_suppress_ids == 0 ||
          memcmp (cache->suppress_ids, c->suppress_ids,
                  (size_t) c->n_suppress_ids * sizeof (int32_t)) == 0);
}

/* The config's device mask, from the fields that do not change from step
 * to step. */
static WcLogitCache *
cache_new (WcBackend *self, const WhisperLogitConfig *c)
{
  WcLogitCache *cache = g_new0 (WcLogitCache, 1);
  cache->n_vocab = c->n_vocab;
  cache->no_timestamps = c->no_timestamps;
  cache->timestamps = c->timestamps != 0;
  cache->n_suppress_ids = MAX (c->n_suppress_ids, 0);
  cache->suppress_ids = g_memdup2 (c->suppress_ids,
                                   (size_t) cache->n_suppress_ids * sizeof (int32_t));

  const size_t words = ((size_t) MAX (c->n_vocab, 1) + 31) / 32;
  g_autofree uint32_t *bits = g_new0 (uint32_t, words);
  for (int i = 0; i < c->n_suppress_ids; i++) {
    const int id = c->suppress_ids[i];
    if (id >= 0 && id < c->n_vocab)
      bits[id >> 5] |= 1u << (id & 31);
  }
  if (c->timestamps && c->no_timestamps >= 0 && c->no_timestamps < c->n_vocab)
    bits[c->no_timestamps >> 5] |= 1u << (c->no_timestamps & 31);

  /* pageable source: the copy has read `bits` when cudaMemcpyAsync returns */
  if (wc_fail (self, cudaMalloc ((void **) &cache->mask, words * sizeof (uint32_t)),
               "logits_prepare: cudaMalloc (suppress mask)") ||
      wc_fail (self,
               cudaMemcpyAsync (cache->mask, bits, words * sizeof (uint32_t),
                                cudaMemcpyHostToDevice, self->stream),
               "logits_prepare: suppress mask upload")) {
    cache_free (self, cache);
    return NULL;
  }
  return cache;
}

void
wc_cuda_logits_prepare (WhisperBackend *be, WhisperLogitConfig *config)
{
  WcBackend *self = (WcBackend *) be;
  wc_enter (self);
  if (wc_is_recording (self)) {
    /* the mask upload would run before the recorded step reads the old one */
    if (!self->record_refused)
      self->record_refused = g_strdup ("logits_prepare() inside graph_begin()/graph_end()");
  } else if (!cache_matches (config->backend_cache, config)) {
    cache_free (self, config->backend_cache);
    config->backend_cache = cache_new (self, config);
  }
  wc_leave (self);
}

static void
add_range (WcLogitsMaskArgs *a, int from, int to)
{
  from = MAX (from, 0);
  to = MIN (to, a->n_vocab);
  if (from >= to)
    return;
  g_assert (a->n_ranges < WC_LOGITS_MAX_RANGES);
  a->range[a->n_ranges][0] = from;
  a->range[a->n_ranges][1] = to;
  a->n_ranges++;
}

/* The per-step rules of whisper_logits_apply_filters(), as ranges. */
static void
step_ranges (WcLogitsMaskArgs *a, const WhisperLogitConfig *c, const WhisperLogitState *s)
{
  if (c->suppress_blank && s->n_sampled == 0) {
    add_range (a, c->blank, c->blank + 1);
    add_range (a, c->eot, c->eot + 1);
  }
  if (!c->timestamps)
    return;
  const int begin = c->timestamp_begin, n = c->n_vocab;
  if (s->last_is_timestamp) {
    if (s->penultimate_is_timestamp)
      add_range (a, begin, n);   /* after a pair: text or EOT */
    else
      add_range (a, 0, c->eot);  /* after a single one: timestamp or EOT */
  }
  if (s->last_timestamp >= 0) {
    const int limit = (s->last_is_timestamp && !s->penultimate_is_timestamp)
                          ? s->last_timestamp
                          : s->last_timestamp + 1;
    add_range (a, begin, limit);
  }
  if (s->n_sampled == 0) {
    add_range (a, 0, begin);
    if (c->max_initial_timestamp_index >= 0)
      add_range (a, begin + c->max_initial_timestamp_index + 1, n);
  }
}

void
wc_cuda_logits_select (WhisperBackend *be, float *logits, WhisperLogitConfig *config,
                       const WhisperLogitState *state, WhisperLogitChoice *choice)
{
  WcBackend *self = (WcBackend *) be;
  choice->token = 0;
  choice->logprob = NAN;
  wc_enter (self);
  const WcLogitCache *cache = config->backend_cache;
  if (!cache || cache->n_vocab != config->n_vocab) {
    if (!self->error)
      wc_fail_msg (self, "logits_select: the logit config of %d tokens was not prepared "
                         "(ops->logits_prepare after setting it up)",
                   config->n_vocab);
    goto out;
  }

  WcLogitsMaskArgs m;
  memset (&m, 0, sizeof m);
  m.logits = logits;
  m.mask = cache->mask;
  m.partial = self->logit_partial;
  m.n_vocab = config->n_vocab;
  m.ts_begin = config->timestamps ? config->timestamp_begin : config->n_vocab;
  step_ranges (&m, config, state);
  WcLaunch l;
  wc_logits_mask_plan (&l, &m);
  wc_submit_kernel (self, &l, &m, sizeof m);

  const gboolean recording = wc_is_recording (self);
  WcPinned out = self->choice;
  if (recording && !wc_staging_alloc (self, sizeof (WcChoice), &out))
    goto out;
  WcLogitsChooseArgs c;
  memset (&c, 0, sizeof c);
  c.partial = self->logit_partial;
  c.out = (WcChoice *) out.dev;
  c.n_partial = WC_LOGITS_BLOCKS;
  c.timestamp_rule = config->timestamps != 0;
  wc_logits_choose_plan (&l, &c);
  wc_submit_kernel (self, &l, &c, sizeof c);

  if (recording) {
    /* written when graph_end() returns */
    wc_copy_out (self, choice, out.host, sizeof (WcChoice));
  } else if (!wc_fail (self, cudaStreamSynchronize (self->stream), "logits_select")) {
    const WcChoice *r = (const WcChoice *) out.host;
    choice->token = r->token;
    choice->logprob = r->logprob;
  }
out:
  wc_leave (self);
}

void
wc_cuda_logits_release (WhisperBackend *be, WhisperLogitConfig *config)
{
  WcBackend *self = (WcBackend *) be;
  wc_enter (self);
  cache_free (self, config->backend_cache);
  config->backend_cache = NULL;
  wc_leave (self);
}
