/* cpu-int8-kernels.c: int8 weights, row quantization and the int8 dot
 * product kernels (cpu-int8.h): portable C, AVX2, AVX-VNNI, AVX512-VNNI.
 *
 * Weights are stored in panels of 16 rows, each group of 4 columns of the
 * 16 rows in 64 consecutive bytes (the layout vpdpbusd multiplies by one
 * broadcast group of 4 input values), so a kernel's sums land in the
 * lanes of one vector, one lane per weight row, and need no horizontal
 * adds. Every kernel computes the exact int32 dot products of 1, 4 or 8
 * input rows (one for decode steps, so that no work is repeated; the VNNI
 * ones take 8 as two tiles of 4) with a run of a panel's columns (1024 at
 * most, which stay in L1; the sums of the runs add up in int32). The AVX2
 * one multiplies |w| (unsigned) by x with w's sign (by xor and subtract),
 * so vpmaddubsw's pair sums stay within 2 * 128 * 127 and never saturate.
 * The VNNI ones take x + 128 (x xor 0x80, as quantize_row
 * stores it for them: one broadcast load per group) as the unsigned operand
 * of vpdpbusd and subtract 128 * sum(w) afterwards. */
#include "cpu-int8.h"

#include "cpu-features.h"
#include "whisper-error.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define INT8_X86 1
#endif

#define TILE 4 /* input rows per kernel call */
#define WIDE 8 /* input rows per call of the many-row passes (AVX2 in one pass) */

/* out[a][j] = dot (x[a], row j of the panel) over k values (a multiple of
 * 64), for a < na (1, TILE or WIDE), j < WHISPER_CPU_INT8_PANEL; sum[j] = sum of
 * row j's values. */
typedef void (*PanelFunc) (int32_t out[WIDE][WHISPER_CPU_INT8_PANEL], const int8_t *const *x,
                           int na, const int8_t *panel, const int32_t *sum, int k);

/* ---- rows and weights ----------------------------------------------- */

int
whisper_cpu_int8_cols_pad (int cols)
{
  return (cols + WHISPER_CPU_INT8_COL_ALIGN - 1) / WHISPER_CPU_INT8_COL_ALIGN *
         WHISPER_CPU_INT8_COL_ALIGN;
}

/* round to nearest even for |v| < 2^22 (here |v| <= 127.x), in the
 * default rounding mode as vcvtps2dq rounds: the same integers as
 * nearbyintf () without its library call */
static inline float
round_even (float v)
{
  return (v + 0x1.8p23f) - 0x1.8p23f;
}

static float
row_amax_portable (const float *x, int cols)
{
  float amax = 0.0f;
  for (int c = 0; c < cols; c++) {
    const float a = fabsf (x[c]);
    amax = a > amax ? a : amax; /* NaN skipped */
  }
  return amax;
}

/* Two roundings (cpu-int8.h): a weight row's values, round (v * scale);
 * an input row's, round (v * scale + 128) - 128, as CTranslate2 rounds
 * them for its u8 x s8 products (the value shifted to 0 .. 255 in float,
 * then rounded: v * scale within a few float steps of a half rounds to
 * the other side now and then). */
#define INPUT_SHIFT 128.0f

static void
quantize_weight_portable (int8_t *q, const float *x, int cols, float scale)
{
  for (int c = 0; c < cols; c++)
    q[c] = (int8_t) CLAMP (round_even (x[c] * scale), -127.0f, 127.0f); /* never -128 */
}

static void
quantize_input_portable (int8_t *q, const float *x, int c0, int cols, float scale)
{
  for (int c = c0; c < cols; c++) {
    const float shifted = x[c] * scale + INPUT_SHIFT; /* no FMA: -std=c11 contracts nothing */
    q[c] = (int8_t) (CLAMP (round_even (shifted), 1.0f, 255.0f) - INPUT_SHIFT);
  }
}

/* the row's scale from its largest magnitude (model_spec.py's rule and
 * floor: finite for tiny nonzero rows) */
static float
row_scale (float amax)
{
  if (amax == 0.0f)
    amax = 127.0f;
  amax = fmaxf (amax, 127.0f / G_MAXFLOAT);
  return 127.0f / amax;
}

#ifdef INT8_X86
__attribute__ ((target ("avx2"))) static float
quantize_avx2 (int8_t *q, const float *x, int cols)
{
  const __m256 abs_mask = _mm256_castsi256_ps (_mm256_set1_epi32 (0x7fffffff));
  __m256 m = _mm256_setzero_ps ();
  int c = 0;
  for (; c + 8 <= cols; c += 8) /* a NaN in the first operand gives the second */
    m = _mm256_max_ps (_mm256_and_ps (_mm256_loadu_ps (x + c), abs_mask), m);
  float lanes[8];
  _mm256_storeu_ps (lanes, m);
  float amax = MAX (row_amax_portable (lanes, 8), row_amax_portable (x + c, cols - c));
  const float scale = row_scale (amax);
  const __m256 vs = _mm256_set1_ps (scale), shift = _mm256_set1_ps (INPUT_SHIFT);
  const __m256i lo = _mm256_set1_epi32 (1), hi = _mm256_set1_epi32 (255),
                back = _mm256_set1_epi32 ((int) INPUT_SHIFT);
  const __m256i order = _mm256_setr_epi32 (0, 4, 1, 5, 2, 6, 3, 7);
  for (c = 0; c + 32 <= cols; c += 32) {
    __m256i v[4];
    for (int k = 0; k < 4; k++) {
      const __m256 shifted = _mm256_add_ps (_mm256_mul_ps (_mm256_loadu_ps (x + c + 8 * k), vs),
                                            shift);
      v[k] = _mm256_sub_epi32 (
          _mm256_min_epi32 (_mm256_max_epi32 (_mm256_cvtps_epi32 (shifted), lo), hi), back);
    }
    const __m256i p = _mm256_packs_epi16 (_mm256_packs_epi32 (v[0], v[1]),
                                          _mm256_packs_epi32 (v[2], v[3]));
    _mm256_storeu_si256 ((__m256i *) (q + c), _mm256_permutevar8x32_epi32 (p, order));
  }
  quantize_input_portable (q, x, c, cols, scale);
  return scale;
}

__attribute__ ((target ("avx512f"))) static float
quantize_avx512 (int8_t *q, const float *x, int cols)
{
  __m512 m = _mm512_setzero_ps ();
  int c = 0;
  for (; c + 16 <= cols; c += 16)
    m = _mm512_max_ps (_mm512_abs_ps (_mm512_loadu_ps (x + c)), m);
  float lanes[16];
  _mm512_storeu_ps (lanes, m);
  float amax = MAX (row_amax_portable (lanes, 16), row_amax_portable (x + c, cols - c));
  const float scale = row_scale (amax);
  const __m512 vs = _mm512_set1_ps (scale), shift = _mm512_set1_ps (INPUT_SHIFT);
  const __m512i lo = _mm512_set1_epi32 (1), hi = _mm512_set1_epi32 (255),
                back = _mm512_set1_epi32 ((int) INPUT_SHIFT);
  for (c = 0; c + 16 <= cols; c += 16) {
    const __m512 shifted = _mm512_add_ps (_mm512_mul_ps (_mm512_loadu_ps (x + c), vs), shift);
    const __m512i v = _mm512_sub_epi32 (
        _mm512_min_epi32 (_mm512_max_epi32 (_mm512_cvtps_epi32 (shifted), lo), hi), back);
    _mm_storeu_si128 ((__m128i *) (q + c), _mm512_cvtsepi32_epi8 (v));
  }
  quantize_input_portable (q, x, c, cols, scale);
  return scale;
}
#endif

float
whisper_cpu_int8_quantize_row (WhisperCpuInt8Isa isa, int8_t *q, const float *x, int cols,
                               int cols_pad)
{
  float scale;
  switch (isa) {
#ifdef INT8_X86
  case WHISPER_CPU_INT8_AVX2:
  case WHISPER_CPU_INT8_AVXVNNI:
    scale = quantize_avx2 (q, x, cols);
    break;
  case WHISPER_CPU_INT8_AVX512VNNI:
    scale = quantize_avx512 (q, x, cols);
    break;
#endif
  default:
    scale = row_scale (row_amax_portable (x, cols));
    quantize_input_portable (q, x, 0, cols, scale);
  }
  memset (q + cols, 0, (size_t) (cols_pad - cols));
  if (whisper_cpu_int8_isa_offsets_x (isa))
    for (int c = 0; c < cols_pad; c++)
      q[c] ^= (int8_t) 0x80; /* x + 128 as unsigned bytes */
  return scale;
}

gboolean
whisper_cpu_int8_isa_offsets_x (WhisperCpuInt8Isa isa)
{
  return isa == WHISPER_CPU_INT8_AVXVNNI || isa == WHISPER_CPU_INT8_AVX512VNNI;
}

WhisperCpuInt8Weight *
whisper_cpu_int8_weight_new (int rows, int cols)
{
  const int cols_pad = whisper_cpu_int8_cols_pad (cols);
  const int rows_pad = (rows + WHISPER_CPU_INT8_PANEL - 1) / WHISPER_CPU_INT8_PANEL *
                       WHISPER_CPU_INT8_PANEL;
  const size_t head = (sizeof (WhisperCpuInt8Weight) + 63) / 64 * 64;
  const size_t vectors = ((size_t) rows_pad * (sizeof (float) + sizeof (int32_t)) + 63) / 64 * 64;
  /* room to put q on a 64-byte boundary whatever g_malloc's alignment */
  const size_t bytes = head + vectors + (size_t) rows_pad * cols_pad + 64;
  guint8 *block = g_try_malloc0 (bytes);
  if (!block)
    return NULL;
  WhisperCpuInt8Weight *w = (WhisperCpuInt8Weight *) block;
  w->rows = rows;
  w->cols = cols;
  w->cols_pad = cols_pad;
  w->scale = (float *) (block + head);
  w->sum = (int32_t *) (w->scale + rows_pad);
  guint8 *q = block + head + vectors;
  w->q = (int8_t *) (q + (64 - (uintptr_t) q % 64) % 64);
  for (int r = 0; r < rows_pad; r++)
    w->scale[r] = 1.0f;
  return w;
}

/* row r from its values q[0 .. cols) into the panels, and its sum */
static void
store_row (WhisperCpuInt8Weight *w, int r, const int8_t *q)
{
  int32_t s = 0;
  for (int c = 0; c < w->cols; c++) {
    w->q[whisper_cpu_int8_index (w, r, c)] = q[c];
    s += q[c];
  }
  w->sum[r] = s;
}

void
whisper_cpu_int8_weight_set_stored (WhisperCpuInt8Weight *w, int r, const int8_t *q, float scale)
{
  store_row (w, r, q);
  w->scale[r] = scale;
}

void
whisper_cpu_int8_weight_set_f32 (WhisperCpuInt8Weight *w, int r, const float *x)
{
  g_autofree int8_t *q = g_new (int8_t, MAX (w->cols, 1));
  w->scale[r] = row_scale (row_amax_portable (x, w->cols));
  quantize_weight_portable (q, x, w->cols, w->scale[r]);
  store_row (w, r, q);
}

void
whisper_cpu_int8_weight_rows_f32 (const WhisperCpuInt8Weight *w, int r0, int r1, float *dst)
{
  for (int r = r0; r < r1; r++) {
    float *d = dst + (size_t) (r - r0) * w->cols;
    const float inverse = 1.0f / w->scale[r]; /* as whisper_tensor_rows_to_f32 () */
    for (int c = 0; c < w->cols; c++)
      d[c] = (float) w->q[whisper_cpu_int8_index (w, r, c)] * inverse;
  }
}

/* ---- panels ------------------------------------------------------------ */

#define PANEL WHISPER_CPU_INT8_PANEL

static inline int32_t
group_of (const int8_t *x, int g)
{
  int32_t v;
  memcpy (&v, x + 4 * g, sizeof v);
  return v;
}

static void
panel_portable (int32_t out[WIDE][PANEL], const int8_t *const *x, int na, const int8_t *panel,
                const int32_t *sum, int k)
{
  (void) sum;
  for (int a = 0; a < na; a++)
    for (int j = 0; j < PANEL; j++) {
      int32_t s = 0;
      for (int c = 0; c < k; c++)
        s += (int32_t) x[a][c] * panel[(c / 4) * 64 + j * 4 + c % 4];
      out[a][j] = s;
    }
}

#ifdef INT8_X86

#define AVX2_TARGET __attribute__ ((target ("avx2")))
#define AVXVNNI_TARGET __attribute__ ((target ("avx2,avxvnni")))
#define AVX512VNNI_TARGET __attribute__ ((target ("avx512f,avx512bw,avx512vnni")))

/* NA input rows (1, TILE or WIDE: a constant in each caller); a panel's group is
 * two ymm halves of 8 rows, taken one half at a time over all k so that
 * the sums, the weights and the input stay in the 16 ymm registers (both
 * halves at once spilled sums to the stack). |w| (a stored -128 is 128
 * unsigned) times x with w's sign: x is never -128 (quantize_row), so
 * each pair sum is at most 2 * 128 * 127 and never saturates. */
AVX2_TARGET static inline __attribute__ ((always_inline)) void
panel_avx2_n (int32_t out[WIDE][PANEL], const int8_t *const *x, const int NA,
              const int8_t *panel, int k)
{
  const __m256i ones = _mm256_set1_epi16 (1);
  for (int h = 0; h < 2; h++) {
    __m256i acc[WIDE];
    for (int a = 0; a < NA; a++)
      acc[a] = _mm256_setzero_si256 ();
    for (int g = 0; g < k / 4; g++) {
      const __m256i w = _mm256_load_si256 ((const __m256i *) (panel + 64 * g + 32 * h));
      const __m256i aw = _mm256_abs_epi8 (w);
      const __m256i neg = _mm256_cmpgt_epi8 (_mm256_setzero_si256 (), w);
      for (int a = 0; a < NA; a++) {
        const __m256i xb = _mm256_set1_epi32 (group_of (x[a], g));
        const __m256i p = _mm256_maddubs_epi16 (aw, _mm256_sub_epi8 (_mm256_xor_si256 (xb, neg), neg));
        acc[a] = _mm256_add_epi32 (acc[a], _mm256_madd_epi16 (p, ones));
      }
    }
    for (int a = 0; a < NA; a++)
      _mm256_storeu_si256 ((__m256i *) (out[a] + 8 * h), acc[a]);
  }
}

AVX2_TARGET static void
panel_avx2 (int32_t out[WIDE][PANEL], const int8_t *const *x, int na, const int8_t *panel,
            const int32_t *sum, int k)
{
  (void) sum;
  if (na == 1)
    panel_avx2_n (out, x, 1, panel, k);
  else if (na == TILE)
    panel_avx2_n (out, x, TILE, panel, k);
  else /* 8 sums, a weight vector and its magnitude and sign, the input: 12 of 16 ymm */
    panel_avx2_n (out, x, WIDE, panel, k);
}

AVXVNNI_TARGET static inline __attribute__ ((always_inline)) void
panel_avxvnni_n (int32_t out[WIDE][PANEL], const int8_t *const *x, const int NA,
                 const int8_t *panel, const int32_t *sum, int k)
{
  __m256i acc[TILE][2];
  for (int a = 0; a < NA; a++)
    acc[a][0] = acc[a][1] = _mm256_setzero_si256 ();
  for (int g = 0; g < k / 4; g++) {
    const __m256i w0 = _mm256_load_si256 ((const __m256i *) (panel + 64 * g));
    const __m256i w1 = _mm256_load_si256 ((const __m256i *) (panel + 64 * g + 32));
    for (int a = 0; a < NA; a++) {
      const __m256i xu = _mm256_set1_epi32 (group_of (x[a], g));
      acc[a][0] = _mm256_dpbusd_avx_epi32 (acc[a][0], xu, w0);
      acc[a][1] = _mm256_dpbusd_avx_epi32 (acc[a][1], xu, w1);
    }
  }
  const __m256i s0 = _mm256_slli_epi32 (_mm256_loadu_si256 ((const __m256i *) sum), 7);
  const __m256i s1 = _mm256_slli_epi32 (_mm256_loadu_si256 ((const __m256i *) (sum + 8)), 7);
  for (int a = 0; a < NA; a++) {
    _mm256_storeu_si256 ((__m256i *) out[a], _mm256_sub_epi32 (acc[a][0], s0));
    _mm256_storeu_si256 ((__m256i *) (out[a] + 8), _mm256_sub_epi32 (acc[a][1], s1));
  }
}

AVXVNNI_TARGET static void
panel_avxvnni (int32_t out[WIDE][PANEL], const int8_t *const *x, int na, const int8_t *panel,
               const int32_t *sum, int k)
{
  if (na == 1)
    panel_avxvnni_n (out, x, 1, panel, sum, k);
  else
    for (int a = 0; a < na; a += TILE) /* WIDE: two tiles */
      panel_avxvnni_n (out + a, x + a, TILE, panel, sum, k);
}

/* x + 128 (stored so by quantize_row) unsigned times w, minus 128 sum(w) */
AVX512VNNI_TARGET static inline __attribute__ ((always_inline)) void
panel_avx512vnni_n (int32_t out[WIDE][PANEL], const int8_t *const *x, const int NA,
                    const int8_t *panel, const int32_t *sum, int k)
{
  /* one input row: two sums (even and odd groups), so that the adds do
   * not wait on each other */
  __m512i acc[TILE][2];
  for (int a = 0; a < NA; a++)
    acc[a][0] = acc[a][1] = _mm512_setzero_si512 ();
  int g = 0;
  for (; g + 2 <= k / 4; g += 2) {
    const __m512i w0 = _mm512_load_si512 (panel + 64 * g);
    const __m512i w1 = _mm512_load_si512 (panel + 64 * (g + 1));
    for (int a = 0; a < NA; a++) {
      acc[a][0] = _mm512_dpbusd_epi32 (
          acc[a][0], _mm512_set1_epi32 (group_of (x[a], g)), w0);
      acc[a][1] = _mm512_dpbusd_epi32 (
          acc[a][1], _mm512_set1_epi32 (group_of (x[a], g + 1)), w1);
    }
  }
  for (; g < k / 4; g++) {
    const __m512i w0 = _mm512_load_si512 (panel + 64 * g);
    for (int a = 0; a < NA; a++)
      acc[a][0] = _mm512_dpbusd_epi32 (
          acc[a][0], _mm512_set1_epi32 (group_of (x[a], g)), w0);
  }
  const __m512i s = _mm512_slli_epi32 (_mm512_loadu_si512 (sum), 7);
  for (int a = 0; a < NA; a++)
    _mm512_storeu_si512 (out[a], _mm512_sub_epi32 (_mm512_add_epi32 (acc[a][0], acc[a][1]), s));
}

/* One input row (decode steps): four sums, so that the dot products do
 * not wait on each other's latency (two measured slower than AVX2 here). */
AVX512VNNI_TARGET static void
panel_avx512vnni_1 (int32_t out[WIDE][PANEL], const int8_t *x, const int8_t *panel,
                    const int32_t *sum, int k)
{
  __m512i acc[4];
  for (int j = 0; j < 4; j++)
    acc[j] = _mm512_setzero_si512 ();
  int g = 0;
  for (; g + 4 <= k / 4; g += 4)
    for (int j = 0; j < 4; j++)
      acc[j] = _mm512_dpbusd_epi32 (
          acc[j], _mm512_set1_epi32 (group_of (x, g + j)),
          _mm512_load_si512 (panel + 64 * (g + j)));
  for (; g < k / 4; g++)
    acc[0] = _mm512_dpbusd_epi32 (acc[0],
                                  _mm512_set1_epi32 (group_of (x, g)),
                                  _mm512_load_si512 (panel + 64 * g));
  const __m512i total = _mm512_add_epi32 (_mm512_add_epi32 (acc[0], acc[1]),
                                          _mm512_add_epi32 (acc[2], acc[3]));
  _mm512_storeu_si512 (out[0], _mm512_sub_epi32 (total,
                                                 _mm512_slli_epi32 (_mm512_loadu_si512 (sum), 7)));
}

AVX512VNNI_TARGET static void
panel_avx512vnni (int32_t out[WIDE][PANEL], const int8_t *const *x, int na, const int8_t *panel,
                  const int32_t *sum, int k)
{
  if (na == 1)
    panel_avx512vnni_1 (out, x[0], panel, sum, k);
  else
    for (int a = 0; a < na; a += TILE) /* WIDE: two tiles */
      panel_avx512vnni_n (out + a, x + a, TILE, panel, sum, k);
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

static PanelFunc
panel_func (WhisperCpuInt8Isa isa)
{
  switch (isa) {
#ifdef INT8_X86
  case WHISPER_CPU_INT8_AVX2:
    return panel_avx2;
  case WHISPER_CPU_INT8_AVXVNNI:
    return panel_avxvnni;
  case WHISPER_CPU_INT8_AVX512VNNI:
    return panel_avx512vnni;
#endif
  default:
    return panel_portable;
  }
}

/* ---- the product ------------------------------------------------------- */

#define ROW_BLOCK 256 /* input rows whose sums wait for the last column chunk */
#define K_CHUNK 1024  /* columns per pass: 16 KiB of a panel, which stays in L1 */

/* y[i * y_stride + b] = (accumulate ? y : 0) + sums[i][b] * (1 / x_scale[i]) / ws[b],
 * b in [b0, b1): CTranslate2's order (dequantize_gemm_output in
 * src/cpu/kernels.cc: times the input row's reciprocal scale, then over the
 * weight row's), the same for every path (vmulps and vdivps round as the
 * scalar operations) */
static void
scale_out (float *y, int y_stride, const int32_t (*sums)[PANEL], const float *x_scale, int n,
           const float *ws, int b0, int b1, gboolean accumulate)
{
  for (int a = 0; a < n; a++) {
    float *yr = y + (size_t) a * y_stride;
    for (int b = b0; b < b1; b++) {
      const float v = (float) sums[a][b] * (1.0f / x_scale[a]) / ws[b];
      yr[b] = accumulate ? yr[b] + v : v;
    }
  }
}

#ifdef INT8_X86
AVX2_TARGET static void
scale_out_avx2 (float *y, int y_stride, const int32_t (*sums)[PANEL], const float *x_scale, int n,
                const float *ws, int b0, int b1, gboolean accumulate)
{
  if (b0 != 0 || b1 != PANEL) {
    scale_out (y, y_stride, sums, x_scale, n, ws, b0, b1, accumulate);
    return;
  }
  const __m256 w0 = _mm256_loadu_ps (ws), w1 = _mm256_loadu_ps (ws + 8);
  for (int a = 0; a < n; a++) {
    float *yr = y + (size_t) a * y_stride;
    const __m256 inverse_xs = _mm256_set1_ps (1.0f / x_scale[a]);
    __m256 v0 = _mm256_div_ps (
        _mm256_mul_ps (_mm256_cvtepi32_ps (_mm256_loadu_si256 ((const __m256i *) sums[a])),
                       inverse_xs),
        w0);
    __m256 v1 = _mm256_div_ps (
        _mm256_mul_ps (_mm256_cvtepi32_ps (_mm256_loadu_si256 ((const __m256i *) (sums[a] + 8))),
                       inverse_xs),
        w1);
    if (accumulate) {
      v0 = _mm256_add_ps (_mm256_loadu_ps (yr), v0);
      v1 = _mm256_add_ps (_mm256_loadu_ps (yr + 8), v1);
    }
    _mm256_storeu_ps (yr, v0);
    _mm256_storeu_ps (yr + 8, v1);
  }
}
#endif

void
whisper_cpu_int8_linear_rows (WhisperCpuInt8Isa isa, float *y, int y_stride, const int8_t *xq,
                              const float *x_scale, int n, const WhisperCpuInt8Weight *w, int r0,
                              int r1, gboolean accumulate)
{
  const PanelFunc panel = panel_func (isa);
  const int cp = w->cols_pad;
  static const int32_t no_sum[PANEL]; /* the VNNI offset taken once, with the first chunk */
#ifdef INT8_X86
  const gboolean vector_out = isa != WHISPER_CPU_INT8_PORTABLE;
#endif
  for (int ib = 0; ib < n; ib += ROW_BLOCK) {
    const int nb = MIN (ROW_BLOCK, n - ib);
    /* panels outside: each (a chunk of its columns at a time) stays in L1
     * while the input rows pass */
    for (int p = r0 / PANEL; p * PANEL < r1; p++) {
      const int b0 = MAX (r0 - p * PANEL, 0), b1 = MIN (r1 - p * PANEL, PANEL);
      const int8_t *wp = w->q + (size_t) p * PANEL * cp;
      /* the first column chunk's sums go straight into `sums` (a call's
       * repeated last rows land past its rows, overwritten by the next
       * call or unused); later chunks add theirs */
      int32_t sums[ROW_BLOCK + WIDE][PANEL];
      for (int kc = 0; kc < cp; kc += K_CHUNK) {
        const int k = MIN (K_CHUNK, cp - kc);
        for (int i0 = 0; i0 < nb;) {
          /* WIDE rows a call, then TILE (the last row repeated), then one */
          const int left = nb - i0, call = left >= WIDE ? WIDE : left > 1 ? TILE : 1;
          const int na = MIN (call, left);
          const int8_t *xp[WIDE];
          for (int a = 0; a < call; a++)
            xp[a] = xq + (size_t) (ib + i0 + MIN (a, na - 1)) * cp + kc;
          int32_t out[WIDE][PANEL];
          panel (kc == 0 ? sums + i0 : out, xp, call, wp + (size_t) kc * PANEL,
                 kc == 0 ? w->sum + (size_t) p * PANEL : no_sum, k);
          if (kc > 0)
            for (int a = 0; a < na; a++)
              for (int b = 0; b < PANEL; b++)
                sums[i0 + a][b] += out[a][b];
          i0 += na;
        }
      }
      float *yb = y + (size_t) ib * y_stride + (size_t) p * PANEL;
      const float *ws = w->scale + (size_t) p * PANEL;
#ifdef INT8_X86
      if (vector_out) {
        scale_out_avx2 (yb, y_stride, (const int32_t (*)[PANEL]) sums, x_scale + ib, nb, ws, b0,
                        b1, accumulate);
        continue;
      }
#endif
      scale_out (yb, y_stride, (const int32_t (*)[PANEL]) sums, x_scale + ib, nb, ws, b0, b1,
                 accumulate);
    }
  }
}
