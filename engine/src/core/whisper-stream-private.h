/* whisper-stream-private.h: struct _WhisperStream and what the stream's
 * files share (core/ only): whisper-stream.c (the stream, its options and
 * the transcribe loop over windows), whisper-stream-window.c (one window)
 * and whisper-decode-options.c. */
#pragma once

#include "whisper-engine-struct.h"
#include "whisper-search.h"
#include "whisper-tokenizer.h"

G_BEGIN_DECLS

#define FRAMES_PER_SECOND 100
#define TIME_PRECISION 0.02  /* seconds per timestamp token */
#define INPUT_STRIDE 2       /* mel frames per timestamp token */

struct _WhisperStream {
  WhisperEngine *engine;
  WhisperDecodeOptions options;
  /* The decoder state lent by the engine for the window being decoded
   * (whisper-decoder-pool.h), NULL between windows; dec is &lease->dec. */
  WhisperPooledDecoder *lease;
  GThread *lease_thread;            /* the thread that holds it (counted in thread_leases) */
  WhisperDecoderState *dec;
  int n_slots;                      /* self-attention caches the search needs */
  int encoder_length;               /* encoder frames of this transcription's windows
                                       (options.encoder_length, or the engine's
                                       max_encoder_length) */
  WhisperStepMember step_member;    /* in the engine's step batcher (whisper-step-batcher.h) */
  WhisperLogitConfig logit_config;  /* the engine's, with this stream's options */

  gboolean share_encoder;           /* whisper_stream_set_share_encoder() */

  WhisperTokenFunc token_func;
  gpointer token_data;

  GArray *history;          /* gint32: every emitted segment's tokens */
  guint prompt_reset_since;
  gint cancelled;

  /* Copies of the options' strings and lists, and what they resolve to. */
  char *language, *initial_prompt, *hotwords, *prefix, *clip_timestamps;
  gint32 *suppress_tokens;
  gint32 *logit_suppress_ids;       /* the stream's SuppressTokens list */
  int language_index;               /* -1: to detect */
  double language_probability;
  double *language_probs;           /* [n_languages] of the last detection window */
  int n_language_probs;
  gboolean language_detected;       /* detection done since the last reset */
  gboolean initial_prompt_added;    /* since the last reset */
  guint64 windows_since_reset;      /* the prefix goes on the first */
  gint32 *hotword_tokens, *prefix_tokens;
  gsize n_hotword_tokens, n_prefix_tokens;
  GRand *rand;
  WhisperSearchBuffers *search;
  int search_max_hyp;
  gint32 *attempt_tokens;           /* [WHISPER_MAX_TEMPERATURES, n_text_ctx] */

  /* Host buffers, sized once from the engine's constants. */
  float *host_window;       /* [2 * max_encoder_length, n_mels] */
  float *host_logits;       /* [2, n_vocab] */
  gint32 *prompt;           /* [n_text_ctx] */
  gint32 *sampled;          /* [sample_len] */
  WhisperPieceDecoder piece;

  WhisperStreamStats stats;

  /* word timestamps (whisper-words.h) */
  char *prepend_punctuations, *append_punctuations;  /* the options' copies */
  double last_speech_timestamp;
  gint32 sot_sequence[4];   /* the last window's start sequence */
  int n_sot;
  WhisperAlignCapture *step_capture;  /* per-step alignment-head attention */
};

/* Result of decoding one window. */
typedef struct {
  int n_sampled;            /* tokens in stream->sampled (forced prefix included), EOT
                               excluded */
  double sum_logprob;
  double no_speech_prob;
  double avg_logprob;       /* of the attempt kept */
  double compression_ratio;
  double temperature;
  int language;             /* index of the window's language */
} WindowResult;

static inline double
whisper_elapsed_since (gint64 start)
{
  return (g_get_monotonic_time () - start) / 1e6;
}

/* Clips of clip_timestamps a transcription takes at most. */
#define MAX_CLIPS 256

/* "s,e,s,e,..." seconds into [start, end) frame pairs, as faster-whisper's
 * generate_segments() reads clip_timestamps: an odd count ends at the end
 * of the audio (end = -1 here). Returns the number of pairs, -1 on a bad
 * list. */
int whisper_decode_options_parse_clips (const char *text, gint64 *frames, int max_pairs,
                                        GError **error);

/* whisper-stream-window.c */

/* Borrows a decoder state of the engine for one window (with the caches
 * the search needs), warmed up when it is new. Called with the compute
 * lock held. A stream that holds one already keeps it. */
gboolean whisper_stream_lease_decoder_locked (WhisperStream *s, GError **error);
/* Gives the window's decoder state back to the engine. */
void whisper_stream_return_decoder (WhisperStream *s);
/* whisper_stream_free(): gives back the decoder state the stream holds. */
void whisper_stream_release_decoder_at_free (WhisperStream *s);
/* One decoder state made and warmed up at once, and given back. */
gboolean whisper_stream_prepare_decode_steps (WhisperStream *s, GError **error);
/* Host buffers and cache slots for the search the options ask for. */
gboolean whisper_stream_ensure_search (WhisperStream *s, GError **error);
/* faster-whisper's detect_language() from frame `seek`: sets the stream's
 * language and its probability. */
gboolean whisper_stream_detect_language (WhisperStream *s, const float *mel, gsize mel_stride,
                                         gsize n_mel_frames, gsize seek, GError **error);
/* Encodes and decodes the window mel[:, seek : seek+n_frames] with the
 * temperature fallback; the kept tokens are in s->sampled. */
gboolean whisper_stream_decode_window (WhisperStream *s, const float *mel, gsize mel_stride,
                                       gsize seek, int n_frames, double window_start,
                                       gboolean with_prefix, WindowResult *result, GError **error);

G_END_DECLS
