/* test-cpu-int8.c: the CPU backend's int8 linears (cpu-int8.h) on seeded
 * random inputs.
 * - /cpu-int8/quantize: an input row's stored values and scale with
 *   CTranslate2's rule on every path this CPU has (shifted by 128, then
 *   ties to even; values just under a half that the shift rounds up), each
 *   value within half a step (and a float step of the shift) of the float one.
 * - /cpu-int8/kernels: every kernel path this CPU has against 64-bit
 *   integer dot products: the same bits (the sums are exact), for tile
 *   edges in rows, input rows and columns, with and without accumulation.
 * - /cpu-int8/backend: the backend in precision int8 (the path
 *   WHISPER_CPU_INT8 names, else the CPU's best): a float weight quantized
 *   at load, linears of 1 to 40 input rows with bias, GELU and
 *   accumulation against a double-precision float reference (within the
 *   quantization error), an accumulated row with the bits of the residual
 *   plus the biased product (CTranslate2's order), and each row with its
 *   one-row call's bits (up to
 *   max_exact_rows rows; within 1e-6 above, where GELU splits differently); an int8
 *   tensor (a CTranslate2 int8 model's) kept as stored.
 * - /cpu-int8/env: WHISPER_CPU_INT8 naming no path is refused, naming it.
 * - /cpu-int8/fast-fallback: without AVX-512 (WHISPER_CPU_NO_AVX512=1, as
 *   meson runs it once), precision bfloat16 is refused with the reason and
 *   precision fast makes an int8 engine on the default model.
 * Meson runs it once per path (WHISPER_CPU_INT8=...); a path this CPU
 * lacks skips (77). */
#include "backend-cpu-private.h"
#include "cpu-features.h"
#include "whisper-engine-test-api.h"
#include "whisper.h"
#include "tensor.h"
#include "whisper-error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static float
rnd (GRand *r)
{
  return (float) g_rand_double_range (r, -1.0, 1.0);
}

/* an input row's stored value: CTranslate2's rule (cpu-int8.h) in the
 * plainest way: shifted by 128 in float, then nearbyintf (round to nearest
 * even) */
static int
want_q (float x, float scale)
{
  volatile float shifted = x * scale + 128.0f; /* rounded to float here */
  return (int) nearbyintf (shifted) - 128;
}

/* one row on one path against want_q () */
static void
check_quantize (WhisperCpuInt8Isa isa, const float *x, int cols)
{
  const int pad = whisper_cpu_int8_cols_pad (cols);
  g_autofree int8_t *q = g_new (int8_t, pad);
  float amax = 0.0f;
  for (int c = 0; c < cols; c++)
    amax = fmaxf (amax, fabsf (x[c]));
  const float want_scale = 127.0f / (amax == 0.0f ? 127.0f : amax);
  const float scale = whisper_cpu_int8_quantize_row (isa, q, x, cols, pad);
  g_assert_cmpfloat (scale, ==, want_scale);
  if (whisper_cpu_int8_isa_offsets_x (isa)) /* stored + 128, unsigned */
    for (int c = 0; c < pad; c++)
      q[c] ^= (int8_t) 0x80;
  for (int c = 0; c < cols; c++) {
    if (q[c] != want_q (x[c], scale))
      g_error ("int8 %s: cols %d: q[%d] = %d for %.9g * %.9g, want %d",
               whisper_cpu_int8_isa_name (isa), cols, c, q[c], x[c], scale,
               want_q (x[c], scale));
    /* half a step, plus the float rounding of the shifted value (at most
     * half of 2^-15, the float step from 128 to 256) */
    g_assert_cmpfloat (fabs ((double) q[c] / scale - x[c]), <=, (0.5 + 0x1p-16) / scale + 1e-6);
  }
  for (int c = cols; c < pad; c++)
    g_assert_cmpint (q[c], ==, 0);
}

static void
test_quantize (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (11);
  g_assert_cmpint (whisper_cpu_int8_cols_pad (100), ==, 128);
  const int sizes[] = { 1, 7, 31, 33, 100, 384, 1536 };
  for (int isa = 0; isa < WHISPER_CPU_INT8_N_ISA; isa++) {
    if (!whisper_cpu_int8_isa_available (isa))
      continue;
    for (gsize s = 0; s < G_N_ELEMENTS (sizes); s++) {
      g_autofree float *x = g_new (float, sizes[s]);
      for (int c = 0; c < sizes[s]; c++)
        x[c] = rnd (r) * 3.0f;
      x[sizes[s] / 2] = -4.0f; /* the largest magnitude: stored -127 */
      check_quantize (isa, x, sizes[s]);
      /* amax 127, scale 1: halves are ties, rounded to even */
      for (int c = 0; c < sizes[s]; c++)
        x[c] = (float) g_rand_int_range (r, -127, 127) + 0.5f;
      x[0] = 127.0f;
      check_quantize (isa, x, sizes[s]);
      /* amax 127, scale 1: just under halves, where the shift by 128
       * rounds them up (1.49999988 + 128 is 129.5 in float: 2, not 1) */
      for (int c = 0; c < sizes[s]; c++)
        x[c] = nextafterf ((float) g_rand_int_range (r, -126, 126) + 0.5f, 0.0f);
      x[0] = 127.0f;
      check_quantize (isa, x, sizes[s]);
      if (sizes[s] > 1) {
        const float scale = 1.0f, under = nextafterf (1.5f, 0.0f);
        g_assert_cmpint (want_q (under, scale), ==, 2);
      }
      memset (x, 0, sizes[s] * sizeof (float)); /* a zero row: scale 1, zeros */
      check_quantize (isa, x, sizes[s]);
    }
  }
}

/* y[i, r] as every kernel must give it: the exact dot over (x_scale[i]
 * w_scale[r]); xq as the path stores it (offset: + 128, unsigned) */
static float
reference_out (const int8_t *xq, gboolean offset, float xs, const WhisperCpuInt8Weight *w, int r)
{
  int64_t dot = 0;
  for (int c = 0; c < w->cols; c++)
    dot += (int64_t) (offset ? (int8_t) (xq[c] ^ 0x80) : xq[c]) *
           w->q[whisper_cpu_int8_index (w, r, c)];
  return (float) dot * (1.0f / xs) / w->scale[r];
}

static WhisperCpuInt8Weight *
random_weight (GRand *r, int rows, int cols)
{
  WhisperCpuInt8Weight *w = whisper_cpu_int8_weight_new (rows, cols);
  g_assert_nonnull (w);
  g_autofree int8_t *q = g_new (int8_t, cols);
  for (int i = 0; i < rows; i++) {
    for (int c = 0; c < cols; c++)
      q[c] = (int8_t) g_rand_int_range (r, -128, 128); /* -128 too: the AVX2 sign trick */
    whisper_cpu_int8_weight_set_stored (w, i, q, (float) g_rand_double_range (r, 0.5, 200.0));
  }
  return w;
}

static void
check_kernel (WhisperCpuInt8Isa isa, GRand *r, int rows, int cols, int n)
{
  g_autofree WhisperCpuInt8Weight *w = random_weight (r, rows, cols);
  const int pad = w->cols_pad;
  g_autofree int8_t *xq = g_new (int8_t, (size_t) n * pad);
  g_autofree float *xs = g_new (float, n);
  g_autofree float *x = g_new (float, cols);
  g_autofree float *y = g_new (float, (size_t) n * rows);
  for (int i = 0; i < n; i++) {
    for (int c = 0; c < cols; c++)
      x[c] = rnd (r);
    xs[i] = whisper_cpu_int8_quantize_row (isa, xq + (size_t) i * pad, x, cols, pad);
  }
  for (int acc = 0; acc < 2; acc++) {
    for (size_t k = 0; k < (size_t) n * rows; k++)
      y[k] = 0.25f;
    /* two calls over [0, r1) and [r1, rows): shares that end mid-tile */
    const int r1 = rows / 2 + 1 > rows ? rows : rows / 2 + 1;
    whisper_cpu_int8_linear_rows (isa, y, rows, xq, xs, n, w, 0, r1, acc);
    whisper_cpu_int8_linear_rows (isa, y, rows, xq, xs, n, w, r1, rows, acc);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < rows; j++) {
        const float want = reference_out (xq + (size_t) i * pad,
                                          whisper_cpu_int8_isa_offsets_x (isa), xs[i], w, j);
        const float got = y[(size_t) i * rows + j];
        if (got != (acc ? 0.25f + want : want))
          g_error ("int8 %s: rows %d cols %d n %d: y[%d, %d] = %.9g, want %.9g%s",
                   whisper_cpu_int8_isa_name (isa), rows, cols, n, i, j, got,
                   acc ? 0.25f + want : want, acc ? " (accumulating)" : "");
      }
  }
}

static void
test_kernels (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (5);
  const int shapes[][2] = { { 1, 1 }, { 5, 63 }, { 8, 64 }, { 7, 65 }, { 13, 384 }, { 9, 1536 },
                            { 17, 2200 } /* three column chunks, the last partial */ };
  const int ns[] = { 1, 2, 3, 4, 5, 9, 17, 70, 260 /* two blocks of input rows */ };
  int paths = 0;
  for (int isa = 0; isa < WHISPER_CPU_INT8_N_ISA; isa++) {
    if (!whisper_cpu_int8_isa_available (isa)) {
      g_test_message ("int8 path %s: not on this CPU", whisper_cpu_int8_isa_name (isa));
      continue;
    }
    paths++;
    for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
      for (gsize k = 0; k < G_N_ELEMENTS (ns); k++)
        check_kernel (isa, r, shapes[s][0], shapes[s][1], ns[k]);
  }
  g_assert_cmpint (paths, >=, 1);
}

static double
gelu (double v)
{
  return 0.5 * v * (1.0 + erf (v / sqrt (2.0)));
}

/* One linear through the backend against float weights in double: error
 * within the int8 steps of the weight and input rows, and every row with
 * the bits of its one-row call. */
static void
check_backend_linear (WhisperBackend *be, const WhisperWeight *w, const float *wf, GRand *r, int n,
                      WhisperLinearFlags flags)
{
  const int rows = w->rows, cols = w->cols;
  g_autofree float *x = g_new (float, (size_t) n * cols);
  g_autofree float *bias = g_new (float, rows);
  g_autofree float *y = g_new (float, (size_t) n * rows);
  g_autofree float *y1 = g_new (float, rows);
  for (size_t k = 0; k < (size_t) n * cols; k++)
    x[k] = rnd (r);
  for (int j = 0; j < rows; j++)
    bias[j] = rnd (r);
  for (size_t k = 0; k < (size_t) n * rows; k++)
    y[k] = 0.5f;
  be->ops->linear (be, y, rows, x, cols, w, bias, n, flags);
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < rows; j++) {
      double s = 0.0, mag = 0.0;
      for (int c = 0; c < cols; c++) {
        s += (double) x[(size_t) i * cols + c] * wf[(size_t) j * cols + c];
        mag += fabs ((double) x[(size_t) i * cols + c]) + fabs ((double) wf[(size_t) j * cols + c]);
      }
      s += bias[j];
      if (flags & WHISPER_LINEAR_GELU)
        s = gelu (s);
      if (flags & WHISPER_LINEAR_ACCUMULATE)
        s += 0.5;
      /* each factor within half a step (1/127 of its row's largest, 1 here) */
      const double bound = 1.2 * (mag * 0.5 / 127.0 + cols * 0.25 / 127.0 / 127.0) + 1e-5;
      g_assert_cmpfloat (fabs (y[(size_t) i * rows + j] - s), <=, bound);
    }
    if (flags & WHISPER_LINEAR_ACCUMULATE) {
      /* CTranslate2's order: the residual joins the biased product, 0.5 +
       * (product + bias), not (0.5 + product) + bias */
      be->ops->linear (be, y1, rows, x + (size_t) i * cols, cols, w, bias, 1,
                       flags & ~WHISPER_LINEAR_ACCUMULATE);
      for (int j = 0; j < rows; j++)
        if (y[(size_t) i * rows + j] != 0.5f + y1[j])
          g_error ("int8 backend: n %d: y[%d, %d] = %.9g accumulated, want 0.5 + %.9g = %.9g", n,
                   i, j, y[(size_t) i * rows + j], y1[j], 0.5f + y1[j]);
    }
    for (int j = 0; j < rows; j++)
      y1[j] = 0.5f;
    be->ops->linear (be, y1, rows, x + (size_t) i * cols, cols, w, bias, 1, flags);
    if (n <= be->max_exact_rows)
      g_assert_cmpmem (y1, rows * sizeof (float), y + (size_t) i * rows, rows * sizeof (float));
    else /* the same sums; GELU's vector and scalar tails may split elsewhere */
      for (int j = 0; j < rows; j++)
        g_assert_cmpfloat (fabsf (y1[j] - y[(size_t) i * rows + j]), <=,
                           1e-6f * (1.0f + fabsf (y1[j])));
  }
}

static void
test_backend (void)
{
  g_autoptr (GError) error = NULL;
  WhisperBackend *be = whisper_backend_cpu_new (2, WHISPER_CPU_PRECISION_INT8, &error);
  g_assert_no_error (error);
  g_autoptr (GRand) r = g_rand_new_with_seed (3);
  const int rows = 70, cols = 200;
  g_autofree float *wf = g_new (float, rows * cols);
  for (int k = 0; k < rows * cols; k++)
    wf[k] = rnd (r);
  WhisperTensor t = { wf, WHISPER_DTYPE_F32, NULL, rows, cols };
  WhisperWeight w = { 0 };
  g_assert_true (be->ops->weight_upload (be, &w, &t, &error));
  g_assert_no_error (error);
  const int ns[] = { 1, 2, 5, 16, 17, 40 };
  const WhisperLinearFlags flags[] = { WHISPER_LINEAR_DEFAULT, WHISPER_LINEAR_GELU,
                                       WHISPER_LINEAR_ACCUMULATE };
  for (gsize i = 0; i < G_N_ELEMENTS (ns); i++)
    for (gsize f = 0; f < G_N_ELEMENTS (flags); f++)
      check_backend_linear (be, &w, wf, r, ns[i], flags[f]);
  be->ops->weight_free (be, &w);
  be->ops->destroy (be);
}

/* A CTranslate2 int8 tensor, in exact precision: kept as stored (its rows
 * read back as stored / scale), the products on those values. */
static void
test_stored (void)
{
  g_autoptr (GError) error = NULL;
  WhisperBackend *be = whisper_backend_cpu_new (1, WHISPER_CPU_PRECISION_EXACT, &error);
  g_assert_no_error (error);
  g_autoptr (GRand) r = g_rand_new_with_seed (9);
  const int rows = 6, cols = 70;
  int8_t q[6 * 70];
  float scales[6], wf[6 * 70];
  for (int j = 0; j < rows; j++) {
    scales[j] = (float) g_rand_double_range (r, 10.0, 300.0);
    for (int c = 0; c < cols; c++) {
      q[j * cols + c] = (int8_t) g_rand_int_range (r, -127, 128);
      wf[j * cols + c] = q[j * cols + c] / scales[j];
    }
  }
  WhisperTensor t = { q, WHISPER_DTYPE_I8, scales, rows, cols };
  WhisperWeight w = { 0 };
  g_assert_true (be->ops->weight_upload (be, &w, &t, &error));
  const WhisperCpuInt8Weight *k = w.data;
  g_assert_cmpint (k->cols, ==, cols);
  for (int j = 0; j < rows; j++) {
    for (int c = 0; c < cols; c++)
      g_assert_cmpint (k->q[whisper_cpu_int8_index (k, j, c)], ==, q[j * cols + c]);
    g_assert_cmpfloat (k->scale[j], ==, scales[j]);
  }
  check_backend_linear (be, &w, wf, r, 3, WHISPER_LINEAR_DEFAULT);
  be->ops->weight_free (be, &w);
  be->ops->destroy (be);
}

static void
test_env (void)
{
  g_autofree char *saved = g_strdup (g_getenv ("WHISPER_CPU_INT8"));
  g_setenv ("WHISPER_CPU_INT8", "sse9", TRUE);
  g_autoptr (GError) error = NULL;
  WhisperBackend *be = whisper_backend_cpu_new (1, WHISPER_CPU_PRECISION_INT8, &error);
  g_assert_null (be);
  g_assert_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING);
  g_assert_nonnull (strstr (error->message, "WHISPER_CPU_INT8=sse9"));
  if (saved)
    g_setenv ("WHISPER_CPU_INT8", saved, TRUE);
  else
    g_unsetenv ("WHISPER_CPU_INT8");
}

/* precision fast where oneDNN has no bfloat16 products (meson runs this
 * with WHISPER_CPU_NO_AVX512=1, as on a CPU with AVX2 only): bfloat16 is
 * refused with the reason, fast is int8 and transcribes. */
static void
test_fast_fallback (void)
{
  if (whisper_cpu_have_avx512 ()) {
    g_test_skip ("AVX-512 is on: fast is bfloat16 here where oneDNN has it");
    return;
  }
  g_autoptr (GError) error = NULL;
  g_assert_null (whisper_backend_cpu_new (1, WHISPER_CPU_PRECISION_BF16, &error));
  g_assert_nonnull (error);
  g_assert_nonnull (strstr (error->message, "precision 'bfloat16'"));
  g_clear_error (&error);
  WhisperEngineOptions options;
  whisper_engine_options_init (&options);
  options.device = WHISPER_DEVICE_CPU;
  options.precision = WHISPER_PRECISION_FAST;
  options.n_threads = 2;
  g_autoptr (WhisperEngine) engine = whisper_engine_new (&options, &error);
  g_assert_no_error (error);
  g_assert_nonnull (engine);
  const WhisperBackendCpu *be = (const WhisperBackendCpu *) whisper_engine_get_backend (engine);
  g_assert_cmpstr (be->parent.ops->name, ==, "cpu");
  g_assert_true (be->int8_quantize);
  g_assert_null (be->bf16);
}

int
main (int argc, char **argv)
{
  const char *want = g_getenv ("WHISPER_CPU_INT8");
  if (want) {
    WhisperCpuInt8Isa isa;
    g_autoptr (GError) error = NULL;
    if (!whisper_cpu_int8_isa_choose (&isa, &error)) {
      g_print ("1..0 # SKIP %s\n", error->message);
      return 77;
    }
  }
  g_test_init (&argc, &argv, NULL);
  /* first: it sets the environment while no thread runs */
  g_test_add_func ("/cpu-int8/env", test_env);
  g_test_add_func ("/cpu-int8/quantize", test_quantize);
  g_test_add_func ("/cpu-int8/kernels", test_kernels);
  g_test_add_func ("/cpu-int8/backend", test_backend);
  g_test_add_func ("/cpu-int8/stored", test_stored);
  g_test_add_func ("/cpu-int8/fast-fallback", test_fast_fallback);
  return g_test_run ();
}
