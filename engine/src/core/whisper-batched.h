/* whisper-batched.h: a long recording cut at non-speech into pieces of at
 * most one window, the pieces decoded at the same time on several streams
 * of the engine (internal: whisper_stream_transcribe_batched() in
 * whisper-stream.c calls it).
 *
 * As faster-whisper 1.2.1's BatchedInferencePipeline.transcribe() does
 * (faster_whisper/transcribe.py and collect_chunks() in faster_whisper/vad.py,
 * https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/transcribe.py):
 * the speech regions of get_speech_timestamps() with max_speech_duration_s
 * at most the window (30 s), joined in order into pieces while a piece's
 * speech stays within the window (collect_chunks(max_duration=30)), each
 * piece transcribed on its own, without the text before it as a prompt,
 * and its times mapped back to the input (restore_speech_timestamps()).
 * Here batch_size streams take the pieces in turn: their decode steps run
 * as shared forward passes (whisper-step-batcher.h), their encoder windows
 * one after the other (the encoder is bound by arithmetic, not by weight
 * reads: a batch of windows costs what the windows cost one by one). */
#pragma once

#include "whisper.h"

G_BEGIN_DECLS

#define WHISPER_MAX_BATCH_SIZE 64

/* What the pieces' streams did, for the calling stream's counters. */
typedef struct {
  WhisperStreamStats stats;   /* the cumulative counters, summed */
  const char *language;       /* the first piece's (static), NULL when none */
  double language_probability;
} WhisperBatchedResult;

/* Transcribes pcm[0..n) (finite samples in [-1, 1]) as above with
 * `options` (options->vad set; condition_on_previous_text, vad_filter and
 * clip_timestamps do not apply), on batch_size streams of `engine`.
 * Segments go to segment_func in the order of the input, each piece's as
 * soon as it and every piece before it are done, and into segments_out.
 * Stops early when *cancelled becomes non-zero (FALSE, "transcription
 * cancelled") or segment_func returns FALSE (TRUE). */
gboolean whisper_batched_transcribe (WhisperEngine *engine, const WhisperDecodeOptions *options,
                                     int batch_size, const gint *cancelled, const float *pcm,
                                     gsize n, WhisperSegmentFunc segment_func,
                                     gpointer user_data, GPtrArray **segments_out,
                                     WhisperBatchedResult *result, GError **error);

/* whisper-stream.c's side of whisper_stream_transcribe_batched() (defined
 * there, as they reach into the stream): the start of a call, as
 * whisper_stream_transcribe() starts (the cancel flag cleared, the options
 * resolved, *pcm sanitised, *fixed owning a copy when one was made; input
 * quieter than the silence threshold is a silent window: *quiet, and
 * segments_out set), which gives the engine, the stream's options and its
 * cancel flag (NULL with `error` set on failure); its counters; the
 * language found. */
const WhisperDecodeOptions *whisper_stream_begin_batched (WhisperStream *stream,
                                                          const float **pcm, gsize n_samples,
                                                          float **fixed,
                                                          GPtrArray **segments_out,
                                                          gboolean *quiet,
                                                          WhisperEngine **engine,
                                                          const gint **cancelled,
                                                          GError **error);
WhisperStreamStats *whisper_stream_batched_stats (WhisperStream *stream);
void whisper_stream_set_batched_language (WhisperStream *stream, const char *language,
                                          double probability);

G_END_DECLS
