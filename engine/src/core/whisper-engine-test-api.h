/* whisper-engine-test-api.h: engine internals that tests and the element's
 * diagnostics may reach (not installed). */
#pragma once

#include "backend.h"
#include "whisper.h"
#include "whisper-model.h"

G_BEGIN_DECLS

/* Runs the encoder on one window of log-mel features.
 * mel: [n_mels, n_frames] row-major (as whisper_mel_compute returns), with
 * n_frames <= 2 * max_encoder_length (shorter windows are zero-padded in the
 * log-mel domain, as the reference does). out: [max_encoder_length, n_audio_state]
 * host floats (the output of the final layer norm). */
gboolean whisper_engine_encode (WhisperEngine *engine, const float *mel, int n_frames,
                                float *out, GError **error);

/* The backend the engine runs on. */
WhisperBackend *whisper_engine_get_backend (WhisperEngine *engine);

G_END_DECLS
