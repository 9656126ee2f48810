/* half.h: IEEE 754 binary16 ("half", float16) <-> float32 conversion, as
 * stored in CTranslate2 and ggml model files and used by the backends'
 * float16 weight layouts. */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

/* One half to float (exact: every half is a float). */
float whisper_half_to_float (guint16 h);

/* dst[i] = (float) src[i] for n little-endian halves at src (any
 * alignment); F16C where the CPU has it. */
void whisper_half_to_float_n (float *dst, const void *src, size_t n);

/* dst[i] = src[i] as a half, for values a half holds exactly. Returns
 * FALSE if some value does not survive float -> half -> float unchanged
 * (dst is then incomplete). */
gboolean whisper_float_to_half_exact_n (uint16_t *dst, const float *src, size_t n);

/* dst[i] = src[i] rounded to the nearest half (ties to even; beyond 65504
 * to infinity); F16C where the CPU has it, the same bits without. */
void whisper_float_to_half_n (uint16_t *dst, const float *src, size_t n);

G_END_DECLS
