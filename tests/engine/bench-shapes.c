/* bench-shapes.c: encoder time per window and decoder time per step of one
 * model on the CPU, for models of any size with random weights
 * (tools/make-random-model.py); tools/bench-shapes.py runs it beside
 * faster-whisper on the same files.
 *
 *   bench-shapes MODEL exact|fast|int8 STEPS REPEATS [THREADS]
 *
 * - encoder: whisper_engine_encode() of one 30-s window of random log-mel
 *   values (seeded, uniform in [-1, 1]), one untimed warm-up, then REPEATS
 *   timed calls; the median.
 * - decoder: whisper_stream_transcribe() of 30 s of low noise with every
 *   rule that could stop early or skip the window off (no silence gate, no
 *   no-speech rule, temperature 0 only, no thresholds, no timestamps) and
 *   the end-of-text token suppressed, so that every run decodes about
 *   STEPS tokens after its prompt pass (the count is printed); decoder time / steps from
 *   whisper_stream_get_stats() (the prompt pass counted as a step, as the
 *   CLI's --stats does), one warm-up then the median of REPEATS.
 * STEPS 0 times the encoder only (for profiling it) and prints an FNV-1a
 * hash of its output's bytes too (kernel changes that must keep every bit).
 * WHISPER_BENCH_CPU_TIME=1 times the encoder in the process's CPU time (all
 * threads) instead of wall-clock time, for a machine shared with other
 * work. Prints one JSON object on stdout. */
#include "whisper.h"
#include "whisper-engine-test-api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int
cmp_double (const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static gint64
now_us (void)
{
  static int cpu_time = -1;
  struct timespec t;
  if (cpu_time < 0)
    cpu_time = g_getenv ("WHISPER_BENCH_CPU_TIME") != NULL;
  if (!cpu_time)
    return g_get_monotonic_time ();
  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &t);
  return (gint64) t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static double
median (double *v, int n)
{
  qsort (v, n, sizeof (double), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int
main (int argc, char **argv)
{
  if (argc < 5) {
    g_printerr ("usage: bench-shapes MODEL exact|fast|int8 STEPS REPEATS [THREADS]\n");
    return 2;
  }
  const int steps = atoi (argv[3]), repeats = atoi (argv[4]);
  if (steps < 0 || repeats < 1 ||
      (strcmp (argv[2], "exact") && strcmp (argv[2], "fast") && strcmp (argv[2], "int8"))) {
    g_printerr ("bench-shapes: STEPS and REPEATS must be >= 1, precision exact, fast or int8\n");
    return 2;
  }
  WhisperEngineOptions eo;
  whisper_engine_options_init (&eo);
  eo.model_path = argv[1];
  eo.device = WHISPER_DEVICE_CPU;
  eo.n_threads = argc > 5 ? atoi (argv[5]) : 0;
  eo.precision = !strcmp (argv[2], "fast")   ? WHISPER_PRECISION_FAST
                 : !strcmp (argv[2], "int8") ? WHISPER_PRECISION_INT8
                                             : WHISPER_PRECISION_EXACT;
  g_autoptr (GError) error = NULL;
  const gint64 t_load = g_get_monotonic_time ();
  g_autoptr (WhisperEngine) engine = whisper_engine_new (&eo, &error);
  if (!engine) {
    g_printerr ("bench-shapes: %s: %s\n", argv[1], error->message);
    return 1;
  }
  const double load_s = (g_get_monotonic_time () - t_load) / 1e6;
  const WhisperEngineInfo *info = whisper_engine_get_info (engine);

  /* encoder */
  const int frames = 2 * info->max_encoder_length;
  const gsize n_out = (gsize) info->max_encoder_length * info->n_audio_state;
  g_autofree float *mel = g_new (float, (gsize) info->n_mels * frames);
  g_autofree float *out = g_new (float, n_out);
  GRand *rand = g_rand_new_with_seed (1234);
  for (gsize i = 0; i < (gsize) info->n_mels * frames; i++)
    mel[i] = (float) g_rand_double_range (rand, -1.0, 1.0);
  g_autofree double *enc = g_new (double, repeats);
  for (int r = -1; r < repeats; r++) {
    const gint64 t0 = now_us ();
    if (!whisper_engine_encode (engine, mel, frames, out, &error)) {
      g_printerr ("bench-shapes: encoder: %s\n", error->message);
      return 1;
    }
    if (r >= 0)
      enc[r] = (now_us () - t0) / 1e3;
  }

  if (steps == 0) {
    guint64 hash = 14695981039346656037ull;
    for (gsize i = 0; i < n_out * sizeof (float); i++)
      hash = (hash ^ ((const guint8 *) out)[i]) * 1099511628211ull;
    printf ("{\"model\": \"%s\", \"precision\": \"%s\", \"encoder_ms\": %.2f, "
            "\"output_hash\": \"%016" G_GINT64_MODIFIER "x\"}\n", argv[1], argv[2],
            median (enc, repeats), hash);
    g_rand_free (rand);
    return 0;
  }

  /* decoder */
  const gsize n_pcm = 30 * WHISPER_SAMPLE_RATE;
  g_autofree float *pcm = g_new (float, n_pcm);
  for (gsize i = 0; i < n_pcm; i++)
    pcm[i] = (float) g_rand_double_range (rand, -0.01, 0.01);
  g_rand_free (rand);
  WhisperDecodeOptions o;
  whisper_decode_options_init (&o);
  o.condition_on_previous_text = FALSE;
  o.no_speech_threshold = -1.0;
  o.logprob_threshold = -1e30;
  o.compression_ratio_threshold = -1.0;
  o.strict_no_speech = FALSE;
  o.silence_threshold_db = WHISPER_SILENCE_THRESHOLD_OFF_DB;
  o.without_timestamps = TRUE;
  /* CTranslate2 generates at most max_length / 2 tokens (prompt
   * included in max_length; whisper's sample_len = n_text_ctx / 2), and
   * max_new_tokens follows faster-whisper, which hands CTranslate2
   * max_length = prompt + max_new_tokens: so asking for 2 STEPS minus the
   * prompt (<|startoftranscript|>, language, task, <|notimestamps|> on a
   * multilingual model) decodes STEPS tokens */
  o.max_new_tokens = MIN (2 * steps - (info->is_multilingual ? 4 : 2), info->n_text_ctx);
  const gint32 eot = info->token_eot;
  o.suppress_tokens = &eot;
  o.n_suppress_tokens = 1;
  o.language = info->is_multilingual ? "en" : NULL;
  if (!whisper_decode_options_check (engine, &o, &error)) {
    g_printerr ("bench-shapes: decode options: %s\n", error->message);
    return 1;
  }
  g_autofree double *dec = g_new (double, repeats);
  g_autofree double *whole = g_new (double, repeats);
  const double enc_ms = median (enc, repeats);
  guint64 steps_seen = 0;
  for (int r = -1; r < repeats; r++) {
    g_autoptr (WhisperStream) s = whisper_stream_new (engine, &error);
    if (!s) {
      g_printerr ("bench-shapes: stream: %s\n", error->message);
      return 1;
    }
    whisper_stream_set_options (s, &o);
    WhisperStreamStats before, after;
    whisper_stream_get_stats (s, &before);
    GPtrArray *segments = NULL;
    const gint64 t0 = now_us ();
    if (!whisper_stream_transcribe (s, pcm, n_pcm, NULL, NULL, &segments, &error)) {
      g_printerr ("bench-shapes: decode: %s\n", error->message);
      return 1;
    }
    g_ptr_array_unref (segments);
    whisper_stream_get_stats (s, &after);
    steps_seen = after.decode_steps - before.decode_steps;
    if (r >= 0) {
      dec[r] = 1e3 * (after.decoder_seconds - before.decoder_seconds) / MAX (steps_seen, 1);
      /* the whole transcription less one encoder pass (the median above),
       * on the same clock as the encoder (CPU time with
       * WHISPER_BENCH_CPU_TIME) */
      whole[r] = ((now_us () - t0) / 1e3 - enc_ms) / MAX (steps_seen, 1);
    }
  }

  printf ("{\"model\": \"%s\", \"precision\": \"%s\", \"threads\": %d, \"load_s\": %.3f, "
          "\"d_model\": %d, \"encoder_layers\": %d, \"decoder_layers\": %d, "
          "\"encoder_ms\": %.2f, \"decoder_ms_per_step\": %.3f, \"step_ms_on_encoder_clock\": %.3f, "
          "\"decode_steps\": %" G_GUINT64_FORMAT "}\n", argv[1], argv[2], eo.n_threads, load_s,
          info->n_audio_state, info->n_audio_layer, info->n_text_layer, enc_ms,
          median (dec, repeats), median (whole, repeats), steps_seen);
  return 0;
}
