/* whisper-fallback.c: see whisper-fallback.h. */
#include "whisper-fallback.h"

#include <gio/gio.h>
#include <string.h>

double
whisper_compression_ratio (const char *text)
{
  const gsize len = strlen (text);
  g_autoptr (GZlibCompressor) z = g_zlib_compressor_new (G_ZLIB_COMPRESSOR_FORMAT_ZLIB, -1);
  guint8 buf[4096];
  gsize total = 0, read, written;
  const guint8 *in = (const guint8 *) text;
  gsize left = len;
  GConverterResult r;
  do {
    r = g_converter_convert (G_CONVERTER (z), in, left, buf, sizeof buf, G_CONVERTER_INPUT_AT_END,
                             &read, &written, NULL);
    in += read;
    left -= read;
    total += written;
  } while (r == G_CONVERTER_CONVERTED);
  return total ? (double) len / total : 0.0;
}

gboolean
whisper_fallback_needed (WhisperAttempt *a, const char *text, double no_speech_prob,
                         const WhisperDecodeOptions *o)
{
  a->avg_logprob = a->sum_logprob / (a->n_tokens + 1);
  a->compression_ratio = whisper_compression_ratio (text);
  a->not_a_loop = !(o->compression_ratio_threshold >= 0 &&
                    a->compression_ratio > o->compression_ratio_threshold);
  gboolean fallback = !a->not_a_loop;
  if (a->avg_logprob < o->logprob_threshold)
    fallback = TRUE;
  if (o->no_speech_threshold >= 0 && no_speech_prob > o->no_speech_threshold &&
      a->avg_logprob < o->logprob_threshold)
    fallback = FALSE;  /* silence: the no-speech rule decides */
  return fallback;
}

int
whisper_fallback_choose (const WhisperAttempt *attempts, int n)
{
  int n_not_loops = 0;
  for (int k = 0; k < n; k++)
    n_not_loops += attempts[k].not_a_loop;
  int chosen = -1;
  for (int k = 0; k < n; k++)
    if ((n_not_loops == 0 || attempts[k].not_a_loop) &&
        (chosen < 0 || attempts[k].avg_logprob > attempts[chosen].avg_logprob))
      chosen = k;
  return chosen;
}
