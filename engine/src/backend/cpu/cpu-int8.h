/* cpu-int8.h: int8 linears on the CPU: the weights of a CTranslate2 int8
 * model as stored, or those of a float model quantized at load
 * (precision=int8), times input rows quantized per call.
 *
 * The rule is CTranslate2's
 * (https://github.com/OpenNMT/CTranslate2/blob/master/docs/quantization.md,
 * python/ctranslate2/specs/model_spec.py; on the CPU src/cpu/kernels.cc,
 * quantize_s8 and dequantize_gemm_output): per row, scale = 127 / amax
 * (amax the row's largest magnitude; 1 where the row is zero). A weight
 * row stores round-to-nearest-even (value * scale). An input row, quantized
 * on every call (per row, dynamically, as CTranslate2's int8 Dense layer
 * does), stores round-to-nearest-even (value * scale + 128) - 128: on x86
 * CTranslate2 shifts its inputs to unsigned bytes for its u8 x s8 GEMMs
 * (oneDNN, MKL) before it rounds, so a product within a few float steps
 * of a half can round the other way than round (value * scale) would. The
 * product of input row i and weight row r is the exact int32 dot product
 * of the stored values, times (1 / x_scale[i]), over w_scale[r], in that
 * order; the bias is added to that before any residual
 * (cpu-int8-linear.c).
 *
 * The sums are integers, so every kernel path below gives the same bits:
 * the paths differ only in speed. The path is chosen once, when the
 * backend is created (whisper_cpu_int8_isa_choose ()), from the CPU's
 * features, or forced with WHISPER_CPU_INT8=portable|avx2|avxvnni|avx512vnni
 * (a path the CPU lacks is refused with an error). */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef enum {
  WHISPER_CPU_INT8_PORTABLE,
  WHISPER_CPU_INT8_AVX2,       /* vpmaddubsw on |x| and sign(w, x): no saturation */
  WHISPER_CPU_INT8_AVXVNNI,    /* vpdpbusd (VEX, 256 bits) on x + 128, minus 128 sum(w) */
  WHISPER_CPU_INT8_AVX512VNNI, /* vpdpbusd (512 bits), the same offset */
  WHISPER_CPU_INT8_N_ISA,
} WhisperCpuInt8Isa;

/* Stored rows are padded with zeros to a multiple of this many columns. */
#define WHISPER_CPU_INT8_COL_ALIGN 64

/* Weight rows per panel (cpu-int8-kernels.c). */
#define WHISPER_CPU_INT8_PANEL 16

/* One weight [rows, cols] in a single g_malloc block (g_free frees it),
 * rows padded with zeros to whole panels. */
typedef struct {
  int rows;
  int cols;
  int cols_pad;    /* stored columns (zeros past cols) */
  float *scale;    /* [rows]: stored = round (value * scale) */
  int32_t *sum;    /* [rows]: sum of the row's stored values */
  int8_t *q;       /* panels: see whisper_cpu_int8_index () */
} WhisperCpuInt8Weight;

/* Where row r, column c is in w->q: panel r / 16 (16 * cols_pad bytes),
 * group c / 4 of it (64 bytes: 4 columns of each of the 16 rows), row
 * r % 16's 4 bytes, column c % 4. */
static inline size_t
whisper_cpu_int8_index (const WhisperCpuInt8Weight *w, int r, int c)
{
  return (size_t) (r / WHISPER_CPU_INT8_PANEL) * WHISPER_CPU_INT8_PANEL * w->cols_pad +
         (size_t) (c / 4) * 4 * WHISPER_CPU_INT8_PANEL + (size_t) (r % WHISPER_CPU_INT8_PANEL) * 4 +
         (size_t) (c % 4);
}

/* "portable", "avx2", "avxvnni", "avx512vnni" */
const char *whisper_cpu_int8_isa_name (WhisperCpuInt8Isa isa);
/* Whether this CPU (and WHISPER_CPU_GENERIC / WHISPER_CPU_NO_AVX512,
 * cpu-features.h) allows the path. */
gboolean whisper_cpu_int8_isa_available (WhisperCpuInt8Isa isa);
/* The fastest available path, or WHISPER_CPU_INT8's; FALSE with an error
 * naming the variable and the reason when it names an unknown path or one
 * this CPU lacks. */
gboolean whisper_cpu_int8_isa_choose (WhisperCpuInt8Isa *isa, GError **error);

/* Columns of a stored row for `cols` values. */
int whisper_cpu_int8_cols_pad (int cols);

/* A weight [rows, cols] of zeros, scales 1 (NULL when out of memory). */
WhisperCpuInt8Weight *whisper_cpu_int8_weight_new (int rows, int cols);
/* Row r from stored values and their scale (a CTranslate2 int8 tensor). */
void whisper_cpu_int8_weight_set_stored (WhisperCpuInt8Weight *w, int r, const int8_t *q,
                                         float scale);
/* Row r quantized from float32 values with the weight rule above. */
void whisper_cpu_int8_weight_set_f32 (WhisperCpuInt8Weight *w, int r, const float *x);
/* dst[0 .. (r1 - r0) * cols) = rows [r0, r1) as float32 (stored * (1 / scale)) */
void whisper_cpu_int8_weight_rows_f32 (const WhisperCpuInt8Weight *w, int r0, int r1,
                                       float *dst);

/* q[0 .. cols_pad) = the input row x[0 .. cols) quantized with the rule
 * above, zeros after; returns the row's scale. Every path gives the same
 * values (vcvtps2dq rounds to nearest even, as the portable code does); the paths
 * of whisper_cpu_int8_isa_offsets_x () store each value + 128 as an
 * unsigned byte (value xor 0x80), the operand vpdpbusd takes. */
float whisper_cpu_int8_quantize_row (WhisperCpuInt8Isa isa, int8_t *q, const float *x, int cols,
                                     int cols_pad);
gboolean whisper_cpu_int8_isa_offsets_x (WhisperCpuInt8Isa isa);

/* y[i * y_stride + r] = (accumulate ? y[...] : 0) + dot (xq_i, w_r) *
 * (1 / x_scale[i]) / w->scale[r] for i < n and r in [r0, r1); xq holds n
 * rows of w->cols_pad values from whisper_cpu_int8_quantize_row () on the
 * same path. */
void whisper_cpu_int8_linear_rows (WhisperCpuInt8Isa isa, float *y, int y_stride,
                                   const int8_t *xq, const float *x_scale, int n,
                                   const WhisperCpuInt8Weight *w, int r0, int r1,
                                   gboolean accumulate);

G_END_DECLS
