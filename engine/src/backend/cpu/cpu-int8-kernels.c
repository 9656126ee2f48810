/* cpu-int8-kernels.c: int8 weights, row quantization and the int8 dot
 * product kernels (cpu-int8.h): portable C, AVX2, AVX-VNNI, AVX512-VNNI.
 *
 * Every kernel computes a tile of exact int32 dot products: up to 4 input
 * rows times 4 weight rows (one input row for decode steps, so that no
 * work is repeated). The AVX2 one multiplies |w| (unsigned) by x with w's
 * sign (vpsignb), so vpmaddubsw's pair sums stay within 2 * 128 * 127 and
 * never saturate. The VNNI ones feed x + 128 (x xor 0x80) as the unsigned
 * operand of vpdpbusd and subtract 128 * sum(w) afterwards. */
#include "cpu-int8.h"

#include "cpu-features.h"
#include "whisper-error.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define INT8_X86 1
#endif

#define TILE 4

/* out[a][b] = dot (x[a], w[b]) over k values (a multiple of 64), for
 * a < na, b < TILE; wsum[b] = sum of w[b]'s values. */
typedef void (*TileFunc) (int32_t out[TILE][TILE], const int8_t *const *x, int na,
                          const int8_t *const *w, const int32_t *wsum, int k);

/* ---- rows and weights ----------------------------------------------- */

int
whisper_cpu_int8_cols_pad (int cols)
{
  return (cols + WHISPER_CPU_INT8_COL_ALIGN - 1) / WHISPER_CPU_INT8_COL_ALIGN *
         WHISPER_CPU_INT8_COL_ALIGN;
}

float
whisper_cpu_int8_quantize_row (int8_t *q, const float *x, int cols, int cols_pad)
{
  float amax = 0.0f;
  for (int c = 0; c < cols; c++)
    amax = fmaxf (amax, fabsf (x[c]));
  if (amax == 0.0f)
    amax = 127.0f;
  /* keeps the scale finite for tiny nonzero rows (model_spec.py's floor) */
  amax = fmaxf (amax, 127.0f / G_MAXFLOAT);
  const float scale = 127.0f / amax;
  for (int c = 0; c < cols; c++)
    q[c] = (int8_t) CLAMP (nearbyintf (x[c] * scale), -127.0f, 127.0f); /* never -128 */
  memset (q + cols, 0, (size_t) (cols_pad - cols));
  return scale;
}

WhisperCpuInt8Weight *
whisper_cpu_int8_weight_new (int rows, int cols)
{
  const int cols_pad = whisper_cpu_int8_cols_pad (cols);
  const size_t head = (sizeof (WhisperCpuInt8Weight) + 63) / 64 * 64;
  const size_t vectors = ((size_t) rows * (sizeof (float) + sizeof (int32_t)) + 63) / 64 * 64;
  /* room to put q on a 64-byte boundary whatever g_malloc's alignment */
  const size_t bytes = head + vectors + (size_t) rows * cols_pad + 64;
  guint8 *block = g_try_malloc0 (bytes);
  if (!block)
    return NULL;
  WhisperCpuInt8Weight *w = (WhisperCpuInt8Weight *) block;
  w->rows = rows;
  w->cols = cols;
  w->cols_pad = cols_pad;
  w->scale = (float *) (block + head);
  w->sum = (int32_t *) (w->scale + rows);
  guint8 *q = block + head + vectors;
  w->q = (int8_t *) (q + (64 - (uintptr_t) q % 64) % 64);
  for (int r = 0; r < rows; r++)
    w->scale[r] = 1.0f;
  return w;
}

static void
update_sum (WhisperCpuInt8Weight *w, int r)
{
  const int8_t *q = w->q + (size_t) r * w->cols_pad;
  int32_t s = 0;
  for (int c = 0; c < w->cols; c++)
    s += q[c];
  w->sum[r] = s;
}

void
whisper_cpu_int8_weight_set_stored (WhisperCpuInt8Weight *w, int r, const int8_t *q, float scale)
{
  memcpy (w->q + (size_t) r * w->cols_pad, q, (size_t) w->cols);
  w->scale[r] = scale;
  update_sum (w, r);
}

void
whisper_cpu_int8_weight_set_f32 (WhisperCpuInt8Weight *w, int r, const float *x)
{
  w->scale[r] = whisper_cpu_int8_quantize_row (w->q + (size_t) r * w->cols_pad, x, w->cols,
                                               w->cols_pad);
  update_sum (w, r);
}

void
whisper_cpu_int8_weight_rows_f32 (const WhisperCpuInt8Weight *w, int r0, int r1, float *dst)
{
  for (int r = r0; r < r1; r++) {
    const int8_t *q = w->q + (size_t) r * w->cols_pad;
    float *d = dst + (size_t) (r - r0) * w->cols;
    for (int c = 0; c < w->cols; c++)
      d[c] = (float) q[c] / w->scale[r];
  }
}

/* ---- tiles ------------------------------------------------------------ */

static void
tile_portable (int32_t out[TILE][TILE], const int8_t *const *x, int na, const int8_t *const *w,
               const int32_t *wsum, int k)
{
  (void) wsum;
  for (int a = 0; a < na; a++)
    for (int b = 0; b < TILE; b++) {
      int32_t s = 0;
      for (int c = 0; c < k; c++)
        s += (int32_t) x[a][c] * w[b][c];
      out[a][b] = s;
    }
}

#ifdef INT8_X86

#define AVX2_TARGET __attribute__ ((target ("avx2")))
#define AVXVNNI_TARGET __attribute__ ((target ("avx2,avxvnni")))
#define AVX512VNNI_TARGET __attribute__ ((target ("avx512f,avx512bw,avx512vnni")))

AVX2_TARGET static inline int32_t
hsum_256 (__m256i v)
{
  __m128i s = _mm_add_epi32 (_mm256_castsi256_si128 (v), _mm256_extracti128_si256 (v, 1));
  s = _mm_add_epi32 (s, _mm_shuffle_epi32 (s, _MM_SHUFFLE (1, 0, 3, 2)));
  s = _mm_add_epi32 (s, _mm_shuffle_epi32 (s, _MM_SHUFFLE (2, 3, 0, 1)));
  return _mm_cvtsi128_si32 (s);
}

/* NA input rows (1 or TILE: a constant in each caller) times 4 weight
 * rows, 2 weight rows at a time (16 vector registers). |w| (a stored -128
 * is 128 unsigned) times x with w's sign: x is never -128 (quantize_row),
 * so each pair sum is at most 2 * 128 * 127 and never saturates. */
AVX2_TARGET static inline __attribute__ ((always_inline)) void
tile_avx2_n (int32_t out[TILE][TILE], const int8_t *const *x, const int NA,
             const int8_t *const *w, int k)
{
  const __m256i ones = _mm256_set1_epi16 (1);
  for (int b0 = 0; b0 < TILE; b0 += 2) {
    __m256i acc[TILE][2];
    for (int a = 0; a < NA; a++)
      acc[a][0] = acc[a][1] = _mm256_setzero_si256 ();
    for (int c = 0; c < k; c += 32) {
      const __m256i w0 = _mm256_loadu_si256 ((const __m256i *) (w[b0] + c));
      const __m256i w1 = _mm256_loadu_si256 ((const __m256i *) (w[b0 + 1] + c));
      const __m256i aw0 = _mm256_abs_epi8 (w0), aw1 = _mm256_abs_epi8 (w1);
      for (int a = 0; a < NA; a++) {
        const __m256i xv = _mm256_loadu_si256 ((const __m256i *) (x[a] + c));
        const __m256i p0 = _mm256_maddubs_epi16 (aw0, _mm256_sign_epi8 (xv, w0));
        const __m256i p1 = _mm256_maddubs_epi16 (aw1, _mm256_sign_epi8 (xv, w1));
        acc[a][0] = _mm256_add_epi32 (acc[a][0], _mm256_madd_epi16 (p0, ones));
        acc[a][1] = _mm256_add_epi32 (acc[a][1], _mm256_madd_epi16 (p1, ones));
      }
    }
    for (int a = 0; a < NA; a++) {
      out[a][b0] = hsum_256 (acc[a][0]);
      out[a][b0 + 1] = hsum_256 (acc[a][1]);
    }
  }
}

AVX2_TARGET static void
tile_avx2 (int32_t out[TILE][TILE], const int8_t *const *x, int na, const int8_t *const *w,
           const int32_t *wsum, int k)
{
  (void) wsum;
  if (na == 1)
    tile_avx2_n (out, x, 1, w, k);
  else
    tile_avx2_n (out, x, TILE, w, k);
}

AVXVNNI_TARGET static inline __attribute__ ((always_inline)) void
tile_avxvnni_n (int32_t out[TILE][TILE], const int8_t *const *x, const int NA,
                const int8_t *const *w, const int32_t *wsum, int k)
{
  const __m256i flip = _mm256_set1_epi8 ((char) 0x80);
  for (int b0 = 0; b0 < TILE; b0 += 2) {
    __m256i acc[TILE][2];
    for (int a = 0; a < NA; a++)
      acc[a][0] = acc[a][1] = _mm256_setzero_si256 ();
    for (int c = 0; c < k; c += 32) {
      const __m256i w0 = _mm256_loadu_si256 ((const __m256i *) (w[b0] + c));
      const __m256i w1 = _mm256_loadu_si256 ((const __m256i *) (w[b0 + 1] + c));
      for (int a = 0; a < NA; a++) {
        const __m256i xu =
            _mm256_xor_si256 (_mm256_loadu_si256 ((const __m256i *) (x[a] + c)), flip);
        acc[a][0] = _mm256_dpbusd_avx_epi32 (acc[a][0], xu, w0);
        acc[a][1] = _mm256_dpbusd_avx_epi32 (acc[a][1], xu, w1);
      }
    }
    for (int a = 0; a < NA; a++) {
      out[a][b0] = hsum_256 (acc[a][0]) - 128 * wsum[b0];
      out[a][b0 + 1] = hsum_256 (acc[a][1]) - 128 * wsum[b0 + 1];
    }
  }
}

AVXVNNI_TARGET static void
tile_avxvnni (int32_t out[TILE][TILE], const int8_t *const *x, int na, const int8_t *const *w,
              const int32_t *wsum, int k)
{
  if (na == 1)
    tile_avxvnni_n (out, x, 1, w, wsum, k);
  else
    tile_avxvnni_n (out, x, TILE, w, wsum, k);
}

AVX512VNNI_TARGET static inline __attribute__ ((always_inline)) void
tile_avx512vnni_n (int32_t out[TILE][TILE], const int8_t *const *x, const int NA,
                   const int8_t *const *w, const int32_t *wsum, int k)
{
  const __m512i flip = _mm512_set1_epi8 ((char) 0x80);
  __m512i acc[TILE][TILE];
  for (int a = 0; a < NA; a++)
    for (int b = 0; b < TILE; b++)
      acc[a][b] = _mm512_setzero_si512 ();
  for (int c = 0; c < k; c += 64) {
    __m512i xu[TILE];
    for (int a = 0; a < NA; a++)
      xu[a] = _mm512_xor_si512 (_mm512_loadu_si512 (x[a] + c), flip);
    for (int b = 0; b < TILE; b++) {
      const __m512i wv = _mm512_loadu_si512 (w[b] + c);
      for (int a = 0; a < NA; a++)
        acc[a][b] = _mm512_dpbusd_epi32 (acc[a][b], xu[a], wv);
    }
  }
  for (int a = 0; a < NA; a++)
    for (int b = 0; b < TILE; b++)
      out[a][b] = _mm512_reduce_add_epi32 (acc[a][b]) - 128 * wsum[b];
}

AVX512VNNI_TARGET static void
tile_avx512vnni (int32_t out[TILE][TILE], const int8_t *const *x, int na,
                 const int8_t *const *w, const int32_t *wsum, int k)
{
  if (na == 1)
    tile_avx512vnni_n (out, x, 1, w, wsum, k);
  else
    tile_avx512vnni_n (out, x, TILE, w, wsum, k);
}

#endif /* INT8_X86 */

/* ---- dispatch ----------------------------------------------------------- */

static const char *const isa_names[WHISPER_CPU_INT8_N_ISA] = {
  "portable", "avx2", "avxvnni", "avx512vnni",
};

const char *
whisper_cpu_int8_isa_name (WhisperCpuInt8Isa isa)
{
  return (unsigned) isa < WHISPER_CPU_INT8_N_ISA ? isa_names[isa] : "unknown";
}

gboolean
whisper_cpu_int8_isa_available (WhisperCpuInt8Isa isa)
{
  switch (isa) {
  case WHISPER_CPU_INT8_PORTABLE:
    return TRUE;
#ifdef INT8_X86
  case WHISPER_CPU_INT8_AVX2:
    return whisper_cpu_have_avx2 ();
  case WHISPER_CPU_INT8_AVXVNNI:
    return whisper_cpu_have_avx2 () && __builtin_cpu_supports ("avxvnni");
  case WHISPER_CPU_INT8_AVX512VNNI:
    return whisper_cpu_have_avx512 () && __builtin_cpu_supports ("avx512bw") &&
           __builtin_cpu_supports ("avx512vnni");
#endif
  default:
    return FALSE;
  }
}

gboolean
whisper_cpu_int8_isa_choose (WhisperCpuInt8Isa *isa, GError **error)
{
  const char *want = g_getenv ("WHISPER_CPU_INT8");
  if (want && *want) {
    for (int i = 0; i < WHISPER_CPU_INT8_N_ISA; i++) {
      if (strcmp (want, isa_names[i]) != 0)
        continue;
      if (!whisper_cpu_int8_isa_available (i)) {
        g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                     "WHISPER_CPU_INT8=%s: this CPU has no %s (or WHISPER_CPU_GENERIC / "
                     "WHISPER_CPU_NO_AVX512 turned it off)", want, want);
        return FALSE;
      }
      *isa = i;
      return TRUE;
    }
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "WHISPER_CPU_INT8=%s is not one of portable, avx2, avxvnni, avx512vnni", want);
    return FALSE;
  }
  *isa = WHISPER_CPU_INT8_PORTABLE;
  for (int i = WHISPER_CPU_INT8_N_ISA - 1; i > 0; i--)
    if (whisper_cpu_int8_isa_available (i)) {
      *isa = i;
      break;
    }
  return TRUE;
}

static TileFunc
tile_func (WhisperCpuInt8Isa isa)
{
  switch (isa) {
#ifdef INT8_X86
  case WHISPER_CPU_INT8_AVX2:
    return tile_avx2;
  case WHISPER_CPU_INT8_AVXVNNI:
    return tile_avxvnni;
  case WHISPER_CPU_INT8_AVX512VNNI:
    return tile_avx512vnni;
#endif
  default:
    return tile_portable;
  }
}

/* ---- the product ------------------------------------------------------- */

void
whisper_cpu_int8_linear_rows (WhisperCpuInt8Isa isa, float *y, int y_stride, const int8_t *xq,
                              const float *x_scale, int n, const WhisperCpuInt8Weight *w, int r0,
                              int r1, gboolean accumulate)
{
  const TileFunc tile = tile_func (isa);
  const int cp = w->cols_pad;
  /* weight rows outside: their tile stays in L1 while the input rows pass */
  for (int r = r0; r < r1; r += TILE) {
    const int nb = MIN (TILE, r1 - r);
    const int8_t *wp[TILE];
    int32_t ws[TILE];
    for (int b = 0; b < TILE; b++) {
      const int rr = r + MIN (b, nb - 1); /* repeat the last row past the end */
      wp[b] = w->q + (size_t) rr * cp;
      ws[b] = w->sum[rr];
    }
    for (int i0 = 0; i0 < n; i0 += TILE) {
      const int na = MIN (TILE, n - i0);
      const int8_t *xp[TILE];
      for (int a = 0; a < TILE; a++)
        xp[a] = xq + (size_t) (i0 + MIN (a, na - 1)) * cp;
      int32_t out[TILE][TILE];
      tile (out, xp, na == 1 ? 1 : TILE, wp, ws, cp);
      for (int a = 0; a < na; a++) {
        float *yr = y + (size_t) (i0 + a) * y_stride + r;
        for (int b = 0; b < nb; b++) {
          const float v = (float) out[a][b] / (x_scale[i0 + a] * w->scale[r + b]);
          yr[b] = accumulate ? yr[b] + v : v;
        }
      }
    }
  }
}
