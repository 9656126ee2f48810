/* whisper-mel.h: log-mel front end (faster-whisper's framing,
 * https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/feature_extractor.py): 400-point periodic-Hann STFT with hop 160 and centre reflect
 * padding, power spectrum, Slaney mel filters, log10 with 1e-10 floor,
 * max-8 clamp over the whole input, (x+4)/4. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define WHISPER_N_FFT 400
#define WHISPER_HOP_LENGTH 160
#define WHISPER_N_FREQ (WHISPER_N_FFT / 2 + 1)

typedef struct _WhisperMel WhisperMel;

/* n_threads: threads of the front end's pool, created here for its whole
 * life (0 = every core). */
WhisperMel *whisper_mel_new (int n_mels, int n_threads, GError **error);
void whisper_mel_free (WhisperMel *mel);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (WhisperMel, whisper_mel_free)

/* The Slaney-normalised filter bank, [n_mels, WHISPER_N_FREQ] row-major. */
const float *whisper_mel_filters (const WhisperMel *mel);

/* Log-mel of `pcm` exactly as faster-whisper's FeatureExtractor computes it
 * (160 zeros appended, then centre-padded STFT, last frame dropped).
 * Returns a newly allocated [n_mels, *n_frames] row-major array (g_free),
 * with *n_frames = n_samples / 160 + 1; the first n_samples / 160 frames
 * are the content frames. Runs on the front end's pool; calls from several
 * threads take turns. */
float *whisper_mel_compute (WhisperMel *mel, const float *pcm, gsize n_samples,
                            gsize *n_frames);

G_END_DECLS
