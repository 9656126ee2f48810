/* whisper-pcm.h: the engine's audio input boundary (public: part of the
 * API of libwhisper-engine, included by whisper-engine.h). Every sample the engine
 * transcribes passes through whisper_pcm_sanitize() once: the log-mel front
 * end takes log10 of the power and clamps everything to 8 below the input's
 * maximum, so a single +Inf, NaN or huge sample (3e19) would turn the whole
 * window into one "!!!!" segment with NaN scores. */
#pragma once

#include <glib.h>

#include "whisper-export.h"

G_BEGIN_DECLS

/* Samples are float32 in [-WHISPER_PCM_LIMIT, WHISPER_PCM_LIMIT]: full scale
 * is 1.0 (int16 / 32768), and nothing louder is kept. */
#define WHISPER_PCM_LIMIT 1.0f

typedef struct {
  guint64 non_finite; /* NaN or +-Inf samples, set to 0 */
  guint64 clipped;    /* finite samples beyond +-WHISPER_PCM_LIMIT, clamped to it */
} WhisperPcmFixes;

/* pcm itself when every sample is finite and within the limit (the usual
 * case: no copy); otherwise a copy with the bad samples fixed, returned in
 * *owned too (g_free it). The counts are added to *fixes. */
WHISPER_API const float *whisper_pcm_sanitize (const float *pcm, gsize n, float **owned,
                                               WhisperPcmFixes *fixes);

/* The same fixes made in place (for a caller that owns a float copy
 * already, as the GStreamer element does). */
WHISPER_API void whisper_pcm_sanitize_in_place (float *pcm, gsize n, WhisperPcmFixes *fixes);

/* Reads an audio file in any format libsndfile reads, mixes to mono (or
 * takes one channel: channel >= 0) and resamples to 16 kHz with
 * libsamplerate. */
WHISPER_API float *whisper_audio_load_file (const char *path, int channel, gsize *n_samples,
                                            GError **error);

G_END_DECLS
