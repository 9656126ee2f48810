/* whisper-decode-options.c: WhisperDecodeOptions: the defaults, the check
 * against the engine's model, and the options that users write as text (a
 * temperature list, a token list, clip timestamps), read the way
 * faster-whisper's command-line users write them: "0,0.2,0.4", "-1,123",
 * "0,30". Shared by the command-line program and the element. */
#include "whisper-stream-private.h"

#include <math.h>
#include <string.h>

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
  o->encoder_length = 0;
  o->last_window_once = FALSE;
  o->last_window_by = 0;
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

int
whisper_decode_options_parse_clips (const char *text, gint64 *frames, int max_pairs,
                                    GError **error)
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
  if (o->encoder_length < 0 || o->encoder_length > info->max_encoder_length)
    BAD ("encoder length %d is out of range 0..%d (0: the engine's window)", o->encoder_length,
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
  if (whisper_decode_options_parse_clips (o->clip_timestamps, frames, MAX_CLIPS, error) < 0)
    return FALSE;
#undef BAD
  return TRUE;
}

gboolean
whisper_decode_options_parse_temperatures (WhisperDecodeOptions *o, const char *text,
                                           GError **error)
{
  g_auto (GStrv) parts = g_strsplit (text ? text : "", ",", -1);
  double values[WHISPER_MAX_TEMPERATURES];
  int n = 0;
  for (int i = 0; parts[i]; i++) {
    char *p = g_strstrip (parts[i]), *end = NULL;
    const double t = g_ascii_strtod (p, &end);
    if (!*p || !end || *end || !(t >= 0) || t > 10) {
      g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                   "temperatures \"%s\": \"%s\" is not a temperature from 0 to 10", text, p);
      return FALSE;
    }
    if (n == WHISPER_MAX_TEMPERATURES) {
      g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                   "temperatures \"%s\": more than %d", text, WHISPER_MAX_TEMPERATURES);
      return FALSE;
    }
    values[n++] = t;
  }
  if (n == 0) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "temperatures: the list is empty (give at least one, e.g. \"0\")");
    return FALSE;
  }
  for (int i = 0; i < n; i++)
    o->temperatures[i] = values[i];
  o->n_temperatures = n;
  return TRUE;
}

gboolean
whisper_decode_options_parse_suppress_tokens (WhisperDecodeOptions *o, const char *text,
                                              GArray *ids, GError **error)
{
  g_auto (GStrv) parts = g_strsplit (text ? text : "", ",", -1);
  gboolean non_speech = FALSE;
  g_array_set_size (ids, 0);
  for (int i = 0; parts[i]; i++) {
    char *p = g_strstrip (parts[i]), *end = NULL;
    if (!*p)
      continue;
    const gint64 id = g_ascii_strtoll (p, &end, 10);
    if (!end || *end || id < -1 || id > G_MAXINT32) {
      g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                   "suppressed tokens \"%s\": \"%s\" is not a token id or -1", text, p);
      return FALSE;
    }
    if (id == -1) {
      non_speech = TRUE;
    } else {
      const gint32 v = (gint32) id;
      g_array_append_val (ids, v);
    }
  }
  o->suppress_non_speech = non_speech;
  o->suppress_tokens = ids->len ? (const gint32 *) ids->data : NULL;
  o->n_suppress_tokens = (int) ids->len;
  return TRUE;
}
