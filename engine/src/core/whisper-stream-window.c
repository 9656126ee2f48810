/* whisper-stream-window.c: one window of a stream: its decoder state
 * lent by the engine, the encoder pass, language detection, the prompt,
 * the decode steps (batched with other streams' steps) and the temperature
 * fallback (decode/whisper-fallback.h). whisper-stream.c runs the windows. */
#include "whisper-stream-private.h"

#include "whisper-fallback.h"
#include "whisper-logits.h"
#include "whisper-search.h"

#include <math.h>
#include <string.h>

/* Decoder states held by the streams of this thread (lease_decoder_locked()). */
static _Thread_local int thread_leases;


/* The window's prompt, as faster-whisper's get_prompt() builds it:
 * [<|startofprev|>, hotwords (without a prefix), the last 223 tokens of the
 * history], the SOT sequence (<|startoftranscript|>, and on multilingual
 * models the language and the task), <|notimestamps|> without timestamps,
 * then the forced prefix (<|0.00|> with timestamps, and its tokens).
 * Returns the length; *sot_index is the SOT's position, *n_forced the
 * prefix's length (those tokens also start s->sampled). */
static int
build_prompt (WhisperStream *s, int language, gboolean with_prefix, int *sot_index,
              int *n_forced)
{
  const WhisperEngineInfo *info = &s->engine->info;
  const int max_prev = info->n_text_ctx / 2 - 1;
  int n = 0;
  const guint n_prev = s->history->len - s->prompt_reset_since;
  const gboolean hotwords = s->n_hotword_tokens > 0 && !(with_prefix && s->n_prefix_tokens > 0);
  if (n_prev > 0 || hotwords) {
    s->prompt[n++] = info->token_sot_prev;
    if (hotwords) {
      const gsize take = MIN (s->n_hotword_tokens, (gsize) max_prev);
      memcpy (s->prompt + n, s->hotword_tokens, take * sizeof (gint32));
      n += (int) take;
    }
    /* faster-whisper does not bound hotwords + history together (at 448
     * tokens CTranslate2 refuses the prompt); here the oldest history gives
     * way where they would leave less than a quarter of the context */
    guint take = MIN (n_prev, (guint) max_prev);
    const int room = info->n_text_ctx * 3 / 4 - n;
    take = MIN (take, (guint) MAX (room, 0));
    memcpy (s->prompt + n, &g_array_index (s->history, gint32, s->history->len - take),
            take * sizeof (gint32));
    n += (int) take;
  }
  *sot_index = n;
  s->prompt[n++] = info->token_sot;
  if (info->is_multilingual) {
    s->prompt[n++] = info->token_sot + 1 + language;
    s->prompt[n++] = s->options.task == WHISPER_TASK_TRANSLATE ? info->token_translate
                                                               : info->token_transcribe;
  }
  if (s->options.without_timestamps)
    s->prompt[n++] = info->token_no_timestamps;
  *n_forced = 0;
  if (with_prefix && s->n_prefix_tokens > 0) {
    const int first = n;
    if (!s->options.without_timestamps)
      s->prompt[n++] = info->token_timestamp_begin;
    const gsize take = MIN (s->n_prefix_tokens, (gsize) max_prev);
    memcpy (s->prompt + n, s->prefix_tokens, take * sizeof (gint32));
    n += (int) take;
    *n_forced = n - first;
  }
  return n;
}

/* Picks the token from the last row of logits (already in backend memory). */
static void
select_token (WhisperStream *s, float *device_logits, float *host_logits,
              const WhisperLogitState *state, WhisperLogitChoice *choice)
{
  WhisperBackend *be = s->engine->net.backend;
  if (be->ops->logits_select) {
    be->ops->logits_select (be, device_logits, &s->logit_config, state, choice);
    return;
  }
  be->ops->download (be, host_logits, device_logits,
                     (size_t) s->engine->net.n_vocab * sizeof (float));
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
  if (s->dec->capture && token < e->info.token_eot)
    ev.aligned_time = whisper_align_step_time (s->dec->capture, &e->timing, window_start);
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
  /* (the next batch of steps waits for this stream at most about one pass:
   * whisper-step-batcher.h) */
  whisper_turn_lock_release (&e->net.compute_lock);
  const gboolean go_on = s->token_func (&ev, s->token_data);
  whisper_turn_lock_acquire (&e->net.compute_lock);
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

/* The forward pass of one decode step of this stream, batched with the
 * steps other streams of the engine are ready to run (whisper-step-batcher.h);
 * the logits are in rows->st->logits. Called with the compute lock held,
 * which is let go meanwhile. */
static void
run_step (WhisperStream *s, const WhisperStepRows *rows)
{
  if (whisper_step_batcher_run (s->engine->steps, &s->engine->net, rows, &s->step_member) > 1)
    s->stats.batched_steps++;
}

/* The search's decode steps (WhisperSearch.step). */
static void
search_step (gpointer data, const gint32 *tokens, const int *slots, int n_rows, int pos)
{
  WhisperStream *s = data;
  const WhisperStepRows rows = { .st = s->dec, .tokens = tokens, .slots = slots,
                                 .n_rows = n_rows, .pos = pos };
  run_step (s, &rows);
}

/* One decode step: the forward pass of `token` at position `pos`, then the
 * choice of the next token. On a backend with decode graphs (CUDA) the
 * whole step is one graph launch and only the choice comes back. */
static gboolean
decode_step (WhisperStream *s, gint32 token, int pos, const WhisperLogitState *state,
             WhisperLogitChoice *choice, GError **error)
{
  WhisperEngine *e = s->engine;
  WhisperBackend *be = e->net.backend;
  const int row0 = 0;
  /* (a step that captures alignment-head attention, or of a window shorter
   * than the graph's, runs without a graph) */
  const gboolean graph = s->lease->step_graph && be->ops->logits_select && !s->dec->capture &&
                         s->dec->encoder_length == e->net.max_encoder_length;

  if (graph && !be->ops->graph_begin (be, s->lease->step_graph, error))
    return FALSE;
  if (graph) {
    whisper_decoder_forward (s->dec, &e->net, &token, 1, pos, &row0, 1);
  } else {
    const WhisperStepRows rows = { .st = s->dec, .tokens = &token, .slots = &row0, .n_rows = 1,
                                   .pos = pos, .capture = TRUE };
    run_step (s, &rows);
  }
  select_token (s, s->dec->logits, s->host_logits + (size_t) 2 * e->net.n_vocab, state, choice);
  if (graph && !be->ops->graph_end (be, error))
    return FALSE;
  s->stats.decode_steps++;
  return TRUE;
}

/* One decode step on a decoder state new to the engine, at the last
 * position (the longest self-attention): whatever a backend builds on a
 * state's first step is built here, once (the CUDA backend's decode graph
 * of the state, its records and staging memory; the CPU backend's
 * attention scratch), so that every step of a transcription is arithmetic
 * only (tests/engine/test-decode-steps.c). Its results are thrown away: a
 * window's prompt pass and audio overwrite every cache row a later step
 * reads before it reads it. Not counted in the stream's decode steps. */
static gboolean
warm_up_decoder_locked (WhisperStream *s, GError **error)
{
  WhisperEngine *e = s->engine;
  const WhisperLogitState state = { .n_sampled = 0, .last_is_timestamp = FALSE,
                                    .penultimate_is_timestamp = TRUE, .last_timestamp = -1 };
  WhisperLogitChoice choice;
  const guint64 steps = s->stats.decode_steps, batched = s->stats.batched_steps;
  gboolean ok = decode_step (s, e->info.token_sot, s->dec->self_len - 1, &state, &choice, error);
  if (ok) {
    e->net.backend->ops->sync (e->net.backend);
    ok = backend_ok (e->net.backend, error);
  }
  s->stats.decode_steps = steps;
  s->stats.batched_steps = batched;
  s->lease->warmed = ok;
  return ok;
}

/* Streams decoding at once: as many as one batch of decode steps holds
 * (the backend's max_exact_rows rows, n_slots each) and one more, which
 * encodes its window while the others decode; at least 2, at most
 * LEASE_MAX_DECODING. A stream that finds that many decoding waits for
 * one of them, in turn, up to LEASE_WAIT_US: more would not share the passes (so
 * not go faster) but would each hold a decoder state (its KV caches: one
 * self-attention cache per slot and the cross-attention cache, of which
 * the rows its windows wrote take room). The wait is
 * bounded, and a thread that holds a state already never waits (a token
 * callback that runs another stream of the engine, or a pipeline in which
 * one element's output waits for another's text), so no stream waits on a
 * state that cannot come back. */
#define LEASE_MAX_DECODING 8
#define LEASE_WAIT_US (5 * G_TIME_SPAN_SECOND)

/* Borrows a decoder state of the engine for one window (with the caches
 * the search needs), warmed up when it is new. Called with the compute
 * lock held, so that a stream waiting for the engine holds no state; lets
 * go of it while it waits for a state. A stream that holds one already
 * keeps it. */
gboolean
whisper_stream_lease_decoder_locked (WhisperStream *s, GError **error)
{
  WhisperEngine *e = s->engine;
  if (s->lease)
    return TRUE;
  const guint limit = CLAMP (e->net.backend->max_exact_rows / MAX (1, s->n_slots) + 1, 2,
                             LEASE_MAX_DECODING);
  guint lent;
  whisper_decoder_pool_counts (e->decoders, NULL, &lent);
  if (thread_leases == 0 && lent >= limit) {
    /* in the order the streams came (e->lease_turn), without the compute
     * lock (the streams decoding need it to finish) */
    whisper_turn_lock_release (&e->net.compute_lock);
    whisper_turn_lock_acquire (&e->lease_turn);
    whisper_decoder_pool_wait_below (e->decoders, limit, g_get_monotonic_time () + LEASE_WAIT_US);
    whisper_turn_lock_acquire (&e->net.compute_lock);
    whisper_turn_lock_release (&e->lease_turn);
  }
  s->lease = whisper_decoder_pool_acquire (e->decoders, &e->net, s->n_slots, error);
  if (!s->lease)
    return FALSE;
  thread_leases++;
  s->lease_thread = g_thread_self ();
  s->dec = &s->lease->dec;
  if (!s->lease->warmed && !warm_up_decoder_locked (s, error)) {
    /* a state that failed its first step is not kept */
    whisper_decoder_pool_discard (s->engine->decoders, &s->engine->net, s->lease);
    s->lease = NULL;
    s->dec = NULL;
    thread_leases--;
    return FALSE;
  }
  return TRUE;
}

/* Gives the window's decoder state back to the engine. */
void
whisper_stream_return_decoder (WhisperStream *s)
{
  if (!s->lease)
    return;
  whisper_step_batcher_leave (s->engine->steps, &s->step_member);
  s->stats.last_cross_key_length = s->dec->last_cross_key_length;
  whisper_decoder_pool_release (s->engine->decoders, &s->engine->net, s->lease);
  s->lease = NULL;
  s->dec = NULL;
  thread_leases--;
}

/* One decoder state made and warmed up at once (the stream's first
 * transcription then finds it), and given back. */
gboolean
whisper_stream_prepare_decode_steps (WhisperStream *s, GError **error)
{
  whisper_turn_lock_acquire (&s->engine->net.compute_lock);
  const gboolean ok = whisper_stream_lease_decoder_locked (s, error);
  whisper_turn_lock_release (&s->engine->net.compute_lock);
  whisper_stream_return_decoder (s);
  return ok;
}

/* Whether the engine's encoder output is that of `window` (encoder input
 * of encoder_length), which this stream may reuse. Caller holds the
 * compute lock. */
static gboolean
encoder_output_reusable (const WhisperStream *s, const float *window, int encoder_length)
{
  const WhisperEngine *e = s->engine;
  return s->share_encoder && e->encoded_length == encoder_length &&
         memcmp (e->encoded_window, window,
                 (size_t) 2 * encoder_length * e->net.n_mels * sizeof (float)) == 0;
}

/* The engine's encoder output is now that of `window`. Caller holds the
 * compute lock. */
static void
remember_encoder_input (WhisperEngine *e, const float *window, int encoder_length)
{
  if (!e->encoded_window)
    e->encoded_window = g_new (float, (size_t) 2 * e->net.max_encoder_length * e->net.n_mels);
  memcpy (e->encoded_window, window,
          (size_t) 2 * encoder_length * e->net.n_mels * sizeof (float));
  e->encoded_length = encoder_length;
}

/* Encodes mel[:, seek : seek+n_frames] in a window of encoder_length
 * encoder frames (n_frames <= 2 * encoder_length) and computes the
 * cross-attention K/V from it; a stream that shares encoder output takes
 * the engine's last output when it was computed from the same input.
 * Caller holds the compute lock. */
static gboolean
encode_window (WhisperStream *s, const float *mel, gsize mel_stride, gsize seek, int n_frames,
               int encoder_length, GError **error)
{
  WhisperEngine *e = s->engine;
  WhisperBackend *be = e->net.backend;
  gint64 t0 = g_get_monotonic_time ();
  whisper_encoder_fill_window (&e->net, mel, mel_stride, seek, n_frames, encoder_length,
                               s->host_window);
  if (encoder_output_reusable (s, s->host_window, encoder_length)) {
    s->stats.encoder_shared++;
  } else {
    whisper_encoder_upload_window (&e->net, encoder_length, s->host_window);
    whisper_encoder_run (&e->net, encoder_length);
    remember_encoder_input (e, s->host_window, encoder_length);
  }
  /* (the alignment of word timestamps reads the float32 cross K/V) */
  s->dec->keep_cross_f32 = s->options.word_timestamps;
  whisper_decoder_set_audio (s->dec, &e->net, encoder_length);
  be->ops->sync (be);
  s->stats.encoder_seconds += whisper_elapsed_since (t0);
  s->stats.windows++;
  return backend_ok (be, error);
}

/* The language probabilities of the audio whose K/V the decoder holds,
 * as CTranslate2's whisper_stream_detect_language() computes them: the decoder on
 * <|startoftranscript|> alone, softmax over the language tokens only.
 * Returns the most probable language (probs[n_languages] filled when not
 * NULL). Caller holds the compute lock. */
static int
detect_language_here (WhisperStream *s, double *top_probability, double *probs)
{
  WhisperEngine *e = s->engine;
  WhisperBackend *be = e->net.backend;
  const WhisperEngineInfo *info = &e->info;
  const int n_languages = info->token_translate - info->token_sot - 1;
  const int row = 0;
  const gint32 sot = info->token_sot;
  whisper_decoder_forward (s->dec, &e->net, &sot, 1, 0, &row, 1);
  s->stats.decode_steps++;
  be->ops->download (be, s->host_logits, s->dec->logits, (size_t) e->net.n_vocab * sizeof (float));
  be->ops->sync (be);
  const float *lang = s->host_logits + sot + 1;
  float max = -INFINITY;
  for (int i = 0; i < n_languages; i++)
    max = MAX (max, lang[i]);
  double sum = 0.0;
  for (int i = 0; i < n_languages; i++)
    sum += exp ((double) lang[i] - max);
  int best = 0;
  for (int i = 0; i < n_languages; i++) {
    const double p = exp ((double) lang[i] - max) / sum;
    if (probs)
      probs[i] = p;
    if (lang[i] > lang[best])
      best = i;
  }
  *top_probability = exp ((double) lang[best] - max) / sum;
  return best;
}

/* faster-whisper's whisper_stream_detect_language() on the first language_detection_segments
 * windows from frame `seek` (each window padded or cut to the window
 * length as pad_or_trim() does, the frame past the content included): the
 * first window whose top language is more likely than the threshold
 * decides; else the language most often on top, with its highest
 * probability. */
gboolean
whisper_stream_detect_language (WhisperStream *s, const float *mel, gsize mel_stride,
                                gsize n_mel_frames, gsize seek, GError **error)
{
  WhisperEngine *e = s->engine;
  const gsize window = 2 * (gsize) e->net.max_encoder_length;
  const int n_languages = e->info.token_translate - e->info.token_sot - 1;
  if (seek >= n_mel_frames)
    seek = 0;
  const gsize total = MIN (n_mel_frames - seek,
                           (gsize) s->options.language_detection_segments * window);
  g_autofree int *votes = g_new0 (int, n_languages);
  g_autofree double *best_prob = g_new0 (double, n_languages);
  g_autofree int *order = g_new0 (int, n_languages);  /* first-seen order of the votes */
  int n_seen = 0;
  gboolean decided = FALSE;
  int language = 0;
  double probability = 0.0;

  whisper_turn_lock_acquire (&e->net.compute_lock);
  if (!whisper_stream_lease_decoder_locked (s, error)) {
    whisper_turn_lock_release (&e->net.compute_lock);
    return FALSE;
  }
  for (gsize i = 0; i < total && !decided; i += window) {
    const int n = (int) MIN (window, total - i);
    if (!encode_window (s, mel, mel_stride, seek + i, n, e->net.max_encoder_length, error)) {
      whisper_turn_lock_release (&e->net.compute_lock);
      return FALSE;
    }
    double p;
    const int top = detect_language_here (s, &p, s->language_probs);
    s->n_language_probs = n_languages;
    if (p > s->options.language_detection_threshold) {
      language = top;
      probability = p;
      decided = TRUE;
    } else {
      if (votes[top]++ == 0)
        order[n_seen++] = top;
      best_prob[top] = MAX (best_prob[top], p);
    }
  }
  whisper_turn_lock_release (&e->net.compute_lock);
  if (!decided && n_seen > 0) {
    language = order[0];
    for (int k = 1; k < n_seen; k++)
      if (votes[order[k]] > votes[language])
        language = order[k];
    probability = best_prob[language];
  }
  s->language_index = language;
  s->language_probability = probability;
  return TRUE;
}

/* The greedy loop with the backend's own choice of tokens (on CUDA: one
 * graph launch per step, only the choice copied back). The prompt's logits
 * are the last row of s->dec->logits. Tokens go to s->sampled; with `emit`
 * each token is handed to the callback as its step completes. */
static gboolean
greedy_plain (WhisperStream *s, int n_prompt, int n_rows, int max_new, double window_start,
              gboolean emit, int *n_sampled, double *sum_logprob, GError **error)
{
  WhisperEngine *e = s->engine;
  const int V = e->net.n_vocab;
  WhisperLogitState state = { .n_sampled = 0, .last_is_timestamp = FALSE,
                              .penultimate_is_timestamp = TRUE, .last_timestamp = -1 };
  WhisperLogitChoice choice;
  double segment_time = window_start;
  *n_sampled = 0;
  *sum_logprob = 0.0;
  select_token (s, s->dec->logits + (size_t) (n_rows - 1) * V, s->host_logits + (size_t) 2 * V,
                &state, &choice);
  for (int step = 0; step < max_new; step++) {
    *sum_logprob += choice.logprob;
    if (choice.token == e->info.token_eot)
      break;
    s->sampled[(*n_sampled)++] = choice.token;
    whisper_logit_state_push (&state, &s->logit_config, choice.token);
    if (emit && s->token_func &&
        !emit_token (s, choice.token, choice.logprob, step, window_start, &segment_time))
      g_atomic_int_set (&s->cancelled, 1);
    if (check_cancelled (s, error))
      return FALSE;
    if (step + 1 == max_new)
      break;
    if (!decode_step (s, choice.token, n_prompt + step, &state, &choice, error))
      return FALSE;
  }
  return TRUE;
}

/* Host buffers and cache slots for the search the options ask for. Not on
 * the decode path: once per transcription, and only when they grow. */
gboolean
whisper_stream_ensure_search (WhisperStream *s, GError **error)
{
  const WhisperDecodeOptions *o = &s->options;
  gboolean sampling = FALSE;
  for (int i = 0; i < o->n_temperatures; i++)
    sampling |= o->temperatures[i] > 0;
  const int slots = MAX (o->beam_size, sampling ? o->best_of : 1);
  const int max_hyp = MAX (o->best_of, (int) lround (o->beam_size * o->patience) + o->beam_size);
  if (slots > s->engine->net.n_text_ctx) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "%d sequences decoded together is more than the %d this model allows", slots,
                 s->engine->net.n_text_ctx);
    return FALSE;
  }
  s->n_slots = slots;  /* each window's decoder state gets them (lease_decoder_locked) */
  if (!s->search || whisper_search_buffers_slots (s->search) < slots ||
      s->search_max_hyp < max_hyp) {
    whisper_search_buffers_free (s->search);
    s->search = whisper_search_buffers_new (slots, s->engine->net.n_text_ctx,
                                            s->engine->net.n_vocab, max_hyp);
    s->search_max_hyp = max_hyp;
  }
  return TRUE;
}

/* The window's prompt and what bounds its decode (decode_window()). */
typedef struct {
  int n_prompt;   /* prompt tokens (s->prompt) */
  int n_forced;   /* forced prefix tokens at its end (they also start s->sampled) */
  int n_rows;     /* logits rows of the prompt pass: SOT's and the last (1 when they are one) */
  int max_steps;  /* CTranslate2's max_length: steps, forced ones included */
  int max_new;    /* tokens to sample at most */
} WindowPrompt;

/* Builds the window's prompt and runs the prompt pass; the no-speech
 * probability comes from the raw logits at the SOT position, and the logits
 * after the prompt's last token are left in s->host_logits + n_vocab. Also
 * the window's start sequence and the per-step capture of word
 * timestamps. Caller holds the compute lock. */
static gboolean
prompt_pass (WhisperStream *s, int language, gboolean with_prefix, int n_frames,
             WindowPrompt *p, double *no_speech_prob, GError **error)
{
  WhisperEngine *e = s->engine;
  WhisperBackend *be = e->net.backend;
  const WhisperDecodeOptions *o = &s->options;
  const int V = e->net.n_vocab;
  int sot_index;
  p->n_prompt = build_prompt (s, language, with_prefix, &sot_index, &p->n_forced);
  /* word timestamps: the window's start sequence (SOT up to the prefix),
   * and the per-step capture of greedy steps */
  s->n_sot = e->info.is_multilingual ? 3 : 1;  /* <|startoftranscript|> [language, task] */
  memcpy (s->sot_sequence, s->prompt + sot_index, s->n_sot * sizeof (gint32));
  /* (only greedy steps capture: a beam search's tokens reach the callback
   * after it, their times come from the window's alignment pass) */
  if (o->word_timestamps && s->token_func && o->beam_size == 1) {
    if (!s->step_capture)
      s->step_capture = whisper_align_step_capture_new (&e->timing, error);
    if (!s->step_capture)
      return FALSE;
    whisper_align_step_capture_start (s->step_capture, n_frames);
    s->dec->capture = s->step_capture;
  }
  /* As CTranslate2 counts it: the prompt up to the last task token is
   * the context, that token is the first step's input, and the forced
   * prefix counts as steps; max_length = min(L / 2, L - context) with
   * L = n_text_ctx (or prompt + max_new_tokens). The last token is never
   * fed back, so positions stay below n_text_ctx. */
  const int context = p->n_prompt - p->n_forced - 1;
  int total = o->max_new_tokens > 0 ? p->n_prompt + o->max_new_tokens : e->net.n_text_ctx;
  total = MIN (total, e->net.n_text_ctx);
  p->max_steps = MIN (total / 2, total - context);
  p->max_new = p->max_steps - p->n_forced;

  const int rows[2] = { sot_index, p->n_prompt - 1 };
  p->n_rows = sot_index == p->n_prompt - 1 ? 1 : 2;
  whisper_decoder_forward (s->dec, &e->net, s->prompt, p->n_prompt, 0, rows, p->n_rows);
  s->stats.decode_steps++;
  be->ops->download (be, s->host_logits, s->dec->logits, (size_t) p->n_rows * V * sizeof (float));
  be->ops->sync (be);
  *no_speech_prob = whisper_logits_softmax_at (s->host_logits, V, e->info.token_no_speech);
  if (p->n_rows == 1)
    memcpy (s->host_logits + V, s->host_logits, (size_t) V * sizeof (float));
  memcpy (s->sampled, s->prompt + p->n_prompt - p->n_forced,
          (size_t) p->n_forced * sizeof (gint32));
  return TRUE;
}

/* One attempt of the window at `temperature` (attempt t of the list):
 * greedy on the backend's own choice where nothing else is asked for,
 * else the search (beam search at 0, sampling above). Its tokens go to
 * `tokens`; *emitted tells whether they reached the token callback already. */
static gboolean
decode_attempt (WhisperStream *s, const WindowPrompt *p, int t, double temperature,
                double window_start, const WhisperLogitExtras *extras, gint32 *tokens,
                WhisperAttempt *attempt, gboolean *emitted, GError **error)
{
  WhisperEngine *e = s->engine;
  const WhisperDecodeOptions *o = &s->options;
  const gboolean emit_live = o->n_temperatures == 1;
  attempt->n_tokens = 0;
  attempt->sum_logprob = 0.0;
  if (p->max_new <= 0) {
    memcpy (tokens, s->sampled, (size_t) p->n_forced * sizeof (gint32));
    attempt->n_tokens = p->n_forced;
  } else if (t == 0 && temperature == 0.0 && o->beam_size == 1 &&
             whisper_logit_extras_are_plain (extras)) {
    if (!greedy_plain (s, p->n_prompt, p->n_rows, p->max_new, window_start, emit_live,
                       &attempt->n_tokens, &attempt->sum_logprob, error))
      return FALSE;
    memcpy (tokens, s->sampled, (size_t) attempt->n_tokens * sizeof (gint32));
    *emitted = emit_live;
  } else {
    const WhisperSearch search = {
      .net = &e->net, .dec = s->dec, .config = &s->logit_config, .extras = *extras,
      .forced = s->sampled, .n_forced = p->n_forced, .n_prompt = p->n_prompt,
      .first_logits = s->host_logits + e->net.n_vocab, .max_steps = p->max_steps,
      .beam_size = temperature > 0 ? 1 : o->beam_size,
      .best_of = temperature > 0 ? o->best_of : 1, .patience = o->patience,
      .length_penalty = o->length_penalty, .temperature = temperature, .rand = s->rand,
      .cancelled = &s->cancelled, .decode_steps = &s->stats.decode_steps,
      .step = search_step, .step_data = s,
    };
    WhisperSearchResult r;
    if (!whisper_search_run (&search, s->search, &r, error))
      return FALSE;
    memcpy (tokens, r.tokens, (size_t) r.n_tokens * sizeof (gint32));
    attempt->n_tokens = r.n_tokens;
    attempt->sum_logprob = r.cum_logprob;
  }
  return TRUE;
}

/* Hands the kept attempt's tokens to the token callback (when the attempt
 * did not as it ran); FALSE when the transcription is cancelled. */
static gboolean
emit_window_tokens (WhisperStream *s, int n_sampled, double window_start, GError **error)
{
  double segment_time = window_start;
  for (int i = 0; i < n_sampled; i++)
    if (!emit_token (s, s->sampled[i], 0.0f, i, window_start, &segment_time)) {
      g_atomic_int_set (&s->cancelled, 1);
      break;
    }
  return !check_cancelled (s, error);
}

/* Encodes the window mel[:, seek : seek+n_frames] and decodes it as
 * faster-whisper's generate_with_fallback() does: at each temperature of
 * the list in turn (beam search or greedy at 0, sampling best_of sequences
 * above) until a result is neither a loop (compression ratio above its
 * threshold) nor unlikely (average log probability below its threshold,
 * unless the window is likely silent); when every temperature fails, the
 * most likely result among those that are not loops (or among all)
 * (decode/whisper-fallback.h). */
gboolean
whisper_stream_decode_window (WhisperStream *s, const float *mel, gsize mel_stride, gsize seek,
                              int n_frames, double window_start, gboolean with_prefix,
                              WindowResult *result, GError **error)
{
  WhisperEngine *e = s->engine;
  WhisperBackend *be = e->net.backend;
  const WhisperDecodeOptions *o = &s->options;
  gboolean ok = FALSE;

  memset (result, 0, sizeof *result);
  result->language = s->language_index;
  whisper_piece_decoder_reset (&s->piece);

  whisper_turn_lock_acquire (&e->net.compute_lock);
  /* the window's decoder state, kept to its word timestamps (the caller
   * gives it back) */
  if (!whisper_stream_lease_decoder_locked (s, error) ||
      !encode_window (s, mel, mel_stride, seek, n_frames, s->encoder_length, error))
    goto out;
  gint64 t0 = g_get_monotonic_time ();
  if (e->info.is_multilingual && o->detect_language_per_window) {
    double p;
    result->language = detect_language_here (s, &p, NULL);
  }
  WindowPrompt prompt;
  if (!prompt_pass (s, result->language, with_prefix, n_frames, &prompt,
                    &result->no_speech_prob, error))
    goto out;

  const WhisperLogitExtras extras = { (float) o->repetition_penalty, o->no_repeat_ngram_size,
                                      prompt.n_forced > 0 };
  gboolean emitted = FALSE;
  WhisperAttempt attempts[WHISPER_MAX_TEMPERATURES];
  const int stride = e->net.n_text_ctx;
  int chosen = -1;
  double temperature = 0.0;
  for (int t = 0; t < o->n_temperatures; t++) {
    temperature = o->temperatures[t];
    gint32 *tokens = s->attempt_tokens + (size_t) t * stride;
    if (!decode_attempt (s, &prompt, t, temperature, window_start, &extras, tokens,
                         &attempts[t], &emitted, error))
      goto out;
    /* the backend's work of the attempt is done (nothing below is a step's,
     * and the next batch of steps does not wait for this stream) */
    whisper_step_batcher_leave (e->steps, &s->step_member);
    be->ops->sync (be);
    if (!backend_ok (be, error))
      goto out;
    g_autofree char *text = whisper_engine_decode_tokens (e, tokens, attempts[t].n_tokens);
    g_strstrip (text);
    chosen = t;
    if (!whisper_fallback_needed (&attempts[t], text, result->no_speech_prob, o))
      break;
    /* every temperature failed: the most likely, with the last temperature */
    if (t + 1 == o->n_temperatures)
      chosen = whisper_fallback_choose (attempts, t + 1);
  }

  if (chosen > 0 || temperature != o->temperatures[0])
    s->stats.windows_fallback++;
  result->n_sampled = attempts[chosen].n_tokens;
  memcpy (s->sampled, s->attempt_tokens + (size_t) chosen * stride,
          (size_t) result->n_sampled * sizeof (gint32));
  result->sum_logprob = attempts[chosen].sum_logprob;
  result->avg_logprob = attempts[chosen].avg_logprob;
  result->compression_ratio = attempts[chosen].compression_ratio;
  result->temperature = temperature;
  if (!emitted && s->token_func &&
      !emit_window_tokens (s, result->n_sampled, window_start, error))
    goto out;
  ok = TRUE;
  s->stats.decoder_seconds += whisper_elapsed_since (t0);

out:
  if (s->dec)
    s->dec->capture = NULL;
  whisper_turn_lock_release (&e->net.compute_lock);
  return ok;
}

/* whisper_stream_free(): gives back the decoder state the stream holds,
 * if any. */
void
whisper_stream_release_decoder_at_free (WhisperStream *s)
{
  if (s->lease && s->lease_thread == g_thread_self ())
    thread_leases--;
  whisper_decoder_pool_release (s->engine->decoders, &s->engine->net, s->lease);
}
