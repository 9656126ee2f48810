/* whisper-cli.c: whisper-transcribe, the engine's command-line program:
 * audio file in, timestamped segments out. */
#include <whisper/whisper.h>

#include <sys/resource.h>

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static char *opt_model;
static char *opt_device = "auto";
static char *opt_precision = "exact";
static int opt_threads;
static int opt_max_encoder_length;
static int opt_channel = -1;
static char *opt_dump_pcm;
static char *opt_format = "segments";
static gboolean opt_stats;

/* The process's peak resident set so far, in KiB (getrusage's ru_maxrss). */
static long
peak_rss_kib (void)
{
  struct rusage usage;
  return getrusage (RUSAGE_SELF, &usage) == 0 ? usage.ru_maxrss : -1;
}
static int opt_warmup;
static int opt_batch_size;
static gboolean opt_no_condition;
static double opt_no_speech_threshold = 0.6;
static double opt_silence_threshold = WHISPER_DEFAULT_SILENCE_THRESHOLD_DB;
static gboolean opt_reference_rules;
static char *opt_vad_model;
static gboolean opt_no_vad;
/* decoding: faster-whisper transcribe()'s defaults */
static char *opt_language;
static char *opt_task = "transcribe";
static int opt_beam_size = 5;
static int opt_best_of = 5;
static double opt_patience = 1.0;
static double opt_length_penalty = 1.0;
static double opt_repetition_penalty = 1.0;
static int opt_no_repeat_ngram_size;
static char *opt_temperature = "0,0.2,0.4,0.6,0.8,1.0";
static double opt_compression_ratio_threshold = 2.4;
static double opt_log_prob_threshold = -1.0;
static double opt_prompt_reset_on_temperature = 0.5;
static char *opt_initial_prompt;
static char *opt_hotwords;
static char *opt_prefix;
static gboolean opt_no_suppress_blank;
static char *opt_suppress_tokens = "-1";
static gboolean opt_without_timestamps;
static double opt_max_initial_timestamp = 1.0;
static int opt_max_new_tokens;
static char *opt_clip_timestamps;
static gboolean opt_multilingual;
static double opt_language_detection_threshold = 0.5;
static int opt_language_detection_segments = 1;
static int opt_seed;
static gboolean opt_greedy;
static gboolean opt_word_timestamps;
static char *opt_alignment_heads;
static double opt_hallucination_silence = -1.0;

/* The whole file, window after window or (--batch-size) in pieces at once. */
static gboolean
transcribe (WhisperStream *stream, const float *pcm, gsize n, GPtrArray **segments,
            GError **error)
{
  if (opt_batch_size > 0)
    return whisper_stream_transcribe_batched (stream, opt_batch_size, pcm, n, NULL, NULL,
                                              segments, error);
  return whisper_stream_transcribe (stream, pcm, n, NULL, NULL, segments, error);
}

static GOptionEntry entries[] = {
  { "model", 'm', 0, G_OPTION_ARG_FILENAME, &opt_model,
    "CTranslate2 model directory or whisper.cpp ggml file (default: the installed tiny.en)", "PATH" },
  { "device", 'd', 0, G_OPTION_ARG_STRING, &opt_device, "auto, cpu or cuda (default auto)", "DEV" },
  { "threads", 't', 0, G_OPTION_ARG_INT, &opt_threads, "CPU threads (default: every core)", "N" },
  { "precision", 0, 0, G_OPTION_ARG_STRING, &opt_precision,
    "CPU matrix products: exact (float32, faster-whisper float32's tokens; default), "
    "int8 (weights quantized at load, as faster-whisper's int8), bfloat16 (encoder and "
    "prompt passes in bfloat16 on oneDNN: AMX or AVX512-BF16; with AMX, decode steps too) "
    "or fast (bfloat16 where the CPU has it, else int8)", "P" },
  { "encoder-context", 0, 0, G_OPTION_ARG_INT, &opt_max_encoder_length,
    "encoder frames per window, 1..1500 (default: the model's; shorter is faster)", "N" },
  { "channel", 'c', 0, G_OPTION_ARG_INT, &opt_channel,
    "take this channel (0 = left) instead of mixing all to mono", "N" },
  { "dump-pcm", 0, 0, G_OPTION_ARG_FILENAME, &opt_dump_pcm,
    "write the 16-kHz mono float32 samples to FILE and exit", "FILE" },
  { "format", 'f', 0, G_OPTION_ARG_STRING, &opt_format,
    "segments, text, srt, json or srt-words (one cue per word; implies --word-timestamps)",
    "FMT" },
  { "word-timestamps", 'w', 0, G_OPTION_ARG_NONE, &opt_word_timestamps,
    "time every word (faster-whisper's word_timestamps=True): words in json, srt-words", NULL },
  { "alignment-heads", 0, 0, G_OPTION_ARG_STRING, &opt_alignment_heads,
    "cross-attention heads for word times, \"layer,head;...\" (default: the model's)", "LIST" },
  { "hallucination-silence-threshold", 0, 0, G_OPTION_ARG_DOUBLE, &opt_hallucination_silence,
    "with word timestamps: skip silence longer than this many seconds around a possible "
    "hallucination (default: off)", "S" },
  { "no-condition", 0, 0, G_OPTION_ARG_NONE, &opt_no_condition,
    "do not condition each window on the previous text", NULL },
  { "no-speech-threshold", 0, 0, G_OPTION_ARG_DOUBLE, &opt_no_speech_threshold,
    "skip windows whose no-speech probability exceeds this (default 0.6; < 0: never)", "P" },
  { "silence-threshold", 0, 0, G_OPTION_ARG_DOUBLE, &opt_silence_threshold,
    "skip windows whose loudest 20-ms frame is below this level, dBFS (default -60; "
    "-150 or less: decode every window)", "DB" },
  { "vad-model", 0, 0, G_OPTION_ARG_FILENAME, &opt_vad_model,
    "Silero VAD weights (default: the installed silero-vad, tools/fetch-model.sh silero-vad): "
    "windows in which it finds no speech are not decoded", "PATH" },
  { "no-vad", 0, 0, G_OPTION_ARG_NONE, &opt_no_vad,
    "do not use the voice activity detector", NULL },
  { "reference-rules", 0, 0, G_OPTION_ARG_NONE, &opt_reference_rules,
    "the reference implementation's rules only (faster-whisper's greedy tokens): no silence "
    "threshold, and a window likely silent is skipped only when its decode is not confident, "
    "not also when it is a loop or has no letter or digit", NULL },
  { "language", 'l', 0, G_OPTION_ARG_STRING, &opt_language,
    "language spoken: a Whisper language (de, de-DE, deu, German, ...) or auto (default: "
    "detected on multilingual models, English on English-only ones)", "LANG" },
  { "task", 0, 0, G_OPTION_ARG_STRING, &opt_task,
    "transcribe (default) or translate (to English; multilingual models)", "TASK" },
  { "beam-size", 'b', 0, G_OPTION_ARG_INT, &opt_beam_size, "beam size (default 5; 1: greedy)",
    "N" },
  { "best-of", 0, 0, G_OPTION_ARG_INT, &opt_best_of,
    "sequences sampled at a temperature above 0 (default 5)", "N" },
  { "patience", 0, 0, G_OPTION_ARG_DOUBLE, &opt_patience, "beam search patience (default 1)", "P" },
  { "length-penalty", 0, 0, G_OPTION_ARG_DOUBLE, &opt_length_penalty,
    "hypotheses score sum / length^P (default 1)", "P" },
  { "repetition-penalty", 0, 0, G_OPTION_ARG_DOUBLE, &opt_repetition_penalty,
    "penalty of tokens already generated (default 1: none; > 1 penalises)", "P" },
  { "no-repeat-ngram-size", 0, 0, G_OPTION_ARG_INT, &opt_no_repeat_ngram_size,
    "never repeat an n-gram of this size (default 0: off)", "N" },
  { "temperature", 0, 0, G_OPTION_ARG_STRING, &opt_temperature,
    "temperatures tried in turn when a window fails (default 0,0.2,0.4,0.6,0.8,1.0)", "LIST" },
  { "compression-ratio-threshold", 0, 0, G_OPTION_ARG_DOUBLE, &opt_compression_ratio_threshold,
    "a window whose text compresses better than this failed (default 2.4; < 0: off)", "R" },
  { "log-prob-threshold", 0, 0, G_OPTION_ARG_DOUBLE, &opt_log_prob_threshold,
    "a window whose average log probability is below this failed (default -1)", "L" },
  { "prompt-reset-on-temperature", 0, 0, G_OPTION_ARG_DOUBLE, &opt_prompt_reset_on_temperature,
    "forget the previous text after a window decoded hotter than this (default 0.5)", "T" },
  { "initial-prompt", 0, 0, G_OPTION_ARG_STRING, &opt_initial_prompt,
    "text that comes before the first window (style, spelling of names)", "TEXT" },
  { "hotwords", 0, 0, G_OPTION_ARG_STRING, &opt_hotwords,
    "hint words given before every window (not with --prefix)", "TEXT" },
  { "prefix", 0, 0, G_OPTION_ARG_STRING, &opt_prefix,
    "text the first window starts with", "TEXT" },
  { "no-suppress-blank", 0, 0, G_OPTION_ARG_NONE, &opt_no_suppress_blank,
    "allow a blank or EOT as a window's first token", NULL },
  { "suppress-tokens", 0, 0, G_OPTION_ARG_STRING, &opt_suppress_tokens,
    "token ids never sampled, -1 for the non-speech symbols (default -1; \"\": none)", "LIST" },
  { "without-timestamps", 0, 0, G_OPTION_ARG_NONE, &opt_without_timestamps,
    "sample text tokens only (one segment per window)", NULL },
  { "max-initial-timestamp", 0, 0, G_OPTION_ARG_DOUBLE, &opt_max_initial_timestamp,
    "a window's first timestamp is at most this, seconds (default 1)", "S" },
  { "max-new-tokens", 0, 0, G_OPTION_ARG_INT, &opt_max_new_tokens,
    "at most this many new tokens per window (default: the model's limit)", "N" },
  { "clip-timestamps", 0, 0, G_OPTION_ARG_STRING, &opt_clip_timestamps,
    "only these parts: start,end,start,end,... seconds (the last end defaults to the end)",
    "LIST" },
  { "multilingual", 0, 0, G_OPTION_ARG_NONE, &opt_multilingual,
    "detect the language of every window", NULL },
  { "language-detection-threshold", 0, 0, G_OPTION_ARG_DOUBLE, &opt_language_detection_threshold,
    "a window decides the language when its top one is more likely than this (default 0.5)",
    "P" },
  { "language-detection-segments", 0, 0, G_OPTION_ARG_INT, &opt_language_detection_segments,
    "windows looked at to detect the language (default 1)", "N" },
  { "seed", 0, 0, G_OPTION_ARG_INT, &opt_seed, "seed of the sampling at temperature > 0 "
    "(default 0)", "N" },
  { "greedy", 'g', 0, G_OPTION_ARG_NONE, &opt_greedy,
    "greedy decoding at temperature 0 only (= --beam-size 1 --temperature 0): faster", NULL },
  { "stats", 's', 0, G_OPTION_ARG_NONE, &opt_stats, "print timings to stderr", NULL },
  { "warmup", 0, 0, G_OPTION_ARG_INT, &opt_warmup,
    "first transcribe the file N times untimed on the same engine, as a running pipeline or "
    "server is warm (for benchmarks; --stats then covers the last run only)", "N" },
  { "batch-size", 0, 0, G_OPTION_ARG_INT, &opt_batch_size,
    "cut the audio where the voice activity detector finds no speech and decode N pieces of "
    "up to 30 s at a time, as faster-whisper's BatchedInferencePipeline (no piece is "
    "conditioned on the text before it); default 0: one window after the other", "N" },
  { NULL }
};

/* --vad-filter and faster-whisper's VadOptions (whisper_vad_options_init()'s
 * defaults, those WhisperModel.transcribe(vad_filter=True) uses); the
 * VadOptions flags also set the options of the VAD gate. */
static gboolean opt_vad_filter;
static double opt_vad_threshold = 0.5;
static double opt_vad_neg_threshold = -1.0;
static int opt_vad_min_speech_ms = 0;
static double opt_vad_max_speech_s = INFINITY;
/* G_MININT: not given (2000, or 160 with --batch-size: the defaults of
 * WhisperModel.transcribe() and of BatchedInferencePipeline.transcribe()) */
static int opt_vad_min_silence_ms = G_MININT;
static int opt_vad_speech_pad_ms = 400;

static GOptionEntry vad_filter_entries[] = {
  { "vad-filter", 0, 0, G_OPTION_ARG_NONE, &opt_vad_filter,
    "faster-whisper's vad_filter: transcribe only the speech the voice activity detector "
    "finds (cut out, joined, times mapped back); needs the detector (--vad-model)", NULL },
  { "vad-threshold", 0, 0, G_OPTION_ARG_DOUBLE, &opt_vad_threshold,
    "speech probability from which a 32-ms chunk is speech (default 0.5)", "P" },
  { "vad-neg-threshold", 0, 0, G_OPTION_ARG_DOUBLE, &opt_vad_neg_threshold,
    "probability below which speech ends (default: threshold - 0.15, at least 0.01)", "P" },
  { "vad-min-speech-ms", 0, 0, G_OPTION_ARG_INT, &opt_vad_min_speech_ms,
    "drop speech shorter than this (default 0)", "MS" },
  { "vad-max-speech-s", 0, 0, G_OPTION_ARG_DOUBLE, &opt_vad_max_speech_s,
    "split speech longer than this (default inf)", "S" },
  { "vad-min-silence-ms", 0, 0, G_OPTION_ARG_INT, &opt_vad_min_silence_ms,
    "silence that ends speech (default 2000; 160 with --batch-size, as faster-whisper's "
    "batched pipeline)", "MS" },
  { "vad-speech-pad-ms", 0, 0, G_OPTION_ARG_INT, &opt_vad_speech_pad_ms,
    "padding added to each side of speech (default 400)", "MS" },
  { NULL }
};

static void
add_vad_filter_group (GOptionContext *ctx)
{
  GOptionGroup *group = g_option_group_new ("vad", "Voice activity detection (VAD) options:",
                                            "Show the VAD filter options", NULL, NULL);
  g_option_group_add_entries (group, vad_filter_entries);
  g_option_context_add_group (ctx, group);
}

/* The VAD options into `decode`; FALSE with a message naming the flag when
 * the filter has no detector. */
static gboolean
apply_vad_filter_options (WhisperDecodeOptions *decode, const WhisperVad *vad)
{
  decode->vad_options.threshold = opt_vad_threshold;
  decode->vad_options.neg_threshold = opt_vad_neg_threshold;
  decode->vad_options.min_speech_duration_ms = opt_vad_min_speech_ms;
  decode->vad_options.max_speech_duration_s = opt_vad_max_speech_s;
  decode->vad_options.min_silence_duration_ms =
      opt_vad_min_silence_ms != G_MININT ? opt_vad_min_silence_ms : opt_batch_size > 0 ? 160 : 2000;
  decode->vad_options.speech_pad_ms = opt_vad_speech_pad_ms;
  /* checked now (no probabilities: only the options are looked at) */
  g_autoptr (GArray) none = g_array_new (FALSE, FALSE, sizeof (WhisperVadSpeech));
  g_autoptr (GError) error = NULL;
  if (!whisper_vad_speech_from_probabilities (NULL, 0, 0, &decode->vad_options, none, &error)) {
    g_printerr ("whisper-transcribe: the --vad-* flags: %s\n", error->message);
    return FALSE;
  }
  if (!opt_vad_filter)
    return TRUE;
  if (opt_no_vad) {
    g_printerr ("whisper-transcribe: --vad-filter needs the voice activity detector, which "
                "--no-vad turns off\n");
    return FALSE;
  }
  if (!vad) {
    g_printerr ("whisper-transcribe: --vad-filter: no voice activity detector could be loaded "
                "(see the note above; tools/fetch-model.sh silero-vad installs it)\n");
    return FALSE;
  }
  if (opt_clip_timestamps)
    g_printerr ("whisper-transcribe: note: --vad-filter is ignored with --clip-timestamps, "
                "as faster-whisper ignores it\n");
  decode->vad_filter = TRUE;
  decode->vad = vad;
  return TRUE;
}

static gboolean
parse_device (const char *name, WhisperDevice *device, GError **error)
{
  if (g_str_equal (name, "auto"))
    *device = WHISPER_DEVICE_AUTO;
  else if (g_str_equal (name, "cpu"))
    *device = WHISPER_DEVICE_CPU;
  else if (g_str_equal (name, "cuda"))
    *device = WHISPER_DEVICE_CUDA;
  else {
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                 "--device: '%s' is not one of auto, cpu, cuda", name);
    return FALSE;
  }
  return TRUE;
}

static gboolean
parse_precision (const char *name, WhisperPrecision *precision, GError **error)
{
  if (g_str_equal (name, "exact"))
    *precision = WHISPER_PRECISION_EXACT;
  else if (g_str_equal (name, "fast"))
    *precision = WHISPER_PRECISION_FAST;
  else if (g_str_equal (name, "int8"))
    *precision = WHISPER_PRECISION_INT8;
  else if (g_str_equal (name, "bfloat16"))
    *precision = WHISPER_PRECISION_BFLOAT16;
  else {
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                 "--precision: '%s' is not one of exact, int8, bfloat16, fast", name);
    return FALSE;
  }
  return TRUE;
}

static void
format_time (char *buf, gsize size, double t, char sep)
{
  const gint64 ms = (gint64) (t * 1000.0 + 0.5);
  g_snprintf (buf, size, "%02d:%02d:%02d%c%03d", (int) (ms / 3600000), (int) (ms / 60000 % 60),
              (int) (ms / 1000 % 60), sep, (int) (ms % 1000));
}

static void
print_json_string (const char *s)
{
  g_autoptr (GString) out = g_string_new ("\"");
  for (const char *p = s; *p; p++) {
    if (*p == '"' || *p == '\\')
      g_string_append_printf (out, "\\%c", *p);
    else if ((guchar) *p < 0x20)
      g_string_append_printf (out, "\\u%04x", (guchar) *p);
    else
      g_string_append_c (out, *p);
  }
  g_string_append_c (out, '"');
  fputs (out->str, stdout);
}

static void
print_segments (GPtrArray *segments, double duration, const char *language, double probability)
{
  const gboolean json = g_str_equal (opt_format, "json");
  guint cue = 0;
  if (json) {
    printf ("{\"language\": ");
    print_json_string (language ? language : "");
    printf (", \"language_probability\": %.6f, \"segments\": [\n", probability);
  }
  for (guint i = 0; i < segments->len; i++) {
    const WhisperSegment *s = g_ptr_array_index (segments, i);
    /* The model may put a segment's last timestamp past the end of the
     * audio (up to the end of its 30-s window); the subtitle and segment
     * formats show times within the audio. JSON keeps the engine's values,
     * which are the reference implementation's. */
    const double start = MIN (s->start, duration), end = MIN (s->end, duration);
    char a[32], b[32];
    if (g_str_equal (opt_format, "text")) {
      printf ("%s", s->text);
    } else if (g_str_equal (opt_format, "srt-words")) {
      for (gsize k = 0; k < s->n_words; k++) {
        const WhisperWord *w = &s->words[k];
        format_time (a, sizeof a, MIN (w->start, duration), ',');
        format_time (b, sizeof b, MIN (w->end, duration), ',');
        g_autofree char *text = g_strstrip (g_strdup (w->text));
        printf ("%u\n%s --> %s\n%s\n\n", ++cue, a, b, text);
      }
    } else if (g_str_equal (opt_format, "srt")) {
      format_time (a, sizeof a, start, ',');
      format_time (b, sizeof b, end, ',');
      g_autofree char *text = g_strstrip (g_strdup (s->text));
      printf ("%u\n%s --> %s\n%s\n\n", i + 1, a, b, text);
    } else if (json) {
      printf ("  {\"start\": %.3f, \"end\": %.3f, \"text\": ", s->start, s->end);
      print_json_string (s->text);
      printf (", \"language\": ");
      print_json_string (s->language ? s->language : "");
      printf (", \"temperature\": %.1f, \"avg_logprob\": %.6f, \"no_speech_prob\": %.6f, "
              "\"compression_ratio\": %.6f, \"tokens\": [", s->temperature, s->avg_logprob,
              s->no_speech_prob, s->compression_ratio);
      for (gsize k = 0; k < s->n_tokens; k++)
        printf ("%s%d", k ? ", " : "", s->tokens[k]);
      printf ("]");
      if (s->words) {
        printf (", \"words\": [");
        for (gsize k = 0; k < s->n_words; k++) {
          const WhisperWord *w = &s->words[k];
          printf ("%s{\"word\": ", k ? ", " : "");
          print_json_string (w->text);
          printf (", \"start\": %.2f, \"end\": %.2f, \"probability\": %.6f}", w->start,
                  w->end, w->probability);
        }
        printf ("]");
      }
      printf ("}%s\n", i + 1 < segments->len ? "," : "");
    } else {
      format_time (a, sizeof a, start, '.');
      format_time (b, sizeof b, end, '.');
      printf ("[%s --> %s]%s\n", a, b, s->text);
    }
  }
  if (json)
    printf ("]}\n");
  else if (g_str_equal (opt_format, "text"))
    printf ("\n");
}

static gboolean
dump_pcm (const float *pcm, gsize n, GError **error)
{
  return g_file_set_contents (opt_dump_pcm, (const char *) pcm, (gssize) (n * sizeof (float)),
                              error);
}

/* The flags that need no model checked; 0, or the exit status (2). */
static int
check_flags (void)
{
  if (!g_str_equal (opt_format, "segments") && !g_str_equal (opt_format, "text") &&
      !g_str_equal (opt_format, "srt") && !g_str_equal (opt_format, "json") &&
      !g_str_equal (opt_format, "srt-words")) {
    g_printerr ("whisper-transcribe: --format: '%s' is not one of segments, text, srt, json, "
                "srt-words\n",
                opt_format);
    return 2;
  }
  if (!(opt_silence_threshold <= 0.0)) {
    g_printerr ("whisper-transcribe: --silence-threshold: %g is not a level in dBFS at or below 0 (full scale)\n",
                opt_silence_threshold);
    return 2;
  }
  if (opt_batch_size < 0 || opt_batch_size > 64) {
    g_printerr ("whisper-transcribe: --batch-size: %d is not a count from 1 to 64 (0: off)\n",
                opt_batch_size);
    return 2;
  }
  if (opt_warmup < 0 || opt_warmup > 100) {
    g_printerr ("whisper-transcribe: --warmup: %d is not a count from 0 to 100\n", opt_warmup);
    return 2;
  }
  return 0;
}

/* The voice activity detector the flags ask for (NULL for none); FALSE
 * (and the message printed) when a file named with --vad-model fails. */
static gboolean
load_vad (WhisperVad **vad_out)
{
  g_autoptr (GError) error = NULL;
  *vad_out = NULL;
  if (opt_no_vad || (opt_reference_rules && !opt_vad_filter && opt_batch_size == 0))
    return TRUE;
  g_autofree char *vad_path =
      opt_vad_model ? g_strdup (opt_vad_model) : whisper_vad_default_path ();
  *vad_out = whisper_vad_new (vad_path, &error);
  if (!*vad_out && opt_vad_model) {
    g_printerr ("whisper-transcribe: --vad-model: %s\n", error->message);
    return FALSE;
  }
  if (!*vad_out)
    /* the default file is optional: say what is missing, go on without */
    g_printerr ("whisper-transcribe: note: no voice activity detector: %s; noise may give "
                "text (--no-vad: no detector, no note)\n", error->message);
  return TRUE;
}

/* The decoding options of the flags, checked against the engine's model;
 * 0, or the exit status (2) with the message printed. suppress_ids holds
 * the suppressed ids the options point to. */
static int
decode_options_from_flags (WhisperDecodeOptions *decode, const WhisperEngine *engine,
                           WhisperVad *vad, GArray *suppress_ids)
{
  g_autoptr (GError) error = NULL;
  whisper_decode_options_init (decode);
  decode->condition_on_previous_text = !opt_no_condition;
  decode->no_speech_threshold = opt_no_speech_threshold;
  decode->silence_threshold_db = opt_silence_threshold;
  decode->word_timestamps = opt_word_timestamps || g_str_equal (opt_format, "srt-words");
  decode->hallucination_silence_threshold = opt_hallucination_silence;
  if (opt_reference_rules) {
    decode->silence_threshold_db = WHISPER_SILENCE_THRESHOLD_OFF_DB;
    decode->strict_no_speech = FALSE;
  }
  decode->vad = opt_reference_rules ? NULL : vad;
  if (!apply_vad_filter_options (decode, vad))
    return 2;
  if (opt_batch_size > 0) {
    if (!vad) {
      g_printerr ("whisper-transcribe: --batch-size cuts the audio where the voice activity "
                  "detector finds no speech, and %s\n",
                  opt_no_vad ? "--no-vad turns it off"
                             : "none could be loaded (see the note above; tools/fetch-model.sh "
                               "silero-vad installs it)");
      return 2;
    }
    decode->vad = vad;
  }
  decode->language = opt_language;
  if (g_str_equal (opt_task, "translate"))
    decode->task = WHISPER_TASK_TRANSLATE;
  else if (!g_str_equal (opt_task, "transcribe")) {
    g_printerr ("whisper-transcribe: --task: '%s' is not transcribe or translate\n", opt_task);
    return 2;
  }
  decode->beam_size = opt_beam_size;
  decode->best_of = opt_best_of;
  decode->patience = opt_patience;
  decode->length_penalty = opt_length_penalty;
  decode->repetition_penalty = opt_repetition_penalty;
  decode->no_repeat_ngram_size = opt_no_repeat_ngram_size;
  decode->compression_ratio_threshold = opt_compression_ratio_threshold;
  decode->logprob_threshold = opt_log_prob_threshold;
  decode->prompt_reset_on_temperature = opt_prompt_reset_on_temperature;
  decode->initial_prompt = opt_initial_prompt;
  decode->hotwords = opt_hotwords;
  decode->prefix = opt_prefix;
  decode->suppress_blank = !opt_no_suppress_blank;
  decode->without_timestamps = opt_without_timestamps;
  decode->max_initial_timestamp = opt_max_initial_timestamp;
  decode->max_new_tokens = opt_max_new_tokens;
  decode->clip_timestamps = opt_clip_timestamps;
  decode->detect_language_per_window = opt_multilingual;
  decode->language_detection_threshold = opt_language_detection_threshold;
  decode->language_detection_segments = opt_language_detection_segments;
  decode->seed = (guint32) opt_seed;
  if (!whisper_decode_options_parse_temperatures (decode, opt_temperature, &error) ||
      !whisper_decode_options_parse_suppress_tokens (decode, opt_suppress_tokens, suppress_ids,
                                                     &error)) {
    g_printerr ("whisper-transcribe: %s\n", error->message);
    return 2;
  }
  if (opt_greedy) {
    decode->beam_size = 1;
    decode->n_temperatures = 1;
    decode->temperatures[0] = 0.0;
  }
  if (!whisper_decode_options_check (engine, decode, &error)) {
    g_printerr ("whisper-transcribe: %s\n", error->message);
    return 2;
  }
  return 0;
}

/* When the run took (--stats). */
typedef struct {
  gint64 start, load, warm, run, end;  /* monotonic µs */
  long peak_after_load;                /* KiB */
} RunTimes;

/* --stats: the timed run's figures (the counters are cumulative over the
 * warm-up runs: `before` is where the timed run started). */
static void
print_stats (WhisperStream *stream, const WhisperEngine *engine, const WhisperStreamStats *before,
             const RunTimes *t, gsize n_samples, gboolean have_vad)
{
  WhisperStreamStats st;
  whisper_stream_get_stats (stream, &st);
  st.windows -= before->windows;
  st.decode_steps -= before->decode_steps;
  st.mel_seconds -= before->mel_seconds;
  st.encoder_seconds -= before->encoder_seconds;
  st.decoder_seconds -= before->decoder_seconds;
  st.windows_silent -= before->windows_silent;
  st.windows_no_voice -= before->windows_no_voice;
  st.windows_no_speech -= before->windows_no_speech;
  const WhisperEngineInfo *info = whisper_engine_get_info (engine);
  g_printerr ("device %s, %d threads, audio %.2f s\n", info->device_name,
              opt_threads ? opt_threads : (int) g_get_num_processors (),
              n_samples / (double) WHISPER_SAMPLE_RATE);
  g_printerr ("load audio %.3f s, load model %.3f s, ", (t->load - t->start) / 1e6,
              (t->warm - t->load) / 1e6);
  if (opt_warmup)
    g_printerr ("warm-up %.3f s (%d runs), ", (t->run - t->warm) / 1e6, opt_warmup);
  g_printerr ("transcribe %.3f s\n", (t->end - t->run) / 1e6);
  g_printerr ("peak RSS %.1f MiB after loading the model and creating the stream, "
              "%.1f MiB in all\n", t->peak_after_load / 1024.0, peak_rss_kib () / 1024.0);
  g_printerr ("mel %.3f s; encoder %.3f s per window (%" G_GUINT64_FORMAT " windows); "
              "decoder %.3f ms per step (%" G_GUINT64_FORMAT " steps)\n",
              st.mel_seconds, st.windows ? st.encoder_seconds / st.windows : 0.0, st.windows,
              st.decode_steps ? 1e3 * st.decoder_seconds / st.decode_steps : 0.0,
              st.decode_steps);
  g_printerr ("windows skipped: %" G_GUINT64_FORMAT " silent, %" G_GUINT64_FORMAT
              " without speech (VAD%s), %" G_GUINT64_FORMAT " decoded and dropped (no-speech "
              "rule)\n", st.windows_silent, st.windows_no_voice, have_vad ? "" : " off",
              st.windows_no_speech);
}

int
main (int argc, char **argv)
{
  setlocale (LC_ALL, "");
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = g_option_context_new ("AUDIO-FILE - transcribe speech");
  g_option_context_add_main_entries (ctx, entries, NULL);
  add_vad_filter_group (ctx);
  g_option_context_set_description (ctx,
      "Reads any format libsndfile reads (WAV, FLAC, Ogg, MP3, ...), resamples to 16 kHz mono\n"
      "and prints the segments with their times. Decodes as faster-whisper's transcribe() does\n"
      "by default: beam search (5), temperature fallback, the language detected on\n"
      "multilingual models; --greedy for greedy decoding at temperature 0 only.\n");
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("whisper-transcribe: %s\n", error->message);
    return 2;
  }
  if (argc != 2) {
    g_printerr ("whisper-transcribe: give exactly one audio file (see --help)\n");
    return 2;
  }
  const int bad_flags = check_flags ();
  if (bad_flags)
    return bad_flags;

  gsize n_samples;
  RunTimes t = { .start = g_get_monotonic_time () };
  g_autofree float *pcm = whisper_audio_load_file (argv[1], opt_channel, &n_samples, &error);
  if (!pcm) {
    g_printerr ("whisper-transcribe: %s\n", error->message);
    return 1;
  }
  if (opt_dump_pcm) {
    if (!dump_pcm (pcm, n_samples, &error)) {
      g_printerr ("whisper-transcribe: %s\n", error->message);
      return 1;
    }
    return 0;
  }

  WhisperEngineOptions options;
  whisper_engine_options_init (&options);
  options.model_path = opt_model;
  options.n_threads = opt_threads;
  options.max_encoder_length = opt_max_encoder_length;
  options.alignment_heads = opt_alignment_heads;
  if (!parse_device (opt_device, &options.device, &error) ||
      !parse_precision (opt_precision, &options.precision, &error)) {
    g_printerr ("whisper-transcribe: %s\n", error->message);
    return 2;
  }

  t.load = g_get_monotonic_time ();
  g_autoptr (WhisperEngine) engine = whisper_engine_new (&options, &error);
  if (!engine) {
    g_printerr ("whisper-transcribe: %s\n", error->message);
    return 1;
  }
  g_autoptr (WhisperStream) stream = whisper_stream_new (engine, &error);
  if (!stream) {
    g_printerr ("whisper-transcribe: %s\n", error->message);
    return 1;
  }
  g_autoptr (WhisperVad) vad = NULL;
  if (!load_vad (&vad))
    return 2;
  WhisperDecodeOptions decode;
  g_autoptr (GArray) suppress_ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  const int bad_options = decode_options_from_flags (&decode, engine, vad, suppress_ids);
  if (bad_options)
    return bad_options;
  whisper_stream_set_options (stream, &decode);

  t.warm = g_get_monotonic_time ();
  t.peak_after_load = peak_rss_kib ();
  for (int i = 0; i < opt_warmup; i++) {
    g_autoptr (GPtrArray) ignored = NULL;
    if (!transcribe (stream, pcm, n_samples, &ignored, &error)) {
      g_printerr ("whisper-transcribe: %s: %s\n", argv[1], error->message);
      return 1;
    }
    whisper_stream_reset (stream);
  }
  WhisperStreamStats before;
  whisper_stream_get_stats (stream, &before);

  t.run = g_get_monotonic_time ();
  g_autoptr (GPtrArray) segments = NULL;
  if (!transcribe (stream, pcm, n_samples, &segments, &error)) {
    g_printerr ("whisper-transcribe: %s: %s\n", argv[1], error->message);
    return 1;
  }
  t.end = g_get_monotonic_time ();
  double language_probability = 0.0;
  const char *language = whisper_stream_get_language (stream, &language_probability);
  print_segments (segments, n_samples / (double) WHISPER_SAMPLE_RATE, language,
                  language_probability);
  WhisperStreamStats fixed;
  whisper_stream_get_stats (stream, &fixed);
  if (fixed.samples_non_finite > before.samples_non_finite ||
      fixed.samples_clipped > before.samples_clipped)
    g_printerr ("whisper-transcribe: warning: %s: %" G_GUINT64_FORMAT " samples were not finite "
                "(set to 0) and %" G_GUINT64_FORMAT " were beyond full scale (clamped to +-1)\n",
                argv[1], fixed.samples_non_finite - before.samples_non_finite,
                fixed.samples_clipped - before.samples_clipped);

  fflush (stdout);
  if (opt_stats)
    print_stats (stream, engine, &before, &t, n_samples, vad != NULL);
  return 0;
}
