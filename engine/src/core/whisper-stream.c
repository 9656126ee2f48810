/* whisper-stream.c: WhisperStream: long-form transcription as faster-whisper
 * does it (generate_segments() in https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/transcribe.py),
 * greedy decoding of each window (https://github.com/openai/whisper/blob/main/whisper/decoding.py). */
#include "whisper-alignment.h"
#include "whisper-batched.h"
#include "whisper-decoder-pool.h"
#include "whisper-step-batcher.h"
#include "whisper-engine-struct.h"
#include "whisper-languages.h"
#include "whisper-logits.h"
#include "whisper-pcm.h"
#include "whisper-search.h"
#include "whisper-speech-gate.h"
#include "whisper-tokenizer.h"
#include "whisper-words.h"
#include "whisper-vad-filter.h"

#include <gio/gio.h>
#include <math.h>
#include <string.h>

#define FRAMES_PER_SECOND 100
#define TIME_PRECISION 0.02  /* seconds per timestamp token */
#define INPUT_STRIDE 2       /* mel frames per timestamp token */

struct _WhisperStream {
  WhisperEngine *engine;
  WhisperDecodeOptions options;
  /* The decoder state lent by the engine for the window being decoded
   * (whisper-decoder-pool.h), NULL between windows; dec is &lease->dec. */
  WhisperPooledDecoder *lease;
  GThread *lease_thread;            /* the thread that holds it (counted in thread_leases) */
  WhisperDecoderState *dec;
  int n_slots;                      /* self-attention caches the search needs */
  int window_encoder_frames;        /* T of this transcription's windows (options.encoder_frames,
                                       or the engine's max_encoder_length) */
  WhisperStepMember step_member;    /* in the engine's step batcher (whisper-step-batcher.h) */
  WhisperLogitConfig logit_config;  /* the engine's, with this stream's options */

  WhisperTokenFunc token_func;
  gpointer token_data;

  GArray *history;          /* gint32: every emitted segment's tokens */
  guint prompt_reset_since;
  gint cancelled;

  /* Copies of the options' strings and lists, and what they resolve to. */
  char *language, *initial_prompt, *hotwords, *prefix, *clip_timestamps;
  gint32 *suppress_tokens;
  gint32 *logit_suppress_ids;       /* the stream's SuppressTokens list */
  int language_index;               /* -1: to detect */
  double language_probability;
  double *language_probs;           /* [n_languages] of the last detection window */
  int n_language_probs;
  gboolean language_detected;       /* detection done since the last reset */
  gboolean initial_prompt_added;    /* since the last reset */
  guint64 windows_since_reset;      /* the prefix goes on the first */
  gint32 *hotword_tokens, *prefix_tokens;
  gsize n_hotword_tokens, n_prefix_tokens;
  GRand *rand;
  WhisperSearchBuffers *search;
  int search_max_hyp;
  gint32 *attempt_tokens;           /* [WHISPER_MAX_TEMPERATURES, n_text_ctx] */

  /* Host buffers, sized once from the engine's constants. */
  float *host_window;       /* [2 * max_encoder_length, n_mels] */
  float *host_logits;       /* [2, n_vocab] */
  gint32 *prompt;           /* [n_text_ctx] */
  gint32 *sampled;          /* [sample_len] */
  WhisperPieceDecoder piece;

  WhisperStreamStats stats;

  /* word timestamps (whisper-words.h) */
  char *prepend_punctuations, *append_punctuations;  /* the options' copies */
  double last_speech_timestamp;
  gint32 sot_sequence[4];   /* the last window's start sequence */
  int n_sot;
  WhisperAlignCapture *step_capture;  /* per-step alignment-head attention */
};

/* Decoder states held by the streams of this thread (lease_decoder_locked()). */
static _Thread_local int thread_leases;

/* Result of decoding one window. */
typedef struct {
  int n_sampled;            /* tokens in stream->sampled (forced prefix included), EOT
                               excluded */
  double sum_logprob;
  double no_speech_prob;
  double avg_logprob;       /* of the attempt kept */
  double compression_ratio;
  double temperature;
  int language;             /* index of the window's language */
} WindowResult;

static gboolean prepare_decode_steps (WhisperStream *s, GError **error);

void
whisper_decode_options_init (WhisperDecodeOptions *o)
{
  o->condition_on_previous_text = TRUE;
  o->no_speech_threshold = 0.6;
  o->logprob_threshold = -1.0;
  o->compression_ratio_threshold = 2.4;
  o->strict_no_speech = TRUE;
  o->max_initial_timestamp = 1.0;
  o->suppress_blank = TRUE;
  o->suppress_non_speech = TRUE;
  o->silence_threshold_db = WHISPER_DEFAULT_SILENCE_THRESHOLD_DB;
  o->vad = NULL;
  whisper_vad_options_init (&o->vad_options);
  o->language = NULL;
  o->task = WHISPER_TASK_TRANSCRIBE;
  o->detect_language_per_window = FALSE;
  o->language_detection_threshold = 0.5;
  o->language_detection_segments = 1;
  o->initial_prompt = o->hotwords = o->prefix = NULL;
  o->prompt_reset_on_temperature = 0.5;
  o->beam_size = 1;
  o->best_of = 5;
  o->patience = 1.0;
  o->length_penalty = 1.0;
  o->repetition_penalty = 1.0;
  o->no_repeat_ngram_size = 0;
  memset (o->temperatures, 0, sizeof o->temperatures);
  o->n_temperatures = 1;
  o->without_timestamps = FALSE;
  o->max_new_tokens = 0;
  o->encoder_frames = 0;
  o->clip_timestamps = NULL;
  o->suppress_tokens = NULL;
  o->n_suppress_tokens = 0;
  o->seed = 0;
  o->word_timestamps = FALSE;
  o->prepend_punctuations = NULL;
  o->append_punctuations = NULL;
  o->hallucination_silence_threshold = -1.0;
  o->vad_filter = FALSE;
}

void
whisper_decode_options_set_search_defaults (WhisperDecodeOptions *o)
{
  o->beam_size = 5;
  o->best_of = 5;
  o->n_temperatures = 6;
  for (int i = 0; i < 6; i++)
    o->temperatures[i] = 0.2 * i;
}

/* TRUE when a speech region (sorted, WhisperVadSpeech) overlaps samples
 * [first, first + n). */
static gboolean
speech_in (const GArray *speech, gsize first, gsize n)
{
  for (guint i = 0; i < speech->len; i++) {
    const WhisperVadSpeech *r = &g_array_index (speech, WhisperVadSpeech, i);
    if (r->start_sample >= (gint64) (first + n))
      break;
    if (r->end_sample > (gint64) first)
      return TRUE;
  }
  return FALSE;
}

void
whisper_segment_free (WhisperSegment *segment)
{
  if (!segment)
    return;
  g_free (segment->text);
  g_free (segment->tokens);
  for (gsize i = 0; i < segment->n_words; i++)
    g_free (segment->words[i].text);
  g_free (segment->words);
  g_free (segment);
}

/* "s,e,s,e,..." seconds into [start, end) frame pairs, as faster-whisper's
 * generate_segments() reads clip_timestamps: an odd count ends at the end
 * of the audio (end = -1 here). Returns the number of pairs, -1 on a bad
 * list. */
static int
parse_clips (const char *text, gint64 *frames, int max_pairs, GError **error)
{
  if (!text || !*text || g_str_equal (text, "0"))
    return 0;
  g_auto (GStrv) parts = g_strsplit (text, ",", -1);
  int n = 0;
  for (int i = 0; parts[i]; i++) {
    char *end = NULL;
    const double t = g_ascii_strtod (g_strstrip (parts[i]), &end);
    if (!end || *end || end == parts[i] || !isfinite (t) || t < 0 || t > 1e7) {
      g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                   "clip timestamps \"%s\": \"%s\" is not a time in seconds", text, parts[i]);
      return -1;
    }
    if (n >= 2 * max_pairs) {
      g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                   "clip timestamps \"%s\": more than %d clips", text, max_pairs);
      return -1;
    }
    frames[n++] = (gint64) llround (t * FRAMES_PER_SECOND);
  }
  if (n % 2)
    frames[n++] = -1;
  return n / 2;
}

#define MAX_CLIPS 256

gboolean
whisper_decode_options_check (const WhisperEngine *e, const WhisperDecodeOptions *o,
                              GError **error)
{
  const WhisperEngineInfo *info = &e->info;
#define BAD(...) \
  do { \
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING, __VA_ARGS__); \
    return FALSE; \
  } while (0)
  if (o->beam_size < 1 || o->beam_size > WHISPER_MAX_BEAM)
    BAD ("beam size %d is out of range 1..%d", o->beam_size, WHISPER_MAX_BEAM);
  if (o->best_of < 1 || o->best_of > WHISPER_MAX_BEAM)
    BAD ("best-of %d is out of range 1..%d", o->best_of, WHISPER_MAX_BEAM);
  if (!(o->patience > 0) || !isfinite (o->patience) || lround (o->beam_size * o->patience) < 1 ||
      o->beam_size * o->patience > 4 * WHISPER_MAX_BEAM)
    BAD ("patience %g is out of range: beam size x patience must be 1..%d", o->patience,
         4 * WHISPER_MAX_BEAM);
  if (!isfinite (o->length_penalty) || fabs (o->length_penalty) > 100)
    BAD ("length penalty %g is not a number from -100 to 100", o->length_penalty);
  if (!(o->repetition_penalty > 0) || !isfinite (o->repetition_penalty))
    BAD ("repetition penalty %g must be a positive number (1 = off)", o->repetition_penalty);
  if (o->no_repeat_ngram_size < 0 || o->no_repeat_ngram_size > info->n_text_ctx)
    BAD ("no-repeat n-gram size %d is out of range 0..%d", o->no_repeat_ngram_size,
         info->n_text_ctx);
  if (o->n_temperatures < 1 || o->n_temperatures > WHISPER_MAX_TEMPERATURES)
    BAD ("%d temperatures given: 1 to %d are allowed", o->n_temperatures,
         WHISPER_MAX_TEMPERATURES);
  for (int i = 0; i < o->n_temperatures; i++)
    if (!(o->temperatures[i] >= 0) || o->temperatures[i] > 10)
      BAD ("temperature %g is out of range 0..10", o->temperatures[i]);
  if (o->encoder_frames < 0 || o->encoder_frames > info->max_encoder_length)
    BAD ("encoder frames %d is out of range 0..%d (0: the engine's window)", o->encoder_frames,
         info->max_encoder_length);
  if (o->max_new_tokens < 0 || o->max_new_tokens > info->n_text_ctx)
    BAD ("max new tokens %d is out of range 0..%d (0: the model's limit)", o->max_new_tokens,
         info->n_text_ctx);
  if (o->language_detection_segments < 1 || o->language_detection_segments > 1000)
    BAD ("language detection segments %d is out of range 1..1000",
         o->language_detection_segments);
  if (!(o->language_detection_threshold >= 0) || o->language_detection_threshold > 1)
    BAD ("language detection threshold %g is not a probability", o->language_detection_threshold);
  for (int i = 0; i < o->n_suppress_tokens; i++)
    if (o->suppress_tokens[i] < 0 || o->suppress_tokens[i] >= info->n_vocab)
      BAD ("suppressed token %d is not a token id of this model (0..%d)", o->suppress_tokens[i],
           info->n_vocab - 1);
  const int n_languages = info->token_translate - info->token_sot - 1;
  int index = -1;
  if (!whisper_language_parse (o->language, n_languages, &index, error))
    return FALSE;
  if (!info->is_multilingual) {
    if (index >= 0 && !g_str_equal (whisper_language_code (index), "en"))
      BAD ("language \"%s\": %s is an English-only model", o->language, info->model_path);
    if (o->task == WHISPER_TASK_TRANSLATE)
      BAD ("translation: %s is an English-only model (translation needs a multilingual one)",
           info->model_path);
  }
  gint64 frames[2 * MAX_CLIPS];
  if (parse_clips (o->clip_timestamps, frames, MAX_CLIPS, error) < 0)
    return FALSE;
#undef BAD
  return TRUE;
}

static int
compare_ids (gconstpointer a, gconstpointer b)
{
  const gint32 x = *(const gint32 *) a, y = *(const gint32 *) b;
  return (x > y) - (x < y);
}

/* The SuppressTokens list as faster-whisper's get_suppressed_tokens()
 * builds it: the non-speech tokens (suppress_tokens = [-1]) and the given
 * ids, then the special tokens; nothing at all when both are off. */
static void
build_suppress_list (WhisperStream *s)
{
  const WhisperEngine *e = s->engine;
  const WhisperEngineInfo *info = &e->info;
  GArray *ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  if (s->options.suppress_non_speech)
    g_array_append_vals (ids, e->suppress_ids, e->n_suppress_ids);  /* specials included */
  if (s->options.n_suppress_tokens > 0) {
    const gint32 specials[] = { info->token_transcribe, info->token_translate, info->token_sot,
                                info->token_sot_prev, info->token_sot_lm,
                                info->token_no_speech };
    g_array_append_vals (ids, s->suppress_tokens, s->options.n_suppress_tokens);
    g_array_append_vals (ids, specials, G_N_ELEMENTS (specials));
  }
  g_array_sort (ids, compare_ids);
  guint out = 0;
  for (guint i = 0; i < ids->len; i++) {
    const gint32 id = g_array_index (ids, gint32, i);
    if (out == 0 || g_array_index (ids, gint32, out - 1) != id)
      g_array_index (ids, gint32, out++) = id;
  }
  g_free (s->logit_suppress_ids);
  s->logit_config.n_suppress_ids = (int) out;
  s->logit_suppress_ids = (gint32 *) g_array_free (ids, FALSE);
  s->logit_config.suppress_ids = s->logit_suppress_ids;
}

static void
apply_options (WhisperStream *s)
{
  WhisperDecodeOptions *o = &s->options;
  /* own copies of what the caller lent */
  g_free (s->language);
  g_free (s->initial_prompt);
  g_free (s->hotwords);
  g_free (s->prefix);
  g_free (s->clip_timestamps);
  g_free (s->suppress_tokens);
  o->language = s->language = g_strdup (o->language);
  o->initial_prompt = s->initial_prompt = g_strdup (o->initial_prompt);
  o->hotwords = s->hotwords = g_strdup (o->hotwords);
  o->prefix = s->prefix = g_strdup (o->prefix);
  o->clip_timestamps = s->clip_timestamps = g_strdup (o->clip_timestamps);
  s->suppress_tokens = o->n_suppress_tokens > 0 && o->suppress_tokens
                           ? g_memdup2 (o->suppress_tokens,
                                        (gsize) o->n_suppress_tokens * sizeof (gint32))
                           : NULL;
  o->suppress_tokens = s->suppress_tokens;
  if (!s->suppress_tokens)
    o->n_suppress_tokens = 0;
  g_clear_pointer (&s->hotword_tokens, g_free);
  g_clear_pointer (&s->prefix_tokens, g_free);
  s->n_hotword_tokens = s->n_prefix_tokens = 0;

  s->logit_config.suppress_blank = o->suppress_blank;
  build_suppress_list (s);
  s->logit_config.timestamps = !o->without_timestamps;
  s->logit_config.max_initial_timestamp_index =
      o->max_initial_timestamp >= 0 ? (int) lround (o->max_initial_timestamp / TIME_PRECISION)
                                    : -1;
  if (s->rand)
    g_rand_free (s->rand);
  s->rand = g_rand_new_with_seed (o->seed);
  WhisperBackend *be = s->engine->net.backend;
  if (be->ops->logits_prepare)
    be->ops->logits_prepare (be, &s->logit_config);
}

WhisperStream *
whisper_stream_new (WhisperEngine *engine, GError **error)
{
  WhisperStream *s = g_new0 (WhisperStream, 1);
  s->engine = whisper_engine_ref (engine);
  const WhisperEngineInfo *info = &engine->info;

  s->n_slots = 1;
  s->logit_config = engine->logit_config;
  s->logit_config.backend_cache = NULL;
  whisper_decode_options_init (&s->options);
  apply_options (s);
  s->language_index = -1;

  s->history = g_array_new (FALSE, FALSE, sizeof (gint32));
  s->host_window = g_new (float, (size_t) 2 * engine->net.max_encoder_length * engine->net.n_mels);
  s->host_logits = g_new (float, (size_t) 3 * engine->net.n_vocab);  /* SOT row, last row, a step */
  s->prompt = g_new (gint32, engine->net.n_text_ctx);
  s->sampled = g_new (gint32, engine->net.n_text_ctx);
  s->attempt_tokens = g_new (gint32, (size_t) WHISPER_MAX_TEMPERATURES * engine->net.n_text_ctx);
  s->language_probs = g_new0 (double, MAX (info->token_translate - info->token_sot - 1, 1));
  (void) info;
  whisper_piece_decoder_init (&s->piece, engine->max_token_bytes);
  if (!prepare_decode_steps (s, error)) {
    whisper_stream_free (s);
    return NULL;
  }
  /* what every decoder state of the engine is sized with */
  s->stats.cross_cache_length = engine->net.max_encoder_length;
  s->stats.self_cache_length = engine->net.n_text_ctx;
  return s;
}

void
whisper_stream_free (WhisperStream *s)
{
  if (!s)
    return;
  WhisperBackend *be = s->engine->net.backend;
  /* (a stream freed while the step batcher expects it back would have every
   * later pass wait for it) */
  whisper_step_batcher_leave (s->engine->steps, &s->step_member);
  if (be->ops->logits_release)
    be->ops->logits_release (be, &s->logit_config);
  if (s->lease && s->lease_thread == g_thread_self ())
    thread_leases--;
  whisper_decoder_pool_release (s->engine->decoders, &s->engine->net, s->lease);
  if (s->history)
    g_array_unref (s->history);
  g_free (s->host_window);
  g_free (s->host_logits);
  g_free (s->prompt);
  g_free (s->sampled);
  g_free (s->attempt_tokens);
  g_free (s->language_probs);
  g_free (s->language);
  g_free (s->initial_prompt);
  g_free (s->hotwords);
  g_free (s->prefix);
  g_free (s->clip_timestamps);
  g_free (s->suppress_tokens);
  g_free (s->logit_suppress_ids);
  g_free (s->hotword_tokens);
  g_free (s->prefix_tokens);
  if (s->rand)
    g_rand_free (s->rand);
  whisper_search_buffers_free (s->search);
  whisper_piece_decoder_clear (&s->piece);
  g_free (s->prepend_punctuations);
  g_free (s->append_punctuations);
  whisper_align_step_capture_free (s->step_capture, &s->engine->timing);
  whisper_engine_unref (s->engine);
  g_free (s);
}

void
whisper_stream_set_options (WhisperStream *s, const WhisperDecodeOptions *options)
{
  s->options = *options;
  /* word timestamps: the punctuation sets are copied */
  g_free (s->prepend_punctuations);
  g_free (s->append_punctuations);
  s->prepend_punctuations = g_strdup (options->prepend_punctuations
                                          ? options->prepend_punctuations
                                          : WHISPER_DEFAULT_PREPEND_PUNCTUATIONS);
  s->append_punctuations = g_strdup (options->append_punctuations
                                         ? options->append_punctuations
                                         : WHISPER_DEFAULT_APPEND_PUNCTUATIONS);
  s->options.prepend_punctuations = s->prepend_punctuations;
  s->options.append_punctuations = s->append_punctuations;
  apply_options (s);
}

void
whisper_stream_set_token_callback (WhisperStream *s, WhisperTokenFunc func, gpointer user_data)
{
  s->token_func = func;
  s->token_data = user_data;
}

void
whisper_stream_reset (WhisperStream *s)
{
  g_array_set_size (s->history, 0);
  s->prompt_reset_since = 0;
  s->last_speech_timestamp = 0.0;
  s->language_detected = FALSE;
  s->n_language_probs = 0;
  s->initial_prompt_added = FALSE;
  s->windows_since_reset = 0;
}

void
whisper_stream_set_history (WhisperStream *s, const gint32 *ids, gsize n_ids)
{
  g_array_set_size (s->history, 0);
  if (n_ids > 0)
    g_array_append_vals (s->history, ids, (guint) n_ids);
  s->prompt_reset_since = 0;
  /* the history now is the caller's: an initial prompt is not added to it */
  s->initial_prompt_added = TRUE;
}

const double *
whisper_stream_get_language_probabilities (const WhisperStream *s, int *n_languages)
{
  *n_languages = s->n_language_probs;
  return s->n_language_probs > 0 ? s->language_probs : NULL;
}

const char *
whisper_stream_get_language (const WhisperStream *s, double *probability)
{
  if (s->language_index < 0)
    return NULL;
  if (probability)
    *probability = s->language_probability;
  return whisper_language_code (s->language_index);
}

void
whisper_stream_cancel (WhisperStream *s)
{
  g_atomic_int_set (&s->cancelled, 1);
}

void
whisper_stream_get_stats (const WhisperStream *s, WhisperStreamStats *stats)
{
  *stats = s->stats;
  if (s->dec)
    stats->last_cross_key_length = s->dec->last_cross_key_length;
}

static double
elapsed_since (gint64 start)
{
  return (g_get_monotonic_time () - start) / 1e6;
}

/* len(utf8) / len(zlib.compress(utf8)), as the reference computes it. */
static double
compression_ratio (const char *text)
{
  const gsize len = strlen (text);
  g_autoptr (GZlibCompressor) z = g_zlib_compressor_new (G_ZLIB_COMPRESSOR_FORMAT_ZLIB, -1);
  guint8 buf[4096];
  gsize total = 0, read, written;
  const guint8 *in = (const guint8 *) text;
  gsize left = len;
  GConverterResult r;
  do {
    r = g_converter_convert (G_CONVERTER (z), in, left, buf, sizeof buf, G_CONVERTER_INPUT_AT_END,
                             &read, &written, NULL);
    in += read;
    left -= read;
    total += written;
  } while (r == G_CONVERTER_CONVERTED);
  return total ? (double) len / total : 0.0;
}

/* The window's prompt, as faster-whisper's get_prompt() builds it:
 * [<|startofprev|>, hotwords (without a prefix), the last 223 tokens of the
 * history], the SOT sequence (<|startoftranscript|>, and on multilingual
 * models the language and the task), <|notimestamps|> without timestamps,
 * then the forced prefix (<|0.00|> with timestamps, and its tokens).
 * Returns the length; *sot_index is the SOT's position, *n_forced the
 * prefix's length (those tokens also start s->sampled). */
static int
build_prompt (WhisperStream *s, int language, gboolean with_prefix, int *sot_index,
              int *n_forced)
{
  const WhisperEngineInfo *info = &s->engine->info;
  const int max_prev = info->n_text_ctx / 2 - 1;
  int n = 0;
  const guint n_prev = s->history->len - s->prompt_reset_since;
  const gboolean hotwords = s->n_hotword_tokens > 0 && !(with_prefix && s->n_prefix_tokens > 0);
  if (n_prev > 0 || hotwords) {
    s->prompt[n++] = info->token_sot_prev;
    if (hotwords) {
      const gsize take = MIN (s->n_hotword_tokens, (gsize) max_prev);
      memcpy (s->prompt + n, s->hotword_tokens, take * sizeof (gint32));
      n += (int) take;
    }
    /* faster-whisper does not bound hotwords + history together (at 448
     * tokens CTranslate2 refuses the prompt); here the oldest history gives
     * way where they would leave less than a quarter of the context */
    guint take = MIN (n_prev, (guint) max_prev);
    const int room = info->n_text_ctx * 3 / 4 - n;
    take = MIN (take, (guint) MAX (room, 0));
    memcpy (s->prompt + n, &g_array_index (s->history, gint32, s->history->len - take),
            take * sizeof (gint32));
    n += (int) take;
  }
  *sot_index = n;
  s->prompt[n++] = info->token_sot;
  if (info->is_multilingual) {
    s->prompt[n++] = info->token_sot + 1 + language;
    s->prompt[n++] = s->options.task == WHISPER_TASK_TRANSLATE ? info->token_translate
                                                               : info->token_transcribe;
  }
  if (s->options.without_timestamps)
    s->prompt[n++] = info->token_no_timestamps;
  *n_forced = 0;
  if (with_prefix && s->n_prefix_tokens > 0) {
    const int first = n;
    if (!s->options.without_timestamps)
      s->prompt[n++] = info->token_timestamp_begin;
    const gsize take = MIN (s->n_prefix_tokens, (gsize) max_prev);
    memcpy (s->prompt + n, s->prefix_tokens, take * sizeof (gint32));
    n += (int) take;
    *n_forced = n - first;
  }
  return n;
}

/* Picks the token from the last row of logits (already in backend memory). */
static void
select_token (WhisperStream *s, float *device_logits, float *host_logits,
              const WhisperLogitState *state, WhisperLogitChoice *choice)
{
  WhisperBackend *be = s->engine->net.backend;
  if (be->ops->logits_select) {
    be->ops->logits_select (be, device_logits, &s->logit_config, state, choice);
    return;
  }
  be->ops->download (be, host_logits, device_logits, (size_t) s->engine->net.n_vocab * sizeof (float));
  be->ops->sync (be);
  whisper_logits_select (host_logits, &s->logit_config, state, choice);
}

/* Hands the token to the application's callback; FALSE when it asks to
 * stop. Called with the engine's compute lock held, which it releases
 * around the callback: the callback may block (the element pushes a buffer
 * downstream) or run another stream of this engine. Nothing of this
 * stream's decoding lives in the engine's shared buffers between two
 * steps (its caches, logits and logit state are its own), so work done in
 * between changes none of its tokens. */
static gboolean
emit_token (WhisperStream *s, gint32 token, float logprob, int step, double window_start,
            double *segment_time)
{
  WhisperEngine *e = s->engine;
  const int begin = e->info.token_timestamp_begin;
  WhisperTokenEvent ev = { 0 };
  ev.id = token;
  ev.is_timestamp = token >= begin;
  ev.window_start = window_start;
  ev.logprob = logprob;
  ev.step = step;
  ev.aligned_time = -1.0;
  /* word timestamps: this step's alignment-head attention (whisper-words.h) */
  if (s->dec->capture && token < e->info.token_eot)
    ev.aligned_time = whisper_align_step_time (s->dec->capture, &e->timing, window_start);
  if (ev.is_timestamp) {
    *segment_time = window_start + (token - begin) * TIME_PRECISION;
    ev.time = *segment_time;
    ev.piece = "";
  } else {
    ev.time = *segment_time;
    if (token < e->info.token_eot && token < e->n_tokens && e->tokens[token]) {
      gsize size;
      const guint8 *data = g_bytes_get_data (e->tokens[token], &size);
      ev.piece = whisper_piece_decoder_push (&s->piece, data, size);
    } else {
      ev.piece = "";
    }
  }
  /* (the next batch of steps waits for this stream at most about one pass:
   * whisper-step-batcher.h) */
  whisper_turn_lock_release (&e->net.compute_lock);
  const gboolean go_on = s->token_func (&ev, s->token_data);
  whisper_turn_lock_acquire (&e->net.compute_lock);
  return go_on;
}

static gboolean
check_cancelled (WhisperStream *s, GError **error)
{
  if (!g_atomic_int_get (&s->cancelled))
    return FALSE;
  g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_CANCELLED,
               "transcription cancelled");
  return TRUE;
}

static gboolean
backend_ok (WhisperBackend *be, GError **error)
{
  return !be->ops->check || be->ops->check (be, error);
}

/* The forward pass of one decode step of this stream, batched with the
 * steps other streams of the engine are ready to run (whisper-step-batcher.h);
 * the logits are in rows->st->logits. Called with the compute lock held,
 * which is let go meanwhile. */
static void
run_step (WhisperStream *s, const WhisperStepRows *rows)
{
  if (whisper_step_batcher_run (s->engine->steps, &s->engine->net, rows, &s->step_member) > 1)
    s->stats.batched_steps++;
}

/* The search's decode steps (WhisperSearch.step). */
static void
search_step (gpointer data, const gint32 *tokens, const int *slots, int n_rows, int pos)
{
  WhisperStream *s = data;
  const WhisperStepRows rows = { .st = s->dec, .tokens = tokens, .slots = slots,
                                 .n_rows = n_rows, .pos = pos };
  run_step (s, &rows);
}

/* One decode step: the forward pass of `token` at position `pos`, then the
 * choice of the next token. On a backend with decode graphs (CUDA) the
 * whole step is one graph launch and only the choice comes back. */
static gboolean
decode_step (WhisperStream *s, gint32 token, int pos, const WhisperLogitState *state,
             WhisperLogitChoice *choice, GError **error)
{
  WhisperEngine *e = s->engine;
  WhisperBackend *be = e->net.backend;
  const int row0 = 0;
  /* (a step that captures alignment-head attention, or of a window shorter
   * than the graph's, runs without a graph) */
  const gboolean graph = s->lease->step_graph && be->ops->logits_select && !s->dec->capture &&
                         s->dec->encoder_length == e->net.max_encoder_length;

  if (graph && !be->ops->graph_begin (be, s->lease->step_graph, error))
    return FALSE;
  if (graph) {
    whisper_decoder_forward (s->dec, &e->net, &token, 1, pos, &row0, 1);
  } else {
    const WhisperStepRows rows = { .st = s->dec, .tokens = &token, .slots = &row0, .n_rows = 1,
                                   .pos = pos, .capture = TRUE };
    run_step (s, &rows);
  }
  select_token (s, s->dec->logits, s->host_logits + (size_t) 2 * e->net.n_vocab, state, choice);
  if (graph && !be->ops->graph_end (be, error))
    return FALSE;
  s->stats.decode_steps++;
  return TRUE;
}

/* One decode step on a decoder state new to the engine, at the last
 * position (the longest self-attention): whatever a backend builds on a
 * state's first step is built here, once (the CUDA backend's decode graph
 * of the state, its records and staging memory; the CPU backend's
 * attention scratch), so that every step of a transcription is arithmetic
 * only (tests/engine/test-decode-steps.c). Its results are thrown away: a
 * window's prompt pass and audio overwrite every cache row a later step
 * reads before it reads it. Not counted in the stream's decode steps. */
static gboolean
warm_up_decoder_locked (WhisperStream *s, GError **error)
{
  WhisperEngine *e = s->engine;
  const WhisperLogitState state = { .n_sampled = 0, .last_is_timestamp = FALSE,
                                    .penultimate_is_timestamp = TRUE, .last_timestamp = -1 };
  WhisperLogitChoice choice;
  const guint64 steps = s->stats.decode_steps, batched = s->stats.batched_steps;
  gboolean ok = decode_step (s, e->info.token_sot, s->dec->self_len - 1, &state, &choice, error);
  if (ok) {
    e->net.backend->ops->sync (e->net.backend);
    ok = backend_ok (e->net.backend, error);
  }
  s->stats.decode_steps = steps;
  s->stats.batched_steps = batched;
  s->lease->warmed = ok;
  return ok;
}

/* Streams decoding at once: as many as one batch of decode steps holds
 * (the backend's max_exact_rows rows, n_slots each) and one more, which
 * encodes its window while the others decode; at least 2, at most
 * LEASE_MAX_DECODING. A stream that finds that many decoding waits for
 * one of them, in turn, up to LEASE_WAIT_US: more would not share the passes (so
 * not go faster) but would each hold a decoder state (47 MB for tiny.en at
 * five beams, of which the rows its windows wrote take room). The wait is
 * bounded, and a thread that holds a state already never waits (a token
 * callback that runs another stream of the engine, or a pipeline in which
 * one element's output waits for another's text), so no stream waits on a
 * state that cannot come back. */
#define LEASE_MAX_DECODING 8
#define LEASE_WAIT_US (5 * G_TIME_SPAN_SECOND)

/* Borrows a decoder state of the engine for one window (with the caches
 * the search needs), warmed up when it is new. Called with the compute
 * lock held, so that a stream waiting for the engine holds no state; lets
 * go of it while it waits for a state. A stream that holds one already
 * keeps it. */
static gboolean
lease_decoder_locked (WhisperStream *s, GError **error)
{
  WhisperEngine *e = s->engine;
  if (s->lease)
    return TRUE;
  const guint limit = CLAMP (e->net.backend->max_exact_rows / MAX (1, s->n_slots) + 1, 2,
                             LEASE_MAX_DECODING);
  guint lent;
  whisper_decoder_pool_counts (e->decoders, NULL, &lent);
  if (thread_leases == 0 && lent >= limit) {
    /* in the order the streams came (e->lease_turn), without the compute
     * lock (the streams decoding need it to finish) */
    whisper_turn_lock_release (&e->net.compute_lock);
    whisper_turn_lock_acquire (&e->lease_turn);
    whisper_decoder_pool_wait_below (e->decoders, limit, g_get_monotonic_time () + LEASE_WAIT_US);
    whisper_turn_lock_acquire (&e->net.compute_lock);
    whisper_turn_lock_release (&e->lease_turn);
  }
  s->lease = whisper_decoder_pool_acquire (e->decoders, &e->net, s->n_slots, error);
  if (!s->lease)
    return FALSE;
  thread_leases++;
  s->lease_thread = g_thread_self ();
  s->dec = &s->lease->dec;
  if (!s->lease->warmed && !warm_up_decoder_locked (s, error)) {
    /* a state that failed its first step is not kept */
    whisper_decoder_pool_discard (s->engine->decoders, &s->engine->net, s->lease);
    s->lease = NULL;
    s->dec = NULL;
    thread_leases--;
    return FALSE;
  }
  return TRUE;
}

/* Gives the window's decoder state back to the engine. */
static void
return_decoder (WhisperStream *s)
{
  if (!s->lease)
    return;
  whisper_step_batcher_leave (s->engine->steps, &s->step_member);
  s->stats.last_cross_key_length = s->dec->last_cross_key_length;
  whisper_decoder_pool_release (s->engine->decoders, &s->engine->net, s->lease);
  s->lease = NULL;
  s->dec = NULL;
  thread_leases--;
}

/* One decoder state made and warmed up at once (the stream's first
 * transcription then finds it), and given back. */
static gboolean
prepare_decode_steps (WhisperStream *s, GError **error)
{
  whisper_turn_lock_acquire (&s->engine->net.compute_lock);
  const gboolean ok = lease_decoder_locked (s, error);
  whisper_turn_lock_release (&s->engine->net.compute_lock);
  return_decoder (s);
  return ok;
}

/* Encodes mel[:, seek : seek+n_frames] in a window of T encoder frames
 * (n_frames <= 2T) and computes the cross-attention K/V from it. Caller
 * holds the compute lock. */
static gboolean
encode_window (WhisperStream *s, const float *mel, gsize mel_stride, gsize seek, int n_frames,
               int T, GError **error)
{
  WhisperEngine *e = s->engine;
  WhisperBackend *be = e->net.backend;
  gint64 t0 = g_get_monotonic_time ();
  whisper_encoder_load_window (&e->net, mel, mel_stride, seek, n_frames, T, s->host_window);
  whisper_encoder_run (&e->net, T);
  whisper_decoder_set_audio (s->dec, &e->net, T);
  be->ops->sync (be);
  s->stats.encoder_seconds += elapsed_since (t0);
  s->stats.windows++;
  return backend_ok (be, error);
}

/* The language probabilities of the audio whose K/V the decoder holds,
 * as CTranslate2's detect_language() computes them: the decoder on
 * <|startoftranscript|> alone, softmax over the language tokens only.
 * Returns the most probable language (probs[n_languages] filled when not
 * NULL). Caller holds the compute lock. */
static int
detect_language_here (WhisperStream *s, double *top_probability, double *probs)
{
  WhisperEngine *e = s->engine;
  WhisperBackend *be = e->net.backend;
  const WhisperEngineInfo *info = &e->info;
  const int n_languages = info->token_translate - info->token_sot - 1;
  const int row = 0;
  const gint32 sot = info->token_sot;
  whisper_decoder_forward (s->dec, &e->net, &sot, 1, 0, &row, 1);
  s->stats.decode_steps++;
  be->ops->download (be, s->host_logits, s->dec->logits, (size_t) e->net.n_vocab * sizeof (float));
  be->ops->sync (be);
  const float *lang = s->host_logits + sot + 1;
  float max = -INFINITY;
  for (int i = 0; i < n_languages; i++)
    max = MAX (max, lang[i]);
  double sum = 0.0;
  for (int i = 0; i < n_languages; i++)
    sum += exp ((double) lang[i] - max);
  int best = 0;
  for (int i = 0; i < n_languages; i++) {
    const double p = exp ((double) lang[i] - max) / sum;
    if (probs)
      probs[i] = p;
    if (lang[i] > lang[best])
      best = i;
  }
  *top_probability = exp ((double) lang[best] - max) / sum;
  return best;
}

/* faster-whisper's detect_language() on the first language_detection_segments
 * windows from frame `seek` (each window padded or cut to the window
 * length as pad_or_trim() does, the frame past the content included): the
 * first window whose top language is more likely than the threshold
 * decides; else the language most often on top, with its highest
 * probability. */
static gboolean
detect_language (WhisperStream *s, const float *mel, gsize mel_stride, gsize n_mel_frames,
                 gsize seek, GError **error)
{
  WhisperEngine *e = s->engine;
  const gsize window = 2 * (gsize) e->net.max_encoder_length;
  const int n_languages = e->info.token_translate - e->info.token_sot - 1;
  if (seek >= n_mel_frames)
    seek = 0;
  const gsize total = MIN (n_mel_frames - seek,
                           (gsize) s->options.language_detection_segments * window);
  g_autofree int *votes = g_new0 (int, n_languages);
  g_autofree double *best_prob = g_new0 (double, n_languages);
  g_autofree int *order = g_new0 (int, n_languages);  /* first-seen order of the votes */
  int n_seen = 0;
  gboolean decided = FALSE;
  int language = 0;
  double probability = 0.0;

  whisper_turn_lock_acquire (&e->net.compute_lock);
  if (!lease_decoder_locked (s, error)) {
    whisper_turn_lock_release (&e->net.compute_lock);
    return FALSE;
  }
  for (gsize i = 0; i < total && !decided; i += window) {
    const int n = (int) MIN (window, total - i);
    if (!encode_window (s, mel, mel_stride, seek + i, n, e->net.max_encoder_length, error)) {
      whisper_turn_lock_release (&e->net.compute_lock);
      return FALSE;
    }
    double p;
    const int top = detect_language_here (s, &p, s->language_probs);
    s->n_language_probs = n_languages;
    if (p > s->options.language_detection_threshold) {
      language = top;
      probability = p;
      decided = TRUE;
    } else {
      if (votes[top]++ == 0)
        order[n_seen++] = top;
      best_prob[top] = MAX (best_prob[top], p);
    }
  }
  whisper_turn_lock_release (&e->net.compute_lock);
  if (!decided && n_seen > 0) {
    language = order[0];
    for (int k = 1; k < n_seen; k++)
      if (votes[order[k]] > votes[language])
        language = order[k];
    probability = best_prob[language];
  }
  s->language_index = language;
  s->language_probability = probability;
  return TRUE;
}

/* The greedy loop with the backend's own choice of tokens (on CUDA: one
 * graph launch per step, only the choice copied back). The prompt's logits
 * are the last row of s->dec->logits. Tokens go to s->sampled; with `emit`
 * each token is handed to the callback as its step completes. */
static gboolean
greedy_plain (WhisperStream *s, int n_prompt, int n_rows, int max_new, double window_start,
              gboolean emit, int *n_sampled, double *sum_logprob, GError **error)
{
  WhisperEngine *e = s->engine;
  const int V = e->net.n_vocab;
  WhisperLogitState state = { .n_sampled = 0, .last_is_timestamp = FALSE,
                              .penultimate_is_timestamp = TRUE, .last_timestamp = -1 };
  WhisperLogitChoice choice;
  double segment_time = window_start;
  *n_sampled = 0;
  *sum_logprob = 0.0;
  select_token (s, s->dec->logits + (size_t) (n_rows - 1) * V, s->host_logits + (size_t) 2 * V,
                &state, &choice);
  for (int step = 0; step < max_new; step++) {
    *sum_logprob += choice.logprob;
    if (choice.token == e->info.token_eot)
      break;
    s->sampled[(*n_sampled)++] = choice.token;
    whisper_logit_state_push (&state, &s->logit_config, choice.token);
    if (emit && s->token_func &&
        !emit_token (s, choice.token, choice.logprob, step, window_start, &segment_time))
      g_atomic_int_set (&s->cancelled, 1);
    if (check_cancelled (s, error))
      return FALSE;
    if (step + 1 == max_new)
      break;
    if (!decode_step (s, choice.token, n_prompt + step, &state, &choice, error))
      return FALSE;
  }
  return TRUE;
}

/* Host buffers and cache slots for the search the options ask for. Not on
 * the decode path: once per transcription, and only when they grow. */
static gboolean
ensure_search (WhisperStream *s, GError **error)
{
  const WhisperDecodeOptions *o = &s->options;
  gboolean sampling = FALSE;
  for (int i = 0; i < o->n_temperatures; i++)
    sampling |= o->temperatures[i] > 0;
  const int slots = MAX (o->beam_size, sampling ? o->best_of : 1);
  const int max_hyp = MAX (o->best_of, (int) lround (o->beam_size * o->patience) + o->beam_size);
  if (slots > s->engine->net.n_text_ctx) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "%d sequences decoded together is more than the %d this model allows", slots,
                 s->engine->net.n_text_ctx);
    return FALSE;
  }
  s->n_slots = slots;  /* each window's decoder state gets them (lease_decoder_locked) */
  if (!s->search || whisper_search_buffers_slots (s->search) < slots ||
      s->search_max_hyp < max_hyp) {
    whisper_search_buffers_free (s->search);
    s->search = whisper_search_buffers_new (slots, s->engine->net.n_text_ctx, s->engine->net.n_vocab,
                                            max_hyp);
    s->search_max_hyp = max_hyp;
  }
  return TRUE;
}

/* Encodes the window mel[:, seek : seek+n_frames] and decodes it as
 * faster-whisper's generate_with_fallback() does: at each temperature of
 * the list in turn (beam search or greedy at 0, sampling best_of sequences
 * above) until a result is neither a loop (compression ratio above its
 * threshold) nor unlikely (average log probability below its threshold,
 * unless the window is likely silent); when every temperature fails, the
 * most likely result among those that are not loops (or among all). */
static gboolean
decode_window (WhisperStream *s, const float *mel, gsize mel_stride, gsize seek, int n_frames,
               double window_start, gboolean with_prefix, WindowResult *result, GError **error)
{
  WhisperEngine *e = s->engine;
  WhisperBackend *be = e->net.backend;
  const WhisperDecodeOptions *o = &s->options;
  const int V = e->net.n_vocab;
  gboolean ok = FALSE;

  memset (result, 0, sizeof *result);
  result->language = s->language_index;
  whisper_piece_decoder_reset (&s->piece);

  whisper_turn_lock_acquire (&e->net.compute_lock);
  /* the window's decoder state, kept to its word timestamps (the caller
   * gives it back) */
  if (!lease_decoder_locked (s, error) ||
      !encode_window (s, mel, mel_stride, seek, n_frames, s->window_encoder_frames, error))
    goto out;
  gint64 t0 = g_get_monotonic_time ();
  if (e->info.is_multilingual && o->detect_language_per_window) {
    double p;
    result->language = detect_language_here (s, &p, NULL);
  }
  int sot_index, n_forced;
  const int n_prompt = build_prompt (s, result->language, with_prefix, &sot_index, &n_forced);
  /* word timestamps: the window's start sequence (SOT up to the prefix),
   * and the per-step capture of greedy steps */
  s->n_sot = e->info.is_multilingual ? 3 : 1;  /* <|startoftranscript|> [language, task] */
  memcpy (s->sot_sequence, s->prompt + sot_index, s->n_sot * sizeof (gint32));
  /* (only greedy steps capture: a beam search's tokens reach the callback
   * after it, their times come from the window's alignment pass) */
  if (s->options.word_timestamps && s->token_func && o->beam_size == 1) {
    if (!s->step_capture)
      s->step_capture = whisper_align_step_capture_new (&e->timing, error);
    if (!s->step_capture)
      goto out;
    whisper_align_step_capture_start (s->step_capture, n_frames);
    s->dec->capture = s->step_capture;
  }
  /* As CTranslate2 counts it: the prompt up to the last task token is
   * the context, that token is the first step's input, and the forced
   * prefix counts as steps; max_length = min(T / 2, T - context) with
   * T = 448 (or prompt + max_new_tokens). The last token is never fed
   * back, so positions stay below n_text_ctx. */
  const int context = n_prompt - n_forced - 1;
  int total = o->max_new_tokens > 0 ? n_prompt + o->max_new_tokens : e->net.n_text_ctx;
  total = MIN (total, e->net.n_text_ctx);
  const int max_steps = MIN (total / 2, total - context);
  const int max_new = max_steps - n_forced;

  /* The prompt pass; the no-speech probability comes from the raw logits
   * at the SOT position. */
  const int rows[2] = { sot_index, n_prompt - 1 };
  const int n_rows = sot_index == n_prompt - 1 ? 1 : 2;
  whisper_decoder_forward (s->dec, &e->net, s->prompt, n_prompt, 0, rows, n_rows);
  s->stats.decode_steps++;
  be->ops->download (be, s->host_logits, s->dec->logits, (size_t) n_rows * V * sizeof (float));
  be->ops->sync (be);
  result->no_speech_prob = whisper_logits_softmax_at (s->host_logits, V, e->info.token_no_speech);
  if (n_rows == 1)
    memcpy (s->host_logits + V, s->host_logits, (size_t) V * sizeof (float));
  memcpy (s->sampled, s->prompt + n_prompt - n_forced, (size_t) n_forced * sizeof (gint32));

  const WhisperLogitExtras extras = { (float) o->repetition_penalty, o->no_repeat_ngram_size,
                                      n_forced > 0 };
  const gboolean plain = whisper_logit_extras_are_plain (&extras);
  const gboolean emit_live = o->n_temperatures == 1;
  gboolean emitted = FALSE;
  int chosen = -1, n_below_cr = 0;
  int attempt_len[WHISPER_MAX_TEMPERATURES];
  double attempt_cum[WHISPER_MAX_TEMPERATURES], attempt_avg[WHISPER_MAX_TEMPERATURES];
  double attempt_ratio[WHISPER_MAX_TEMPERATURES];
  gboolean below_cr[WHISPER_MAX_TEMPERATURES];
  const int stride = e->net.n_text_ctx;
  double temperature = 0.0;

  for (int t = 0; t < o->n_temperatures; t++) {
    temperature = o->temperatures[t];
    gint32 *tokens = s->attempt_tokens + (size_t) t * stride;
    int n_tokens = 0;
    double cum = 0.0;
    if (max_new <= 0) {
      memcpy (tokens, s->sampled, (size_t) n_forced * sizeof (gint32));
      n_tokens = n_forced;
    } else if (t == 0 && temperature == 0.0 && o->beam_size == 1 && plain) {
      if (!greedy_plain (s, n_prompt, n_rows, max_new, window_start, emit_live, &n_tokens, &cum,
                         error))
        goto out;
      memcpy (tokens, s->sampled, (size_t) n_tokens * sizeof (gint32));
      emitted = emit_live;
    } else {
      const WhisperSearch search = {
        .net = &e->net, .dec = s->dec, .config = &s->logit_config, .extras = extras,
        .forced = s->sampled, .n_forced = n_forced, .n_prompt = n_prompt,
        .first_logits = s->host_logits + V, .max_steps = max_steps,
        .beam_size = temperature > 0 ? 1 : o->beam_size,
        .best_of = temperature > 0 ? o->best_of : 1, .patience = o->patience,
        .length_penalty = o->length_penalty, .temperature = temperature, .rand = s->rand,
        .cancelled = &s->cancelled, .decode_steps = &s->stats.decode_steps,
        .step = search_step, .step_data = s,
      };
      WhisperSearchResult r;
      if (!whisper_search_run (&search, s->search, &r, error))
        goto out;
      memcpy (tokens, r.tokens, (size_t) r.n_tokens * sizeof (gint32));
      n_tokens = r.n_tokens;
      cum = r.cum_logprob;
    }
    /* the backend's work of the attempt is done (nothing below is a step's,
     * and the next batch of steps does not wait for this stream) */
    whisper_step_batcher_leave (e->steps, &s->step_member);
    be->ops->sync (be);
    if (!backend_ok (be, error))
      goto out;
    g_autofree char *text = whisper_engine_decode_tokens (e, tokens, n_tokens);
    g_strstrip (text);
    attempt_len[t] = n_tokens;
    attempt_cum[t] = cum;
    attempt_avg[t] = cum / (n_tokens + 1);
    attempt_ratio[t] = compression_ratio (text);
    chosen = t;

    gboolean fallback = FALSE;
    below_cr[t] = !(o->compression_ratio_threshold >= 0 &&
                    attempt_ratio[t] > o->compression_ratio_threshold);
    if (!below_cr[t])
      fallback = TRUE;
    else
      n_below_cr++;
    if (attempt_avg[t] < o->logprob_threshold)
      fallback = TRUE;
    if (o->no_speech_threshold >= 0 && result->no_speech_prob > o->no_speech_threshold &&
        attempt_avg[t] < o->logprob_threshold)
      fallback = FALSE;  /* silence: the no-speech rule decides */
    if (!fallback)
      break;
    if (t + 1 == o->n_temperatures) {
      /* every temperature failed: the most likely of those that are not
       * loops (of all where every one is), with the last temperature */
      chosen = -1;
      for (int k = 0; k <= t; k++)
        if ((n_below_cr == 0 || below_cr[k]) && (chosen < 0 || attempt_avg[k] > attempt_avg[chosen]))
          chosen = k;
    }
  }

  if (chosen > 0 || temperature != o->temperatures[0])
    s->stats.windows_fallback++;
  result->n_sampled = attempt_len[chosen];
  memcpy (s->sampled, s->attempt_tokens + (size_t) chosen * stride,
          (size_t) result->n_sampled * sizeof (gint32));
  result->sum_logprob = attempt_cum[chosen];
  result->avg_logprob = attempt_avg[chosen];
  result->compression_ratio = attempt_ratio[chosen];
  result->temperature = temperature;
  if (!emitted && s->token_func) {
    double segment_time = window_start;
    for (int i = 0; i < result->n_sampled; i++)
      if (!emit_token (s, s->sampled[i], 0.0f, i, window_start, &segment_time)) {
        g_atomic_int_set (&s->cancelled, 1);
        break;
      }
    if (check_cancelled (s, error))
      goto out;
  }
  ok = TRUE;
  s->stats.decoder_seconds += elapsed_since (t0);

out:
  if (s->dec)
    s->dec->capture = NULL;
  whisper_turn_lock_release (&e->net.compute_lock);
  return ok;
}

static gboolean
text_is_blank (const char *text)
{
  for (const char *p = text; *p; p = g_utf8_next_char (p))
    if (!g_unichar_isspace (g_utf8_get_char (p)))
      return FALSE;
  return TRUE;
}

/* TRUE when the text holds a letter or a digit of any script. */
static gboolean
text_has_word_character (const char *text)
{
  for (const char *p = text; *p; p = g_utf8_next_char (p))
    if (g_unichar_isalnum (g_utf8_get_char (p)))
      return TRUE;
  return FALSE;
}

/* The no-speech rule. The reference's (generate_segments() in
 * https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/transcribe.py):
 * the model finds no speech likely (no_speech_prob above the threshold) and
 * the decode was not confident (average log probability at or below
 * logprob_threshold). With strict_no_speech, two more ways for a decode to
 * fail where the model finds no speech likely: its text is a loop (compression ratio above
 * compression_ratio_threshold, the reference's test for a failed decode;
 * 300 s of white noise give one sentence 15 times in a window at
 * no_speech_prob 0.94 and avg_logprob -0.29), or it holds no letter or digit
 * (a tone sequence gives " ." at 0.94). */
static gboolean
window_is_no_speech (const WhisperDecodeOptions *o, double no_speech_prob, double avg_logprob,
                     double ratio, const char *text)
{
  if (o->no_speech_threshold < 0 || !(no_speech_prob > o->no_speech_threshold))
    return FALSE;
  if (!(avg_logprob > o->logprob_threshold))
    return TRUE;
  return o->strict_no_speech &&
         (ratio > o->compression_ratio_threshold || !text_has_word_character (text));
}

static WhisperSegment *
segment_new (WhisperStream *s, const gint32 *tokens, int n, double start, double end,
             const WindowResult *wr, double avg_logprob, double ratio)
{
  WhisperSegment *seg = g_new0 (WhisperSegment, 1);
  seg->start = start;
  seg->end = end;
  seg->tokens = g_memdup2 (tokens, n * sizeof (gint32));
  seg->n_tokens = n;
  seg->text = whisper_engine_decode_tokens (s->engine, tokens, n);
  seg->avg_logprob = avg_logprob;
  seg->no_speech_prob = wr->no_speech_prob;
  seg->compression_ratio = ratio;
  seg->temperature = wr->temperature;
  seg->language = wr->language >= 0 ? whisper_language_code (wr->language) : "en";
  return seg;
}

WhisperSegment *
whisper_segment_copy (const WhisperSegment *src)
{
  WhisperSegment *seg = g_memdup2 (src, sizeof *src);
  seg->text = g_strdup (src->text);
  seg->tokens = g_memdup2 (src->tokens, src->n_tokens * sizeof (gint32));
  seg->words = src->n_words ? g_memdup2 (src->words, src->n_words * sizeof (WhisperWord)) : NULL;
  for (gsize i = 0; i < src->n_words; i++)
    seg->words[i].text = g_strdup (src->words[i].text);
  return seg;
}

typedef struct {
  WhisperSegmentFunc func;
  gpointer data;
  GPtrArray *out;
  gboolean stop;
} SegmentSink;

/* Keeps a segment unless it is empty or has no length (faster-whisper drops
 * those); its tokens join the prompt history. */
static void
deliver_segment (WhisperStream *s, SegmentSink *sink, WhisperSegment *seg)
{
  if (seg->start == seg->end || text_is_blank (seg->text)) {
    whisper_segment_free (seg);
    return;
  }
  g_array_append_vals (s->history, seg->tokens, seg->n_tokens);
  if (sink->func && !sink->func (sink->out ? whisper_segment_copy (seg) : seg, sink->data))
    sink->stop = TRUE;
  if (sink->out)
    g_ptr_array_add (sink->out, seg);
  else if (!sink->func)
    whisper_segment_free (seg);
}

/* Splits the window's tokens at consecutive timestamps (as faster-whisper's
 * generate_segments() does) and
 * returns the number of frames to seek. */
static int
split_segments (WhisperStream *s, GPtrArray *sink, const WindowResult *wr, double time_offset,
                int segment_size, double avg_logprob, double ratio)
{
  const int begin = s->engine->info.token_timestamp_begin;
  const gint32 *tok = s->sampled;
  const int n = wr->n_sampled;
  const gboolean single_ending = n >= 2 && tok[n - 2] < begin && tok[n - 1] >= begin;
  int last_slice = 0;
  gboolean any_consecutive = FALSE;

  for (int i = 1; i <= n; i++) {
    gboolean cut = i < n && tok[i] >= begin && tok[i - 1] >= begin;
    if (i == n && any_consecutive && single_ending)
      cut = TRUE;
    if (!cut)
      continue;
    any_consecutive = TRUE;
    const gint32 *slice = tok + last_slice;
    const int len = i - last_slice;
    const double start = time_offset + (slice[0] - begin) * TIME_PRECISION;
    const double end = time_offset + (slice[len - 1] - begin) * TIME_PRECISION;
    g_ptr_array_add (sink, segment_new (s, slice, len, start, end, wr, avg_logprob, ratio));
    last_slice = i;
  }

  if (any_consecutive) {
    if (single_ending)
      return segment_size;
    return MIN ((tok[last_slice - 1] - begin) * INPUT_STRIDE, segment_size);
  }

  double duration = segment_size / (double) FRAMES_PER_SECOND;
  for (int i = n - 1; i >= 0; i--)
    if (tok[i] >= begin) {
      if (tok[i] != begin)
        duration = (tok[i] - begin) * TIME_PRECISION;
      break;
    }
  g_ptr_array_add (sink, segment_new (s, tok, n, time_offset, time_offset + duration, wr,
                                       avg_logprob, ratio));
  return segment_size;
}

/* Resolves what the options name (language, prompt tokens) and sizes the
 * search, before any window; also checks the options. */
static gboolean
prepare_transcription (WhisperStream *s, GError **error)
{
  WhisperEngine *e = s->engine;
  const WhisperDecodeOptions *o = &s->options;
  if (!whisper_decode_options_check (e, o, error))
    return FALSE;
  const int n_languages = e->info.token_translate - e->info.token_sot - 1;
  int index = -1;
  if (!whisper_language_parse (o->language, n_languages, &index, error))
    return FALSE;
  if (!e->info.is_multilingual) {
    if (!whisper_language_parse ("en", n_languages, &index, error))
      return FALSE;
  }
  if (index >= 0) {
    s->language_index = index;
    s->language_probability = 1.0;
    s->language_detected = TRUE;
  } else if (s->language_detected && s->language_index < 0) {
    s->language_detected = FALSE;
  }
  /* " " + text.strip(), as faster-whisper encodes prompts */
  struct { const char *text; gint32 **ids; gsize *n; } texts[] = {
    { o->hotwords, &s->hotword_tokens, &s->n_hotword_tokens },
    { o->prefix, &s->prefix_tokens, &s->n_prefix_tokens },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (texts); i++) {
    if (!texts[i].text || *texts[i].ids)
      continue;
    g_autofree char *spaced = g_strconcat (" ", texts[i].text, NULL);
    g_strstrip (spaced + 1);
    *texts[i].ids = whisper_engine_encode_text (e, spaced, texts[i].n, error);
    if (!*texts[i].ids)
      return FALSE;
  }
  if (o->initial_prompt && !s->initial_prompt_added && s->history->len == 0) {
    g_autofree char *spaced = g_strconcat (" ", o->initial_prompt, NULL);
    g_strstrip (spaced + 1);
    gsize n;
    g_autofree gint32 *ids = whisper_engine_encode_text (e, spaced, &n, error);
    if (!ids)
      return FALSE;
    g_array_append_vals (s->history, ids, n);
  }
  s->initial_prompt_added = TRUE;
  return ensure_search (s, error);
}

static void
free_segments (GPtrArray *segments)
{
  for (guint i = 0; i < segments->len; i++)
    whisper_segment_free (g_ptr_array_index (segments, i));
  g_ptr_array_set_size (segments, 0);
}

/* The start of every transcription call: the cancel flag cleared, what
 * the options need checked and resolved, and the input boundary
 * (whisper-pcm.h): *pcm is then the sanitised input (*fixed owns it when it
 * is a copy). */
static gboolean
begin_call (WhisperStream *s, const float **pcm, gsize n_samples, float **fixed, GError **error)
{
  g_atomic_int_set (&s->cancelled, 0);
  /* word timestamps need alignment heads (whisper-alignment.h) */
  if (s->options.word_timestamps && !whisper_alignment_heads_check (&s->engine->align_heads, s->engine->model_path, error))
    return FALSE;
  if (n_samples > 0 && !*pcm) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_AUDIO,
                 "no audio buffer given for %zu samples", n_samples);
    return FALSE;
  }
  if (!prepare_transcription (s, error))
    return FALSE;
  WhisperPcmFixes fixes = { 0, 0 };
  *pcm = whisper_pcm_sanitize (*pcm, n_samples, fixed, &fixes);
  s->stats.samples_non_finite += fixes.non_finite;
  s->stats.samples_clipped += fixes.clipped;
  return TRUE;
}

/* Input quieter than the silence threshold, before a transcription that
 * would run the detector over all of it: a silent window, neither the
 * detector nor the model runs (counted as the window loop counts it); TRUE
 * (and no segments) when it is. */
static gboolean
skip_quiet_input (WhisperStream *s, const float *pcm, gsize n_samples, GPtrArray **segments_out)
{
  if (n_samples == 0 ||
      whisper_gate_is_loud_enough (pcm, n_samples, s->options.silence_threshold_db))
    return FALSE;
  s->stats.windows_silent++;
  if (segments_out)
    *segments_out = g_ptr_array_new_with_free_func ((GDestroyNotify) whisper_segment_free);
  return TRUE;
}

gboolean
whisper_stream_transcribe (WhisperStream *s, const float *pcm, gsize n_samples,
                           WhisperSegmentFunc segment_func, gpointer user_data,
                           GPtrArray **segments_out, GError **error)
{
  WhisperEngine *e = s->engine;
  g_autofree float *fixed = NULL;
  if (!begin_call (s, &pcm, n_samples, &fixed, error))
    return FALSE;

  /* faster-whisper's vad_filter (whisper-vad-filter.h): transcribes the
   * speech regions' concatenation by calling back into this function with
   * vad_filter off, then maps the times back. */
  if (s->options.vad_filter && !s->options.clip_timestamps) {
    /* (a live caller decodes every chunk of silence so) */
    if (s->options.vad && skip_quiet_input (s, pcm, n_samples, segments_out))
      return TRUE;
    return whisper_vad_filter_transcribe (s, &s->options, &s->token_func, &s->token_data,
                                          whisper_stream_transcribe, pcm, n_samples,
                                          segment_func, user_data, segments_out, error);
  }

  /* The voice activity detector's speech regions of the whole input
   * (whisper-vad.h): about 0.2 % of real time on one core. */
  g_autoptr (GArray) speech = NULL;
  if (s->options.vad) {
    speech = g_array_new (FALSE, FALSE, sizeof (WhisperVadSpeech));
    if (!whisper_vad_speech_timestamps (s->options.vad, pcm, n_samples, &s->options.vad_options,
                                        speech, error))
      return FALSE;
  }

  SegmentSink sink = { segment_func, user_data, NULL, FALSE };
  s->last_speech_timestamp = 0.0;  /* word timestamps: per call, as the reference */
  if (segments_out)
    sink.out = g_ptr_array_new_with_free_func ((GDestroyNotify) whisper_segment_free);

  gint64 t0 = g_get_monotonic_time ();
  gsize mel_stride;
  g_autofree float *mel = whisper_mel_compute (e->mel, pcm, n_samples, &mel_stride);
  s->stats.mel_seconds += elapsed_since (t0);

  const gsize content_frames = n_samples / WHISPER_HOP_LENGTH;
  s->window_encoder_frames = s->options.encoder_frames > 0 ? s->options.encoder_frames
                                                           : e->net.max_encoder_length;
  const int window_frames = 2 * s->window_encoder_frames;
  gint64 clips[2 * MAX_CLIPS];
  int n_clips = parse_clips (s->options.clip_timestamps, clips, MAX_CLIPS, error);
  if (n_clips < 0)
    return FALSE;
  if (n_clips == 0) {
    clips[0] = 0;
    clips[1] = -1;
    n_clips = 1;
  }
  gboolean ok = TRUE;

  /* The language, when it is to be detected: from the first clip's start. */
  if (!s->language_detected && e->info.is_multilingual && content_frames > 0) {
    const gsize from = (gsize) clips[0] < content_frames ? (gsize) clips[0] : 0;
    const gboolean detected = detect_language (s, mel, mel_stride,
                                               MIN (mel_stride, content_frames + 1), from, error);
    return_decoder (s);
    if (!detected)
      return FALSE;
    s->language_detected = TRUE;
  }

  int clip = 0;
  gsize seek = (gsize) clips[0];
  while (clip < n_clips && !sink.stop) {
    const gsize clip_start = (gsize) clips[2 * clip];
    const gsize clip_end = clips[2 * clip + 1] < 0 || (gsize) clips[2 * clip + 1] > content_frames
                               ? content_frames
                               : (gsize) clips[2 * clip + 1];
    if (seek < clip_start)
      seek = clip_start;
    if (seek >= clip_end) {
      clip++;
      if (clip < n_clips)
        seek = (gsize) clips[2 * clip];
      continue;
    }
    const double time_offset = seek / (double) FRAMES_PER_SECOND;
    const int segment_size = (int) MIN ((gsize) window_frames, MIN (content_frames, clip_end) - seek);
    WindowResult wr;

    /* Silence is not decoded: conditioned on earlier text, the model
     * writes "you" into it and the no-speech rule lets it through. */
    const gsize first_sample = seek * WHISPER_HOP_LENGTH;
    const gsize window_samples =
        MIN ((gsize) segment_size * WHISPER_HOP_LENGTH, n_samples - first_sample);
    if (!whisper_gate_is_loud_enough (pcm + first_sample, window_samples,
                                      s->options.silence_threshold_db)) {
      s->stats.windows_silent++;
      seek += segment_size;
      continue;
    }
    /* Nor is noise in which the detector finds no speech: tones gave
     * "Thank you." at no-speech probability 0.90 and average log
     * probability -0.85, which the no-speech rule keeps. */
    if (speech && !speech_in (speech, first_sample, window_samples)) {
      s->stats.windows_no_voice++;
      seek += segment_size;
      continue;
    }

    /* the prefix goes on the stream's first window, where its audio starts */
    const gboolean with_prefix = seek == 0 && s->windows_since_reset == 0;
    s->windows_since_reset++;
    if (!decode_window (s, mel, mel_stride, seek, segment_size, time_offset, with_prefix, &wr,
                        error)) {
      return_decoder (s);
      ok = FALSE;
      break;
    }
    g_autofree char *text = whisper_engine_decode_tokens (e, s->sampled, wr.n_sampled);
    g_strstrip (text);

    if (window_is_no_speech (&s->options, wr.no_speech_prob, wr.avg_logprob,
                             wr.compression_ratio, text)) {
      return_decoder (s);
      s->stats.windows_no_speech++;
      seek += segment_size;
      continue;
    }
    const gsize previous_seek = seek;
    g_autoptr (GPtrArray) window = g_ptr_array_new ();
    seek += split_segments (s, window, &wr, time_offset, segment_size, wr.avg_logprob,
                            wr.compression_ratio);
    /* ---- word timestamps (whisper-words.h) ---- */
    gboolean skip_window = FALSE;
    guint n_keep = window->len;
    if (s->options.word_timestamps &&
        !whisper_words_window (s->dec, &e->timing, window, s->sampled, wr.n_sampled, s->sot_sequence,
                               s->n_sot,
                               wr.language >= 0 ? whisper_language_code (wr.language) : "en",
                               time_offset, segment_size, previous_seek,
                               content_frames, s->prepend_punctuations,
                               s->append_punctuations,
                               s->options.hallucination_silence_threshold,
                               &s->last_speech_timestamp, &seek, &skip_window, &n_keep,
                               error)) {
      return_decoder (s);
      ok = FALSE;
      free_segments (window);
      break;
    }
    return_decoder (s);
    if (skip_window) {
      free_segments (window);
      continue;
    }
    for (guint i = n_keep; i < window->len; i++)
      whisper_segment_free (g_ptr_array_index (window, i));
    g_ptr_array_set_size (window, MIN (n_keep, window->len));
    /* ---- */
    for (guint i = 0; i < window->len; i++)
      deliver_segment (s, &sink, g_ptr_array_index (window, i));
    if (!s->options.condition_on_previous_text ||
        wr.temperature > s->options.prompt_reset_on_temperature)
      s->prompt_reset_since = s->history->len;
  }

  if (ok && sink.stop) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_CANCELLED,
                 "transcription stopped by the segment callback");
    ok = FALSE;
  }
  if (ok && segments_out)
    *segments_out = g_steal_pointer (&sink.out);
  if (sink.out)
    g_ptr_array_unref (sink.out);
  return ok;
}

/* ---- for whisper-batched.c (whisper-batched.h) ------------------------- */

const WhisperDecodeOptions *
whisper_stream_begin_batched (WhisperStream *s, const float **pcm, gsize n_samples, float **fixed,
                              GPtrArray **segments_out, gboolean *quiet, WhisperEngine **engine,
                              const gint **cancelled, GError **error)
{
  *quiet = FALSE;
  if (!begin_call (s, pcm, n_samples, fixed, error))
    return NULL;
  *quiet = skip_quiet_input (s, *pcm, n_samples, segments_out);
  *engine = s->engine;
  *cancelled = &s->cancelled;
  return &s->options;
}

WhisperStreamStats *
whisper_stream_batched_stats (WhisperStream *s)
{
  return &s->stats;
}

void
whisper_stream_set_batched_language (WhisperStream *s, const char *language, double probability)
{
  const int n_languages = s->engine->info.token_translate - s->engine->info.token_sot - 1;
  int index;
  if (language && whisper_language_parse (language, n_languages, &index, NULL) && index >= 0) {
    s->language_index = index;
    s->language_probability = probability;
  }
}
