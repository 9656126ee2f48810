/* whisper-model-ggml.c: loads a whisper.cpp ggml model file (the legacy
 * "lmgg" container, not GGUF), f32 or f16.
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
#include "half.h"
#include "whisper-vocab.h"

#include <stdarg.h>
#include <string.h>

#define GGML_FILE_MAGIC 0x67676d6cu
#define GGML_MAX_DIMS 4
#define GGML_MAX_NAME 256
#define GGML_MAX_FFT_BINS 4096
#define GGML_QNT_VERSION_FACTOR 1000

enum { GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1 };

typedef struct {
  char *name;
  int n_dims;
  gint64 ne[GGML_MAX_DIMS]; /* ggml order: ne[0] is the innermost dimension */
  float *dest;              /* where the converted floats go */
  gboolean loaded;
} GgmlSlot;

typedef struct {
  const char *file;
  GMappedFile *mapped;
  const guint8 *bytes;
  gsize size;
  gsize pos;

  gsize weight_budget; /* floats still allowed to be allocated */
  GHashTable *slots;   /* name -> GgmlSlot *, owns the slots */
  GPtrArray *slot_order;

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
ggml_reader_free (GgmlReader *r)
{
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
  gint32 base_ftype = ftype % GGML_QNT_VERSION_FACTOR;
  if (base_ftype != GGML_TYPE_F32 && base_ftype != GGML_TYPE_F16) {
    const char *name = ggml_ftype_name (base_ftype);
    if (name != NULL)
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                   "%s: quantized ggml type %s is not supported yet; use an f16 "
                   "or f32 file", r->file, name);
    else
      g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                   "%s: ggml ftype %d is not supported; use an f16 or f32 file",
                   r->file, ftype);
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

static float *
ggml_alloc (GgmlReader *r, gsize n, GError **error)
{
  /* Every weight comes from at least one byte of the file, so a header
   * that asks for more floats than the file has bytes is corrupt. */
  if (n > r->weight_budget) {
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_FORMAT,
                 "%s: the hyper-parameters need more weights than the %"
                 G_GSIZE_FORMAT " bytes of the file can hold", r->file, r->size);
    return NULL;
  }
  r->weight_budget -= n;
  float *data = whisper_model_alloc_floats (r->model, n, error);
  if (data != NULL)
    memset (data, 0, n * sizeof (float));
  return data;
}

static void G_GNUC_PRINTF (5, 6)
ggml_expect (GgmlReader *r, float *dest, gint64 ne0, gint64 ne1,
             const char *name_format, ...)
{
  GgmlSlot *slot = g_new0 (GgmlSlot, 1);
  va_list args;
  va_start (args, name_format);
  slot->name = g_strdup_vprintf (name_format, args);
  va_end (args);
  slot->dest = dest;
  slot->ne[0] = ne0;
  slot->ne[1] = ne1;
  slot->n_dims = ne1 > 0 ? 2 : 1;
  g_hash_table_insert (r->slots, slot->name, slot);
  g_ptr_array_add (r->slot_order, slot);
}

static void
ggml_expect_3d (GgmlReader *r, float *dest, gint64 ne0, gint64 ne1, gint64 ne2,
                const char *name)
{
  ggml_expect (r, dest, ne0, ne1, "%s", name);
  GgmlSlot *slot = g_ptr_array_index (r->slot_order, r->slot_order->len - 1);
  slot->ne[2] = ne2;
  slot->n_dims = 3;
}

static gboolean
ggml_alloc_linear (GgmlReader *r, WhisperLinearWeights *linear, int n_out,
                   int n_in, GError **error)
{
  linear->n_out = n_out;
  linear->n_in = n_in;
  linear->weight = ggml_alloc (r, (gsize) n_out * n_in, error);
  if (linear->weight == NULL)
    return FALSE;
  linear->bias = ggml_alloc (r, n_out, error); /* zeros: the key has no bias */
  return linear->bias != NULL;
}

static gboolean
ggml_alloc_layer_norm (GgmlReader *r, WhisperLayerNormWeights *ln, int d,
                       GError **error)
{
  return (ln->gamma = ggml_alloc (r, d, error)) != NULL &&
         (ln->beta = ggml_alloc (r, d, error)) != NULL;
}

static void
ggml_expect_layer_norm (GgmlReader *r, WhisperLayerNormWeights *ln, int d,
                        const char *prefix)
{
  ggml_expect (r, ln->gamma, d, 0, "%s.weight", prefix);
  ggml_expect (r, ln->beta, d, 0, "%s.bias", prefix);
}

static void
ggml_expect_linear (GgmlReader *r, WhisperLinearWeights *linear, const char *prefix)
{
  ggml_expect (r, linear->weight, linear->n_in, linear->n_out, "%s.weight", prefix);
  ggml_expect (r, linear->bias, linear->n_out, 0, "%s.bias", prefix);
}

/* q, k, v of [d, d] each, fused into rows [q; k; v] of a [3d, d] linear
 * (or k, v into [2d, d]); the key has no bias, so its part stays zero. */
static void
ggml_expect_fused (GgmlReader *r, WhisperLinearWeights *fused, int d,
                   const char *prefix, gboolean with_query)
{
  gsize block = (gsize) d * d;
  int part = 0;
  if (with_query) {
    ggml_expect (r, fused->weight, d, d, "%s.query.weight", prefix);
    ggml_expect (r, fused->bias, d, 0, "%s.query.bias", prefix);
    part++;
  }
  ggml_expect (r, fused->weight + part * block, d, d, "%s.key.weight", prefix);
  part++;
  ggml_expect (r, fused->weight + part * block, d, d, "%s.value.weight", prefix);
  ggml_expect (r, fused->bias + (gsize) part * d, d, 0, "%s.value.bias", prefix);
}

static gboolean
ggml_layer (GgmlReader *r, const char *part, int index, int d, gboolean is_decoder,
            WhisperLayerWeights *l, GError **error)
{
  if (!ggml_alloc_layer_norm (r, &l->attn_ln, d, error) ||
      !ggml_alloc_linear (r, &l->attn_qkv, 3 * d, d, error) ||
      !ggml_alloc_linear (r, &l->attn_out, d, d, error) ||
      !ggml_alloc_layer_norm (r, &l->mlp_ln, d, error) ||
      !ggml_alloc_linear (r, &l->mlp_fc1, 4 * d, d, error) ||
      !ggml_alloc_linear (r, &l->mlp_fc2, d, 4 * d, error))
    return FALSE;
  if (is_decoder &&
      (!ggml_alloc_layer_norm (r, &l->cross_ln, d, error) ||
       !ggml_alloc_linear (r, &l->cross_q, d, d, error) ||
       !ggml_alloc_linear (r, &l->cross_kv, 2 * d, d, error) ||
       !ggml_alloc_linear (r, &l->cross_out, d, d, error)))
    return FALSE;

  g_autofree char *p = g_strdup_printf ("%s.blocks.%d", part, index);
  g_autofree char *attn_ln = g_strconcat (p, ".attn_ln", NULL);
  g_autofree char *attn = g_strconcat (p, ".attn", NULL);
  g_autofree char *attn_out = g_strconcat (p, ".attn.out", NULL);
  g_autofree char *mlp_ln = g_strconcat (p, ".mlp_ln", NULL);
  g_autofree char *mlp_0 = g_strconcat (p, ".mlp.0", NULL);
  g_autofree char *mlp_2 = g_strconcat (p, ".mlp.2", NULL);
  ggml_expect_layer_norm (r, &l->attn_ln, d, attn_ln);
  ggml_expect_fused (r, &l->attn_qkv, d, attn, TRUE);
  ggml_expect_linear (r, &l->attn_out, attn_out);
  ggml_expect_layer_norm (r, &l->mlp_ln, d, mlp_ln);
  ggml_expect_linear (r, &l->mlp_fc1, mlp_0);
  ggml_expect_linear (r, &l->mlp_fc2, mlp_2);
  if (!is_decoder)
    return TRUE;

  g_autofree char *cross_ln = g_strconcat (p, ".cross_attn_ln", NULL);
  g_autofree char *cross = g_strconcat (p, ".cross_attn", NULL);
  g_autofree char *cross_q = g_strconcat (p, ".cross_attn.query", NULL);
  g_autofree char *cross_out = g_strconcat (p, ".cross_attn.out", NULL);
  ggml_expect_layer_norm (r, &l->cross_ln, d, cross_ln);
  ggml_expect_linear (r, &l->cross_q, cross_q);
  ggml_expect_fused (r, &l->cross_kv, d, cross, FALSE);
  ggml_expect_linear (r, &l->cross_out, cross_out);
  return TRUE;
}

static WhisperLayerWeights *
ggml_new_layers (GgmlReader *r, int n)
{
  WhisperLayerWeights *layers = g_new0 (WhisperLayerWeights, n);
  g_ptr_array_add (r->model->allocations, layers);
  return layers;
}

static gboolean
ggml_prepare_encoder (GgmlReader *r, GError **error)
{
  WhisperModel *m = r->model;
  WhisperEncoderWeights *enc = &m->encoder;
  int d = whisper_model_lookup (m, WHISPER_HPARAM_N_AUDIO_STATE);
  int n_mels = whisper_model_lookup (m, WHISPER_HPARAM_N_MELS);
  int n_ctx = whisper_model_lookup (m, WHISPER_HPARAM_N_AUDIO_CTX);
  int n_layers = whisper_model_lookup (m, WHISPER_HPARAM_N_AUDIO_LAYER);

  if (!(enc->conv1_weight = ggml_alloc (r, (gsize) d * n_mels * 3, error)) ||
      !(enc->conv1_bias = ggml_alloc (r, d, error)) ||
      !(enc->conv2_weight = ggml_alloc (r, (gsize) d * d * 3, error)) ||
      !(enc->conv2_bias = ggml_alloc (r, d, error)) ||
      !(enc->positional = ggml_alloc (r, (gsize) n_ctx * d, error)) ||
      !ggml_alloc_layer_norm (r, &enc->ln_post, d, error))
    return FALSE;

  ggml_expect_3d (r, enc->conv1_weight, 3, n_mels, d, "encoder.conv1.weight");
  ggml_expect (r, enc->conv1_bias, 1, d, "encoder.conv1.bias");
  ggml_expect_3d (r, enc->conv2_weight, 3, d, d, "encoder.conv2.weight");
  ggml_expect (r, enc->conv2_bias, 1, d, "encoder.conv2.bias");
  ggml_expect (r, enc->positional, d, n_ctx, "encoder.positional_embedding");
  ggml_expect_layer_norm (r, &enc->ln_post, d, "encoder.ln_post");

  enc->layers = ggml_new_layers (r, n_layers);
  for (int i = 0; i < n_layers; i++)
    if (!ggml_layer (r, "encoder", i, d, FALSE, &enc->layers[i], error))
      return FALSE;
  return TRUE;
}

static gboolean
ggml_prepare_decoder (GgmlReader *r, GError **error)
{
  WhisperModel *m = r->model;
  WhisperDecoderWeights *dec = &m->decoder;
  int d = whisper_model_lookup (m, WHISPER_HPARAM_N_TEXT_STATE);
  int n_vocab = whisper_model_lookup (m, WHISPER_HPARAM_N_VOCAB);
  int n_ctx = whisper_model_lookup (m, WHISPER_HPARAM_N_TEXT_CTX);
  int n_layers = whisper_model_lookup (m, WHISPER_HPARAM_N_TEXT_LAYER);

  if (!(dec->token_embedding = ggml_alloc (r, (gsize) n_vocab * d, error)) ||
      !(dec->positional = ggml_alloc (r, (gsize) n_ctx * d, error)) ||
      !ggml_alloc_layer_norm (r, &dec->ln, d, error))
    return FALSE;

  ggml_expect (r, dec->token_embedding, d, n_vocab, "decoder.token_embedding.weight");
  ggml_expect (r, dec->positional, d, n_ctx, "decoder.positional_embedding");
  ggml_expect_layer_norm (r, &dec->ln, d, "decoder.ln");

  dec->layers = ggml_new_layers (r, n_layers);
  for (int i = 0; i < n_layers; i++)
    if (!ggml_layer (r, "decoder", i, d, TRUE, &dec->layers[i], error))
      return FALSE;
  return TRUE;
}

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
  if (ttype == GGML_TYPE_F32 || ttype == GGML_TYPE_F16)
    return TRUE;

  const char *type_name = ggml_type_name (ttype);
  if (type_name != NULL && ttype != 30)
    g_set_error (error, WHISPER_MODEL_ERROR, WHISPER_MODEL_ERROR_UNSUPPORTED,
                 "%s: tensor '%s': quantized ggml type %s is not supported yet; "
                 "use an f16 or f32 file", r->file, name, type_name);
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

static void
ggml_convert (const guint8 *data, gint32 ttype, gsize n, float *out)
{
  if (ttype == GGML_TYPE_F32) {
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

  gsize element_size = ttype == GGML_TYPE_F32 ? 4 : 2;
  const guint8 *data = ggml_take (r, n_elements * element_size, error,
                                  "tensor '%s'", printable);
  if (data == NULL)
    return FALSE;
  ggml_convert (data, ttype, n_elements, slot->dest);
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
  r->weight_budget = r->size;
  r->slots = g_hash_table_new (g_str_hash, g_str_equal);
  r->slot_order = g_ptr_array_new_with_free_func ((GDestroyNotify) ggml_slot_free);

  g_autoptr (WhisperModel) model = whisper_model_new_empty (file, WHISPER_MODEL_FORMAT_GGML);
  r->model = model;

  if (!ggml_read_hparams (r, error) || !ggml_skip_mel_filters (r, error) ||
      !ggml_read_vocabulary (r, error) || !ggml_prepare_encoder (r, error) ||
      !ggml_prepare_decoder (r, error) || !ggml_read_tensors (r, error))
    return NULL;

  ggml_fill_tokens (r);
  if (!whisper_model_validate (model, error))
    return NULL;
  return g_steal_pointer (&model);
}
