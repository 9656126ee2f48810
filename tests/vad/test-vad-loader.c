/* test-vad-loader.c: whisper_vad_new() on good and broken weight files.
 *
 * The files are written here, from the format tools/silero-vad-convert.py
 * documents (not with the loader's code): a complete file of the right
 * shapes whose weights are all zero except the output bias (so every
 * probability is sigmoid(bias), whatever the input), then the same file
 * broken one way at a time. Every broken file must be refused with
 * WHISPER_VAD_ERROR_FORMAT (WHISPER_VAD_ERROR_NOT_FOUND for a missing file)
 * and a message naming the file and the reason. The installed weight file
 * (tools/fetch-model.sh silero-vad), where there is one, must load, and
 * its truncated copy must not. Built with AddressSanitizer too
 * (vad-loader-asan), which then also covers the network's buffers. */
#include <math.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "whisper-vad.h"

typedef struct {
  const char *name;
  guint32 n_dims;
  guint32 dims[3];
} Spec;

/* The tensors of the format, in the converter's order. */
static const Spec specs[] = {
  { "encoder.feature_extractor.forward_basis_buffer", 3, { 258, 1, 256 } },
  { "encoder.conv_layers.0.weight", 3, { 128, 129, 3 } },
  { "encoder.conv_layers.0.bias", 1, { 128 } },
  { "encoder.conv_layers.1.weight", 3, { 64, 128, 3 } },
  { "encoder.conv_layers.1.bias", 1, { 64 } },
  { "encoder.conv_layers.2.weight", 3, { 64, 64, 3 } },
  { "encoder.conv_layers.2.bias", 1, { 64 } },
  { "encoder.conv_layers.3.weight", 3, { 128, 64, 3 } },
  { "encoder.conv_layers.3.bias", 1, { 128 } },
  { "decoder.rnn.W", 3, { 1, 512, 128 } },
  { "decoder.rnn.R", 3, { 1, 512, 128 } },
  { "decoder.rnn.B", 2, { 1, 1024 } },
  { "decoder.conv1d.weight", 3, { 1, 128, 1 } },
  { "decoder.conv1d.bias", 1, { 1 } },
};
#define N_SPECS G_N_ELEMENTS (specs)
#define OUTPUT_BIAS 1.0f

/* One way to break the file (all zero: the good file). */
typedef struct {
  const char *magic;      /* NULL: "GWSILVAD" */
  guint32 version;        /* 0: 1 */
  int bad_shape;          /* index of a tensor whose last dimension is 1 less, or -1 */
  int bad_dtype;          /* index of a tensor with dtype 1, or -1 */
  gboolean unknown_name;  /* a 15th tensor "decoder.extra" */
  gboolean duplicate;     /* the last tensor written twice (count 15) */
  gboolean omit_last;     /* the last tensor left out (count 13) */
  gboolean trailing;      /* 4 bytes after the last tensor */
} Breakage;

static void
put_u32 (GByteArray *b, guint32 v)
{
  guint32 le = GUINT32_TO_LE (v);
  g_byte_array_append (b, (const guint8 *) &le, 4);
}

static void
put_tensor (GByteArray *b, const char *name, guint32 dtype, guint32 n_dims, const guint32 *dims,
            float value)
{
  put_u32 (b, (guint32) strlen (name));
  g_byte_array_append (b, (const guint8 *) name, (guint) strlen (name));
  put_u32 (b, dtype);
  put_u32 (b, n_dims);
  gsize n = 1;
  for (guint32 d = 0; d < n_dims; d++) {
    put_u32 (b, dims[d]);
    n *= dims[d];
  }
  guint32 bits;
  memcpy (&bits, &value, 4);
  for (gsize i = 0; i < n; i++)
    put_u32 (b, bits);
}

static GByteArray *
make_file (const Breakage *k)
{
  GByteArray *b = g_byte_array_new ();
  g_byte_array_append (b, (const guint8 *) (k->magic ? k->magic : "GWSILVAD"), 8);
  put_u32 (b, k->version ? k->version : 1);
  guint32 count = N_SPECS + (k->unknown_name || k->duplicate) - k->omit_last;
  put_u32 (b, count);
  for (int i = 0; i < 32; i++)
    g_byte_array_append (b, (const guint8 *) "\xab", 1);
  for (guint s = 0; s < N_SPECS - k->omit_last; s++) {
    guint32 dims[3];
    memcpy (dims, specs[s].dims, sizeof dims);
    if ((int) s == k->bad_shape)
      dims[specs[s].n_dims - 1] -= 1;
    const gboolean is_out_bias = s == N_SPECS - 1;
    put_tensor (b, specs[s].name, (int) s == k->bad_dtype ? 1 : 0, specs[s].n_dims, dims,
                is_out_bias ? OUTPUT_BIAS : 0.0f);
  }
  if (k->unknown_name) {
    const guint32 dims[1] = { 2 };
    put_tensor (b, "decoder.extra", 0, 1, dims, 0.0f);
  }
  if (k->duplicate)
    put_tensor (b, specs[N_SPECS - 1].name, 0, 1, specs[N_SPECS - 1].dims, 0.0f);
  if (k->trailing)
    put_u32 (b, 0);
  return b;
}

typedef struct {
  char *dir;
} Fixture;

static char *
write_temp (Fixture *f, const char *name, const guint8 *data, gsize size)
{
  char *path = g_build_filename (f->dir, name, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_file_set_contents (path, (const char *) data, (gssize) size, &error))
    g_error ("cannot write %s: %s", path, error->message);
  return path;
}

/* whisper_vad_new() on the bytes must fail with `code` and a message that
 * names the file and contains `reason`. */
static void
expect_refused (Fixture *f, const char *label, const guint8 *data, gsize size, int code,
                const char *reason)
{
  g_autofree char *file = g_strdup_printf ("%s.bin", label);
  g_autofree char *path = write_temp (f, file, data, size);
  g_autoptr (GError) error = NULL;
  WhisperVad *vad = whisper_vad_new (path, &error);
  if (vad != NULL)
    g_error ("%s: loaded, expected an error containing '%s'", label, reason);
  g_test_message ("%s: %s", label, error->message);
  g_assert_error (error, WHISPER_VAD_ERROR, code);
  if (strstr (error->message, path) == NULL || strstr (error->message, reason) == NULL)
    g_error ("%s: message '%s' does not name %s and '%s'", label, error->message, path, reason);
  g_unlink (path);
}

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
  (void) data;
  g_autoptr (GError) error = NULL;
  f->dir = g_dir_make_tmp ("test-vad-loader-XXXXXX", &error);
  g_assert_no_error (error);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
  (void) data;
  g_rmdir (f->dir);
  g_free (f->dir);
}

static const Breakage good = { NULL, 0, -1, -1, FALSE, FALSE, FALSE, FALSE };

/* The complete file loads, and the network computes from it: all weights
 * zero but the output bias, so every chunk's probability is sigmoid(bias). */
static void
test_good_file (Fixture *f, gconstpointer data)
{
  (void) data;
  g_autoptr (GByteArray) b = make_file (&good);
  g_autofree char *path = write_temp (f, "good.bin", b->data, b->len);
  g_autoptr (GError) error = NULL;
  WhisperVad *vad = whisper_vad_new (path, &error);
  g_assert_no_error (error);
  g_assert_nonnull (vad);
  float chunk[WHISPER_VAD_CHUNK_SAMPLES];
  for (int i = 0; i < WHISPER_VAD_CHUNK_SAMPLES; i++)
    chunk[i] = 0.5f * sinf (0.05f * i);
  WhisperVadState *state = whisper_vad_state_new (vad);
  const float want = 1.0f / (1.0f + expf (-OUTPUT_BIAS));
  for (int n = 0; n < 3; n++)
    g_assert_cmpfloat_with_epsilon (whisper_vad_state_push (state, chunk), want, 1e-7);
  whisper_vad_state_free (state);

  /* a whole buffer: more than one batch of chunks, a partial last chunk;
   * every chunk is speech, so one region covers the buffer */
  const gsize n = 45 * WHISPER_VAD_CHUNK_SAMPLES + 100;
  g_autofree float *pcm = g_new0 (float, n);
  g_autoptr (GArray) probs = g_array_new (FALSE, FALSE, sizeof (float));
  whisper_vad_probabilities (vad, pcm, n, probs);
  g_assert_cmpuint (probs->len, ==, 46);
  for (guint i = 0; i < probs->len; i++)
    g_assert_cmpfloat_with_epsilon (g_array_index (probs, float, i), want, 1e-7);
  g_autoptr (GArray) regions = g_array_new (FALSE, FALSE, sizeof (WhisperVadSpeech));
  g_assert_true (whisper_vad_speech_timestamps (vad, pcm, n, NULL, regions, &error));
  g_assert_cmpuint (regions->len, ==, 1);
  g_assert_cmpint (g_array_index (regions, WhisperVadSpeech, 0).start_sample, ==, 0);
  g_assert_cmpint (g_array_index (regions, WhisperVadSpeech, 0).end_sample, ==, (gint64) n);

  /* an invalid option is refused, naming it */
  WhisperVadOptions options;
  whisper_vad_options_init (&options);
  options.min_silence_duration_ms = -1;
  g_assert_false (whisper_vad_speech_timestamps (vad, pcm, n, &options, regions, &error));
  g_assert_error (error, WHISPER_VAD_ERROR, WHISPER_VAD_ERROR_SETTING);
  g_assert_nonnull (strstr (error->message, "min_silence_duration_ms"));
  whisper_vad_free (vad);
  g_unlink (path);
}

static void
test_missing_file (Fixture *f, gconstpointer data)
{
  (void) data;
  g_autofree char *path = g_build_filename (f->dir, "no-such-file.bin", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_null (whisper_vad_new (path, &error));
  g_test_message ("%s", error->message);
  g_assert_error (error, WHISPER_VAD_ERROR, WHISPER_VAD_ERROR_NOT_FOUND);
  g_assert_nonnull (strstr (error->message, path));
  g_assert_nonnull (strstr (error->message, "fetch-model.sh silero-vad"));
}

static void
test_wrong_magic (Fixture *f, gconstpointer data)
{
  (void) data;
  Breakage k = good;
  k.magic = "GGMLFILE";
  g_autoptr (GByteArray) b = make_file (&k);
  expect_refused (f, "wrong-magic", b->data, b->len, WHISPER_VAD_ERROR_FORMAT,
                  "does not start with \"GWSILVAD\"");
  expect_refused (f, "empty", (const guint8 *) "", 0, WHISPER_VAD_ERROR_FORMAT,
                  "does not start with");
  /* an ONNX file (protobuf) is not taken for one */
  expect_refused (f, "onnx-like", (const guint8 *) "\x08\x08\x12\x07pytorch", 11,
                  WHISPER_VAD_ERROR_FORMAT, "does not start with");
}

static void
test_wrong_version (Fixture *f, gconstpointer data)
{
  (void) data;
  Breakage k = good;
  k.version = 2;
  g_autoptr (GByteArray) b = make_file (&k);
  expect_refused (f, "version-2", b->data, b->len, WHISPER_VAD_ERROR_FORMAT,
                  "format version 2, this engine reads version 1");
}

/* Cut at every field boundary of the header and the first records, inside
 * the values, and one byte short of the end: always "truncated". */
static void
test_truncated (Fixture *f, gconstpointer data)
{
  (void) data;
  g_autoptr (GByteArray) b = make_file (&good);
  const gsize cuts[] = {
    8, 10, 12, 14, 16, 40, 47, 48, 50, 52,   /* header, first name length */
    52 + 20, 52 + 46, 52 + 46 + 4, 52 + 46 + 10, /* name, dtype, n_dims, dims */
    52 + 46 + 8 + 12, 52 + 46 + 8 + 12 + 1000, /* values */
    b->len / 2, b->len - 4, b->len - 1,
  };
  for (guint i = 0; i < G_N_ELEMENTS (cuts); i++) {
    g_autofree char *label = g_strdup_printf ("truncated-%" G_GSIZE_FORMAT, cuts[i]);
    expect_refused (f, label, b->data, cuts[i], WHISPER_VAD_ERROR_FORMAT, "truncated");
  }
}

static void
test_bad_tensors (Fixture *f, gconstpointer data)
{
  (void) data;
  struct {
    const char *label;
    Breakage k;
    const char *reason;
  } cases[] = {
    { "bad-shape", { NULL, 0, 1, -1, FALSE, FALSE, FALSE, FALSE },
      "tensor 'encoder.conv_layers.0.weight' has shape [128, 129, 2], expected [128, 129, 3]" },
    { "bad-shape-lstm", { NULL, 0, 10, -1, FALSE, FALSE, FALSE, FALSE },
      "tensor 'decoder.rnn.R' has shape [1, 512, 127], expected [1, 512, 128]" },
    { "bad-dtype", { NULL, 0, -1, 11, FALSE, FALSE, FALSE, FALSE },
      "tensor 'decoder.rnn.B' has dtype 1, expected 0 (float32)" },
    { "unknown-tensor", { NULL, 0, -1, -1, TRUE, FALSE, FALSE, FALSE },
      "unexpected tensor 'decoder.extra'" },
    { "duplicate", { NULL, 0, -1, -1, FALSE, TRUE, FALSE, FALSE },
      "tensor 'decoder.conv1d.bias' appears twice" },
    { "missing", { NULL, 0, -1, -1, FALSE, FALSE, TRUE, FALSE },
      "tensor 'decoder.conv1d.bias' is missing" },
    { "trailing", { NULL, 0, -1, -1, FALSE, FALSE, FALSE, TRUE },
      "4 unexpected bytes after the last tensor" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autoptr (GByteArray) b = make_file (&cases[i].k);
    expect_refused (f, cases[i].label, b->data, b->len, WHISPER_VAD_ERROR_FORMAT,
                    cases[i].reason);
  }
}

/* The installed file loads; its first half is refused as truncated. */
static void
test_installed_file (Fixture *f, gconstpointer data)
{
  (void) data;
  g_autofree char *path = whisper_vad_default_path ();
  g_autofree char *contents = NULL;
  gsize size = 0;
  if (!g_file_get_contents (path, &contents, &size, NULL)) {
    g_test_skip ("no installed VAD weight file (tools/fetch-model.sh silero-vad)");
    return;
  }
  g_autoptr (GError) error = NULL;
  WhisperVad *vad = whisper_vad_new (NULL, &error);
  g_assert_no_error (error);
  whisper_vad_free (vad);
  expect_refused (f, "installed-half", (const guint8 *) contents, size / 2,
                  WHISPER_VAD_ERROR_FORMAT, "truncated");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
#define ADD(path, fn) g_test_add (path, Fixture, NULL, fixture_set_up, fn, fixture_tear_down)
  ADD ("/vad-loader/good-file", test_good_file);
  ADD ("/vad-loader/missing-file", test_missing_file);
  ADD ("/vad-loader/wrong-magic", test_wrong_magic);
  ADD ("/vad-loader/wrong-version", test_wrong_version);
  ADD ("/vad-loader/truncated", test_truncated);
  ADD ("/vad-loader/bad-tensors", test_bad_tensors);
  ADD ("/vad-loader/installed-file", test_installed_file);
  return g_test_run ();
}
