/* whisper-stream.h: one transcription on an engine (public API of
 * libwhisper-engine): its decoding options, the segments, words and token
 * events it gives, and the calls that run it. */
#pragma once

#include <glib.h>

#include "whisper-engine.h"
#include "whisper-export.h"
#include "whisper-vad.h"

G_BEGIN_DECLS

/* One word of a segment (word timestamps). */
typedef struct {
  char *text;               /* UTF-8, with its leading space and merged punctuation */
  double start, end;        /* seconds, relative to the start of the audio given */
  double probability;       /* mean probability of its tokens */
  int first_token;          /* index of its first token in the segment's tokens */
  int n_tokens;
} WhisperWord;

typedef struct {
  double start, end;        /* seconds, relative to the start of the audio given */
  char *text;               /* UTF-8, as the reference decodes it (leading space kept) */
  gint32 *tokens;           /* including timestamp tokens */
  gsize n_tokens;
  double avg_logprob;
  double no_speech_prob;
  double compression_ratio;
  double temperature;
  const char *language;     /* Whisper code of the language the window was decoded
                               in ("en", "de", ...; static string) */
  WhisperWord *words;       /* word timestamps on: its words (may be none); else NULL */
  gsize n_words;
} WhisperSegment;

WHISPER_API void whisper_segment_free (WhisperSegment *segment);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (WhisperSegment, whisper_segment_free)

/* Fired after every decode step, with the token that step chose. */
typedef struct {
  gint32 id;
  const char *piece;        /* UTF-8 text the token completes ("" for special and
                               timestamp tokens, or when it ends inside a
                               multi-byte character, which a later piece completes) */
  gboolean is_timestamp;
  double time;              /* seconds from the start of the audio given: for a
                               timestamp token its time; for a text token the time
                               of the timestamp that opened its segment */
  double window_start;      /* seconds: start of the 30-s window being decoded */
  float logprob;            /* log probability of the token */
  int step;                 /* 0 for the first sampled token of the window */
  double aligned_time;      /* word timestamps on, text tokens: seconds from the start
                               of the audio given of the frame the alignment heads attend
                               to most (mean over heads) in the step that chose the
                               token; < 0 otherwise */
} WhisperTokenEvent;

/* Return FALSE to stop the transcription (it then fails with CANCELLED).
 * Called between two decode steps without the engine's compute lock held:
 * it may block, and it may use other streams of the same engine. */
typedef gboolean (*WhisperTokenFunc) (const WhisperTokenEvent *event, gpointer user_data);
/* Called for each segment as soon as it is complete; the segment belongs to
 * the callee. Return FALSE to stop. */
typedef gboolean (*WhisperSegmentFunc) (WhisperSegment *segment, gpointer user_data);

/* The default silence threshold, dBFS: far below speech at any usable
 * recording level (the shared speech clips' loudest 20-ms frames are
 * between -21 and -8 dBFS), above the noise floor of 16-bit silence with
 * dither (about -101 dBFS) and of a muted microphone. */
#define WHISPER_DEFAULT_SILENCE_THRESHOLD_DB (-60.0)
/* A silence threshold at or below this decodes every window. */
#define WHISPER_SILENCE_THRESHOLD_OFF_DB (-150.0)

typedef enum {
  WHISPER_TASK_TRANSCRIBE,  /* text in the language spoken */
  WHISPER_TASK_TRANSLATE,   /* English text (multilingual models) */
} WhisperTask;

#define WHISPER_MAX_TEMPERATURES 16
/* Beams, and sequences sampled at one temperature, decoded together. */
#define WHISPER_MAX_BEAM 16

typedef struct {
  gboolean condition_on_previous_text;  /* default TRUE */
  double no_speech_threshold;           /* default 0.6; < 0 disables the skip */
  double logprob_threshold;             /* default -1.0 */
  double compression_ratio_threshold;   /* default 2.4 (the reference's): text that
                                           compresses better than this is a loop */
  gboolean strict_no_speech;            /* default TRUE: a window the model finds likely
                                           silent (no_speech_threshold) is also skipped
                                           when its text is a loop or holds no letter or
                                           digit, however confident; FALSE: the
                                           reference's rule only */
  double max_initial_timestamp;         /* seconds, default 1.0 */
  gboolean suppress_blank;              /* default TRUE */
  gboolean suppress_non_speech;         /* default TRUE (suppress_tokens = [-1]) */
  double silence_threshold_db;          /* default -60: a window whose loudest 20-ms frame
                                           is quieter (dBFS) is skipped, not decoded;
                                           <= WHISPER_SILENCE_THRESHOLD_OFF_DB decodes every
                                           window (whisper-speech-gate.h) */
  const WhisperVad *vad;                 /* default NULL; set (borrowed, outliving the
                                           transcription): a window in which the voice
                                           activity detector finds no speech region
                                           (vad_options) is skipped, not decoded */
  WhisperVadOptions vad_options;        /* default whisper_vad_options_init()'s */

  /* Language and task (faster-whisper's transcribe() options of the same
   * names). Strings are copied by whisper_stream_set_options(). */
  const char *language;                 /* default NULL: detected on multilingual models
                                           (English on English-only ones); or a Whisper
                                           language: "de", "de-DE", "de_DE", "deu",
                                           "German" (whisper-languages.h), "auto" = NULL */
  WhisperTask task;                     /* default TRANSCRIBE */
  gboolean detect_language_per_window;  /* default FALSE (faster-whisper's multilingual) */
  double language_detection_threshold;  /* default 0.5 */
  int language_detection_segments;      /* default 1 (windows looked at) */

  /* Prompting */
  const char *initial_prompt;           /* default NULL: text before the first window */
  const char *hotwords;                 /* default NULL: hint words before every window
                                           (not with a prefix) */
  const char *prefix;                   /* default NULL: forced start of the first window */
  double prompt_reset_on_temperature;   /* default 0.5: a window decoded hotter than this
                                           starts the prompt afresh */

  /* Search */
  int beam_size;                        /* default 1 (greedy); 1..WHISPER_MAX_BEAM */
  int best_of;                          /* default 5: sequences sampled at temperature > 0 */
  double patience;                      /* default 1 */
  double length_penalty;                /* default 1: score = sum / length^penalty */
  double repetition_penalty;            /* default 1 (off) */
  int no_repeat_ngram_size;             /* default 0 (off) */
  double temperatures[WHISPER_MAX_TEMPERATURES];  /* default { 0 }: the fallback list */
  int n_temperatures;                   /* default 1 */
  gboolean without_timestamps;          /* default FALSE */
  int max_new_tokens;                   /* default 0: the model's limit */
  int encoder_length;                   /* default 0: the engine's window (max_encoder_length);
                                           else the encoder frames of this transcription's
                                           windows (1..max_encoder_length, 50 a second): a
                                           caller with less audio than a window (live
                                           input) runs a cheaper encoder on a shorter one.
                                           The models were trained on 30-s windows: see
                                           gst-plugin/README.md (live-encoder) for what it
                                           costs in accuracy */
  gboolean last_window_once;            /* default FALSE: Whisper's rule, a window whose
                                           text ends before the audio does (after its last
                                           closed segment or last word) is followed by a
                                           window from there. TRUE: the window that reaches
                                           the end of the input is the last one; what the
                                           rule would decode again is left out, for a caller
                                           that decodes the same audio again with more after
                                           it (live input) */
  gint64 last_window_by;                /* default 0 (none): with Whisper's rule on, a
                                           window it adds after the one that reached the
                                           end of the input is decoded only when it would
                                           end by this time (g_get_monotonic_time (); a
                                           window counted as long as the one before it);
                                           else the call ends there as with
                                           last_window_once. For a live caller whose
                                           deadlines count on the call's length */
  const char *clip_timestamps;          /* default NULL (all): "start,end,start,..." s */
  const gint32 *suppress_tokens;        /* default NULL: ids suppressed besides the
                                           non-speech list (copied) */
  int n_suppress_tokens;
  guint32 seed;                         /* default 0: of the sampling at temperature > 0 */
  gboolean word_timestamps;             /* default FALSE: TRUE gives every segment its words,
                                           timed as faster-whisper's word_timestamps=True
                                           (an alignment pass per window) */
  const char *prepend_punctuations;     /* NULL = faster-whisper's "\"'“¿([{-" (copied) */
  const char *append_punctuations;      /* NULL = faster-whisper's "\"'.。,，!！?？:：”)]}、" */
  double hallucination_silence_threshold; /* seconds; default < 0 (off). With word
                                           timestamps: skip silence longer than this
                                           around a possible hallucination */

  /* faster-whisper's transcribe(vad_filter=True) (whisper-vad-filter.h):
   * the speech regions the detector (`vad`, required) finds with
   * vad_options are cut out, concatenated and transcribed as one stream,
   * and every time is mapped back to the input (rounded to 0.01 s, as
   * faster-whisper's SpeechTimestampsMap does); the removed audio costs no
   * encoder work. Without speech nothing is decoded. Ignored with
   * clip_timestamps, as faster-whisper ignores it. For faster-whisper's
   * VadOptions() keep whisper_vad_options_init()'s vad_options. */
  gboolean vad_filter;                  /* default FALSE */
} WhisperDecodeOptions;

WHISPER_API void whisper_decode_options_init (WhisperDecodeOptions *options);
/* faster-whisper transcribe()'s search: beam 5, best of 5, temperatures
 * 0.0, 0.2, ..., 1.0 (what files are decoded with; the element's live mode
 * keeps greedy decoding). */
WHISPER_API void whisper_decode_options_set_search_defaults (WhisperDecodeOptions *options);
/* Checks the options against the engine's model: clear errors for values
 * out of range, a language that is not Whisper's or that an English-only
 * model cannot decode, translation on an English-only model. */
WHISPER_API gboolean whisper_decode_options_check (const WhisperEngine *engine,
                                                   const WhisperDecodeOptions *options,
                                                   GError **error);
/* "0,0.2,0.4,...": the temperature list (1 to WHISPER_MAX_TEMPERATURES
 * values from 0 to 10). */
WHISPER_API gboolean whisper_decode_options_parse_temperatures (WhisperDecodeOptions *options,
                                                                const char *text, GError **error);
/* "-1,123,...": -1 for the non-speech symbols, ids otherwise; `ids`
 * (GArray of gint32) holds them and must outlive the options until
 * whisper_stream_set_options() copied them. "" suppresses nothing. */
WHISPER_API gboolean whisper_decode_options_parse_suppress_tokens (WhisperDecodeOptions *options,
                                                                   const char *text, GArray *ids,
                                                                   GError **error);

typedef struct _WhisperStream WhisperStream;

/* Sizes the stream's KV caches from the engine's cached constants and runs
 * one decode step on them, so that the backend holds everything a step
 * needs before the first transcription. */
WHISPER_API WhisperStream *whisper_stream_new (WhisperEngine *engine, GError **error);
WHISPER_API void whisper_stream_free (WhisperStream *stream);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (WhisperStream, whisper_stream_free)

WHISPER_API void whisper_stream_set_options (WhisperStream *stream,
                                             const WhisperDecodeOptions *options);
WHISPER_API void whisper_stream_set_token_callback (WhisperStream *stream, WhisperTokenFunc func,
                                                    gpointer user_data);

/* Long-form transcription of `pcm` (faster-whisper's
 * https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/transcribe.py): 30-s windows (or the
 * shorter window of a reduced encoder context), seek by the last timestamp,
 * segments split on consecutive timestamps, conditioned on previous text.
 * The prompt history carries over between calls on the same stream, so
 * consecutive chunks of one recording can be given one after the other;
 * whisper_stream_reset() forgets it. Segments go to `segment_func` as they
 * are complete (may be NULL) and are also returned, in order, in
 * `segments_out` (may be NULL). */
WHISPER_API gboolean whisper_stream_transcribe (WhisperStream *stream, const float *pcm,
                                                gsize n_samples, WhisperSegmentFunc segment_func,
                                                gpointer user_data, GPtrArray **segments_out,
                                                GError **error);

/* A long recording cut at non-speech and decoded `batch_size` pieces at a
 * time (faster-whisper's BatchedInferencePipeline; engine/src/core/whisper-batched.h):
 * the voice activity detector's speech regions (options.vad, required;
 * options.vad_options with max_speech_duration_s at most one window) are
 * joined in order into pieces of at most one window of speech, and each
 * piece is transcribed on its own by one of batch_size streams of the
 * engine working at the same time, whose decode steps run as shared
 * forward passes. The accuracy trade: no piece is conditioned on the text
 * before it (condition_on_previous_text does not apply), and the silence
 * between regions is cut out (times are mapped back to the input). The
 * token callback is not called; segments reach segment_func in order, each
 * piece's once it and the pieces before it are done. batch_size: 1 to 64. */
WHISPER_API gboolean whisper_stream_transcribe_batched (WhisperStream *stream, int batch_size,
                                                        const float *pcm, gsize n_samples,
                                                        WhisperSegmentFunc segment_func,
                                                        gpointer user_data,
                                                        GPtrArray **segments_out, GError **error);

/* A deep copy of a segment (its text, tokens and words). */
WHISPER_API WhisperSegment *whisper_segment_copy (const WhisperSegment *segment);

/* Encoder sharing (default FALSE). With `share` TRUE, a window of this
 * stream whose encoder input (its mel frames and encoder length) is the
 * input of the engine's last encoder pass, with no other pass between,
 * takes that pass's output instead of running the encoder again: a second
 * decode of the same audio (a translation beside a transcript) decoded
 * right after the first, on the same samples and encoder_length, costs no
 * encoder pass. The text is the same as without (the same encoder output);
 * WhisperStreamStats.encoder_shared counts those windows. */
WHISPER_API void whisper_stream_set_share_encoder (WhisperStream *stream, gboolean share);

/* Forget the prompt history (and the detected language: the next
 * transcription detects it again). */
WHISPER_API void whisper_stream_reset (WhisperStream *stream);

/* Replaces the prompt history with `ids` (token ids of text, e.g. from
 * whisper_engine_encode_text(); only the last n_text_ctx / 2 - 1 are used):
 * the next window is conditioned on them (when condition_on_previous_text)
 * and not on what the stream decoded before. A live caller that decodes
 * the same audio again sets the text it has committed, so that the text it
 * has not committed yet is not in the prompt. The initial prompt is not
 * added after this; the language stays. */
WHISPER_API void whisper_stream_set_history (WhisperStream *stream, const gint32 *ids, gsize n_ids);

/* The language the stream decodes in: the one set, or the one detected
 * (with its probability; 1 when it was set); NULL before detection. */
WHISPER_API const char *whisper_stream_get_language (const WhisperStream *stream,
                                                     double *probability);
/* The probability of every language (index i: token <|startoftranscript|>
 * + 1 + i, whisper-languages.h) in the last window language detection
 * looked at; NULL when the language was not detected. */
WHISPER_API const double *whisper_stream_get_language_probabilities (const WhisperStream *stream,
                                                                     int *n_languages);
/* Thread-safe: makes a running whisper_stream_transcribe() return
 * WHISPER_ENGINE_ERROR_CANCELLED after its current step. The flag clears
 * when the next transcription starts. */
WHISPER_API void whisper_stream_cancel (WhisperStream *stream);

/* What the stream was sized with and what it last used (for tests and
 * diagnostics). */
typedef struct {
  int cross_cache_length;     /* rows of the cross-attention K/V cache */
  int self_cache_length;      /* rows of the self-attention K/V cache */
  int last_cross_key_length;  /* key length of the last cross-attention call */
  guint64 windows;            /* windows encoded (encoder_shared included) */
  guint64 encoder_shared;     /* windows that took the engine's last encoder output
                                 (whisper_stream_set_share_encoder), cumulative; the
                                 encoder passes run: windows - encoder_shared */
  guint64 decode_steps;       /* decoder forward passes run */
  double mel_seconds, encoder_seconds, decoder_seconds;  /* time spent, cumulative */
  guint64 samples_non_finite; /* NaN or infinite input samples set to 0, cumulative */
  guint64 samples_clipped;    /* input samples beyond +-1 clamped to it, cumulative */
  guint64 windows_silent;     /* windows skipped by the silence threshold, cumulative */
  guint64 windows_no_voice;   /* windows skipped because the VAD found no speech, cumulative */
  guint64 windows_no_speech;  /* windows decoded and dropped by the no-speech rule, cumulative */
  guint64 windows_fallback;   /* windows decoded again at a higher temperature, cumulative */
  guint64 batched_steps;      /* decode steps run in one pass with other streams' steps
                                 (whisper-step-batcher.h), cumulative */
  guint64 windows_past_deadline;  /* windows Whisper's rule would have added that
                                     last_window_by left out, cumulative */
} WhisperStreamStats;

WHISPER_API void whisper_stream_get_stats (const WhisperStream *stream, WhisperStreamStats *stats);

G_END_DECLS
