/* whisper-speech-gate.c: see whisper-speech-gate.h. */
#include "whisper-speech-gate.h"

#include "whisper.h"

#include <math.h>

double
whisper_gate_peak_frame_db (const float *pcm, gsize n)
{
  double loudest = 0.0;  /* mean square of the loudest frame */
  for (gsize start = 0; start < n; start += WHISPER_GATE_FRAME_SAMPLES) {
    const gsize len = MIN ((gsize) WHISPER_GATE_FRAME_SAMPLES, n - start);
    double sum = 0.0;
    for (gsize i = 0; i < len; i++)
      sum += (double) pcm[start + i] * pcm[start + i];
    loudest = MAX (loudest, sum / len);
  }
  return loudest > 0.0 ? 10.0 * log10 (loudest) : -INFINITY;
}

gboolean
whisper_gate_is_loud_enough (const float *pcm, gsize n, double threshold_db)
{
  if (threshold_db <= WHISPER_SILENCE_THRESHOLD_OFF_DB)
    return TRUE;
  return whisper_gate_peak_frame_db (pcm, n) >= threshold_db;
}
