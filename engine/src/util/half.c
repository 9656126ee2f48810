/* half.c: float16 <-> float32 (half.h). */
#include "half.h"

#include <math.h>
#include <string.h>

#include "cpu-features.h"
#include "cpu-simd.h"

float
whisper_half_to_float (guint16 h)
{
  guint32 sign = (guint32) (h & 0x8000u) << 16;
  guint32 exponent = (h >> 10) & 0x1fu;
  guint32 mantissa = h & 0x3ffu;

  if (exponent == 0) {
    /* Zero or subnormal: mantissa * 2^-24, exact in float. */
    float magnitude = (float) mantissa * (1.0f / 16777216.0f);
    return sign ? -magnitude : magnitude;
  }

  guint32 bits;
  if (exponent == 0x1f)
    bits = sign | 0x7f800000u | (mantissa << 13); /* inf / nan */
  else
    bits = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);

  float f;
  memcpy (&f, &bits, sizeof f);
  return f;
}

#ifdef HAVE_X86
AVX2_TARGET static size_t
half_to_float_f16c (float *dst, const guint8 *src, size_t n)
{
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps (dst + i, _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) (src + 2 * i))));
  return i;
}
#endif

void
whisper_half_to_float_n (float *dst, const void *src, size_t n)
{
  const guint8 *bytes = src;
  size_t i = 0;
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ())
    i = half_to_float_f16c (dst, bytes, n);
#endif
  for (; i < n; i++) {
    guint16 h;
    memcpy (&h, bytes + 2 * i, sizeof h);
    dst[i] = whisper_half_to_float (h);
  }
}

/* float -> half, round to nearest even: overflow to infinity, NaN kept
 * quiet, subnormal halves below 2^-14. */
static uint16_t
float_to_half_round_one (float f)
{
  uint32_t u;
  memcpy (&u, &f, sizeof u);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) /* inf, nan */
    return (uint16_t) (sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) /* rounds to 65520 or more: inf */
    return (uint16_t) (sign | 0x7c00u);
  if (abs < 0x38800000u) {
    /* below 2^-14: a subnormal half (or 0); the value in units of 2^-24 */
    if (abs < 0x33000000u) /* below 2^-25: rounds to 0 */
      return (uint16_t) sign;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - (int) (abs >> 23); /* 14 .. 24 */
    uint32_t h = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1), half_way = 1u << (shift - 1);
    if (rest > half_way || (rest == half_way && (h & 1u)))
      h++;
    return (uint16_t) (sign | h);
  }
  /* normal: rebias the exponent, round the 13 dropped bits */
  uint32_t h = (abs - 0x38000000u) >> 13;
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    h++; /* may carry into the exponent: still the right half */
  return (uint16_t) (sign | h);
}

/* Exact float -> half: only values a half holds exactly convert (the
 * rounded half converts back to the same bits), as the F16C loop below
 * checks them; infinities and NaN never do (never in real weights). */
static gboolean
float_to_half_exact_one (float f, uint16_t *out)
{
  if (!isfinite (f))
    return FALSE;
  const uint16_t h = float_to_half_round_one (f);
  const float back = whisper_half_to_float (h);
  if (memcmp (&back, &f, sizeof f) != 0)
    return FALSE;
  *out = h;
  return TRUE;
}

#ifdef HAVE_X86
/* Converts 8 at a time and checks that they convert back unchanged. */
AVX2_TARGET static size_t
float_to_half_exact_f16c (uint16_t *dst, const float *src, size_t n)
{
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps (src + i);
    const __m128i h = _mm256_cvtps_ph (v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 back = _mm256_cvtph_ps (h);
    const __m256i same = _mm256_cmpeq_epi32 (_mm256_castps_si256 (v), _mm256_castps_si256 (back));
    if (_mm256_movemask_epi8 (same) != -1)
      return i; /* the scalar check below reports it */
    _mm_storeu_si128 ((__m128i *) (dst + i), h);
  }
  return i;
}
#endif

gboolean
whisper_float_to_half_exact_n (uint16_t *dst, const float *src, size_t n)
{
  size_t i = 0;
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ())
    i = float_to_half_exact_f16c (dst, src, n);
#endif
  for (; i < n; i++)
    if (!float_to_half_exact_one (src[i], &dst[i]))
      return FALSE;
  return TRUE;
}

#ifdef HAVE_X86
AVX2_TARGET static size_t
float_to_half_f16c (uint16_t *dst, const float *src, size_t n)
{
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128 ((__m128i *) (dst + i),
                      _mm256_cvtps_ph (_mm256_loadu_ps (src + i),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  return i;
}
#endif

void
whisper_float_to_half_n (uint16_t *dst, const float *src, size_t n)
{
  size_t i = 0;
#ifdef HAVE_X86
  if (whisper_cpu_have_avx2 ())
    i = float_to_half_f16c (dst, src, n);
#endif
  for (; i < n; i++)
    dst[i] = float_to_half_round_one (src[i]);
}
