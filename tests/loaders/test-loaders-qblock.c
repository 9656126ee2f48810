/* test-loaders-qblock.c: whisper.cpp files with ggml's block types
 * (q5_0, q4_1: the fifth bits and the minimum), made from the real default
 * model (tools/ct2-to-ggml.py, then tools/ggml-quantize.py, which writes
 * what whisper.cpp's quantize writes): the blocks stay as stored, fused
 * projections join their blocks, the values are the float16 model's within
 * a quantization step; then the same files broken: truncated inside a
 * block tensor, a scale that is NaN or infinite, a block type where a row
 * is not whole blocks, q2_k, and flipped bytes. The k-quants q4_K and q6_K
 * the same way, on tiny.en files where only the tensors of whole
 * 256-value rows are quantized (ggml-quantize.py --keep-partial: the mlp.2
 * weights): kept as stored, within a step, and refused when truncated,
 * with a NaN or infinite d or dmin, or on rows of 384 values. Also built
 * with AddressSanitizer (loaders-qblock-asan). */
#include "qblock.h"
#include "whisper-model.h"

#include <fcntl.h>
#include <math.h>
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
  char *tmp_dir;
  char *f16;          /* tiny.en as an f16 ggml file */
  char *quantized[2]; /* the same as q5_0 and q4_1 */
  char *kquant[2];    /* q4_K and q6_K where rows are whole super-blocks */
} env;

static const char *const kinds[] = { "q5_0", "q4_1" };
static const WhisperDType kind_types[] = { WHISPER_DTYPE_Q5_0, WHISPER_DTYPE_Q4_1 };
static const char *const k_kinds[] = { "q4_K", "q6_K" };
static const WhisperDType k_types[] = { WHISPER_DTYPE_Q4_K, WHISPER_DTYPE_Q6_K };

static void
run_tool_opt (const char *tool, const char *option, const char *a, const char *b, const char *c)
{
  const char *root = g_getenv ("WHISPER_SOURCE_ROOT");
  g_autofree char *script = g_build_filename (root && *root ? root : WHISPER_SOURCE_ROOT_DEFAULT,
                                              "tools", tool, NULL);
  const char *argv[] = { WHISPER_PYTHON, script, option ? option : a, option ? a : b,
                         option ? b : c, option ? c : NULL, NULL };
  g_autofree char *err_text = NULL;
  g_autoptr (GError) error = NULL;
  int status = 0;
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, &err_text,
                &status, &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, &error))
    g_error ("%s %s %s failed: %s\n%s", script, a, b, error->message, err_text);
}

static void
run_tool (const char *tool, const char *a, const char *b, const char *c)
{
  run_tool_opt (tool, NULL, a, b, c);
}

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

static void
copy_file (const char *from, const char *to)
{
  g_autofree char *contents = NULL;
  gsize length = 0;
  g_autoptr (GError) error = NULL;
  g_file_get_contents (from, &contents, &length, &error);
  g_assert_no_error (error);
  g_file_set_contents (to, contents, length, &error);
  g_assert_no_error (error);
}

static void
expect_failure (const char *path, int code, const char *keyword, const char *also)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperModel) model = whisper_model_load (path, &error);
  if (model != NULL)
    g_error ("loading %s succeeded but should have failed (%s)", path, keyword);
  g_assert_error (error, WHISPER_MODEL_ERROR, code);
  if (strstr (error->message, keyword) == NULL || (also && strstr (error->message, also) == NULL))
    g_error ("the error \"%s\" does not name \"%s\"%s%s", error->message, keyword,
             also ? " and " : "", also ? also : "");
}

/* A tensor record of a ggml file: where its parts are. */
typedef struct {
  gsize offset, ne_offset, type_offset, data_offset, end;
  gint32 type, ne0;
} Record;

static guint32
u32_at (const guint8 *p)
{
  return (guint32) p[0] | (guint32) p[1] << 8 | (guint32) p[2] << 16 | (guint32) p[3] << 24;
}

static gsize
record_bytes (gint32 type, gsize n)
{
  WhisperDType block;
  if (whisper_qblock_from_ggml (type, &block))
    return n / (gsize) whisper_qblock_values (block) * whisper_qblock_bytes (block);
  return n * (type == 0 ? 4 : 2);
}

/* The record named `name`, walking the file from its header. */
static Record
locate (const guint8 *data, gsize size, const char *name)
{
  gsize pos = 4 + 11 * 4;
  pos += 8 + 4 * (gsize) u32_at (data + pos) * u32_at (data + pos + 4); /* mel filters */
  const guint32 n_tokens = u32_at (data + pos);
  pos += 4;
  for (guint32 i = 0; i < n_tokens; i++)
    pos += 4 + u32_at (data + pos);
  while (pos < size) {
    Record r = { pos, pos + 12, pos + 8, 0, 0, (gint32) u32_at (data + pos + 8),
                 (gint32) u32_at (data + pos + 12) };
    const guint32 n_dims = u32_at (data + pos), name_len = u32_at (data + pos + 4);
    gsize n = 1;
    for (guint32 i = 0; i < n_dims; i++)
      n *= u32_at (data + r.ne_offset + 4 * i);
    const gsize name_at = r.ne_offset + 4 * n_dims;
    r.data_offset = name_at + name_len;
    r.end = r.data_offset + record_bytes (r.type, n);
    if (name_len == strlen (name) && memcmp (data + name_at, name, name_len) == 0)
      return r;
    pos = r.end;
  }
  g_error ("no record '%s'", name);
}

static float
max_abs_diff (const WhisperTensor *a, const WhisperTensor *b)
{
  g_assert_cmpint (a->rows, ==, b->rows);
  g_assert_cmpint (a->cols, ==, b->cols);
  g_autofree float *fa = whisper_tensor_to_f32 (a), *fb = whisper_tensor_to_f32 (b);
  float worst = 0.0f;
  for (gsize i = 0; i < whisper_tensor_n_elements (a); i++)
    worst = MAX (worst, fabsf (fa[i] - fb[i]));
  return worst;
}

/* Loads as stored: block types where the file has them, the unfused
 * tensors in the mapped file itself, the fused ones joined, every value
 * the float16 one within a step of its block (max |w| / 8 of a row at most
 * for q4_1's 15 steps over max - min). */
static void
test_load (gconstpointer data)
{
  const int k = GPOINTER_TO_INT (data);
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperModel) q = whisper_model_load (env.quantized[k], &error);
  g_assert_no_error (error);
  g_autoptr (WhisperModel) f = whisper_model_load (env.f16, &error);
  g_assert_no_error (error);
  const WhisperLayerWeights *ql = &q->encoder.layers[0], *fl = &f->encoder.layers[0];
  g_assert_cmpint (ql->mlp_fc1.weight.type, ==, kind_types[k]);
  g_assert_cmpint (ql->attn_qkv.weight.type, ==, kind_types[k]);
  g_assert_cmpint (q->decoder.token_embedding.type, ==, kind_types[k]);
  g_assert_cmpint (q->encoder.conv1_weight.type, ==, WHISPER_DTYPE_F16);
  g_assert_cmpint (q->decoder.positional.type, ==, WHISPER_DTYPE_F32);

  g_autoptr (GMappedFile) mapped = g_mapped_file_new (env.quantized[k], FALSE, &error);
  const guint8 *bytes = (const guint8 *) g_mapped_file_get_contents (mapped);
  const Record fc1 = locate (bytes, g_mapped_file_get_length (mapped), "encoder.blocks.0.mlp.0.weight");
  g_assert_cmpuint (whisper_tensor_bytes (&ql->mlp_fc1.weight), ==, fc1.end - fc1.data_offset);
  g_assert_cmpmem (ql->mlp_fc1.weight.data, fc1.end - fc1.data_offset, bytes + fc1.data_offset,
                   fc1.end - fc1.data_offset);
  const Record value = locate (bytes, g_mapped_file_get_length (mapped),
                               "encoder.blocks.0.attn.value.weight");
  const gsize third = whisper_tensor_bytes (&ql->attn_qkv.weight) / 3;
  g_assert_cmpuint (third, ==, value.end - value.data_offset);
  g_assert_cmpmem ((const guint8 *) ql->attn_qkv.weight.data + 2 * third, third,
                   bytes + value.data_offset, third);

  const float step = k == 0 ? 1.0f / 16 : 1.0f / 7.5f; /* of a block's max |w| */
  g_autofree float *w = whisper_tensor_to_f32 (&fl->attn_qkv.weight);
  float wmax = 0.0f;
  for (gsize i = 0; i < whisper_tensor_n_elements (&fl->attn_qkv.weight); i++)
    wmax = MAX (wmax, fabsf (w[i]));
  const float diff = max_abs_diff (&ql->attn_qkv.weight, &fl->attn_qkv.weight);
  g_test_message ("%s: attn_qkv differs by %g at most (max |w| %g)", kinds[k], diff, wmax);
  g_assert_cmpfloat (diff, <=, step * wmax * 1.01f);
  g_assert_cmpfloat (diff, >, 0.0f); /* really quantized */
  g_assert_cmpfloat (max_abs_diff (&q->decoder.positional, &f->decoder.positional), ==, 0.0f);
}

/* Broken copies of the q5_0 file: each refused with the tensor and type
 * named. */
static void
test_hostile (void)
{
  g_autofree char *file = g_build_filename (env.tmp_dir, "broken.bin", NULL);
  copy_file (env.quantized[0], file);
  g_autoptr (GBytes) original = NULL;
  {
    gchar *contents;
    gsize length;
    g_assert_true (g_file_get_contents (file, &contents, &length, NULL));
    original = g_bytes_new_take (contents, length);
  }
  gsize size;
  const guint8 *data = g_bytes_get_data (original, &size);
  const char *fc1_name = "encoder.blocks.0.mlp.0.weight";
  const Record fc1 = locate (data, size, fc1_name);
  const Record bias = locate (data, size, "encoder.conv1.bias");
  g_assert_cmpint (fc1.type, ==, 6);

  /* truncated inside the blocks of the decoder's last linear */
  const Record fc2 = locate (data, size, "decoder.blocks.3.mlp.2.weight");
  g_assert_cmpint (fc2.type, ==, 6);
  g_assert_cmpint (truncate (file, fc2.data_offset + 1000), ==, 0);
  expect_failure (file, WHISPER_MODEL_ERROR_FORMAT, "decoder.blocks.3.mlp.2.weight", NULL);
  copy_file (env.quantized[0], file);

  /* a NaN, then an infinite scale in block 5 */
  const guint16 nan16 = GUINT16_TO_LE (0x7e00), inf16 = GUINT16_TO_LE (0xfc00);
  guint8 saved[2];
  patch_bytes (file, fc1.data_offset + 5 * 22, &nan16, 2, saved);
  expect_failure (file, WHISPER_MODEL_ERROR_FORMAT, "corrupt block", "'encoder.blocks.0.mlp.0.weight' (q5_0): block 5");
  patch_bytes (file, fc1.data_offset + 5 * 22, &inf16, 2, NULL);
  expect_failure (file, WHISPER_MODEL_ERROR_FORMAT, "corrupt block", fc1_name);
  patch_bytes (file, fc1.data_offset + 5 * 22, saved, 2, NULL);

  /* a block type on a [1, 384] conv bias (ne[0] = 1): rows are not blocks */
  const guint32 q8 = GUINT32_TO_LE (8), q4k = GUINT32_TO_LE (12);
  guint8 saved_type[4];
  patch_bytes (file, bias.type_offset, &q8, 4, saved_type);
  expect_failure (file, WHISPER_MODEL_ERROR_FORMAT, "not a multiple of the 32 values",
                  "'encoder.conv1.bias' is q8_0");
  /* q2_k: named, refused; q4_K on rows of 384: not whole super-blocks */
  const guint32 q2k = GUINT32_TO_LE (10);
  patch_bytes (file, fc1.type_offset, &q2k, 4, NULL);
  patch_bytes (file, bias.type_offset, saved_type, 4, NULL);
  expect_failure (file, WHISPER_MODEL_ERROR_UNSUPPORTED, "q2_k", fc1_name);
  patch_bytes (file, fc1.type_offset, &q4k, 4, NULL);
  expect_failure (file, WHISPER_MODEL_ERROR_FORMAT, "not a multiple of the 256 values of a super-block",
                  "'encoder.blocks.0.mlp.0.weight' is q4_K with rows of 384 values");
  copy_file (env.quantized[0], file);

  /* flipped bytes in the blocks: loads (any code is a value) or fails cleanly */
  g_autoptr (GRand) rand = g_rand_new_with_seed (17);
  for (int i = 0; i < 8; i++) {
    const gsize at = (gsize) g_rand_int_range (rand, (gint32) fc1.offset, (gint32) fc1.end);
    const guint8 flipped = data[at] ^ 0xff;
    patch_bytes (file, at, &flipped, 1, NULL);
    g_autoptr (GError) error = NULL;
    g_autoptr (WhisperModel) model = whisper_model_load (file, &error);
    g_assert_true ((model != NULL) != (error != NULL));
    patch_bytes (file, at, data + at, 1, NULL);
  }
  g_unlink (file);
}

/* The k-quant files: the mlp.2 weights (rows of 1536) in the k-quant, as
 * stored, within a step of the float16 values (q4_K: a sub-block's
 * (max - min) / 15, q6_K: max |w| / 32, each at most its super-block's
 * max |w| times that and the 6- or 8-bit rounding of the scales: bounds
 * of 1/7 and 1/28 of the tensor's max |w|); the 384-wide tensors f16. */
static void
test_load_k (gconstpointer data)
{
  const int k = GPOINTER_TO_INT (data);
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperModel) q = whisper_model_load (env.kquant[k], &error);
  g_assert_no_error (error);
  g_autoptr (WhisperModel) f = whisper_model_load (env.f16, &error);
  g_assert_no_error (error);
  const WhisperLayerWeights *ql = &q->decoder.layers[1], *fl = &f->decoder.layers[1];
  g_assert_cmpint (ql->mlp_fc2.weight.type, ==, k_types[k]);
  g_assert_cmpint (ql->mlp_fc1.weight.type, ==, WHISPER_DTYPE_F16);
  g_assert_cmpint (q->encoder.layers[0].mlp_fc2.weight.type, ==, k_types[k]);
  g_assert_cmpint (q->decoder.token_embedding.type, ==, WHISPER_DTYPE_F16);

  g_autoptr (GMappedFile) mapped = g_mapped_file_new (env.kquant[k], FALSE, &error);
  const guint8 *bytes = (const guint8 *) g_mapped_file_get_contents (mapped);
  const Record fc2 = locate (bytes, g_mapped_file_get_length (mapped), "decoder.blocks.1.mlp.2.weight");
  g_assert_cmpint (fc2.type, ==, k == 0 ? 12 : 14);
  g_assert_cmpuint (whisper_tensor_bytes (&ql->mlp_fc2.weight), ==, fc2.end - fc2.data_offset);
  g_assert_cmpmem (ql->mlp_fc2.weight.data, fc2.end - fc2.data_offset, bytes + fc2.data_offset,
                   fc2.end - fc2.data_offset);

  g_autofree float *w = whisper_tensor_to_f32 (&fl->mlp_fc2.weight);
  float wmax = 0.0f;
  for (gsize i = 0; i < whisper_tensor_n_elements (&fl->mlp_fc2.weight); i++)
    wmax = MAX (wmax, fabsf (w[i]));
  const float diff = max_abs_diff (&ql->mlp_fc2.weight, &fl->mlp_fc2.weight);
  g_test_message ("%s: mlp.2 differs by %g at most (max |w| %g)", k_kinds[k], diff, wmax);
  g_assert_cmpfloat (diff, <=, (k == 0 ? 1.0f / 7 : 1.0f / 28) * wmax);
  g_assert_cmpfloat (diff, >, 0.0f);

  /* the C decoder against numpy's, from the same bytes (ggml-quantize.py
   * --dump: the layout decoded in float64) */
  g_autofree char *dump = g_build_filename (env.tmp_dir, "dump.f32", NULL);
  run_tool_opt ("ggml-quantize.py", "--dump=decoder.blocks.1.mlp.2.weight", env.kquant[k], dump,
                k_kinds[k]);
  g_autofree char *numpy = NULL;
  gsize numpy_size = 0;
  g_assert_true (g_file_get_contents (dump, &numpy, &numpy_size, NULL));
  g_unlink (dump);
  const gsize n = whisper_tensor_n_elements (&ql->mlp_fc2.weight);
  g_assert_cmpuint (numpy_size, ==, n * sizeof (float));
  g_autofree float *got = whisper_tensor_to_f32 (&ql->mlp_fc2.weight);
  float worst = 0.0f;
  for (gsize i = 0; i < n; i++) {
    float v;
    memcpy (&v, numpy + 4 * i, 4);
    worst = MAX (worst, fabsf (got[i] - v));
  }
  g_test_message ("%s: C and numpy decoders differ by %g at most", k_kinds[k], worst);
  g_assert_cmpfloat (worst, <=, 1e-6f * wmax);
}

/* Broken copies of the k-quant files: truncated, a NaN or infinite d or
 * dmin: refused with the tensor, the type and the super-block named. */
static void
test_hostile_k (gconstpointer data)
{
  const int k = GPOINTER_TO_INT (data);
  g_autofree char *file = g_build_filename (env.tmp_dir, "broken-k.bin", NULL);
  copy_file (env.kquant[k], file);
  gchar *contents;
  gsize size;
  g_assert_true (g_file_get_contents (file, &contents, &size, NULL));
  g_autoptr (GBytes) original = g_bytes_new_take (contents, size);
  const guint8 *bytes = g_bytes_get_data (original, &size);
  const char *name = "decoder.blocks.2.mlp.2.weight";
  const Record fc2 = locate (bytes, size, name);
  const gsize block = k == 0 ? 144 : 210;

  g_assert_cmpint (truncate (file, fc2.data_offset + 3 * block + 17), ==, 0);
  expect_failure (file, WHISPER_MODEL_ERROR_FORMAT, name, NULL);
  copy_file (env.kquant[k], file);

  const guint16 nan16 = GUINT16_TO_LE (0x7e00), inf16 = GUINT16_TO_LE (0x7c00);
  const gsize d_at = k == 0 ? 0 : 208;
  g_autofree char *want = g_strdup_printf ("'%s' (%s): block 5", name, k_kinds[k]);
  guint8 saved[2];
  patch_bytes (file, fc2.data_offset + 5 * block + d_at, &nan16, 2, saved);
  expect_failure (file, WHISPER_MODEL_ERROR_FORMAT, "corrupt block", want);
  patch_bytes (file, fc2.data_offset + 5 * block + d_at, saved, 2, NULL);
  if (k == 0) { /* q4_K's dmin */
    patch_bytes (file, fc2.data_offset + 5 * block + 2, &inf16, 2, saved);
    expect_failure (file, WHISPER_MODEL_ERROR_FORMAT, "(d or dmin)", want);
    patch_bytes (file, fc2.data_offset + 5 * block + 2, saved, 2, NULL);
  }
  /* every byte of a super-block's codes and scales is a value: loads */
  g_autoptr (GRand) rand = g_rand_new_with_seed (19);
  for (int i = 0; i < 4; i++) {
    const gsize at = fc2.data_offset + 7 * block + (gsize) g_rand_int_range (rand, 4, 144);
    const guint8 flipped = bytes[at] ^ 0x5a;
    if (k == 1 && at >= fc2.data_offset + 7 * block + 208)
      continue;
    patch_bytes (file, at, &flipped, 1, NULL);
    g_autoptr (GError) error = NULL;
    g_autoptr (WhisperModel) model = whisper_model_load (file, &error);
    g_assert_no_error (error);
    patch_bytes (file, at, bytes + at, 1, NULL);
  }
  g_unlink (file);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_autoptr (GError) error = NULL;
  g_autofree char *model_dir = whisper_model_default_path ();
  g_autofree char *model_bin = g_build_filename (model_dir, "model.bin", NULL);
  if (!g_file_test (model_bin, G_FILE_TEST_EXISTS))
    g_error ("the default model %s is missing; install it with tools/fetch-model.sh", model_dir);
  env.tmp_dir = g_dir_make_tmp ("gst-whisper-qblock-XXXXXX", &error);
  g_assert_no_error (error);
  env.f16 = g_build_filename (env.tmp_dir, "tiny.en-f16.bin", NULL);
  run_tool ("ct2-to-ggml.py", model_dir, env.f16, NULL);
  for (int k = 0; k < 2; k++) {
    g_autofree char *name = g_strdup_printf ("tiny.en-%s.bin", kinds[k]);
    env.quantized[k] = g_build_filename (env.tmp_dir, name, NULL);
    run_tool ("ggml-quantize.py", env.f16, env.quantized[k], kinds[k]);
    g_autofree char *path = g_strdup_printf ("/loaders-qblock/load/%s", kinds[k]);
    g_test_add_data_func (path, GINT_TO_POINTER (k), test_load);
  }
  g_test_add_func ("/loaders-qblock/hostile", test_hostile);
  for (int k = 0; k < 2; k++) {
    g_autofree char *name = g_strdup_printf ("tiny.en-%s.bin", k_kinds[k]);
    env.kquant[k] = g_build_filename (env.tmp_dir, name, NULL);
    run_tool_opt ("ggml-quantize.py", "--keep-partial", env.f16, env.kquant[k], k_kinds[k]);
    g_autofree char *load = g_strdup_printf ("/loaders-qblock/load/%s", k_kinds[k]);
    g_autofree char *hostile = g_strdup_printf ("/loaders-qblock/hostile/%s", k_kinds[k]);
    g_test_add_data_func (load, GINT_TO_POINTER (k), test_load_k);
    g_test_add_data_func (hostile, GINT_TO_POINTER (k), test_hostile_k);
  }
  const int status = g_test_run ();
  for (int k = 0; k < 2; k++) {
    g_unlink (env.quantized[k]);
    g_free (env.quantized[k]);
    g_unlink (env.kquant[k]);
    g_free (env.kquant[k]);
  }
  g_unlink (env.f16);
  g_rmdir (env.tmp_dir);
  g_free (env.f16);
  g_free (env.tmp_dir);
  return status;
}
