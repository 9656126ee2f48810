/* whisper-engine.c: WhisperEngine: loads the model, resolves every per-model
 * constant once, uploads the weights once, sizes the encoder buffers. */
#include "whisper-engine-test-api.h"
#include "whisper-alignment.h"
#include "whisper-decoder-pool.h"
#include "whisper-step-batcher.h"
#include "whisper-engine-struct.h"
#include "whisper-tokenizer.h"

#include <string.h>


/* OpenAI's non_speech_tokens (https://github.com/openai/whisper/blob/main/whisper/tokenizer.py),
 * derived with the reference BPE from the two tokenizer families. tests/engine checks the EN list
 * against faster-whisper's own computation. */
static const gint32 non_speech_en[] = {
  1, 2, 7, 8, 9, 10, 14, 25, 26, 27, 28, 29, 31, 58, 59, 60, 61, 62, 63, 90, 91, 92, 93,
  357, 366, 438, 532, 685, 705, 796, 930, 1058, 1220, 1267, 1279, 1303, 1343, 1377, 1391,
  1635, 1782, 1875, 2162, 2361, 2488, 3467, 4008, 4211, 4600, 4808, 5299, 5855, 6329, 7203,
  9609, 9959, 10563, 10786, 11420, 11709, 11907, 13163, 13697, 13700, 14808, 15306, 16410,
  16791, 17992, 19203, 19510, 20724, 22305, 22935, 27007, 30109, 30420, 33409, 34949, 40283,
  40493, 40549, 47282, 49146,
};
static const gint32 non_speech_multilingual[] = {
  1, 2, 7, 8, 9, 10, 14, 25, 26, 27, 28, 29, 31, 58, 59, 60, 61, 62, 63, 90, 91, 92, 93,
  359, 503, 522, 542, 873, 893, 902, 918, 922, 931, 1350, 1853, 1982, 2460, 2627, 3246, 3253,
  3268, 3536, 3846, 3961, 4183, 4667, 6585, 6647, 7273, 9061, 9383, 10428, 10929, 11938,
  12033, 12331, 12562, 13793, 14157, 14635, 15265, 15618, 16553, 16604, 18362, 18956, 20075,
  21675, 22520, 26130, 26161, 26435, 28279, 29464, 31650, 32302, 32470, 36865, 42863, 47425,
  49870, 50254,
};

void
whisper_engine_options_init (WhisperEngineOptions *options)
{
  memset (options, 0, sizeof *options);
  options->device = WHISPER_DEVICE_AUTO;
}

char *
whisper_engine_default_model_path (void)
{
  return whisper_model_default_path ();
}

static int
compare_ids (gconstpointer a, gconstpointer b)
{
  const gint32 x = *(const gint32 *) a, y = *(const gint32 *) b;
  return (x > y) - (x < y);
}

/* Special token ids from the vocabulary size (the order of the special
 * tokens in https://github.com/openai/whisper/blob/main/whisper/tokenizer.py), checked
 * against the vocabulary's names where it has them. */
static gboolean
resolve_special_tokens (WhisperEngine *e, GError **error)
{
  WhisperEngineInfo *info = &e->info;
  const int n_vocab = info->n_vocab;
  const gboolean multilingual = n_vocab >= 51865;
  const int n_languages = n_vocab - 51765 - (multilingual ? 1 : 0);

  if (n_languages < 1 || n_vocab > 51866 + 100) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                 "%s: a vocabulary of %d tokens is not a Whisper vocabulary", e->model_path,
                 n_vocab);
    return FALSE;
  }
  info->is_multilingual = multilingual;
  info->token_eot = 50256 + (multilingual ? 1 : 0);
  info->token_sot = info->token_eot + 1;
  info->token_translate = info->token_sot + 1 + n_languages;
  info->token_transcribe = info->token_translate + 1;
  info->token_sot_lm = info->token_translate + 2;
  info->token_sot_prev = info->token_translate + 3;
  info->token_no_speech = info->token_translate + 4;
  info->token_no_timestamps = info->token_translate + 5;
  info->token_timestamp_begin = info->token_translate + 6;

  struct { int id; const char *names[2]; } expected[] = {
    { info->token_eot, { "<|endoftext|>", NULL } },
    { info->token_sot, { "<|startoftranscript|>", NULL } },
    { info->token_transcribe, { "<|transcribe|>", NULL } },
    { info->token_sot_prev, { "<|startofprev|>", NULL } },
    { info->token_no_speech, { "<|nospeech|>", "<|nocaptions|>" } },
    { info->token_no_timestamps, { "<|notimestamps|>", NULL } },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (expected); i++) {
    const int id = expected[i].id;
    if (id >= e->n_tokens || !e->tokens[id])
      continue;
    gsize size;
    const char *data = g_bytes_get_data (e->tokens[id], &size);
    gboolean match = FALSE;
    for (int k = 0; k < 2 && expected[i].names[k]; k++)
      match |= size == strlen (expected[i].names[k]) && memcmp (data, expected[i].names[k], size) == 0;
    if (!match) {
      g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                   "%s: token %d should be %s for a vocabulary of %d tokens, but it is '%.*s'",
                   e->model_path, id, expected[i].names[0], n_vocab, (int) MIN (size, 40), data);
      return FALSE;
    }
  }
  return TRUE;
}

static int
find_blank_token (const WhisperEngine *e)
{
  for (int id = 0; id < MIN (e->n_tokens, e->info.token_eot); id++) {
    gsize size;
    if (!e->tokens[id])
      continue;
    const char *data = g_bytes_get_data (e->tokens[id], &size);
    if (size == 1 && data[0] == ' ')
      return id;
  }
  return 220;
}

static gsize
longest_text_token (const WhisperEngine *e)
{
  gsize longest = 0;
  for (int id = 0; id < MIN (e->n_tokens, e->info.token_eot); id++)
    if (e->tokens[id])
      longest = MAX (longest, g_bytes_get_size (e->tokens[id]));
  return longest;
}

static void
build_logit_config (WhisperEngine *e)
{
  const WhisperEngineInfo *info = &e->info;
  const gint32 *list = info->is_multilingual ? non_speech_multilingual : non_speech_en;
  const int n_list = info->is_multilingual ? (int) G_N_ELEMENTS (non_speech_multilingual)
                                           : (int) G_N_ELEMENTS (non_speech_en);
  const gint32 specials[] = { info->token_transcribe, info->token_translate, info->token_sot,
                              info->token_sot_prev, info->token_sot_lm, info->token_no_speech };
  GArray *ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_array_append_vals (ids, list, n_list);
  g_array_append_vals (ids, specials, G_N_ELEMENTS (specials));
  g_array_sort (ids, compare_ids);
  /* unique, and within the vocabulary */
  guint out = 0;
  for (guint i = 0; i < ids->len; i++) {
    const gint32 id = g_array_index (ids, gint32, i);
    if (id < info->n_vocab && (out == 0 || g_array_index (ids, gint32, out - 1) != id))
      g_array_index (ids, gint32, out++) = id;
  }
  g_array_set_size (ids, out);
  e->n_suppress_ids = out;
  e->suppress_ids = (gint32 *) g_array_free (ids, FALSE);

  WhisperLogitConfig *c = &e->logit_config;
  c->n_vocab = info->n_vocab;
  c->eot = info->token_eot;
  c->no_timestamps = info->token_no_timestamps;
  c->timestamp_begin = info->token_timestamp_begin;
  c->blank = find_blank_token (e);
  c->suppress_blank = TRUE;
  c->suppress_ids = e->suppress_ids;
  c->n_suppress_ids = e->n_suppress_ids;
  c->timestamps = TRUE;
  c->max_initial_timestamp_index = 50;
}

/* The CPU backend in the precision asked; FAST: bfloat16 where oneDNN
 * has it for this CPU, else int8. */
static WhisperBackend *
create_cpu_backend (const WhisperEngineOptions *options, GError **error)
{
  switch (options->precision) {
  case WHISPER_PRECISION_INT8:
    return whisper_backend_cpu_new (options->n_threads, WHISPER_CPU_PRECISION_INT8, error);
  case WHISPER_PRECISION_BFLOAT16:
    return whisper_backend_cpu_new (options->n_threads, WHISPER_CPU_PRECISION_BF16, error);
  case WHISPER_PRECISION_FAST: {
    g_autoptr (GError) bf16_error = NULL;
    WhisperBackend *be =
        whisper_backend_cpu_new (options->n_threads, WHISPER_CPU_PRECISION_BF16, &bf16_error);
    if (be)
      return be;
    g_debug ("precision fast: int8, as bfloat16 is not available (%s)", bf16_error->message);
    return whisper_backend_cpu_new (options->n_threads, WHISPER_CPU_PRECISION_INT8, error);
  }
  case WHISPER_PRECISION_EXACT:
  default:
    return whisper_backend_cpu_new (options->n_threads, WHISPER_CPU_PRECISION_EXACT, error);
  }
}

static WhisperBackend *
create_backend (const WhisperEngineOptions *options, GError **error)
{
  switch (options->device) {
  case WHISPER_DEVICE_CPU:
    return create_cpu_backend (options, error);
  case WHISPER_DEVICE_CUDA: {
    g_autoptr (GError) cuda_error = NULL;
    WhisperBackend *be = whisper_backend_cuda_new (&cuda_error);
    if (!be)
      g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                   "device 'cuda' is not available: %s", cuda_error->message);
    return be;
  }
  case WHISPER_DEVICE_AUTO:
  default: {
    g_autoptr (GError) cuda_error = NULL;
    WhisperBackend *be = whisper_backend_cuda_new (&cuda_error);
    if (be)
      return be;
    g_debug ("device auto: using the CPU (%s)", cuda_error->message);
    return create_cpu_backend (options, error);
  }
  }
}

/* Reads every hyper-parameter once (each read is counted) and derives the
 * engine's constants from them. */
static gboolean
resolve_constants (WhisperEngine *e, const WhisperModel *model, int max_encoder_length,
                   GError **error)
{
  WhisperEngineInfo *info = &e->info;
  info->n_vocab = whisper_model_lookup (model, WHISPER_HPARAM_N_VOCAB);
  info->n_audio_ctx = whisper_model_lookup (model, WHISPER_HPARAM_N_AUDIO_CTX);
  info->n_audio_state = whisper_model_lookup (model, WHISPER_HPARAM_N_AUDIO_STATE);
  info->n_audio_head = whisper_model_lookup (model, WHISPER_HPARAM_N_AUDIO_HEAD);
  info->n_audio_layer = whisper_model_lookup (model, WHISPER_HPARAM_N_AUDIO_LAYER);
  info->n_text_ctx = whisper_model_lookup (model, WHISPER_HPARAM_N_TEXT_CTX);
  info->n_text_state = whisper_model_lookup (model, WHISPER_HPARAM_N_TEXT_STATE);
  info->n_text_head = whisper_model_lookup (model, WHISPER_HPARAM_N_TEXT_HEAD);
  info->n_text_layer = whisper_model_lookup (model, WHISPER_HPARAM_N_TEXT_LAYER);
  info->n_mels = whisper_model_lookup (model, WHISPER_HPARAM_N_MELS);

  if (max_encoder_length < 0 || max_encoder_length > info->n_audio_ctx) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "encoder context (max encoder length) %d is out of range: it must be 0 "
                 "(the model's %d) or 1..%d",
                 max_encoder_length, info->n_audio_ctx, info->n_audio_ctx);
    return FALSE;
  }
  info->max_encoder_length = max_encoder_length > 0 ? max_encoder_length : info->n_audio_ctx;
  info->window_samples = 2 * info->max_encoder_length * WHISPER_HOP_LENGTH;
  info->sample_len = info->n_text_ctx / 2;

  e->net.d = info->n_audio_state;
  e->net.n_mels = info->n_mels;
  e->net.max_encoder_length = info->max_encoder_length;
  e->net.n_text_ctx = info->n_text_ctx;
  e->net.n_vocab = info->n_vocab;
  e->net.n_audio_head = info->n_audio_head;
  e->net.n_text_head = info->n_text_head;
  e->net.n_audio_layer = info->n_audio_layer;
  e->net.n_text_layer = info->n_text_layer;
  return TRUE;
}

WhisperEngine *
whisper_engine_new (const WhisperEngineOptions *options, GError **error)
{
  WhisperEngineOptions defaults;
  if (!options) {
    whisper_engine_options_init (&defaults);
    options = &defaults;
  }
  if (options->n_threads < 0) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "thread count %d is negative (0 means every core)", options->n_threads);
    return NULL;
  }
  if ((unsigned) options->precision > WHISPER_PRECISION_BFLOAT16) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "precision %d is not one of exact (%d), fast (%d), int8 (%d), bfloat16 (%d)",
                 (int) options->precision, WHISPER_PRECISION_EXACT, WHISPER_PRECISION_FAST,
                 WHISPER_PRECISION_INT8, WHISPER_PRECISION_BFLOAT16);
    return NULL;
  }

  g_autoptr (WhisperEngine) e = g_new0 (WhisperEngine, 1);
  e->ref_count = 1;
  whisper_turn_lock_init (&e->net.compute_lock);
  whisper_turn_lock_init (&e->lease_turn);
  e->decoders = whisper_decoder_pool_new ();
  e->model_path = options->model_path ? g_strdup (options->model_path)
                                      : whisper_model_default_path ();
  e->info.model_path = e->model_path;

  g_autoptr (WhisperModel) model = whisper_model_load (e->model_path, error);
  if (!model)
    return NULL;
  if (!resolve_constants (e, model, options->max_encoder_length, error))
    return NULL;

  /* Take the vocabulary over from the model (the weights are uploaded and
   * the model freed below). */
  e->n_tokens = e->info.n_vocab;
  e->tokens = g_new0 (GBytes *, e->n_tokens);
  for (int i = 0; i < MIN (model->n_tokens, e->n_tokens); i++)
    e->tokens[i] = model->tokens[i] ? g_bytes_ref (model->tokens[i]) : NULL;
  /* word timestamps: the alignment heads (whisper-alignment.h) */
  if (!whisper_alignment_heads_resolve (&e->align_heads, model, &e->info,
                                        options->alignment_heads, error))
    return NULL;
  e->info.n_alignment_heads = e->align_heads.n;
  e->info.alignment_heads_source = e->align_heads.source;
  if (!resolve_special_tokens (e, error))
    return NULL;
  e->max_token_bytes = longest_text_token (e);
  e->bpe = whisper_bpe_new (e->tokens, e->n_tokens, e->info.token_eot);
  e->timing = (WhisperTimingModel) { .net = &e->net, .info = &e->info,
                                     .heads = &e->align_heads, .tokens = e->tokens,
                                     .n_tokens = e->n_tokens };
  build_logit_config (e);

  e->net.backend = create_backend (options, error);
  if (!e->net.backend)
    return NULL;
  e->device_name = g_strdup (e->net.backend->ops->name);
  e->info.device_name = e->device_name;

  WhisperNet *net = &e->net;
  net->weights = whisper_device_weights_new (net->backend, model, net->n_audio_layer,
                                             net->n_text_layer, net->d, net->n_mels,
                                             net->max_encoder_length, net->n_text_ctx,
                                             net->n_vocab, error);
  if (!e->net.weights)
    return NULL;
  if (!whisper_encoder_buffers_init (&e->net, error))
    return NULL;
  if (!whisper_decoder_work_init (&e->net, error))
    return NULL;
  e->steps = whisper_step_batcher_new (&e->net, error);
  if (!e->steps)
    return NULL;
  e->mel = whisper_mel_new (e->net.n_mels, e->net.backend->n_threads, error);
  if (!e->mel)
    return NULL;
  return g_steal_pointer (&e);
}

WhisperEngine *
whisper_engine_ref (WhisperEngine *engine)
{
  g_atomic_int_inc (&engine->ref_count);
  return engine;
}

void
whisper_engine_unref (WhisperEngine *e)
{
  if (!e || !g_atomic_int_dec_and_test (&e->ref_count))
    return;
  if (e->net.backend) {
    whisper_decoder_pool_free (e->decoders, &e->net);
    whisper_step_batcher_free (e->steps, &e->net);
    whisper_decoder_work_clear (&e->net);
    whisper_encoder_buffers_clear (&e->net);
    whisper_device_weights_free (e->net.weights);
    if (e->net.backend->ops->logits_release)
      e->net.backend->ops->logits_release (e->net.backend, &e->logit_config);
    whisper_backend_destroy (e->net.backend);
  }
  whisper_mel_free (e->mel);
  for (int i = 0; i < e->n_tokens; i++)
    if (e->tokens[i])
      g_bytes_unref (e->tokens[i]);
  g_free (e->tokens);
  whisper_bpe_free (e->bpe);
  g_free (e->suppress_ids);
  whisper_alignment_heads_clear (&e->align_heads);
  g_free (e->encoded_window);
  g_free (e->model_path);
  g_free (e->device_name);
  whisper_turn_lock_clear (&e->net.compute_lock);
  whisper_turn_lock_clear (&e->lease_turn);
  g_free (e);
}

const WhisperEngineInfo *
whisper_engine_get_info (const WhisperEngine *engine)
{
  return &engine->info;
}

char *
whisper_engine_decode_tokens (const WhisperEngine *e, const gint32 *ids, gsize n_ids)
{
  return whisper_tokens_to_text (e->tokens, e->n_tokens, e->info.token_eot, ids, n_ids);
}

gint32 *
whisper_engine_encode_text (const WhisperEngine *e, const char *text, gsize *n_ids,
                            GError **error)
{
  return whisper_bpe_encode (e->bpe, text ? text : "", n_ids, error);
}

GBytes *
whisper_engine_token_bytes (const WhisperEngine *e, gint32 id)
{
  if (id < 0 || id >= e->n_tokens || !e->tokens[id])
    return NULL;
  return g_bytes_ref (e->tokens[id]);
}

WhisperBackend *
whisper_engine_get_backend (WhisperEngine *engine)
{
  return engine->net.backend;
}

gboolean
whisper_engine_encode (WhisperEngine *e, const float *mel, int n_frames, float *out,
                       GError **error)
{
  const int frames = 2 * e->net.max_encoder_length;
  if (n_frames < 0 || n_frames > frames) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "encode: %d mel frames given, the window holds at most %d", n_frames, frames);
    return FALSE;
  }
  g_autofree float *window = g_new (float, (size_t) frames * e->net.n_mels);
  whisper_turn_lock_acquire (&e->net.compute_lock);
  whisper_encoder_load_window (&e->net, mel, n_frames, 0, n_frames, e->net.max_encoder_length,
                               window);
  whisper_encoder_run (&e->net, e->net.max_encoder_length);
  e->encoded_length = 0;  /* its input is not recorded: no stream reuses it */
  e->net.backend->ops->download (e->net.backend, out, e->net.enc.h,
                                 (size_t) e->net.max_encoder_length * e->net.d * sizeof (float));
  e->net.backend->ops->sync (e->net.backend);
  whisper_turn_lock_release (&e->net.compute_lock);
  return TRUE;
}
