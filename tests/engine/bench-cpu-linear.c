/* bench-cpu-linear.c: the CPU backend's linear op for a few input rows (a
 * batched decode step: beams, best-of candidates), on the decoder's shapes.
 *
 *   bench-cpu-linear [MODEL...]   (MODEL: tiny, base, small, medium, large;
 *                                  default tiny base)
 *
 * Not a test: it prints a table and asserts nothing. Per model, the logits
 * linear (n_vocab x d: 51864 x 384 for tiny.en, packed; 51865 x 512 for
 * the multilingual ones, row-major) and one decoder layer's per-step
 * linears (self qkv 3d x d, self out, cross q, cross out d x d, fc1 4d x d,
 * fc2 d x 4d; the cross K/V projection runs once per window, not per step),
 * at n = 1, 2, 5, 8, 16 input rows (WHISPER_BENCH_ROWS="1 2 3 ..." for
 * others), on 1 and 2 threads (WHISPER_BENCH_THREADS). Weights are random
 * float16 of the real shapes; enough copies are cycled through that each
 * call reads them from memory, not from the caches (as in a decode step,
 * where the model's ~44 MB (tiny.en) pass through a 32-MB L3).
 *
 * WHISPER_BENCH_KERNEL=1: the kernels alone on one thread against the old
 * few-row path (see bench_kernels). WHISPER_BENCH_ATTENTION=1 adds the cross-attention of a step (n queries,
 * 1500 keys; WHISPER_BENCH_NO_LINEAR=1: that alone).
 *
 * Each figure is the fastest of 9 batches (~50 ms each) of the time per
 * call, the one least disturbed on a shared machine; GB/s is
 * the weight bytes of one call over that time. */
#include "backend.h"
#include "cpu-kernels.h"
#include "half.h"

#include <cblas.h>
#include <time.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_CYCLE_BYTES (160u << 20) /* copies of a weight set: beyond the L3 */
#define BATCHES 9

typedef struct {
  const char *name;
  int d, n_vocab;
} ModelShape;

static const ModelShape models[] = {
  { "tiny", 384, 51864 },   /* tiny.en: the English-only vocabulary */
  { "base", 512, 51865 },
  { "small", 768, 51865 },
  { "medium", 1024, 51865 },
  { "large", 1280, 51866 },
};

typedef struct {
  int n_mats;
  WhisperWeight w[6];
  size_t bytes; /* float16 bytes of the set */
} WeightSet;

static int
cmp_double (const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static void
upload (WhisperBackend *be, WhisperWeight *w, int rows, int cols, GRand *r)
{
  const size_t n = (size_t) rows * cols;
  guint16 *h = g_new (guint16, n);
  float *f = g_new (float, n);
  for (size_t i = 0; i < n; i++) /* multiples of 2^-10 below 1/16: exact halves */
    f[i] = roundf ((float) g_rand_double_range (r, -64.0, 64.0)) / 1024.0f;
  if (!whisper_float_to_half_exact_n (h, f, n))
    g_error ("bench weights are not exact halves");
  g_free (f);
  const WhisperTensor t = { h, WHISPER_DTYPE_F16, NULL, rows, cols };
  g_autoptr (GError) error = NULL;
  if (!be->ops->weight_upload (be, w, &t, &error))
    g_error ("weight upload: %s", error->message);
  g_free (h);
}

/* time per call of the set (its matrices one after the other), seconds */
static double
time_set (WhisperBackend *be, WeightSet *sets, int n_sets, int n, float *x, float *y)
{
  /* calls per batch: at least two passes over the copies, ~50 ms */
  int calls = 2 * n_sets;
  double batch[BATCHES];
  for (int b = -1; b < BATCHES; b++) { /* b = -1: warm-up, sizes the batch */
    const gint64 t0 = g_get_monotonic_time ();
    for (int c = 0; c < calls; c++) {
      WeightSet *s = &sets[c % n_sets];
      for (int m = 0; m < s->n_mats; m++)
        be->ops->linear (be, y, s->w[m].rows, x, s->w[m].cols, &s->w[m], NULL, n,
                         WHISPER_LINEAR_DEFAULT);
    }
    const double per = (g_get_monotonic_time () - t0) / 1e6 / calls;
    if (b < 0) {
      calls = MAX (calls, (int) (0.05 / per) / n_sets * n_sets);
      continue;
    }
    batch[b] = per;
  }
  qsort (batch, BATCHES, sizeof (double), cmp_double);
  return batch[0];
}

static void
bench_model (const ModelShape *m, const int *threads, int n_threads_list, const int *ns, int n_ns)
{
  const int d = m->d;
  const int layer_shapes[6][2] = { { 3 * d, d }, { d, d }, { d, d }, { d, d }, { 4 * d, d },
                                   { d, 4 * d } };
  g_autoptr (GRand) r = g_rand_new_with_seed (1);
  int max_n = 1;
  for (int i = 0; i < n_ns; i++)
    max_n = MAX (max_n, ns[i]);
  float *x = g_new (float, (size_t) max_n * 4 * d);
  float *y = g_new (float, (size_t) max_n * MAX (m->n_vocab, 4 * d));
  for (size_t i = 0; i < (size_t) max_n * 4 * d; i++)
    x[i] = (float) g_rand_double_range (r, -1.0, 1.0);

  for (int ti = 0; ti < n_threads_list; ti++) {
    g_autoptr (GError) error = NULL;
    WhisperBackend *be = whisper_backend_cpu_new (threads[ti], FALSE, &error);
    if (!be)
      g_error ("cpu backend: %s", error->message);
    for (int what = 0; what < 2; what++) {
      WeightSet proto = { 0 };
      if (what == 0) {
        proto.n_mats = 1;
        proto.bytes = (size_t) m->n_vocab * d * 2;
      } else {
        proto.n_mats = 6;
        for (int k = 0; k < 6; k++)
          proto.bytes += (size_t) layer_shapes[k][0] * layer_shapes[k][1] * 2;
      }
      const int n_sets = (int) MAX (2, (MIN_CYCLE_BYTES + proto.bytes - 1) / proto.bytes);
      WeightSet *sets = g_new0 (WeightSet, n_sets);
      for (int s = 0; s < n_sets; s++) {
        sets[s] = proto;
        for (int k = 0; k < proto.n_mats; k++) {
          if (what == 0)
            upload (be, &sets[s].w[k], m->n_vocab, d, r);
          else
            upload (be, &sets[s].w[k], layer_shapes[k][0], layer_shapes[k][1], r);
        }
      }
      double t1 = 0.0;
      for (int i = 0; i < n_ns; i++) {
        const double t = time_set (be, sets, n_sets, ns[i], x, y);
        if (ns[i] == 1)
          t1 = t;
        printf ("| %s | %s | %d | %d | %.3f | %.1f | %s |\n", m->name,
                what == 0 ? "logits" : "layer", threads[ti], ns[i], t * 1e3,
                proto.bytes / t / 1e9, t1 > 0 ? g_strdup_printf ("%.2f", t / t1) : "-");
        fflush (stdout);
      }
      for (int s = 0; s < n_sets; s++)
        for (int k = 0; k < proto.n_mats; k++)
          be->ops->weight_free (be, &sets[s].w[k]);
      g_free (sets);
    }
    be->ops->destroy (be);
  }
  g_free (x);
  g_free (y);
}

/* Cross-attention of a step: n_q queries against the window's 1500 keys
 * (one K/V, as the beams of one window share it). Up to
 * WHISPER_CPU_GEMV_MAX_ROWS queries take the direct path, one query after
 * the other; more, the sgemm blocks. The calls cycle through copies of the
 * K/V (MIN_CYCLE_BYTES in all), so that each reads them from memory, as
 * in a decode step, where the layers' K/V and the weights pass through
 * the L3 between two reads of one layer's K/V. */
static void
bench_cross_attention (const ModelShape *m, const int *threads, int n_threads_list,
                       const int *ns, int n_ns)
{
  const int d = m->d, n_head = d / 64, n_kv = 1500;
  g_autoptr (GRand) r = g_rand_new_with_seed (2);
  const size_t kv_floats = (size_t) n_kv * 2 * d;
  const int n_copies = (int) ((MIN_CYCLE_BYTES + kv_floats * sizeof (float) - 1) /
                              (kv_floats * sizeof (float)));
  float *kv = g_new (float, kv_floats * n_copies);
  float *q = g_new (float, (size_t) 64 * d), *out = g_new (float, (size_t) 64 * d);
  for (size_t i = 0; i < kv_floats; i++)
    kv[i] = (float) g_rand_double_range (r, -1.0, 1.0);
  for (int c = 1; c < n_copies; c++)
    memcpy (kv + c * kv_floats, kv, kv_floats * sizeof (float));
  for (size_t i = 0; i < (size_t) 64 * d; i++)
    q[i] = (float) g_rand_double_range (r, -1.0, 1.0);
  for (int ti = 0; ti < n_threads_list; ti++) {
    g_autoptr (GError) error = NULL;
    WhisperBackend *be = whisper_backend_cpu_new (threads[ti], FALSE, &error);
    double t1 = 0.0;
    for (int i = 0; i < n_ns; i++) {
      double batch[BATCHES];
      int calls = n_copies;
      for (int b = -1; b < BATCHES; b++) {
        const gint64 t0 = g_get_monotonic_time ();
        for (int c = 0; c < calls; c++) {
          const float *kvc = kv + (c % n_copies) * kv_floats;
          be->ops->attention (be, out, d, q, d, kvc, kvc + d, 2 * d, ns[i], n_kv, n_head, 64,
                              -1);
        }
        const double per = (g_get_monotonic_time () - t0) / 1e6 / calls;
        if (b < 0)
          calls = MAX (n_copies, (int) (0.05 / per) / n_copies * n_copies);
        else
          batch[b] = per;
      }
      qsort (batch, BATCHES, sizeof (double), cmp_double);
      const double t = batch[0];
      if (ns[i] == 1)
        t1 = t;
      printf ("| %s | cross-attention | %d | %d | %.3f | - | %s |\n", m->name, threads[ti],
              ns[i], t * 1e3, t1 > 0 ? g_strdup_printf ("%.2f", t / t1) : "-");
      fflush (stdout);
    }
    be->ops->destroy (be);
  }
  g_free (kv);
  g_free (q);
  g_free (out);
}

/* ---- WHISPER_BENCH_KERNEL=1: one thread, CPU time ---------------------
 *
 * The kernels themselves on the calling thread, timed in its CPU time (a
 * shared machine's preemptions do not count; the pool's spinning workers
 * would make the process's CPU time meaningless): the n-row kernel against
 * the path cpu_linear took for 2..63 rows before it (gemm_task: per 64
 * weight rows, float16 -> float32 into scratch, then one sgemm), on the
 * logits matrix and one layer's linears. */
static double
thread_cpu_s (void)
{
  struct timespec t;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

typedef struct {
  int rows, cols;
  gboolean packed;
  guint16 *w;
} KMat;

static void
kernel_new (const KMat *m, float *y, const float *x, int n)
{
  if (m->packed && n == 1)
    whisper_cpu_gemv_f16_packed (y, m->w, x, 0, m->rows, m->cols, FALSE);
  else if (m->packed)
    whisper_cpu_gemv_f16_packed_rows (y, m->rows, m->w, x, m->cols, n, 0, m->rows, m->cols, FALSE);
  else if (n == 1)
    whisper_cpu_gemv_f16 (y, m->w, x, 0, m->rows, m->cols, FALSE);
  else
    whisper_cpu_gemv_f16_rows (y, m->rows, m->w, x, m->cols, n, 0, m->rows, m->cols, FALSE);
}

static void
kernel_old (const KMat *m, float *y, const float *x, int n, float *tmp)
{
  for (int c0 = 0; c0 < m->rows; c0 += 64) {
    const int c1 = MIN (c0 + 64, m->rows);
    if (m->packed)
      whisper_cpu_unpack_rows (tmp, m->w, c0, c1, m->cols);
    else
      whisper_half_to_float_n (tmp, m->w + (size_t) c0 * m->cols, (size_t) (c1 - c0) * m->cols);
    cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, n, c1 - c0, m->cols, 1.0f, x, m->cols,
                 tmp, m->cols, 0.0f, y + c0, m->rows);
  }
}

static void
bench_kernels (const ModelShape *m, const int *ns, int n_ns)
{
  const int d = m->d;
  const int shapes[7][2] = { { m->n_vocab, d }, { 3 * d, d }, { d, d }, { d, d }, { d, d },
                             { 4 * d, d }, { d, 4 * d } };
  g_autoptr (GRand) r = g_rand_new_with_seed (3);
  openblas_set_num_threads (1);
  int max_n = 1;
  for (int i = 0; i < n_ns; i++)
    max_n = MAX (max_n, ns[i]);
  float *x = g_new (float, (size_t) max_n * 4 * d);
  float *y = g_new (float, (size_t) max_n * MAX (m->n_vocab, 4 * d));
  float *tmp = g_new (float, (size_t) 64 * 4 * d);
  for (size_t i = 0; i < (size_t) max_n * 4 * d; i++)
    x[i] = (float) g_rand_double_range (r, -1.0, 1.0);
  for (int what = 0; what < 2; what++) {
    const int m0 = what == 0 ? 0 : 1, m1 = what == 0 ? 1 : 7;
    size_t bytes = 0;
    for (int k = m0; k < m1; k++)
      bytes += (size_t) shapes[k][0] * shapes[k][1] * 2;
    const int n_sets = (int) MAX (2, (MIN_CYCLE_BYTES + bytes - 1) / bytes);
    KMat *mats = g_new0 (KMat, (size_t) n_sets * 7);
    for (int s = 0; s < n_sets; s++)
      for (int k = m0; k < m1; k++) {
        KMat *km = &mats[s * 7 + k];
        const size_t n = (size_t) shapes[k][0] * shapes[k][1];
        km->rows = shapes[k][0];
        km->cols = shapes[k][1];
        km->packed = whisper_cpu_packable (km->rows, km->cols);
        km->w = g_new (guint16, n);
        float *f = g_new (float, n);
        guint16 *h = km->packed ? g_new (guint16, n) : km->w;
        for (size_t i = 0; i < n; i++)
          f[i] = roundf ((float) g_rand_double_range (r, -64.0, 64.0)) / 1024.0f;
        whisper_float_to_half_exact_n (h, f, n);
        if (km->packed) {
          whisper_cpu_pack_rows (km->w, h, km->rows, km->cols);
          g_free (h);
        }
        g_free (f);
      }
    double t1 = 0.0;
    for (int i = 0; i < n_ns; i++) {
      double best[2] = { 1e9, 1e9 };
      for (int rep = 0; rep < 5; rep++)
        for (int path = 0; path < 2; path++) {
          const double t0 = thread_cpu_s ();
          int calls = 0;
          do {
            for (int k = m0; k < m1; k++) {
              const KMat *km = &mats[(calls % n_sets) * 7 + k];
              if (path == 0)
                kernel_new (km, y, x, ns[i]);
              else
                kernel_old (km, y, x, ns[i], tmp);
            }
            calls++;
          } while (calls < n_sets || thread_cpu_s () - t0 < 0.05);
          best[path] = MIN (best[path], (thread_cpu_s () - t0) / calls);
        }
      if (ns[i] == 1)
        t1 = best[0];
      printf ("| %s | %s | %d | %.3f | %.1f | %s | %.3f | %.2f |\n", m->name,
              what == 0 ? "logits" : "layer", ns[i], best[0] * 1e3, bytes / best[0] / 1e9,
              t1 > 0 ? g_strdup_printf ("%.2f", best[0] / t1) : "-", best[1] * 1e3,
              best[1] / best[0]);
      fflush (stdout);
    }
    for (int s = 0; s < n_sets * 7; s++)
      g_free (mats[s].w);
    g_free (mats);
  }
  g_free (x);
  g_free (y);
  g_free (tmp);
}

static int
parse_list (const char *env, const char *fallback, int *out, int max)
{
  const char *s = g_getenv (env);
  g_auto (GStrv) parts = g_strsplit (s ? s : fallback, " ", -1);
  int n = 0;
  for (int i = 0; parts[i] && n < max; i++)
    if (*parts[i])
      out[n++] = atoi (parts[i]);
  return n;
}

int
main (int argc, char **argv)
{
  int ns[64], threads[8];
  const int n_ns = parse_list ("WHISPER_BENCH_ROWS", "1 2 5 8 16", ns, 64);
  const int n_threads = parse_list ("WHISPER_BENCH_THREADS", "1 2", threads, 8);
  const gboolean kernels = g_getenv ("WHISPER_BENCH_KERNEL") != NULL;
  if (kernels)
    printf ("| model | linear | n | ms per call | GB/s of weights | time / time at n = 1 | "
            "old path (sgemm) ms | old / new |\n|---|---|---|---|---|---|---|---|\n");
  else
    printf ("| model | linear | threads | n | ms per call | GB/s of weights | "
            "time / time at n = 1 |\n|---|---|---|---|---|---|---|\n");
  const char *def[] = { "tiny", "base" };
  const int n_models = argc > 1 ? argc - 1 : 2;
  for (int i = 0; i < n_models; i++) {
    const char *name = argc > 1 ? argv[i + 1] : def[i];
    gboolean found = FALSE;
    for (gsize k = 0; k < G_N_ELEMENTS (models); k++)
      if (strcmp (models[k].name, name) == 0) {
        if (kernels)
          bench_kernels (&models[k], ns, n_ns);
        else if (!g_getenv ("WHISPER_BENCH_NO_LINEAR"))
          bench_model (&models[k], threads, n_threads, ns, n_ns);
        if (g_getenv ("WHISPER_BENCH_ATTENTION"))
          bench_cross_attention (&models[k], threads, n_threads, ns, n_ns);
        found = TRUE;
      }
    if (!found)
      g_error ("unknown model %s (tiny, base, small, medium, large)", name);
  }
  return 0;
}
