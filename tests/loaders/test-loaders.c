/* test-loaders.c: the model loaders.
 *
 * - The real default model (tiny.en, CTranslate2 float16) loads, with the
 *   hyper-parameters, weights and vocabulary it should have; converted to a
 *   ggml file by tools/ct2-to-ggml.py (at test time), it loads to exactly the
 *   same WhisperModel.
 * - Small synthetic CTranslate2 models written here (float32, float16,
 *   bfloat16, int8 and int16 weights) load to the values written.
 * - Hostile files (truncated, corrupted fields, flipped bytes, missing parts)
 *   give NULL and a GError naming the path, never a crash.
 *
 * The default model must be installed (tools/fetch-model.sh): without it
 * the test fails.
 */
#include "half.h"
#include "whisper-model.h"
#include "whisper-vocab.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#ifndef WHISPER_SOURCE_ROOT_DEFAULT
#define WHISPER_SOURCE_ROOT_DEFAULT "."
#endif
#ifndef WHISPER_PYTHON
#define WHISPER_PYTHON "python3"
#endif

static struct {
  char *model_dir; /* the real CTranslate2 model */
  char *tmp_dir;
  char *ggml_f16;  /* the real model converted, made on first use */
  char *ggml_f32;
} env;

/* ------------------------------------------------------------------ */
/* Helpers: files, conversion, expected failures                       */

static void
remove_tree (const char *path)
{
  if (g_file_test (path, G_FILE_TEST_IS_DIR) && !g_file_test (path, G_FILE_TEST_IS_SYMLINK)) {
    GDir *dir = g_dir_open (path, 0, NULL);
    const char *name;
    while (dir != NULL && (name = g_dir_read_name (dir)) != NULL) {
      g_autofree char *child = g_build_filename (path, name, NULL);
      remove_tree (child);
    }
    if (dir != NULL)
      g_dir_close (dir);
    g_rmdir (path);
  } else {
    g_unlink (path);
  }
}

static char *
tmp_path (const char *name)
{
  return g_build_filename (env.tmp_dir, name, NULL);
}

static void
copy_file (const char *from, const char *to)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GMappedFile) mapped = g_mapped_file_new (from, FALSE, &error);
  g_assert_no_error (error);
  g_file_set_contents (to, g_mapped_file_get_contents (mapped),
                       g_mapped_file_get_length (mapped), &error);
  g_assert_no_error (error);
}

static GBytes *
read_file (const char *path)
{
  g_autoptr (GError) error = NULL;
  char *contents;
  gsize length;
  g_file_get_contents (path, &contents, &length, &error);
  g_assert_no_error (error);
  return g_bytes_new_take (contents, length);
}

static void
write_file (const char *path, const void *data, gsize len)
{
  g_autoptr (GError) error = NULL;
  g_file_set_contents (path, data, len, &error);
  g_assert_no_error (error);
}

/* Writes len bytes at offset of an existing file; the old bytes go to saved
 * (if not NULL) so that the patch can be undone. */
static void
patch_bytes (const char *path, gsize offset, const void *bytes, gsize len, void *saved)
{
  int fd = g_open (path, O_RDWR, 0);
  g_assert_cmpint (fd, >=, 0);
  if (saved != NULL)
    g_assert_cmpint (pread (fd, saved, len, offset), ==, (gssize) len);
  g_assert_cmpint (pwrite (fd, bytes, len, offset), ==, (gssize) len);
  close (fd);
}

static guint32
patch_u32 (const char *path, gsize offset, guint32 value)
{
  guint8 bytes[4] = { value & 0xff, (value >> 8) & 0xff, (value >> 16) & 0xff, value >> 24 };
  guint8 saved[4];
  patch_bytes (path, offset, bytes, 4, saved);
  return (guint32) saved[0] | (guint32) saved[1] << 8 | (guint32) saved[2] << 16 |
         (guint32) saved[3] << 24;
}

static void
truncate_file (const char *path, gsize size)
{
  g_assert_cmpint (truncate (path, size), ==, 0);
}

static void
append_bytes (const char *path, const void *bytes, gsize len)
{
  int fd = g_open (path, O_WRONLY | O_APPEND, 0);
  g_assert_cmpint (fd, >=, 0);
  g_assert_cmpint (write (fd, bytes, len), ==, (gssize) len);
  close (fd);
}

static char *
converter_path (void)
{
  const char *root = g_getenv ("WHISPER_SOURCE_ROOT");
  if (root == NULL || root[0] == '\0')
    root = WHISPER_SOURCE_ROOT_DEFAULT;
  return g_build_filename (root, "tools", "ct2-to-ggml.py", NULL);
}

static void
convert_to_ggml (const char *ct2_dir, const char *out, gboolean f32)
{
  g_autofree char *converter = converter_path ();
  const char *argv[] = { WHISPER_PYTHON, converter, ct2_dir, out, f32 ? "--f32" : NULL, NULL };
  g_autofree char *out_text = NULL;
  g_autofree char *err_text = NULL;
  g_autoptr (GError) error = NULL;
  int status = 0;

  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                &out_text, &err_text, &status, &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, &error))
    g_error ("%s %s %s failed: %s\n%s", converter, ct2_dir, out, error->message, err_text);
}

static const char *
real_ggml (gboolean f32)
{
  char **path = f32 ? &env.ggml_f32 : &env.ggml_f16;
  if (*path == NULL) {
    char *file = tmp_path (f32 ? "tiny.en-f32.bin" : "tiny.en-f16.bin");
    convert_to_ggml (env.model_dir, file, f32);
    *path = file;
  }
  return *path;
}

static WhisperModel *
load_ok (const char *path)
{
  g_autoptr (GError) error = NULL;
  WhisperModel *model = whisper_model_load (path, &error);
  g_assert_no_error (error);
  g_assert_nonnull (model);
  return model;
}

/* Loading path must fail with a WHISPER_MODEL_ERROR (of the given code
 * unless code < 0) whose message names mention and contains keyword. */
static void
expect_failure (const char *path, const char *mention, int code, const char *keyword)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperModel) model = whisper_model_load (path, &error);
  if (model != NULL)
    g_error ("loading %s succeeded but should have failed (%s)", path,
             keyword ? keyword : "");
  g_assert_nonnull (error);
  g_assert_true (error->domain == WHISPER_MODEL_ERROR);
  g_test_message ("expected error: %s", error->message);
  if (strstr (error->message, mention) == NULL)
    g_error ("error \"%s\" does not name \"%s\"", error->message, mention);
  if (keyword != NULL && strstr (error->message, keyword) == NULL)
    g_error ("error \"%s\" does not say \"%s\"", error->message, keyword);
  if (code >= 0 && error->code != code)
    g_error ("error \"%s\" has code %d, expected %d", error->message, error->code, code);
}

/* A corrupted file may still load (a flipped weight is still a weight); if
 * it does not, the error must be clean. Returns TRUE when it loaded. */
static gboolean
load_or_clean_failure (const char *path, const char *mention)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperModel) model = whisper_model_load (path, &error);
  if (model != NULL) {
    g_assert_null (error);
    return TRUE;
  }
  g_assert_nonnull (error);
  g_assert_true (error->domain == WHISPER_MODEL_ERROR);
  if (strstr (error->message, mention) == NULL)
    g_error ("error \"%s\" does not name \"%s\"", error->message, mention);
  return FALSE;
}

/* ------------------------------------------------------------------ */
/* Models as lists of named tensors (CTranslate2 names)                */

typedef struct {
  char *name;
  const float *data;
  gsize n;
} NamedTensor;

static void
named_tensor_free (NamedTensor *t)
{
  g_free (t->name);
  g_free ((float *) t->data);
  g_free (t);
}

/* The tensor's values as float32 (a copy the list owns), whatever its
 * stored type; n is the element count it must have. */
static void G_GNUC_PRINTF (4, 5)
add_tensor (GPtrArray *list, const WhisperTensor *stored, gsize n, const char *format, ...)
{
  NamedTensor *t = g_new0 (NamedTensor, 1);
  va_list args;
  va_start (args, format);
  t->name = g_strdup_vprintf (format, args);
  va_end (args);
  g_assert_nonnull (stored->data);
  g_assert_cmpuint (whisper_tensor_n_elements (stored), ==, n);
  t->data = whisper_tensor_to_f32 (stored);
  t->n = n;
  g_ptr_array_add (list, t);
}

/* Element i of a stored tensor, as float32. */
static float
tensor_value (const WhisperTensor *t, gsize i)
{
  const int row = (int) (i / (gsize) t->cols);
  g_autofree float *values = g_new (float, t->cols);
  whisper_tensor_rows_to_f32 (t, row, row + 1, values);
  return values[i % (gsize) t->cols];
}

static void
add_linear (GPtrArray *list, const WhisperLinearWeights *l, int n_out, int n_in,
            const char *prefix)
{
  g_assert_cmpint (l->n_out, ==, n_out);
  g_assert_cmpint (l->n_in, ==, n_in);
  add_tensor (list, &l->weight, (gsize) n_out * n_in, "%s/weight", prefix);
  add_tensor (list, &l->bias, n_out, "%s/bias", prefix);
}

static void
add_layer_norm (GPtrArray *list, const WhisperLayerNormWeights *ln, int d, const char *prefix)
{
  add_tensor (list, &ln->gamma, d, "%s/gamma", prefix);
  add_tensor (list, &ln->beta, d, "%s/beta", prefix);
}

static void
add_layer (GPtrArray *list, const WhisperLayerWeights *l, int d, const char *part,
           int i, gboolean is_decoder)
{
  g_autofree char *p = g_strdup_printf ("%s/layer_%d", part, i);
  g_autofree char *a = g_strconcat (p, "/self_attention/layer_norm", NULL);
  g_autofree char *b = g_strconcat (p, "/self_attention/linear_0", NULL);
  g_autofree char *c = g_strconcat (p, "/self_attention/linear_1", NULL);
  g_autofree char *e = g_strconcat (p, "/ffn/layer_norm", NULL);
  g_autofree char *f = g_strconcat (p, "/ffn/linear_0", NULL);
  g_autofree char *g = g_strconcat (p, "/ffn/linear_1", NULL);
  add_layer_norm (list, &l->attn_ln, d, a);
  add_linear (list, &l->attn_qkv, 3 * d, d, b);
  add_linear (list, &l->attn_out, d, d, c);
  add_layer_norm (list, &l->mlp_ln, d, e);
  add_linear (list, &l->mlp_fc1, 4 * d, d, f);
  add_linear (list, &l->mlp_fc2, d, 4 * d, g);
  if (!is_decoder)
    return;
  g_autofree char *h = g_strconcat (p, "/attention/layer_norm", NULL);
  g_autofree char *j = g_strconcat (p, "/attention/linear_0", NULL);
  g_autofree char *k = g_strconcat (p, "/attention/linear_1", NULL);
  g_autofree char *m = g_strconcat (p, "/attention/linear_2", NULL);
  add_layer_norm (list, &l->cross_ln, d, h);
  add_linear (list, &l->cross_q, d, d, j);
  add_linear (list, &l->cross_kv, 2 * d, d, k);
  add_linear (list, &l->cross_out, d, d, m);
}

static GPtrArray *
collect_tensors (const WhisperModel *model)
{
  GPtrArray *list = g_ptr_array_new_with_free_func ((GDestroyNotify) named_tensor_free);
  int d = whisper_model_lookup (model, WHISPER_HPARAM_N_AUDIO_STATE);
  int n_mels = whisper_model_lookup (model, WHISPER_HPARAM_N_MELS);
  int n_audio_ctx = whisper_model_lookup (model, WHISPER_HPARAM_N_AUDIO_CTX);
  int n_text_ctx = whisper_model_lookup (model, WHISPER_HPARAM_N_TEXT_CTX);
  int n_vocab = whisper_model_lookup (model, WHISPER_HPARAM_N_VOCAB);
  const WhisperEncoderWeights *enc = &model->encoder;
  const WhisperDecoderWeights *dec = &model->decoder;

  add_tensor (list, &enc->conv1_weight, (gsize) d * n_mels * 3, "encoder/conv1/weight");
  add_tensor (list, &enc->conv1_bias, d, "encoder/conv1/bias");
  add_tensor (list, &enc->conv2_weight, (gsize) d * d * 3, "encoder/conv2/weight");
  add_tensor (list, &enc->conv2_bias, d, "encoder/conv2/bias");
  add_tensor (list, &enc->positional, (gsize) n_audio_ctx * d,
              "encoder/position_encodings/encodings");
  add_layer_norm (list, &enc->ln_post, d, "encoder/layer_norm");
  for (int i = 0; i < whisper_model_lookup (model, WHISPER_HPARAM_N_AUDIO_LAYER); i++)
    add_layer (list, &enc->layers[i], d, "encoder", i, FALSE);

  add_tensor (list, &dec->token_embedding, (gsize) n_vocab * d, "decoder/embeddings/weight");
  add_tensor (list, &dec->positional, (gsize) n_text_ctx * d,
              "decoder/position_encodings/encodings");
  add_layer_norm (list, &dec->ln, d, "decoder/layer_norm");
  for (int i = 0; i < whisper_model_lookup (model, WHISPER_HPARAM_N_TEXT_LAYER); i++)
    add_layer (list, &dec->layers[i], d, "decoder", i, TRUE);
  return list;
}

static void
assert_floats_equal (const char *what, const float *a, const float *b, gsize n)
{
  if (memcmp (a, b, n * sizeof (float)) == 0)
    return;
  for (gsize i = 0; i < n; i++)
    if (memcmp (&a[i], &b[i], sizeof (float)) != 0)
      g_error ("%s differs at %" G_GSIZE_FORMAT ": %.9g vs %.9g", what, i, a[i], b[i]);
}

static void
assert_same_hparams (const WhisperModel *a, const WhisperModel *b)
{
  for (int p = 0; p < WHISPER_HPARAM_COUNT; p++)
    g_assert_cmpint (whisper_model_lookup (a, p), ==, whisper_model_lookup (b, p));
}

/* Same hyper-parameters and bit-identical weights. */
static void
assert_same_weights (const WhisperModel *a, const WhisperModel *b)
{
  assert_same_hparams (a, b);
  g_autoptr (GPtrArray) ta = collect_tensors (a);
  g_autoptr (GPtrArray) tb = collect_tensors (b);
  g_assert_cmpuint (ta->len, ==, tb->len);
  for (guint i = 0; i < ta->len; i++) {
    const NamedTensor *x = g_ptr_array_index (ta, i);
    const NamedTensor *y = g_ptr_array_index (tb, i);
    g_assert_cmpstr (x->name, ==, y->name);
    g_assert_cmpuint (x->n, ==, y->n);
    assert_floats_equal (x->name, x->data, y->data, x->n);
  }
}

static void
assert_token (const WhisperModel *model, int id, const void *bytes, gsize len)
{
  g_assert_cmpint (id, <, model->n_tokens);
  gsize have_len;
  const void *have = g_bytes_get_data (model->tokens[id], &have_len);
  if (have_len != len || (len > 0 && memcmp (have, bytes, len) != 0))
    g_error ("token %d is \"%.*s\" (%" G_GSIZE_FORMAT " bytes)", id, (int) have_len,
             (const char *) have, have_len);
}

/* ------------------------------------------------------------------ */
/* Real model                                                          */

static float
bits_to_float (guint32 bits)
{
  float f;
  memcpy (&f, &bits, sizeof f);
  return f;
}

static void
check_real_tiny_en (const WhisperModel *model)
{
  static const struct {
    WhisperHParam param;
    int value;
  } expected[] = {
    { WHISPER_HPARAM_N_VOCAB, 51864 },      { WHISPER_HPARAM_N_AUDIO_CTX, 1500 },
    { WHISPER_HPARAM_N_AUDIO_STATE, 384 },  { WHISPER_HPARAM_N_AUDIO_HEAD, 6 },
    { WHISPER_HPARAM_N_AUDIO_LAYER, 4 },    { WHISPER_HPARAM_N_TEXT_CTX, 448 },
    { WHISPER_HPARAM_N_TEXT_STATE, 384 },   { WHISPER_HPARAM_N_TEXT_HEAD, 6 },
    { WHISPER_HPARAM_N_TEXT_LAYER, 4 },     { WHISPER_HPARAM_N_MELS, 80 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (expected); i++)
    g_assert_cmpint (whisper_model_lookup (model, expected[i].param), ==, expected[i].value);
  g_assert_cmpint (model->n_tokens, ==, 51864);

  /* A few weights, read from the file with numpy when this test was
   * written (float16 values, exact in float32). */
  const int d = 384;
  g_assert_cmpfloat (tensor_value (&model->encoder.conv1_bias, 0), ==, bits_to_float (0x3eadc000));
  g_assert_cmpfloat (tensor_value (&model->encoder.conv1_weight, 5), ==, bits_to_float (0xbcc34000));
  g_assert_cmpfloat (tensor_value (&model->decoder.token_embedding, 220 * d + 3), ==, bits_to_float (0xbc728000));
  g_assert_cmpfloat (tensor_value (&model->encoder.layers[0].attn_qkv.bias, 2 * d), ==, bits_to_float (0x3d592000));
  g_assert_cmpfloat (tensor_value (&model->decoder.layers[3].cross_kv.bias, d + 7), ==, bits_to_float (0x3c4f8000));
  g_assert_cmpfloat (tensor_value (&model->decoder.positional, 447 * d + 383), ==, bits_to_float (0xbdd60000));
  /* Encoder sinusoids: position 1, channel 0 is sin(1). */
  g_assert_cmpfloat_with_epsilon (tensor_value (&model->encoder.positional, d), sinf (1.0f), 1e-3);

  /* Weights kept as stored: float16, pointing into the mapped model file
   * (no float32 copy exists). */
  g_assert_nonnull (model->mapped);
  const guint8 *file = (const guint8 *) g_mapped_file_get_contents (model->mapped);
  const gsize file_size = g_mapped_file_get_length (model->mapped);
  /* ggml: q, k, v are separate records, fused into a buffer of the loader's
   * (still float16); its biases are float32 in the file. */
  const gboolean ggml = model->format == WHISPER_MODEL_FORMAT_GGML;
  /* an f16 ggml file (or f32 with --f32): all matrices in that type */
  const WhisperDType matrices = ggml ? model->encoder.conv1_weight.type : WHISPER_DTYPE_F16;
  g_assert_true (matrices == WHISPER_DTYPE_F16 || matrices == WHISPER_DTYPE_F32);
  const struct {
    const WhisperTensor *t;
    WhisperDType type;
    gboolean in_file;
  } kept[] = {
    { &model->encoder.conv1_weight, matrices, TRUE },
    { &model->encoder.layers[2].mlp_fc1.weight, matrices, TRUE },
    { &model->decoder.token_embedding, matrices, TRUE },
    { &model->decoder.layers[3].cross_kv.weight, matrices, !ggml },
    { &model->decoder.layers[0].attn_qkv.bias, ggml ? WHISPER_DTYPE_F32 : WHISPER_DTYPE_F16,
      !ggml },
  };
  for (guint i = 0; i < G_N_ELEMENTS (kept); i++) {
    const WhisperTensor *t = kept[i].t;
    if (t->type != kept[i].type)
      g_error ("%s: tensor %u is %s, expected %s", ggml ? "ggml" : "ct2", i,
               whisper_dtype_name (t->type), whisper_dtype_name (kept[i].type));
    const guint8 *p = t->data;
    const gsize bytes = whisper_dtype_size (t->type) * whisper_tensor_n_elements (t);
    g_assert_cmpint (p >= file && p + bytes <= file + file_size, ==, kept[i].in_file);
  }

  /* The key has no bias: zeros in the fused layouts. */
  for (int l = 0; l < 4; l++) {
    for (int i = 0; i < d; i++) {
      g_assert_cmpfloat (tensor_value (&model->encoder.layers[l].attn_qkv.bias, d + i), ==, 0.0f);
      g_assert_cmpfloat (tensor_value (&model->decoder.layers[l].attn_qkv.bias, d + i), ==, 0.0f);
      g_assert_cmpfloat (tensor_value (&model->decoder.layers[l].cross_kv.bias, i), ==, 0.0f);
    }
  }

  /* Vocabulary: raw bytes, specials as ASCII names. */
  assert_token (model, 220, " ", 1);
  assert_token (model, 198, "\n", 1);
  assert_token (model, 50256, "<|endoftext|>", 13);
  assert_token (model, 50257, "<|startoftranscript|>", 21);
  assert_token (model, 50258, "<|en|>", 6);
  assert_token (model, 50357, "<|translate|>", 13);
  assert_token (model, 50361, "<|nocaptions|>", 14);
  assert_token (model, 50362, "<|notimestamps|>", 16);
  assert_token (model, 50363, "<|0.00|>", 8);
  assert_token (model, 51863, "<|30.00|>", 9);
  assert_token (model, 40304, " caf\xc3\xa9", 6);
  assert_token (model, 26391, "\xe2\x82\xac", 3);
}

static void
test_real_ct2 (void)
{
  g_autoptr (WhisperModel) model = load_ok (env.model_dir);
  g_assert_cmpint (model->format, ==, WHISPER_MODEL_FORMAT_CT2);
  g_assert_cmpstr (model->path, ==, env.model_dir);
  check_real_tiny_en (model);

  /* config.json */
  g_assert_cmpint (model->n_suppress_ids, ==, 90);
  g_assert_cmpint (model->suppress_ids[0], ==, 1);
  g_assert_cmpint (model->n_suppress_ids_begin, ==, 2);
  g_assert_cmpint (model->suppress_ids_begin[0], ==, 220);
  g_assert_cmpint (model->suppress_ids_begin[1], ==, 50256);

  /* The model.bin path itself loads the directory. */
  g_autofree char *model_bin = g_build_filename (env.model_dir, "model.bin", NULL);
  g_autoptr (WhisperModel) again = load_ok (model_bin);
  assert_same_weights (model, again);
}

static void
check_ggml_equals_ct2 (gboolean f32)
{
  g_autoptr (WhisperModel) ct2 = load_ok (env.model_dir);
  g_autoptr (WhisperModel) ggml = load_ok (real_ggml (f32));
  g_assert_cmpint (ggml->format, ==, WHISPER_MODEL_FORMAT_GGML);
  /* the file's matrix type is kept (check_real_tiny_en checks the rest) */
  g_assert_cmpint (ggml->encoder.conv1_weight.type, ==, f32 ? WHISPER_DTYPE_F32 : WHISPER_DTYPE_F16);
  check_real_tiny_en (ggml);
  assert_same_weights (ct2, ggml);

  /* Every token, including the special names ggml does not store. */
  g_assert_cmpint (ggml->n_tokens, ==, ct2->n_tokens);
  for (int id = 0; id < ct2->n_tokens; id++)
    if (!g_bytes_equal (ct2->tokens[id], ggml->tokens[id]))
      g_error ("token %d differs between the formats", id);

  g_assert_cmpint (ggml->n_suppress_ids, ==, 0);
  g_assert_null (ggml->suppress_ids);
}

static void
test_real_ggml_f16 (void)
{
  check_ggml_equals_ct2 (FALSE);
}

static void
test_real_ggml_f32 (void)
{
  check_ggml_equals_ct2 (TRUE);
}

/* ------------------------------------------------------------------ */
/* Unit tests of the small pieces                                      */

static void
test_byte_mapping (void)
{
  static const struct {
    guint8 byte;
    gunichar c;
  } examples[] = {
    { 0x00, 0x100 }, { '\t', 0x109 }, { '\n', 0x10a }, { '\r', 0x10d },
    { ' ', 0x120 },  { 0x7f, 0x121 }, { 0x80, 0x122 }, { 0xa0, 0x142 },
    { 0xad, 0x143 }, { '!', '!' },    { 'a', 'a' },    { 0xa1, 0xa1 },
    { 0xae, 0xae },  { 0xff, 0xff },
  };
  for (guint i = 0; i < G_N_ELEMENTS (examples); i++) {
    g_assert_cmpuint (whisper_vocab_byte_to_unichar (examples[i].byte), ==, examples[i].c);
    g_assert_cmpint (whisper_vocab_unichar_to_byte (examples[i].c), ==, examples[i].byte);
  }

  /* A bijection between the 256 bytes and 256 code points below U+0144. */
  gboolean seen[0x144] = { FALSE };
  for (int b = 0; b < 256; b++) {
    gunichar c = whisper_vocab_byte_to_unichar ((guint8) b);
    g_assert_cmpuint (c, <, 0x144);
    g_assert_false (seen[c]);
    seen[c] = TRUE;
    g_assert_cmpint (whisper_vocab_unichar_to_byte (c), ==, b);
  }
  for (gunichar c = 0; c < 0x144; c++)
    if (!seen[c])
      g_assert_cmpint (whisper_vocab_unichar_to_byte (c), ==, -1);
  g_assert_cmpint (whisper_vocab_unichar_to_byte (0x144), ==, -1);
  g_assert_cmpint (whisper_vocab_unichar_to_byte (0x20ac), ==, -1);

  /* Strings both ways. */
  const guint8 raw[] = { ' ', 'c', 'a', 'f', 0xc3, 0xa9, 0x00, '\n' };
  g_autofree char *text = whisper_vocab_bytes_to_byte_level (raw, sizeof raw);
  g_assert_cmpstr (text, ==, "\xc4\xa0" "caf\xc3\x83\xc2\xa9\xc4\x80\xc4\x8a");
  gunichar bad = 0;
  g_autoptr (GBytes) back = whisper_vocab_bytes_from_byte_level (text, strlen (text), &bad);
  g_assert_nonnull (back);
  g_assert_cmpmem (g_bytes_get_data (back, NULL), g_bytes_get_size (back), raw, sizeof raw);

  g_assert_null (whisper_vocab_bytes_from_byte_level ("a\xe2\x82\xac", 4, &bad));
  g_assert_cmpuint (bad, ==, 0x20ac);
  g_assert_null (whisper_vocab_bytes_from_byte_level ("a\xff", 2, &bad));
  g_assert_cmpuint (bad, ==, (gunichar) -1);
  g_assert_null (whisper_vocab_bytes_from_byte_level ("\xc4", 1, &bad)); /* cut sequence */

  g_assert_true (whisper_vocab_is_special_name ("<|en|>", 6));
  g_assert_false (whisper_vocab_is_special_name ("<|>", 3));
  g_assert_false (whisper_vocab_is_special_name ("<en>", 4));
}

static void
assert_special (int n_vocab, int id, const char *name)
{
  g_autofree char *have = whisper_vocab_special_name (n_vocab, id);
  g_assert_cmpstr (have, ==, name);
}

static void
test_special_names (void)
{
  /* English-only. */
  g_assert_cmpint (whisper_vocab_eot_id (51864), ==, 50256);
  g_assert_cmpint (whisper_vocab_num_languages (51864), ==, 99);
  assert_special (51864, 50255, NULL);
  assert_special (51864, 50256, "<|endoftext|>");
  assert_special (51864, 50356, "<|su|>");
  assert_special (51864, 50278, "<|iw|>");
  assert_special (51865, 50279, "<|he|>");
  assert_special (51864, 50361, "<|nocaptions|>");
  assert_special (51864, 51864, NULL);
  /* Multilingual. */
  g_assert_cmpint (whisper_vocab_eot_id (51865), ==, 50257);
  assert_special (51865, 50257, "<|endoftext|>");
  assert_special (51865, 50258, "<|startoftranscript|>");
  assert_special (51865, 50259, "<|en|>");
  assert_special (51865, 50358, "<|translate|>");
  assert_special (51865, 50359, "<|transcribe|>");
  assert_special (51865, 50360, "<|startoflm|>");
  assert_special (51865, 50361, "<|startofprev|>");
  assert_special (51865, 50362, "<|nospeech|>");
  assert_special (51865, 50363, "<|notimestamps|>");
  assert_special (51865, 50364, "<|0.00|>");
  assert_special (51865, 50365, "<|0.02|>");
  assert_special (51865, 50364 + 1234, "<|24.68|>");
  assert_special (51865, 51864, "<|30.00|>");
  /* 100 languages (large-v3). */
  g_assert_cmpint (whisper_vocab_num_languages (51866), ==, 100);
  assert_special (51866, 50358, "<|yue|>");
  assert_special (51866, 50359, "<|translate|>");
  assert_special (51866, 50365, "<|0.00|>");
  assert_special (51866, 51865, "<|30.00|>");
  /* Not a Whisper vocabulary size. */
  g_assert_cmpint (whisper_vocab_eot_id (12), ==, -1);
  assert_special (12, 10, NULL);
  g_assert_cmpint (whisper_vocab_num_languages (51867), ==, -1);
}

static void
test_half_to_float (void)
{
  g_assert_cmpfloat (whisper_half_to_float (0x0000), ==, 0.0f);
  g_assert_true (signbit (whisper_half_to_float (0x8000)));
  g_assert_cmpfloat (whisper_half_to_float (0x3c00), ==, 1.0f);
  g_assert_cmpfloat (whisper_half_to_float (0xc000), ==, -2.0f);
  g_assert_cmpfloat (whisper_half_to_float (0x3555), ==, 0.333251953125f);
  g_assert_cmpfloat (whisper_half_to_float (0x7bff), ==, 65504.0f);
  g_assert_cmpfloat (whisper_half_to_float (0x0400), ==, ldexpf (1.0f, -14));
  g_assert_cmpfloat (whisper_half_to_float (0x0001), ==, ldexpf (1.0f, -24));
  g_assert_cmpfloat (whisper_half_to_float (0x83ff), ==, -ldexpf (1023.0f, -24));
  g_assert_true (isinf (whisper_half_to_float (0x7c00)));
  g_assert_true (isinf (whisper_half_to_float (0xfc00)) && whisper_half_to_float (0xfc00) < 0);
  g_assert_true (isnan (whisper_half_to_float (0x7e00)));
}

static void
test_model_basics (void)
{
  /* Default path. */
  g_autofree char *saved = g_strdup (g_getenv ("WHISPER_MODEL"));
  g_setenv ("WHISPER_MODEL", "/some/model", TRUE);
  g_autofree char *from_env = whisper_model_default_path ();
  g_assert_cmpstr (from_env, ==, "/some/model");
  g_unsetenv ("WHISPER_MODEL");
  g_autofree char *fallback = whisper_model_default_path ();
  g_assert_true (g_str_has_suffix (fallback, "/gst-whisper/models/tiny.en"));
  g_assert_true (g_str_has_prefix (fallback, g_get_user_data_dir ()));
  if (saved != NULL)
    g_setenv ("WHISPER_MODEL", saved, TRUE);

  /* Lookups are counted. */
  g_autoptr (WhisperModel) model = whisper_model_new_empty ("/nowhere", WHISPER_MODEL_FORMAT_GGML);
  whisper_model_set_hparam (model, WHISPER_HPARAM_N_MELS, 80);
  guint64 before = whisper_model_lookup_count ();
  g_assert_cmpint (whisper_model_lookup (model, WHISPER_HPARAM_N_MELS), ==, 80);
  g_assert_cmpint (whisper_model_lookup (model, WHISPER_HPARAM_N_VOCAB), ==, 0);
  g_assert_cmpuint (whisper_model_lookup_count (), ==, before + 2);

  /* Absurd allocations are errors, not aborts. */
  g_autoptr (GError) error = NULL;
  g_assert_null (whisper_model_alloc_floats (model, G_MAXSIZE / 2, &error));
  g_assert_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT);
  g_assert_nonnull (strstr (error->message, "/nowhere"));
  g_clear_error (&error);
  g_assert_null (whisper_model_alloc_floats (model, 0, &error));
  g_clear_error (&error);
  float *small = whisper_model_alloc_floats (model, 16, &error);
  g_assert_no_error (error);
  g_assert_nonnull (small);
  small[15] = 1.0f;

  /* Validation names what is wrong. */
  g_assert_false (whisper_model_validate (model, &error));
  g_assert_nonnull (strstr (error->message, "n_vocab"));
  g_clear_error (&error);
  const int tiny[] = { 51864, 1500, 384, 6, 4, 448, 384, 6, 4, 80 };
  for (int p = 0; p < WHISPER_HPARAM_COUNT; p++)
    whisper_model_set_hparam (model, p, tiny[p]);
  g_assert_true (whisper_model_check_hparams (model, &error));
  g_assert_false (whisper_model_validate (model, &error));
  g_assert_nonnull (strstr (error->message, "conv1 weight"));
  g_clear_error (&error);
  whisper_model_set_hparam (model, WHISPER_HPARAM_N_TEXT_HEAD, 5);
  g_assert_false (whisper_model_check_hparams (model, &error));
  g_assert_nonnull (strstr (error->message, "heads"));
  g_clear_error (&error);
  whisper_model_set_hparam (model, WHISPER_HPARAM_N_TEXT_HEAD, 6);
  whisper_model_set_hparam (model, WHISPER_HPARAM_N_TEXT_STATE, 390);
  g_assert_false (whisper_model_check_hparams (model, &error));
  g_clear_error (&error);

  whisper_model_free (NULL);
}

/* ------------------------------------------------------------------ */
/* Synthetic CTranslate2 models                                        */

enum { SYN_D = 8, SYN_HEADS = 2, SYN_MELS = 4, SYN_AUDIO_CTX = 6, SYN_TEXT_CTX = 5,
       SYN_VOCAB = 12, SYN_ENC_LAYERS = 1, SYN_DEC_LAYERS = 2 };

enum { DT_F32 = 0, DT_INT8 = 1, DT_INT16 = 2, DT_INT32 = 3, DT_F16 = 4, DT_BF16 = 5 };

typedef struct {
  int weight_dtype; /* dtype of linear, conv and embedding weights */
  int activation;
  guint32 version;
  guint32 revision;
  const char *spec;
  gboolean untied_projection;
  gboolean no_decoder_heads;
  gboolean vocabulary_json;
  gboolean crlf;          /* every vocabulary.txt line ends with \r\n */
  gboolean one_crlf;      /* only one line does */
  const char *config;     /* config.json text, or NULL for none */
} SynthOptions;

static const SynthOptions synth_defaults = {
  .weight_dtype = DT_F32, .activation = 3, .version = 6, .revision = 3,
  .spec = "WhisperSpec",
};

/* Byte-level vocabulary strings and the raw bytes the loader must give. */
static const struct {
  const char *text;
  const char *json;
  const char *bytes;
  gsize len;
} synth_vocab[SYN_VOCAB] = {
  { "!", "!", "!", 1 },
  { "\xc4\xa0" "a", "\\u0120a", " a", 2 },
  { "", "", "", 0 },
  { "\xc4\x8a", "\\u010a", "\n", 1 },
  { "\xc4\xa0" "caf\xc3\x83\xc2\xa9", "\\u0120caf\\u00c3\\u00a9", " caf\xc3\xa9", 6 },
  { "\xc3\xa2\xc4\xa4\xc2\xac", "\\u00e2\\u0124\\u00ac", "\xe2\x82\xac", 3 },
  { "c", "c", "c", 1 },
  { "d", "d", "d", 1 },
  { "\xc4\x80", "\\u0100", "\0", 1 },
  { "<|endoftext|>", "<|endoftext|>", "<|endoftext|>", 13 },
  { "<|startoftranscript|>", "<|startoftranscript|>", "<|startoftranscript|>", 21 },
  { "<|0.00|>", "<|0.00|>", "<|0.00|>", 8 },
};

typedef struct {
  SynthOptions opt;
  GByteArray *vars;
  guint n_vars;
  GRand *rand;
  GHashTable *expected; /* CT2 name -> GArray of float */
} SynthWriter;

static void
put_u8 (GByteArray *b, guint8 v)
{
  g_byte_array_append (b, &v, 1);
}

static void
put_u16 (GByteArray *b, guint16 v)
{
  guint8 x[2] = { v & 0xff, v >> 8 };
  g_byte_array_append (b, x, 2);
}

static void
put_u32 (GByteArray *b, guint32 v)
{
  guint8 x[4] = { v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24 };
  g_byte_array_append (b, x, 4);
}

static void
put_str (GByteArray *b, const char *s)
{
  put_u16 (b, strlen (s) + 1);
  g_byte_array_append (b, (const guint8 *) s, strlen (s) + 1);
}

static void
put_f32 (GByteArray *b, float f)
{
  guint32 bits;
  memcpy (&bits, &f, sizeof bits);
  put_u32 (b, bits);
}

/* Exact for the values written here (multiples of 1/64 in [-1, 1]). */
static guint16
float_to_half (float f)
{
  guint32 bits;
  memcpy (&bits, &f, sizeof bits);
  guint16 sign = (bits >> 16) & 0x8000;
  if ((bits & 0x7fffffff) == 0)
    return sign;
  int exponent = (int) ((bits >> 23) & 0xff) - 127 + 15;
  g_assert (exponent > 0 && exponent < 31 && (bits & 0x1fff) == 0);
  return sign | (guint16) (exponent << 10) | (guint16) ((bits >> 13) & 0x3ff);
}

static void
synth_raw (SynthWriter *w, const char *name, guint rank, const guint32 *dims, int dtype,
           const void *data, gsize n_bytes)
{
  put_str (w->vars, name);
  put_u8 (w->vars, rank);
  for (guint i = 0; i < rank; i++)
    put_u32 (w->vars, dims[i]);
  put_u8 (w->vars, dtype);
  put_u32 (w->vars, n_bytes);
  g_byte_array_append (w->vars, data, n_bytes);
  w->n_vars++;
}

static void
synth_int_scalar (SynthWriter *w, const char *name, int dtype, int value)
{
  guint8 data[4] = { value & 0xff, (value >> 8) & 0xff, (value >> 16) & 0xff, (value >> 24) & 0xff };
  gsize size = dtype == DT_INT8 ? 1 : dtype == DT_INT16 ? 2 : 4;
  synth_raw (w, name, 0, NULL, dtype, data, size);
}

/* Writes a float tensor in the given dtype and records the floats the
 * loader must produce. Quantized dtypes write name_scale as CTranslate2
 * does (int8: 127/amax per row; int16: 2^10/amax for the tensor). */
static void
synth_write_values (SynthWriter *w, const char *name, guint rank, const guint32 *dims,
                    int dtype, const float *values, gsize n)
{
  g_autoptr (GByteArray) data = g_byte_array_new ();
  GArray *expected = g_array_sized_new (FALSE, FALSE, sizeof (float), n);
  g_array_set_size (expected, n);
  float *out = (float *) expected->data;

  if (dtype == DT_INT8 || dtype == DT_INT16) {
    gsize rows = dtype == DT_INT8 ? dims[0] : 1;
    gsize row_len = n / rows;
    g_autofree float *scales = g_new (float, rows);
    for (gsize r = 0; r < rows; r++) {
      float amax = 0.0f;
      for (gsize j = 0; j < row_len; j++)
        amax = MAX (amax, fabsf (values[r * row_len + j]));
      float top = dtype == DT_INT8 ? 127.0f : 1024.0f;
      scales[r] = amax == 0.0f ? top : top / amax;
      for (gsize j = 0; j < row_len; j++) {
        gsize i = r * row_len + j;
        float q = rintf (values[i] * scales[r]);
        if (dtype == DT_INT8) {
          gint8 q8 = (gint8) CLAMP (q, -127.0f, 127.0f);
          g_byte_array_append (data, (const guint8 *) &q8, 1);
          out[i] = (float) q8 * (1.0f / scales[r]);
        } else {
          put_u16 (data, (guint16) (gint16) q);
          out[i] = q * (1.0f / scales[r]);
        }
        /* Dequantization is close to the original value. */
        g_assert_cmpfloat (fabsf (out[i] - values[i]), <=, 0.5f / scales[r] + 1e-6f);
      }
    }
    synth_raw (w, name, rank, dims, dtype, data->data, data->len);

    g_autofree char *scale_name = g_strconcat (name, "_scale", NULL);
    g_autoptr (GByteArray) scale_data = g_byte_array_new ();
    for (gsize r = 0; r < rows; r++)
      put_f32 (scale_data, scales[r]);
    guint32 scale_dims[1] = { rows };
    synth_raw (w, scale_name, dtype == DT_INT8 ? 1 : 0, scale_dims, DT_F32,
               scale_data->data, scale_data->len);
  } else {
    for (gsize i = 0; i < n; i++) {
      if (dtype == DT_F32)
        put_f32 (data, values[i]);
      else if (dtype == DT_F16)
        put_u16 (data, float_to_half (values[i]));
      else {
        guint32 bits;
        memcpy (&bits, &values[i], sizeof bits);
        put_u16 (data, bits >> 16);
      }
      out[i] = values[i];
    }
    synth_raw (w, name, rank, dims, dtype, data->data, data->len);
  }
  g_hash_table_insert (w->expected, g_strdup (name), expected);
}

/* A tensor of random multiples of 1/64; elements [zero_from, zero_to) are
 * zero (the key bias inside fused biases). */
static void
synth_tensor (SynthWriter *w, const char *name, gboolean is_weight, guint32 d0, guint32 d1,
              guint32 d2, gsize zero_from, gsize zero_to)
{
  guint32 dims[3] = { d0, d1, d2 };
  guint rank = d2 ? 3 : d1 ? 2 : 1;
  gsize n = (gsize) d0 * (d1 ? d1 : 1) * (d2 ? d2 : 1);
  g_autofree float *values = g_new (float, n);
  for (gsize i = 0; i < n; i++)
    values[i] = (i >= zero_from && i < zero_to)
                  ? 0.0f : (float) g_rand_int_range (w->rand, -64, 65) / 64.0f;

  /* Non-weights follow CTranslate2's quantization modes: int8 leaves them
   * float32 (as "int8"), int16 writes them float32, others use the dtype. */
  int dtype = w->opt.weight_dtype;
  if (!is_weight && (dtype == DT_INT8 || dtype == DT_INT16))
    dtype = dtype == DT_INT8 ? DT_F16 : DT_F32;
  synth_write_values (w, name, rank, dims, dtype, values, n);
}

static void
synth_linear (SynthWriter *w, const char *prefix, guint32 n_out, guint32 n_in,
              gsize zero_from, gsize zero_to)
{
  g_autofree char *weight = g_strconcat (prefix, "/weight", NULL);
  g_autofree char *bias = g_strconcat (prefix, "/bias", NULL);
  synth_tensor (w, weight, TRUE, n_out, n_in, 0, 0, 0);
  synth_tensor (w, bias, FALSE, n_out, 0, 0, zero_from, zero_to);
}

static void
synth_layer_norm (SynthWriter *w, const char *prefix)
{
  g_autofree char *gamma = g_strconcat (prefix, "/gamma", NULL);
  g_autofree char *beta = g_strconcat (prefix, "/beta", NULL);
  synth_tensor (w, gamma, FALSE, SYN_D, 0, 0, 0, 0);
  synth_tensor (w, beta, FALSE, SYN_D, 0, 0, 0, 0);
}

static void
synth_layer (SynthWriter *w, const char *part, int i, gboolean is_decoder)
{
  const guint32 d = SYN_D;
  g_autofree char *p = g_strdup_printf ("%s/layer_%d", part, i);
  g_autofree char *a = g_strconcat (p, "/self_attention/layer_norm", NULL);
  g_autofree char *b = g_strconcat (p, "/self_attention/linear_0", NULL);
  g_autofree char *c = g_strconcat (p, "/self_attention/linear_1", NULL);
  g_autofree char *e = g_strconcat (p, "/ffn/layer_norm", NULL);
  g_autofree char *f = g_strconcat (p, "/ffn/linear_0", NULL);
  g_autofree char *g = g_strconcat (p, "/ffn/linear_1", NULL);
  synth_layer_norm (w, a);
  synth_linear (w, b, 3 * d, d, d, 2 * d);
  synth_linear (w, c, d, d, 0, 0);
  synth_layer_norm (w, e);
  synth_linear (w, f, 4 * d, d, 0, 0);
  synth_linear (w, g, d, 4 * d, 0, 0);
  if (!is_decoder)
    return;
  g_autofree char *h = g_strconcat (p, "/attention/layer_norm", NULL);
  g_autofree char *j = g_strconcat (p, "/attention/linear_0", NULL);
  g_autofree char *k = g_strconcat (p, "/attention/linear_1", NULL);
  g_autofree char *m = g_strconcat (p, "/attention/linear_2", NULL);
  synth_layer_norm (w, h);
  synth_linear (w, j, d, d, 0, 0);
  synth_linear (w, k, 2 * d, d, 0, d);
  synth_linear (w, m, d, d, 0, 0);
}

static void
synth_write_vocabulary (const char *dir, const SynthOptions *opt)
{
  GString *text = g_string_new (NULL);
  if (opt->vocabulary_json) {
    g_string_append (text, "[\n");
    for (int i = 0; i < SYN_VOCAB; i++)
      g_string_append_printf (text, "  \"%s\"%s\n", synth_vocab[i].json,
                              i + 1 < SYN_VOCAB ? "," : "");
    g_string_append (text, "]\n");
  } else {
    for (int i = 0; i < SYN_VOCAB; i++)
      g_string_append_printf (text, "%s%s\n", synth_vocab[i].text,
                              opt->crlf || (opt->one_crlf && i == 6) ? "\r" : "");
  }
  g_autofree char *path = g_build_filename (dir, opt->vocabulary_json ? "vocabulary.json"
                                                                       : "vocabulary.txt", NULL);
  write_file (path, text->str, text->len);
  g_string_free (text, TRUE);
}

/* Writes a synthetic model directory tmp/label and returns its path; the
 * expected floats per CTranslate2 name go to *expected (if not NULL). */
static char *
synth_model (const char *label, const SynthOptions *opt, GHashTable **expected)
{
  SynthWriter w = { .opt = *opt };
  w.vars = g_byte_array_new ();
  w.rand = g_rand_new_with_seed (1234);
  w.expected = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                      (GDestroyNotify) g_array_unref);
  const guint32 d = SYN_D;

  synth_int_scalar (&w, "decoder/activation", DT_INT8, opt->activation);
  synth_int_scalar (&w, "decoder/alibi", DT_INT8, 0);
  synth_int_scalar (&w, "decoder/alignment_heads", DT_INT16, 1);
  synth_int_scalar (&w, "decoder/alignment_layer", DT_INT16, -1);
  if (!opt->no_decoder_heads)
    synth_int_scalar (&w, "decoder/num_heads", DT_INT16, SYN_HEADS);
  synth_int_scalar (&w, "decoder/pre_norm", DT_INT8, 1);
  synth_int_scalar (&w, "decoder/scale_embeddings", DT_INT8, 0);
  synth_int_scalar (&w, "encoder/num_heads", DT_INT16, SYN_HEADS);

  synth_tensor (&w, "encoder/conv1/weight", TRUE, d, SYN_MELS, 3, 0, 0);
  synth_tensor (&w, "encoder/conv1/bias", FALSE, d, 0, 0, 0, 0);
  synth_tensor (&w, "encoder/conv2/weight", TRUE, d, d, 3, 0, 0);
  synth_tensor (&w, "encoder/conv2/bias", FALSE, d, 0, 0, 0, 0);
  synth_tensor (&w, "encoder/position_encodings/encodings", FALSE, SYN_AUDIO_CTX, d, 0, 0, 0);
  synth_layer_norm (&w, "encoder/layer_norm");
  for (int i = 0; i < SYN_ENC_LAYERS; i++)
    synth_layer (&w, "encoder", i, FALSE);

  synth_tensor (&w, "decoder/embeddings/weight", TRUE, SYN_VOCAB, d, 0, 0, 0);
  synth_tensor (&w, "decoder/position_encodings/encodings", FALSE, SYN_TEXT_CTX, d, 0, 0, 0);
  synth_layer_norm (&w, "decoder/layer_norm");
  for (int i = 0; i < SYN_DEC_LAYERS; i++)
    synth_layer (&w, "decoder", i, TRUE);
  if (opt->untied_projection)
    synth_tensor (&w, "decoder/projection/weight", TRUE, SYN_VOCAB, d, 0, 0, 0);

  g_autoptr (GByteArray) file = g_byte_array_new ();
  put_u32 (file, opt->version);
  put_str (file, opt->spec);
  put_u32 (file, opt->revision);
  put_u32 (file, w.n_vars);
  g_byte_array_append (file, w.vars->data, w.vars->len);
  if (opt->untied_projection) {
    put_u32 (file, 0);
  } else {
    put_u32 (file, 1);
    put_str (file, "decoder/projection/weight");
    put_str (file, "decoder/embeddings/weight");
  }

  char *dir = tmp_path (label);
  remove_tree (dir);
  g_assert_cmpint (g_mkdir_with_parents (dir, 0700), ==, 0);
  g_autofree char *model_bin = g_build_filename (dir, "model.bin", NULL);
  write_file (model_bin, file->data, file->len);
  synth_write_vocabulary (dir, opt);
  if (opt->config != NULL) {
    g_autofree char *config = g_build_filename (dir, "config.json", NULL);
    write_file (config, opt->config, strlen (opt->config));
  }

  g_byte_array_unref (w.vars);
  g_rand_free (w.rand);
  if (expected != NULL)
    *expected = w.expected;
  else
    g_hash_table_unref (w.expected);
  return dir;
}

static void
assert_matches_expected (const WhisperModel *model, GHashTable *expected)
{
  g_autoptr (GPtrArray) tensors = collect_tensors (model);
  for (guint i = 0; i < tensors->len; i++) {
    const NamedTensor *t = g_ptr_array_index (tensors, i);
    GArray *want = g_hash_table_lookup (expected, t->name);
    if (want == NULL)
      g_error ("no expected values for %s", t->name);
    g_assert_cmpuint (want->len, ==, t->n);
    assert_floats_equal (t->name, t->data, (const float *) want->data, t->n);
  }
}

static void
assert_synth_hparams_and_vocab (const WhisperModel *model)
{
  const int expected[WHISPER_HPARAM_COUNT] = {
    [WHISPER_HPARAM_N_VOCAB] = SYN_VOCAB, [WHISPER_HPARAM_N_AUDIO_CTX] = SYN_AUDIO_CTX,
    [WHISPER_HPARAM_N_AUDIO_STATE] = SYN_D, [WHISPER_HPARAM_N_AUDIO_HEAD] = SYN_HEADS,
    [WHISPER_HPARAM_N_AUDIO_LAYER] = SYN_ENC_LAYERS, [WHISPER_HPARAM_N_TEXT_CTX] = SYN_TEXT_CTX,
    [WHISPER_HPARAM_N_TEXT_STATE] = SYN_D, [WHISPER_HPARAM_N_TEXT_HEAD] = SYN_HEADS,
    [WHISPER_HPARAM_N_TEXT_LAYER] = SYN_DEC_LAYERS, [WHISPER_HPARAM_N_MELS] = SYN_MELS,
  };
  for (int p = 0; p < WHISPER_HPARAM_COUNT; p++)
    g_assert_cmpint (whisper_model_lookup (model, p), ==, expected[p]);
  g_assert_cmpint (model->n_tokens, ==, SYN_VOCAB);
  for (int i = 0; i < SYN_VOCAB; i++)
    assert_token (model, i, synth_vocab[i].bytes, synth_vocab[i].len);
}

static void
check_synthetic (const char *label, int weight_dtype)
{
  SynthOptions opt = synth_defaults;
  opt.weight_dtype = weight_dtype;
  g_autoptr (GHashTable) expected = NULL;
  g_autofree char *dir = synth_model (label, &opt, &expected);
  g_autoptr (WhisperModel) model = load_ok (dir);
  assert_synth_hparams_and_vocab (model);
  assert_matches_expected (model, expected);
  g_assert_null (model->suppress_ids);

  /* The converter (numpy) dequantizes and converts the same way: its ggml
   * file loads to the same weights. */
  g_autofree char *ggml_file = g_strconcat (dir, ".ggml", NULL);
  gboolean f16_exact = weight_dtype == DT_F16;
  convert_to_ggml (dir, ggml_file, !f16_exact);
  g_autoptr (WhisperModel) ggml = load_ok (ggml_file);
  assert_same_weights (model, ggml);
  /* ggml stores the tokens before <|endoftext|> only; this vocabulary size
   * is not a Whisper one, so the rest have no names. */
  for (int i = 0; i < 9; i++)
    assert_token (ggml, i, synth_vocab[i].bytes, synth_vocab[i].len);
  for (int i = 9; i < SYN_VOCAB; i++)
    assert_token (ggml, i, "", 0);
}

static void
test_synthetic_f32 (void)
{
  check_synthetic ("synth-f32", DT_F32);
}

static void
test_synthetic_f16 (void)
{
  check_synthetic ("synth-f16", DT_F16);
}

static void
test_synthetic_bf16 (void)
{
  check_synthetic ("synth-bf16", DT_BF16);
}

static void
test_synthetic_int8 (void)
{
  check_synthetic ("synth-int8", DT_INT8);
}

static void
test_synthetic_int16 (void)
{
  check_synthetic ("synth-int16", DT_INT16);
}

static void
test_synthetic_variants (void)
{
  SynthOptions opt = synth_defaults;
  g_autoptr (GHashTable) expected = NULL;

  /* vocabulary.json with \u escapes. */
  opt.vocabulary_json = TRUE;
  g_autofree char *json_dir = synth_model ("synth-json", &opt, &expected);
  g_autoptr (WhisperModel) json_model = load_ok (json_dir);
  assert_synth_hparams_and_vocab (json_model);
  assert_matches_expected (json_model, expected);

  /* Every line ends with \r\n: stripped. */
  opt = synth_defaults;
  opt.crlf = TRUE;
  g_autofree char *crlf_dir = synth_model ("synth-crlf", &opt, NULL);
  g_autoptr (WhisperModel) crlf_model = load_ok (crlf_dir);
  assert_synth_hparams_and_vocab (crlf_model);

  /* decoder/num_heads missing: the encoder's is used. */
  opt = synth_defaults;
  opt.no_decoder_heads = TRUE;
  g_autofree char *heads_dir = synth_model ("synth-heads", &opt, NULL);
  g_autoptr (WhisperModel) heads_model = load_ok (heads_dir);
  g_assert_cmpint (whisper_model_lookup (heads_model, WHISPER_HPARAM_N_TEXT_HEAD), ==, SYN_HEADS);

  /* A ggml file named model.bin is still a ggml file. */
  g_autofree char *named_dir = tmp_path ("ggml-named");
  g_assert_cmpint (g_mkdir_with_parents (named_dir, 0700), ==, 0);
  g_autofree char *named = g_build_filename (named_dir, "model.bin", NULL);
  convert_to_ggml (json_dir, named, TRUE);
  g_autoptr (WhisperModel) named_model = load_ok (named);
  g_assert_cmpint (named_model->format, ==, WHISPER_MODEL_FORMAT_GGML);
  assert_same_weights (json_model, named_model);

  /* config.json suppress lists. */
  opt = synth_defaults;
  opt.config = "{\"suppress_ids\": [1, 2, 11], \"suppress_ids_begin\": [3, 9],"
               " \"lang_ids\": [], \"alignment_heads\": [[1, 0]]}";
  g_autofree char *config_dir = synth_model ("synth-config", &opt, NULL);
  g_autoptr (WhisperModel) config_model = load_ok (config_dir);
  g_assert_cmpint (config_model->n_suppress_ids, ==, 3);
  g_assert_cmpint (config_model->suppress_ids[2], ==, 11);
  g_assert_cmpint (config_model->n_suppress_ids_begin, ==, 2);
  g_assert_cmpint (config_model->suppress_ids_begin[1], ==, 9);
}

static void
expect_synth_failure (const char *label, const SynthOptions *opt, int code, const char *keyword)
{
  g_autofree char *dir = synth_model (label, opt, NULL);
  expect_failure (dir, dir, code, keyword);
}

static void
test_synthetic_refused (void)
{
  SynthOptions opt = synth_defaults;
  opt.activation = 1;
  expect_synth_failure ("bad-activation", &opt, WHISPER_MODEL_ERROR_UNSUPPORTED,
                        "decoder/activation is 1");
  opt = synth_defaults;
  opt.activation = 0;
  expect_synth_failure ("bad-activation0", &opt, WHISPER_MODEL_ERROR_UNSUPPORTED,
                        "not GELU");
  opt = synth_defaults;
  opt.version = 5;
  expect_synth_failure ("bad-version", &opt, WHISPER_MODEL_ERROR_UNSUPPORTED,
                        "binary version 5");
  opt = synth_defaults;
  opt.revision = 4;
  expect_synth_failure ("bad-revision", &opt, WHISPER_MODEL_ERROR_UNSUPPORTED,
                        "revision 4");
  opt = synth_defaults;
  opt.spec = "TransformerSpec";
  expect_synth_failure ("bad-spec", &opt, WHISPER_MODEL_ERROR_UNSUPPORTED,
                        "TransformerSpec");
  opt = synth_defaults;
  opt.untied_projection = TRUE;
  expect_synth_failure ("bad-untied", &opt, WHISPER_MODEL_ERROR_UNSUPPORTED,
                        "not tied");
  opt = synth_defaults;
  opt.one_crlf = TRUE;
  expect_synth_failure ("bad-one-crlf", &opt, WHISPER_MODEL_ERROR_FORMAT,
                        "token 6 holds U+000D");
  opt = synth_defaults;
  opt.config = "{\"suppress_ids\": [1, 12]}";
  expect_synth_failure ("bad-config-range", &opt, WHISPER_MODEL_ERROR_FORMAT,
                        "suppress_ids[1]");
  opt.config = "{\"suppress_ids_begin\": [\"x\"]}";
  expect_synth_failure ("bad-config-type", &opt, WHISPER_MODEL_ERROR_FORMAT,
                        "suppress_ids_begin[0]");
  opt.config = "{\"suppress_ids\": 3}";
  expect_synth_failure ("bad-config-list", &opt, WHISPER_MODEL_ERROR_FORMAT, "not a list");
  opt.config = "[1, 2]";
  expect_synth_failure ("bad-config-array", &opt, WHISPER_MODEL_ERROR_FORMAT, "object");
  opt.config = "{\"suppress_ids\": [1, 2";
  expect_synth_failure ("bad-config-json", &opt, WHISPER_MODEL_ERROR_FORMAT, "config.json");
}

/* Every truncation fails; every flipped byte and random bytes either load
 * or fail cleanly. */
static void
hammer_file (const char *file, const char *load_path, gboolean every_truncation_fails)
{
  g_autoptr (GBytes) original = read_file (file);
  gsize size = g_bytes_get_size (original);
  const guint8 *bytes = g_bytes_get_data (original, NULL);
  guint loaded = 0;

  for (gsize offset = 0; offset < size; offset++) {
    guint8 flipped = bytes[offset] ^ 0xff;
    patch_bytes (file, offset, &flipped, 1, NULL);
    loaded += load_or_clean_failure (load_path, load_path);
    patch_bytes (file, offset, &bytes[offset], 1, NULL);
  }
  g_test_message ("%s: %" G_GSIZE_FORMAT " single-byte flips, %u still loaded",
                  file, size, loaded);

  g_autoptr (GRand) rand = g_rand_new_with_seed (20240611);
  for (int i = 0; i < 2000; i++) {
    gsize offset = g_rand_int_range (rand, 0, size);
    guint8 value[4];
    gsize len = MIN ((gsize) g_rand_int_range (rand, 1, 5), size - offset);
    for (gsize j = 0; j < len; j++)
      value[j] = g_rand_int_range (rand, 0, 256);
    patch_bytes (file, offset, value, len, NULL);
    load_or_clean_failure (load_path, load_path);
    patch_bytes (file, offset, bytes + offset, len, NULL);
  }

  for (gsize cut = size; cut-- > 0;) {
    truncate_file (file, cut);
    if (every_truncation_fails)
      expect_failure (load_path, load_path, -1, NULL);
    else
      load_or_clean_failure (load_path, load_path);
  }
  write_file (file, bytes, size);
}

static void
test_synthetic_hostile_ct2 (void)
{
  SynthOptions opt = synth_defaults;
  opt.weight_dtype = DT_INT8;
  g_autofree char *dir = synth_model ("hostile-ct2", &opt, NULL);
  g_autofree char *model_bin = g_build_filename (dir, "model.bin", NULL);
  hammer_file (model_bin, dir, TRUE);
  g_autoptr (WhisperModel) model = load_ok (dir);
}

static void
test_synthetic_hostile_ggml (void)
{
  g_autofree char *dir = synth_model ("hostile-ggml-src", &synth_defaults, NULL);
  g_autofree char *file = tmp_path ("hostile.ggml");
  convert_to_ggml (dir, file, FALSE);
  hammer_file (file, file, TRUE);
  g_autoptr (WhisperModel) model = load_ok (file);
}

/* ------------------------------------------------------------------ */
/* Hostile copies of the real files                                    */

typedef struct {
  gsize name_len_offset;
  gsize rank_offset;
  guint rank;
  gsize dims_offset;
  gsize dtype_offset;
  gsize num_bytes_offset;
  gsize data_offset;
  guint32 num_bytes;
} Ct2Record;

static guint32
get_u32 (const guint8 *p)
{
  return (guint32) p[0] | (guint32) p[1] << 8 | (guint32) p[2] << 16 | (guint32) p[3] << 24;
}

/* Walks a valid model.bin (test side, trusting the file) to find where the
 * fields of a variable are; name NULL finds the alias section. */
static gboolean
ct2_locate (const guint8 *data, gsize size, const char *name, Ct2Record *rec, gsize *aliases)
{
  gsize pos = 4;
  pos += 2 + (data[pos] | data[pos + 1] << 8); /* spec */
  pos += 4;                                    /* revision */
  guint32 count = get_u32 (data + pos);
  pos += 4;
  for (guint32 i = 0; i < count; i++) {
    Ct2Record r = { .name_len_offset = pos };
    guint len = data[pos] | data[pos + 1] << 8;
    const char *var_name = (const char *) data + pos + 2;
    pos += 2 + len;
    r.rank_offset = pos;
    r.rank = data[pos++];
    r.dims_offset = pos;
    pos += 4 * r.rank;
    r.dtype_offset = pos++;
    r.num_bytes_offset = pos;
    r.num_bytes = get_u32 (data + pos);
    pos += 4;
    r.data_offset = pos;
    pos += r.num_bytes;
    g_assert_cmpuint (pos, <=, size);
    if (name != NULL && strcmp (var_name, name) == 0) {
      *rec = r;
      return TRUE;
    }
  }
  if (aliases != NULL)
    *aliases = pos;
  return FALSE;
}

static void
test_real_hostile_ct2 (void)
{
  g_autofree char *dir = tmp_path ("real-ct2-copy");
  g_autofree char *model_bin = g_build_filename (dir, "model.bin", NULL);
  g_autofree char *vocabulary = g_build_filename (dir, "vocabulary.txt", NULL);
  g_autofree char *config = g_build_filename (dir, "config.json", NULL);
  g_assert_cmpint (g_mkdir_with_parents (dir, 0700), ==, 0);
  const char *files[] = { "model.bin", "vocabulary.txt", "config.json" };
  for (guint i = 0; i < G_N_ELEMENTS (files); i++) {
    g_autofree char *from = g_build_filename (env.model_dir, files[i], NULL);
    g_autofree char *to = g_build_filename (dir, files[i], NULL);
    copy_file (from, to);
  }
  g_autoptr (WhisperModel) sane = load_ok (dir);
  g_clear_pointer (&sane, whisper_model_free);

  g_autoptr (GBytes) original = read_file (model_bin);
  const guint8 *data = g_bytes_get_data (original, NULL);
  gsize size = g_bytes_get_size (original);
  Ct2Record conv1, conv1_bias, activation, heads, ln_gamma, first;
  gsize aliases = 0;
  g_assert_true (ct2_locate (data, size, "encoder/conv1/weight", &conv1, NULL));
  g_assert_true (ct2_locate (data, size, "encoder/conv1/bias", &conv1_bias, NULL));
  g_assert_true (ct2_locate (data, size, "decoder/activation", &activation, NULL));
  g_assert_true (ct2_locate (data, size, "encoder/num_heads", &heads, NULL));
  g_assert_true (ct2_locate (data, size, "encoder/layer_norm/gamma", &ln_gamma, NULL));
  g_assert_true (ct2_locate (data, size, "decoder/activation", &first, NULL));
  ct2_locate (data, size, NULL, NULL, &aliases);
  guint32 old;

  /* Header fields. */
  old = patch_u32 (model_bin, 0, 5);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_UNSUPPORTED, "binary version 5");
  patch_u32 (model_bin, 0, 0xffffffff);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, "binary version");
  patch_u32 (model_bin, 0, old);
  guint8 huge16[2] = { 0xff, 0xff }, saved16[2];
  patch_bytes (model_bin, 4, huge16, 2, saved16);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, "spec name");
  patch_bytes (model_bin, 4, saved16, 2, NULL);
  gsize count_offset = 4 + 2 + 12 + 4;
  old = patch_u32 (model_bin, count_offset, 0xffffffff);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, "cannot fit");
  patch_u32 (model_bin, count_offset, 200);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, NULL);
  patch_u32 (model_bin, count_offset, old);

  /* Variable fields: dims, byte count, name length, rank, dtype. */
  old = patch_u32 (model_bin, conv1.dims_offset, 0xffffffff);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, "encoder/conv1/weight");
  patch_u32 (model_bin, conv1.dims_offset, old);
  guint32 all_huge[3] = { 0xffffffff, 0xffffffff, 0xffffffff };
  guint32 saved_dims[3];
  patch_bytes (model_bin, conv1.dims_offset, all_huge, sizeof all_huge, saved_dims);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, "2^32");
  patch_bytes (model_bin, conv1.dims_offset, saved_dims, sizeof saved_dims, NULL);
  old = patch_u32 (model_bin, conv1.num_bytes_offset, 0xffffffff);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, "declares");
  patch_u32 (model_bin, conv1.num_bytes_offset, old);
  patch_bytes (model_bin, conv1.name_len_offset, huge16, 2, saved16);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, NULL);
  patch_bytes (model_bin, conv1.name_len_offset, saved16, 2, NULL);
  guint8 rank200 = 200, saved8;
  patch_bytes (model_bin, conv1.rank_offset, &rank200, 1, &saved8);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, "rank 200");
  patch_bytes (model_bin, conv1.rank_offset, &saved8, 1, NULL);
  guint8 dtype9 = 9;
  patch_bytes (model_bin, conv1.dtype_offset, &dtype9, 1, &saved8);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, "data type 9");
  patch_bytes (model_bin, conv1.dtype_offset, &saved8, 1, NULL);
  guint8 int32_type = DT_INT32;
  guint8 saved_rank_dims[1];
  patch_bytes (model_bin, conv1.dtype_offset, &int32_type, 1, saved_rank_dims);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, NULL);
  patch_bytes (model_bin, conv1.dtype_offset, saved_rank_dims, 1, NULL);

  /* Names: a duplicate, a missing variable, an alias to nowhere. */
  gsize bias_name = conv1_bias.name_len_offset + 2 + strlen ("encoder/conv");
  guint8 two = '2';
  patch_bytes (model_bin, bias_name, &two, 1, &saved8);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, "appears twice");
  patch_bytes (model_bin, bias_name, &saved8, 1, NULL);
  gsize gamma_last = ln_gamma.name_len_offset + 2 + strlen ("encoder/layer_norm/gamm");
  guint8 x = 'X';
  patch_bytes (model_bin, gamma_last, &x, 1, &saved8);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT,
                  "missing variable 'encoder/layer_norm/gamma'");
  patch_bytes (model_bin, gamma_last, &saved8, 1, NULL);
  gsize target_last = size - 2; /* last character of the alias target */
  patch_bytes (model_bin, target_last, &x, 1, &saved8);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, "points to missing variable");
  patch_bytes (model_bin, target_last, &saved8, 1, NULL);
  guint8 nul = 0;
  patch_bytes (model_bin, gamma_last, &nul, 1, &saved8);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, "NUL-terminated");
  patch_bytes (model_bin, gamma_last, &saved8, 1, NULL);
  old = patch_u32 (model_bin, aliases, 0x7fffffff);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, "aliases");
  patch_u32 (model_bin, aliases, old);
  append_bytes (model_bin, "junk", 4);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, "unexpected bytes");
  truncate_file (model_bin, size);

  /* Values: activation, heads. */
  guint8 tanh_gelu = 1;
  patch_bytes (model_bin, activation.data_offset, &tanh_gelu, 1, &saved8);
  expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_UNSUPPORTED, "tanh");
  patch_bytes (model_bin, activation.data_offset, &saved8, 1, NULL);
  guint8 five_heads[2] = { 5, 0 }, zero_heads[2] = { 0, 0 };
  patch_bytes (model_bin, heads.data_offset, five_heads, 2, saved16);
  expect_failure (dir, dir, WHISPER_MODEL_ERROR_FORMAT, "heads");
  patch_bytes (model_bin, heads.data_offset, zero_heads, 2, NULL);
  expect_failure (dir, dir, WHISPER_MODEL_ERROR_FORMAT, "n_audio_head");
  patch_bytes (model_bin, heads.data_offset, saved16, 2, NULL);

  /* Flipped bytes at fixed-seed offsets. */
  g_autoptr (GRand) rand = g_rand_new_with_seed (7);
  guint loaded = 0;
  for (int i = 0; i < 12; i++) {
    gsize offset = i < 6 ? (gsize) g_rand_int_range (rand, 0, 4096)
                         : (gsize) g_rand_int_range (rand, 0, size);
    guint8 flipped = data[offset] ^ 0xff;
    patch_bytes (model_bin, offset, &flipped, 1, NULL);
    loaded += load_or_clean_failure (dir, dir);
    patch_bytes (model_bin, offset, data + offset, 1, NULL);
  }
  g_test_message ("real model.bin: 12 flips, %u still loaded", loaded);

  /* Vocabulary and config. */
  g_autoptr (GBytes) vocab = read_file (vocabulary);
  const char *vocab_text = g_bytes_get_data (vocab, NULL);
  const char *line_1000 = vocab_text;
  for (int i = 0; i < 1000; i++)
    line_1000 = strchr (line_1000, '\n') + 1;
  write_file (vocabulary, vocab_text, line_1000 - vocab_text);
  expect_failure (dir, vocabulary, WHISPER_MODEL_ERROR_FORMAT, "has 1000 tokens");
  const char *line_1001 = strchr (line_1000, '\n') + 1;
  g_autofree char *with_bad_token = g_strdup_printf ("%.*s\x01\n%s", (int) (line_1000 - vocab_text),
                                                     vocab_text, line_1001);
  write_file (vocabulary, with_bad_token, strlen (with_bad_token));
  expect_failure (dir, vocabulary, WHISPER_MODEL_ERROR_FORMAT, "token 1000 holds U+0001");
  g_autofree char *one_more = g_strconcat (vocab_text, "extra\n", NULL);
  write_file (vocabulary, one_more, strlen (one_more));
  expect_failure (dir, vocabulary, WHISPER_MODEL_ERROR_FORMAT, "has 51865 tokens");
  gsize huge_size = 9u << 20;
  g_autofree char *huge = g_malloc (huge_size);
  memset (huge, '\n', huge_size);
  write_file (vocabulary, huge, huge_size);
  expect_failure (dir, vocabulary, WHISPER_MODEL_ERROR_FORMAT, "too large");
  g_autofree char *bad_utf8 = g_strconcat ("\xff\xfe\n", strchr (vocab_text, '\n') + 1, NULL);
  write_file (vocabulary, bad_utf8, strlen (bad_utf8));
  expect_failure (dir, vocabulary, WHISPER_MODEL_ERROR_FORMAT, "not valid UTF-8");
  g_unlink (vocabulary);
  expect_failure (dir, dir, WHISPER_MODEL_ERROR_NOT_FOUND, "vocabulary");
  write_file (vocabulary, g_bytes_get_data (vocab, NULL), g_bytes_get_size (vocab));

  g_autoptr (GBytes) config_text = read_file (config);
  write_file (config, "this is not JSON", 16);
  expect_failure (dir, config, WHISPER_MODEL_ERROR_FORMAT, "not valid JSON");
  write_file (config, "{\"suppress_ids\": [99999]}", 25);
  expect_failure (dir, config, WHISPER_MODEL_ERROR_FORMAT, "suppress_ids[0]");
  write_file (config, g_bytes_get_data (config_text, NULL), g_bytes_get_size (config_text));

  /* Truncations, from the end to nothing: inside the alias section, the
   * last data, the embedding data, a name, the dims, the header. */
  const gsize cuts[] = {
    size - 1, size - 10, aliases + 2, aliases, ln_gamma.data_offset + 100,
    conv1.data_offset + 1000, conv1.dims_offset + 5, conv1.rank_offset,
    conv1.name_len_offset + 10, first.data_offset + 1000, first.num_bytes_offset + 2,
    first.name_len_offset + 5, 21, 20, 17, 8, 5, 4, 3, 1, 0,
  };
  for (guint i = 0; i < G_N_ELEMENTS (cuts); i++) {
    g_assert_cmpuint (i == 0 ? size : cuts[i - 1], >=, cuts[i]);
    truncate_file (model_bin, cuts[i]);
    expect_failure (dir, model_bin, WHISPER_MODEL_ERROR_FORMAT, NULL);
  }
  g_unlink (model_bin);
  expect_failure (dir, dir, WHISPER_MODEL_ERROR_NOT_FOUND, "model.bin");
  remove_tree (dir);
}

typedef struct {
  gsize offset; /* of n_dims */
  gsize ne_offset;
  gsize name_offset;
  gsize data_offset;
  gsize end;
} GgmlRecord;

static gsize
ggml_vocab_offset (const guint8 *data)
{
  gsize pos = 4 + 11 * 4;
  guint32 n_mel = get_u32 (data + pos), n_fft = get_u32 (data + pos + 4);
  return pos + 8 + (gsize) n_mel * n_fft * 4;
}

static gsize
ggml_first_record (const guint8 *data)
{
  gsize pos = ggml_vocab_offset (data);
  guint32 count = get_u32 (data + pos);
  pos += 4;
  for (guint32 i = 0; i < count; i++)
    pos += 4 + get_u32 (data + pos);
  return pos;
}

/* Test-side walk of a valid ggml file to the record of a tensor (name
 * NULL: the last record). */
static GgmlRecord
ggml_locate (const guint8 *data, gsize size, const char *name)
{
  GgmlRecord last = { 0 };
  for (gsize pos = ggml_first_record (data); pos < size;) {
    GgmlRecord r = { .offset = pos };
    guint32 n_dims = get_u32 (data + pos), name_len = get_u32 (data + pos + 4);
    guint32 ttype = get_u32 (data + pos + 8);
    r.ne_offset = pos + 12;
    gsize n = 1;
    for (guint32 i = 0; i < n_dims; i++)
      n *= get_u32 (data + r.ne_offset + 4 * i);
    r.name_offset = r.ne_offset + 4 * n_dims;
    r.data_offset = r.name_offset + name_len;
    r.end = r.data_offset + n * (ttype == 0 ? 4 : 2);
    if (name != NULL && name_len == strlen (name) &&
        memcmp (data + r.name_offset, name, name_len) == 0)
      return r;
    last = r;
    pos = r.end;
  }
  g_assert_null (name);
  return last;
}

static void
test_real_hostile_ggml (void)
{
  g_autofree char *file = tmp_path ("real-ggml-copy.bin");
  copy_file (real_ggml (FALSE), file);
  g_autoptr (GBytes) original = read_file (file);
  const guint8 *data = g_bytes_get_data (original, NULL);
  gsize size = g_bytes_get_size (original);
  GgmlRecord first = ggml_locate (data, size, "encoder.positional_embedding");
  GgmlRecord last = ggml_locate (data, size, NULL);
  GgmlRecord qkey = ggml_locate (data, size, "decoder.blocks.2.attn.key.weight");
  g_assert_cmpuint (first.offset, ==, ggml_first_record (data));
  g_assert_cmpuint (last.end, ==, size);
  g_assert_cmpmem (data + last.name_offset, 15, "decoder.ln.bias", 15);
  gsize vocab = ggml_vocab_offset (data);
  guint32 old;

  /* Header. */
  old = patch_u32 (file, 4, 0x7fffffff);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "n_vocab");
  patch_u32 (file, 4, old);
  old = patch_u32 (file, 4 + 4 * 4, 100000);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "n_audio_layer");
  patch_u32 (file, 4 + 4 * 4, old);
  old = patch_u32 (file, 4 + 2 * 4, 0x40000000);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "n_audio_state");
  patch_u32 (file, 4 + 2 * 4, old);
  /* Plausible but too big for the file: refused before allocating. */
  guint32 big[11] = { 1 << 20, 1 << 16, 1 << 14, 16, 200, 1 << 16, 1 << 14, 16, 200, 80, 1 };
  guint8 saved_header[44];
  patch_bytes (file, 4, big, sizeof big, saved_header);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "more weights");
  patch_bytes (file, 4, saved_header, sizeof saved_header, NULL);
  /* the block types and q4_k ... q6_k are taken (each tensor's own type
   * counts), q2_k and q3_k not */
  old = patch_u32 (file, 4 + 10 * 4, 10);
  expect_failure (file, file, WHISPER_MODEL_ERROR_UNSUPPORTED,
                  "quantized ggml type q2_k is not supported; use an f16, f32, q4_0");
  patch_u32 (file, 4 + 10 * 4, 2011);
  expect_failure (file, file, WHISPER_MODEL_ERROR_UNSUPPORTED, "q3_k");
  patch_u32 (file, 4 + 10 * 4, 15);
  expect_failure (file, file, WHISPER_MODEL_ERROR_UNSUPPORTED, "ftype 15");
  patch_u32 (file, 4 + 10 * 4, 5);
  expect_failure (file, file, WHISPER_MODEL_ERROR_UNSUPPORTED, "ftype 5");
  patch_u32 (file, 4 + 10 * 4, 0xffffffff);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "ftype");
  patch_u32 (file, 4 + 10 * 4, old);

  /* Mel filters and vocabulary. */
  old = patch_u32 (file, 48, 81);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "mel filters");
  patch_u32 (file, 48, old);
  old = patch_u32 (file, 52, 0x7fffffff);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "mel filters");
  patch_u32 (file, 52, old);
  old = patch_u32 (file, vocab, 60000);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "vocabulary");
  patch_u32 (file, vocab, 0xffffffff);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "vocabulary");
  patch_u32 (file, vocab, old);
  old = patch_u32 (file, vocab + 4, 0xfffffff0);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "token 0");
  patch_u32 (file, vocab + 4, old);

  /* Tensor records. */
  old = patch_u32 (file, first.offset, 0x7fffffff);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "n_dims");
  patch_u32 (file, first.offset, old);
  old = patch_u32 (file, first.offset + 4, 0x7fffffff);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "name");
  patch_u32 (file, first.offset + 4, old);
  old = patch_u32 (file, first.offset + 8, 11);
  expect_failure (file, file, WHISPER_MODEL_ERROR_UNSUPPORTED,
                  "quantized ggml type q3_k is not supported");
  patch_u32 (file, first.offset + 8, 13); /* q5_K, but rows of 384 */
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT,
                  "'encoder.positional_embedding' is q5_K with rows of 384 values, not a "
                  "multiple of the 256 values of a super-block");
  patch_u32 (file, first.offset + 8, 1234);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "unknown ggml type");
  patch_u32 (file, first.offset + 8, 1); /* f16 instead of f32: sizes shift */
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, NULL);
  patch_u32 (file, first.offset + 8, old);
  old = patch_u32 (file, first.ne_offset, 385);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT,
                  "tensor 'encoder.positional_embedding' has ne [385, 1500], expected [384, 1500]");
  patch_u32 (file, first.ne_offset, 0x7fffffff);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "2^32");
  patch_u32 (file, first.ne_offset, 0xffffffff);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "invalid dimension");
  patch_u32 (file, first.ne_offset, old);
  old = patch_u32 (file, qkey.ne_offset + 4, 0x7fffffff);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "2^32");
  patch_u32 (file, qkey.ne_offset + 4, old);
  guint8 x = 'X', saved8;
  patch_bytes (file, first.name_offset, &x, 1, &saved8);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "unknown tensor 'Xncoder.positional_embedding'");
  patch_bytes (file, first.name_offset, &saved8, 1, NULL);

  /* A duplicate record, then a missing one. */
  append_bytes (file, data + last.offset, last.end - last.offset);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "'decoder.ln.bias' appears twice");
  truncate_file (file, size);
  g_autoptr (WhisperModel) sane = load_ok (file);
  g_clear_pointer (&sane, whisper_model_free);

  /* Flipped bytes. */
  g_autoptr (GRand) rand = g_rand_new_with_seed (11);
  guint loaded = 0;
  for (int i = 0; i < 12; i++) {
    gsize offset = i < 6 ? (gsize) g_rand_int_range (rand, 0, first.data_offset + 64)
                         : (gsize) g_rand_int_range (rand, 0, size);
    guint8 flipped = data[offset] ^ 0xff;
    patch_bytes (file, offset, &flipped, 1, NULL);
    loaded += load_or_clean_failure (file, file);
    patch_bytes (file, offset, data + offset, 1, NULL);
  }
  g_test_message ("real ggml: 12 flips, %u still loaded", loaded);

  /* Truncations, descending; at last.offset the record is whole-missing. */
  truncate_file (file, last.offset);
  expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, "missing tensor 'decoder.ln.bias'");
  const gsize cuts[] = {
    last.offset - 1, qkey.data_offset + 100, qkey.name_offset + 3, qkey.ne_offset + 2,
    qkey.offset + 5, first.data_offset + 7, first.name_offset + 1, first.offset + 2,
    vocab + 50000, vocab + 2, 60, 50, 48, 20, 4, 3, 1, 0,
  };
  for (guint i = 0; i < G_N_ELEMENTS (cuts); i++) {
    truncate_file (file, cuts[i]);
    expect_failure (file, file, WHISPER_MODEL_ERROR_FORMAT, NULL);
  }
  g_unlink (file);
}

static void
test_bad_paths (void)
{
  g_autofree char *missing = tmp_path ("does-not-exist");
  expect_failure (missing, missing, WHISPER_MODEL_ERROR_NOT_FOUND, "No such file");

  g_autofree char *empty_dir = tmp_path ("empty-dir");
  g_assert_cmpint (g_mkdir_with_parents (empty_dir, 0700), ==, 0);
  expect_failure (empty_dir, empty_dir, WHISPER_MODEL_ERROR_NOT_FOUND, "without model.bin");

  g_autofree char *empty = tmp_path ("empty.bin");
  write_file (empty, "", 0);
  expect_failure (empty, empty, WHISPER_MODEL_ERROR_FORMAT, "empty");

  g_autofree char *short_file = tmp_path ("short.bin");
  write_file (short_file, "lm", 2);
  expect_failure (short_file, short_file, WHISPER_MODEL_ERROR_FORMAT, "2 bytes");

  g_autofree char *text = tmp_path ("text.bin");
  write_file (text, "hello world\n", 12);
  expect_failure (text, text, WHISPER_MODEL_ERROR_FORMAT, "68 65 6c 6c");

  g_autofree char *gguf = tmp_path ("model.gguf");
  write_file (gguf, "GGUF\3\0\0\0", 8);
  expect_failure (gguf, gguf, WHISPER_MODEL_ERROR_UNSUPPORTED, "GGUF");

  g_autofree char *magic_only = tmp_path ("magic-only.bin");
  write_file (magic_only, "lmgg", 4);
  expect_failure (magic_only, magic_only, WHISPER_MODEL_ERROR_FORMAT, "n_vocab");

  /* An empty model.bin inside a directory. */
  g_autofree char *empty_ct2 = tmp_path ("empty-ct2");
  g_assert_cmpint (g_mkdir_with_parents (empty_ct2, 0700), ==, 0);
  g_autofree char *empty_bin = g_build_filename (empty_ct2, "model.bin", NULL);
  write_file (empty_bin, "", 0);
  expect_failure (empty_ct2, empty_bin, WHISPER_MODEL_ERROR_FORMAT,
                  "the binary version needs 4 bytes at offset 0 but the file has 0");
  /* model.bin that is a directory. */
  g_unlink (empty_bin);
  g_assert_cmpint (g_mkdir (empty_bin, 0700), ==, 0);
  expect_failure (empty_ct2, empty_bin, -1, NULL);
}

/* ------------------------------------------------------------------ */

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  env.model_dir = whisper_model_default_path ();
  g_autofree char *model_bin = g_build_filename (env.model_dir, "model.bin", NULL);
  if (!g_file_test (model_bin, G_FILE_TEST_IS_REGULAR)) {
    g_printerr ("test-loaders: the default model is not installed: %s is missing.\n"
                "Install it with tools/fetch-model.sh (or set WHISPER_MODEL).\n",
                model_bin);
    return 1;
  }

  g_autoptr (GError) error = NULL;
  env.tmp_dir = g_dir_make_tmp ("gst-whisper-loaders-XXXXXX", &error);
  g_assert_no_error (error);

  g_test_add_func ("/loaders/unit/byte-mapping", test_byte_mapping);
  g_test_add_func ("/loaders/unit/special-names", test_special_names);
  g_test_add_func ("/loaders/unit/half-to-float", test_half_to_float);
  g_test_add_func ("/loaders/unit/model-basics", test_model_basics);
  g_test_add_func ("/loaders/real/ct2", test_real_ct2);
  g_test_add_func ("/loaders/real/ggml-f16", test_real_ggml_f16);
  g_test_add_func ("/loaders/real/ggml-f32", test_real_ggml_f32);
  g_test_add_func ("/loaders/synthetic/f32", test_synthetic_f32);
  g_test_add_func ("/loaders/synthetic/f16", test_synthetic_f16);
  g_test_add_func ("/loaders/synthetic/bf16", test_synthetic_bf16);
  g_test_add_func ("/loaders/synthetic/int8", test_synthetic_int8);
  g_test_add_func ("/loaders/synthetic/int16", test_synthetic_int16);
  g_test_add_func ("/loaders/synthetic/variants", test_synthetic_variants);
  g_test_add_func ("/loaders/synthetic/refused", test_synthetic_refused);
  g_test_add_func ("/loaders/hostile/synthetic-ct2", test_synthetic_hostile_ct2);
  g_test_add_func ("/loaders/hostile/synthetic-ggml", test_synthetic_hostile_ggml);
  g_test_add_func ("/loaders/hostile/real-ct2", test_real_hostile_ct2);
  g_test_add_func ("/loaders/hostile/real-ggml", test_real_hostile_ggml);
  g_test_add_func ("/loaders/hostile/paths", test_bad_paths);

  int status = g_test_run ();

  remove_tree (env.tmp_dir);
  g_free (env.tmp_dir);
  g_free (env.model_dir);
  g_free (env.ggml_f16);
  g_free (env.ggml_f32);
  return status;
}
