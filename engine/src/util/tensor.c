/* tensor.c: stored tensors to float32 (tensor.h). */
#include "tensor.h"

#include <string.h>

#include "half.h"
#include "qblock.h"

gsize
whisper_dtype_size (WhisperDType type)
{
  switch (type) {
  case WHISPER_DTYPE_F32: return 4;
  case WHISPER_DTYPE_F16:
  case WHISPER_DTYPE_BF16:
  case WHISPER_DTYPE_I16: return 2;
  case WHISPER_DTYPE_I8: return 1;
  case WHISPER_DTYPE_Q4_0:
  case WHISPER_DTYPE_Q4_1:
  case WHISPER_DTYPE_Q5_0:
  case WHISPER_DTYPE_Q5_1:
  case WHISPER_DTYPE_Q8_0:
  case WHISPER_DTYPE_Q4_K:
  case WHISPER_DTYPE_Q5_K:
  case WHISPER_DTYPE_Q6_K: return 0;
  }
  g_return_val_if_reached (0);
}

gsize
whisper_dtype_row_bytes (WhisperDType type, int cols)
{
  if (whisper_dtype_is_qblock (type))
    return (gsize) cols / whisper_qblock_values (type) * whisper_qblock_bytes (type);
  return (gsize) cols * whisper_dtype_size (type);
}

const char *
whisper_dtype_name (WhisperDType type)
{
  switch (type) {
  case WHISPER_DTYPE_F32: return "float32";
  case WHISPER_DTYPE_F16: return "float16";
  case WHISPER_DTYPE_BF16: return "bfloat16";
  case WHISPER_DTYPE_I8: return "int8";
  case WHISPER_DTYPE_I16: return "int16";
  case WHISPER_DTYPE_Q4_0: return "q4_0";
  case WHISPER_DTYPE_Q4_1: return "q4_1";
  case WHISPER_DTYPE_Q5_0: return "q5_0";
  case WHISPER_DTYPE_Q5_1: return "q5_1";
  case WHISPER_DTYPE_Q8_0: return "q8_0";
  case WHISPER_DTYPE_Q4_K: return "q4_K";
  case WHISPER_DTYPE_Q5_K: return "q5_K";
  case WHISPER_DTYPE_Q6_K: return "q6_K";
  }
  g_return_val_if_reached ("unknown");
}

static float
bf16_to_float (guint16 h)
{
  guint32 bits = (guint32) h << 16;
  float f;
  memcpy (&f, &bits, sizeof f);
  return f;
}

void
whisper_tensor_rows_to_f32 (const WhisperTensor *t, int r0, int r1, float *dst)
{
  g_return_if_fail (r0 >= 0 && r0 <= r1 && r1 <= t->rows);
  const gsize cols = (gsize) t->cols;
  const gsize n = (gsize) (r1 - r0) * cols;
  const guint8 *base = (const guint8 *) t->data + (gsize) r0 * whisper_dtype_row_bytes (t->type,
                                                                                      t->cols);

  switch (t->type) {
  case WHISPER_DTYPE_F32:
    memcpy (dst, base, n * sizeof (float));
    return;
  case WHISPER_DTYPE_F16:
    whisper_half_to_float_n (dst, base, n);
    return;
  case WHISPER_DTYPE_BF16:
    for (gsize i = 0; i < n; i++) {
      guint16 h;
      memcpy (&h, base + 2 * i, 2);
      dst[i] = bf16_to_float (h);
    }
    return;
  case WHISPER_DTYPE_I8:
    for (int r = r0; r < r1; r++) {
      /* value = stored / scale, as CTranslate2 dequantizes */
      const float inverse = 1.0f / t->scales[r];
      const gint8 *row = (const gint8 *) base + (gsize) (r - r0) * cols;
      float *out = dst + (gsize) (r - r0) * cols;
      for (gsize c = 0; c < cols; c++)
        out[c] = (float) row[c] * inverse;
    }
    return;
  case WHISPER_DTYPE_I16: {
    const float inverse = 1.0f / t->scales[0];
    for (gsize i = 0; i < n; i++) {
      gint16 v;
      memcpy (&v, base + 2 * i, 2);
      dst[i] = (float) v * inverse;
    }
    return;
  }
  case WHISPER_DTYPE_Q4_0:
  case WHISPER_DTYPE_Q4_1:
  case WHISPER_DTYPE_Q5_0:
  case WHISPER_DTYPE_Q5_1:
  case WHISPER_DTYPE_Q8_0:
  case WHISPER_DTYPE_Q4_K:
  case WHISPER_DTYPE_Q5_K:
  case WHISPER_DTYPE_Q6_K:
    whisper_qblock_dequantize (t->type, base, n / whisper_qblock_values (t->type), dst);
    return;
  }
  g_return_if_reached ();
}

float *
whisper_tensor_to_f32 (const WhisperTensor *t)
{
  float *dst = g_new (float, MAX (whisper_tensor_n_elements (t), 1));
  whisper_tensor_rows_to_f32 (t, 0, t->rows, dst);
  return dst;
}
