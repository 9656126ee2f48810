/* test-qblock.c: ggml's block types (util/qblock.h) and their CPU kernels
 * (backend/cpu/cpu-qblock.h) against double-precision references written
 * from ggml's block layouts (ggml-common.h, dequantize_row_* in
 * ggml-quants.c of https://github.com/ggml-org/ggml), on seeded random
 * blocks: every byte pattern of the quants, negative and positive scales.
 * Every kernel set runs where the CPU has it (WHISPER_CPU_QBLOCK picks
 * it, as for a backend), so one run covers portable, AVX2 and AVX-512.
 * The k-quants (q4_K, q5_K, q6_K) the same way, their inputs quantized as
 * ggml's q8_K (one scale per 256 values). */
#include "backend.h"
#include "cpu-qblock.h"
#include "half.h"
#include "qblock.h"
#include "whisper-error.h"

#include <math.h>
#include <string.h>

static const WhisperDType types[] = {
  WHISPER_DTYPE_Q4_0, WHISPER_DTYPE_Q4_1, WHISPER_DTYPE_Q5_0, WHISPER_DTYPE_Q5_1,
  WHISPER_DTYPE_Q8_0,
};
static const WhisperDType k_types[] = {
  WHISPER_DTYPE_Q4_K, WHISPER_DTYPE_Q5_K, WHISPER_DTYPE_Q6_K,
};
static const char *const isas[] = { "portable", "avx2", "avx512" };

static double
half_at (const guint8 *p)
{
  return whisper_half_to_float ((guint16) (p[0] | p[1] << 8));
}

/* Value j of a block, straight from ggml's layout. */
static double
ref_value (WhisperDType type, const guint8 *blk, int j)
{
  const double d = half_at (blk);
  const int half = j % 16;
  if (type == WHISPER_DTYPE_Q8_0)
    return d * (gint8) blk[2 + j];
  const gboolean has_min = type == WHISPER_DTYPE_Q4_1 || type == WHISPER_DTYPE_Q5_1;
  const double m = has_min ? half_at (blk + 2) : 0.0;
  const int head = has_min ? 4 : 2; /* after d (and m) */
  if (type == WHISPER_DTYPE_Q4_0 || type == WHISPER_DTYPE_Q4_1) {
    const int nib = j < 16 ? blk[head + half] & 15 : blk[head + half] >> 4;
    return has_min ? d * nib + m : d * (nib - 8);
  }
  const guint32 qh = (guint32) blk[head] | (guint32) blk[head + 1] << 8 |
                     (guint32) blk[head + 2] << 16 | (guint32) blk[head + 3] << 24;
  const int nib = j < 16 ? blk[head + 4 + half] & 15 : blk[head + 4 + half] >> 4;
  const int q = nib | (int) ((qh >> j) & 1) << 4;
  return has_min ? d * q + m : d * (q - 16);
}

/* Value j of a row of k-quant super-blocks, from ggml's layouts
 * (block_q4_K ... in ggml-common.h): q6_K's value 128 h + 32 c + l has the
 * low (c < 2) or high nibble of ql[64 h + 32 (c % 2) + l], bits 2c, 2c + 1
 * of qh[32 h + l] above them, the scale scales[8 h + 2 c + l / 16]; q4_K's
 * and q5_K's value 32 s + l the low (s even) or high nibble of
 * qs[32 (s / 2) + l], q5_K's bit s of qh[l] above, the 6-bit scale and min
 * s of scales[12]. */
static double
ref_value_k (WhisperDType type, const guint8 *row, int j)
{
  const guint8 *blk = row + (gsize) (j / 256) * whisper_qblock_bytes (type);
  const int v = j % 256;
  if (type == WHISPER_DTYPE_Q6_K) {
    const int h = v / 128, c = v % 128 / 32, l = v % 32;
    const int ql = blk[64 * h + 32 * (c % 2) + l], qh = blk[128 + 32 * h + l];
    const int q = (c < 2 ? ql & 15 : ql >> 4) | ((qh >> (2 * c)) & 3) << 4;
    return half_at (blk + 208) * (gint8) blk[192 + 8 * h + 2 * c + l / 16] * (q - 32);
  }
  const int sb = v / 32, l = v % 32;
  const int byte = blk[(type == WHISPER_DTYPE_Q4_K ? 16 : 48) + 32 * (sb / 2) + l];
  int q = sb % 2 ? byte >> 4 : byte & 15;
  if (type == WHISPER_DTYPE_Q5_K)
    q |= ((blk[16 + l] >> sb) & 1) << 4;
  const guint8 *sc = blk + 4;
  const int scale = sb < 4 ? sc[sb] & 63 : (sc[sb + 4] & 15) | (sc[sb - 4] >> 6) << 4;
  const int min = sb < 4 ? sc[sb + 4] & 63 : (sc[sb + 4] >> 4) | (sc[sb] >> 6) << 4;
  return half_at (blk) * scale * q - half_at (blk + 2) * min;
}

/* Value j of a row of blocks of any type. */
static double
ref_row_value (WhisperDType type, const guint8 *row, int j)
{
  if (whisper_qblock_is_k (type))
    return ref_value_k (type, row, j);
  return ref_value (type, row + (gsize) (j / 32) * whisper_qblock_bytes (type), j % 32);
}

static void
put_half (guint8 *p, float v)
{
  guint16 h;
  whisper_float_to_half_n (&h, &v, 1);
  p[0] = h & 0xff;
  p[1] = h >> 8;
}

/* n random blocks: random quant bytes, scales of either sign. */
static guint8 *
random_blocks (GRand *r, WhisperDType type, gsize n)
{
  const gsize bytes = whisper_qblock_bytes (type);
  guint8 *data = g_new (guint8, n * bytes);
  for (gsize i = 0; i < n * bytes; i++)
    data[i] = (guint8) g_rand_int_range (r, 0, 256);
  const gboolean has_min = type == WHISPER_DTYPE_Q4_1 || type == WHISPER_DTYPE_Q5_1 ||
                           type == WHISPER_DTYPE_Q4_K || type == WHISPER_DTYPE_Q5_K;
  const gsize d_at = type == WHISPER_DTYPE_Q6_K ? 208 : 0;
  /* k-quants: d by the 6-bit (or int8) scale, so smaller */
  const double range = whisper_qblock_is_k (type) ? 0.002 : 0.05;
  for (gsize b = 0; b < n; b++) {
    put_half (data + b * bytes + d_at, (float) g_rand_double_range (r, -range, range));
    if (has_min)
      put_half (data + b * bytes + 2, (float) g_rand_double_range (r, -10 * range, 10 * range));
  }
  return data;
}

static void
test_decode (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (3);
  for (gsize t = 0; t < G_N_ELEMENTS (types); t++) {
    const gsize n = 200;
    g_autofree guint8 *blocks = random_blocks (r, types[t], n);
    g_autofree float *got = g_new (float, n * 32);
    whisper_qblock_dequantize (types[t], blocks, n, got);
    for (gsize b = 0; b < n; b++)
      for (int j = 0; j < 32; j++) {
        const double want = ref_value (types[t], blocks + b * whisper_qblock_bytes (types[t]), j);
        g_assert_cmpfloat (fabs (got[b * 32 + j] - want), <=, 1e-7 * (fabs (want) + 0.5));
      }
    gsize bad = 0;
    g_assert_true (whisper_qblock_check (types[t], blocks, n, &bad));
    put_half (blocks + 7 * whisper_qblock_bytes (types[t]), INFINITY);
    g_assert_false (whisper_qblock_check (types[t], blocks, n, &bad));
    g_assert_cmpuint (bad, ==, 7);
  }
}

/* The k-quants' decoder against the layout, and a NaN or infinite d or
 * dmin found. */
static void
test_decode_k (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (4);
  for (gsize t = 0; t < G_N_ELEMENTS (k_types); t++) {
    const WhisperDType type = k_types[t];
    const gsize n = 40, bytes = whisper_qblock_bytes (type);
    g_assert_cmpint (whisper_qblock_values (type), ==, 256);
    g_autofree guint8 *blocks = random_blocks (r, type, n);
    g_autofree float *got = g_new (float, n * 256);
    whisper_qblock_dequantize (type, blocks, n, got);
    for (gsize j = 0; j < n * 256; j++) {
      const double want = ref_value_k (type, blocks, (int) j);
      g_assert_cmpfloat (fabs (got[j] - want), <=, 1e-6 * (fabs (want) + 0.01));
    }
    /* the kernels' form of each 32 values: d[half] * code + c[half] */
    for (gsize sub = 0; sub < n * 8; sub++) {
      guint8 code[32];
      float d[2], c[2];
      whisper_qblock_unpack_sub (type, blocks, sub, code, d, c);
      for (int j = 0; j < 32; j++)
        g_assert_cmpfloat (fabs (d[j / 16] * code[j] + c[j / 16] - got[sub * 32 + j]), <=,
                           1e-6 * (fabs (got[sub * 32 + j]) + 0.01));
    }
    gsize bad = 0;
    g_assert_true (whisper_qblock_check (type, blocks, n, &bad));
    const gsize d_at = type == WHISPER_DTYPE_Q6_K ? 208 : 0;
    put_half (blocks + 7 * bytes + d_at, INFINITY);
    g_assert_false (whisper_qblock_check (type, blocks, n, &bad));
    g_assert_cmpuint (bad, ==, 7);
    if (type != WHISPER_DTYPE_Q6_K) { /* dmin */
      put_half (blocks + 7 * bytes, 0.001f);
      put_half (blocks + 3 * bytes + 2, NAN);
      g_assert_false (whisper_qblock_check (type, blocks, n, &bad));
      g_assert_cmpuint (bad, ==, 3);
    }
  }
}

typedef struct {
  int n, cols;
  float *x, *d, *s;
  gint8 *q;
  float *s16; /* k-quant inputs */
} Inputs;

static void
inputs_free (Inputs *in)
{
  g_free (in->x);
  g_free (in->d);
  g_free (in->s);
  g_free (in->q);
  g_free (in->s16);
}

static Inputs
random_inputs (GRand *r, int n, int cols)
{
  const gsize nb = (gsize) n * cols / 32;
  Inputs in = { n, cols, g_new (float, (gsize) n * cols), g_new (float, nb), g_new (float, nb),
                g_new (gint8, nb * 32), NULL };
  for (gsize i = 0; i < (gsize) n * cols; i++)
    in.x[i] = (float) g_rand_double_range (r, -2.0, 2.0) * (i % 97 == 0 ? 10.0f : 1.0f);
  whisper_cpu_qblock_quantize_rows (in.d, in.s, in.q, in.x, cols, cols, 0, n);
  return in;
}

/* The same rows quantized for the k-quants (ggml's q8_K). */
static Inputs
random_inputs_k (GRand *r, int n, int cols)
{
  const gsize nb = (gsize) n * cols / 32;
  Inputs in = { n, cols, g_new (float, (gsize) n * cols), g_new (float, nb), g_new (float, nb),
                g_new (gint8, nb * 32), g_new (float, 2 * nb) };
  for (gsize i = 0; i < (gsize) n * cols; i++)
    in.x[i] = (float) g_rand_double_range (r, -2.0, 2.0) * (i % 97 == 0 ? 10.0f : 1.0f);
  whisper_cpu_qblock_quantize_rows_k (in.d, in.s, in.s16, in.q, in.x, cols, cols, 0, n);
  return in;
}

static Inputs
inputs_for (WhisperDType type, GRand *r, int n, int cols)
{
  return whisper_qblock_is_k (type) ? random_inputs_k (r, n, cols) : random_inputs (r, n, cols);
}

/* Input rows quantized as ggml's q8_K (quantize_row_q8_K_ref): per 256
 * values, v the value of largest magnitude (the first), iscale = -127 / v,
 * d = 1 / iscale, q = min(127, round-half-even(iscale * x)); s and s16 d
 * times the sums of 32 and 16 quants. An all-zero super-block: d = 0. */
static void
test_quantize_k (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (6);
  Inputs in = random_inputs_k (r, 5, 768);
  memset (in.x + 256, 0, 256 * sizeof (float)); /* row 0's second super-block */
  in.x[2 * 768 + 300] = -40.0f;                 /* a negative largest value */
  in.x[2 * 768 + 301] = 40.0f;                  /* of the same magnitude, after */
  whisper_cpu_qblock_quantize_rows_k (in.d, in.s, in.s16, in.q, in.x, 768, 768, 0, 5);
  for (int i = 0; i < 5; i++)
    for (int k = 0; k < 3; k++) {
      const float *v = in.x + i * 768 + 256 * k;
      float amax = 0.0f, max = 0.0f;
      for (int j = 0; j < 256; j++)
        if (fabsf (v[j]) > amax)
          amax = fabsf (v[j]), max = v[j];
      const float iscale = amax > 0.0f ? -127.0f / max : 0.0f;
      if (i == 2 && k == 1)
        g_assert_cmpfloat (max, ==, -40.0f);
      for (int b = 0; b < 8; b++) {
        const gsize at = (gsize) i * 24 + 8 * k + b;
        g_assert_cmpfloat (in.d[at], ==, amax > 0.0f ? 1.0f / iscale : 0.0f);
        int sum[2] = { 0, 0 };
        for (int j = 0; j < 32; j++) {
          const int want = MIN (127, (int) lrintf (iscale * v[32 * b + j]));
          g_assert_cmpint (in.q[at * 32 + j], ==, want);
          sum[j / 16] += want;
        }
        g_assert_cmpfloat (in.s[at], ==, in.d[at] * (float) (sum[0] + sum[1]));
        g_assert_cmpfloat (in.s16[2 * at], ==, in.d[at] * (float) sum[0]);
        g_assert_cmpfloat (in.s16[2 * at + 1], ==, in.d[at] * (float) sum[1]);
      }
    }
  g_assert_cmpfloat (in.d[8], ==, 0.0f);
  inputs_free (&in);
}

/* Input rows quantized as ggml's q8_0: each value within half a step. */
static void
test_quantize (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (5);
  Inputs in = random_inputs (r, 7, 384);
  for (gsize b = 0; b < (gsize) in.n * in.cols / 32; b++) {
    float amax = 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; j++) {
      amax = MAX (amax, fabsf (in.x[b * 32 + j]));
      sum += in.q[b * 32 + j];
    }
    g_assert_cmpfloat (in.d[b], ==, amax / 127.0f);
    /* every path (WHISPER_CPU_GENERIC=1: the portable one) the values of
     * ggml's rule: round to nearest even of x / d, s = d * sum */
    g_assert_cmpfloat (in.s[b], ==, in.d[b] * (float) sum);
    const float inverse = in.d[b] != 0.0f ? 1.0f / in.d[b] : 0.0f;
    for (int j = 0; j < 32; j++) {
      g_assert_cmpint (in.q[b * 32 + j], ==, (int) lrintf (in.x[b * 32 + j] * inverse));
      g_assert_cmpfloat (fabs (in.x[b * 32 + j] - (double) in.d[b] * in.q[b * 32 + j]), <=,
                         0.5001 * in.d[b]);
    }
  }
  inputs_free (&in);
}

/* The kernel set `isa` as a backend would get it; NULL (test skipped) where
 * the CPU lacks it. */
static const WhisperCpuQblockKernels *
select_isa (const char *isa)
{
  g_setenv ("WHISPER_CPU_QBLOCK", isa, TRUE);
  g_autoptr (GError) error = NULL;
  const WhisperCpuQblockKernels *k = whisper_cpu_qblock_select (&error);
  g_unsetenv ("WHISPER_CPU_QBLOCK");
  if (k == NULL) {
    g_assert_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING);
    g_test_message ("%s", error->message);
    return NULL;
  }
  g_assert_cmpstr (k->name, ==, isa);
  return k;
}

/* One weight row against n input rows: within float rounding of the sum in
 * double of the decoded weights times the quantized inputs, and every row
 * the bits of its one-row call. */
static void
check_dot (const WhisperCpuQblockKernels *k, WhisperDType type, const guint8 *w, const Inputs *in)
{
  const int nb = in->cols / 32;
  const WhisperCpuQRows x = { nb, in->d, in->s, in->q, in->s16 };
  float got[16], alone;
  k->dot (type, w, nb, &x, 0, in->n, got, 1);
  for (int i = 0; i < in->n; i++) {
    double want = 0.0, mag = 0.0;
    for (int b = 0; b < nb; b++)
      for (int j = 0; j < 32; j++) {
        const gsize at = ((gsize) i * nb + b) * 32 + j;
        const double term = ref_row_value (type, w, 32 * b + j) *
                            (double) in->d[(gsize) i * nb + b] * in->q[at];
        want += term;
        mag += fabs (term);
      }
    g_assert_cmpfloat (fabs (got[i] - want), <=, 2e-6 * mag + 1e-6);
    k->dot (type, w, nb, &x, i, i + 1, &alone, 1);
    g_assert_true (memcmp (&alone, &got[i], sizeof alone) == 0);
  }
}

static void
test_dot (gconstpointer data)
{
  const WhisperCpuQblockKernels *k = select_isa (data);
  if (k == NULL) {
    g_test_skip ("this CPU lacks the kernel set");
    return;
  }
  g_autoptr (GRand) r = g_rand_new_with_seed (11);
  const int cols[] = { 32, 384, 1536 }, rows[] = { 1, 5, 16 };
  for (gsize t = 0; t < G_N_ELEMENTS (types); t++)
    for (gsize c = 0; c < G_N_ELEMENTS (cols); c++)
      for (gsize n = 0; n < G_N_ELEMENTS (rows); n++) {
        g_autofree guint8 *w = random_blocks (r, types[t], cols[c] / 32);
        Inputs in = random_inputs (r, rows[n], cols[c]);
        check_dot (k, types[t], w, &in);
        inputs_free (&in);
      }
  const int k_cols[] = { 256, 768, 1536 };
  for (gsize t = 0; t < G_N_ELEMENTS (k_types); t++)
    for (gsize c = 0; c < G_N_ELEMENTS (k_cols); c++)
      for (gsize n = 0; n < G_N_ELEMENTS (rows); n++) {
        g_autofree guint8 *w = random_blocks (r, k_types[t], k_cols[c] / 256);
        Inputs in = random_inputs_k (r, rows[n], k_cols[c]);
        check_dot (k, k_types[t], w, &in);
        inputs_free (&in);
      }
}

/* y = gelu(x W^T + b) (+ y before with ACCUMULATE) through the backend's
 * linear, against double sums of the decoded weights by the float inputs:
 * within the inputs' quantization (half a step per value) and rounding. */
static void
check_linear_ext (WhisperBackend *be, WhisperDType type, int n, int rows, int cols,
                  WhisperLinearFlags flags, GRand *r, gboolean extreme)
{
  const gsize nb = (gsize) rows * cols / whisper_qblock_values (type);
  const gsize row_bytes = whisper_dtype_row_bytes (type, cols);
  g_autofree guint8 *blocks = random_blocks (r, type, nb);
  /* extreme (k-quants): every code at its largest (the code bytes all
   * ones) by inputs that quantize to -127 everywhere: the largest byte
   * products the kernels sum, where an int16 sum of too many would
   * saturate */
  const gsize bytes = whisper_qblock_bytes (type);
  const gsize code_from = type == WHISPER_DTYPE_Q6_K ? 0 : 16, code_to = type == WHISPER_DTYPE_Q6_K ? 192 : bytes;
  for (gsize b = 0; extreme && b < nb; b++)
    memset (blocks + b * bytes + code_from, 0xff, code_to - code_from);
  WhisperTensor t = { blocks, type, NULL, rows, cols };
  WhisperWeight w = { 0 };
  g_autoptr (GError) error = NULL;
  g_assert_true (be->ops->weight_upload (be, &w, &t, &error));
  g_assert_no_error (error);
  Inputs in = inputs_for (type, r, n, cols);
  if (extreme) {
    for (gsize i = 0; i < (gsize) n * cols; i++)
      in.x[i] = 1.5f;
    whisper_cpu_qblock_quantize_rows_k (in.d, in.s, in.s16, in.q, in.x, cols, cols, 0, n);
    g_assert_cmpint (in.q[0], ==, -127);
  }
  g_autofree float *bias = g_new (float, rows);
  g_autofree float *y = g_new (float, (gsize) n * rows), *y0 = g_new (float, (gsize) n * rows);
  for (int o = 0; o < rows; o++)
    bias[o] = (float) g_rand_double_range (r, -1, 1);
  for (gsize i = 0; i < (gsize) n * rows; i++)
    y[i] = y0[i] = (float) g_rand_double_range (r, -1, 1);
  be->ops->linear (be, y, rows, in.x, cols, &w, bias, n, flags);
  /* up to 16 rows (decode steps), each row the bits of its one-row call */
  for (int i = 0; n <= 16 && i < n; i++) {
    g_autofree float *alone = g_memdup2 (y0 + (gsize) i * rows, rows * sizeof (float));
    be->ops->linear (be, alone, rows, in.x + (gsize) i * cols, cols, &w, bias, 1, flags);
    g_assert_cmpmem (alone, rows * sizeof (float), y + (gsize) i * rows, rows * sizeof (float));
  }
  for (int i = 0; i < n; i++)
    for (int o = 0; o < rows; o++) {
      double sum = bias[o], bound = 1e-5;
      for (int c = 0; c < cols; c++) {
        const double wv = ref_row_value (type, blocks + (gsize) o * row_bytes, c);
        sum += wv * in.x[(gsize) i * cols + c];
        bound += fabs (wv) * (0.5 * fabs (in.d[((gsize) i * cols + c) / 32]) + 1e-6 * fabs (in.x[(gsize) i * cols + c]));
      }
      if (flags & WHISPER_LINEAR_ACCUMULATE)
        sum += y0[(gsize) i * rows + o];
      if (flags & WHISPER_LINEAR_GELU) /* GELU's slope is below 1.13 */
        sum = 0.5 * sum * (1.0 + erf (sum / sqrt (2.0))), bound *= 1.13;
      g_assert_cmpfloat (fabs (y[(gsize) i * rows + o] - sum), <=, bound);
    }
  be->ops->weight_free (be, &w);
  inputs_free (&in);
}

static void
check_linear (WhisperBackend *be, WhisperDType type, int n, int rows, int cols,
              WhisperLinearFlags flags, GRand *r)
{
  check_linear_ext (be, type, n, rows, cols, flags, r, FALSE);
}

static void
test_linear (gconstpointer data)
{
  if (select_isa (data) == NULL) {
    g_test_skip ("this CPU lacks the kernel set");
    return;
  }
  g_setenv ("WHISPER_CPU_QBLOCK", data, TRUE);
  g_autoptr (GError) error = NULL;
  WhisperBackend *be = whisper_backend_cpu_new (2, FALSE, &error);
  g_unsetenv ("WHISPER_CPU_QBLOCK");
  g_assert_no_error (error);
  g_autoptr (GRand) r = g_rand_new_with_seed (13);
  for (gsize t = 0; t < G_N_ELEMENTS (types); t++) {
    check_linear (be, types[t], 1, 67, 384, WHISPER_LINEAR_DEFAULT, r);
    check_linear (be, types[t], 3, 64, 256, WHISPER_LINEAR_ACCUMULATE, r);
    check_linear (be, types[t], 9, 70, 128, WHISPER_LINEAR_GELU, r);
    check_linear (be, types[t], 5, 12, 96, WHISPER_LINEAR_DEFAULT, r); /* odd block count */
    check_linear (be, types[t], 67, 9, 96, WHISPER_LINEAR_ACCUMULATE, r);
    check_linear (be, types[t], 70, 48, 128, WHISPER_LINEAR_GELU, r);
    /* more input rows than one chunk of the many-row panels, more blocks
     * than one pass over them */
    check_linear (be, types[t], 530, 20, 1088, WHISPER_LINEAR_ACCUMULATE, r);
  }
  for (gsize t = 0; t < G_N_ELEMENTS (k_types); t++) {
    check_linear (be, k_types[t], 1, 67, 256, WHISPER_LINEAR_DEFAULT, r);
    check_linear (be, k_types[t], 3, 64, 512, WHISPER_LINEAR_ACCUMULATE, r);
    check_linear (be, k_types[t], 9, 70, 256, WHISPER_LINEAR_GELU, r);
    check_linear (be, k_types[t], 67, 9, 768, WHISPER_LINEAR_ACCUMULATE, r);
    check_linear (be, k_types[t], 70, 48, 256, WHISPER_LINEAR_GELU, r);
    check_linear (be, k_types[t], 530, 20, 1280, WHISPER_LINEAR_ACCUMULATE, r);
    check_linear_ext (be, k_types[t], 2, 20, 512, WHISPER_LINEAR_DEFAULT, r, TRUE);
    check_linear_ext (be, k_types[t], 40, 20, 512, WHISPER_LINEAR_DEFAULT, r, TRUE);
  }
  whisper_backend_destroy (be);
}

static void
test_override_errors (void)
{
  g_setenv ("WHISPER_CPU_QBLOCK", "sse9", TRUE);
  g_autoptr (GError) error = NULL;
  WhisperBackend *be = whisper_backend_cpu_new (1, FALSE, &error);
  g_unsetenv ("WHISPER_CPU_QBLOCK");
  g_assert_null (be);
  g_assert_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING);
  g_assert_nonnull (strstr (error->message, "WHISPER_CPU_QBLOCK=sse9"));
  g_assert_nonnull (strstr (error->message, "portable, avx2 or avx512"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/qblock/decode", test_decode);
  g_test_add_func ("/qblock/quantize", test_quantize);
  g_test_add_func ("/qblock/decode-k", test_decode_k);
  g_test_add_func ("/qblock/quantize-k", test_quantize_k);
  for (gsize i = 0; i < G_N_ELEMENTS (isas); i++) {
    g_autofree char *dot = g_strdup_printf ("/qblock/dot/%s", isas[i]);
    g_autofree char *linear = g_strdup_printf ("/qblock/linear/%s", isas[i]);
    g_test_add_data_func (dot, isas[i], test_dot);
    g_test_add_data_func (linear, isas[i], test_linear);
  }
  g_test_add_func ("/qblock/override-errors", test_override_errors);
  return g_test_run ();
}
