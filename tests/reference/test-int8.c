/* test-int8: the engine's int8 products against faster-whisper's
 * compute_type "int8" (fixtures/int8.json, made by make-int8-reference.py)
 * on every parity clip:
 * - /reference/int8/quantize-at-load: precision=int8 on the default model
 *   (tiny.en, float16) against faster-whisper int8 on the same directory;
 * - /reference/int8/stored: the default model quantized to an int8
 *   CTranslate2 directory by tools/ct2-quantize.py (at test time; its
 *   weights load as stored, int8) in precision=exact against faster-whisper
 *   int8 on that directory.
 * Pass rule, each: jfk's words equal to faster-whisper's; identical tokens
 * on at least MIN_IDENTICAL of the clips; the word error rate of the clips'
 * text against faster-whisper's at most MAX_WER percent, max_length_loop
 * left out (the clip that loops to the maximum decode length: where the
 * loop starts, and so its text, is a near tie). The table lists every clip.
 *
 * Why not every clip: the int8 rounding of each linear's input rows turns
 * a last-bit difference of the float steps around it (layer norm,
 * attention, GELU, which are not CTranslate2's instruction for
 * instruction) into a whole int8 step now and then, so the encoder's
 * output differs from CTranslate2's by about half as much as int8 differs
 * from float32, and near ties (timestamps, a comma) go either way. The
 * kernels themselves are exact (test-cpu-int8), and the quantization,
 * dequantization and bias order are CTranslate2's (cpu-int8.h). CTranslate2
 * int8 moves as far from itself when its input moves by one float step
 * (tools/int8-parity-ceiling.py; figures in docs/benchmarks.md): agreement
 * on every clip needs every float step bit-exact with CTranslate2's.
 *
 * Usage: test-int8 [PYTHON3 [QUANTIZER]] (meson passes both). */
#include <glib/gstdio.h>
#include <string.h>

#include "reference-common.h"
#include "wer-util.h"

#define MIN_IDENTICAL 0.5 /* of the clips, tokens identical to faster-whisper int8's */
#define MAX_WER 5.0       /* percent, the clips' words but max_length_loop's */
#define LOOP_CLIP "max_length_loop"

static JsonParser *fixture;
static char *python;
static char *quantizer;
static char *tmpdir;
static char *int8_dir;

static WhisperEngine *
make_engine (const char *model_path, WhisperPrecision precision)
{
  WhisperEngineOptions options;
  whisper_engine_options_init (&options);
  options.model_path = model_path;
  options.device = WHISPER_DEVICE_CPU;
  options.precision = precision;
  g_autoptr (GError) error = NULL;
  WhisperEngine *e = whisper_engine_new (&options, &error);
  if (!e)
    g_error ("cannot create an engine on %s: %s", model_path ? model_path : "the default model",
             error->message);
  return e;
}

static gboolean
quantize (void)
{
  g_autofree char *ct2_dir = whisper_engine_default_model_path ();
  g_autoptr (GError) error = NULL;
  tmpdir = g_dir_make_tmp ("whisper-int8-XXXXXX", &error);
  if (!tmpdir) {
    g_printerr ("FAIL: cannot make a temporary folder: %s\n", error->message);
    return FALSE;
  }
  int8_dir = g_build_filename (tmpdir, "tiny.en-int8", NULL);
  const char *argv[] = { python, quantizer, ct2_dir, int8_dir, NULL };
  g_autofree char *out = NULL, *err = NULL;
  int status = 0;
  g_print ("# quantizing: %s %s %s %s\n", python, quantizer, ct2_dir, int8_dir);
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                     &status, &error) ||
      !g_spawn_check_wait_status (status, &error)) {
    g_printerr ("FAIL: %s failed (%s):\n%s%s\n", quantizer, error->message, out ? out : "",
                err ? err : "");
    return FALSE;
  }
  return TRUE;
}

/* One clip through the engine against the fixture's segments: TRUE when
 * the tokens are identical; the texts appended to ref_text and hyp_text. */
static gboolean
check_clip (WhisperEngine *engine, JsonObject *clip, GString *ref_text, GString *hyp_text,
            GString *failures)
{
  const char *name = ref_string (clip, "name");
  g_autofree char *path = g_build_filename (ref_root_dir (ref_string (clip, "root")),
                                            ref_string (clip, "path"), NULL);
  g_autoptr (GError) error = NULL;
  gsize n_samples;
  g_autofree float *pcm = whisper_audio_load_file (path, (int) ref_int (clip, "channel"),
                                                   &n_samples, &error);
  if (!pcm) {
    g_string_append_printf (failures, "%s: cannot load %s: %s; ", name, path, error->message);
    return FALSE;
  }
  g_autoptr (RefTranscript) t = ref_transcribe (engine, pcm, n_samples);
  if (t->error) {
    g_string_append_printf (failures, "%s: %s; ", name, t->error->message);
    return FALSE;
  }
  JsonArray *segments = ref_array (clip, "segments");
  GArray *want = g_array_new (FALSE, FALSE, sizeof (gint32));
  for (guint s = 0; s < json_array_get_length (segments); s++) {
    gsize n;
    g_autofree gint32 *tok =
        ref_int32_array (ref_array (json_array_get_object_element (segments, s), "tokens"), &n);
    g_array_append_vals (want, tok, n);
  }
  const gssize p = ref_first_difference ((gint32 *) want->data, want->len, t->tokens, t->n_tokens);
  g_autofree char *ref = ref_joined_text (segments);
  g_autofree char *hyp = ref_joined_segments (t->segments);
  const double wer = wer_percent (ref, hyp, NULL, NULL);
  g_print ("# %-24s %-9s %6u/%-6" G_GSIZE_FORMAT " %6.2f\n", name, p < 0 ? "yes" : "NO",
           want->len, t->n_tokens, wer);
  if (p >= 0) {
    g_autofree char *tw = ref_describe_tokens (engine, (gint32 *) want->data, want->len, p - 2, p + 4);
    g_autofree char *tg = ref_describe_tokens (engine, t->tokens, t->n_tokens, p - 2, p + 4);
    g_print ("#     faster-whisper [%" G_GSSIZE_FORMAT "..]: %s\n#     engine         [%" G_GSSIZE_FORMAT
             "..]: %s\n", MAX (p - 2, 0), tw, MAX (p - 2, 0), tg);
  }
  if (strcmp (name, "jfk") == 0 && wer > 0.0)
    g_string_append_printf (failures, "jfk: text '%s', faster-whisper int8's '%s'; ", hyp, ref);
  if (strcmp (name, LOOP_CLIP) != 0) {
    g_string_append_printf (ref_text, "%s ", ref);
    g_string_append_printf (hyp_text, "%s ", hyp);
  }
  g_array_free (want, TRUE);
  return p < 0;
}

static void
check_model (const char *kind, const char *model_path, WhisperPrecision precision)
{
  g_autoptr (WhisperEngine) engine = make_engine (model_path, precision);
  JsonObject *models = ref_object (json_node_get_object (json_parser_get_root (fixture)), "models");
  JsonArray *clips = ref_array (models, kind);
  const guint n = json_array_get_length (clips);
  g_assert_cmpuint (n, >, 0);
  g_autoptr (GString) failures = g_string_new (NULL);
  g_autoptr (GString) ref_text = g_string_new (NULL);
  g_autoptr (GString) hyp_text = g_string_new (NULL);
  guint identical = 0;
  g_print ("# %-24s %-9s %-13s %s\n", "clip", "identical", "tokens fw/us", "WER %");
  for (guint i = 0; i < n; i++)
    identical += check_clip (engine, json_array_get_object_element (clips, i), ref_text,
                             hyp_text, failures);
  const double wer = wer_percent (ref_text->str, hyp_text->str, NULL, NULL);
  g_print ("# %s: identical tokens on %u of %u clips (bound %.0f %%), WER %.2f %% (bound %.1f, "
           LOOP_CLIP " left out)\n",
           kind, identical, n, 100.0 * MIN_IDENTICAL, wer, MAX_WER);
  if (identical < MIN_IDENTICAL * n)
    g_string_append_printf (failures, "identical tokens on %u of %u clips; ", identical, n);
  if (wer > MAX_WER)
    g_string_append_printf (failures, "WER %.2f %% > %.1f %%; ", wer, MAX_WER);
  if (failures->len > 0)
    g_test_fail_printf ("%s", failures->str);
}

static void
test_quantize_at_load (void)
{
  check_model ("float16", NULL, WHISPER_PRECISION_INT8);
}

static void
test_stored (void)
{
  check_model ("int8", int8_dir, WHISPER_PRECISION_EXACT);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  python = g_strdup (argc > 1 ? argv[1] : "python3");
  quantizer = argc > 2 ? g_strdup (argv[2])
                       : g_build_filename (ref_source_root (), "tools", "ct2-quantize.py", NULL);
  if (!ref_default_model_present ())
    return 1;
  g_autofree char *path = ref_fixture_path ("int8.json");
  fixture = ref_load_json (path);

  int ret = 1;
  if (quantize ()) {
    g_test_add_func ("/reference/int8/quantize-at-load", test_quantize_at_load);
    g_test_add_func ("/reference/int8/stored", test_stored);
    ret = g_test_run ();
  }
  if (int8_dir) {
    const char *files[] = { "model.bin", "config.json", "vocabulary.txt", "vocabulary.json",
                            "tokenizer.json", NULL };
    for (int i = 0; files[i]; i++) {
      g_autofree char *f = g_build_filename (int8_dir, files[i], NULL);
      g_unlink (f);
    }
    g_rmdir (int8_dir);
  }
  if (tmpdir)
    g_rmdir (tmpdir);
  g_object_unref (fixture);
  g_free (python);
  g_free (quantizer);
  return ret;
}
