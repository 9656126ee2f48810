/* cpu-bf16-matmul.c: bfloat16 matrix products through oneDNN (see
 * cpu-bf16-matmul.h). oneDNN's C API:
 * https://oneapi-src.github.io/oneDNN/v2.6/group_dnnl_api.html (Debian
 * bookworm packages v2.6.3 as libdnnl-dev).
 *
 * Layouts handed to oneDNN (matmul computes dst[M, N] = src[M, K] wei[K, N]):
 * - linear: src = x rounded to bfloat16 [n, cols] dense (this thread's
 *   staging buffer); wei = W^T, W [rows, cols] reordered once into the
 *   blocked layout the kernel asks for (format_tag_any); dst = y [n, rows]
 *   dense (a strided dst makes oneDNN 2.6 leave its brgemm kernels for a
 *   slower generic one, so the backend sends only dense ones);
 *   bias [1, rows]; accumulate = a sum post-op.
 * - plain: src = a [M, K] dense; wei = b as [K, N] (tag ab) or its
 *   transpose (tag ba); dst dense; scale = output scale.
 * The blocked weight layout depends only on (K, N) here (checked for block
 * heights 1 to 1500), so one packed copy serves every block height. */
#include "cpu-bf16-matmul.h"

#include "aligned-memory.h"
#include "cpu-simd.h"
#include "whisper-error.h"

#include <string.h>

static void
whisper_bf16_from_f32_generic (uint16_t *dst, const float *src, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy (&u, &src[i], sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
    dst[i] = (uint16_t) (u >> 16);
  }
}

#if defined(HAVE_X86)
#include <immintrin.h>
#include "cpu-features.h"

/* the same rounding, 16 floats at a time (AVX-512F integer ops) */
__attribute__ ((target ("avx512f"))) static void
bf16_from_f32_avx512 (uint16_t *dst, const float *src, size_t n)
{
  const __m512i bias = _mm512_set1_epi32 (0x7fff), one = _mm512_set1_epi32 (1);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512i u = _mm512_castps_si512 (_mm512_loadu_ps (src + i));
    __m512i lsb = _mm512_and_si512 (_mm512_srli_epi32 (u, 16), one);
    u = _mm512_add_epi32 (u, _mm512_add_epi32 (lsb, bias));
    _mm256_storeu_si256 ((__m256i *) (dst + i), _mm512_cvtepi32_epi16 (_mm512_srli_epi32 (u, 16)));
  }
  whisper_bf16_from_f32_generic (dst + i, src + i, n - i);
}
#endif

void
whisper_bf16_from_f32 (uint16_t *dst, const float *src, size_t n)
{
#if defined(HAVE_X86)
  if (whisper_cpu_have_avx512 ()) {
    bf16_from_f32_avx512 (dst, src, n);
    return;
  }
#endif
  whisper_bf16_from_f32_generic (dst, src, n);
}

#ifdef HAVE_ONEDNN

#include <oneapi/dnnl/dnnl.h>
#include "cpu-omp-scope.h"

enum { KIND_LINEAR = 1, KIND_PLAIN = 2 };
enum { KEY_BIAS = 1 << 0, KEY_ACCUMULATE = 1 << 1, KEY_B_TRANSPOSED = 1 << 2 };

/* What makes two primitives differ. */
typedef struct {
  int kind, M, K, N, flags;
  guint32 scale_bits;
} PrimKey;

typedef struct {
  dnnl_primitive_t prim;
  dnnl_memory_desc_t src_md, wei_md, dst_md, bias_md, scratch_md;
} PrimEntry;

typedef struct {
  dnnl_stream_t stream;
  void *scratch;        /* the primitives' scratchpad (user-managed) */
  size_t scratch_size;
  uint16_t *src;        /* x rounded to bfloat16 */
  size_t src_size;      /* in elements */
} ThreadState;

struct _WhisperBf16Matmul {
  dnnl_engine_t engine;
  int n_threads;
  ThreadState *threads;
  GMutex lock;          /* the cache */
  GHashTable *cache;    /* PrimKey -> PrimEntry */
  char impl[96];
};

struct _WhisperBf16Weight {
  void *data;           /* blocked bfloat16, oneDNN-allocated size */
  size_t size;
  dnnl_memory_desc_t md;
  int rows, cols;
};

gboolean
whisper_bf16_matmul_available (void)
{
  return TRUE;
}

static guint
prim_key_hash (gconstpointer p)
{
  const PrimKey *k = p;
  guint h = (guint) k->kind;
  h = h * 31u + (guint) k->M;
  h = h * 31u + (guint) k->K;
  h = h * 31u + (guint) k->N;
  h = h * 31u + (guint) k->flags;
  return h * 31u + k->scale_bits;
}

static gboolean
prim_key_equal (gconstpointer a, gconstpointer b)
{
  return memcmp (a, b, sizeof (PrimKey)) == 0;
}

static void
prim_entry_free (gpointer p)
{
  PrimEntry *e = p;
  dnnl_primitive_destroy (e->prim);
  g_free (e);
}

static const char *
status_name (dnnl_status_t s)
{
  switch (s) {
  case dnnl_out_of_memory: return "out of memory";
  case dnnl_invalid_arguments: return "invalid arguments";
  case dnnl_unimplemented: return "no implementation for this CPU";
  default: return "failure";
  }
}

/* The primitive descriptor of a matmul (not cached). */
static dnnl_status_t
matmul_pd (WhisperBf16Matmul *m, const PrimKey *k, const dnnl_memory_desc_t *wei_md,
           dnnl_primitive_desc_t *pd)
{
  dnnl_memory_desc_t src, wei, dst, bias;
  dnnl_status_t s;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t po = NULL;

  if ((s = dnnl_memory_desc_init_by_tag (&src, 2, (dnnl_dims_t) { k->M, k->K }, dnnl_bf16,
                                         dnnl_ab)))
    return s;
  if (wei_md)
    wei = *wei_md;
  else if ((s = dnnl_memory_desc_init_by_tag (&wei, 2, (dnnl_dims_t) { k->K, k->N }, dnnl_bf16,
                                              k->kind == KIND_LINEAR ? dnnl_format_tag_any
                                              : (k->flags & KEY_B_TRANSPOSED) ? dnnl_ba
                                              : dnnl_ab)))
    return s;
  if ((s = dnnl_memory_desc_init_by_tag (&dst, 2, (dnnl_dims_t) { k->M, k->N }, dnnl_f32,
                                         dnnl_ab)))
    return s;
  if ((k->flags & KEY_BIAS) &&
      (s = dnnl_memory_desc_init_by_tag (&bias, 2, (dnnl_dims_t) { 1, k->N }, dnnl_f32, dnnl_ab)))
    return s;

  dnnl_matmul_desc_t desc;
  if ((s = dnnl_matmul_desc_init (&desc, &src, &wei, (k->flags & KEY_BIAS) ? &bias : NULL, &dst)))
    return s;
  if ((s = dnnl_primitive_attr_create (&attr)))
    return s;
  s = dnnl_primitive_attr_set_scratchpad_mode (attr, dnnl_scratchpad_mode_user);
  if (!s && (k->flags & KEY_ACCUMULATE)) {
    s = dnnl_post_ops_create (&po);
    if (!s)
      s = dnnl_post_ops_append_sum (po, 1.0f);
    if (!s)
      s = dnnl_primitive_attr_set_post_ops (attr, po);
  }
  if (!s && k->scale_bits) {
    float scale;
    memcpy (&scale, &k->scale_bits, sizeof scale);
    s = dnnl_primitive_attr_set_output_scales (attr, 1, 0, &scale);
  }
  if (!s)
    s = dnnl_primitive_desc_create (pd, &desc, attr, m->engine, NULL);
  if (po)
    dnnl_post_ops_destroy (po);
  dnnl_primitive_attr_destroy (attr);
  return s;
}

/* The cached primitive for k (created on first use); NULL if oneDNN
 * cannot make it (logged once per shape). */
static const PrimEntry *
lookup_primitive (WhisperBf16Matmul *m, const PrimKey *k, const dnnl_memory_desc_t *wei_md)
{
  g_mutex_lock (&m->lock);
  PrimEntry *e = g_hash_table_lookup (m->cache, k);
  if (!e && !g_hash_table_contains (m->cache, k)) {
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s = matmul_pd (m, k, wei_md, &pd);
    if (!s) {
      e = g_new0 (PrimEntry, 1);
      e->src_md = *dnnl_primitive_desc_query_md (pd, dnnl_query_src_md, 0);
      e->wei_md = *dnnl_primitive_desc_query_md (pd, dnnl_query_weights_md, 0);
      e->dst_md = *dnnl_primitive_desc_query_md (pd, dnnl_query_dst_md, 0);
      if (k->flags & KEY_BIAS)
        e->bias_md = *dnnl_primitive_desc_query_md (pd, dnnl_query_weights_md, 1);
      e->scratch_md = *dnnl_primitive_desc_query_md (pd, dnnl_query_scratchpad_md, 0);
      s = dnnl_primitive_create (&e->prim, pd);
      if (s)
        g_clear_pointer (&e, g_free);
    }
    if (pd)
      dnnl_primitive_desc_destroy (pd);
    if (s)
      g_warning ("cpu backend: oneDNN cannot make a bfloat16 matmul of %d x %d x %d (%s); "
                 "this shape runs in float32", k->M, k->K, k->N, status_name (s));
    /* a failure is cached as NULL, so it is reported once */
    g_hash_table_insert (m->cache, g_memdup2 (k, sizeof *k), e);
  }
  g_mutex_unlock (&m->lock);
  return e;
}

static void *
grow (void **buf, size_t *size, size_t bytes)
{
  if (bytes > *size) {
    whisper_aligned_free (*buf);
    *buf = whisper_aligned_alloc (bytes);
    if (!*buf)
      g_error ("cpu backend: cannot allocate %zu bytes for bfloat16 products", bytes);
    *size = bytes;
  }
  return *buf;
}

/* Executes e with the given buffers on this thread's stream. */
static gboolean
execute (WhisperBf16Matmul *m, int thread, const PrimEntry *e, const void *src, const void *wei,
         void *dst, const float *bias)
{
  ThreadState *t = &m->threads[thread];
  const size_t scratch_bytes = dnnl_memory_desc_get_size (&e->scratch_md);
  void *scratch = scratch_bytes ? grow (&t->scratch, &t->scratch_size, scratch_bytes) : NULL;
  dnnl_memory_t mem[5] = { NULL };
  dnnl_exec_arg_t args[5];
  int n = 0;
  dnnl_status_t s = dnnl_success;
  struct { int arg; const dnnl_memory_desc_t *md; const void *p; } plan[] = {
    { DNNL_ARG_SRC, &e->src_md, src },
    { DNNL_ARG_WEIGHTS, &e->wei_md, wei },
    { DNNL_ARG_DST, &e->dst_md, dst },
    { DNNL_ARG_BIAS, &e->bias_md, bias },
    { DNNL_ARG_SCRATCHPAD, &e->scratch_md, scratch },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (plan) && !s; i++) {
    if (!plan[i].p)
      continue;
    s = dnnl_memory_create (&mem[n], plan[i].md, m->engine, (void *) plan[i].p);
    if (!s) {
      args[n].arg = plan[i].arg;
      args[n].memory = mem[n];
      n++;
    }
  }
  if (!s)
    s = dnnl_primitive_execute (e->prim, t->stream, n, args);
  if (!s)
    s = dnnl_stream_wait (t->stream);
  for (int i = 0; i < n; i++)
    dnnl_memory_destroy (mem[i]);
  if (s)
    g_warning ("cpu backend: a oneDNN bfloat16 matmul failed (%s)", status_name (s));
  return s == dnnl_success;
}

WhisperBf16Matmul *
whisper_bf16_matmul_new (int n_threads, GError **error)
{
#if defined(HAVE_X86)
  /* what a CPU without AVX-512 would answer, also where
   * WHISPER_CPU_NO_AVX512 or WHISPER_CPU_GENERIC turns it off */
  if (!whisper_cpu_have_avx512 ()) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "precision 'bfloat16' needs AVX-512, which this CPU lacks or "
                 "WHISPER_CPU_NO_AVX512 / WHISPER_CPU_GENERIC turned off (use precision 'int8' "
                 "or 'fast')");
    return NULL;
  }
#endif
  WhisperBf16Matmul *m = g_new0 (WhisperBf16Matmul, 1);
  dnnl_status_t s;
  WhisperOmpScope omp = whisper_omp_scope_enter ();

  m->n_threads = n_threads;
  g_mutex_init (&m->lock);
  m->cache = g_hash_table_new_full (prim_key_hash, prim_key_equal, g_free, prim_entry_free);
  m->threads = g_new0 (ThreadState, n_threads);
  s = dnnl_engine_create (&m->engine, dnnl_cpu, 0);
  for (int i = 0; i < n_threads && !s; i++)
    s = dnnl_stream_create (&m->threads[i].stream, m->engine, dnnl_stream_default_flags);
  if (s) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "precision 'bfloat16': oneDNN cannot start on this CPU (%s)", status_name (s));
    whisper_omp_scope_leave (omp);
    whisper_bf16_matmul_free (m);
    return NULL;
  }

  /* can it make a bfloat16 product here at all (it needs AVX-512)? */
  PrimKey probe = { KIND_PLAIN, 32, 64, 64, KEY_B_TRANSPOSED, 0 };
  dnnl_primitive_desc_t pd = NULL;
  s = matmul_pd (m, &probe, NULL, &pd);
  whisper_omp_scope_leave (omp);
  if (s) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_DEVICE,
                 "precision 'bfloat16': oneDNN has no bfloat16 matrix product for this CPU (%s); "
                 "it needs AVX-512 (use precision 'int8' or 'fast')", status_name (s));
    whisper_bf16_matmul_free (m);
    return NULL;
  }
  const char *impl = "";
  dnnl_primitive_desc_query (pd, dnnl_query_impl_info_str, 0, &impl);
  g_strlcpy (m->impl, impl, sizeof m->impl);
  dnnl_primitive_desc_destroy (pd);
  return m;
}

void
whisper_bf16_matmul_free (WhisperBf16Matmul *m)
{
  if (!m)
    return;
  for (int i = 0; i < m->n_threads; i++) {
    if (m->threads[i].stream)
      dnnl_stream_destroy (m->threads[i].stream);
    whisper_aligned_free (m->threads[i].scratch);
    whisper_aligned_free (m->threads[i].src);
  }
  g_free (m->threads);
  g_hash_table_destroy (m->cache);
  g_mutex_clear (&m->lock);
  if (m->engine)
    dnnl_engine_destroy (m->engine);
  g_free (m);
}

const char *
whisper_bf16_matmul_impl (const WhisperBf16Matmul *m)
{
  return m->impl;
}

WhisperBf16Weight *
whisper_bf16_weight_new (WhisperBf16Matmul *m, const float *w, int rows, int cols,
                         GError **error)
{
  WhisperOmpScope omp = whisper_omp_scope_enter ();
  PrimKey k = { KIND_LINEAR, 256, cols, rows, 0, 0 };
  dnnl_primitive_desc_t pd = NULL, rpd = NULL;
  dnnl_primitive_t reorder = NULL;
  dnnl_memory_desc_t plain;
  dnnl_memory_t src_mem = NULL, dst_mem = NULL;
  dnnl_stream_t stream = m->threads[0].stream;
  const size_t n = (size_t) rows * cols;
  uint16_t *half = whisper_aligned_alloc (MAX (n, 1) * sizeof (uint16_t));
  WhisperBf16Weight *bw = g_new0 (WhisperBf16Weight, 1);
  dnnl_status_t s = half ? dnnl_success : dnnl_out_of_memory;

  bw->rows = rows;
  bw->cols = cols;
  if (!s)
    s = matmul_pd (m, &k, NULL, &pd);
  if (!s) {
    bw->md = *dnnl_primitive_desc_query_md (pd, dnnl_query_weights_md, 0);
    bw->size = dnnl_memory_desc_get_size (&bw->md);
    bw->data = whisper_aligned_alloc (MAX (bw->size, 1));
    if (!bw->data)
      s = dnnl_out_of_memory;
  }
  /* W [rows, cols] row-major is W^T [cols, rows] in tag ba */
  if (!s) {
    whisper_bf16_from_f32 (half, w, n);
    s = dnnl_memory_desc_init_by_tag (&plain, 2, (dnnl_dims_t) { cols, rows }, dnnl_bf16, dnnl_ba);
  }
  if (!s)
    s = dnnl_memory_create (&src_mem, &plain, m->engine, half);
  if (!s)
    s = dnnl_memory_create (&dst_mem, &bw->md, m->engine, bw->data);
  if (!s)
    s = dnnl_reorder_primitive_desc_create (&rpd, &plain, m->engine, &bw->md, m->engine, NULL);
  if (!s)
    s = dnnl_primitive_create (&reorder, rpd);
  if (!s) {
    dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, src_mem }, { DNNL_ARG_TO, dst_mem } };
    s = dnnl_primitive_execute (reorder, stream, 2, args);
  }
  if (!s)
    s = dnnl_stream_wait (stream);

  if (reorder)
    dnnl_primitive_destroy (reorder);
  if (rpd)
    dnnl_primitive_desc_destroy (rpd);
  if (pd)
    dnnl_primitive_desc_destroy (pd);
  if (src_mem)
    dnnl_memory_destroy (src_mem);
  if (dst_mem)
    dnnl_memory_destroy (dst_mem);
  whisper_aligned_free (half);
  whisper_omp_scope_leave (omp);
  if (s) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                 "cpu backend: cannot lay out a %d x %d weight in bfloat16 (%s)", rows, cols,
                 status_name (s));
    whisper_bf16_weight_free (bw);
    return NULL;
  }
  return bw;
}

void
whisper_bf16_weight_free (WhisperBf16Weight *w)
{
  if (!w)
    return;
  whisper_aligned_free (w->data);
  g_free (w);
}

size_t
whisper_bf16_weight_size (const WhisperBf16Weight *w)
{
  return w->size;
}

gboolean
whisper_bf16_matmul_linear (WhisperBf16Matmul *m, int thread, float *y, const float *x,
                            int x_stride, const WhisperBf16Weight *w, const float *bias, int n,
                            gboolean accumulate)
{
  WhisperOmpScope omp = whisper_omp_scope_enter ();
  const PrimKey k = { KIND_LINEAR, n, w->cols, w->rows,
                      (bias ? KEY_BIAS : 0) | (accumulate ? KEY_ACCUMULATE : 0), 0 };
  const PrimEntry *e = lookup_primitive (m, &k, &w->md);
  gboolean ok = FALSE;
  if (e) {
    ThreadState *t = &m->threads[thread];
    size_t bytes = (size_t) n * w->cols * sizeof (uint16_t);
    uint16_t *src = grow ((void **) &t->src, &t->src_size, bytes);
    for (int i = 0; i < n; i++)
      whisper_bf16_from_f32 (src + (size_t) i * w->cols, x + (size_t) i * x_stride, w->cols);
    ok = execute (m, thread, e, src, w->data, y, bias);
  }
  whisper_omp_scope_leave (omp);
  return ok;
}

gboolean
whisper_bf16_matmul_plain (WhisperBf16Matmul *m, int thread, float *c, const uint16_t *a,
                           const uint16_t *b, gboolean b_transposed, int M, int K, int N,
                           float scale)
{
  WhisperOmpScope omp = whisper_omp_scope_enter ();
  PrimKey k = { KIND_PLAIN, M, K, N, b_transposed ? KEY_B_TRANSPOSED : 0, 0 };
  if (scale != 1.0f)
    memcpy (&k.scale_bits, &scale, sizeof scale);
  const PrimEntry *e = lookup_primitive (m, &k, NULL);
  gboolean ok = e && execute (m, thread, e, a, b, c, NULL);
  whisper_omp_scope_leave (omp);
  return ok;
}

#else /* !HAVE_ONEDNN */

gboolean
whisper_bf16_matmul_available (void)
{
  return FALSE;
}

WhisperBf16Matmul *
whisper_bf16_matmul_new (int n_threads, GError **error)
{
  (void) n_threads;
  g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
               "precision 'bfloat16' needs oneDNN, and this build has none (install libdnnl-dev "
               "and configure again with -Donednn=enabled)");
  return NULL;
}

void
whisper_bf16_matmul_free (WhisperBf16Matmul *m)
{
  (void) m;
}

const char *
whisper_bf16_matmul_impl (const WhisperBf16Matmul *m)
{
  (void) m;
  return "";
}

WhisperBf16Weight *
whisper_bf16_weight_new (WhisperBf16Matmul *m, const float *w, int rows, int cols,
                         GError **error)
{
  (void) m, (void) w, (void) rows, (void) cols;
  g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING, "no oneDNN");
  return NULL;
}

void
whisper_bf16_weight_free (WhisperBf16Weight *w)
{
  (void) w;
}

size_t
whisper_bf16_weight_size (const WhisperBf16Weight *w)
{
  (void) w;
  return 0;
}

gboolean
whisper_bf16_matmul_linear (WhisperBf16Matmul *m, int thread, float *y, const float *x,
                            int x_stride, const WhisperBf16Weight *w, const float *bias, int n,
                            gboolean accumulate)
{
  (void) m, (void) thread, (void) y, (void) x, (void) x_stride, (void) w, (void) bias, (void) n,
      (void) accumulate;
  return FALSE;
}

gboolean
whisper_bf16_matmul_plain (WhisperBf16Matmul *m, int thread, float *c, const uint16_t *a,
                           const uint16_t *b, gboolean b_transposed, int M, int K, int N,
                           float scale)
{
  (void) m, (void) thread, (void) c, (void) a, (void) b, (void) b_transposed, (void) M,
      (void) K, (void) N, (void) scale;
  return FALSE;
}

#endif
