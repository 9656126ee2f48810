/* test-mel: the engine's log-mel front end against faster-whisper's
 * FeatureExtractor (fixture tests/reference/fixtures/mel.json, made by
 * make-reference.py).
 *
 * Cases: a synthetic signal (two sines + seeded noise, 0.7 s) with 80 and
 * 128 bands, the first second of jfk.wav, 250 samples (fewer than n_fft) and
 * 0.5 s of silence. Also the Slaney filter banks for 80 and 128 bands. */
#include <math.h>
#include <string.h>

#include "reference-common.h"
#include "whisper-mel.h"

/* Tolerances.
 * MEL_TOLERANCE: max |ours - FW| over every value of a case's [n_mels,
 *   n_frames] output. FW computes in float32 (complex64 STFT, float32 filter
 *   matmul, float32 log10); the engine's FFT library sums in another order.
 *   Values are log10 / 4, so 1e-4 is a relative power error of about 1e-3,
 *   far above float32 rounding of the power and far below any framing or
 *   filter mistake (those move values by 1e-2 and more).
 * FILTER_TOLERANCE: max |ours - FW| of a filter weight (weights are at most
 *   about 0.03; FW computes them in float64 and stores float32). */
#define MEL_TOLERANCE 1e-4
#define FILTER_TOLERANCE 1e-6

static JsonParser *fixture;

static JsonObject *
fixture_root (void)
{
  return json_node_get_object (json_parser_get_root (fixture));
}

static JsonObject *
find_case (const char *name)
{
  JsonArray *cases = ref_array (fixture_root (), "cases");
  for (guint i = 0; i < json_array_get_length (cases); i++) {
    JsonObject *c = json_array_get_object_element (cases, i);
    if (g_strcmp0 (ref_string (c, "name"), name) == 0)
      return c;
  }
  g_error ("mel.json has no case \"%s\"", name);
  return NULL;
}

/* The input samples of a case: stored, all zeros, or those of another case. */
static float *
case_samples (JsonObject *c, gsize *n_out)
{
  gsize n_samples = (gsize) ref_int (c, "n_samples");
  float *pcm;
  gsize n = n_samples;
  if (json_object_has_member (c, "samples")) {
    pcm = ref_float_array (ref_array (c, "samples"), &n);
  } else if (json_object_has_member (c, "samples_of")) {
    pcm = case_samples (find_case (ref_string (c, "samples_of")), &n);
  } else {
    g_assert_true (json_object_get_boolean_member (c, "zeros"));
    pcm = g_new0 (float, MAX (n_samples, 1));
  }
  g_assert_cmpuint (n, ==, n_samples);
  *n_out = n;
  return pcm;
}

static void
test_mel_case (gconstpointer data)
{
  const char *name = data;
  JsonObject *c = find_case (name);
  int n_mels = (int) ref_int (c, "n_mels");
  JsonArray *shape = ref_array (c, "shape");
  gsize ref_frames = (gsize) json_array_get_int_element (shape, 1);
  g_assert_cmpint (json_array_get_int_element (shape, 0), ==, n_mels);

  gsize n_samples;
  g_autofree float *pcm = case_samples (c, &n_samples);
  gsize n_ref;
  g_autofree float *ref = ref_float_array (ref_array (c, "mel"), &n_ref);
  g_assert_cmpuint (n_ref, ==, (gsize) n_mels * ref_frames);

  g_autoptr (GError) error = NULL;
  /* two threads: the maxima of the pool's threads are merged */
  g_autoptr (WhisperMel) mel = whisper_mel_new (n_mels, 2, &error);
  g_assert_no_error (error);
  g_assert_nonnull (mel);

  gsize n_frames = 0;
  g_autofree float *ours = whisper_mel_compute (mel, pcm, n_samples, &n_frames);
  g_assert_nonnull (ours);
  /* Frame count: FW gives n_samples / 160 + 1 (content frames + the frame
   * of the 160 appended zeros); must be equal, no tolerance. */
  g_assert_cmpuint (n_frames, ==, ref_frames);
  g_assert_cmpuint (n_frames, ==, n_samples / WHISPER_HOP_LENGTH + 1);

  gsize where;
  double err = ref_max_abs_diff (ours, ref, n_ref, &where);
  double sum = 0.0;
  for (gsize i = 0; i < n_ref; i++)
    sum += fabs ((double) ours[i] - (double) ref[i]);
  g_test_message ("mel %-18s n_mels %3d, %4" G_GSIZE_FORMAT " frames: max abs error %.3g "
                  "(band %" G_GSIZE_FORMAT ", frame %" G_GSIZE_FORMAT ": ours %.7f, FW %.7f), "
                  "mean %.3g", name, n_mels, n_frames, err, where / n_frames, where % n_frames,
                  ours[where], ref[where], sum / (double) n_ref);
  g_print ("# mel %-18s max abs error %.3g (tolerance %.0e)\n", name, err, MEL_TOLERANCE);
  g_assert_cmpfloat (err, <=, MEL_TOLERANCE);
}

static void
test_filters (gconstpointer data)
{
  int want = GPOINTER_TO_INT (data);
  JsonArray *filters = ref_array (fixture_root (), "filters");
  JsonObject *f = NULL;
  for (guint i = 0; i < json_array_get_length (filters); i++) {
    JsonObject *o = json_array_get_object_element (filters, i);
    if (ref_int (o, "n_mels") == want)
      f = o;
  }
  g_assert_nonnull (f);
  JsonArray *shape = ref_array (f, "shape");
  g_assert_cmpint (json_array_get_int_element (shape, 0), ==, want);
  g_assert_cmpint (json_array_get_int_element (shape, 1), ==, WHISPER_N_FREQ);

  gsize n;
  g_autofree float *ref = ref_float_array (ref_array (f, "values"), &n);
  g_assert_cmpuint (n, ==, (gsize) want * WHISPER_N_FREQ);

  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperMel) mel = whisper_mel_new (want, 1, &error);
  g_assert_no_error (error);
  const float *ours = whisper_mel_filters (mel);
  g_assert_nonnull (ours);

  gsize where;
  double err = ref_max_abs_diff (ours, ref, n, &where);
  g_print ("# mel filters n_mels %d: max abs error %.3g at [%" G_GSIZE_FORMAT ", %" G_GSIZE_FORMAT
           "] (tolerance %.0e)\n", want, err, where / WHISPER_N_FREQ, where % WHISPER_N_FREQ,
           FILTER_TOLERANCE);
  g_assert_cmpfloat (err, <=, FILTER_TOLERANCE);
}

/* Silence has an exact answer: every power is 0, log10 clamps at 1e-10 ->
 * -10, the max-8 clamp changes nothing, (−10 + 4) / 4 = −1.5. Checked
 * against the constant itself as well as the fixture. */
static void
test_silence_exact (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperMel) mel = whisper_mel_new (80, 1, &error);
  g_assert_no_error (error);
  g_autofree float *zeros = g_new0 (float, 8000);
  gsize n_frames = 0;
  g_autofree float *ours = whisper_mel_compute (mel, zeros, 8000, &n_frames);
  g_assert_cmpuint (n_frames, ==, 51);
  for (gsize i = 0; i < 80 * n_frames; i++)
    g_assert_cmpfloat_with_epsilon (ours[i], -1.5f, 1e-6);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_autofree char *path = ref_fixture_path ("mel.json");
  fixture = ref_load_json (path);

  JsonArray *cases = ref_array (fixture_root (), "cases");
  for (guint i = 0; i < json_array_get_length (cases); i++) {
    const char *name = ref_string (json_array_get_object_element (cases, i), "name");
    g_autofree char *test_path = g_strdup_printf ("/reference/mel/%s", name);
    g_test_add_data_func (test_path, name, test_mel_case);
  }
  g_test_add_data_func ("/reference/mel/filters-80", GINT_TO_POINTER (80), test_filters);
  g_test_add_data_func ("/reference/mel/filters-128", GINT_TO_POINTER (128), test_filters);
  g_test_add_func ("/reference/mel/silence-exact", test_silence_exact);

  int ret = g_test_run ();
  g_object_unref (fixture);
  return ret;
}
