/* test-parity-options: the engine with faster-whisper's decoding options
 * (languages, translation, prompts, hotwords, prefix, beam search,
 * penalties, no timestamps, max new tokens, clips, suppressed tokens,
 * temperature fallback) against transcribe() with the same options
 * (fixture options.json, made by make-options-reference.py), on tiny.en and
 * the multilingual base model, CPU.
 *
 * Pass rule, for every case and clip:
 * - deterministic decodes (no window sampled): the identical token sequence,
 *   segment boundaries, texts, times (1e-6), temperatures, avg_logprob
 *   within 2e-4 (test-parity.c says why);
 * - a decode that falls back (a window sampled at a temperature above 0):
 *   identical up to the first sampled window, which must start at the same
 *   time and be sampled on both sides (samples themselves cannot match:
 *   the random generators differ);
 * - the language and its probability (1e-4), and with detection every
 *   language's probability within 1e-4. */
#include <math.h>
#include <string.h>

#include "reference-common.h"
#include "whisper-languages.h"

#define TIME_TOLERANCE 1e-6
#define AVG_LOGPROB_TOLERANCE 2e-4
#define LANGUAGE_PROB_TOLERANCE 1e-4

static JsonParser *fixture;
static WhisperEngine *engines[2];  /* tiny.en, base */

static WhisperEngine *
engine_for (const char *model)
{
  const gboolean base = g_str_equal (model, "base");
  if (!engines[base]) {
    WhisperEngineOptions options;
    whisper_engine_options_init (&options);
    options.device = WHISPER_DEVICE_CPU;
    g_autofree char *path = NULL;
    if (base) {
      const char *data = g_getenv ("XDG_DATA_HOME");
      g_autofree char *root = data && *data ? g_strdup (data)
                                            : g_build_filename (g_get_home_dir (), ".local",
                                                                "share", NULL);
      path = g_build_filename (root, "gst-whisper", "models", "base", NULL);
      options.model_path = path;
    }
    g_autoptr (GError) error = NULL;
    engines[base] = whisper_engine_new (&options, &error);
    if (!engines[base])
      g_error ("cannot load the %s model (tools/fetch-model.sh %s): %s", model,
               base ? "base" : "", error->message);
  }
  return engines[base];
}

/* transcribe()'s keyword arguments from the fixture onto the options. */
static void
apply_json_options (WhisperDecodeOptions *o, JsonObject *opts, GArray *suppress, GString *names)
{
  g_autoptr (GList) members = json_object_get_members (opts);
  for (GList *l = members; l; l = l->next) {
    const char *k = l->data;
    JsonNode *n = json_object_get_member (opts, k);
    const gboolean null = JSON_NODE_HOLDS_NULL (n);
    if (g_str_equal (k, "language"))
      o->language = null ? NULL : json_node_get_string (n);
    else if (g_str_equal (k, "task"))
      o->task = g_str_equal (json_node_get_string (n), "translate") ? WHISPER_TASK_TRANSLATE
                                                                     : WHISPER_TASK_TRANSCRIBE;
    else if (g_str_equal (k, "beam_size"))
      o->beam_size = (int) json_node_get_int (n);
    else if (g_str_equal (k, "best_of"))
      o->best_of = (int) json_node_get_int (n);
    else if (g_str_equal (k, "patience"))
      o->patience = json_node_get_double (n);
    else if (g_str_equal (k, "length_penalty"))
      o->length_penalty = json_node_get_double (n);
    else if (g_str_equal (k, "repetition_penalty"))
      o->repetition_penalty = json_node_get_double (n);
    else if (g_str_equal (k, "no_repeat_ngram_size"))
      o->no_repeat_ngram_size = (int) json_node_get_int (n);
    else if (g_str_equal (k, "temperature")) {
      if (JSON_NODE_HOLDS_ARRAY (n)) {
        JsonArray *a = json_node_get_array (n);
        o->n_temperatures = (int) json_array_get_length (a);
        for (int i = 0; i < o->n_temperatures; i++)
          o->temperatures[i] = json_array_get_double_element (a, i);
      } else {
        o->n_temperatures = 1;
        o->temperatures[0] = json_node_get_double (n);
      }
    } else if (g_str_equal (k, "condition_on_previous_text"))
      o->condition_on_previous_text = json_node_get_boolean (n);
    else if (g_str_equal (k, "without_timestamps"))
      o->without_timestamps = json_node_get_boolean (n);
    else if (g_str_equal (k, "suppress_blank"))
      o->suppress_blank = json_node_get_boolean (n);
    else if (g_str_equal (k, "suppress_tokens")) {
      JsonArray *a = json_node_get_array (n);
      o->suppress_non_speech = FALSE;
      g_array_set_size (suppress, 0);
      for (guint i = 0; i < json_array_get_length (a); i++) {
        const gint32 id = (gint32) json_array_get_int_element (a, i);
        if (id == -1)
          o->suppress_non_speech = TRUE;
        else
          g_array_append_val (suppress, id);
      }
      o->suppress_tokens = (const gint32 *) suppress->data;
      o->n_suppress_tokens = (int) suppress->len;
    } else if (g_str_equal (k, "no_speech_threshold"))
      o->no_speech_threshold = json_node_get_double (n);
    else if (g_str_equal (k, "log_prob_threshold"))
      o->logprob_threshold = json_node_get_double (n);
    else if (g_str_equal (k, "compression_ratio_threshold"))
      o->compression_ratio_threshold = json_node_get_double (n);
    else if (g_str_equal (k, "max_initial_timestamp"))
      o->max_initial_timestamp = json_node_get_double (n);
    else if (g_str_equal (k, "initial_prompt"))
      o->initial_prompt = null ? NULL : json_node_get_string (n);
    else if (g_str_equal (k, "prefix"))
      o->prefix = null ? NULL : json_node_get_string (n);
    else if (g_str_equal (k, "hotwords"))
      o->hotwords = null ? NULL : json_node_get_string (n);
    else if (g_str_equal (k, "max_new_tokens"))
      o->max_new_tokens = null ? 0 : (int) json_node_get_int (n);
    else if (g_str_equal (k, "clip_timestamps"))
      o->clip_timestamps = json_node_get_string (n);
    else if (g_str_equal (k, "multilingual"))
      o->detect_language_per_window = json_node_get_boolean (n);
    else if (g_str_equal (k, "word_timestamps") || g_str_equal (k, "vad_filter")) {
      if (json_node_get_boolean (n))
        g_string_append_printf (names, "%s=true is not mapped; ", k);
    } else
      g_string_append_printf (names, "unknown option %s; ", k);
  }
}

static gboolean
segment_sampled (JsonObject *seg)
{
  return ref_double (seg, "temperature") > 0;
}

static void
compare_languages (WhisperStream *stream, JsonObject *clip, GString *problems)
{
  double prob = 0;
  const char *ours = whisper_stream_get_language (stream, &prob);
  const char *ref = ref_string (clip, "language");
  int ref_index = -1, our_index = -1;
  g_autoptr (GError) error = NULL;
  if (!whisper_language_parse (ref, WHISPER_N_LANGUAGES_MAX, &ref_index, &error) ||
      !ours || !whisper_language_parse (ours, WHISPER_N_LANGUAGES_MAX, &our_index, NULL) ||
      our_index != ref_index) {
    g_string_append_printf (problems, "language %s, reference %s; ", ours ? ours : "(none)", ref);
    return;
  }
  const double ref_prob = ref_double (clip, "language_probability");
  if (!(fabs (prob - ref_prob) <= LANGUAGE_PROB_TOLERANCE))
    g_string_append_printf (problems, "language probability %.6f, reference %.6f; ", prob,
                            ref_prob);
  if (!json_object_has_member (clip, "all_language_probs"))
    return;
  int n = 0;
  const double *probs = whisper_stream_get_language_probabilities (stream, &n);
  JsonArray *all = ref_array (clip, "all_language_probs");
  double worst = 0;
  for (guint i = 0; i < json_array_get_length (all); i++) {
    JsonArray *pair = json_array_get_array_element (all, i);
    int index = -1;
    if (!whisper_language_parse (json_array_get_string_element (pair, 0), WHISPER_N_LANGUAGES_MAX,
                                 &index, NULL) || !probs || index >= n) {
      g_string_append_printf (problems, "no probability for language %s; ",
                              json_array_get_string_element (pair, 0));
      return;
    }
    worst = MAX (worst, fabs (probs[index] - json_array_get_double_element (pair, 1)));
  }
  if (!(worst <= LANGUAGE_PROB_TOLERANCE))
    g_string_append_printf (problems, "a language probability differs by %.2e; ", worst);
  g_print ("#     %s: %s %.5f (reference %.5f), all %u languages within %.1e\n",
           ref_string (clip, "name"), ours, prob, ref_prob, json_array_get_length (all), worst);
}

static void
run_clip (JsonObject *c, JsonObject *clip, GString *failures)
{
  const char *case_name = ref_string (c, "name"), *clip_name = ref_string (clip, "name");
  g_autoptr (GString) problems = g_string_new (NULL);
  WhisperEngine *engine = engine_for (ref_string (c, "model"));

  g_autofree char *path = g_build_filename (ref_root_dir (ref_string (clip, "root")),
                                            ref_string (clip, "path"), NULL);
  gsize n_samples = 0;
  g_autoptr (GError) error = NULL;
  g_autofree float *pcm = whisper_audio_load_file (path, (int) ref_int (clip, "channel"),
                                                   &n_samples, &error);
  g_assert_nonnull (pcm);
  g_autofree char *sha = ref_sha256_f32 (pcm, n_samples);
  if (g_ascii_strcasecmp (sha, ref_string (clip, "pcm_sha256")) != 0) {
    g_string_append_printf (failures, "%s/%s: PCM differs from the fixture's; ", case_name,
                            clip_name);
    return;
  }

  WhisperDecodeOptions o;
  whisper_decode_options_init (&o);
  o.silence_threshold_db = WHISPER_SILENCE_THRESHOLD_OFF_DB;  /* the reference's rules */
  o.strict_no_speech = FALSE;
  g_autoptr (GArray) suppress = g_array_new (FALSE, FALSE, sizeof (gint32));
  apply_json_options (&o, ref_object (json_node_get_object (json_parser_get_root (fixture)),
                                      "base_options"), suppress, problems);
  apply_json_options (&o, ref_object (c, "options"), suppress, problems);

  g_autoptr (WhisperStream) stream = whisper_stream_new (engine, &error);
  g_assert_nonnull (stream);
  whisper_stream_set_options (stream, &o);
  g_autoptr (GPtrArray) segments = NULL;
  gint64 t0 = g_get_monotonic_time ();
  if (!whisper_stream_transcribe (stream, pcm, n_samples, NULL, NULL, &segments, &error)) {
    g_string_append_printf (failures, "%s/%s: transcription failed: %s; ", case_name, clip_name,
                            error->message);
    return;
  }
  const double seconds = (g_get_monotonic_time () - t0) / 1e6;

  JsonArray *ref_segs = ref_array (clip, "segments");
  const guint n_ref = json_array_get_length (ref_segs);
  guint compared = 0;
  gboolean fell_back = FALSE;
  for (guint i = 0; i < n_ref; i++) {
    JsonObject *rs = json_array_get_object_element (ref_segs, i);
    if (segment_sampled (rs)) {
      /* the first sampled window: same start, sampled on our side too */
      fell_back = TRUE;
      /* ours may keep no text of that window (its samples are others: the
       * no-speech rule can drop it); what it keeps must be sampled too */
      if (i < segments->len) {
        const WhisperSegment *s = g_ptr_array_index (segments, i);
        if (fabs (s->start - ref_double (rs, "start")) <= TIME_TOLERANCE && !(s->temperature > 0))
          g_string_append_printf (problems, "segment %u: the reference falls back at %.2f s "
                                  "(temperature %.1f), ours decodes it at 0; ", i,
                                  ref_double (rs, "start"), ref_double (rs, "temperature"));
      }
      break;
    }
    if (i >= segments->len) {
      g_string_append_printf (problems, "%u segments, reference %u; ", segments->len, n_ref);
      break;
    }
    const WhisperSegment *s = g_ptr_array_index (segments, i);
    gsize n_rt;
    g_autofree gint32 *rt = ref_int32_array (ref_array (rs, "tokens"), &n_rt);
    if (ref_first_difference (s->tokens, s->n_tokens, rt, n_rt) >= 0) {
      g_autofree char *a = ref_describe_tokens (engine, s->tokens, s->n_tokens, 0, 12);
      g_autofree char *b = ref_describe_tokens (engine, rt, n_rt, 0, 12);
      g_string_append_printf (problems, "segment %u: other tokens (ours %s | ref %s); ", i, a, b);
      break;
    }
    if (fabs (s->start - ref_double (rs, "start")) > TIME_TOLERANCE ||
        fabs (s->end - ref_double (rs, "end")) > TIME_TOLERANCE)
      g_string_append_printf (problems, "segment %u: %.3f-%.3f vs %.3f-%.3f; ", i, s->start,
                              s->end, ref_double (rs, "start"), ref_double (rs, "end"));
    if (!(fabs (s->avg_logprob - ref_double (rs, "avg_logprob")) <= AVG_LOGPROB_TOLERANCE))
      g_string_append_printf (problems, "segment %u: avg_logprob %.5f vs %.5f; ", i,
                              s->avg_logprob, ref_double (rs, "avg_logprob"));
    if (s->temperature != ref_double (rs, "temperature"))
      g_string_append_printf (problems, "segment %u: temperature %.1f vs %.1f; ", i,
                              s->temperature, ref_double (rs, "temperature"));
    compared++;
  }
  if (fell_back) {
    /* the window that falls back in the reference falls back here: the
     * audio up to 30 s past the reference's first sampled segment (every
     * window before it is deterministic, and identical, see above) */
    WhisperStreamStats st;
    whisper_stream_get_stats (stream, &st);
    double first = 0;
    for (guint i = 0; i < n_ref; i++)
      if (segment_sampled (json_array_get_object_element (ref_segs, i))) {
        first = ref_double (json_array_get_object_element (ref_segs, i), "start");
        break;
      }
    const gsize cut = MIN (n_samples, (gsize) ((first + 30.0) * WHISPER_SAMPLE_RATE));
    g_autoptr (WhisperStream) again = whisper_stream_new (engine, &error);
    whisper_stream_set_options (again, &o);
    g_autoptr (GPtrArray) cut_segments = NULL;
    WhisperStreamStats cut_st;
    if (!whisper_stream_transcribe (again, pcm, cut, NULL, NULL, &cut_segments, &error))
      g_string_append_printf (problems, "the cut audio failed: %s; ", error->message);
    whisper_stream_get_stats (again, &cut_st);
    if (cut_st.windows_fallback < 1)
      g_string_append_printf (problems, "no window fell back in the first %.1f s (the "
                              "reference's falls back at %.2f s); ", cut / 16000.0, first);
    g_print ("#     fallback: %" G_GUINT64_FORMAT " windows fell back on the whole clip, %"
             G_GUINT64_FORMAT " in its first %.1f s (the reference's first at %.2f s)\n",
             st.windows_fallback, cut_st.windows_fallback, cut / 16000.0, first);
  }
  if (!fell_back && problems->len == 0 && segments->len != n_ref)
    g_string_append_printf (problems, "%u segments, reference %u; ", segments->len, n_ref);
  compare_languages (stream, clip, problems);

  g_print ("# %-24s %-24s %3u/%-3u segments identical%s %5.1f s %s\n", case_name, clip_name,
           compared, n_ref, fell_back ? " before the fallback," : "", seconds,
           problems->len ? "FAIL" : "ok");
  if (problems->len)
    g_string_append_printf (failures, "%s/%s: %s\n", case_name, clip_name, problems->str);
}

static void
test_cases (void)
{
  JsonArray *cases = ref_array (json_node_get_object (json_parser_get_root (fixture)), "cases");
  g_autoptr (GString) failures = g_string_new (NULL);
  const char *only = g_getenv ("WHISPER_OPTIONS_CASES");  /* comma list, for debugging */
  g_auto (GStrv) wanted = only ? g_strsplit (only, ",", -1) : NULL;
  for (guint i = 0; i < json_array_get_length (cases); i++) {
    JsonObject *c = json_array_get_object_element (cases, i);
    if (wanted && !g_strv_contains ((const char *const *) wanted, ref_string (c, "name")))
      continue;
    JsonArray *clips = ref_array (c, "clips");
    for (guint k = 0; k < json_array_get_length (clips); k++)
      run_clip (c, json_array_get_object_element (clips, k), failures);
  }
  if (failures->len)
    g_test_fail_printf ("%s", failures->str);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (!ref_default_model_present ())
    return 1;
  g_autofree char *path = ref_fixture_path ("options.json");
  fixture = ref_load_json (path);
  g_test_add_func ("/reference/parity-options/cases", test_cases);
  const int ret = g_test_run ();
  for (int i = 0; i < 2; i++)
    if (engines[i])
      whisper_engine_unref (engines[i]);
  g_object_unref (fixture);
  return ret;
}
