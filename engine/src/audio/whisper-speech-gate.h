/* whisper-speech-gate.h: decides, before the encoder runs, whether a window
 * of audio can hold speech at all. Whisper turns silence into text ("you",
 * "Thank you."): the no-speech rule of
 * https://github.com/openai/whisper/blob/main/whisper/transcribe.py needs the
 * average log probability to be low as well, and conditioned on earlier text
 * it is not. A window whose loudest 20-ms frame is below a level (digital
 * silence, the noise floor of a muted input) is skipped without decoding. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* 20 ms at 16 kHz: the frame over which the level is measured. */
#define WHISPER_GATE_FRAME_SAMPLES 320

/* The level, in dB relative to full scale (a full-scale square wave is
 * 0 dBFS, a full-scale sine -3 dBFS), of the loudest 20-ms frame of
 * pcm[0..n), a partial last frame included; -inf for digital silence or
 * n == 0. Shapes: pcm [n] float32 at 16 kHz. */
double whisper_gate_peak_frame_db (const float *pcm, gsize n);

/* TRUE when pcm[0..n) is loud enough to be decoded: its loudest frame is at
 * or above threshold_db (always TRUE when threshold_db <=
 * WHISPER_SILENCE_THRESHOLD_OFF_DB, whisper-engine.h). */
gboolean whisper_gate_is_loud_enough (const float *pcm, gsize n, double threshold_db);

G_END_DECLS
