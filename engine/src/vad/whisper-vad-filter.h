/* whisper-vad-filter.h: faster-whisper's vad_filter (internal to the engine).
 *
 * WhisperModel.transcribe(vad_filter=True) in faster-whisper 1.2.1
 * (faster_whisper/transcribe.py and faster_whisper/vad.py,
 * https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/vad.py):
 * get_speech_timestamps() finds the speech regions, collect_chunks()
 * concatenates them, the concatenation is transcribed as one stream, and
 * restore_speech_timestamps() maps every time back to the input with a
 * SpeechTimestampsMap. This file holds the first two steps and the map;
 * whisper-stream.c runs the transcription in between (the hook at the top
 * of whisper_stream_transcribe()), so this file calls nothing of it. */
#pragma once

#include <glib.h>

#include "whisper.h"

G_BEGIN_DECLS

typedef struct _WhisperVadFilter WhisperVadFilter;

/* The speech regions of pcm[0..n) (finite samples) with `options`, and their
 * concatenation. NULL with `error` set when an option is invalid (the
 * message names the VAD option). */
WhisperVadFilter *whisper_vad_filter_new (const WhisperVad *vad, const WhisperVadOptions *options,
                                          const float *pcm, gsize n, GError **error);
/* The same from regions already known (element type WhisperVadSpeech,
 * sorted, within [0, n)); for tests. */
WhisperVadFilter *whisper_vad_filter_new_from_speech (const float *pcm, gsize n,
                                                      const GArray *speech);
void whisper_vad_filter_free (WhisperVadFilter *filter);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (WhisperVadFilter, whisper_vad_filter_free)

/* The speech regions (element type WhisperVadSpeech). */
const GArray *whisper_vad_filter_speech (const WhisperVadFilter *filter);
/* collect_chunks(audio, speech) with max_duration = inf: the regions'
 * samples one after the other; *n_samples 0 (and NULL) when there is no
 * speech. */
const float *whisper_vad_filter_pcm (const WhisperVadFilter *filter, gsize *n_samples);

/* SpeechTimestampsMap.get_chunk_index(time, is_end). */
int whisper_vad_filter_chunk_index (const WhisperVadFilter *filter, double time,
                                    gboolean is_end);
/* SpeechTimestampsMap.get_original_time(time, chunk_index, is_end): time in
 * the concatenation -> time in the input, rounded to 0.01 s as Python's
 * round(x, 2); chunk_index < 0: found from time and is_end. */
double whisper_vad_filter_original_time (const WhisperVadFilter *filter, double time,
                                         int chunk_index, gboolean is_end);

/* restore_speech_timestamps() for a segment without words: start with
 * get_original_time(start), end with is_end=True. */
void whisper_vad_filter_restore_segment (const WhisperVadFilter *filter, WhisperSegment *segment);
/* ... and for one word: both ends in the chunk of the word's midpoint.
 * A segment with words then takes its first word's start and its last
 * word's end (restore_speech_timestamps()). */
void whisper_vad_filter_restore_word (const WhisperVadFilter *filter, double *start, double *end);
/* A token event's times: `time` as a segment start, `window_start` too. */
void whisper_vad_filter_restore_token (const WhisperVadFilter *filter, WhisperTokenEvent *event);

/* The transcription whisper_vad_filter_transcribe() runs on the
 * concatenation: whisper_stream_transcribe(), passed in by whisper-stream.c
 * (so that this file does not call back into it). */
typedef gboolean (*WhisperVadFilterTranscribeFunc) (WhisperStream *stream, const float *pcm,
                                                    gsize n_samples,
                                                    WhisperSegmentFunc segment_func,
                                                    gpointer user_data,
                                                    GPtrArray **segments_out, GError **error);

/* transcribe(vad_filter=True): the speech regions of pcm[0..n) (finite
 * samples) with options->vad and options->vad_options, their concatenation
 * transcribed by `transcribe` with options->vad_filter and options->vad
 * cleared meanwhile (no gate on audio that is all speech; restored after),
 * every segment and token event restored to the input's times before it
 * reaches the caller. No speech: the empty concatenation is transcribed
 * (no window, no encoder run, no segment), as faster-whisper does. FALSE
 * with `error` set when options->vad is NULL or an option is invalid.
 * `options`, `token_func` and `token_data` are the stream's own. */
gboolean whisper_vad_filter_transcribe (WhisperStream *stream, WhisperDecodeOptions *options,
                                        WhisperTokenFunc *token_func, gpointer *token_data,
                                        WhisperVadFilterTranscribeFunc transcribe,
                                        const float *pcm, gsize n_samples,
                                        WhisperSegmentFunc segment_func, gpointer user_data,
                                        GPtrArray **segments_out, GError **error);

/* Python's round(x, 2) of a double (correctly rounded, ties to even). */
double whisper_vad_filter_round2 (double x);

G_END_DECLS
