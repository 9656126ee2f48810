/* test-vad.c: the engine's Silero VAD against faster-whisper's own
 * (tests/vad/reference/vad-reference.json, made by make-vad-reference.py
 * with SileroVADModel and get_speech_timestamps of faster-whisper 1.2.1).
 *
 * For every signal of the reference (real clips, decoded by the engine as
 * the script decoded them, and synthetic signals made here the way the
 * script makes them; both checked by SHA-256):
 *   - the speech probabilities of whisper_vad_probabilities(), where the
 *     reference has them: same count, max abs difference <= PROB_TOLERANCE;
 *   - the streaming state: pushing the same chunks one by one gives the
 *     same bits, and again after whisper_vad_state_reset();
 *   - the speech regions for every option set, exactly:
 *     whisper_vad_speech_timestamps() on the signal (the first set; the
 *     others from our probabilities), and
 *     whisper_vad_speech_from_probabilities() on the reference's own
 *     probabilities (the region rules alone).
 *
 * Skips (77) when the converted weight file is not installed
 * (tools/fetch-model.sh silero-vad). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reference-common.h"
#include "whisper.h"
#include "whisper-vad.h"

/* onnxruntime's float32 kernels sum in other orders and use other exp /
 * tanh approximations than these C loops; the measured difference on the
 * reference signals is printed at the end. */
#define PROB_TOLERANCE 1e-4

static int failures;

/* CPU seconds of this thread (the machine may be busy with other work). */
static double
thread_seconds (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void
fail (const char *format, ...) G_GNUC_PRINTF (1, 2);

static void
fail (const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *msg = g_strdup_vprintf (format, args);
  va_end (args);
  g_printerr ("FAIL: %s\n", msg);
  failures++;
}

/* xorshift32 (13, 17, 5) noise as make-vad-reference.py makes it: each
 * state as a signed 32-bit integer, to float32, times 2^-31, times level. */
static void
add_noise (float *pcm, gsize n, guint32 seed, float level)
{
  guint32 state = seed;
  for (gsize i = 0; i < n; i++) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    pcm[i] += ((float) (gint32) state * 0x1p-31f) * level;
  }
}

/* A synthetic signal of the reference (its "synthetic" object); `signals`
 * maps the names of the signals made before to their GArray of samples. */
static GArray *
make_synthetic (JsonObject *spec, GHashTable *signals)
{
  const char *kind = ref_string (spec, "kind");
  GArray *pcm = g_array_new (FALSE, TRUE, sizeof (float));
  if (strcmp (kind, "zeros") == 0) {
    g_array_set_size (pcm, ref_int (spec, "n_samples"));
  } else if (strcmp (kind, "noise") == 0) {
    g_array_set_size (pcm, ref_int (spec, "n_samples"));
    add_noise ((float *) pcm->data, pcm->len, (guint32) ref_int (spec, "seed"),
               (float) ref_double (spec, "level"));
  } else if (strcmp (kind, "sine") == 0) {
    const double frequency = ref_double (spec, "frequency");
    const double amplitude = ref_double (spec, "amplitude");
    g_array_set_size (pcm, ref_int (spec, "n_samples"));
    for (guint k = 0; k < pcm->len; k++)
      g_array_index (pcm, float, k) =
        (float) (amplitude * sin (2.0 * G_PI * frequency * (double) k / 16000.0));
  } else if (strcmp (kind, "insert_silence") == 0 || strcmp (kind, "add_noise") == 0) {
    GArray *src = g_hash_table_lookup (signals, ref_string (spec, "source"));
    if (src == NULL) {
      fail ("synthetic signal: source '%s' not made before it", ref_string (spec, "source"));
      return pcm;
    }
    if (strcmp (kind, "insert_silence") == 0) {
      const guint at = (guint) ref_int (spec, "at_sample");
      const guint silence = (guint) ref_int (spec, "silence_samples");
      g_array_append_vals (pcm, src->data, MIN (at, src->len));
      g_array_set_size (pcm, pcm->len + silence);
      if (at < src->len)
        g_array_append_vals (pcm, (float *) src->data + at, src->len - at);
    } else {
      g_array_append_vals (pcm, src->data, src->len);
      add_noise ((float *) pcm->data, pcm->len, (guint32) ref_int (spec, "seed"),
                 (float) ref_double (spec, "level"));
    }
  } else {
    fail ("synthetic signal: unknown kind '%s'", kind);
  }
  return pcm;
}

/* A clip of the reference, decoded by the engine (as whisper-transcribe
 * --dump-pcm decoded it for the script). */
static GArray *
load_clip (JsonObject *entry)
{
  const char *dir = ref_root_dir (ref_string (entry, "root"));
  g_autofree char *path = g_build_filename (dir ? dir : "", ref_string (entry, "path"), NULL);
  g_autoptr (GError) error = NULL;
  gsize n = 0;
  g_autofree float *samples = whisper_audio_load_file (path, (int) ref_int (entry, "channel"), &n,
                                                       &error);
  GArray *pcm = g_array_new (FALSE, TRUE, sizeof (float));
  if (samples == NULL)
    fail ("%s: %s", path, error->message);
  else
    g_array_append_vals (pcm, samples, n);
  return pcm;
}

/* The option sets of the reference as WhisperVadOptions (defaults for the
 * fields a set leaves out, as VadOptions(**fields)). */
static void
parse_options (JsonObject *fields, WhisperVadOptions *o)
{
  whisper_vad_options_init (o);
  if (json_object_has_member (fields, "threshold"))
    o->threshold = ref_double (fields, "threshold");
  if (json_object_has_member (fields, "neg_threshold"))
    o->neg_threshold = ref_double (fields, "neg_threshold");
  if (json_object_has_member (fields, "min_speech_duration_ms"))
    o->min_speech_duration_ms = (int) ref_int (fields, "min_speech_duration_ms");
  if (json_object_has_member (fields, "max_speech_duration_s"))
    o->max_speech_duration_s = ref_double (fields, "max_speech_duration_s");
  if (json_object_has_member (fields, "min_silence_duration_ms"))
    o->min_silence_duration_ms = (int) ref_int (fields, "min_silence_duration_ms");
  if (json_object_has_member (fields, "speech_pad_ms"))
    o->speech_pad_ms = (int) ref_int (fields, "speech_pad_ms");
}

/* "[start, end) ..." of regions (g_free). */
static char *
describe_regions (const WhisperVadSpeech *s, guint n)
{
  GString *out = g_string_new ("");
  for (guint i = 0; i < n; i++)
    g_string_append_printf (out, "%s[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ")",
                            i ? " " : "", s[i].start_sample, s[i].end_sample);
  return g_string_free (out, FALSE);
}

/* Compares regions with the reference's [[start, end], ...]; TRUE when equal. */
static gboolean
check_regions (const char *what, GArray *got, JsonArray *want)
{
  const guint n = json_array_get_length (want);
  g_autofree WhisperVadSpeech *expected = g_new0 (WhisperVadSpeech, MAX (n, 1));
  for (guint i = 0; i < n; i++) {
    JsonArray *pair = json_array_get_array_element (want, i);
    expected[i].start_sample = json_array_get_int_element (pair, 0);
    expected[i].end_sample = json_array_get_int_element (pair, 1);
  }
  if (got->len == n && memcmp (got->data, expected, n * sizeof *expected) == 0)
    return TRUE;
  g_autofree char *g = describe_regions ((WhisperVadSpeech *) got->data, got->len);
  g_autofree char *w = describe_regions (expected, n);
  fail ("%s: speech regions differ\n  got  (%u): %s\n  want (%u): %s", what, got->len, g, n, w);
  return FALSE;
}

/* Pushing the buffer's whole chunks through one state gives the bits of
 * whisper_vad_probabilities() (all chunks but the padded last one), and
 * the first chunk again after a reset. */
static double push_seconds;
static gsize push_chunks;

static void
check_streaming (const char *name, const WhisperVad *vad, const float *pcm, gsize n,
                 const float *probs)
{
  WhisperVadState *state = whisper_vad_state_new (vad);
  const gsize whole = n / WHISPER_VAD_CHUNK_SAMPLES;
  for (gsize i = 0; i < whole; i++) {
    const double t0 = thread_seconds ();
    const float p = whisper_vad_state_push (state, pcm + i * WHISPER_VAD_CHUNK_SAMPLES);
    push_seconds += thread_seconds () - t0;
    push_chunks++;
    if (memcmp (&p, &probs[i], sizeof p) != 0) {
      fail ("%s: streaming chunk %" G_GSIZE_FORMAT " gives %.9g, the buffer %.9g", name, i, p,
            probs[i]);
      break;
    }
  }
  if (whole > 0) {
    whisper_vad_state_reset (state);
    const float p = whisper_vad_state_push (state, pcm);
    if (memcmp (&p, &probs[0], sizeof p) != 0)
      fail ("%s: after a reset the first chunk gives %.9g, not %.9g", name, p, probs[0]);
  }
  whisper_vad_state_free (state);
}

int
main (void)
{
  g_autofree char *weights = whisper_vad_default_path ();
  if (!g_file_test (weights, G_FILE_TEST_EXISTS)) {
    g_print ("SKIP: no VAD weight file at %s (install it with tools/fetch-model.sh silero-vad)\n",
             weights);
    return 77;
  }
  g_autoptr (GError) error = NULL;
  WhisperVad *vad = whisper_vad_new (NULL, &error);
  if (vad == NULL) {
    g_printerr ("FAIL: %s\n", error->message);
    return 1;
  }

  g_autofree char *ref_path = g_build_filename (ref_source_root (), "tests", "vad", "reference",
                                                "vad-reference.json", NULL);
  g_autoptr (JsonParser) parser = ref_load_json (ref_path);
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));

  JsonArray *sets = ref_array (root, "option_sets");
  const guint n_sets = json_array_get_length (sets);
  g_autofree WhisperVadOptions *options = g_new (WhisperVadOptions, n_sets);
  for (guint s = 0; s < n_sets; s++)
    parse_options (ref_object (json_array_get_object_element (sets, s), "fields"), &options[s]);

  g_autoptr (GHashTable) signals =
    g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_array_unref);
  g_autoptr (GArray) probs = g_array_new (FALSE, FALSE, sizeof (float));
  g_autoptr (GArray) regions = g_array_new (FALSE, FALSE, sizeof (WhisperVadSpeech));
  double worst = 0.0, seconds = 0.0, audio_seconds = 0.0;
  const char *worst_signal = "";
  gsize worst_chunk = 0, n_compared = 0, n_region_checks = 0;

  JsonArray *entries = ref_array (root, "signals");
  g_print ("%-24s %9s %7s %12s  %s\n", "signal", "samples", "chunks", "max |diff|", "regions per set");
  for (guint e = 0; e < json_array_get_length (entries); e++) {
    JsonObject *entry = json_array_get_object_element (entries, e);
    const char *name = ref_string (entry, "name");
    GArray *pcm = json_object_has_member (entry, "synthetic")
                  ? make_synthetic (ref_object (entry, "synthetic"), signals)
                  : load_clip (entry);
    g_hash_table_insert (signals, g_strdup (name), pcm);
    const float *x = (const float *) pcm->data;
    const gsize n = pcm->len;

    g_autofree char *sha = ref_sha256_f32 (x, n);
    if (n != (gsize) ref_int (entry, "n_samples") || strcmp (sha, ref_string (entry, "pcm_sha256")) != 0) {
      fail ("%s: the samples are not the reference's (%" G_GSIZE_FORMAT " samples, SHA-256 %s; "
            "want %" G_GINT64_FORMAT ", %s)", name, n, sha, ref_int (entry, "n_samples"),
            ref_string (entry, "pcm_sha256"));
      continue;
    }

    const double t0 = thread_seconds ();
    whisper_vad_probabilities (vad, x, n, probs);
    seconds += thread_seconds () - t0;
    audio_seconds += (double) n / WHISPER_VAD_SAMPLE_RATE;
    if (probs->len != whisper_vad_n_chunks (n))
      fail ("%s: %u probabilities, expected %" G_GSIZE_FORMAT, name, probs->len,
            whisper_vad_n_chunks (n));
    check_streaming (name, vad, x, n, (const float *) probs->data);

    g_autofree float *ref_probs = NULL;
    gsize n_ref = 0;
    double diff = -1.0;
    if (json_object_has_member (entry, "probabilities")) {
      ref_probs = ref_float_array (ref_array (entry, "probabilities"), &n_ref);
      if (n_ref != probs->len) {
        fail ("%s: %u probabilities, the reference has %" G_GSIZE_FORMAT, name, probs->len, n_ref);
      } else {
        gsize at = 0;
        diff = ref_max_abs_diff ((const float *) probs->data, ref_probs, n_ref, &at);
        n_compared += n_ref;
        if (diff > worst) {
          worst = diff;
          worst_signal = name;
          worst_chunk = at;
        }
        if (!(diff <= PROB_TOLERANCE))
          fail ("%s: probability of chunk %" G_GSIZE_FORMAT " is %.9g, the reference %.9g "
                "(|diff| %.3g > %g)", name, at, g_array_index (probs, float, at), ref_probs[at],
                diff, PROB_TOLERANCE);
      }
    }

    JsonObject *speech = ref_object (entry, "speech");
    GString *counts = g_string_new ("");
    for (guint s = 0; s < n_sets; s++) {
      const char *set = ref_string (json_array_get_object_element (sets, s), "name");
      JsonArray *want = ref_array (speech, set);
      g_autofree char *what = g_strdup_printf ("%s, options '%s'", name, set);
      g_clear_error (&error);
      /* the whole path once per signal; the other sets from the same
       * probabilities (computing them again would give the same bits) */
      const gboolean ok = s == 0
        ? whisper_vad_speech_timestamps (vad, x, n, &options[s], regions, &error)
        : whisper_vad_speech_from_probabilities ((const float *) probs->data, probs->len, n,
                                                 &options[s], regions, &error);
      if (!ok)
        fail ("%s: %s", what, error->message);
      else
        check_regions (what, regions, want);
      n_region_checks++;
      if (ref_probs != NULL && n_ref == whisper_vad_n_chunks (n)) {
        g_autofree char *what_ref = g_strdup_printf ("%s (from the reference's probabilities)", what);
        g_clear_error (&error);
        if (!whisper_vad_speech_from_probabilities (ref_probs, n_ref, n, &options[s], regions, &error))
          fail ("%s: %s", what_ref, error->message);
        else
          check_regions (what_ref, regions, want);
        n_region_checks++;
      }
      g_string_append_printf (counts, "%s%u", s ? " " : "", json_array_get_length (want));
    }
    if (diff >= 0)
      g_print ("%-24s %9" G_GSIZE_FORMAT " %7u %12.3g  %s\n", name, n, probs->len, diff, counts->str);
    else
      g_print ("%-24s %9" G_GSIZE_FORMAT " %7u %12s  %s\n", name, n, probs->len, "-", counts->str);
    g_string_free (counts, TRUE);
  }

  g_print ("probabilities: %" G_GSIZE_FORMAT " compared, max |diff| %.3g (%s, chunk %"
           G_GSIZE_FORMAT "), tolerance %g\n", n_compared, worst, worst_signal, worst_chunk,
           PROB_TOLERANCE);
  g_print ("speech regions: %" G_GSIZE_FORMAT " comparisons\n", n_region_checks);
  g_print ("speed (CPU time of one thread, not checked): whole buffers %.3f s for %.1f s of "
           "audio (%.3f %% of real time); whisper_vad_state_push %.1f us per 32-ms chunk "
           "(%.3f %% of real time)\n", seconds, audio_seconds, 100.0 * seconds / audio_seconds,
           1e6 * push_seconds / MAX (push_chunks, 1),
           100.0 * push_seconds / MAX (push_chunks, 1) / 0.032);
  whisper_vad_free (vad);
  if (failures > 0) {
    g_printerr ("%d failure(s)\n", failures);
    return 1;
  }
  g_print ("PASS\n");
  return 0;
}
