/* qblock.c: ggml's quantized blocks decoded (qblock.h). */
#include "qblock.h"

#include <string.h>

#include "half.h"

/* Where the parts of a block lie, in bytes from its start. */
typedef struct {
  gsize bytes;
  int min;    /* offset of the float16 minimum, -1: none */
  int qh;     /* offset of the 32 fifth bits, -1: none */
  int qs;     /* offset of the quants */
  int offset; /* subtracted from the code */
} QBlockLayout;

static const QBlockLayout *
layout_of (WhisperDType type)
{
  static const QBlockLayout q4_0 = { 18, -1, -1, 2, 8 };
  static const QBlockLayout q4_1 = { 20, 2, -1, 4, 0 };
  static const QBlockLayout q5_0 = { 22, -1, 2, 6, 16 };
  static const QBlockLayout q5_1 = { 24, 2, 4, 8, 0 };
  static const QBlockLayout q8_0 = { 34, -1, -1, 2, 128 };
  switch (type) {
  case WHISPER_DTYPE_Q4_0: return &q4_0;
  case WHISPER_DTYPE_Q4_1: return &q4_1;
  case WHISPER_DTYPE_Q5_0: return &q5_0;
  case WHISPER_DTYPE_Q5_1: return &q5_1;
  case WHISPER_DTYPE_Q8_0: return &q8_0;
  default: return NULL;
  }
}

gboolean
whisper_dtype_is_qblock (WhisperDType type)
{
  return layout_of (type) != NULL;
}

gsize
whisper_qblock_bytes (WhisperDType type)
{
  const QBlockLayout *l = layout_of (type);
  g_return_val_if_fail (l != NULL, 0);
  return l->bytes;
}

gboolean
whisper_qblock_from_ggml (gint32 ggml_type, WhisperDType *type)
{
  switch (ggml_type) {
  case WHISPER_GGML_TYPE_Q4_0: *type = WHISPER_DTYPE_Q4_0; return TRUE;
  case WHISPER_GGML_TYPE_Q4_1: *type = WHISPER_DTYPE_Q4_1; return TRUE;
  case WHISPER_GGML_TYPE_Q5_0: *type = WHISPER_DTYPE_Q5_0; return TRUE;
  case WHISPER_GGML_TYPE_Q5_1: *type = WHISPER_DTYPE_Q5_1; return TRUE;
  case WHISPER_GGML_TYPE_Q8_0: *type = WHISPER_DTYPE_Q8_0; return TRUE;
  default: return FALSE;
  }
}

static float
half_at (const guint8 *p)
{
  return whisper_half_to_float ((guint16) (p[0] | p[1] << 8));
}

/* The 32 unsigned codes of one block: value j = d * (code[j] - offset) + m. */
static void
block_codes (const QBlockLayout *l, const guint8 *block, guint8 *code)
{
  const guint8 *qs = block + l->qs;
  if (l->offset == 128) { /* q8_0: the int8 plus 128 */
    for (int j = 0; j < 32; j++)
      code[j] = (guint8) (qs[j] ^ 0x80);
    return;
  }
  for (int j = 0; j < 16; j++) {
    code[j] = qs[j] & 0x0f;
    code[j + 16] = qs[j] >> 4;
  }
  if (l->qh >= 0) {
    const guint8 *qh = block + l->qh;
    const guint32 bits = (guint32) qh[0] | (guint32) qh[1] << 8 | (guint32) qh[2] << 16 |
                         (guint32) qh[3] << 24;
    for (int j = 0; j < 32; j++)
      code[j] |= (guint8) (((bits >> j) & 1u) << 4);
  }
}

void
whisper_qblock_unpack (WhisperDType type, const void *block, guint8 *code, float *d, float *m)
{
  const QBlockLayout *l = layout_of (type);
  g_return_if_fail (l != NULL);
  block_codes (l, block, code);
  *d = half_at (block);
  *m = l->min >= 0 ? half_at ((const guint8 *) block + l->min) : 0.0f;
}

int
whisper_qblock_offset (WhisperDType type)
{
  const QBlockLayout *l = layout_of (type);
  g_return_val_if_fail (l != NULL, 0);
  return l->offset;
}

void
whisper_qblock_dequantize (WhisperDType type, const void *blocks, gsize n_blocks, float *dst)
{
  const QBlockLayout *l = layout_of (type);
  g_return_if_fail (l != NULL);
  for (gsize b = 0; b < n_blocks; b++) {
    const guint8 *block = (const guint8 *) blocks + b * l->bytes;
    const float d = half_at (block), m = l->min >= 0 ? half_at (block + l->min) : 0.0f;
    guint8 code[32];
    block_codes (l, block, code);
    float *out = dst + b * WHISPER_QBLOCK_VALUES;
    for (int j = 0; j < 32; j++)
      out[j] = d * (float) ((int) code[j] - l->offset) + m;
  }
}

static gboolean
half_is_finite (const guint8 *p)
{
  return ((p[1] & 0x7c) != 0x7c); /* exponent all ones: infinity or NaN */
}

gboolean
whisper_qblock_check (WhisperDType type, const void *blocks, gsize n_blocks, gsize *bad_block)
{
  const QBlockLayout *l = layout_of (type);
  g_return_val_if_fail (l != NULL, FALSE);
  for (gsize b = 0; b < n_blocks; b++) {
    const guint8 *block = (const guint8 *) blocks + b * l->bytes;
    if (!half_is_finite (block) || (l->min >= 0 && !half_is_finite (block + l->min))) {
      *bad_block = b;
      return FALSE;
    }
  }
  return TRUE;
}
