/* test-qblock.c: ggml's block types (util/qblock.h) and their CPU kernels
 * (backend/cpu/cpu-qblock.h) against double-precision references written
 * from ggml's block layouts (ggml-common.h, dequantize_row_* in
 * ggml-quants.c of https://github.com/ggml-org/ggml), on seeded random
 * blocks: every byte pattern of the quants, negative and positive scales.
 * Every kernel set runs where the CPU has it (WHISPER_CPU_QBLOCK picks
 * it, as for a backend), so one run covers portable, AVX2 and AVX-512. */
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
  const gboolean has_min = type == WHISPER_DTYPE_Q4_1 || type == WHISPER_DTYPE_Q5_1;
  for (gsize b = 0; b < n; b++) {
    put_half (data + b * bytes, (float) g_rand_double_range (r, -0.05, 0.05));
    if (has_min)
      put_half (data + b * bytes + 2, (float) g_rand_double_range (r, -0.5, 0.5));
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

typedef struct {
  int n, cols;
  float *x, *d, *s;
  gint8 *q;
} Inputs;

static void
inputs_free (Inputs *in)
{
  g_free (in->x);
  g_free (in->d);
  g_free (in->s);
  g_free (in->q);
}

static Inputs
random_inputs (GRand *r, int n, int cols)
{
  const gsize nb = (gsize) n * cols / 32;
  Inputs in = { n, cols, g_new (float, (gsize) n * cols), g_new (float, nb), g_new (float, nb),
                g_new (gint8, nb * 32) };
  for (gsize i = 0; i < (gsize) n * cols; i++)
    in.x[i] = (float) g_rand_double_range (r, -2.0, 2.0) * (i % 97 == 0 ? 10.0f : 1.0f);
  whisper_cpu_qblock_quantize_rows (in.d, in.s, in.q, in.x, cols, cols, 0, n);
  return in;
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
  const WhisperCpuQRows x = { nb, in->d, in->s, in->q };
  float got[16], alone;
  k->dot (type, w, nb, &x, 0, in->n, got, 1);
  for (int i = 0; i < in->n; i++) {
    double want = 0.0, mag = 0.0;
    for (int b = 0; b < nb; b++)
      for (int j = 0; j < 32; j++) {
        const gsize at = ((gsize) i * nb + b) * 32 + j;
        const double term = ref_value (type, w + b * whisper_qblock_bytes (type), j) *
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
}

/* y = gelu(x W^T + b) (+ y before with ACCUMULATE) through the backend's
 * linear, against double sums of the decoded weights by the float inputs:
 * within the inputs' quantization (half a step per value) and rounding. */
static void
check_linear (WhisperBackend *be, WhisperDType type, int n, int rows, int cols,
              WhisperLinearFlags flags, GRand *r)
{
  const gsize nb = (gsize) rows * cols / 32, bytes = whisper_qblock_bytes (type);
  g_autofree guint8 *blocks = random_blocks (r, type, nb);
  WhisperTensor t = { blocks, type, NULL, rows, cols };
  WhisperWeight w = { 0 };
  g_autoptr (GError) error = NULL;
  g_assert_true (be->ops->weight_upload (be, &w, &t, &error));
  g_assert_no_error (error);
  Inputs in = random_inputs (r, n, cols);
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
        const double wv = ref_value (type, blocks + ((gsize) o * cols + c) / 32 * bytes, c % 32);
        sum += wv * in.x[(gsize) i * cols + c];
        bound += fabs (wv) * (0.5 * in.d[((gsize) i * cols + c) / 32] + 1e-6 * fabs (in.x[(gsize) i * cols + c]));
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
  for (gsize i = 0; i < G_N_ELEMENTS (isas); i++) {
    g_autofree char *dot = g_strdup_printf ("/qblock/dot/%s", isas[i]);
    g_autofree char *linear = g_strdup_printf ("/qblock/linear/%s", isas[i]);
    g_test_add_data_func (dot, isas[i], test_dot);
    g_test_add_data_func (linear, isas[i], test_linear);
  }
  g_test_add_func ("/qblock/override-errors", test_override_errors);
  return g_test_run ();
}
