/* whisper-model-ct2.c: loads a CTranslate2 Whisper model directory
 * (model.bin, config.json, vocabulary.json or vocabulary.txt).
 *
 * model.bin layout: what CTranslate2's writer produces,
 * https://github.com/OpenNMT/CTranslate2/blob/master/python/ctranslate2/specs/model_spec.py
 * (and src/models/model.cc reads); variable names and shapes: its Whisper spec,
 * https://github.com/OpenNMT/CTranslate2/blob/master/python/ctranslate2/specs/whisper_spec.py. The file is mapped read-only and treated as hostile: every field is
 * bounds-checked before it is read.
 */
#include "whisper-model.h"
#include "half.h"
#include "whisper-vocab.h"

#include <stdarg.h>
#include <string.h>

#include <json-glib/json-glib.h>

#define CT2_BINARY_VERSION 6
#define CT2_WHISPER_SPEC "WhisperSpec"
#define CT2_WHISPER_MAX_REVISION 3
#define CT2_MAX_RANK 4
#define CT2_MAX_LAYERS 256
/* A Whisper model with 256 + 256 layers and int8 scales has about 17000
 * variables; more is a corrupt count, refused before allocating for it. */
#define CT2_MAX_VARIABLES 100000
#define CT2_ACTIVATION_GELU_TANH 1
#define CT2_ACTIVATION_GELU 3
#define CT2_INT16_DEFAULT_SCALE 1000.0f

typedef enum {
  CT2_DTYPE_FLOAT32 = 0,
  CT2_DTYPE_INT8 = 1,
  CT2_DTYPE_INT16 = 2,
  CT2_DTYPE_INT32 = 3,
  CT2_DTYPE_FLOAT16 = 4,
  CT2_DTYPE_BFLOAT16 = 5,
  CT2_DTYPE_COUNT
} Ct2DType;

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

typedef struct {
  const char *name; /* NUL-terminated, inside the mapped file */
  guint rank;
  guint32 dims[CT2_MAX_RANK];
  guint64 n_elements;
  Ct2DType dtype;
  const guint8 *data; /* n_bytes, inside the mapped file */
  gsize n_bytes;
  gsize offset; /* of data, for messages */
} Ct2Variable;

typedef struct {
  char *dir;
  char *file; /* dir/model.bin: named in every message about it */
  GMappedFile *mapped;
  const guint8 *bytes;
  gsize size;
  gsize pos;

  Ct2Variable *variables;
  guint n_variables;
  GHashTable *by_name; /* name -> Ct2Variable * */
  GHashTable *aliases; /* alias name -> target name */

  WhisperModel *model;
} Ct2Reader;

static void
ct2_reader_free (Ct2Reader *r)
{
  g_clear_pointer (&r->by_name, g_hash_table_unref);
  g_clear_pointer (&r->aliases, g_hash_table_unref);
  g_free (r->variables);
  g_clear_pointer (&r->mapped, g_mapped_file_unref);
  g_free (r->file);
  g_free (r->dir);
  g_free (r);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Ct2Reader, ct2_reader_free)

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

static gboolean
ct2_read_header (Ct2Reader *r, GError **error)
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

static gboolean
ct2_read_variables (Ct2Reader *r, GError **error)
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

static gboolean
ct2_read_aliases (Ct2Reader *r, GError **error)
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
static const Ct2Variable *
ct2_find (Ct2Reader *r, const char *name)
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

static const Ct2Variable *
ct2_require (Ct2Reader *r, const char *name, GError **error)
{
  const Ct2Variable *var = ct2_find (r, name);
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

static gboolean
ct2_read_int_scalar (Ct2Reader *r, const Ct2Variable *var, gint64 *value,
                     GError **error)
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
static gboolean
ct2_optional_int (Ct2Reader *r, const char *name, gint64 *value,
                  gboolean *present, GError **error)
{
  const Ct2Variable *var = ct2_find (r, name);
  *present = var != NULL;
  return var == NULL || ct2_read_int_scalar (r, var, value, error);
}

/* The dequantization scales of an int8 (one per row) or int16 (one for
 * the tensor) weight, as float32; NULL on error. */
static float *
ct2_read_scales (Ct2Reader *r, const Ct2Variable *var, const char *name,
                 gsize n_scales, GError **error)
{
  g_autofree char *scale_name = g_strconcat (name, "_scale", NULL);
  const Ct2Variable *scale = ct2_find (r, scale_name);
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
static gboolean
ct2_tensor (Ct2Reader *r, const char *name, guint rank, const guint64 *dims, int rows, int cols,
            WhisperTensor *t, GError **error)
{
  const Ct2Variable *var = ct2_require (r, name, error);
  return var != NULL && ct2_check_shape (r, name, var, rank, dims, error) &&
         ct2_read_tensor (r, var, name, rows, cols, t, error);
}

static gboolean
ct2_vector (Ct2Reader *r, const char *name, int n, WhisperTensor *t, GError **error)
{
  guint64 dims[] = { n };
  return ct2_tensor (r, name, 1, dims, 1, n, t, error);
}

static gboolean
ct2_matrix (Ct2Reader *r, const char *name, int d0, int d1, WhisperTensor *t, GError **error)
{
  guint64 dims[] = { d0, d1 };
  return ct2_tensor (r, name, 2, dims, d0, d1, t, error);
}

/* A conv1d weight [d0, d1, d2], kept as the matrix [d0, d1 * d2]. */
static gboolean
ct2_conv_weight (Ct2Reader *r, const char *name, int d0, int d1, int d2, WhisperTensor *t,
                 GError **error)
{
  guint64 dims[] = { d0, d1, d2 };
  return ct2_tensor (r, name, 3, dims, d0, d1 * d2, t, error);
}

static gboolean
ct2_linear (Ct2Reader *r, const char *prefix, int n_out, int n_in,
            WhisperLinearWeights *linear, GError **error)
{
  g_autofree char *weight = g_strconcat (prefix, "/weight", NULL);
  g_autofree char *bias = g_strconcat (prefix, "/bias", NULL);
  linear->n_out = n_out;
  linear->n_in = n_in;
  return ct2_matrix (r, weight, n_out, n_in, &linear->weight, error) &&
         ct2_vector (r, bias, n_out, &linear->bias, error);
}

static gboolean
ct2_layer_norm (Ct2Reader *r, const char *prefix, int d,
                WhisperLayerNormWeights *ln, GError **error)
{
  g_autofree char *gamma = g_strconcat (prefix, "/gamma", NULL);
  g_autofree char *beta = g_strconcat (prefix, "/beta", NULL);
  return ct2_vector (r, gamma, d, &ln->gamma, error) &&
         ct2_vector (r, beta, d, &ln->beta, error);
}

/* ------------------------------------------------------------------ */
/* Hyper-parameters                                                    */

static int
ct2_count_layers (Ct2Reader *r, const char *part)
{
  int n = 0;
  while (n <= CT2_MAX_LAYERS) {
    g_autofree char *probe =
      g_strdup_printf ("%s/layer_%d/self_attention/linear_0/weight", part, n);
    if (ct2_find (r, probe) == NULL)
      break;
    n++;
  }
  return n;
}

static gboolean
ct2_dim_as_int (Ct2Reader *r, const Ct2Variable *var, guint axis, int *out,
                GError **error)
{
  if (axis >= var->rank || var->dims[axis] > G_MAXINT) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: variable '%s' has rank %u or a dimension too large to "
                 "give a hyper-parameter", r->file, var->name, var->rank);
    return FALSE;
  }
  *out = (int) var->dims[axis];
  return TRUE;
}

static gboolean
ct2_heads (Ct2Reader *r, const char *name, int *heads, GError **error)
{
  const Ct2Variable *var = ct2_require (r, name, error);
  gint64 value;
  if (var == NULL || !ct2_read_int_scalar (r, var, &value, error))
    return FALSE;
  *heads = (int) CLAMP (value, G_MININT, G_MAXINT);
  return TRUE;
}

static gboolean
ct2_derive_hparams (Ct2Reader *r, GError **error)
{
  int d, n_mels, n_audio_ctx, n_text_ctx, n_vocab, audio_heads, text_heads;

  const Ct2Variable *conv1 = ct2_require (r, "encoder/conv1/weight", error);
  if (conv1 == NULL)
    return FALSE;
  if (conv1->rank != 3 || conv1->dims[2] != 3) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: variable 'encoder/conv1/weight' must have shape "
                 "[d, n_mels, 3]", r->file);
    return FALSE;
  }
  if (!ct2_dim_as_int (r, conv1, 0, &d, error) ||
      !ct2_dim_as_int (r, conv1, 1, &n_mels, error))
    return FALSE;

  const Ct2Variable *audio_pos =
    ct2_require (r, "encoder/position_encodings/encodings", error);
  const Ct2Variable *text_pos =
    audio_pos ? ct2_require (r, "decoder/position_encodings/encodings", error) : NULL;
  const Ct2Variable *embeddings =
    text_pos ? ct2_require (r, "decoder/embeddings/weight", error) : NULL;
  if (embeddings == NULL ||
      !ct2_dim_as_int (r, audio_pos, 0, &n_audio_ctx, error) ||
      !ct2_dim_as_int (r, text_pos, 0, &n_text_ctx, error) ||
      !ct2_dim_as_int (r, embeddings, 0, &n_vocab, error))
    return FALSE;

  if (!ct2_heads (r, "encoder/num_heads", &audio_heads, error))
    return FALSE;
  if (ct2_find (r, "decoder/num_heads") == NULL)
    text_heads = audio_heads;
  else if (!ct2_heads (r, "decoder/num_heads", &text_heads, error))
    return FALSE;

  WhisperModel *m = r->model;
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_VOCAB, n_vocab);
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_AUDIO_CTX, n_audio_ctx);
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_AUDIO_STATE, d);
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_AUDIO_HEAD, audio_heads);
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_AUDIO_LAYER, ct2_count_layers (r, "encoder"));
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_TEXT_CTX, n_text_ctx);
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_TEXT_STATE, d);
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_TEXT_HEAD, text_heads);
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_TEXT_LAYER, ct2_count_layers (r, "decoder"));
  whisper_model_set_hparam (m, WHISPER_HPARAM_N_MELS, n_mels);

  return whisper_model_check_hparams (m, error);
}

/* ------------------------------------------------------------------ */
/* Decoder flags                                                       */

static gboolean
ct2_check_decoder_flags (Ct2Reader *r, GError **error)
{
  const Ct2Variable *activation_var = ct2_require (r, "decoder/activation", error);
  gint64 activation;
  if (activation_var == NULL ||
      !ct2_read_int_scalar (r, activation_var, &activation, error))
    return FALSE;
  if (activation == CT2_ACTIVATION_GELU_TANH) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                 "%s: decoder/activation is 1 (tanh-approximated GELU, written by "
                 "WhisperSpec revision 2 or older); only exact GELU (3) is "
                 "supported: convert the model again with a current CTranslate2",
                 r->file);
    return FALSE;
  }
  if (activation != CT2_ACTIVATION_GELU) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                 "%s: decoder/activation is %" G_GINT64_FORMAT ", not GELU (3)",
                 r->file, activation);
    return FALSE;
  }

  static const struct {
    const char *name;
    gint64 required;
  } flags[] = {
    { "decoder/scale_embeddings", 0 },
    { "decoder/alibi", 0 },
    { "decoder/pre_norm", 1 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (flags); i++) {
    gint64 value;
    gboolean present;
    if (!ct2_optional_int (r, flags[i].name, &value, &present, error))
      return FALSE;
    if (present && value != flags[i].required) {
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                   "%s: %s is %" G_GINT64_FORMAT "; only %" G_GINT64_FORMAT
                   " is supported", r->file, flags[i].name, value, flags[i].required);
      return FALSE;
    }
  }
  return TRUE;
}

/* The output projection must be the token embedding (tied weights). */
static gboolean
ct2_check_tied_projection (Ct2Reader *r, GError **error)
{
  const Ct2Variable *embeddings = ct2_require (r, "decoder/embeddings/weight", error);
  const Ct2Variable *projection =
    embeddings ? ct2_require (r, "decoder/projection/weight", error) : NULL;
  if (projection == NULL)
    return FALSE;

  gboolean tied = projection == embeddings;
  if (!tied && projection->dtype == embeddings->dtype &&
      projection->n_bytes == embeddings->n_bytes &&
      projection->rank == embeddings->rank)
    tied = memcmp (projection->data, embeddings->data, projection->n_bytes) == 0 &&
           memcmp (projection->dims, embeddings->dims,
                   projection->rank * sizeof projection->dims[0]) == 0;
  if (!tied) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                 "%s: decoder/projection/weight is not tied to "
                 "decoder/embeddings/weight; separate output projections are "
                 "not supported", r->file);
    return FALSE;
  }
  if (ct2_find (r, "decoder/projection/bias") != NULL) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                 "%s: decoder/projection/bias is set; an output bias is not "
                 "supported", r->file);
    return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Weights                                                             */

static gboolean
ct2_layer (Ct2Reader *r, const char *part, int index, int d, gboolean is_decoder,
           WhisperLayerWeights *l, GError **error)
{
  g_autofree char *p = g_strdup_printf ("%s/layer_%d", part, index);
  g_autofree char *self_ln = g_strconcat (p, "/self_attention/layer_norm", NULL);
  g_autofree char *self_qkv = g_strconcat (p, "/self_attention/linear_0", NULL);
  g_autofree char *self_out = g_strconcat (p, "/self_attention/linear_1", NULL);
  g_autofree char *ffn_ln = g_strconcat (p, "/ffn/layer_norm", NULL);
  g_autofree char *ffn_fc1 = g_strconcat (p, "/ffn/linear_0", NULL);
  g_autofree char *ffn_fc2 = g_strconcat (p, "/ffn/linear_1", NULL);

  if (!ct2_layer_norm (r, self_ln, d, &l->attn_ln, error) ||
      !ct2_linear (r, self_qkv, 3 * d, d, &l->attn_qkv, error) ||
      !ct2_linear (r, self_out, d, d, &l->attn_out, error) ||
      !ct2_layer_norm (r, ffn_ln, d, &l->mlp_ln, error) ||
      !ct2_linear (r, ffn_fc1, 4 * d, d, &l->mlp_fc1, error) ||
      !ct2_linear (r, ffn_fc2, d, 4 * d, &l->mlp_fc2, error))
    return FALSE;
  if (!is_decoder)
    return TRUE;

  g_autofree char *cross_ln = g_strconcat (p, "/attention/layer_norm", NULL);
  g_autofree char *cross_q = g_strconcat (p, "/attention/linear_0", NULL);
  g_autofree char *cross_kv = g_strconcat (p, "/attention/linear_1", NULL);
  g_autofree char *cross_out = g_strconcat (p, "/attention/linear_2", NULL);
  return ct2_layer_norm (r, cross_ln, d, &l->cross_ln, error) &&
         ct2_linear (r, cross_q, d, d, &l->cross_q, error) &&
         ct2_linear (r, cross_kv, 2 * d, d, &l->cross_kv, error) &&
         ct2_linear (r, cross_out, d, d, &l->cross_out, error);
}

static WhisperLayerWeights *
ct2_new_layers (Ct2Reader *r, int n)
{
  WhisperLayerWeights *layers = g_new0 (WhisperLayerWeights, n);
  g_ptr_array_add (r->model->allocations, layers);
  return layers;
}

static gboolean
ct2_encoder (Ct2Reader *r, GError **error)
{
  WhisperModel *m = r->model;
  WhisperEncoderWeights *enc = &m->encoder;
  int d = whisper_model_lookup (m, WHISPER_HPARAM_N_AUDIO_STATE);
  int n_mels = whisper_model_lookup (m, WHISPER_HPARAM_N_MELS);
  int n_ctx = whisper_model_lookup (m, WHISPER_HPARAM_N_AUDIO_CTX);
  int n_layers = whisper_model_lookup (m, WHISPER_HPARAM_N_AUDIO_LAYER);

  if (!ct2_conv_weight (r, "encoder/conv1/weight", d, n_mels, 3, &enc->conv1_weight, error) ||
      !ct2_vector (r, "encoder/conv1/bias", d, &enc->conv1_bias, error) ||
      !ct2_conv_weight (r, "encoder/conv2/weight", d, d, 3, &enc->conv2_weight, error) ||
      !ct2_vector (r, "encoder/conv2/bias", d, &enc->conv2_bias, error) ||
      !ct2_matrix (r, "encoder/position_encodings/encodings", n_ctx, d, &enc->positional,
                   error) ||
      !ct2_layer_norm (r, "encoder/layer_norm", d, &enc->ln_post, error))
    return FALSE;

  enc->layers = ct2_new_layers (r, n_layers);
  for (int i = 0; i < n_layers; i++)
    if (!ct2_layer (r, "encoder", i, d, FALSE, &enc->layers[i], error))
      return FALSE;
  return TRUE;
}

static gboolean
ct2_decoder (Ct2Reader *r, GError **error)
{
  WhisperModel *m = r->model;
  WhisperDecoderWeights *dec = &m->decoder;
  int d = whisper_model_lookup (m, WHISPER_HPARAM_N_TEXT_STATE);
  int n_vocab = whisper_model_lookup (m, WHISPER_HPARAM_N_VOCAB);
  int n_ctx = whisper_model_lookup (m, WHISPER_HPARAM_N_TEXT_CTX);
  int n_layers = whisper_model_lookup (m, WHISPER_HPARAM_N_TEXT_LAYER);

  if (!ct2_check_decoder_flags (r, error) || !ct2_check_tied_projection (r, error))
    return FALSE;

  if (!ct2_matrix (r, "decoder/embeddings/weight", n_vocab, d, &dec->token_embedding, error) ||
      !ct2_matrix (r, "decoder/position_encodings/encodings", n_ctx, d, &dec->positional,
                   error) ||
      !ct2_layer_norm (r, "decoder/layer_norm", d, &dec->ln, error))
    return FALSE;

  dec->layers = ct2_new_layers (r, n_layers);
  for (int i = 0; i < n_layers; i++)
    if (!ct2_layer (r, "decoder", i, d, TRUE, &dec->layers[i], error))
      return FALSE;
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Side files: config.json, vocabulary.json, vocabulary.txt            */

/* Real side files are far smaller (config.json: a few KiB; a vocabulary:
 * 1-2 MiB); the limits keep a hostile file from costing gigabytes of parse
 * trees. */
#define CT2_MAX_CONFIG_BYTES (4u << 20)
#define CT2_MAX_VOCABULARY_BYTES (8u << 20)

static GMappedFile *
map_side_file (const char *file, gsize max_bytes, GError **error)
{
  g_autoptr (GError) io_error = NULL;
  g_autoptr (GMappedFile) mapped = g_mapped_file_new (file, FALSE, &io_error);
  if (mapped == NULL) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_NOT_FOUND,
                 "%s: cannot read the file: %s", file, io_error->message);
    return NULL;
  }
  if (g_mapped_file_get_length (mapped) > max_bytes) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: %" G_GSIZE_FORMAT " bytes is too large for this file "
                 "(at most %" G_GSIZE_FORMAT ")", file,
                 g_mapped_file_get_length (mapped), max_bytes);
    return NULL;
  }
  return g_steal_pointer (&mapped);
}

static JsonParser *
parse_json_file (const char *file, gsize max_bytes, GError **error)
{
  g_autoptr (GMappedFile) mapped = map_side_file (file, max_bytes, error);
  if (mapped == NULL)
    return NULL;

  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) json_error = NULL;
  gsize length = g_mapped_file_get_length (mapped);
  const char *text = length > 0 ? g_mapped_file_get_contents (mapped) : "";
  if (!json_parser_load_from_data (parser, text, length, &json_error)) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: not valid JSON: %s", file, json_error->message);
    return NULL;
  }
  if (json_parser_get_root (parser) == NULL) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: not valid JSON: the file is empty", file);
    return NULL;
  }
  return g_steal_pointer (&parser);
}

static gboolean
read_id_list (JsonObject *root, const char *member, const char *file,
              int n_vocab, int **ids_out, int *n_out, GError **error)
{
  if (!json_object_has_member (root, member))
    return TRUE;

  JsonNode *node = json_object_get_member (root, member);
  if (!JSON_NODE_HOLDS_ARRAY (node)) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: '%s' is not a list", file, member);
    return FALSE;
  }
  JsonArray *array = json_node_get_array (node);
  guint n = json_array_get_length (array);
  g_autofree int *ids = g_new (int, MAX (n, 1));
  for (guint i = 0; i < n; i++) {
    JsonNode *element = json_array_get_element (array, i);
    gint64 id = -1;
    gboolean is_int = JSON_NODE_HOLDS_VALUE (element) &&
                      json_node_get_value_type (element) == G_TYPE_INT64;
    if (is_int)
      id = json_node_get_int (element);
    if (!is_int || id < 0 || id >= n_vocab) {
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                   "%s: %s[%u] is not a token id in [0, %d)", file, member, i,
                   n_vocab);
      return FALSE;
    }
    ids[i] = (int) id;
  }
  *ids_out = g_steal_pointer (&ids);
  *n_out = (int) n;
  return TRUE;
}

/* "alignment_heads": [[layer, head], ...] (CTranslate2's converter writes
 * it: python/ctranslate2/converters/transformers.py in
 * https://github.com/OpenNMT/CTranslate2). Ranges are checked by the engine,
 * which knows the layer and head counts. */
static gboolean
read_alignment_heads (JsonObject *root, const char *file, WhisperModel *m, GError **error)
{
  const char *member = "alignment_heads";
  if (!json_object_has_member (root, member))
    return TRUE;
  JsonNode *node = json_object_get_member (root, member);
  if (!JSON_NODE_HOLDS_ARRAY (node)) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: '%s' is not a list", file, member);
    return FALSE;
  }
  JsonArray *array = json_node_get_array (node);
  guint n = json_array_get_length (array);
  g_autofree int *pairs = g_new (int, 2 * MAX (n, 1));
  for (guint i = 0; i < n; i++) {
    JsonNode *element = json_array_get_element (array, i);
    JsonArray *pair = JSON_NODE_HOLDS_ARRAY (element) ? json_node_get_array (element) : NULL;
    gboolean ok = pair && json_array_get_length (pair) == 2;
    for (guint k = 0; ok && k < 2; k++) {
      JsonNode *v = json_array_get_element (pair, k);
      ok = JSON_NODE_HOLDS_VALUE (v) && json_node_get_value_type (v) == G_TYPE_INT64 &&
           json_node_get_int (v) >= 0 && json_node_get_int (v) < G_MAXINT;
      if (ok)
        pairs[2 * i + k] = (int) json_node_get_int (v);
    }
    if (!ok) {
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                   "%s: %s[%u] is not a pair [layer, head] of non-negative integers", file,
                   member, i);
      return FALSE;
    }
  }
  m->alignment_heads = g_steal_pointer (&pairs);
  m->n_alignment_heads = (int) n;
  return TRUE;
}

static gboolean
ct2_config (Ct2Reader *r, GError **error)
{
  g_autofree char *file = g_build_filename (r->dir, "config.json", NULL);
  if (!g_file_test (file, G_FILE_TEST_EXISTS))
    return TRUE;

  g_autoptr (JsonParser) parser = parse_json_file (file, CT2_MAX_CONFIG_BYTES, error);
  if (parser == NULL)
    return FALSE;
  JsonNode *root = json_parser_get_root (parser);
  if (!JSON_NODE_HOLDS_OBJECT (root)) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: the top level is not a JSON object", file);
    return FALSE;
  }

  WhisperModel *m = r->model;
  int n_vocab = whisper_model_lookup (m, WHISPER_HPARAM_N_VOCAB);
  JsonObject *object = json_node_get_object (root);
  return read_id_list (object, "suppress_ids", file, n_vocab, &m->suppress_ids,
                       &m->n_suppress_ids, error) &&
         read_id_list (object, "suppress_ids_begin", file, n_vocab,
                       &m->suppress_ids_begin, &m->n_suppress_ids_begin, error) &&
         read_alignment_heads (object, file, m, error);
}

/* Maps one vocabulary string to the token's raw bytes. */
static GBytes *
token_from_text (const char *file, guint id, const char *text, gsize len,
                 GError **error)
{
  if (whisper_vocab_is_special_name (text, len))
    return g_bytes_new (text, len);

  gunichar bad = 0;
  GBytes *bytes = whisper_vocab_bytes_from_byte_level (text, len, &bad);
  if (bytes != NULL)
    return bytes;
  if (bad == (gunichar) -1)
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: token %u is not valid UTF-8", file, id);
  else
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: token %u holds U+%04X, which is not a GPT-2 byte-level "
                 "character", file, id, bad);
  return NULL;
}

static gboolean
check_token_count (const char *file, guint count, int n_vocab, GError **error)
{
  if (count == (guint) n_vocab)
    return TRUE;
  g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
               "%s: has %u tokens but the model has %d (rows of "
               "decoder/embeddings/weight)", file, count, n_vocab);
  return FALSE;
}

static GPtrArray *
read_vocabulary_json (const char *file, int n_vocab, GError **error)
{
  g_autoptr (JsonParser) parser = parse_json_file (file, CT2_MAX_VOCABULARY_BYTES, error);
  if (parser == NULL)
    return NULL;
  JsonNode *root = json_parser_get_root (parser);
  if (!JSON_NODE_HOLDS_ARRAY (root)) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: the top level is not a JSON list of strings", file);
    return NULL;
  }

  JsonArray *array = json_node_get_array (root);
  guint n = json_array_get_length (array);
  if (!check_token_count (file, n, n_vocab, error))
    return NULL;

  g_autoptr (GPtrArray) tokens =
    g_ptr_array_new_full (n, (GDestroyNotify) g_bytes_unref);
  for (guint i = 0; i < n; i++) {
    JsonNode *element = json_array_get_element (array, i);
    if (!JSON_NODE_HOLDS_VALUE (element) ||
        json_node_get_value_type (element) != G_TYPE_STRING) {
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                   "%s: token %u is not a string", file, i);
      return NULL;
    }
    const char *text = json_node_get_string (element);
    GBytes *token = token_from_text (file, i, text, strlen (text), error);
    if (token == NULL)
      return NULL;
    g_ptr_array_add (tokens, token);
  }
  return g_steal_pointer (&tokens);
}

/* One token per line; a trailing '\r' is stripped only when every line
 * has one (as CTranslate2 does); an empty line is the empty token. */
static GPtrArray *
read_vocabulary_txt (const char *file, int n_vocab, GError **error)
{
  g_autoptr (GMappedFile) mapped = map_side_file (file, CT2_MAX_VOCABULARY_BYTES, error);
  if (mapped == NULL)
    return NULL;
  const char *text = g_mapped_file_get_contents (mapped);
  gsize size = g_mapped_file_get_length (mapped);

  /* First pass: count lines and check the '\r' convention. */
  guint n_lines = 0;
  gboolean all_cr = TRUE;
  for (gsize start = 0; start < size;) {
    const char *nl = memchr (text + start, '\n', size - start);
    gsize end = nl ? (gsize) (nl - text) : size;
    if (end == start || text[end - 1] != '\r')
      all_cr = FALSE;
    n_lines++;
    start = end + 1;
  }
  if (n_lines == 0)
    all_cr = FALSE;
  if (!check_token_count (file, n_lines, n_vocab, error))
    return NULL;

  g_autoptr (GPtrArray) tokens =
    g_ptr_array_new_full (n_lines, (GDestroyNotify) g_bytes_unref);
  for (gsize start = 0; start < size;) {
    const char *nl = memchr (text + start, '\n', size - start);
    gsize end = nl ? (gsize) (nl - text) : size;
    gsize len = end - start - (all_cr ? 1 : 0);
    GBytes *token = token_from_text (file, tokens->len, text + start, len, error);
    if (token == NULL)
      return NULL;
    g_ptr_array_add (tokens, token);
    start = end + 1;
  }
  return g_steal_pointer (&tokens);
}

static gboolean
ct2_vocabulary (Ct2Reader *r, GError **error)
{
  g_autofree char *json_file = g_build_filename (r->dir, "vocabulary.json", NULL);
  g_autofree char *txt_file = g_build_filename (r->dir, "vocabulary.txt", NULL);
  WhisperModel *m = r->model;
  int n_vocab = whisper_model_lookup (m, WHISPER_HPARAM_N_VOCAB);
  g_autoptr (GPtrArray) tokens = NULL;

  if (g_file_test (json_file, G_FILE_TEST_EXISTS)) {
    tokens = read_vocabulary_json (json_file, n_vocab, error);
  } else if (g_file_test (txt_file, G_FILE_TEST_EXISTS)) {
    tokens = read_vocabulary_txt (txt_file, n_vocab, error);
  } else {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_NOT_FOUND,
                 "%s: the model has no vocabulary.json or vocabulary.txt", r->dir);
    return FALSE;
  }
  if (tokens == NULL)
    return FALSE;

  m->n_tokens = (int) tokens->len;
  g_ptr_array_set_free_func (tokens, NULL);
  m->tokens = (GBytes **) g_ptr_array_free (g_steal_pointer (&tokens), FALSE);
  return TRUE;
}

/* ------------------------------------------------------------------ */

static Ct2Reader *
ct2_reader_open (const char *dir, GError **error)
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

WhisperModel *
whisper_model_load_ct2 (const char *dir, GError **error)
{
  g_return_val_if_fail (dir != NULL, NULL);

  g_autoptr (Ct2Reader) r = ct2_reader_open (dir, error);
  if (r == NULL)
    return NULL;

  g_autoptr (WhisperModel) model = whisper_model_new_empty (dir, WHISPER_MODEL_FORMAT_CT2);
  r->model = model;

  if (!ct2_read_header (r, error) || !ct2_read_variables (r, error) ||
      !ct2_read_aliases (r, error) || !ct2_derive_hparams (r, error) ||
      !ct2_encoder (r, error) || !ct2_decoder (r, error) ||
      !ct2_config (r, error) || !ct2_vocabulary (r, error) ||
      !whisper_model_validate (model, error))
    return NULL;

  /* the tensors point into the file */
  whisper_model_keep_mapping (model, r->mapped);
  return g_steal_pointer (&model);
}
