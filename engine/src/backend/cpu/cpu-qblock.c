/* cpu-qblock.c: the portable block kernels, the input quantizer and the
 * choice of a kernel set (cpu-qblock.h). */
#include "cpu-qblock.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "cpu-features.h"
#include "qblock.h"
#include "whisper-error.h"

static void
quantize_rows_portable (float *d, float *s, int8_t *q, const float *x, int x_stride, int cols,
                        int i0, int i1)
{
  const int nb = cols / 32;
  for (int i = i0; i < i1; i++) {
    const float *row = x + (size_t) i * x_stride;
    for (int b = 0; b < nb; b++) {
      const float *v = row + b * 32;
      float amax = 0.0f;
      for (int j = 0; j < 32; j++)
        amax = fmaxf (amax, fabsf (v[j]));
      const float scale = amax / 127.0f, inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
      int8_t *out = q + ((size_t) i * nb + b) * 32;
      int sum = 0;
      for (int j = 0; j < 32; j++) {
        out[j] = (int8_t) lrintf (v[j] * inverse);
        sum += out[j];
      }
      d[(size_t) i * nb + b] = scale;
      s[(size_t) i * nb + b] = scale * (float) sum;
    }
  }
}

#if defined(__x86_64__) || defined(__i386__)
/* The same values as the portable loop: the largest magnitude (vmaxps
 * gives its second operand for a NaN, as fmaxf skips it), the same scale
 * and inverse, vcvtps2dq rounding to nearest even as lrintf does in the
 * default mode, the quants summed exactly. */
__attribute__ ((target ("avx2"))) static void
quantize_rows_avx2 (float *d, float *s, int8_t *q, const float *x, int x_stride, int cols,
                    int i0, int i1)
{
  const int nb = cols / 32;
  const __m256 abs_mask = _mm256_castsi256_ps (_mm256_set1_epi32 (0x7fffffff));
  const __m256i order = _mm256_setr_epi32 (0, 4, 1, 5, 2, 6, 3, 7);
  for (int i = i0; i < i1; i++) {
    const float *row = x + (size_t) i * x_stride;
    for (int b = 0; b < nb; b++) {
      const float *v = row + b * 32;
      __m256 f[4];
      __m256 m = _mm256_setzero_ps ();
      for (int k = 0; k < 4; k++) {
        f[k] = _mm256_loadu_ps (v + 8 * k);
        m = _mm256_max_ps (_mm256_and_ps (f[k], abs_mask), m);
      }
      __m128 h = _mm_max_ps (_mm256_castps256_ps128 (m), _mm256_extractf128_ps (m, 1));
      h = _mm_max_ps (h, _mm_movehl_ps (h, h));
      h = _mm_max_ss (h, _mm_shuffle_ps (h, h, 1));
      const float amax = _mm_cvtss_f32 (h);
      const float scale = amax / 127.0f, inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
      const __m256 vi = _mm256_set1_ps (inverse);
      __m256i n[4];
      for (int k = 0; k < 4; k++)
        n[k] = _mm256_cvtps_epi32 (_mm256_mul_ps (f[k], vi));
      const __m256i t = _mm256_add_epi32 (_mm256_add_epi32 (n[0], n[1]),
                                          _mm256_add_epi32 (n[2], n[3]));
      __m128i t4 = _mm_add_epi32 (_mm256_castsi256_si128 (t), _mm256_extracti128_si256 (t, 1));
      t4 = _mm_add_epi32 (t4, _mm_shuffle_epi32 (t4, 0x4e));
      t4 = _mm_add_epi32 (t4, _mm_shuffle_epi32 (t4, 0xb1));
      const __m256i p = _mm256_packs_epi16 (_mm256_packs_epi32 (n[0], n[1]),
                                            _mm256_packs_epi32 (n[2], n[3]));
      _mm256_storeu_si256 ((__m256i *) (q + ((size_t) i * nb + b) * 32),
                           _mm256_permutevar8x32_epi32 (p, order));
      d[(size_t) i * nb + b] = scale;
      s[(size_t) i * nb + b] = scale * (float) _mm_cvtsi128_si32 (t4);
    }
  }
}
#endif

void
whisper_cpu_qblock_quantize_rows (float *d, float *s, int8_t *q, const float *x, int x_stride,
                                  int cols, int i0, int i1)
{
#if defined(__x86_64__) || defined(__i386__)
  if (whisper_cpu_have_avx2 ()) {
    quantize_rows_avx2 (d, s, q, x, x_stride, cols, i0, i1);
    return;
  }
#endif
  quantize_rows_portable (d, s, q, x, x_stride, cols, i0, i1);
}

static void
quantize_rows_k_portable (float *d, float *s, float *s16, int8_t *q, const float *x,
                          int x_stride, int cols, int i0, int i1)
{
  const int nb = cols / 32;
  for (int i = i0; i < i1; i++) {
    const float *row = x + (size_t) i * x_stride;
    for (int k = 0; k < cols / 256; k++) {
      const float *v = row + 256 * k;
      float amax = 0.0f, max = 0.0f;
      for (int j = 0; j < 256; j++)
        if (fabsf (v[j]) > amax) {
          amax = fabsf (v[j]);
          max = v[j];
        }
      const float iscale = amax != 0.0f ? -127.0f / max : 0.0f;
      const float scale = amax != 0.0f ? 1.0f / iscale : 0.0f;
      for (int b = 8 * k; b < 8 * k + 8; b++) {
        const size_t at = (size_t) i * nb + b;
        int8_t *out = q + at * 32;
        int sum[2] = { 0, 0 };
        for (int j = 0; j < 32; j++) {
          const long l = lrintf (iscale * v[32 * (b - 8 * k) + j]);
          out[j] = (int8_t) MIN (127, l);
          sum[j / 16] += out[j];
        }
        d[at] = scale;
        s[at] = scale * (float) (sum[0] + sum[1]);
        s16[2 * at] = scale * (float) sum[0];
        s16[2 * at + 1] = scale * (float) sum[1];
      }
    }
  }
}

#if defined(__x86_64__) || defined(__i386__)
static inline int
hsum_epi32_avx2 (__m256i v) __attribute__ ((target ("avx2")));

static inline int
hsum_epi32_avx2 (__m256i v)
{
  __m128i t = _mm_add_epi32 (_mm256_castsi256_si128 (v), _mm256_extracti128_si256 (v, 1));
  t = _mm_add_epi32 (t, _mm_shuffle_epi32 (t, 0x4e));
  t = _mm_add_epi32 (t, _mm_shuffle_epi32 (t, 0xb1));
  return _mm_cvtsi128_si32 (t);
}

/* The same values as the portable loop: the largest magnitude by vmaxps
 * (NaNs skipped as there), the value of the first element of that
 * magnitude, the same scale, vcvtps2dq rounding to nearest even as lrintf
 * does, the pack's saturation at 127 as min (127, .), the quants summed
 * exactly. */
__attribute__ ((target ("avx2"))) static void
quantize_rows_k_avx2 (float *d, float *s, float *s16, int8_t *q, const float *x, int x_stride,
                      int cols, int i0, int i1)
{
  const int nb = cols / 32;
  const __m256 abs_mask = _mm256_castsi256_ps (_mm256_set1_epi32 (0x7fffffff));
  const __m256i order = _mm256_setr_epi32 (0, 4, 1, 5, 2, 6, 3, 7);
  for (int i = i0; i < i1; i++) {
    const float *row = x + (size_t) i * x_stride;
    for (int k = 0; k < cols / 256; k++) {
      const float *v = row + 256 * k;
      __m256 m = _mm256_setzero_ps ();
      for (int j = 0; j < 256; j += 8)
        m = _mm256_max_ps (_mm256_and_ps (_mm256_loadu_ps (v + j), abs_mask), m);
      __m128 h = _mm_max_ps (_mm256_castps256_ps128 (m), _mm256_extractf128_ps (m, 1));
      h = _mm_max_ps (h, _mm_movehl_ps (h, h));
      h = _mm_max_ss (h, _mm_shuffle_ps (h, h, 1));
      const float amax = _mm_cvtss_f32 (h);
      float max = 0.0f;
      for (int j = 0; amax != 0.0f && j < 256; j++)
        if (fabsf (v[j]) == amax) {
          max = v[j];
          break;
        }
      const float iscale = amax != 0.0f ? -127.0f / max : 0.0f;
      const float scale = amax != 0.0f ? 1.0f / iscale : 0.0f;
      const __m256 vi = _mm256_set1_ps (iscale);
      for (int b = 8 * k; b < 8 * k + 8; b++) {
        const size_t at = (size_t) i * nb + b;
        const float *f = v + 32 * (b - 8 * k);
        __m256i n[4];
        for (int g = 0; g < 4; g++)
          n[g] = _mm256_cvtps_epi32 (_mm256_mul_ps (_mm256_loadu_ps (f + 8 * g), vi));
        const __m256i p = _mm256_packs_epi16 (_mm256_packs_epi32 (n[0], n[1]),
                                              _mm256_packs_epi32 (n[2], n[3]));
        _mm256_storeu_si256 ((__m256i *) (q + at * 32), _mm256_permutevar8x32_epi32 (p, order));
        const int lo = hsum_epi32_avx2 (_mm256_add_epi32 (_mm256_min_epi32 (n[0], _mm256_set1_epi32 (127)),
                                                          _mm256_min_epi32 (n[1], _mm256_set1_epi32 (127))));
        const int hi = hsum_epi32_avx2 (_mm256_add_epi32 (_mm256_min_epi32 (n[2], _mm256_set1_epi32 (127)),
                                                          _mm256_min_epi32 (n[3], _mm256_set1_epi32 (127))));
        d[at] = scale;
        s[at] = scale * (float) (lo + hi);
        s16[2 * at] = scale * (float) lo;
        s16[2 * at + 1] = scale * (float) hi;
      }
    }
  }
}
#endif

void
whisper_cpu_qblock_quantize_rows_k (float *d, float *s, float *s16, int8_t *q, const float *x,
                                    int x_stride, int cols, int i0, int i1)
{
#if defined(__x86_64__) || defined(__i386__)
  if (whisper_cpu_have_avx2 ()) {
    quantize_rows_k_avx2 (d, s, s16, q, x, x_stride, cols, i0, i1);
    return;
  }
#endif
  quantize_rows_k_portable (d, s, s16, q, x, x_stride, cols, i0, i1);
}

/* Each block unpacked once for all the rows; each row's sum still takes
 * the blocks in order. */
static void
dot_portable (WhisperDType type, const uint8_t *w, int n_blocks, const WhisperCpuQRows *x,
              int i0, int i1, float *out, size_t out_stride)
{
  if (whisper_qblock_is_k (type)) {
    for (int i = i0; i < i1; i++)
      out[(size_t) (i - i0) * out_stride] = 0.0f;
    for (int b = 0; b < n_blocks; b++) {
      guint8 code[32];
      float dw[2], c[2];
      whisper_qblock_unpack_sub (type, w, (gsize) b, code, dw, c);
      for (int i = i0; i < i1; i++) {
        const size_t at = (size_t) i * x->n_blocks + b;
        const int8_t *q = x->q + at * 32;
        int32_t dot[2] = { 0, 0 };
        for (int h = 0; h < 2; h++)
          for (int j = 16 * h; j < 16 * h + 16; j++)
            dot[h] += (int32_t) code[j] * q[j];
        out[(size_t) (i - i0) * out_stride] +=
            x->d[at] * (dw[0] * (float) dot[0] + dw[1] * (float) dot[1]) +
            (c[0] * x->s16[2 * at] + c[1] * x->s16[2 * at + 1]);
      }
    }
    return;
  }
  const gsize bytes = whisper_qblock_bytes (type);
  const int offset = whisper_qblock_offset (type);
  for (int i = i0; i < i1; i++)
    out[(size_t) (i - i0) * out_stride] = 0.0f;
  for (int b = 0; b < n_blocks; b++) {
    guint8 code[32];
    float dw, m;
    whisper_qblock_unpack (type, w + b * bytes, code, &dw, &m);
    const float c = m - (float) offset * dw;
    for (int i = i0; i < i1; i++) {
      const size_t at = (size_t) i * x->n_blocks + b;
      const int8_t *q = x->q + at * 32;
      int32_t dot = 0;
      for (int j = 0; j < 32; j++)
        dot += (int32_t) code[j] * q[j];
      out[(size_t) (i - i0) * out_stride] += dw * x->d[at] * (float) dot + c * x->s[at];
    }
  }
}

static void
gemm_portable (WhisperDType type, const uint8_t *w, int n_blocks, int r0, int r1,
               const WhisperCpuQRows *x, int i0, int i1, float *y, size_t y_stride,
               gboolean accumulate, float *scratch)
{
  const size_t stride = whisper_dtype_row_bytes (type, 32 * n_blocks);
  for (int r = r0; r < r1; r++) {
    dot_portable (type, w + r * stride, n_blocks, x, i0, i1, scratch, 1);
    for (int i = i0; i < i1; i++) {
      float *out = y + (size_t) i * y_stride + r;
      *out = (accumulate ? *out : 0.0f) + scratch[i - i0];
    }
  }
}

const WhisperCpuQblockKernels *
whisper_cpu_qblock_portable (void)
{
  static const WhisperCpuQblockKernels kernels = { "portable", dot_portable, gemm_portable, gemm_portable };
  return &kernels;
}

gboolean
whisper_cpu_qblock_avx512_supported (void)
{
#if defined(__x86_64__) || defined(__i386__)
  return whisper_cpu_have_avx512 () && __builtin_cpu_supports ("avx512bw") &&
         __builtin_cpu_supports ("avx512vl") && __builtin_cpu_supports ("avx512vnni");
#else
  return FALSE;
#endif
}

const WhisperCpuQblockKernels *
whisper_cpu_qblock_select (GError **error)
{
  const char *want = g_getenv ("WHISPER_CPU_QBLOCK");
  const gboolean avx512 = whisper_cpu_qblock_avx512_supported () &&
                          whisper_cpu_qblock_avx512 () != NULL;
  const gboolean avx2 = whisper_cpu_have_avx2 () && whisper_cpu_qblock_avx2 () != NULL;
  if (want == NULL || *want == '\0')
    return avx512 ? whisper_cpu_qblock_avx512 ()
                  : avx2 ? whisper_cpu_qblock_avx2 () : whisper_cpu_qblock_portable ();
  if (g_str_equal (want, "portable"))
    return whisper_cpu_qblock_portable ();
  if (g_str_equal (want, "avx2") && avx2)
    return whisper_cpu_qblock_avx2 ();
  if (g_str_equal (want, "avx512") && avx512)
    return whisper_cpu_qblock_avx512 ();
  if (g_str_equal (want, "avx2") || g_str_equal (want, "avx512"))
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "WHISPER_CPU_QBLOCK=%s: this CPU (or WHISPER_CPU_GENERIC / "
                 "WHISPER_CPU_NO_AVX512) does not allow it; %s needs %s", want, want,
                 g_str_equal (want, "avx2") ? "AVX2, FMA and F16C"
                                            : "AVX-512 F, BW, VL and VNNI");
  else
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "WHISPER_CPU_QBLOCK=%s: unknown kernel set; use portable, avx2 or avx512",
                 want);
  return NULL;
}
