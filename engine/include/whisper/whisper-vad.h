/* whisper-vad.h: voice activity detection with Silero VAD v6 on the CPU
 * (public: part of the API of libwhisper-engine).
 *
 * The same speech probabilities and speech timestamps as faster-whisper's
 * vad_filter (faster_whisper/vad.py in faster-whisper 1.2.1:
 * SileroVADModel, get_speech_timestamps, VadOptions), from the weights of
 * the silero_vad_v6.onnx that faster-whisper ships, converted by
 * tools/silero-vad-convert.py (file format in that script and in
 * whisper-vad-file.c). 16 kHz mono float32 input only.
 *
 * A WhisperVad (the weights) is read-only once loaded and may be shared by
 * any number of threads; a WhisperVadState (one stream's context samples
 * and LSTM state) belongs to one thread at a time.
 *
 * Samples must be finite (whisper_pcm_sanitize() them first): a NaN enters
 * the LSTM state and stays there until whisper_vad_state_reset(), as it
 * would in faster-whisper. */
#pragma once

#include <glib.h>

#include "whisper-export.h"

G_BEGIN_DECLS

#define WHISPER_VAD_SAMPLE_RATE 16000
/* Samples per probability: one 32 ms chunk at 16 kHz. */
#define WHISPER_VAD_CHUNK_SAMPLES 512

#define WHISPER_VAD_ERROR (whisper_vad_error_quark ())
WHISPER_API GQuark whisper_vad_error_quark (void);

typedef enum {
  WHISPER_VAD_ERROR_NOT_FOUND, /* the weight file cannot be opened or read */
  WHISPER_VAD_ERROR_FORMAT,    /* wrong magic or version, truncated, bad tensor */
  WHISPER_VAD_ERROR_SETTING,   /* a WhisperVadOptions field has an invalid value */
} WhisperVadError;

typedef struct _WhisperVad WhisperVad;
typedef struct _WhisperVadState WhisperVadState;

/* ${XDG_DATA_HOME:-$HOME/.local/share}/gst-whisper/models/silero-vad/silero_vad_v6.bin,
 * where tools/fetch-model.sh silero-vad installs it (g_free). */
WHISPER_API char *whisper_vad_default_path (void);

/* Loads the weight file at `path` (NULL: whisper_vad_default_path()).
 * NULL with `error` set, naming the file and the reason, when it is missing,
 * has the wrong magic or version, a tensor of the wrong name, type or shape,
 * or is truncated. */
WHISPER_API WhisperVad *whisper_vad_new (const char *path, GError **error);
WHISPER_API void whisper_vad_free (WhisperVad *vad);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (WhisperVad, whisper_vad_free)

/* A stream at its start: zero context samples, zero LSTM state. The state
 * keeps a pointer to `vad`, which must outlive it. */
WHISPER_API WhisperVadState *whisper_vad_state_new (const WhisperVad *vad);
/* Back to the start of a stream (as whisper_vad_state_new() makes it). */
WHISPER_API void whisper_vad_state_reset (WhisperVadState *state);
WHISPER_API void whisper_vad_state_free (WhisperVadState *state);

/* The speech probability of the next 512 samples of the stream, as
 * SileroVADModel computes it for the chunk at the same position: the model
 * sees the last 64 samples of the previous chunk (zeros for the first one)
 * followed by `chunk`, and carries its LSTM state from chunk to chunk. No
 * allocation. */
WHISPER_API float whisper_vad_state_push (WhisperVadState *state,
                                          const float chunk[WHISPER_VAD_CHUNK_SAMPLES]);

/* How many probabilities a buffer of n samples gives: n / 512 + 1 (the
 * buffer is always padded, by 512 zeros when n is a multiple of 512, as
 * get_speech_timestamps pads it). */
WHISPER_API gsize whisper_vad_n_chunks (gsize n_samples);

/* The speech probabilities of a whole buffer, exactly as faster-whisper's
 * get_speech_timestamps computes them: the buffer padded with zeros to
 * whisper_vad_n_chunks(n) * 512 samples, and (as SileroVADModel does to its
 * input array) the last 64 samples of the last chunk set to zero, which
 * drops up to 63 real samples when n % 512 > 448. `out` (element type
 * float) is set to the whisper_vad_n_chunks(n) probabilities. */
WHISPER_API void whisper_vad_probabilities (const WhisperVad *vad, const float *pcm, gsize n,
                                            GArray *out);

/* faster-whisper's VadOptions; whisper_vad_options_init() sets its
 * defaults, those of VadOptions(), which WhisperModel.transcribe(vad_filter=
 * True) uses when given no vad_parameters (BatchedInferencePipeline's
 * transcribe() uses max_speech_duration_s = 30 (chunk_length) and
 * min_silence_duration_ms = 160 instead). */
typedef struct {
  /* chunks with a probability >= threshold are speech (default 0.5) */
  double threshold;
  /* chunks below it end speech; negative: max(threshold - 0.15, 0.01), as
   * VadOptions' None (default -1) */
  double neg_threshold;
  /* speech shorter than this is dropped (default 0) */
  int min_speech_duration_ms;
  /* longer speech is split (default INFINITY) */
  double max_speech_duration_s;
  /* silence needed to end speech (default 2000) */
  int min_silence_duration_ms;
  /* padding added to each side of speech (default 400) */
  int speech_pad_ms;
} WhisperVadOptions;

WHISPER_API void whisper_vad_options_init (WhisperVadOptions *options);

/* One speech region, in samples of the input: [start_sample, end_sample). */
typedef struct {
  gint64 start_sample;
  gint64 end_sample;
} WhisperVadSpeech;

/* The speech regions of a whole 16-kHz buffer, identical to
 * get_speech_timestamps(audio, options): `out` (element type
 * WhisperVadSpeech) is set to them, in order. FALSE with `error` set
 * (WHISPER_VAD_ERROR_SETTING, naming the field) when an option is invalid:
 * NaN, threshold or neg_threshold above 1, a negative duration, a
 * max_speech_duration_s that is not positive. options NULL: the defaults. */
WHISPER_API gboolean whisper_vad_speech_timestamps (const WhisperVad *vad, const float *pcm,
                                                    gsize n, const WhisperVadOptions *options,
                                                    GArray *out, GError **error);

/* The same from probabilities already computed (whisper_vad_probabilities()
 * or whisper_vad_state_push() over the padded buffer): `probs` has n_probs
 * values, one per 512 samples, of a buffer of n_samples samples. */
WHISPER_API gboolean whisper_vad_speech_from_probabilities (const float *probs, gsize n_probs,
                                                            gsize n_samples,
                                                            const WhisperVadOptions *options,
                                                            GArray *out, GError **error);

G_END_DECLS
