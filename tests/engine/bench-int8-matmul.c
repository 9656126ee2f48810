/* bench-int8-matmul.c: the int8 kernels of precision=int8 (cpu-int8.h) on
 * the encoder's shapes, against oneDNN's int8 matmul on the same values.
 *
 *   bench-int8-matmul [ROWS]   (input rows, default 1500: one window)
 *
 * Not a test: it prints a table and asserts nothing. For the linears of
 * one encoder layer of tiny (d = 384) and base (d = 512): qkv / out (d x
 * d) and fc1 (4d x d), fc2 (d x 4d), on one thread:
 *
 * - ours: whisper_cpu_int8_linear_rows () on the path WHISPER_CPU_INT8
 *   names (default: the best the CPU has), input rows quantized once,
 *   256 rows a call as cpu-int8-linear.c does at most (WHISPER_BENCH_BLOCK
 *   for another count), float32 out with the
 *   scales applied;
 * - oneDNN: dnnl_matmul of the same int8 values, s8 by s8 to s32 and u8
 *   (the values + 128) by s8 to s32, weights reordered once to the format
 *   oneDNN picks; int32 out (its scales would come on top). Its
 *   implementation follows ONEDNN_MAX_CPU_ISA (AVX2: "gemm:jit", whose
 *   vpmaddubsw pair sums saturate; with VNNI, "brg:avx512_core_vnni").
 *   The "wrong" column counts the sums of a sample (every 7th row, every
 *   5th column) that differ from the exact ones.
 *
 * Values are uniform over the whole int8 range (weights -127..127 as
 * quantized at load, inputs likewise): saturation is not the common case
 * with real activations, but exactness is what precision=int8 promises
 * (the sums are integers; every path gives the same bits).
 *
 * Each figure is the fastest of 5 calls (GMAC/s = rows * out * in / s);
 * WHISPER_BENCH_CPU_TIME=1 times them in the thread's CPU time instead of
 * wall-clock time (a machine shared with other work), and
 * WHISPER_BENCH_NO_ONEDNN=1 runs ours only. */
#include "cpu-int8.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#define REPS 5

static double
now (void)
{
  /* WHISPER_BENCH_CPU_TIME=1: this thread's CPU time (a machine shared
   * with other work), else wall-clock time */
  static int cpu_time = -1;
  struct timespec t;
  if (cpu_time < 0)
    cpu_time = g_getenv ("WHISPER_BENCH_CPU_TIME") != NULL;
  clock_gettime (cpu_time ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

#ifdef HAVE_ONEDNN
#define DNNL_OK(call)                                                                         \
  do {                                                                                        \
    dnnl_status_t status_ = (call);                                                           \
    if (status_ != dnnl_success) {                                                            \
      printf ("  oneDNN: %s failed (status %d)\n", #call, (int) status_);                    \
      return;                                                                                 \
    }                                                                                         \
  } while (0)

/* x [m, k] int8 row-major, w [n, k] int8 row-major (the weight's rows) */
static void
bench_onednn (const int8_t *x, const int8_t *w, int m, int n, int k, gboolean unsigned_src)
{
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  DNNL_OK (dnnl_engine_create (&engine, dnnl_cpu, 0));
  DNNL_OK (dnnl_stream_create (&stream, engine, dnnl_stream_default_flags));
  dnnl_memory_desc_t src_md, wei_md, wei_any, dst_md;
  DNNL_OK (dnnl_memory_desc_init_by_tag (&src_md, 2, (dnnl_dims_t) { m, k },
                                         unsigned_src ? dnnl_u8 : dnnl_s8, dnnl_ab));
  DNNL_OK (dnnl_memory_desc_init_by_tag (&wei_md, 2, (dnnl_dims_t) { k, n }, dnnl_s8, dnnl_ba));
  DNNL_OK (dnnl_memory_desc_init_by_tag (&wei_any, 2, (dnnl_dims_t) { k, n }, dnnl_s8,
                                         dnnl_format_tag_any));
  DNNL_OK (dnnl_memory_desc_init_by_tag (&dst_md, 2, (dnnl_dims_t) { m, n }, dnnl_s32, dnnl_ab));
  dnnl_matmul_desc_t desc;
  DNNL_OK (dnnl_matmul_desc_init (&desc, &src_md, &wei_any, NULL, &dst_md));
  dnnl_primitive_desc_t pd;
  DNNL_OK (dnnl_primitive_desc_create (&pd, &desc, NULL, engine, NULL));
  const char *impl = "?";
  dnnl_primitive_desc_query (pd, dnnl_query_impl_info_str, 0, &impl);
  const dnnl_memory_desc_t *wei_pd = dnnl_primitive_desc_query_md (pd, dnnl_query_weights_md, 0);
  dnnl_primitive_t prim, reorder;
  DNNL_OK (dnnl_primitive_create (&prim, pd));
  dnnl_memory_t src_m, wei0_m, wei_m, dst_m;
  g_autofree guint8 *src = g_malloc ((size_t) m * k);
  for (size_t i = 0; i < (size_t) m * k; i++)
    src[i] = unsigned_src ? (guint8) (x[i] + 128) : (guint8) x[i];
  DNNL_OK (dnnl_memory_create (&src_m, &src_md, engine, src));
  DNNL_OK (dnnl_memory_create (&wei0_m, &wei_md, engine, (void *) w));
  DNNL_OK (dnnl_memory_create (&wei_m, wei_pd, engine, DNNL_MEMORY_ALLOCATE));
  DNNL_OK (dnnl_memory_create (&dst_m, &dst_md, engine, DNNL_MEMORY_ALLOCATE));
  dnnl_primitive_desc_t rpd;
  DNNL_OK (dnnl_reorder_primitive_desc_create (&rpd, &wei_md, engine, wei_pd, engine, NULL));
  DNNL_OK (dnnl_primitive_create (&reorder, rpd));
  dnnl_exec_arg_t rargs[2] = { { DNNL_ARG_FROM, wei0_m }, { DNNL_ARG_TO, wei_m } };
  DNNL_OK (dnnl_primitive_execute (reorder, stream, 2, rargs));
  dnnl_stream_wait (stream);
  dnnl_exec_arg_t args[3] = { { DNNL_ARG_SRC, src_m }, { DNNL_ARG_WEIGHTS, wei_m },
                              { DNNL_ARG_DST, dst_m } };
  double best = G_MAXDOUBLE;
  for (int r = 0; r < REPS; r++) {
    const double t0 = now ();
    DNNL_OK (dnnl_primitive_execute (prim, stream, 3, args));
    dnnl_stream_wait (stream);
    best = MIN (best, now () - t0);
  }
  int32_t *dst;
  dnnl_memory_get_data_handle (dst_m, (void **) &dst);
  long wrong = 0, sampled = 0;
  for (int i = 0; i < m; i += 7)
    for (int j = 0; j < n; j += 5) {
      int64_t want = 0;
      for (int c = 0; c < k; c++)
        want += (int64_t) (unsigned_src ? x[(size_t) i * k + c] + 128 : x[(size_t) i * k + c]) *
                w[(size_t) j * k + c];
      wrong += want != dst[(size_t) i * n + j];
      sampled++;
    }
  printf ("  oneDNN %s x s8 (%s): %7.1f GMAC/s, wrong %ld of %ld\n", unsigned_src ? "u8" : "s8",
          impl, (double) m * n * k / best * 1e-9, wrong, sampled);
  dnnl_primitive_destroy (reorder);
  dnnl_primitive_desc_destroy (rpd);
  dnnl_primitive_destroy (prim);
  dnnl_primitive_desc_destroy (pd);
  dnnl_memory_destroy (src_m);
  dnnl_memory_destroy (wei0_m);
  dnnl_memory_destroy (wei_m);
  dnnl_memory_destroy (dst_m);
  dnnl_stream_destroy (stream);
  dnnl_engine_destroy (engine);
}
#endif

static void
bench_shape (WhisperCpuInt8Isa isa, GRand *r, const char *name, int m, int n, int k)
{
  printf ("%s: %d rows x (%d x %d)\n", name, m, n, k);
  WhisperCpuInt8Weight *w = whisper_cpu_int8_weight_new (n, k);
  g_autofree int8_t *wv = g_malloc ((size_t) n * k), *xv = g_malloc ((size_t) m * k);
  for (size_t i = 0; i < (size_t) n * k; i++)
    wv[i] = (int8_t) g_rand_int_range (r, -127, 128);
  for (size_t i = 0; i < (size_t) m * k; i++)
    xv[i] = (int8_t) g_rand_int_range (r, -127, 128);
  for (int i = 0; i < n; i++)
    whisper_cpu_int8_weight_set_stored (w, i, wv + (size_t) i * k, 1.0f);
  /* the same values as quantize_row () would store them on this path */
  g_autofree int8_t *xq = g_malloc ((size_t) m * w->cols_pad);
  g_autofree float *xs = g_new (float, m), *y = g_new (float, (size_t) m * n);
  for (int i = 0; i < m; i++) {
    for (int c = 0; c < w->cols_pad; c++) {
      const int8_t v = c < k ? xv[(size_t) i * k + c] : 0;
      xq[(size_t) i * w->cols_pad + c] = whisper_cpu_int8_isa_offsets_x (isa) ? (int8_t) (v ^ 0x80) : v;
    }
    xs[i] = 1.0f;
  }
  const char *b = g_getenv ("WHISPER_BENCH_BLOCK");
  const int block = b ? MAX (atoi (b), 1) : 256;
  double best = G_MAXDOUBLE;
  for (int rep = 0; rep < REPS; rep++) {
    const double t0 = now ();
    for (int i0 = 0; i0 < m; i0 += block)
      whisper_cpu_int8_linear_rows (isa, y + (size_t) i0 * n, n, xq + (size_t) i0 * w->cols_pad,
                                    xs + i0, MIN (block, m - i0), w, 0, n, FALSE);
    best = MIN (best, now () - t0);
  }
  printf ("  ours %-10s            %7.1f GMAC/s\n", whisper_cpu_int8_isa_name (isa),
          (double) m * n * k / best * 1e-9);
#ifdef HAVE_ONEDNN
  if (g_getenv ("WHISPER_BENCH_NO_ONEDNN") == NULL) {
    bench_onednn (xv, wv, m, n, k, FALSE);
    bench_onednn (xv, wv, m, n, k, TRUE);
  }
#else
  printf ("  (no oneDNN in this build)\n");
#endif
  g_free (w);
}

int
main (int argc, char **argv)
{
  const int m = argc > 1 ? atoi (argv[1]) : 1500;
  WhisperCpuInt8Isa isa;
  g_autoptr (GError) error = NULL;
  if (m < 1 || !whisper_cpu_int8_isa_choose (&isa, &error)) {
    fprintf (stderr, "bench-int8-matmul: %s\n",
             error ? error->message : "ROWS must be a positive number");
    return 1;
  }
#ifdef _OPENMP
  omp_set_num_threads (1); /* oneDNN on one thread, as each of ours */
#endif
  g_autoptr (GRand) r = g_rand_new_with_seed (40);
  const int d[] = { 384, 512 };
  for (gsize i = 0; i < G_N_ELEMENTS (d); i++) {
    g_autofree char *a = g_strdup_printf ("d %d, qkv/out", d[i]);
    g_autofree char *b = g_strdup_printf ("d %d, fc1", d[i]);
    g_autofree char *c = g_strdup_printf ("d %d, fc2", d[i]);
    bench_shape (isa, r, a, m, d[i], d[i]);
    bench_shape (isa, r, b, m, 4 * d[i], d[i]);
    bench_shape (isa, r, c, m, d[i], 4 * d[i]);
  }
  return 0;
}
