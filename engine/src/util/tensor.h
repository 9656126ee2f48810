/* tensor.h: a weight tensor as the model file stores it.
 *
 * The loaders keep every tensor in its stored type (float32, float16,
 * bfloat16, int8 or int16 with CTranslate2's scales), pointing into the
 * mapped model file where they can; backends receive it as it is and
 * convert or pack it once into their own layout. No float32 copy of a
 * float16 model exists at any point.
 *
 * Quantized types follow CTranslate2's convention
 * (https://github.com/OpenNMT/CTranslate2/blob/master/docs/quantization.md):
 * stored = round(value * scale), so value = stored / scale, with one scale
 * per row for int8 and one for the whole tensor for int16. whisper.cpp's
 * block types (q4_0 ... q8_0 and the k-quants q4_K ... q6_K, util/qblock.h)
 * carry their scales inside the data, a block of 32 (256 for the k-quants)
 * values at a time along each row. */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef enum {
  WHISPER_DTYPE_F32,
  WHISPER_DTYPE_F16,
  WHISPER_DTYPE_BF16,
  WHISPER_DTYPE_I8,   /* one scale per row */
  WHISPER_DTYPE_I16,  /* one scale for the whole tensor */
  /* ggml blocks (qblock.h): cols a multiple of 32, no scales array */
  WHISPER_DTYPE_Q4_0,
  WHISPER_DTYPE_Q4_1,
  WHISPER_DTYPE_Q5_0,
  WHISPER_DTYPE_Q5_1,
  WHISPER_DTYPE_Q8_0,
  /* ggml's k-quants (qblock.h): cols a multiple of 256 */
  WHISPER_DTYPE_Q4_K,
  WHISPER_DTYPE_Q5_K,
  WHISPER_DTYPE_Q6_K,
} WhisperDType;

/* rows x cols elements, row-major (a vector has rows == 1). `data` is in the
 * host's byte order, any alignment; it is owned by the model (the mapped
 * file or a loader's buffer) and lives as long as the model. */
typedef struct {
  const void *data;
  WhisperDType type;
  const float *scales;  /* I8: rows values; I16: 1 value; NULL otherwise */
  int rows;
  int cols;
} WhisperTensor;

/* Bytes of one element of `type`; 0 for the block types, whose elements
 * share their block's bytes (use whisper_dtype_row_bytes). */
gsize whisper_dtype_size (WhisperDType type);
/* Bytes of a row of `cols` elements of `type` (any type). */
gsize whisper_dtype_row_bytes (WhisperDType type, int cols);
/* "float32", "float16", ... */
const char *whisper_dtype_name (WhisperDType type);

static inline gsize
whisper_tensor_n_elements (const WhisperTensor *t)
{
  return (gsize) t->rows * (gsize) t->cols;
}

static inline gsize
whisper_tensor_bytes (const WhisperTensor *t)
{
  return (gsize) t->rows * whisper_dtype_row_bytes (t->type, t->cols);
}

static inline gboolean
whisper_tensor_is_set (const WhisperTensor *t)
{
  return t->data != NULL;
}

/* dst[0 .. (r1 - r0) * cols) = rows [r0, r1) of t as float32. */
void whisper_tensor_rows_to_f32 (const WhisperTensor *t, int r0, int r1, float *dst);

/* The whole tensor as a new float32 array (g_free it); for the small
 * vectors (biases, norms, positional tables) a backend keeps in float32. */
float *whisper_tensor_to_f32 (const WhisperTensor *t);

G_END_DECLS
