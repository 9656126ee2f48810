/* backend-cpu-memory.c: the CPU backend's work memory (grown buffers,
 * per-thread scratch) and weight rows as float32, used by its ops. */
#include "backend-cpu-private.h"
#include "qblock.h"

#include <string.h>

void *
whisper_cpu_grow_buffer (void *buf, size_t *capacity, size_t n, size_t elem_size, const char *what)
{
  if (n <= *capacity)
    return buf;
  whisper_aligned_free (buf);
  buf = whisper_aligned_alloc (n * elem_size);
  if (!buf)
    g_error ("cpu backend: cannot allocate %zu %s", n, what);
  *capacity = n;
  return buf;
}

float *
whisper_cpu_thread_scratch (WhisperBackendCpu *self, int thread, size_t n)
{
  self->scratch[thread] = whisper_cpu_grow_buffer (self->scratch[thread],
                                                   &self->scratch_size[thread], n, sizeof (float),
                                                   "floats of scratch memory");
  return self->scratch[thread];
}

/* dst = rows [r0, r1) of the weight as float32, row-major, whatever its
 * storage. */
void
whisper_cpu_weight_rows_f32 (const WhisperWeight *w, int r0, int r1, float *dst)
{
  if (WEIGHT_IS_QBLOCK (w->dtype)) {
    const WhisperDType type = (WhisperDType) (w->dtype - WEIGHT_QBLOCK);
    whisper_qblock_dequantize (type, (const uint8_t *) w->data +
                                         (size_t) r0 * whisper_dtype_row_bytes (type, w->cols),
                               (size_t) (r1 - r0) * (w->cols / whisper_qblock_values (type)), dst);
  }
  else if (w->dtype == WEIGHT_I8)
    whisper_cpu_int8_weight_rows_f32 (w->data, r0, r1, dst);
  else if (w->dtype == WEIGHT_F16_PACKED)
    whisper_cpu_unpack_rows (dst, w->data, r0, r1, w->cols);
  else if (w->dtype == WEIGHT_F16)
    whisper_half_to_float_n (dst, (const uint16_t *) w->data + (size_t) r0 * w->cols,
                             (size_t) (r1 - r0) * w->cols);
  else
    memcpy (dst, (const float *) w->data + (size_t) r0 * w->cols,
            (size_t) (r1 - r0) * w->cols * sizeof (float));
}
