/* whisper-model-ct2-reader.c: CTranslate2's model.bin, read as a table of
 * named variables (whisper-model-ct2.h): the header, the variables and
 * their aliases, typed values and tensors. The file is mapped read-only and
 * treated as hostile: every field is bounds-checked before it is read. */
#include "whisper-model-ct2.h"
#include "half.h"

#include <stdarg.h>
#include <string.h>

static const struct {
  const char *name;
  gsize size;
} ct2_dtype_info[CT2_DTYPE_COUNT] = {
  [CT2_DTYPE_FLOAT32] = { "float32", 4 },
  [CT2_DTYPE_INT8] = { "int8", 1 },
  [CT2_DTYPE_INT16] = { "int16", 2 },
  [CT2_DTYPE_INT32] = { "int32", 4 },
  [CT2_DTYPE_FLOAT16] = { "float16", 2 },
  [CT2_DTYPE_BFLOAT16] = { "bfloat16", 2 },
};


void
whisper_ct2_reader_free (Ct2Reader *r)
{
  g_clear_pointer (&r->by_name, g_hash_table_unref);
  g_clear_pointer (&r->aliases, g_hash_table_unref);
  g_free (r->variables);
  g_clear_pointer (&r->mapped, g_mapped_file_unref);
  g_free (r->file);
  g_free (r->dir);
  g_free (r);
}

/* ------------------------------------------------------------------ */
/* Bounds-checked reads from the mapped file                           */

static gpointer G_GNUC_PRINTF (4, 5)
ct2_take (Ct2Reader *r, gsize n, GError **error, const char *what_format, ...)
{
  va_list args;
  va_start (args, what_format);
  gconstpointer p =
      whisper_model_take_bytes (r->file, r->bytes, r->size, &r->pos, n, error, what_format, args);
  va_end (args);
  return (gpointer) p;
}

static gboolean
ct2_read_u8 (Ct2Reader *r, guint8 *value, const char *what, GError **error)
{
  const guint8 *p = ct2_take (r, 1, error, "%s", what);
  if (p == NULL)
    return FALSE;
  *value = p[0];
  return TRUE;
}

static gboolean
ct2_read_u16 (Ct2Reader *r, guint16 *value, const char *what, GError **error)
{
  const guint8 *p = ct2_take (r, 2, error, "%s", what);
  if (p == NULL)
    return FALSE;
  *value = whisper_read_le16 (p);
  return TRUE;
}

static gboolean
ct2_read_u32 (Ct2Reader *r, guint32 *value, const char *what, GError **error)
{
  const guint8 *p = ct2_take (r, 4, error, "%s", what);
  if (p == NULL)
    return FALSE;
  *value = whisper_read_le32 (p);
  return TRUE;
}

/* STR: u16 length (counting the trailing NUL), then the bytes and a NUL. */
static const char *
ct2_read_string (Ct2Reader *r, const char *what, GError **error)
{
  gsize start = r->pos;
  guint16 len;
  if (!ct2_read_u16 (r, &len, what, error))
    return NULL;
  if (len == 0) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: %s at offset %" G_GSIZE_FORMAT " has length 0",
                 r->file, what, start);
    return NULL;
  }
  const char *s = ct2_take (r, len, error, "%s", what);
  if (s == NULL)
    return NULL;
  if (memchr (s, '\0', len) != s + len - 1) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: %s at offset %" G_GSIZE_FORMAT " is not a NUL-terminated "
                 "string of %u bytes", r->file, what, start, (guint) len - 1);
    return NULL;
  }
  return s;
}

/* ------------------------------------------------------------------ */
/* model.bin structure                                                 */

gboolean
whisper_ct2_read_header (Ct2Reader *r, GError **error)
{
  guint32 version;
  if (!ct2_read_u32 (r, &version, "the binary version", error))
    return FALSE;
  if (version != CT2_BINARY_VERSION) {
    gboolean plausible = version >= 1 && version < 100;
    g_set_error (error, WHISPER_MODEL_ERROR,
                 plausible ? WHISPER_MODEL_ERROR_UNSUPPORTED : WHISPER_MODEL_ERROR_FORMAT,
                 "%s: binary version %u is not supported (Whisper models are "
                 "version %d%s)", r->file, version, CT2_BINARY_VERSION,
                 version < CT2_BINARY_VERSION ? "; older files are not Whisper models" : "");
    return FALSE;
  }

  const char *spec = ct2_read_string (r, "the spec name", error);
  if (spec == NULL)
    return FALSE;
  if (strcmp (spec, CT2_WHISPER_SPEC) != 0) {
    g_autofree char *printable = g_strescape (spec, NULL);
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                 "%s: the model is a '%s', not a Whisper model (%s)", r->file,
                 printable, CT2_WHISPER_SPEC);
    return FALSE;
  }

  guint32 revision;
  if (!ct2_read_u32 (r, &revision, "the spec revision", error))
    return FALSE;
  if (revision == 0 || revision > CT2_WHISPER_MAX_REVISION) {
    g_set_error (error, WHISPER_MODEL_ERROR,
                 revision == 0 ? WHISPER_MODEL_ERROR_FORMAT : WHISPER_MODEL_ERROR_UNSUPPORTED,
                 "%s: WhisperSpec revision %u is not supported (1 to %d)", r->file,
                 revision, CT2_WHISPER_MAX_REVISION);
    return FALSE;
  }
  return TRUE;
}

static gboolean
ct2_check_payload (Ct2Reader *r, Ct2Variable *var, guint32 n_bytes, GError **error)
{
  guint64 n = 1;
  for (guint i = 0; i < var->rank; i++) {
    guint32 dim = var->dims[i];
    if (dim != 0 && n > G_MAXUINT32 / dim) {
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                   "%s: variable '%s' has dimensions whose product exceeds 2^32",
                   r->file, var->name);
      return FALSE;
    }
    n *= dim;
  }
  var->n_elements = n;

  guint64 expected = n * ct2_dtype_info[var->dtype].size;
  if (expected != n_bytes) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: variable '%s' declares %u bytes but %" G_GUINT64_FORMAT
                 " %s elements need %" G_GUINT64_FORMAT,
                 r->file, var->name, n_bytes, n, ct2_dtype_info[var->dtype].name,
                 expected);
    return FALSE;
  }
  return TRUE;
}

static gboolean
ct2_read_variable (Ct2Reader *r, guint index, Ct2Variable *var, GError **error)
{
  g_autofree char *what = g_strdup_printf ("the name of variable %u", index);
  var->name = ct2_read_string (r, what, error);
  if (var->name == NULL)
    return FALSE;

  g_free (what);
  what = g_strdup_printf ("the header of variable '%s'", var->name);

  guint8 rank;
  if (!ct2_read_u8 (r, &rank, what, error))
    return FALSE;
  if (rank > CT2_MAX_RANK) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: variable '%s' has rank %u (at most %d is supported)",
                 r->file, var->name, rank, CT2_MAX_RANK);
    return FALSE;
  }
  var->rank = rank;
  for (guint i = 0; i < rank; i++)
    if (!ct2_read_u32 (r, &var->dims[i], what, error))
      return FALSE;

  guint8 dtype;
  guint32 n_bytes;
  if (!ct2_read_u8 (r, &dtype, what, error) ||
      !ct2_read_u32 (r, &n_bytes, what, error))
    return FALSE;
  if (dtype >= CT2_DTYPE_COUNT) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: variable '%s' has unknown data type %u", r->file,
                 var->name, dtype);
    return FALSE;
  }
  var->dtype = dtype;
  if (!ct2_check_payload (r, var, n_bytes, error))
    return FALSE;

  var->offset = r->pos;
  var->n_bytes = n_bytes;
  var->data = ct2_take (r, n_bytes, error, "variable '%s'", var->name);
  if (var->data == NULL)
    return FALSE;

  if (!g_hash_table_insert (r->by_name, (gpointer) var->name, var)) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: variable '%s' appears twice", r->file, var->name);
    return FALSE;
  }
  return TRUE;
}

gboolean
whisper_ct2_read_variables (Ct2Reader *r, GError **error)
{
  guint32 count;
  if (!ct2_read_u32 (r, &count, "the number of variables", error))
    return FALSE;

  /* Smallest record: u16 length + NUL name, rank, dtype, u32 size. */
  const gsize min_record = 2 + 1 + 1 + 1 + 4;
  if (count > CT2_MAX_VARIABLES || count > (r->size - r->pos) / min_record) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: %u variables cannot fit in the %" G_GSIZE_FORMAT
                 " bytes after offset %" G_GSIZE_FORMAT " (or exceed %d)",
                 r->file, count, r->size - r->pos, r->pos, CT2_MAX_VARIABLES);
    return FALSE;
  }

  r->variables = g_new0 (Ct2Variable, MAX (count, 1));
  r->n_variables = count;
  for (guint i = 0; i < count; i++)
    if (!ct2_read_variable (r, i, &r->variables[i], error))
      return FALSE;
  return TRUE;
}

gboolean
whisper_ct2_read_aliases (Ct2Reader *r, GError **error)
{
  guint32 count;
  if (!ct2_read_u32 (r, &count, "the number of aliases", error))
    return FALSE;

  const gsize min_record = 2 * (2 + 1);
  if (count > CT2_MAX_VARIABLES || count > (r->size - r->pos) / min_record) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: %u aliases cannot fit in the %" G_GSIZE_FORMAT
                 " bytes after offset %" G_GSIZE_FORMAT " (or exceed %d)",
                 r->file, count, r->size - r->pos, r->pos, CT2_MAX_VARIABLES);
    return FALSE;
  }

  for (guint i = 0; i < count; i++) {
    g_autofree char *what = g_strdup_printf ("alias %u", i);
    const char *alias = ct2_read_string (r, what, error);
    if (alias == NULL)
      return FALSE;
    const char *target = ct2_read_string (r, what, error);
    if (target == NULL)
      return FALSE;

    if (!g_hash_table_contains (r->by_name, target)) {
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                   "%s: alias '%s' points to missing variable '%s'", r->file,
                   alias, target);
      return FALSE;
    }
    if (g_hash_table_contains (r->by_name, alias) ||
        !g_hash_table_insert (r->aliases, (gpointer) alias, (gpointer) target)) {
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                   "%s: alias '%s' is defined twice", r->file, alias);
      return FALSE;
    }
  }

  if (r->pos != r->size) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: %" G_GSIZE_FORMAT " unexpected bytes after the alias "
                 "section at offset %" G_GSIZE_FORMAT,
                 r->file, r->size - r->pos, r->pos);
    return FALSE;
  }
  return TRUE;
}

/* A variable by name, following aliases, including the implicit aliases of
 * quantization scales: if "a" aliases "b", "a_scale" aliases "b_scale". */
const Ct2Variable *
whisper_ct2_find (Ct2Reader *r, const char *name)
{
  const Ct2Variable *var = g_hash_table_lookup (r->by_name, name);
  if (var != NULL)
    return var;

  const char *target = g_hash_table_lookup (r->aliases, name);
  if (target != NULL)
    return g_hash_table_lookup (r->by_name, target);

  static const char *const suffixes[] = { "_scale", "_zero" };
  gsize len = strlen (name);
  for (guint i = 0; i < G_N_ELEMENTS (suffixes); i++) {
    gsize suffix_len = strlen (suffixes[i]);
    if (len <= suffix_len || strcmp (name + len - suffix_len, suffixes[i]) != 0)
      continue;
    g_autofree char *base = g_strndup (name, len - suffix_len);
    const char *base_target = g_hash_table_lookup (r->aliases, base);
    if (base_target == NULL)
      continue;
    g_autofree char *resolved = g_strconcat (base_target, suffixes[i], NULL);
    return g_hash_table_lookup (r->by_name, resolved);
  }
  return NULL;
}

const Ct2Variable *
whisper_ct2_require (Ct2Reader *r, const char *name, GError **error)
{
  const Ct2Variable *var = whisper_ct2_find (r, name);
  if (var == NULL)
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: missing variable '%s'", r->file, name);
  return var;
}

/* ------------------------------------------------------------------ */
/* Values                                                              */

static gboolean
ct2_is_float_dtype (Ct2DType dtype)
{
  return dtype == CT2_DTYPE_FLOAT32 || dtype == CT2_DTYPE_FLOAT16 ||
         dtype == CT2_DTYPE_BFLOAT16;
}

static float
ct2_float_at (const Ct2Variable *var, gsize i)
{
  const guint8 *p = var->data;
  guint32 bits;
  float f;

  switch (var->dtype) {
  case CT2_DTYPE_FLOAT32:
    bits = (guint32) p[4 * i] | (guint32) p[4 * i + 1] << 8 |
           (guint32) p[4 * i + 2] << 16 | (guint32) p[4 * i + 3] << 24;
    memcpy (&f, &bits, sizeof f);
    return f;
  case CT2_DTYPE_FLOAT16:
    return whisper_half_to_float ((guint16) (p[2 * i] | p[2 * i + 1] << 8));
  case CT2_DTYPE_BFLOAT16:
    bits = ((guint32) p[2 * i] | (guint32) p[2 * i + 1] << 8) << 16;
    memcpy (&f, &bits, sizeof f);
    return f;
  case CT2_DTYPE_INT8:
    return (float) (gint8) p[i];
  case CT2_DTYPE_INT16:
    return (float) (gint16) (p[2 * i] | p[2 * i + 1] << 8);
  case CT2_DTYPE_INT32:
  case CT2_DTYPE_COUNT:
  default:
    break;
  }
  g_return_val_if_reached (0.0f);
}

gboolean
whisper_ct2_read_int_scalar (Ct2Reader *r, const Ct2Variable *var, gint64 *value, GError **error)
{
  const guint8 *p = var->data;
  if (var->n_elements == 1) {
    switch (var->dtype) {
    case CT2_DTYPE_INT8:
      *value = (gint8) p[0];
      return TRUE;
    case CT2_DTYPE_INT16:
      *value = (gint16) (p[0] | p[1] << 8);
      return TRUE;
    case CT2_DTYPE_INT32:
      *value = (gint32) ((guint32) p[0] | (guint32) p[1] << 8 |
                         (guint32) p[2] << 16 | (guint32) p[3] << 24);
      return TRUE;
    case CT2_DTYPE_FLOAT32: {
      float f = ct2_float_at (var, 0);
      /* Range first: converting an out-of-range float to int is undefined. */
      if (f >= -2147483648.0f && f < 2147483648.0f && f == (float) (gint32) f) {
        *value = (gint32) f;
        return TRUE;
      }
      break;
    }
    default:
      break;
    }
  }
  g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
               "%s: variable '%s' is not an integer scalar (%s, %" G_GUINT64_FORMAT
               " elements)", r->file, var->name, ct2_dtype_info[var->dtype].name,
               var->n_elements);
  return FALSE;
}

/* An optional integer scalar: FALSE only on error; *present tells if set. */
gboolean
whisper_ct2_optional_int (Ct2Reader *r, const char *name, gint64 *value, gboolean *present,
                          GError **error)
{
  const Ct2Variable *var = whisper_ct2_find (r, name);
  *present = var != NULL;
  return var == NULL || whisper_ct2_read_int_scalar (r, var, value, error);
}

/* The dequantization scales of an int8 (one per row) or int16 (one for
 * the tensor) weight, as float32; NULL on error. */
static float *
ct2_read_scales (Ct2Reader *r, const Ct2Variable *var, const char *name,
                 gsize n_scales, GError **error)
{
  g_autofree char *scale_name = g_strconcat (name, "_scale", NULL);
  const Ct2Variable *scale = whisper_ct2_find (r, scale_name);
  g_autofree float *scales = g_new (float, MAX (n_scales, 1));

  if (scale == NULL && var->dtype == CT2_DTYPE_INT16) {
    scales[0] = CT2_INT16_DEFAULT_SCALE;
    return g_steal_pointer (&scales);
  }
  if (scale == NULL) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: %s variable '%s' has no '%s'", r->file,
                 ct2_dtype_info[var->dtype].name, name, scale_name);
    return NULL;
  }
  if (!ct2_is_float_dtype (scale->dtype) || scale->n_elements != n_scales) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: '%s' has %" G_GUINT64_FORMAT " %s values, expected %"
                 G_GSIZE_FORMAT " float values", r->file, scale_name,
                 scale->n_elements, ct2_dtype_info[scale->dtype].name, n_scales);
    return NULL;
  }
  for (gsize i = 0; i < n_scales; i++)
    scales[i] = ct2_float_at (scale, i);
  return g_steal_pointer (&scales);
}

/* The stored type of a weight variable, or FALSE with an error for types
 * weights cannot have. */
static gboolean
ct2_weight_type (Ct2Reader *r, const Ct2Variable *var, const char *name, WhisperDType *type,
                 GError **error)
{
  switch (var->dtype) {
  case CT2_DTYPE_FLOAT32: *type = WHISPER_DTYPE_F32; return TRUE;
  case CT2_DTYPE_FLOAT16: *type = WHISPER_DTYPE_F16; return TRUE;
  case CT2_DTYPE_BFLOAT16: *type = WHISPER_DTYPE_BF16; return TRUE;
  case CT2_DTYPE_INT8: *type = WHISPER_DTYPE_I8; return TRUE;
  case CT2_DTYPE_INT16: *type = WHISPER_DTYPE_I16; return TRUE;
  default: break;
  }
  g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
               "%s: variable '%s' has data type %s, which is not supported for "
               "weights", r->file, name, ct2_dtype_info[var->dtype].name);
  return FALSE;
}

/* The variable as a tensor [rows, cols] (rows * cols == its element count)
 * in its stored type, pointing into the mapped file. Two cases get a
 * float32 copy instead, dequantized as CTranslate2 does (value = stored /
 * scale): a big-endian host (the file is little-endian) and an int8 vector
 * (one scale per element, which the one-scale-per-row tensor cannot say). */
static gboolean
ct2_read_tensor (Ct2Reader *r, const Ct2Variable *var, const char *name, int rows, int cols,
                 WhisperTensor *t, GError **error)
{
  WhisperDType type;
  if (!ct2_weight_type (r, var, name, &type, error))
    return FALSE;

  g_autofree float *scales = NULL;
  gsize n_scales = 0;
  if (type == WHISPER_DTYPE_I8 || type == WHISPER_DTYPE_I16) {
    /* int8: one scale per row (dim 0); int16: one scale. */
    n_scales = type == WHISPER_DTYPE_I8 && var->rank > 0 ? var->dims[0] : 1;
    if (!(scales = ct2_read_scales (r, var, name, n_scales, error)))
      return FALSE;
  }

  t->rows = rows;
  t->cols = cols;
  const gboolean one_scale_per_row = type != WHISPER_DTYPE_I8 || n_scales == (gsize) rows;
  if (G_BYTE_ORDER == G_LITTLE_ENDIAN && one_scale_per_row) {
    t->data = var->data;
    t->type = type;
    t->scales = scales;
    if (scales)
      g_ptr_array_add (r->model->allocations, g_steal_pointer (&scales));
    return TRUE;
  }

  const gsize n = var->n_elements;
  float *out = whisper_model_alloc_floats (r->model, n, error);
  if (out == NULL)
    return FALSE;
  const gsize row_len = scales ? n / n_scales : n;
  for (gsize i = 0; i < n; i++)
    out[i] = scales ? ct2_float_at (var, i) * (1.0f / scales[i / row_len]) : ct2_float_at (var, i);
  t->data = out;
  t->type = WHISPER_DTYPE_F32;
  t->scales = NULL;
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Shapes and tensors                                                  */

static char *
format_shape (guint rank, const guint64 *dims)
{
  GString *s = g_string_new ("[");
  for (guint i = 0; i < rank; i++)
    g_string_append_printf (s, "%s%" G_GUINT64_FORMAT, i ? ", " : "", dims[i]);
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

static gboolean
ct2_check_shape (Ct2Reader *r, const char *name, const Ct2Variable *var,
                 guint rank, const guint64 *expected, GError **error)
{
  gboolean same = var->rank == rank;
  for (guint i = 0; same && i < rank; i++)
    same = var->dims[i] == expected[i];
  if (same)
    return TRUE;

  guint64 actual[CT2_MAX_RANK];
  for (guint i = 0; i < var->rank; i++)
    actual[i] = var->dims[i];
  g_autofree char *have = format_shape (var->rank, actual);
  g_autofree char *want = format_shape (rank, expected);
  g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
               "%s: variable '%s' has shape %s, expected %s", r->file, name,
               have, want);
  return FALSE;
}

/* The variable `name`, which must have the shape dims, as a tensor
 * [rows, cols]. */
gboolean
whisper_ct2_tensor (Ct2Reader *r, const char *name, guint rank, const guint64 *dims, int rows,
                    int cols, WhisperTensor *t, GError **error)
{
  const Ct2Variable *var = whisper_ct2_require (r, name, error);
  return var != NULL && ct2_check_shape (r, name, var, rank, dims, error) &&
         ct2_read_tensor (r, var, name, rows, cols, t, error);
}

static gboolean
ct2_vector (Ct2Reader *r, const char *name, int n, WhisperTensor *t, GError **error)
{
  guint64 dims[] = { n };
  return whisper_ct2_tensor (r, name, 1, dims, 1, n, t, error);
}

static gboolean
ct2_matrix (Ct2Reader *r, const char *name, int d0, int d1, WhisperTensor *t, GError **error)
{
  guint64 dims[] = { d0, d1 };
  return whisper_ct2_tensor (r, name, 2, dims, d0, d1, t, error);
}

gboolean
whisper_ct2_linear (Ct2Reader *r, const char *prefix, int n_out, int n_in,
                    WhisperLinearWeights *linear, GError **error)
{
  g_autofree char *weight = g_strconcat (prefix, "/weight", NULL);
  g_autofree char *bias = g_strconcat (prefix, "/bias", NULL);
  linear->n_out = n_out;
  linear->n_in = n_in;
  return ct2_matrix (r, weight, n_out, n_in, &linear->weight, error) &&
         ct2_vector (r, bias, n_out, &linear->bias, error);
}

gboolean
whisper_ct2_layer_norm (Ct2Reader *r, const char *prefix, int d, WhisperLayerNormWeights *ln,
                        GError **error)
{
  g_autofree char *gamma = g_strconcat (prefix, "/gamma", NULL);
  g_autofree char *beta = g_strconcat (prefix, "/beta", NULL);
  return ct2_vector (r, gamma, d, &ln->gamma, error) &&
         ct2_vector (r, beta, d, &ln->beta, error);
}

Ct2Reader *
whisper_ct2_reader_open (const char *dir, GError **error)
{
  g_autoptr (Ct2Reader) r = g_new0 (Ct2Reader, 1);
  r->dir = g_strdup (dir);
  r->file = g_build_filename (dir, "model.bin", NULL);

  g_autoptr (GError) io_error = NULL;
  r->mapped = g_mapped_file_new (r->file, FALSE, &io_error);
  if (r->mapped == NULL) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_NOT_FOUND,
                 "%s: cannot open the model: %s", r->file, io_error->message);
    return NULL;
  }
  r->bytes = (const guint8 *) g_mapped_file_get_contents (r->mapped);
  r->size = g_mapped_file_get_length (r->mapped);
  r->by_name = g_hash_table_new (g_str_hash, g_str_equal);
  r->aliases = g_hash_table_new (g_str_hash, g_str_equal);
  return g_steal_pointer (&r);
}

