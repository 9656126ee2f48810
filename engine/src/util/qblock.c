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
whisper_qblock_is_k (WhisperDType type)
{
  return type == WHISPER_DTYPE_Q4_K || type == WHISPER_DTYPE_Q5_K || type == WHISPER_DTYPE_Q6_K;
}

gboolean
whisper_dtype_is_qblock (WhisperDType type)
{
  return layout_of (type) != NULL || whisper_qblock_is_k (type);
}

gsize
whisper_qblock_bytes (WhisperDType type)
{
  switch (type) {
  case WHISPER_DTYPE_Q4_K: return 144;
  case WHISPER_DTYPE_Q5_K: return 176;
  case WHISPER_DTYPE_Q6_K: return 210;
  default: break;
  }
  const QBlockLayout *l = layout_of (type);
  g_return_val_if_fail (l != NULL, 0);
  return l->bytes;
}

int
whisper_qblock_values (WhisperDType type)
{
  g_return_val_if_fail (whisper_dtype_is_qblock (type), 0);
  return whisper_qblock_is_k (type) ? WHISPER_QBLOCK_K_VALUES : WHISPER_QBLOCK_VALUES;
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
  case WHISPER_GGML_TYPE_Q4_K: *type = WHISPER_DTYPE_Q4_K; return TRUE;
  case WHISPER_GGML_TYPE_Q5_K: *type = WHISPER_DTYPE_Q5_K; return TRUE;
  case WHISPER_GGML_TYPE_Q6_K: *type = WHISPER_DTYPE_Q6_K; return TRUE;
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
  if (whisper_qblock_is_k (type))
    return type == WHISPER_DTYPE_Q6_K ? 32 : 0;
  const QBlockLayout *l = layout_of (type);
  g_return_val_if_fail (l != NULL, 0);
  return l->offset;
}

/* ---- k-quants ---------------------------------------------------------- */

/* Where the parts of a super-block lie (qblock.h). */
#define K4_SCALES 4   /* q4_K, q5_K: d at 0, dmin at 2, scales[12] */
#define K4_QS 16      /* q4_K's qs[128] */
#define K5_QH 16      /* q5_K's qh[32] */
#define K5_QS 48      /* q5_K's qs[128] */
#define K6_QH 128     /* q6_K: ql[128] at 0, qh[64] */
#define K6_SCALES 192 /* q6_K's int8 scales[16] */
#define K6_D 208      /* q6_K's d */

/* The 6-bit scale and min of sub-block j (0..7) of q4_K / q5_K: the low 6
 * bits of bytes j and j + 4 for j < 4, else the nibbles of byte j + 4 with
 * the top 2 bits of bytes j - 4 and j above them (ggml's
 * get_scale_min_k4). */
static void
k4_scale_min (const guint8 *q, int j, int *sc, int *m)
{
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0f) | (q[j - 4] >> 6) << 4;
    *m = (q[j + 4] >> 4) | (q[j] >> 6) << 4;
  }
}

/* The 32 codes of sub-block s (0..7, values 32 s ..) of a super-block. */
static void
k_codes (WhisperDType type, const guint8 *blk, int s, guint8 *code)
{
  if (type == WHISPER_DTYPE_Q6_K) {
    const int h = s / 4, c = s % 4;
    const guint8 *ql = blk + 64 * h + 32 * (c & 1), *qh = blk + K6_QH + 32 * h;
    const int shift = (c >> 1) * 4;
    for (int l = 0; l < 32; l++)
      code[l] = (guint8) (((ql[l] >> shift) & 0x0f) | ((qh[l] >> (2 * c)) & 3) << 4);
    return;
  }
  const guint8 *qs = blk + (type == WHISPER_DTYPE_Q4_K ? K4_QS : K5_QS) + 32 * (s / 2);
  const int shift = (s & 1) * 4;
  for (int l = 0; l < 32; l++)
    code[l] = (qs[l] >> shift) & 0x0f;
  if (type == WHISPER_DTYPE_Q5_K) {
    const guint8 *qh = blk + K5_QH;
    for (int l = 0; l < 32; l++)
      code[l] |= (guint8) (((qh[l] >> s) & 1) << 4);
  }
}

/* Sub-block s's scale (per half of 16) and offset term, as
 * whisper_qblock_unpack_sub gives them. */
static void
k_scales (WhisperDType type, const guint8 *blk, int s, float d[2], float c[2])
{
  if (type == WHISPER_DTYPE_Q6_K) {
    const float dd = half_at (blk + K6_D);
    for (int h = 0; h < 2; h++) {
      d[h] = dd * (float) (gint8) blk[K6_SCALES + 2 * s + h];
      c[h] = -32.0f * d[h];
    }
    return;
  }
  int sc, m;
  k4_scale_min (blk + K4_SCALES, s, &sc, &m);
  d[0] = d[1] = half_at (blk) * (float) sc;
  c[0] = c[1] = -(half_at (blk + 2) * (float) m);
}

void
whisper_qblock_unpack_sub (WhisperDType type, const void *row, gsize sub, guint8 *code,
                           float d[2], float c[2])
{
  if (whisper_qblock_is_k (type)) {
    const guint8 *blk = (const guint8 *) row + sub / 8 * whisper_qblock_bytes (type);
    k_codes (type, blk, (int) (sub % 8), code);
    k_scales (type, blk, (int) (sub % 8), d, c);
    return;
  }
  const QBlockLayout *l = layout_of (type);
  g_return_if_fail (l != NULL);
  float dw, m;
  whisper_qblock_unpack (type, (const guint8 *) row + sub * l->bytes, code, &dw, &m);
  d[0] = d[1] = dw;
  c[0] = c[1] = m - (float) l->offset * dw;
}

/* As ggml's dequantize_row_q4_K ... q6_K: the scale times the sub-block's
 * scale first, then by the code (minus 32 for q6_K), minus dmin times the
 * sub-block's min (q4_K, q5_K). */
static void
k_dequantize (WhisperDType type, const guint8 *blocks, gsize n_blocks, float *dst)
{
  const gsize bytes = whisper_qblock_bytes (type);
  for (gsize b = 0; b < n_blocks; b++) {
    const guint8 *blk = blocks + b * bytes;
    for (int s = 0; s < 8; s++) {
      guint8 code[32];
      float *out = dst + b * WHISPER_QBLOCK_K_VALUES + 32 * s;
      k_codes (type, blk, s, code);
      if (type == WHISPER_DTYPE_Q6_K) {
        const float dd = half_at (blk + K6_D);
        for (int l = 0; l < 32; l++)
          out[l] = dd * (float) (gint8) blk[K6_SCALES + 2 * s + l / 16] * (float) (code[l] - 32);
      } else {
        int sc, m;
        k4_scale_min (blk + K4_SCALES, s, &sc, &m);
        const float d1 = half_at (blk) * (float) sc, m1 = half_at (blk + 2) * (float) m;
        for (int l = 0; l < 32; l++)
          out[l] = d1 * (float) code[l] - m1;
      }
    }
  }
}

void
whisper_qblock_dequantize (WhisperDType type, const void *blocks, gsize n_blocks, float *dst)
{
  if (whisper_qblock_is_k (type)) {
    k_dequantize (type, blocks, n_blocks, dst);
    return;
  }
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
  const gsize bytes = whisper_qblock_bytes (type);
  /* the float16s of a block: d (and m, dmin) */
  int scale = 0, second = -1;
  if (type == WHISPER_DTYPE_Q6_K) {
    scale = K6_D;
  } else if (whisper_qblock_is_k (type)) {
    second = 2;
  } else {
    const QBlockLayout *l = layout_of (type);
    g_return_val_if_fail (l != NULL, FALSE);
    second = l->min;
  }
  for (gsize b = 0; b < n_blocks; b++) {
    const guint8 *block = (const guint8 *) blocks + b * bytes;
    if (!half_is_finite (block + scale) || (second >= 0 && !half_is_finite (block + second))) {
      *bad_block = b;
      return FALSE;
    }
  }
  return TRUE;
}
