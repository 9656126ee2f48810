/* whisper-pcm.c: see whisper-pcm.h. */
#include "whisper.h"

#include <math.h>
#include <string.h>

/* The first sample that is not finite or beyond the limit, or n. */
static gsize
first_bad (const float *pcm, gsize n)
{
  for (gsize i = 0; i < n; i++) {
    /* one comparison catches both: NaN compares false, Inf is beyond */
    if (!(fabsf (pcm[i]) <= WHISPER_PCM_LIMIT))
      return i;
  }
  return n;
}

/* out[i] = the fixed in[i] for i in [first, n); in and out may be equal. */
static void
fix_from (float *out, const float *in, gsize first, gsize n, WhisperPcmFixes *fixes)
{
  for (gsize i = first; i < n; i++) {
    const float v = in[i];
    if (!isfinite (v)) {
      out[i] = 0.0f;
      fixes->non_finite++;
    } else if (v > WHISPER_PCM_LIMIT || v < -WHISPER_PCM_LIMIT) {
      out[i] = v > 0 ? WHISPER_PCM_LIMIT : -WHISPER_PCM_LIMIT;
      fixes->clipped++;
    } else {
      out[i] = v;
    }
  }
}

const float *
whisper_pcm_sanitize (const float *pcm, gsize n, float **owned, WhisperPcmFixes *fixes)
{
  *owned = NULL;
  const gsize first = first_bad (pcm, n);
  if (first == n)
    return pcm;

  float *out = g_new (float, n);
  memcpy (out, pcm, first * sizeof (float));
  fix_from (out, pcm, first, n, fixes);
  *owned = out;
  return out;
}

void
whisper_pcm_sanitize_in_place (float *pcm, gsize n, WhisperPcmFixes *fixes)
{
  const gsize first = first_bad (pcm, n);
  if (first < n)
    fix_from (pcm, pcm, first, n, fixes);
}
