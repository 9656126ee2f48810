/* whisper-audio.c: audio files to 16-kHz mono float32 (libsndfile decodes,
 * libsamplerate resamples). */
#include "whisper.h"

#include <samplerate.h>
#include <sndfile.h>

float *
whisper_audio_load_file (const char *path, int channel, gsize *n_samples, GError **error)
{
  SF_INFO info = { 0 };
  SNDFILE *file = sf_open (path, SFM_READ, &info);
  if (!file) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_AUDIO, "%s: cannot read audio: %s",
                 path, sf_strerror (NULL));
    return NULL;
  }
  if (info.channels < 1 || info.samplerate < 1 || info.frames < 0 ||
      info.frames > (sf_count_t) G_MAXINT32 * 8) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_AUDIO,
                 "%s: unusable audio (%d channels, %d Hz, %" G_GINT64_FORMAT " frames)", path,
                 info.channels, info.samplerate, (gint64) info.frames);
    sf_close (file);
    return NULL;
  }
  if (channel >= info.channels) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "%s: channel %d requested, the file has %d", path, channel, info.channels);
    sf_close (file);
    return NULL;
  }

  /* Read in blocks (the frame count of compressed formats can be inexact). */
  GArray *mono = g_array_sized_new (FALSE, FALSE, sizeof (float), MAX (info.frames, 0));
  const sf_count_t block = 8192;
  g_autofree float *buf = g_new (float, (size_t) block * info.channels);
  sf_count_t got;
  while ((got = sf_readf_float (file, buf, block)) > 0) {
    for (sf_count_t i = 0; i < got; i++) {
      float v;
      if (channel >= 0)
        v = buf[i * info.channels + channel];
      else {
        double sum = 0.0;
        for (int c = 0; c < info.channels; c++)
          sum += buf[i * info.channels + c];
        v = (float) (sum / info.channels);
      }
      g_array_append_val (mono, v);
    }
  }
  const int sf_err = sf_error (file);
  sf_close (file);
  if (sf_err != SF_ERR_NO_ERROR) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_AUDIO, "%s: decoding failed: %s",
                 path, sf_error_number (sf_err));
    g_array_unref (mono);
    return NULL;
  }

  if (info.samplerate == WHISPER_SAMPLE_RATE) {
    *n_samples = mono->len;
    return (float *) g_array_free (mono, FALSE);
  }

  const double ratio = (double) WHISPER_SAMPLE_RATE / info.samplerate;
  const gsize out_len = (gsize) (mono->len * ratio) + 16;
  float *out = g_new (float, out_len);
  SRC_DATA src = { 0 };
  src.data_in = (const float *) mono->data;
  src.input_frames = mono->len;
  src.data_out = out;
  src.output_frames = out_len;
  src.src_ratio = ratio;
  const int rc = src_simple (&src, SRC_SINC_BEST_QUALITY, 1);
  g_array_unref (mono);
  if (rc != 0) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_AUDIO, "%s: resampling failed: %s",
                 path, src_strerror (rc));
    g_free (out);
    return NULL;
  }
  *n_samples = src.output_frames_gen;
  return out;
}
