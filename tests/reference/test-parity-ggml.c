/* test-parity-ggml: the default model (tiny.en, CTranslate2, float16
 * weights) converted to a whisper.cpp ggml f16 file by tools/ct2-to-ggml.py
 * at test time must transcribe every clip of transcripts.json to exactly the
 * tokens the CTranslate2 directory gives (compared with the engine's own
 * CTranslate2 run, not with faster-whisper): the weights are the same
 * float16 values, so any difference is a loader bug. The scores must be
 * equal to the bit too: both loaders hand the backend the same float16
 * matrices (ggml's separate q, k, v fused into the CTranslate2 layout) and
 * the same vector values (float32 in the ggml file, float16 in model.bin,
 * widened to the same floats), so the same arithmetic runs.
 *
 * Usage: test-parity-ggml [PYTHON3 [CONVERTER]] (meson passes both). */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "reference-common.h"

static JsonParser *fixture;
static WhisperEngine *engine_ct2;
static WhisperEngine *engine_ggml;
static char *python;
static char *converter;
static char *tmpdir;
static char *ggml_path;

static WhisperEngine *
make_engine (const char *model_path)
{
  WhisperEngineOptions options;
  whisper_engine_options_init (&options);
  options.model_path = model_path;
  options.device = WHISPER_DEVICE_CPU;
  g_autoptr (GError) error = NULL;
  WhisperEngine *e = whisper_engine_new (&options, &error);
  if (!e)
    g_printerr ("FAIL: cannot create an engine on %s: %s\n",
                model_path ? model_path : "the default model", error->message);
  return e;
}

static gboolean
convert (void)
{
  g_autofree char *ct2_dir = whisper_engine_default_model_path ();
  g_autoptr (GError) error = NULL;
  tmpdir = g_dir_make_tmp ("whisper-ggml-XXXXXX", &error);
  if (!tmpdir) {
    g_printerr ("FAIL: cannot make a temporary folder: %s\n", error->message);
    return FALSE;
  }
  ggml_path = g_build_filename (tmpdir, "tiny.en-f16.bin", NULL);
  const char *argv[] = { python, converter, ct2_dir, ggml_path, NULL };
  g_autofree char *out = NULL, *err = NULL;
  int status = 0;
  g_print ("# converting: %s %s %s %s\n", python, converter, ct2_dir, ggml_path);
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                     &status, &error)) {
    g_printerr ("FAIL: cannot run %s: %s\n", converter, error->message);
    return FALSE;
  }
  if (!g_spawn_check_wait_status (status, &error)) {
    g_printerr ("FAIL: %s failed (%s):\n%s%s\n", converter, error->message, out, err);
    return FALSE;
  }
  GStatBuf st;
  if (g_stat (ggml_path, &st) != 0 || st.st_size == 0) {
    g_printerr ("FAIL: %s wrote no %s\n", converter, ggml_path);
    return FALSE;
  }
  g_print ("# ggml file: %" G_GINT64_FORMAT " bytes\n", (gint64) st.st_size);
  return TRUE;
}

/* Both engines must have resolved the same constants. */
static void
test_info (void)
{
  const WhisperEngineInfo *a = whisper_engine_get_info (engine_ct2);
  const WhisperEngineInfo *b = whisper_engine_get_info (engine_ggml);
  g_assert_cmpint (a->n_mels, ==, b->n_mels);
  g_assert_cmpint (a->n_vocab, ==, b->n_vocab);
  g_assert_cmpint (a->n_audio_ctx, ==, b->n_audio_ctx);
  g_assert_cmpint (a->n_text_ctx, ==, b->n_text_ctx);
  g_assert_cmpint (a->n_audio_state, ==, b->n_audio_state);
  g_assert_cmpint (a->n_audio_head, ==, b->n_audio_head);
  g_assert_cmpint (a->n_audio_layer, ==, b->n_audio_layer);
  g_assert_cmpint (a->n_text_state, ==, b->n_text_state);
  g_assert_cmpint (a->n_text_head, ==, b->n_text_head);
  g_assert_cmpint (a->n_text_layer, ==, b->n_text_layer);
  g_assert_cmpint (a->is_multilingual, ==, b->is_multilingual);
  g_assert_cmpint (a->token_eot, ==, b->token_eot);
  g_assert_cmpint (a->token_sot, ==, b->token_sot);
  g_assert_cmpint (a->token_no_speech, ==, b->token_no_speech);
  g_assert_cmpint (a->token_no_timestamps, ==, b->token_no_timestamps);
  g_assert_cmpint (a->token_timestamp_begin, ==, b->token_timestamp_begin);
}

static void
test_clips (void)
{
  JsonArray *clips = ref_array (json_node_get_object (json_parser_get_root (fixture)), "clips");
  guint n = json_array_get_length (clips);
  g_assert_cmpuint (n, >, 0);
  guint identical = 0;
  GString *failures = g_string_new (NULL);

  g_print ("# %-24s %-9s %-10s %-15s %-11s %s\n", "clip", "identical", "first diff",
           "tokens ct2/ggml", "d logprob", "seconds ct2/ggml");
  for (guint i = 0; i < n; i++) {
    JsonObject *clip = json_array_get_object_element (clips, i);
    const char *name = ref_string (clip, "name");
    g_autofree char *path = g_build_filename (ref_root_dir (ref_string (clip, "root")),
                                              ref_string (clip, "path"), NULL);
    g_autoptr (GError) error = NULL;
    gsize n_samples;
    g_autofree float *pcm = whisper_audio_load_file (path, (int) ref_int (clip, "channel"),
                                                     &n_samples, &error);
    if (!pcm) {
      g_string_append_printf (failures, "%s: cannot load %s: %s; ", name, path, error->message);
      continue;
    }
    g_autoptr (RefTranscript) a = ref_transcribe (engine_ct2, pcm, n_samples);
    g_autoptr (RefTranscript) b = ref_transcribe (engine_ggml, pcm, n_samples);
    if (a->error || b->error) {
      g_string_append_printf (failures, "%s: transcription failed: %s; ", name,
                              (a->error ? a->error : b->error)->message);
      continue;
    }
    gssize p = ref_first_difference (a->tokens, a->n_tokens, b->tokens, b->n_tokens);
    double dl = 0.0;
    gboolean same_segments = a->segments->len == b->segments->len;
    for (guint s = 0; p < 0 && same_segments && s < a->segments->len; s++) {
      const WhisperSegment *sa = g_ptr_array_index (a->segments, s);
      const WhisperSegment *sb = g_ptr_array_index (b->segments, s);
      dl = MAX (dl, fabs (sa->avg_logprob - sb->avg_logprob));
      if (sa->avg_logprob != sb->avg_logprob || sa->no_speech_prob != sb->no_speech_prob ||
          sa->compression_ratio != sb->compression_ratio)
        g_string_append_printf (failures, "%s: segment %u: scores differ (avg_logprob %.9g vs "
                                "%.9g, no_speech_prob %.9g vs %.9g); ", name, s, sa->avg_logprob,
                                sb->avg_logprob, sa->no_speech_prob, sb->no_speech_prob);
      /* Same tokens must give the same segments, texts and times. */
      if (sa->n_tokens != sb->n_tokens || g_strcmp0 (sa->text, sb->text) != 0
          || sa->start != sb->start || sa->end != sb->end)
        same_segments = FALSE;
    }
    g_autofree char *diff = p >= 0 ? g_strdup_printf ("%" G_GSSIZE_FORMAT, p) : g_strdup ("-");
    g_print ("# %-24s %-9s %-10s %6" G_GSIZE_FORMAT "/%-8" G_GSIZE_FORMAT " %-11.2e %.1f/%.1f\n",
             name, p < 0 ? "yes" : "NO", diff, a->n_tokens, b->n_tokens, dl, a->seconds,
             b->seconds);
    if (p >= 0) {
      g_autofree char *ta = ref_describe_tokens (engine_ct2, a->tokens, a->n_tokens, p - 3, p + 6);
      g_autofree char *tb = ref_describe_tokens (engine_ct2, b->tokens, b->n_tokens, p - 3, p + 6);
      g_print ("#     ct2  [%" G_GSSIZE_FORMAT "..]: %s\n#     ggml [%" G_GSSIZE_FORMAT "..]: %s\n",
               MAX (p - 3, 0), ta, MAX (p - 3, 0), tb);
      g_string_append_printf (failures, "%s: tokens differ at %" G_GSSIZE_FORMAT "; ", name, p);
    } else if (!same_segments) {
      g_string_append_printf (failures, "%s: same tokens but other segments; ", name);
    } else {
      identical++;
    }
  }
  g_print ("# ggml vs CTranslate2: identical on %u of %u clips\n", identical, n);
  if (failures->len > 0)
    g_test_fail_printf ("%s", failures->str);
  g_string_free (failures, TRUE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  python = g_strdup (argc > 1 ? argv[1] : "python3");
  converter = argc > 2 ? g_strdup (argv[2])
                       : g_build_filename (ref_source_root (), "tools", "ct2-to-ggml.py", NULL);
  if (!ref_default_model_present ())
    return 1;
  if (!g_file_test (converter, G_FILE_TEST_IS_REGULAR)) {
    g_printerr ("FAIL: the converter %s does not exist\n", converter);
    return 1;
  }

  g_autofree char *path = ref_fixture_path ("transcripts.json");
  fixture = ref_load_json (path);

  int ret = 1;
  if (convert () && (engine_ct2 = make_engine (NULL)) && (engine_ggml = make_engine (ggml_path))) {
    g_test_add_func ("/reference/parity-ggml/info", test_info);
    g_test_add_func ("/reference/parity-ggml/clips", test_clips);
    ret = g_test_run ();
  }

  if (engine_ggml)
    whisper_engine_unref (engine_ggml);
  if (engine_ct2)
    whisper_engine_unref (engine_ct2);
  if (ggml_path)
    g_unlink (ggml_path);
  if (tmpdir)
    g_rmdir (tmpdir);
  g_object_unref (fixture);
  g_free (ggml_path);
  g_free (tmpdir);
  g_free (python);
  g_free (converter);
  return ret;
}
