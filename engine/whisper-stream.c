/* whisper-stream.c: WhisperStream: long-form transcription as faster-whisper
 * does it (generate_segments() in https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/transcribe.py),
 * greedy decoding of each window (https://github.com/openai/whisper/blob/main/whisper/decoding.py). */
#include "whisper-alignment.h"
#include "whisper-engine-internal.h"
#include "whisper-logits.h"
#include "whisper-pcm.h"
#include "whisper-speech-gate.h"
#include "whisper-tokenizer.h"
#include "whisper-words.h"

#include <gio/gio.h>
#include <math.h>
#include <string.h>

#define FRAMES_PER_SECOND 100
#define TIME_PRECISION 0.02  /* seconds per timestamp token */
#define INPUT_STRIDE 2       /* mel frames per timestamp token */

struct _WhisperStream {
  WhisperEngine *engine;
  WhisperDecodeOptions options;
  WhisperDecoderState dec;
  WhisperLogitConfig logit_config;  /* the engine's, with this stream's options */
  WhisperGraph *step_graph;         /* the decode step's graph (backends with graphs) */

  WhisperTokenFunc token_func;
  gpointer token_data;

  GArray *history;          /* gint32: every emitted segment's tokens */
  guint prompt_reset_since;
  gint cancelled;

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
  int n_sampled;            /* tokens in stream->sampled, EOT excluded */
  double sum_logprob;
  double no_speech_prob;
} WindowResult;

static gboolean prepare_decode_steps (WhisperStream *s, GError **error);

void
whisper_decode_options_init (WhisperDecodeOptions *o)
{
  o->condition_on_previous_text = TRUE;
  o->no_speech_threshold = 0.6;
  o->logprob_threshold = -1.0;
  o->compression_ratio_threshold = 2.4;
  o->strict_no_speech = TRUE;
  o->max_initial_timestamp = 1.0;
  o->suppress_blank = TRUE;
  o->suppress_non_speech = TRUE;
  o->silence_threshold_db = WHISPER_DEFAULT_SILENCE_THRESHOLD_DB;
  o->vad = NULL;
  whisper_vad_options_init (&o->vad_options);
  o->word_timestamps = FALSE;
  o->prepend_punctuations = NULL;
  o->append_punctuations = NULL;
  o->hallucination_silence_threshold = -1.0;
}

/* TRUE when a speech region (sorted, WhisperVadSpeech) overlaps samples
 * [first, first + n). */
static gboolean
speech_in (const GArray *speech, gsize first, gsize n)
{
  for (guint i = 0; i < speech->len; i++) {
    const WhisperVadSpeech *r = &g_array_index (speech, WhisperVadSpeech, i);
    if (r->start_sample >= (gint64) (first + n))
      break;
    if (r->end_sample > (gint64) first)
      return TRUE;
  }
  return FALSE;
}

void
whisper_segment_free (WhisperSegment *segment)
{
  if (!segment)
    return;
  g_free (segment->text);
  g_free (segment->tokens);
  for (gsize i = 0; i < segment->n_words; i++)
    g_free (segment->words[i].text);
  g_free (segment->words);
  g_free (segment);
}

static void
apply_options (WhisperStream *s)
{
  const WhisperEngine *e = s->engine;
  s->logit_config.suppress_blank = s->options.suppress_blank;
  s->logit_config.n_suppress_ids = s->options.suppress_non_speech ? e->n_suppress_ids : 0;
  s->logit_config.max_initial_timestamp_index =
      s->options.max_initial_timestamp >= 0
          ? (int) lround (s->options.max_initial_timestamp / TIME_PRECISION)
          : -1;
  WhisperBackend *be = e->backend;
  if (be->ops->logits_prepare)
    be->ops->logits_prepare (be, &s->logit_config);
}

WhisperStream *
whisper_stream_new (WhisperEngine *engine, GError **error)
{
  WhisperStream *s = g_new0 (WhisperStream, 1);
  s->engine = whisper_engine_ref (engine);
  const WhisperEngineInfo *info = &engine->info;

  if (!whisper_decoder_state_init (&s->dec, engine, error)) {
    whisper_stream_free (s);
    return NULL;
  }
  s->logit_config = engine->logit_config;
  s->logit_config.backend_cache = NULL;
  whisper_decode_options_init (&s->options);
  apply_options (s);
  if (engine->backend->ops->graph_new)
    s->step_graph = engine->backend->ops->graph_new (engine->backend);

  s->history = g_array_new (FALSE, FALSE, sizeof (gint32));
  s->host_window = g_new (float, (size_t) 2 * engine->max_encoder_length * engine->n_mels);
  s->host_logits = g_new (float, (size_t) 2 * engine->n_vocab);
  s->prompt = g_new (gint32, engine->n_text_ctx);
  s->sampled = g_new (gint32, MAX (info->sample_len, 1));
  whisper_piece_decoder_init (&s->piece, engine->max_token_bytes);
  if (!prepare_decode_steps (s, error)) {
    whisper_stream_free (s);
    return NULL;
  }
  s->stats.cross_cache_length = s->dec.cross_len;
  s->stats.self_cache_length = s->dec.self_len;
  return s;
}

void
whisper_stream_free (WhisperStream *s)
{
  if (!s)
    return;
  WhisperBackend *be = s->engine->backend;
  if (be->ops->logits_release)
    be->ops->logits_release (be, &s->logit_config);
  if (s->step_graph)
    be->ops->graph_free (be, s->step_graph);
  whisper_decoder_state_clear (&s->dec, s->engine);
  if (s->history)
    g_array_unref (s->history);
  g_free (s->host_window);
  g_free (s->host_logits);
  g_free (s->prompt);
  g_free (s->sampled);
  whisper_piece_decoder_clear (&s->piece);
  g_free (s->prepend_punctuations);
  g_free (s->append_punctuations);
  whisper_align_step_capture_free (s->step_capture, s->engine);
  whisper_engine_unref (s->engine);
  g_free (s);
}

void
whisper_stream_set_options (WhisperStream *s, const WhisperDecodeOptions *options)
{
  s->options = *options;
  /* word timestamps: the punctuation sets are copied */
  g_free (s->prepend_punctuations);
  g_free (s->append_punctuations);
  s->prepend_punctuations = g_strdup (options->prepend_punctuations
                                          ? options->prepend_punctuations
                                          : WHISPER_DEFAULT_PREPEND_PUNCTUATIONS);
  s->append_punctuations = g_strdup (options->append_punctuations
                                         ? options->append_punctuations
                                         : WHISPER_DEFAULT_APPEND_PUNCTUATIONS);
  s->options.prepend_punctuations = s->prepend_punctuations;
  s->options.append_punctuations = s->append_punctuations;
  apply_options (s);
}

void
whisper_stream_set_token_callback (WhisperStream *s, WhisperTokenFunc func, gpointer user_data)
{
  s->token_func = func;
  s->token_data = user_data;
}

void
whisper_stream_reset (WhisperStream *s)
{
  g_array_set_size (s->history, 0);
  s->prompt_reset_since = 0;
  s->last_speech_timestamp = 0.0;
}

void
whisper_stream_cancel (WhisperStream *s)
{
  g_atomic_int_set (&s->cancelled, 1);
}

void
whisper_stream_get_stats (const WhisperStream *s, WhisperStreamStats *stats)
{
  *stats = s->stats;
  stats->last_cross_key_length = s->dec.last_cross_key_length;
}

static double
elapsed_since (gint64 start)
{
  return (g_get_monotonic_time () - start) / 1e6;
}

/* [sot_prev, last 223 history tokens] + sot sequence; returns its length and
 * the index of sot in it. */
static int
build_prompt (WhisperStream *s, int *sot_index)
{
  const WhisperEngineInfo *info = &s->engine->info;
  const int max_prev = info->n_text_ctx / 2 - 1;
  int n = 0;
  const guint n_prev = s->history->len - s->prompt_reset_since;
  if (n_prev > 0) {
    const guint take = MIN (n_prev, (guint) max_prev);
    s->prompt[n++] = info->token_sot_prev;
    memcpy (s->prompt + n,
            &g_array_index (s->history, gint32, s->history->len - take), take * sizeof (gint32));
    n += take;
  }
  *sot_index = n;
  s->prompt[n++] = info->token_sot;
  if (info->is_multilingual) {
    s->prompt[n++] = info->token_sot + 1;  /* <|en|>: language detection is not built yet */
    s->prompt[n++] = info->token_transcribe;
  }
  return n;
}

/* Picks the token from the last row of logits (already in backend memory). */
static void
select_token (WhisperStream *s, float *device_logits, float *host_logits,
              const WhisperLogitState *state, WhisperLogitChoice *choice)
{
  WhisperBackend *be = s->engine->backend;
  if (be->ops->logits_select) {
    be->ops->logits_select (be, device_logits, &s->logit_config, state, choice);
    return;
  }
  be->ops->download (be, host_logits, device_logits, (size_t) s->engine->n_vocab * sizeof (float));
  be->ops->sync (be);
  whisper_logits_select (host_logits, &s->logit_config, state, choice);
}

/* Hands the token to the application's callback; FALSE when it asks to
 * stop. Called with the engine's compute lock held, which it releases
 * around the callback: the callback may block (the element pushes a buffer
 * downstream) or run another stream of this engine. Nothing of this
 * stream's decoding lives in the engine's shared buffers between two
 * steps (its caches, logits and logit state are its own), so work done in
 * between changes none of its tokens. */
static gboolean
emit_token (WhisperStream *s, gint32 token, float logprob, int step, double window_start,
            double *segment_time)
{
  WhisperEngine *e = s->engine;
  const int begin = e->info.token_timestamp_begin;
  WhisperTokenEvent ev = { 0 };
  ev.id = token;
  ev.is_timestamp = token >= begin;
  ev.window_start = window_start;
  ev.logprob = logprob;
  ev.step = step;
  ev.aligned_time = -1.0;
  /* word timestamps: this step's alignment-head attention (whisper-words.h) */
  if (s->dec.capture && token < e->info.token_eot)
    ev.aligned_time = whisper_align_step_time (s->dec.capture, e, window_start);
  if (ev.is_timestamp) {
    *segment_time = window_start + (token - begin) * TIME_PRECISION;
    ev.time = *segment_time;
    ev.piece = "";
  } else {
    ev.time = *segment_time;
    if (token < e->info.token_eot && token < e->n_tokens && e->tokens[token]) {
      gsize size;
      const guint8 *data = g_bytes_get_data (e->tokens[token], &size);
      ev.piece = whisper_piece_decoder_push (&s->piece, data, size);
    } else {
      ev.piece = "";
    }
  }
  g_mutex_unlock (&e->compute_lock);
  const gboolean go_on = s->token_func (&ev, s->token_data);
  g_mutex_lock (&e->compute_lock);
  return go_on;
}

static gboolean
check_cancelled (WhisperStream *s, GError **error)
{
  if (!g_atomic_int_get (&s->cancelled))
    return FALSE;
  g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_CANCELLED,
               "transcription cancelled");
  return TRUE;
}

static gboolean
backend_ok (WhisperBackend *be, GError **error)
{
  return !be->ops->check || be->ops->check (be, error);
}

/* One decode step: the forward pass of `token` at position `pos`, then the
 * choice of the next token. On a backend with decode graphs (CUDA) the
 * whole step is one graph launch and only the choice comes back. */
static gboolean
decode_step (WhisperStream *s, gint32 token, int pos, const WhisperLogitState *state,
             WhisperLogitChoice *choice, GError **error)
{
  WhisperEngine *e = s->engine;
  WhisperBackend *be = e->backend;
  const int row0 = 0;
  /* (a step that captures alignment-head attention runs without a graph) */
  const gboolean graph = s->step_graph && be->ops->logits_select && !s->dec.capture;

  if (graph && !be->ops->graph_begin (be, s->step_graph, error))
    return FALSE;
  whisper_decoder_forward (&s->dec, e, &token, 1, pos, &row0, 1);
  select_token (s, s->dec.logits, s->host_logits, state, choice);
  if (graph && !be->ops->graph_end (be, error))
    return FALSE;
  s->stats.decode_steps++;
  return TRUE;
}

/* One decode step on the stream's caches before any transcription, at the
 * last position (the longest self-attention): whatever a backend builds on
 * a stream's first step is built here, once (the CUDA backend's decode
 * graph of this stream, its records and staging memory; the CPU backend's
 * attention scratch), so that every step of a transcription is arithmetic
 * only (tests/engine/test-decode-steps.c). Its results are thrown away:
 * a window's prompt pass and audio overwrite every cache row a later step
 * reads before it reads it. */
static gboolean
prepare_decode_steps (WhisperStream *s, GError **error)
{
  WhisperEngine *e = s->engine;
  const WhisperLogitState state = { .n_sampled = 0, .last_is_timestamp = FALSE,
                                    .penultimate_is_timestamp = TRUE, .last_timestamp = -1 };
  WhisperLogitChoice choice;
  g_mutex_lock (&e->compute_lock);
  gboolean ok = decode_step (s, e->info.token_sot, s->dec.self_len - 1, &state, &choice, error);
  if (ok) {
    e->backend->ops->sync (e->backend);
    ok = backend_ok (e->backend, error);
  }
  g_mutex_unlock (&e->compute_lock);
  s->stats.decode_steps = 0;
  return ok;
}

/* Encodes the window mel[:, seek : seek+n_frames] and decodes it greedily. */
static gboolean
decode_window (WhisperStream *s, const float *mel, gsize mel_stride, gsize seek, int n_frames,
               double window_start, WindowResult *result, GError **error)
{
  WhisperEngine *e = s->engine;
  WhisperBackend *be = e->backend;
  const int V = e->n_vocab;
  int sot_index;
  const int n_prompt = build_prompt (s, &sot_index);
  /* As CTranslate2 counts it: the prompt's last token is the first decoding
   * step's input, so max_length - (n_prompt - 1) tokens may be generated,
   * at most sample_len. The last one is never fed back, so positions stay
   * below n_text_ctx. */
  const int max_new = MIN (e->info.sample_len, e->n_text_ctx - (n_prompt - 1));
  gboolean ok = FALSE;

  memset (result, 0, sizeof *result);
  whisper_piece_decoder_reset (&s->piece);
  /* word timestamps: the window's start sequence, and per-step capture */
  s->n_sot = MIN (n_prompt - sot_index, (int) G_N_ELEMENTS (s->sot_sequence));
  memcpy (s->sot_sequence, s->prompt + sot_index, s->n_sot * sizeof (gint32));
  if (s->options.word_timestamps && s->token_func) {
    if (!s->step_capture)
      s->step_capture = whisper_align_step_capture_new (e, error);
    if (!s->step_capture)
      return FALSE;
    whisper_align_step_capture_start (s->step_capture, n_frames);
    s->dec.capture = s->step_capture;
  }

  g_mutex_lock (&e->compute_lock);
  gint64 t0 = g_get_monotonic_time ();
  whisper_engine_load_window (e, mel, mel_stride, seek, n_frames, s->host_window);
  whisper_encoder_run (e);
  whisper_decoder_set_audio (&s->dec, e);
  be->ops->sync (be);
  s->stats.encoder_seconds += elapsed_since (t0);
  s->stats.windows++;
  if (!backend_ok (be, error))
    goto out;

  /* The prompt pass; the no-speech probability comes from the raw logits
   * at the SOT position. */
  t0 = g_get_monotonic_time ();
  const int rows[2] = { sot_index, n_prompt - 1 };
  const int n_rows = sot_index == n_prompt - 1 ? 1 : 2;
  whisper_decoder_forward (&s->dec, e, s->prompt, n_prompt, 0, rows, n_rows);
  s->stats.decode_steps++;
  be->ops->download (be, s->host_logits, s->dec.logits, (size_t) V * sizeof (float));
  be->ops->sync (be);
  result->no_speech_prob = whisper_logits_softmax_at (s->host_logits, V, e->info.token_no_speech);

  WhisperLogitState state = { .n_sampled = 0, .last_is_timestamp = FALSE,
                              .penultimate_is_timestamp = TRUE, .last_timestamp = -1 };
  WhisperLogitChoice choice;
  select_token (s, s->dec.logits + (size_t) (n_rows - 1) * V, s->host_logits, &state, &choice);
  double segment_time = window_start;
  for (int step = 0; step < max_new; step++) {
    result->sum_logprob += choice.logprob;
    if (choice.token == e->info.token_eot)
      break;
    s->sampled[result->n_sampled++] = choice.token;
    whisper_logit_state_push (&state, &s->logit_config, choice.token);
    if (s->token_func &&
        !emit_token (s, choice.token, choice.logprob, step, window_start, &segment_time))
      g_atomic_int_set (&s->cancelled, 1);
    if (check_cancelled (s, error))
      goto out;
    if (step + 1 == max_new)
      break;
    if (!decode_step (s, choice.token, n_prompt + step, &state, &choice, error))
      goto out;
  }
  be->ops->sync (be);
  ok = backend_ok (be, error);

out:
  s->dec.capture = NULL;
  s->stats.decoder_seconds += elapsed_since (t0);
  g_mutex_unlock (&e->compute_lock);
  return ok;
}

/* len(utf8) / len(zlib.compress(utf8)), as the reference computes it. */
static double
compression_ratio (const char *text)
{
  const gsize len = strlen (text);
  g_autoptr (GZlibCompressor) z = g_zlib_compressor_new (G_ZLIB_COMPRESSOR_FORMAT_ZLIB, -1);
  guint8 buf[4096];
  gsize total = 0, read, written;
  const guint8 *in = (const guint8 *) text;
  gsize left = len;
  GConverterResult r;
  do {
    r = g_converter_convert (G_CONVERTER (z), in, left, buf, sizeof buf, G_CONVERTER_INPUT_AT_END,
                             &read, &written, NULL);
    in += read;
    left -= read;
    total += written;
  } while (r == G_CONVERTER_CONVERTED);
  return total ? (double) len / total : 0.0;
}

static gboolean
text_is_blank (const char *text)
{
  for (const char *p = text; *p; p = g_utf8_next_char (p))
    if (!g_unichar_isspace (g_utf8_get_char (p)))
      return FALSE;
  return TRUE;
}

/* TRUE when the text holds a letter or a digit of any script. */
static gboolean
text_has_word_character (const char *text)
{
  for (const char *p = text; *p; p = g_utf8_next_char (p))
    if (g_unichar_isalnum (g_utf8_get_char (p)))
      return TRUE;
  return FALSE;
}

/* The no-speech rule. The reference's (generate_segments() in
 * https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/transcribe.py):
 * the model finds no speech likely (no_speech_prob above the threshold) and
 * the decode was not confident (average log probability at or below
 * logprob_threshold). With strict_no_speech, two more ways for a decode to
 * fail where the model finds no speech likely: its text is a loop (compression ratio above
 * compression_ratio_threshold, the reference's test for a failed decode;
 * 300 s of white noise give one sentence 15 times in a window at
 * no_speech_prob 0.94 and avg_logprob -0.29), or it holds no letter or digit
 * (a tone sequence gives " ." at 0.94). */
static gboolean
window_is_no_speech (const WhisperDecodeOptions *o, double no_speech_prob, double avg_logprob,
                     double ratio, const char *text)
{
  if (o->no_speech_threshold < 0 || !(no_speech_prob > o->no_speech_threshold))
    return FALSE;
  if (!(avg_logprob > o->logprob_threshold))
    return TRUE;
  return o->strict_no_speech &&
         (ratio > o->compression_ratio_threshold || !text_has_word_character (text));
}

static WhisperSegment *
segment_new (WhisperStream *s, const gint32 *tokens, int n, double start, double end,
             const WindowResult *wr, double avg_logprob, double ratio)
{
  WhisperSegment *seg = g_new0 (WhisperSegment, 1);
  seg->start = start;
  seg->end = end;
  seg->tokens = g_memdup2 (tokens, n * sizeof (gint32));
  seg->n_tokens = n;
  seg->text = whisper_engine_decode_tokens (s->engine, tokens, n);
  seg->avg_logprob = avg_logprob;
  seg->no_speech_prob = wr->no_speech_prob;
  seg->compression_ratio = ratio;
  seg->temperature = 0.0;
  return seg;
}

static WhisperSegment *
segment_copy (const WhisperSegment *src)
{
  WhisperSegment *seg = g_memdup2 (src, sizeof *src);
  seg->text = g_strdup (src->text);
  seg->tokens = g_memdup2 (src->tokens, src->n_tokens * sizeof (gint32));
  seg->words = src->n_words ? g_memdup2 (src->words, src->n_words * sizeof (WhisperWord)) : NULL;
  for (gsize i = 0; i < src->n_words; i++)
    seg->words[i].text = g_strdup (src->words[i].text);
  return seg;
}

typedef struct {
  WhisperSegmentFunc func;
  gpointer data;
  GPtrArray *out;
  gboolean stop;
} SegmentSink;

/* Keeps a segment unless it is empty or has no length (faster-whisper drops
 * those); its tokens join the prompt history. */
static void
deliver_segment (WhisperStream *s, SegmentSink *sink, WhisperSegment *seg)
{
  if (seg->start == seg->end || text_is_blank (seg->text)) {
    whisper_segment_free (seg);
    return;
  }
  g_array_append_vals (s->history, seg->tokens, seg->n_tokens);
  if (sink->func && !sink->func (sink->out ? segment_copy (seg) : seg, sink->data))
    sink->stop = TRUE;
  if (sink->out)
    g_ptr_array_add (sink->out, seg);
  else if (!sink->func)
    whisper_segment_free (seg);
}

/* Splits the window's tokens at consecutive timestamps (as faster-whisper's
 * generate_segments() does) and
 * returns the number of frames to seek. */
static int
split_segments (WhisperStream *s, GPtrArray *sink, const WindowResult *wr, double time_offset,
                int segment_size, double avg_logprob, double ratio)
{
  const int begin = s->engine->info.token_timestamp_begin;
  const gint32 *tok = s->sampled;
  const int n = wr->n_sampled;
  const gboolean single_ending = n >= 2 && tok[n - 2] < begin && tok[n - 1] >= begin;
  int last_slice = 0;
  gboolean any_consecutive = FALSE;

  for (int i = 1; i <= n; i++) {
    gboolean cut = i < n && tok[i] >= begin && tok[i - 1] >= begin;
    if (i == n && any_consecutive && single_ending)
      cut = TRUE;
    if (!cut)
      continue;
    any_consecutive = TRUE;
    const gint32 *slice = tok + last_slice;
    const int len = i - last_slice;
    const double start = time_offset + (slice[0] - begin) * TIME_PRECISION;
    const double end = time_offset + (slice[len - 1] - begin) * TIME_PRECISION;
    g_ptr_array_add (sink, segment_new (s, slice, len, start, end, wr, avg_logprob, ratio));
    last_slice = i;
  }

  if (any_consecutive) {
    if (single_ending)
      return segment_size;
    return MIN ((tok[last_slice - 1] - begin) * INPUT_STRIDE, segment_size);
  }

  double duration = segment_size / (double) FRAMES_PER_SECOND;
  for (int i = n - 1; i >= 0; i--)
    if (tok[i] >= begin) {
      if (tok[i] != begin)
        duration = (tok[i] - begin) * TIME_PRECISION;
      break;
    }
  g_ptr_array_add (sink, segment_new (s, tok, n, time_offset, time_offset + duration, wr,
                                       avg_logprob, ratio));
  return segment_size;
}

static void
free_segments (GPtrArray *segments)
{
  for (guint i = 0; i < segments->len; i++)
    whisper_segment_free (g_ptr_array_index (segments, i));
  g_ptr_array_set_size (segments, 0);
}

gboolean
whisper_stream_transcribe (WhisperStream *s, const float *pcm, gsize n_samples,
                           WhisperSegmentFunc segment_func, gpointer user_data,
                           GPtrArray **segments_out, GError **error)
{
  WhisperEngine *e = s->engine;
  g_atomic_int_set (&s->cancelled, 0);
  /* word timestamps need alignment heads (whisper-alignment.h) */
  if (s->options.word_timestamps && !whisper_alignment_heads_check (e, error))
    return FALSE;
  if (n_samples > 0 && !pcm) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_AUDIO,
                 "no audio buffer given for %zu samples", n_samples);
    return FALSE;
  }

  /* the input boundary: whisper-pcm.h */
  g_autofree float *fixed = NULL;
  WhisperPcmFixes fixes = { 0, 0 };
  pcm = whisper_pcm_sanitize (pcm, n_samples, &fixed, &fixes);
  s->stats.samples_non_finite += fixes.non_finite;
  s->stats.samples_clipped += fixes.clipped;

  /* The voice activity detector's speech regions of the whole input
   * (whisper-vad.h): about 0.2 % of real time on one core. */
  g_autoptr (GArray) speech = NULL;
  if (s->options.vad) {
    speech = g_array_new (FALSE, FALSE, sizeof (WhisperVadSpeech));
    if (!whisper_vad_speech_timestamps (s->options.vad, pcm, n_samples, &s->options.vad_options,
                                        speech, error))
      return FALSE;
  }

  SegmentSink sink = { segment_func, user_data, NULL, FALSE };
  s->last_speech_timestamp = 0.0;  /* word timestamps: per call, as the reference */
  if (segments_out)
    sink.out = g_ptr_array_new_with_free_func ((GDestroyNotify) whisper_segment_free);

  gint64 t0 = g_get_monotonic_time ();
  gsize mel_stride;
  g_autofree float *mel = whisper_mel_compute (e->mel, pcm, n_samples, &mel_stride);
  s->stats.mel_seconds += elapsed_since (t0);

  const gsize content_frames = n_samples / WHISPER_HOP_LENGTH;
  const int window_frames = 2 * e->max_encoder_length;
  gsize seek = 0;
  gboolean ok = TRUE;

  while (seek < content_frames && !sink.stop) {
    const double time_offset = seek / (double) FRAMES_PER_SECOND;
    const int segment_size = (int) MIN ((gsize) window_frames, content_frames - seek);
    WindowResult wr;

    /* Silence is not decoded: conditioned on earlier text, the model
     * writes "you" into it and the no-speech rule lets it through. */
    const gsize first_sample = seek * WHISPER_HOP_LENGTH;
    const gsize window_samples =
        MIN ((gsize) segment_size * WHISPER_HOP_LENGTH, n_samples - first_sample);
    if (!whisper_gate_is_loud_enough (pcm + first_sample, window_samples,
                                      s->options.silence_threshold_db)) {
      s->stats.windows_silent++;
      seek += segment_size;
      continue;
    }
    /* Nor is noise in which the detector finds no speech: tones gave
     * "Thank you." at no-speech probability 0.90 and average log
     * probability -0.85, which the no-speech rule keeps. */
    if (speech && !speech_in (speech, first_sample, window_samples)) {
      s->stats.windows_no_voice++;
      seek += segment_size;
      continue;
    }

    if (!decode_window (s, mel, mel_stride, seek, segment_size, time_offset, &wr, error)) {
      ok = FALSE;
      break;
    }
    const double avg_logprob = wr.sum_logprob / (wr.n_sampled + 1);
    g_autofree char *text = whisper_engine_decode_tokens (e, s->sampled, wr.n_sampled);
    g_strstrip (text);
    const double ratio = compression_ratio (text);

    if (window_is_no_speech (&s->options, wr.no_speech_prob, avg_logprob, ratio, text)) {
      s->stats.windows_no_speech++;
      seek += segment_size;
      continue;
    }
    const gsize previous_seek = seek;
    g_autoptr (GPtrArray) window = g_ptr_array_new ();
    seek += split_segments (s, window, &wr, time_offset, segment_size, avg_logprob, ratio);
    /* ---- word timestamps (whisper-words.h) ---- */
    gboolean skip_window = FALSE;
    guint n_keep = window->len;
    if (s->options.word_timestamps &&
        !whisper_words_window (&s->dec, e, window, s->sampled, wr.n_sampled, s->sot_sequence,
                               s->n_sot, "en", time_offset, segment_size, previous_seek,
                               content_frames, s->prepend_punctuations,
                               s->append_punctuations,
                               s->options.hallucination_silence_threshold,
                               &s->last_speech_timestamp, &seek, &skip_window, &n_keep,
                               error)) {
      ok = FALSE;
      free_segments (window);
      break;
    }
    if (skip_window) {
      free_segments (window);
      continue;
    }
    for (guint i = n_keep; i < window->len; i++)
      whisper_segment_free (g_ptr_array_index (window, i));
    g_ptr_array_set_size (window, MIN (n_keep, window->len));
    /* ---- */
    for (guint i = 0; i < window->len; i++)
      deliver_segment (s, &sink, g_ptr_array_index (window, i));
    if (!s->options.condition_on_previous_text)
      s->prompt_reset_since = s->history->len;
  }

  if (ok && sink.stop) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_CANCELLED,
                 "transcription stopped by the segment callback");
    ok = FALSE;
  }
  if (ok && segments_out)
    *segments_out = g_steal_pointer (&sink.out);
  if (sink.out)
    g_ptr_array_unref (sink.out);
  return ok;
}
