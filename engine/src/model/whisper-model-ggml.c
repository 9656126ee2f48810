/* whisper-model-ggml.c: loads a whisper.cpp ggml model file (the legacy
 * "lmgg" container, not GGUF): f32, f16, the block types q4_0, q4_1, q5_0,
 * q5_1 and q8_0 and the k-quants q4_K, q5_K and q6_K (util/qblock.h), each
 * tensor kept as stored.
 *
 * Layout: what whisper.cpp's converter writes,
 * https://github.com/ggml-org/whisper.cpp/blob/master/models/convert-pt-to-ggml.py
 * (and whisper_model_load() in src/whisper.cpp reads). The file is mapped read-only and
 * treated as hostile: every count and size is checked against what is left
 * in the file before it is used. Separate q, k, v projections are fused into
 * the CTranslate2 layouts the engine uses (see whisper-model.h), so both
 * loaders give the same WhisperModel for the same weights.
 */
#include "whisper-model.h"
#include "whisper-model-walk.h"
#include "half.h"
#include "qblock.h"
#include "whisper-vocab.h"

#include <stdarg.h>
#include <string.h>

#define GGML_FILE_MAGIC 0x67676d6cu
#define GGML_MAX_DIMS 4
#define GGML_MAX_NAME 256
#define GGML_MAX_FFT_BINS 4096
#define GGML_QNT_VERSION_FACTOR 1000

enum { GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1 };

/* A model tensor and the records of the file that fill it: one, or the
 * separate q, k, v (or k, v) projections of a fused one. */
typedef struct {
  WhisperTensor *tensor;
  GPtrArray *parts; /* GgmlSlot *, not owned */
} GgmlTarget;

typedef struct {
  char *name;
  int n_dims;
  gint64 ne[GGML_MAX_DIMS]; /* ggml order: ne[0] is the innermost dimension */
  GgmlTarget *target;       /* the tensor this record fills */
  gsize offset;             /* at which element of it */
  gboolean loaded;
  const guint8 *data;       /* the record's data in the mapped file, once read */
  gint32 ttype;
} GgmlSlot;

typedef struct {
  const char *file;
  GMappedFile *mapped;
  const guint8 *bytes;
  gsize size;
  gsize pos;

  gsize weight_budget; /* elements the file can still hold (2 per byte: q4_0 packs 32 in 18) */
  GHashTable *slots;   /* name -> GgmlSlot *, owns the slots */
  GPtrArray *slot_order;
  GPtrArray *targets;  /* GgmlTarget *, owned */

  GPtrArray *file_tokens; /* GBytes * */
  WhisperModel *model;
} GgmlReader;

static void
ggml_slot_free (GgmlSlot *slot)
{
  g_free (slot->name);
  g_free (slot);
}

static void
ggml_target_free (GgmlTarget *target)
{
  g_ptr_array_unref (target->parts);
  g_free (target);
}

static void
ggml_reader_free (GgmlReader *r)
{
  g_clear_pointer (&r->targets, g_ptr_array_unref);
  g_clear_pointer (&r->slot_order, g_ptr_array_unref);
  g_clear_pointer (&r->slots, g_hash_table_unref);
  g_clear_pointer (&r->file_tokens, g_ptr_array_unref);
  g_clear_pointer (&r->mapped, g_mapped_file_unref);
  g_free (r);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GgmlReader, ggml_reader_free)

/* ------------------------------------------------------------------ */
/* Bounds-checked reads                                                */

static gconstpointer G_GNUC_PRINTF (4, 5)
ggml_take (GgmlReader *r, gsize n, GError **error, const char *what_format, ...)
{
  va_list args;
  va_start (args, what_format);
  gconstpointer p =
      whisper_model_take_bytes (r->file, r->bytes, r->size, &r->pos, n, error, what_format, args);
  va_end (args);
  return p;
}

static gboolean
ggml_read_i32 (GgmlReader *r, gint32 *value, const char *what, GError **error)
{
  const guint8 *p = ggml_take (r, 4, error, "%s", what);
  if (p == NULL)
    return FALSE;
  *value = (gint32) whisper_read_le32 (p);
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Types                                                               */

static const char *
ggml_type_name (gint32 type)
{
  switch (type) {
  case 2: return "q4_0";
  case 3: return "q4_1";
  case 6: return "q5_0";
  case 7: return "q5_1";
  case 8: return "q8_0";
  case 9: return "q8_1";
  case 10: return "q2_k";
  case 11: return "q3_k";
  case 12: return "q4_k";
  case 13: return "q5_k";
  case 14: return "q6_k";
  case 15: return "q8_k";
  case 30: return "bf16";
  default: return NULL;
  }
}

static const char *
ggml_ftype_name (gint32 ftype)
{
  switch (ftype) {
  case 2: return "q4_0";
  case 3: return "q4_1";
  case 4: return "q4_1 (some f16)";
  case 7: return "q8_0";
  case 8: return "q5_0";
  case 9: return "q5_1";
  case 10: return "q2_k";
  case 11: return "q3_k";
  case 12: return "q4_k";
  case 13: return "q5_k";
  case 14: return "q6_k";
  default: return NULL;
  }
}

/* ------------------------------------------------------------------ */
/* Header, mel filters, vocabulary                                     */

static gboolean
ggml_read_hparams (GgmlReader *r, GError **error)
{
  gint32 magic;
  if (!ggml_read_i32 (r, &magic, "the magic", error))
    return FALSE;
  if ((guint32) magic != GGML_FILE_MAGIC) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: not a ggml file (magic 0x%08x)", r->file, (guint32) magic);
    return FALSE;
  }

  /* The file's order is the order of WhisperHParam. */
  static const char *const names[WHISPER_HPARAM_COUNT] = {
    "n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer",
    "n_text_ctx", "n_text_state", "n_text_head", "n_text_layer", "n_mels",
  };
  for (int i = 0; i < WHISPER_HPARAM_COUNT; i++) {
    gint32 value;
    if (!ggml_read_i32 (r, &value, names[i], error))
      return FALSE;
    whisper_model_set_hparam (r->model, (WhisperHParam) i, value);
  }
  if (!whisper_model_check_hparams (r->model, error))
    return FALSE;

  gint32 ftype;
  if (!ggml_read_i32 (r, &ftype, "ftype", error))
    return FALSE;
  if (ftype < 0) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: invalid ftype %d", r->file, ftype);
    return FALSE;
  }
  /* f32, f16, q4_0, q4_1, q4_1 with some f16, q8_0, q5_0, q5_1, q4_K, q5_K,
   * q6_K: the tensors' own types are checked one by one (ggml_check_type) */
  gint32 base_ftype = ftype % GGML_QNT_VERSION_FACTOR;
  if ((base_ftype > 4 && base_ftype < 7) || base_ftype == 10 || base_ftype == 11 ||
      base_ftype > 14) {
    const char *name = ggml_ftype_name (base_ftype);
    if (name != NULL)
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                   "%s: quantized ggml type %s is not supported; use an f16, f32, "
                   "q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q5_k or q6_k file", r->file, name);
    else
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                   "%s: ggml ftype %d is not supported; use an f16, f32, q4_0, q4_1, "
                   "q5_0, q5_1, q8_0, q4_k, q5_k or q6_k file", r->file, ftype);
    return FALSE;
  }
  return TRUE;
}

static gboolean
ggml_skip_mel_filters (GgmlReader *r, GError **error)
{
  gint32 n_mel, n_fft;
  if (!ggml_read_i32 (r, &n_mel, "the mel filter count", error) ||
      !ggml_read_i32 (r, &n_fft, "the mel filter size", error))
    return FALSE;

  int n_mels = whisper_model_lookup (r->model, WHISPER_HPARAM_N_MELS);
  if (n_mel != n_mels || n_fft < 1 || n_fft > GGML_MAX_FFT_BINS) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: the mel filters are %d x %d; expected %d x (1..%d)",
                 r->file, n_mel, n_fft, n_mels, GGML_MAX_FFT_BINS);
    return FALSE;
  }
  return ggml_take (r, (gsize) n_mel * (gsize) n_fft * sizeof (float), error,
                    "the %d x %d mel filters", n_mel, n_fft) != NULL;
}

static gboolean
ggml_read_vocabulary (GgmlReader *r, GError **error)
{
  gint32 count;
  if (!ggml_read_i32 (r, &count, "the vocabulary size", error))
    return FALSE;

  int n_vocab = whisper_model_lookup (r->model, WHISPER_HPARAM_N_VOCAB);
  if (count < 0 || count > n_vocab) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: the vocabulary has %d tokens; expected 0 to n_vocab (%d)",
                 r->file, count, n_vocab);
    return FALSE;
  }

  r->file_tokens = g_ptr_array_new_full (count, (GDestroyNotify) g_bytes_unref);
  for (gint32 i = 0; i < count; i++) {
    gint32 len;
    const guint8 *text;
    g_autofree char *what = NULL;
    if (!ggml_read_i32 (r, &len, "the length of a token", error))
      return FALSE;
    what = g_strdup_printf ("token %d", i);
    text = ggml_take (r, (guint32) len, error, "%s", what);
    if (text == NULL)
      return FALSE;
    g_ptr_array_add (r->file_tokens, g_bytes_new (text, (guint32) len));
  }
  return TRUE;
}

/* All n_vocab ids get a token: the file's raw bytes, then the names of the
 * special tokens the file does not store (as CTranslate2 vocabularies have
 * them), and an empty string for anything else. */
static void
ggml_fill_tokens (GgmlReader *r)
{
  WhisperModel *m = r->model;
  int n_vocab = whisper_model_lookup (m, WHISPER_HPARAM_N_VOCAB);

  m->tokens = g_new0 (GBytes *, n_vocab);
  m->n_tokens = n_vocab;
  for (int id = 0; id < n_vocab; id++) {
    if ((guint) id < r->file_tokens->len) {
      m->tokens[id] = g_bytes_ref (g_ptr_array_index (r->file_tokens, id));
      continue;
    }
    char *name = whisper_vocab_special_name (n_vocab, id);
    if (name != NULL)
      m->tokens[id] = g_bytes_new_take (name, strlen (name));
    else
      m->tokens[id] = g_bytes_new (NULL, 0);
  }
}

/* ------------------------------------------------------------------ */
/* Expected tensors                                                    */

/* A model tensor [rows, cols] that records of the file will fill. */
static GgmlTarget *
ggml_target (GgmlReader *r, WhisperTensor *t, int rows, int cols, GError **error)
{
  /* Every element comes from at least one byte of the file, so a header
   * that asks for more than the file has bytes is corrupt. */
  const gsize n = (gsize) rows * (gsize) cols;
  if (n > r->weight_budget) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: the hyper-parameters need more weights than the %"
                 G_GSIZE_FORMAT " bytes of the file can hold", r->file, r->size);
    return NULL;
  }
  r->weight_budget -= n;
  t->rows = rows;
  t->cols = cols;
  GgmlTarget *target = g_new0 (GgmlTarget, 1);
  target->tensor = t;
  target->parts = g_ptr_array_new ();
  g_ptr_array_add (r->targets, target);
  return target;
}

/* The record `name` of shape (ne0, ne1, ne2) (0: no such dimension) fills
 * target from element `offset` on. */
static void G_GNUC_PRINTF (7, 8)
ggml_expect_at (GgmlReader *r, GgmlTarget *target, gsize offset, gint64 ne0, gint64 ne1,
                gint64 ne2, const char *name_format, ...)
{
  GgmlSlot *slot = g_new0 (GgmlSlot, 1);
  va_list args;
  va_start (args, name_format);
  slot->name = g_strdup_vprintf (name_format, args);
  va_end (args);
  slot->target = target;
  slot->offset = offset;
  slot->ne[0] = ne0;
  slot->ne[1] = ne1;
  slot->ne[2] = ne2;
  slot->n_dims = ne2 > 0 ? 3 : ne1 > 0 ? 2 : 1;
  g_hash_table_insert (r->slots, slot->name, slot);
  g_ptr_array_add (r->slot_order, slot);
  g_ptr_array_add (target->parts, slot);
}

/* A tensor filled by one record of shape (ne0, ne1, ne2). */
static gboolean
ggml_expect (GgmlReader *r, WhisperTensor *t, int rows, int cols, gint64 ne0, gint64 ne1,
             gint64 ne2, const char *name, GError **error)
{
  GgmlTarget *target = ggml_target (r, t, rows, cols, error);
  if (target == NULL)
    return FALSE;
  ggml_expect_at (r, target, 0, ne0, ne1, ne2, "%s", name);
  return TRUE;
}

static gboolean
ggml_expect_vector (GgmlReader *r, WhisperTensor *t, int n, const char *prefix,
                    const char *suffix, GError **error)
{
  g_autofree char *name = g_strconcat (prefix, suffix, NULL);
  return ggml_expect (r, t, 1, n, n, 0, 0, name, error);
}

static gboolean
ggml_expect_layer_norm (GgmlReader *r, WhisperLayerNormWeights *ln, int d, const char *prefix,
                        GError **error)
{
  return ggml_expect_vector (r, &ln->gamma, d, prefix, ".weight", error) &&
         ggml_expect_vector (r, &ln->beta, d, prefix, ".bias", error);
}

static gboolean
ggml_expect_linear (GgmlReader *r, WhisperLinearWeights *linear, int n_out, int n_in,
                    const char *prefix, GError **error)
{
  g_autofree char *weight = g_strconcat (prefix, ".weight", NULL);
  linear->n_out = n_out;
  linear->n_in = n_in;
  return ggml_expect (r, &linear->weight, n_out, n_in, n_in, n_out, 0, weight, error) &&
         ggml_expect_vector (r, &linear->bias, n_out, prefix, ".bias", error);
}

/* q, k, v of [d, d] each, fused into rows [q; k; v] of a [3d, d] linear
 * (or k, v into [2d, d]); the key has no bias, so its part stays zero. */
static gboolean
ggml_expect_fused (GgmlReader *r, WhisperLinearWeights *fused, int d, const char *prefix,
                   gboolean with_query, GError **error)
{
  const int n_parts = with_query ? 3 : 2;
  fused->n_out = n_parts * d;
  fused->n_in = d;
  GgmlTarget *weight = ggml_target (r, &fused->weight, n_parts * d, d, error);
  GgmlTarget *bias = weight ? ggml_target (r, &fused->bias, 1, n_parts * d, error) : NULL;
  if (bias == NULL)
    return FALSE;
  const gsize block = (gsize) d * d;
  int part = 0;
  if (with_query) {
    ggml_expect_at (r, weight, 0, d, d, 0, "%s.query.weight", prefix);
    ggml_expect_at (r, bias, 0, d, 0, 0, "%s.query.bias", prefix);
    part++;
  }
  ggml_expect_at (r, weight, part * block, d, d, 0, "%s.key.weight", prefix);
  part++;
  ggml_expect_at (r, weight, part * block, d, d, 0, "%s.value.weight", prefix);
  ggml_expect_at (r, bias, (gsize) part * d, d, 0, 0, "%s.value.bias", prefix);
  return TRUE;
}

/* The walk's reader (whisper-model-walk.h) of ggml records: it records
 * which records fill which tensor (read later, in the file's order). ggml
 * stores shapes innermost first (ne) and a conv1d bias as [d, 1]. */

static gboolean
ggml_walk_layer_norm (gpointer reader, const char *name, int d, WhisperLayerNormWeights *ln,
                      GError **error)
{
  return ggml_expect_layer_norm (reader, ln, d, name, error);
}

static gboolean
ggml_walk_linear (gpointer reader, const char *name, int n_out, int n_in,
                  WhisperLinearWeights *linear, GError **error)
{
  return ggml_expect_linear (reader, linear, n_out, n_in, name, error);
}

static gboolean
ggml_walk_fused (gpointer reader, const char *name, int n_parts, int d,
                 WhisperLinearWeights *linear, GError **error)
{
  return ggml_expect_fused (reader, linear, d, name, n_parts == 3, error);
}

static gboolean
ggml_walk_tensor (gpointer reader, WhisperWeightKind kind, const char *name, guint rank,
                  const gint64 *dims, int rows, int cols, WhisperTensor *t, GError **error)
{
  gint64 ne[3] = { 0, 0, 0 };
  for (guint i = 0; i < rank; i++)
    ne[i] = dims[rank - 1 - i];
  if (kind == WHISPER_WEIGHT_CONV_BIAS) {
    ne[0] = 1;
    ne[1] = dims[0];
  }
  return ggml_expect (reader, t, rows, cols, ne[0], ne[1], ne[2], name, error);
}

static const WhisperWeightReader ggml_weights = {
  .format = WHISPER_MODEL_FORMAT_GGML,
  .layer_infix = ".blocks.",
  .part = NULL,
  .layer_norm = ggml_walk_layer_norm,
  .linear = ggml_walk_linear,
  .fused = ggml_walk_fused,
  .tensor = ggml_walk_tensor,
};

/* ------------------------------------------------------------------ */
/* Tensor records                                                      */

static char *
format_ne (int n_dims, const gint64 *ne)
{
  GString *s = g_string_new ("[");
  for (int i = 0; i < n_dims; i++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i ? ", " : "", ne[i]);
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

static gboolean
ggml_check_type (GgmlReader *r, const char *name, gint32 ttype, GError **error)
{
  WhisperDType block;
  if (ttype == GGML_TYPE_F32 || ttype == GGML_TYPE_F16 || whisper_qblock_from_ggml (ttype, &block))
    return TRUE;

  const char *type_name = ggml_type_name (ttype);
  if (type_name != NULL && ttype != 30)
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                 "%s: tensor '%s': quantized ggml type %s is not supported; use "
                 "f16, f32, q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q5_k or q6_k", r->file, name,
                 type_name);
  else if (type_name != NULL)
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                 "%s: tensor '%s': ggml type %s is not supported; use an f16 or "
                 "f32 file", r->file, name, type_name);
  else
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: tensor '%s' has unknown ggml type %d", r->file, name, ttype);
  return FALSE;
}

static gboolean
ggml_check_shape (GgmlReader *r, const GgmlSlot *slot, int n_dims,
                  const gint64 *ne, GError **error)
{
  gboolean same = n_dims == slot->n_dims;
  for (int i = 0; same && i < n_dims; i++)
    same = ne[i] == slot->ne[i];
  if (same)
    return TRUE;

  g_autofree char *have = format_ne (n_dims, ne);
  g_autofree char *want = format_ne (slot->n_dims, slot->ne);
  g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
               "%s: tensor '%s' has ne %s, expected %s", r->file, slot->name,
               have, want);
  return FALSE;
}

static WhisperDType
ggml_whisper_dtype (gint32 ttype)
{
  WhisperDType block;
  if (whisper_qblock_from_ggml (ttype, &block))
    return block;
  return ttype == GGML_TYPE_F32 ? WHISPER_DTYPE_F32 : WHISPER_DTYPE_F16;
}

/* Bytes of n elements of a record of type ttype (n: whole blocks). */
static gsize
ggml_bytes (gint32 ttype, gsize n)
{
  const WhisperDType type = ggml_whisper_dtype (ttype);
  if (whisper_dtype_is_qblock (type))
    return n / (gsize) whisper_qblock_values (type) * whisper_qblock_bytes (type);
  return n * whisper_dtype_size (type);
}

static void
ggml_convert (const guint8 *data, gint32 ttype, gsize n, float *out)
{
  const WhisperDType type = ggml_whisper_dtype (ttype);
  if (whisper_dtype_is_qblock (type)) {
    whisper_qblock_dequantize (type, data, n / (gsize) whisper_qblock_values (type), out);
  } else if (ttype == GGML_TYPE_F32) {
    for (gsize i = 0; i < n; i++) {
      guint32 bits = whisper_read_le32 (data + 4 * i);
      memcpy (&out[i], &bits, sizeof bits);
    }
  } else {
#if G_BYTE_ORDER == G_LITTLE_ENDIAN
    whisper_half_to_float_n (out, data, n);
#else
    for (gsize i = 0; i < n; i++)
      out[i] = whisper_half_to_float ((guint16) (data[2 * i] | data[2 * i + 1] << 8));
#endif
  }
}

/* A block type's rows are whole blocks: ne[0] a multiple of 32 (256 for
 * the k-quants). whisper.cpp's quantize (examples/common-ggml.cpp) writes
 * k-quant tensors with other row lengths (tiny's rows of 384) as if the
 * tensor were one row, super-blocks running across rows; its own loader
 * refuses those files too
 * (https://github.com/ggml-org/whisper.cpp/issues/2906). */
static gboolean
ggml_check_blocks_shape (GgmlReader *r, const char *name, gint32 ttype, gint64 ne0,
                         GError **error)
{
  const WhisperDType type = ggml_whisper_dtype (ttype);
  if (!whisper_dtype_is_qblock (type) || ne0 % whisper_qblock_values (type) == 0)
    return TRUE;
  g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
               "%s: tensor '%s' is %s with rows of %" G_GINT64_FORMAT " values, not a "
               "multiple of the %d values of a %s", r->file, name,
               whisper_dtype_name (type), ne0, whisper_qblock_values (type),
               whisper_qblock_is_k (type) ? "super-block (k-quants need rows of whole "
                                            "super-blocks; tiny's 384 are not)"
                                          : "block");
  return FALSE;
}

/* Every block's scale (and minimum) is a finite float16. */
static gboolean
ggml_check_blocks (GgmlReader *r, const char *name, gint32 ttype, const guint8 *data,
                   gsize n_elements, GError **error)
{
  const WhisperDType type = ggml_whisper_dtype (ttype);
  gsize bad;
  if (!whisper_dtype_is_qblock (type) ||
      whisper_qblock_check (type, data, n_elements / (gsize) whisper_qblock_values (type), &bad))
    return TRUE;
  g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
               "%s: tensor '%s' (%s): block %" G_GSIZE_FORMAT " (file offset %" G_GSIZE_FORMAT
               ") has a scale %sthat is not a finite float16: a corrupt block", r->file, name,
               whisper_dtype_name (type), bad,
               (gsize) (data - r->bytes) + bad * whisper_qblock_bytes (type),
               type == WHISPER_DTYPE_Q6_K ? "(d) "
               : whisper_qblock_is_k (type) ? "(d or dmin) " : "");
  return FALSE;
}

static gboolean
ggml_read_tensor (GgmlReader *r, GError **error)
{
  gsize record_offset = r->pos;
  gint32 n_dims, name_len, ttype;
  if (!ggml_read_i32 (r, &n_dims, "a tensor header", error) ||
      !ggml_read_i32 (r, &name_len, "a tensor header", error) ||
      !ggml_read_i32 (r, &ttype, "a tensor header", error))
    return FALSE;
  if (n_dims < 1 || n_dims > GGML_MAX_DIMS || name_len < 1 || name_len > GGML_MAX_NAME) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: the tensor record at offset %" G_GSIZE_FORMAT " has n_dims "
                 "%d and a name of %d bytes (expected 1..%d and 1..%d)",
                 r->file, record_offset, n_dims, name_len, GGML_MAX_DIMS,
                 GGML_MAX_NAME);
    return FALSE;
  }

  gint64 ne[GGML_MAX_DIMS] = { 0 };
  guint64 n_elements = 1;
  for (int i = 0; i < n_dims; i++) {
    gint32 value;
    if (!ggml_read_i32 (r, &value, "a tensor shape", error))
      return FALSE;
    ne[i] = value;
    if (value < 1) {
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                   "%s: the tensor record at offset %" G_GSIZE_FORMAT " has an "
                   "invalid dimension %d", r->file, record_offset, value);
      return FALSE;
    }
    if (n_elements > G_MAXUINT32 / (guint64) value) {
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                   "%s: the tensor record at offset %" G_GSIZE_FORMAT " has "
                   "dimensions whose product exceeds 2^32", r->file, record_offset);
      return FALSE;
    }
    n_elements *= (guint64) value;
  }

  const char *raw_name = ggml_take (r, name_len, error, "a tensor name");
  if (raw_name == NULL)
    return FALSE;
  g_autofree char *name = g_strndup (raw_name, name_len);
  g_autofree char *printable = g_strescape (name, NULL);

  if (!ggml_check_type (r, printable, ttype, error))
    return FALSE;

  GgmlSlot *slot = strlen (name) == (gsize) name_len
                     ? g_hash_table_lookup (r->slots, name) : NULL;
  if (slot == NULL) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: unknown tensor '%s' at offset %" G_GSIZE_FORMAT, r->file,
                 printable, record_offset);
    return FALSE;
  }
  if (slot->loaded) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: tensor '%s' appears twice (again at offset %" G_GSIZE_FORMAT ")",
                 r->file, printable, record_offset);
    return FALSE;
  }
  if (!ggml_check_shape (r, slot, n_dims, ne, error))
    return FALSE;

  if (!ggml_check_blocks_shape (r, printable, ttype, ne[0], error))
    return FALSE;
  const guint8 *data = ggml_take (r, ggml_bytes (ttype, n_elements), error,
                                  "tensor '%s'", printable);
  if (data == NULL || !ggml_check_blocks (r, printable, ttype, data, n_elements, error))
    return FALSE;
  slot->data = data;
  slot->ttype = ttype;
  slot->loaded = TRUE;
  return TRUE;
}

static gboolean
ggml_read_tensors (GgmlReader *r, GError **error)
{
  while (r->pos < r->size)
    if (!ggml_read_tensor (r, error))
      return FALSE;

  for (guint i = 0; i < r->slot_order->len; i++) {
    const GgmlSlot *slot = g_ptr_array_index (r->slot_order, i);
    if (!slot->loaded) {
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                   "%s: missing tensor '%s'", r->file, slot->name);
      return FALSE;
    }
  }
  return TRUE;
}

/* Elements of a record (its shape was checked against the slot's). */
static gsize
ggml_slot_elements (const GgmlSlot *slot)
{
  return (gsize) slot->ne[0] * MAX (slot->ne[1], 1) * MAX (slot->ne[2], 1);
}

/* Points each model tensor at its record in the mapped file when one record
 * fills it (on a little-endian host: the file's byte order). A fused tensor
 * gets a buffer of its records' common type (float32 if they differ), the
 * key's missing bias left zero; a big-endian host gets float32 copies. */
static gboolean
ggml_assemble (GgmlReader *r, GError **error)
{
  for (guint i = 0; i < r->targets->len; i++) {
    const GgmlTarget *target = g_ptr_array_index (r->targets, i);
    WhisperTensor *t = target->tensor;
    const gsize n = whisper_tensor_n_elements (t);
    const GgmlSlot *first = g_ptr_array_index (target->parts, 0);

    gboolean same_type = TRUE;
    for (guint p = 1; p < target->parts->len; p++)
      same_type &= ((GgmlSlot *) g_ptr_array_index (target->parts, p))->ttype == first->ttype;
    const WhisperDType type = same_type && G_BYTE_ORDER == G_LITTLE_ENDIAN
                                  ? ggml_whisper_dtype (first->ttype) : WHISPER_DTYPE_F32;
    t->type = type;
    t->scales = NULL;
    if (target->parts->len == 1 && first->offset == 0 && ggml_slot_elements (first) == n &&
        type == ggml_whisper_dtype (first->ttype)) {
      t->data = first->data; /* the whole tensor is this one record */
      continue;
    }

    /* the parts fill whole rows, so whole blocks, in a block type */
    const gint32 ttype = type == ggml_whisper_dtype (first->ttype) ? first->ttype : GGML_TYPE_F32;
    guint8 *buffer = whisper_model_alloc_bytes (r->model, ggml_bytes (ttype, n), error);
    if (buffer == NULL)
      return FALSE;
    /* +0 in float32 and float16 alike, and d = 0 blocks (values 0 + 0) */
    memset (buffer, 0, ggml_bytes (ttype, n));
    for (guint p = 0; p < target->parts->len; p++) {
      const GgmlSlot *slot = g_ptr_array_index (target->parts, p);
      const gsize count = ggml_slot_elements (slot);
      g_assert (slot->offset + count <= n);
      if (ggml_whisper_dtype (slot->ttype) == type && G_BYTE_ORDER == G_LITTLE_ENDIAN)
        memcpy (buffer + ggml_bytes (ttype, slot->offset), slot->data, ggml_bytes (ttype, count));
      else
        ggml_convert (slot->data, slot->ttype, count, (float *) buffer + slot->offset);
    }
    t->data = buffer;
  }
  return TRUE;
}

/* A file that ends right after its vocabulary has no weights at all (as
 * whisper.cpp's header-only test files, models/for-tests-ggml-*.bin): say
 * so, rather than name the first of the hundreds of missing tensors. */
static gboolean
ggml_check_has_tensors (GgmlReader *r, GError **error)
{
  if (r->pos < r->size)
    return TRUE;
  g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
               "%s: the file holds no tensors (it ends after the vocabulary, at offset %"
               G_GSIZE_FORMAT "): a header-only file, not a model", r->file, r->pos);
  return FALSE;
}

/* ------------------------------------------------------------------ */

WhisperModel *
whisper_model_load_ggml (const char *file, GError **error)
{
  g_return_val_if_fail (file != NULL, NULL);

  g_autoptr (GgmlReader) r = g_new0 (GgmlReader, 1);
  r->file = file;
  g_autoptr (GError) io_error = NULL;
  r->mapped = g_mapped_file_new (file, FALSE, &io_error);
  if (r->mapped == NULL) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_NOT_FOUND,
                 "%s: cannot open the model: %s", file, io_error->message);
    return NULL;
  }
  r->bytes = (const guint8 *) g_mapped_file_get_contents (r->mapped);
  r->size = g_mapped_file_get_length (r->mapped);
  r->weight_budget = 2 * r->size;
  r->slots = g_hash_table_new (g_str_hash, g_str_equal);
  r->slot_order = g_ptr_array_new_with_free_func ((GDestroyNotify) ggml_slot_free);
  r->targets = g_ptr_array_new_with_free_func ((GDestroyNotify) ggml_target_free);

  g_autoptr (WhisperModel) model = whisper_model_new_empty (file, WHISPER_MODEL_FORMAT_GGML);
  r->model = model;

  if (!ggml_read_hparams (r, error) || !ggml_skip_mel_filters (r, error) ||
      !ggml_read_vocabulary (r, error) || !ggml_check_has_tensors (r, error) ||
      !whisper_model_walk_weights (model, &ggml_weights, r, error) ||
      !ggml_read_tensors (r, error) ||
      !ggml_assemble (r, error))
    return NULL;

  ggml_fill_tokens (r);
  if (!whisper_model_validate (model, error))
    return NULL;
  /* the tensors point into the file */
  whisper_model_keep_mapping (model, r->mapped);
  return g_steal_pointer (&model);
}
