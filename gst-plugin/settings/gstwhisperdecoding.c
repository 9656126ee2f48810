/* gstwhisperdecoding.c: whispersink's decoding properties (see
 * gstwhisperdecoding.h). The options are faster-whisper transcribe()'s, of
 * the same names and defaults
 * (https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/transcribe.py),
 * and the engine decodes them token for token as it does
 * (tests/reference/test-parity-options.c). */
#include "settings/gstwhisperdecoding.h"

#include <string.h>

enum {
  P_TASK,
  P_BEAM_SIZE,
  P_BEST_OF,
  P_PATIENCE,
  P_LENGTH_PENALTY,
  P_REPETITION_PENALTY,
  P_NO_REPEAT_NGRAM_SIZE,
  P_TEMPERATURES,
  P_COMPRESSION_RATIO_THRESHOLD,
  P_LOG_PROB_THRESHOLD,
  P_PROMPT_RESET_ON_TEMPERATURE,
  P_INITIAL_PROMPT,
  P_HOTWORDS,
  P_PREFIX,
  P_SUPPRESS_BLANK,
  P_SUPPRESS_TOKENS,
  P_WITHOUT_TIMESTAMPS,
  P_MAX_INITIAL_TIMESTAMP,
  P_MAX_NEW_TOKENS,
  P_LANGUAGE_PER_WINDOW,
  P_LANGUAGE_DETECTION_THRESHOLD,
  P_LANGUAGE_DETECTION_SEGMENTS,
  P_SEED,
  P_LANGUAGE_CODE,
  P_CONDITION_ON_PREVIOUS_TEXT,
  N_PROPS
};

#define FILE_BEAM_SIZE 5
#define FILE_TEMPERATURES "0,0.2,0.4,0.6,0.8,1.0"
#define DEFAULT_LANGUAGE_CODE "auto"

G_DEFINE_ENUM_TYPE (GstWhisperTask, gst_whisper_task,
    G_DEFINE_ENUM_VALUE (WHISPER_TASK_TRANSCRIBE, "transcribe"),
    G_DEFINE_ENUM_VALUE (WHISPER_TASK_TRANSLATE, "translate"))

void
gst_whisper_decoding_init (GstWhisperDecoding *d)
{
  WhisperDecodeOptions o;
  whisper_decode_options_init (&o);
  memset (d, 0, sizeof *d);
  d->task = WHISPER_TASK_TRANSCRIBE;
  d->beam_size = 0;
  d->best_of = o.best_of;
  d->patience = o.patience;
  d->length_penalty = o.length_penalty;
  d->repetition_penalty = o.repetition_penalty;
  d->no_repeat_ngram_size = o.no_repeat_ngram_size;
  d->temperatures = NULL;
  d->compression_ratio_threshold = o.compression_ratio_threshold;
  d->log_prob_threshold = o.logprob_threshold;
  d->prompt_reset_on_temperature = o.prompt_reset_on_temperature;
  d->suppress_blank = o.suppress_blank;
  d->suppress_tokens = g_strdup ("-1");
  d->without_timestamps = o.without_timestamps;
  d->max_initial_timestamp = o.max_initial_timestamp;
  d->max_new_tokens = 0;
  d->language_per_window = FALSE;
  d->language_detection_threshold = o.language_detection_threshold;
  d->language_detection_segments = o.language_detection_segments;
  d->seed = 0;
  d->language_code = g_strdup (DEFAULT_LANGUAGE_CODE);
  d->condition_on_previous_text = TRUE;
}

void
gst_whisper_decoding_copy (GstWhisperDecoding *dst, const GstWhisperDecoding *src)
{
  *dst = *src;
  dst->temperatures = g_strdup (src->temperatures);
  dst->initial_prompt = g_strdup (src->initial_prompt);
  dst->hotwords = g_strdup (src->hotwords);
  dst->prefix = g_strdup (src->prefix);
  dst->suppress_tokens = g_strdup (src->suppress_tokens);
  dst->language_code = g_strdup (src->language_code);
}

void
gst_whisper_decoding_clear (GstWhisperDecoding *d)
{
  g_clear_pointer (&d->temperatures, g_free);
  g_clear_pointer (&d->initial_prompt, g_free);
  g_clear_pointer (&d->hotwords, g_free);
  g_clear_pointer (&d->prefix, g_free);
  g_clear_pointer (&d->suppress_tokens, g_free);
  g_clear_pointer (&d->language_code, g_free);
}

guint
gst_whisper_decoding_install_properties (GObjectClass *klass, guint first)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING;

  g_object_class_install_property (klass, first + P_TASK,
      g_param_spec_enum ("task", "Task",
          "transcribe: text in the language spoken; translate: English text (multilingual "
          "models; an English-only model fails the change to READY)",
          GST_TYPE_WHISPER_TASK, WHISPER_TASK_TRANSCRIBE, rw));
  /**
   * GstWhisperSink:beam-size:
   *
   * Beam search width. 0 (the default) means faster-whisper transcribe()'s
   * beam of 5, for files and live input alike. Live, the uncommitted
   * buffer is decoded again with every chunk (task/gstwhisperlive.c) and a
   * word is committed when two decodes agree on it: beam search makes the
   * decodes of a growing buffer agree sooner and on the right words, so
   * live transcripts have far fewer wrong words than greedy ones
   * (tests/element/live-commit.c measures it). It costs more CPU than
   * greedy decoding; 1 (greedy) keeps more streams on a small machine.
   */
  g_object_class_install_property (klass, first + P_BEAM_SIZE,
      g_param_spec_int ("beam-size", "Beam size",
          "Beam search width (1: greedy; 0: 5)", 0,
          WHISPER_MAX_BEAM, 0, rw));
  g_object_class_install_property (klass, first + P_BEST_OF,
      g_param_spec_int ("best-of", "Best of",
          "Sequences sampled at each temperature above 0; the most likely is kept", 1,
          WHISPER_MAX_BEAM, 5, rw));
  g_object_class_install_property (klass, first + P_PATIENCE,
      g_param_spec_double ("patience", "Patience",
          "Beam search stops after beam-size x patience finished hypotheses", 0.01, 16.0, 1.0,
          rw));
  g_object_class_install_property (klass, first + P_LENGTH_PENALTY,
      g_param_spec_double ("length-penalty", "Length penalty",
          "Hypotheses are ranked by sum of log probabilities / length^length-penalty",
          -100.0, 100.0, 1.0, rw));
  g_object_class_install_property (klass, first + P_REPETITION_PENALTY,
      g_param_spec_double ("repetition-penalty", "Repetition penalty",
          "Penalty of tokens already generated in the window (1: none; above 1 penalises)",
          0.01, 100.0, 1.0, rw));
  g_object_class_install_property (klass, first + P_NO_REPEAT_NGRAM_SIZE,
      g_param_spec_int ("no-repeat-ngram-size", "No-repeat n-gram size",
          "Never repeat an n-gram of this many tokens in a window (0: off)", 0, 448, 0, rw));
  /**
   * GstWhisperSink:temperatures:
   *
   * Temperature fallback, as faster-whisper's: a window is decoded at the
   * first temperature (0: beam search or greedy), and again at the next
   * (sampling best-of sequences, seeded by the seed property) whenever its
   * text is a loop (compression ratio above compression-ratio-threshold) or
   * unlikely (average log probability below log-prob-threshold) and the
   * window is not silence; when all fail, the most likely result that is
   * not a loop is kept. Unset: "0,0.2,0.4,0.6,0.8,1.0" for files and "0"
   * for live input, where a second decode of a window would not fit the
   * latency budget. With more than one temperature, a window's words are
   * output once its final result is known.
   */
  g_object_class_install_property (klass, first + P_TEMPERATURES,
      g_param_spec_string ("temperatures", "Temperatures",
          "Comma-separated temperatures tried in turn when a window fails (unset: "
          FILE_TEMPERATURES " for files, 0 live)", NULL, rw));
  g_object_class_install_property (klass, first + P_COMPRESSION_RATIO_THRESHOLD,
      g_param_spec_double ("compression-ratio-threshold", "Compression ratio threshold",
          "A window whose text compresses better than this (zlib) is a loop and falls back "
          "(negative: never)", -1.0, 100.0, 2.4, rw));
  g_object_class_install_property (klass, first + P_LOG_PROB_THRESHOLD,
      g_param_spec_double ("log-prob-threshold", "Log probability threshold",
          "A window whose average log probability is below this falls back", -1000.0, 0.0,
          -1.0, rw));
  g_object_class_install_property (klass, first + P_PROMPT_RESET_ON_TEMPERATURE,
      g_param_spec_double ("prompt-reset-on-temperature", "Prompt reset on temperature",
          "After a window decoded at a temperature above this, the next is not conditioned "
          "on the text before", 0.0, 10.0, 0.5, rw));
  g_object_class_install_property (klass, first + P_INITIAL_PROMPT,
      g_param_spec_string ("initial-prompt", "Initial prompt",
          "Text given to the model before the first window (vocabulary, spelling, style); "
          "it applies from the next stream start", NULL, rw));
  g_object_class_install_property (klass, first + P_HOTWORDS,
      g_param_spec_string ("hotwords", "Hotwords",
          "Hint words given to the model before every window (names, product words)", NULL,
          rw));
  g_object_class_install_property (klass, first + P_PREFIX,
      g_param_spec_string ("prefix", "Prefix",
          "Text the stream's first window is forced to start with", NULL, rw));
  g_object_class_install_property (klass, first + P_SUPPRESS_BLANK,
      g_param_spec_boolean ("suppress-blank", "Suppress blank",
          "Never start a window with a blank or the end of text", TRUE, rw));
  g_object_class_install_property (klass, first + P_SUPPRESS_TOKENS,
      g_param_spec_string ("suppress-tokens", "Suppress tokens",
          "Comma-separated token ids never sampled; -1 is the non-speech symbols; \"\" none",
          "-1", rw));
  g_object_class_install_property (klass, first + P_WITHOUT_TIMESTAMPS,
      g_param_spec_boolean ("without-timestamps", "Without timestamps",
          "Sample text tokens only: one item per window", FALSE, rw));
  g_object_class_install_property (klass, first + P_MAX_INITIAL_TIMESTAMP,
      g_param_spec_double ("max-initial-timestamp", "Maximum initial timestamp",
          "A window's text starts at most this many seconds into it (negative: no limit)",
          -1.0, 30.0, 1.0, rw));
  g_object_class_install_property (klass, first + P_MAX_NEW_TOKENS,
      g_param_spec_int ("max-new-tokens", "Maximum new tokens",
          "At most this many tokens per window (0: the model's limit)", 0, 448, 0, rw));
  g_object_class_install_property (klass, first + P_LANGUAGE_PER_WINDOW,
      g_param_spec_boolean ("language-per-window", "Language per window",
          "With language-code=auto, detect the language of every window (mixed-language "
          "speech) instead of once at the start", FALSE, rw));
  g_object_class_install_property (klass, first + P_LANGUAGE_DETECTION_THRESHOLD,
      g_param_spec_double ("language-detection-threshold", "Language detection threshold",
          "A window decides the language when its most likely one is more probable than this",
          0.0, 1.0, 0.5, rw));
  g_object_class_install_property (klass, first + P_LANGUAGE_DETECTION_SEGMENTS,
      g_param_spec_int ("language-detection-segments", "Language detection segments",
          "Windows looked at to detect the language (the most frequent wins when none "
          "decides)", 1, 1000, 1, rw));
  g_object_class_install_property (klass, first + P_SEED,
      g_param_spec_uint ("seed", "Seed",
          "Seed of the sampling at temperatures above 0 (results repeat with the same seed)",
          0, G_MAXUINT32, 0, rw));
  g_object_class_install_property (klass, first + P_LANGUAGE_CODE,
      g_param_spec_string ("language-code", "Language code",
          "Language of the speech: a Whisper language as a BCP 47 tag, ISO 639 code or "
          "English name (\"de\", \"de-DE\", \"de_DE\", \"deu\", \"German\"), or \"auto\" to "
          "detect it (multilingual models; English-only ones decode English). A language the "
          "model lacks fails the change to READY, or posts a warning and is ignored when set "
          "later",
          DEFAULT_LANGUAGE_CODE, rw));
  /**
   * GstWhisperSink:condition-on-previous-text:
   *
   * Whether each 30-s window of a file is decoded with the text of the
   * previous windows as its prompt (faster-whisper's
   * condition_on_previous_text, on by default there and here). The prompt
   * helps spelling and punctuation stay consistent, but once the model
   * falls into a repetition loop the loop is in the prompt of the next
   * window too, and on long files of repeated speech the conditioned
   * transcript skips sentences and repeats one for tens of seconds where the
   * unconditioned one does not (compare whisper-transcribe with and without
   * --no-condition). Live input: see live-prompt.
   */
  g_object_class_install_property (klass, first + P_CONDITION_ON_PREVIOUS_TEXT,
      g_param_spec_boolean ("condition-on-previous-text", "Condition on previous text",
          "Decode each window with the previous windows' text as prompt; off stops "
          "repetition loops from carrying over (files only)", TRUE,
          rw));
  return first + N_PROPS;
}

/* NULL when `text` is a valid value of the string property, else why not. */
static gchar *
check_list (guint p, const gchar *text)
{
  WhisperDecodeOptions o;
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  whisper_decode_options_init (&o);
  if (p == P_TEMPERATURES && text && !whisper_decode_options_parse_temperatures (&o, text, &error))
    return g_strdup_printf ("temperatures: %s", error->message);
  if (p == P_SUPPRESS_TOKENS && !whisper_decode_options_parse_suppress_tokens (&o, text, ids,
          &error))
    return g_strdup_printf ("suppress-tokens: %s", error->message);
  return NULL;
}

/* NULL when the engine can decode `code` (with `task`), else why not.
 * Without an engine, only whether it is a Whisper language at all. */
static gchar *
language_problem (WhisperEngine *engine, const gchar *code, WhisperTask task)
{
  g_autoptr (GError) error = NULL;
  if (engine) {
    WhisperDecodeOptions o;
    whisper_decode_options_init (&o);
    o.language = code;
    o.task = task;
    if (!whisper_decode_options_check (engine, &o, &error))
      return g_strdup (error->message);
    return NULL;
  }
  int index;
  if (!whisper_language_parse (code, WHISPER_N_LANGUAGES_MAX, &index, &error))
    return g_strdup (error->message);
  return NULL;
}

gchar *
gst_whisper_decoding_check_language (const GstWhisperDecoding *d, WhisperEngine *engine)
{
  return language_problem (engine, d->language_code, d->task);
}

gboolean
gst_whisper_decoding_set_property (GstWhisperDecoding *d, guint prop_id, guint first,
    const GValue *value, WhisperEngine *engine, gchar **problem)
{
  if (prop_id < first || prop_id >= first + N_PROPS)
    return FALSE;
  const guint p = prop_id - first;
  *problem = NULL;
  switch (p) {
    case P_TASK: d->task = g_value_get_enum (value); break;
    case P_BEAM_SIZE: d->beam_size = g_value_get_int (value); break;
    case P_BEST_OF: d->best_of = g_value_get_int (value); break;
    case P_PATIENCE: d->patience = g_value_get_double (value); break;
    case P_LENGTH_PENALTY: d->length_penalty = g_value_get_double (value); break;
    case P_REPETITION_PENALTY: d->repetition_penalty = g_value_get_double (value); break;
    case P_NO_REPEAT_NGRAM_SIZE: d->no_repeat_ngram_size = g_value_get_int (value); break;
    case P_COMPRESSION_RATIO_THRESHOLD:
      d->compression_ratio_threshold = g_value_get_double (value);
      break;
    case P_LOG_PROB_THRESHOLD: d->log_prob_threshold = g_value_get_double (value); break;
    case P_PROMPT_RESET_ON_TEMPERATURE:
      d->prompt_reset_on_temperature = g_value_get_double (value);
      break;
    case P_SUPPRESS_BLANK: d->suppress_blank = g_value_get_boolean (value); break;
    case P_WITHOUT_TIMESTAMPS: d->without_timestamps = g_value_get_boolean (value); break;
    case P_MAX_INITIAL_TIMESTAMP: d->max_initial_timestamp = g_value_get_double (value); break;
    case P_MAX_NEW_TOKENS: d->max_new_tokens = g_value_get_int (value); break;
    case P_LANGUAGE_PER_WINDOW: d->language_per_window = g_value_get_boolean (value); break;
    case P_LANGUAGE_DETECTION_THRESHOLD:
      d->language_detection_threshold = g_value_get_double (value);
      break;
    case P_LANGUAGE_DETECTION_SEGMENTS:
      d->language_detection_segments = g_value_get_int (value);
      break;
    case P_SEED: d->seed = g_value_get_uint (value); break;
    case P_CONDITION_ON_PREVIOUS_TEXT:
      d->condition_on_previous_text = g_value_get_boolean (value);
      break;
    case P_LANGUAGE_CODE: {
      /* transcriberbin sets it while PLAYING: checked now, against the
       * engine's model once there is one */
      const gchar *code = g_value_get_string (value);
      *problem = language_problem (engine, code, d->task);
      if (*problem)
        break;
      g_free (d->language_code);
      d->language_code = g_strdup (code);
      break;
    }
    case P_TEMPERATURES:
    case P_SUPPRESS_TOKENS: {
      const gchar *text = g_value_get_string (value);
      if (p == P_SUPPRESS_TOKENS && !text)
        text = "";
      *problem = check_list (p, text);
      if (*problem)
        break;
      gchar **field = p == P_TEMPERATURES ? &d->temperatures : &d->suppress_tokens;
      g_free (*field);
      *field = g_strdup (text);
      break;
    }
    case P_INITIAL_PROMPT:
    case P_HOTWORDS:
    case P_PREFIX: {
      gchar **field = p == P_INITIAL_PROMPT ? &d->initial_prompt
          : p == P_HOTWORDS ? &d->hotwords : &d->prefix;
      const gchar *text = g_value_get_string (value);
      if (text && !g_utf8_validate (text, -1, NULL)) {
        *problem = g_strdup_printf ("%s: the text is not valid UTF-8",
            p == P_INITIAL_PROMPT ? "initial-prompt" : p == P_HOTWORDS ? "hotwords" : "prefix");
        break;
      }
      g_free (*field);
      *field = text && *text ? g_strdup (text) : NULL;
      break;
    }
  }
  return TRUE;
}

gboolean
gst_whisper_decoding_get_property (const GstWhisperDecoding *d, guint prop_id, guint first,
    GValue *value)
{
  if (prop_id < first || prop_id >= first + N_PROPS)
    return FALSE;
  switch (prop_id - first) {
    case P_TASK: g_value_set_enum (value, d->task); break;
    case P_BEAM_SIZE: g_value_set_int (value, d->beam_size); break;
    case P_BEST_OF: g_value_set_int (value, d->best_of); break;
    case P_PATIENCE: g_value_set_double (value, d->patience); break;
    case P_LENGTH_PENALTY: g_value_set_double (value, d->length_penalty); break;
    case P_REPETITION_PENALTY: g_value_set_double (value, d->repetition_penalty); break;
    case P_NO_REPEAT_NGRAM_SIZE: g_value_set_int (value, d->no_repeat_ngram_size); break;
    case P_TEMPERATURES: g_value_set_string (value, d->temperatures); break;
    case P_COMPRESSION_RATIO_THRESHOLD:
      g_value_set_double (value, d->compression_ratio_threshold);
      break;
    case P_LOG_PROB_THRESHOLD: g_value_set_double (value, d->log_prob_threshold); break;
    case P_PROMPT_RESET_ON_TEMPERATURE:
      g_value_set_double (value, d->prompt_reset_on_temperature);
      break;
    case P_INITIAL_PROMPT: g_value_set_string (value, d->initial_prompt); break;
    case P_HOTWORDS: g_value_set_string (value, d->hotwords); break;
    case P_PREFIX: g_value_set_string (value, d->prefix); break;
    case P_SUPPRESS_BLANK: g_value_set_boolean (value, d->suppress_blank); break;
    case P_SUPPRESS_TOKENS: g_value_set_string (value, d->suppress_tokens); break;
    case P_WITHOUT_TIMESTAMPS: g_value_set_boolean (value, d->without_timestamps); break;
    case P_MAX_INITIAL_TIMESTAMP: g_value_set_double (value, d->max_initial_timestamp); break;
    case P_MAX_NEW_TOKENS: g_value_set_int (value, d->max_new_tokens); break;
    case P_LANGUAGE_PER_WINDOW: g_value_set_boolean (value, d->language_per_window); break;
    case P_LANGUAGE_DETECTION_THRESHOLD:
      g_value_set_double (value, d->language_detection_threshold);
      break;
    case P_LANGUAGE_DETECTION_SEGMENTS:
      g_value_set_int (value, d->language_detection_segments);
      break;
    case P_SEED: g_value_set_uint (value, d->seed); break;
    case P_LANGUAGE_CODE: g_value_set_string (value, d->language_code); break;
    case P_CONDITION_ON_PREVIOUS_TEXT:
      g_value_set_boolean (value, d->condition_on_previous_text);
      break;
  }
  return TRUE;
}

void
gst_whisper_decoding_fill (const GstWhisperDecoding *d, gboolean live, WhisperDecodeOptions *o,
    GArray *suppress)
{
  o->language = d->language_code;
  o->condition_on_previous_text = d->condition_on_previous_text;
  o->task = d->task;
  o->beam_size = d->beam_size > 0 ? d->beam_size : FILE_BEAM_SIZE;
  o->best_of = d->best_of;
  o->patience = d->patience;
  o->length_penalty = d->length_penalty;
  o->repetition_penalty = d->repetition_penalty;
  o->no_repeat_ngram_size = d->no_repeat_ngram_size;
  /* both lists were checked when set */
  if (!whisper_decode_options_parse_temperatures (o,
          d->temperatures ? d->temperatures : live ? "0" : FILE_TEMPERATURES, NULL))
    o->n_temperatures = 1;
  if (!whisper_decode_options_parse_suppress_tokens (o, d->suppress_tokens, suppress, NULL))
    o->suppress_non_speech = TRUE;
  o->compression_ratio_threshold = d->compression_ratio_threshold;
  o->logprob_threshold = d->log_prob_threshold;
  o->prompt_reset_on_temperature = d->prompt_reset_on_temperature;
  o->initial_prompt = d->initial_prompt;
  o->hotwords = d->hotwords;
  o->prefix = d->prefix;
  o->suppress_blank = d->suppress_blank;
  o->without_timestamps = d->without_timestamps;
  o->max_initial_timestamp = d->max_initial_timestamp;
  o->max_new_tokens = d->max_new_tokens;
  o->detect_language_per_window = d->language_per_window;
  o->language_detection_threshold = d->language_detection_threshold;
  o->language_detection_segments = d->language_detection_segments;
  o->seed = d->seed;
}
