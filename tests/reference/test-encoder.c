/* test-encoder: the engine's encoder (CPU backend, default model tiny.en)
 * against CTranslate2's Whisper.encode() (compute_type float32) on the
 * features of jfk.wav's first window (fixtures encoder-jfk.json,
 * encoder-jfk.features.f32, encoder-jfk.output.f32, from make-reference.py).
 *
 * The fixture holds the full output, [1500, 384] float32. */
#include <math.h>
#include <string.h>

#include "reference-common.h"
#include "whisper-engine-test-api.h"

/* ENCODER_TOLERANCE: max |ours - CT2| over all 1500 x 384 outputs (values of
 * the final layer norm, |x| up to a few units). Both sides use the same
 * float16 weights widened to float32 and accumulate in float32; they differ
 * only in summation order (OpenBLAS vs MKL GEMM, fused vs separate ops) and
 * in erf / exp implementations, which accumulate to about 1e-5 .. 1e-4
 * after four layers. 1e-3 catches any real mistake (a wrong GELU, a missing
 * bias, a wrong positional row, zero- instead of log-mel padding move
 * outputs by 1e-2 and more). */
#define ENCODER_TOLERANCE 1e-3

static JsonParser *fixture;
static WhisperEngine *engine;
static float *features;     /* [n_mels, n_feat_frames] as stored */
static int n_mels, n_feat_frames;
static float *reference;    /* [n_ctx, n_state] */
static int n_ctx, n_state;

static void
compare (const char *what, const float *ours)
{
  gsize where;
  double err = ref_max_abs_diff (ours, reference, (gsize) n_ctx * n_state, &where);
  double sum = 0.0;
  for (gsize i = 0; i < (gsize) n_ctx * n_state; i++)
    sum += fabs ((double) ours[i] - (double) reference[i]);
  g_print ("# encoder (%s): max abs error %.3g at frame %d, channel %d (ours %.6f, CT2 %.6f); "
           "mean abs error %.3g; tolerance %.0e\n", what, err, (int) (where / n_state),
           (int) (where % n_state), ours[where], reference[where],
           sum / ((double) n_ctx * n_state), ENCODER_TOLERANCE);
  g_assert_cmpfloat (err, <=, ENCODER_TOLERANCE);
}

/* The window as faster-whisper gives it to CTranslate2: 3000 frames, the
 * frames after the content zero (log-mel domain). */
static void
test_encoder_padded (void)
{
  const WhisperEngineInfo *info = whisper_engine_get_info (engine);
  int frames = 2 * info->max_encoder_length;
  g_assert_cmpint (frames, ==, 3000);
  g_autofree float *mel = g_new0 (float, (gsize) n_mels * frames);
  for (int m = 0; m < n_mels; m++)
    memcpy (mel + (gsize) m * frames, features + (gsize) m * n_feat_frames,
            sizeof (float) * n_feat_frames);

  g_autofree float *out = g_new0 (float, (gsize) n_ctx * n_state);
  g_autoptr (GError) error = NULL;
  g_assert_true (whisper_engine_encode (engine, mel, frames, out, &error));
  g_assert_no_error (error);
  compare ("3000 frames, zero-padded by the test", out);
}

/* The same window given as its content frames only: the engine pads to 3000
 * frames itself (whisper-engine-test-api.h), so the answer is the same. */
static void
test_encoder_short_input (void)
{
  g_autofree float *out = g_new0 (float, (gsize) n_ctx * n_state);
  g_autoptr (GError) error = NULL;
  g_assert_true (whisper_engine_encode (engine, features, n_feat_frames, out, &error));
  g_assert_no_error (error);
  compare ("content frames only, padded by the engine", out);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (!ref_default_model_present ())
    return 1;

  g_autofree char *json_path = ref_fixture_path ("encoder-jfk.json");
  fixture = ref_load_json (json_path);
  JsonObject *root = json_node_get_object (json_parser_get_root (fixture));

  JsonObject *feat = ref_object (root, "features");
  JsonArray *fshape = ref_array (feat, "shape");
  n_mels = (int) json_array_get_int_element (fshape, 0);
  n_feat_frames = (int) json_array_get_int_element (fshape, 1);
  g_autofree char *feat_path = ref_fixture_path (ref_string (feat, "file"));
  features = ref_read_f32_file (feat_path, (gsize) n_mels * n_feat_frames,
                                ref_string (feat, "sha256"));

  JsonObject *outp = ref_object (root, "output");
  JsonArray *oshape = ref_array (outp, "shape");
  n_ctx = (int) json_array_get_int_element (oshape, 0);
  n_state = (int) json_array_get_int_element (oshape, 1);
  g_autofree char *out_path = ref_fixture_path (ref_string (outp, "file"));
  reference = ref_read_f32_file (out_path, (gsize) n_ctx * n_state, ref_string (outp, "sha256"));

  WhisperEngineOptions options;
  whisper_engine_options_init (&options);
  options.model_path = NULL;  /* the default model: tiny.en, CTranslate2 */
  options.device = WHISPER_DEVICE_CPU;
  g_autoptr (GError) error = NULL;
  engine = whisper_engine_new (&options, &error);
  if (!engine) {
    g_printerr ("FAIL: cannot create the engine on the default model: %s\n", error->message);
    return 1;
  }
  const WhisperEngineInfo *info = whisper_engine_get_info (engine);
  g_print ("# model %s on %s: n_mels %d, n_audio_ctx %d, n_audio_state %d\n", info->model_path,
           info->device_name, info->n_mels, info->n_audio_ctx, info->n_audio_state);
  if (info->n_mels != n_mels || info->max_encoder_length != n_ctx || info->n_audio_state != n_state) {
    g_printerr ("FAIL: the default model (n_mels %d, encoder length %d, n_audio_state %d) is not "
                "the fixture's tiny.en (%d, %d, %d)\n", info->n_mels, info->max_encoder_length,
                info->n_audio_state, n_mels, n_ctx, n_state);
    return 1;
  }

  g_test_add_func ("/reference/encoder/jfk-padded", test_encoder_padded);
  g_test_add_func ("/reference/encoder/jfk-content-frames", test_encoder_short_input);
  int ret = g_test_run ();

  whisper_engine_unref (engine);
  g_free (features);
  g_free (reference);
  g_object_unref (fixture);
  return ret;
}
