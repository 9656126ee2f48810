/* whisper-vad-file.c: reads the Silero VAD weight file that
 * tools/silero-vad-convert.py writes, checks every part of it, and keeps
 * the weights in the layouts the network uses (whisper-vad-private.h).
 *
 * The file (all integers unsigned 32-bit, everything little-endian):
 *
 *   8 bytes magic "GWSILVAD", version (1), n_tensors, 32 bytes SHA-256 of
 *   the ONNX file it was made from; then n_tensors records: name_len, name
 *   (UTF-8, no terminator), dtype (0 = float32), n_dims (1..4), dims
 *   (outermost first), prod(dims) float32 values (row-major).
 *
 * Every tensor of the table below must be there once, with its shape;
 * nothing else may be (no unknown tensor, no bytes after the last one). */
#include "whisper-vad-private.h"

#include <string.h>

#define VAD_FILE_MAGIC "GWSILVAD"
#define VAD_FILE_MAGIC_LEN 8
#define VAD_FILE_VERSION 1u
#define VAD_FILE_HEADER_BYTES (VAD_FILE_MAGIC_LEN + 4 + 4 + 32)
#define VAD_DTYPE_F32 0u
#define VAD_MAX_DIMS 4

G_DEFINE_QUARK (whisper-vad-error-quark, whisper_vad_error)

typedef enum {
  T_BASIS,
  T_CONV0_W, T_CONV0_B,
  T_CONV1_W, T_CONV1_B,
  T_CONV2_W, T_CONV2_B,
  T_CONV3_W, T_CONV3_B,
  T_LSTM_W, T_LSTM_R, T_LSTM_B,
  T_OUT_W, T_OUT_B,
  N_TENSORS
} TensorId;

typedef struct {
  const char *name;
  guint32 n_dims;
  guint32 dims[VAD_MAX_DIMS];
} TensorSpec;

/* Names and shapes as tools/silero-vad-convert.py writes them. */
static const TensorSpec tensor_specs[N_TENSORS] = {
  [T_BASIS] = { "encoder.feature_extractor.forward_basis_buffer", 3,
                { VAD_STFT_ROWS, 1, VAD_STFT_WINDOW } },
  [T_CONV0_W] = { "encoder.conv_layers.0.weight", 3, { 128, 129, 3 } },
  [T_CONV0_B] = { "encoder.conv_layers.0.bias", 1, { 128 } },
  [T_CONV1_W] = { "encoder.conv_layers.1.weight", 3, { 64, 128, 3 } },
  [T_CONV1_B] = { "encoder.conv_layers.1.bias", 1, { 64 } },
  [T_CONV2_W] = { "encoder.conv_layers.2.weight", 3, { 64, 64, 3 } },
  [T_CONV2_B] = { "encoder.conv_layers.2.bias", 1, { 64 } },
  [T_CONV3_W] = { "encoder.conv_layers.3.weight", 3, { 128, 64, 3 } },
  [T_CONV3_B] = { "encoder.conv_layers.3.bias", 1, { 128 } },
  [T_LSTM_W] = { "decoder.rnn.W", 3, { 1, VAD_GATES, VAD_HIDDEN } },
  [T_LSTM_R] = { "decoder.rnn.R", 3, { 1, VAD_GATES, VAD_HIDDEN } },
  [T_LSTM_B] = { "decoder.rnn.B", 2, { 1, 2 * VAD_GATES } },
  [T_OUT_W] = { "decoder.conv1d.weight", 3, { 1, VAD_HIDDEN, 1 } },
  [T_OUT_B] = { "decoder.conv1d.bias", 1, { 1 } },
};

/* A cursor over the file's bytes; every read checks the bytes are there. */
typedef struct {
  const char *path;
  const guint8 *data;
  gsize size;
  gsize pos;
} Reader;

static gboolean
fail_format (GError **error, const char *path, const char *format, ...) G_GNUC_PRINTF (3, 4);

/* Sets a WHISPER_VAD_ERROR_FORMAT error "VAD weight file '<path>': <reason>". */
static gboolean
fail_format (GError **error, const char *path, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *reason = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, WHISPER_VAD_ERROR, WHISPER_VAD_ERROR_FORMAT,
               "VAD weight file '%s': %s (make it again with tools/fetch-model.sh silero-vad)",
               path, reason);
  return FALSE;
}

/* Takes `n` bytes at the cursor into *out; FALSE with a "truncated" error
 * naming `what` when the file ends first. */
static gboolean
take_bytes (Reader *r, gsize n, const guint8 **out, const char *what, GError **error)
{
  if (n > r->size - r->pos)
    return fail_format (error, r->path,
                        "truncated: reading %s takes %" G_GSIZE_FORMAT " bytes at offset %"
                        G_GSIZE_FORMAT ", the file has %" G_GSIZE_FORMAT " in all",
                        what, n, r->pos, r->size);
  *out = r->data + r->pos;
  r->pos += n;
  return TRUE;
}

/* Reads one little-endian unsigned 32-bit integer. */
static gboolean
take_u32 (Reader *r, guint32 *value, const char *what, GError **error)
{
  const guint8 *p = NULL;
  if (!take_bytes (r, 4, &p, what, error))
    return FALSE;
  guint32 le;
  memcpy (&le, p, 4);
  *value = GUINT32_FROM_LE (le);
  return TRUE;
}

/* "[a, b, c]" (g_free). */
static char *
format_dims (const guint32 *dims, guint32 n_dims)
{
  GString *s = g_string_new ("[");
  for (guint32 i = 0; i < n_dims; i++)
    g_string_append_printf (s, "%s%u", i ? ", " : "", dims[i]);
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

/* Reads one tensor record into values[id] (host-order float32, g_malloc). */
static gboolean
read_tensor (Reader *r, guint32 index, float *values[N_TENSORS], GError **error)
{
  guint32 name_len, dtype, n_dims;
  const guint8 *name_bytes = NULL;
  g_autofree char *what = g_strdup_printf ("the name length of tensor %u", index);
  if (!take_u32 (r, &name_len, what, error))
    return FALSE;
  g_free (what);
  what = g_strdup_printf ("the name of tensor %u", index);
  if (!take_bytes (r, name_len, &name_bytes, what, error))
    return FALSE;
  g_autofree char *name = g_strndup ((const char *) name_bytes, name_len);
  if (strlen (name) != name_len || !g_utf8_validate (name, -1, NULL))
    return fail_format (error, r->path, "tensor %u's name is not valid UTF-8 text", index);

  int id = -1;
  for (int i = 0; i < N_TENSORS; i++)
    if (strcmp (name, tensor_specs[i].name) == 0)
      id = i;
  if (id < 0)
    return fail_format (error, r->path, "unexpected tensor '%s'", name);
  if (values[id] != NULL)
    return fail_format (error, r->path, "tensor '%s' appears twice", name);

  g_free (what);
  what = g_strdup_printf ("the header of tensor '%s'", name);
  if (!take_u32 (r, &dtype, what, error) || !take_u32 (r, &n_dims, what, error))
    return FALSE;
  if (dtype != VAD_DTYPE_F32)
    return fail_format (error, r->path, "tensor '%s' has dtype %u, expected 0 (float32)",
                        name, dtype);
  if (n_dims < 1 || n_dims > VAD_MAX_DIMS)
    return fail_format (error, r->path, "tensor '%s' has %u dimensions (1 to %d allowed)",
                        name, n_dims, VAD_MAX_DIMS);
  guint32 dims[VAD_MAX_DIMS];
  for (guint32 d = 0; d < n_dims; d++)
    if (!take_u32 (r, &dims[d], what, error))
      return FALSE;

  const TensorSpec *spec = &tensor_specs[id];
  if (n_dims != spec->n_dims || memcmp (dims, spec->dims, n_dims * sizeof dims[0]) != 0) {
    g_autofree char *have = format_dims (dims, n_dims);
    g_autofree char *want = format_dims (spec->dims, spec->n_dims);
    return fail_format (error, r->path, "tensor '%s' has shape %s, expected %s",
                        name, have, want);
  }

  gsize n_values = 1;
  for (guint32 d = 0; d < n_dims; d++)
    n_values *= dims[d];
  const guint8 *data = NULL;
  g_free (what);
  what = g_strdup_printf ("the %" G_GSIZE_FORMAT " values of tensor '%s'", n_values, name);
  if (!take_bytes (r, n_values * 4, &data, what, error))
    return FALSE;
  float *v = g_new (float, n_values);
  memcpy (v, data, n_values * 4);
#if G_BYTE_ORDER == G_BIG_ENDIAN
  for (gsize i = 0; i < n_values; i++) {
    guint32 bits;
    memcpy (&bits, &v[i], 4);
    bits = GUINT32_SWAP_LE_BE (bits);
    memcpy (&v[i], &bits, 4);
  }
#endif
  values[id] = v;
  return TRUE;
}

/* A [rows][cols] matrix transposed to [cols][rows] (g_malloc). */
static float *
transpose (const float *m, int rows, int cols)
{
  float *t = g_new (float, (gsize) rows * cols);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++)
      t[(gsize) c * rows + r] = m[(gsize) r * cols + c];
  return t;
}

/* A Conv1d layer from its [out][in][kernel] weight and [out] bias. */
static void
set_conv (VadConv *conv, const float *weight, float *bias, int in, int out, int stride)
{
  conv->in_channels = in;
  conv->out_channels = out;
  conv->stride = stride;
  conv->bias = bias;
  conv->weight_t = g_new (float, (gsize) VAD_CONV_KERNEL * in * out);
  for (int o = 0; o < out; o++)
    for (int i = 0; i < in; i++)
      for (int k = 0; k < VAD_CONV_KERNEL; k++)
        conv->weight_t[((gsize) k * in + i) * out + o] =
          weight[((gsize) o * in + i) * VAD_CONV_KERNEL + k];
}

/* The network's layouts from the file's tensors; takes the ones it keeps
 * as they are (biases) out of values[], leaving NULL there. */
static WhisperVad *
assemble (const char *path, float *values[N_TENSORS])
{
  WhisperVad *vad = g_new0 (WhisperVad, 1);
  vad->path = g_strdup (path);
  vad->accumulate = vad_pick_accumulate ();
  vad->basis_t = transpose (values[T_BASIS], VAD_STFT_ROWS, VAD_STFT_WINDOW);

  static const int strides[VAD_N_CONV] = { 1, 2, 2, 1 };
  for (int l = 0; l < VAD_N_CONV; l++) {
    const TensorSpec *w = &tensor_specs[T_CONV0_W + 2 * l];
    set_conv (&vad->conv[l], values[T_CONV0_W + 2 * l], values[T_CONV0_B + 2 * l],
              (int) w->dims[1], (int) w->dims[0], strides[l]);
    values[T_CONV0_B + 2 * l] = NULL;
  }

  vad->lstm_w_t = transpose (values[T_LSTM_W], VAD_GATES, VAD_HIDDEN);
  vad->lstm_r_t = transpose (values[T_LSTM_R], VAD_GATES, VAD_HIDDEN);
  vad->lstm_bias = g_new (float, VAD_GATES);
  for (int g = 0; g < VAD_GATES; g++)
    vad->lstm_bias[g] = values[T_LSTM_B][g] + values[T_LSTM_B][VAD_GATES + g];

  vad->out_weight = values[T_OUT_W];
  values[T_OUT_W] = NULL;
  vad->out_bias = values[T_OUT_B][0];
  return vad;
}

WhisperVad *
whisper_vad_load_file (const char *path, GError **error)
{
  g_autofree char *contents = NULL;
  gsize size = 0;
  GError *read_error = NULL;
  if (!g_file_test (path, G_FILE_TEST_EXISTS)) {
    g_set_error (error, WHISPER_VAD_ERROR, WHISPER_VAD_ERROR_NOT_FOUND,
                 "VAD weight file '%s' does not exist (install it with "
                 "tools/fetch-model.sh silero-vad)",
                 path);
    return NULL;
  }
  if (!g_file_get_contents (path, &contents, &size, &read_error)) {
    g_set_error (error, WHISPER_VAD_ERROR, WHISPER_VAD_ERROR_NOT_FOUND,
                 "VAD weight file '%s' cannot be read: %s (install it with "
                 "tools/fetch-model.sh silero-vad)",
                 path, read_error->message);
    g_error_free (read_error);
    return NULL;
  }

  Reader r = { path, (const guint8 *) contents, size, 0 };
  if (size < VAD_FILE_MAGIC_LEN || memcmp (contents, VAD_FILE_MAGIC, VAD_FILE_MAGIC_LEN) != 0) {
    fail_format (error, path, "not a Silero VAD weight file: it does not start with \""
                 VAD_FILE_MAGIC "\"");
    return NULL;
  }
  r.pos = VAD_FILE_MAGIC_LEN;
  guint32 version, n_tensors;
  const guint8 *source_sha256 = NULL;
  if (!take_u32 (&r, &version, "the format version", error))
    return NULL;
  if (version != VAD_FILE_VERSION) {
    fail_format (error, path, "format version %u, this engine reads version %u",
                 version, VAD_FILE_VERSION);
    return NULL;
  }
  if (!take_u32 (&r, &n_tensors, "the tensor count", error)
      || !take_bytes (&r, 32, &source_sha256, "the source file's SHA-256", error))
    return NULL;
  g_assert (r.pos == VAD_FILE_HEADER_BYTES);

  float *values[N_TENSORS] = { NULL };
  WhisperVad *vad = NULL;
  gboolean ok = TRUE;
  for (guint32 i = 0; ok && i < n_tensors; i++)
    ok = read_tensor (&r, i, values, error);
  for (int id = 0; ok && id < N_TENSORS; id++)
    if (values[id] == NULL)
      ok = fail_format (error, path, "tensor '%s' is missing (the file has %u tensors)",
                        tensor_specs[id].name, n_tensors);
  if (ok && r.pos != size)
    ok = fail_format (error, path, "%" G_GSIZE_FORMAT " unexpected bytes after the last tensor",
                      size - r.pos);
  if (ok)
    vad = assemble (path, values);
  for (int id = 0; id < N_TENSORS; id++)
    g_free (values[id]);
  return vad;
}
