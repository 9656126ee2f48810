/* whisper-stream.c: WhisperStream: long-form transcription as faster-whisper
 * does it (generate_segments() in https://github.com/SYSTRAN/faster-whisper/blob/master/faster_whisper/transcribe.py),
 * greedy decoding of each window (https://github.com/openai/whisper/blob/main/whisper/decoding.py). */
#include "whisper-stream-private.h"

#include "whisper-batched.h"
#include "whisper-speech-gate.h"
#include "whisper-words.h"
#include "whisper-vad-filter.h"

#include <math.h>
#include <string.h>

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

static int
compare_ids (gconstpointer a, gconstpointer b)
{
  const gint32 x = *(const gint32 *) a, y = *(const gint32 *) b;
  return (x > y) - (x < y);
}

/* The SuppressTokens list as faster-whisper's get_suppressed_tokens()
 * builds it: the non-speech tokens (suppress_tokens = [-1]) and the given
 * ids, then the special tokens; nothing at all when both are off. */
static void
build_suppress_list (WhisperStream *s)
{
  const WhisperEngine *e = s->engine;
  const WhisperEngineInfo *info = &e->info;
  GArray *ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  if (s->options.suppress_non_speech)
    g_array_append_vals (ids, e->suppress_ids, e->n_suppress_ids);  /* specials included */
  if (s->options.n_suppress_tokens > 0) {
    const gint32 specials[] = { info->token_transcribe, info->token_translate, info->token_sot,
                                info->token_sot_prev, info->token_sot_lm,
                                info->token_no_speech };
    g_array_append_vals (ids, s->suppress_tokens, s->options.n_suppress_tokens);
    g_array_append_vals (ids, specials, G_N_ELEMENTS (specials));
  }
  g_array_sort (ids, compare_ids);
  guint out = 0;
  for (guint i = 0; i < ids->len; i++) {
    const gint32 id = g_array_index (ids, gint32, i);
    if (out == 0 || g_array_index (ids, gint32, out - 1) != id)
      g_array_index (ids, gint32, out++) = id;
  }
  g_free (s->logit_suppress_ids);
  s->logit_config.n_suppress_ids = (int) out;
  s->logit_suppress_ids = (gint32 *) g_array_free (ids, FALSE);
  s->logit_config.suppress_ids = s->logit_suppress_ids;
}

static void
apply_options (WhisperStream *s)
{
  WhisperDecodeOptions *o = &s->options;
  /* own copies of what the caller lent */
  g_free (s->language);
  g_free (s->initial_prompt);
  g_free (s->hotwords);
  g_free (s->prefix);
  g_free (s->clip_timestamps);
  g_free (s->suppress_tokens);
  o->language = s->language = g_strdup (o->language);
  o->initial_prompt = s->initial_prompt = g_strdup (o->initial_prompt);
  o->hotwords = s->hotwords = g_strdup (o->hotwords);
  o->prefix = s->prefix = g_strdup (o->prefix);
  o->clip_timestamps = s->clip_timestamps = g_strdup (o->clip_timestamps);
  s->suppress_tokens = o->n_suppress_tokens > 0 && o->suppress_tokens
                           ? g_memdup2 (o->suppress_tokens,
                                        (gsize) o->n_suppress_tokens * sizeof (gint32))
                           : NULL;
  o->suppress_tokens = s->suppress_tokens;
  if (!s->suppress_tokens)
    o->n_suppress_tokens = 0;
  g_clear_pointer (&s->hotword_tokens, g_free);
  g_clear_pointer (&s->prefix_tokens, g_free);
  s->n_hotword_tokens = s->n_prefix_tokens = 0;

  s->logit_config.suppress_blank = o->suppress_blank;
  build_suppress_list (s);
  s->logit_config.timestamps = !o->without_timestamps;
  s->logit_config.max_initial_timestamp_index =
      o->max_initial_timestamp >= 0 ? (int) lround (o->max_initial_timestamp / TIME_PRECISION)
                                    : -1;
  if (s->rand)
    g_rand_free (s->rand);
  s->rand = g_rand_new_with_seed (o->seed);
  WhisperBackend *be = s->engine->net.backend;
  if (be->ops->logits_prepare)
    be->ops->logits_prepare (be, &s->logit_config);
}

WhisperStream *
whisper_stream_new (WhisperEngine *engine, GError **error)
{
  WhisperStream *s = g_new0 (WhisperStream, 1);
  s->engine = whisper_engine_ref (engine);
  const WhisperEngineInfo *info = &engine->info;

  s->n_slots = 1;
  s->logit_config = engine->logit_config;
  s->logit_config.backend_cache = NULL;
  whisper_decode_options_init (&s->options);
  apply_options (s);
  s->language_index = -1;

  s->history = g_array_new (FALSE, FALSE, sizeof (gint32));
  s->host_window = g_new (float, (size_t) 2 * engine->net.max_encoder_length * engine->net.n_mels);
  s->host_logits = g_new (float, (size_t) 3 * engine->net.n_vocab);  /* SOT row, last row, a step */
  s->prompt = g_new (gint32, engine->net.n_text_ctx);
  s->sampled = g_new (gint32, engine->net.n_text_ctx);
  s->attempt_tokens = g_new (gint32, (size_t) WHISPER_MAX_TEMPERATURES * engine->net.n_text_ctx);
  s->language_probs = g_new0 (double, MAX (info->token_translate - info->token_sot - 1, 1));
  (void) info;
  whisper_piece_decoder_init (&s->piece, engine->max_token_bytes);
  if (!whisper_stream_prepare_decode_steps (s, error)) {
    whisper_stream_free (s);
    return NULL;
  }
  /* what every decoder state of the engine is sized with */
  s->stats.cross_cache_length = engine->net.max_encoder_length;
  s->stats.self_cache_length = engine->net.n_text_ctx;
  return s;
}

void
whisper_stream_free (WhisperStream *s)
{
  if (!s)
    return;
  WhisperBackend *be = s->engine->net.backend;
  /* (a stream freed while the step batcher expects it back would have every
   * later pass wait for it) */
  whisper_step_batcher_leave (s->engine->steps, &s->step_member);
  if (be->ops->logits_release)
    be->ops->logits_release (be, &s->logit_config);
  whisper_stream_release_decoder_at_free (s);
  if (s->history)
    g_array_unref (s->history);
  g_free (s->host_window);
  g_free (s->host_logits);
  g_free (s->prompt);
  g_free (s->sampled);
  g_free (s->attempt_tokens);
  g_free (s->language_probs);
  g_free (s->language);
  g_free (s->initial_prompt);
  g_free (s->hotwords);
  g_free (s->prefix);
  g_free (s->clip_timestamps);
  g_free (s->suppress_tokens);
  g_free (s->logit_suppress_ids);
  g_free (s->hotword_tokens);
  g_free (s->prefix_tokens);
  if (s->rand)
    g_rand_free (s->rand);
  whisper_search_buffers_free (s->search);
  whisper_piece_decoder_clear (&s->piece);
  g_free (s->prepend_punctuations);
  g_free (s->append_punctuations);
  whisper_align_step_capture_free (s->step_capture, &s->engine->timing);
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
whisper_stream_set_share_encoder (WhisperStream *s, gboolean share)
{
  s->share_encoder = share;
}

void
whisper_stream_reset (WhisperStream *s)
{
  g_array_set_size (s->history, 0);
  s->prompt_reset_since = 0;
  s->last_speech_timestamp = 0.0;
  s->language_detected = FALSE;
  s->n_language_probs = 0;
  s->initial_prompt_added = FALSE;
  s->windows_since_reset = 0;
}

void
whisper_stream_set_history (WhisperStream *s, const gint32 *ids, gsize n_ids)
{
  g_array_set_size (s->history, 0);
  if (n_ids > 0)
    g_array_append_vals (s->history, ids, (guint) n_ids);
  s->prompt_reset_since = 0;
  /* the history now is the caller's: an initial prompt is not added to it */
  s->initial_prompt_added = TRUE;
}

const double *
whisper_stream_get_language_probabilities (const WhisperStream *s, int *n_languages)
{
  *n_languages = s->n_language_probs;
  return s->n_language_probs > 0 ? s->language_probs : NULL;
}

const char *
whisper_stream_get_language (const WhisperStream *s, double *probability)
{
  if (s->language_index < 0)
    return NULL;
  if (probability)
    *probability = s->language_probability;
  return whisper_language_code (s->language_index);
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
  if (s->dec)
    stats->last_cross_key_length = s->dec->last_cross_key_length;
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
 * fail where the model finds no speech likely: its text is a loop
 * (compression ratio above compression_ratio_threshold, the reference's
 * test for a failed decode: white noise can give one sentence repeated
 * through a window, decoded with confidence), or it holds no letter or
 * digit (a tone sequence can give " ."). */
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
  seg->temperature = wr->temperature;
  seg->language = wr->language >= 0 ? whisper_language_code (wr->language) : "en";
  return seg;
}

WhisperSegment *
whisper_segment_copy (const WhisperSegment *src)
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
  if (sink->func && !sink->func (sink->out ? whisper_segment_copy (seg) : seg, sink->data))
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

/* Resolves what the options name (language, prompt tokens) and sizes the
 * search, before any window; also checks the options. */
static gboolean
prepare_transcription (WhisperStream *s, GError **error)
{
  WhisperEngine *e = s->engine;
  const WhisperDecodeOptions *o = &s->options;
  if (!whisper_decode_options_check (e, o, error))
    return FALSE;
  const int n_languages = e->info.token_translate - e->info.token_sot - 1;
  int index = -1;
  if (!whisper_language_parse (o->language, n_languages, &index, error))
    return FALSE;
  if (!e->info.is_multilingual) {
    if (!whisper_language_parse ("en", n_languages, &index, error))
      return FALSE;
  }
  if (index >= 0) {
    s->language_index = index;
    s->language_probability = 1.0;
    s->language_detected = TRUE;
  } else if (s->language_detected && s->language_index < 0) {
    s->language_detected = FALSE;
  }
  /* " " + text.strip(), as faster-whisper encodes prompts */
  struct { const char *text; gint32 **ids; gsize *n; } texts[] = {
    { o->hotwords, &s->hotword_tokens, &s->n_hotword_tokens },
    { o->prefix, &s->prefix_tokens, &s->n_prefix_tokens },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (texts); i++) {
    if (!texts[i].text || *texts[i].ids)
      continue;
    g_autofree char *spaced = g_strconcat (" ", texts[i].text, NULL);
    g_strstrip (spaced + 1);
    *texts[i].ids = whisper_engine_encode_text (e, spaced, texts[i].n, error);
    if (!*texts[i].ids)
      return FALSE;
  }
  if (o->initial_prompt && !s->initial_prompt_added && s->history->len == 0) {
    g_autofree char *spaced = g_strconcat (" ", o->initial_prompt, NULL);
    g_strstrip (spaced + 1);
    gsize n;
    g_autofree gint32 *ids = whisper_engine_encode_text (e, spaced, &n, error);
    if (!ids)
      return FALSE;
    g_array_append_vals (s->history, ids, n);
  }
  s->initial_prompt_added = TRUE;
  return whisper_stream_ensure_search (s, error);
}

static void
free_segments (GPtrArray *segments)
{
  for (guint i = 0; i < segments->len; i++)
    whisper_segment_free (g_ptr_array_index (segments, i));
  g_ptr_array_set_size (segments, 0);
}

/* The start of every transcription call: the cancel flag cleared, what
 * the options need checked and resolved, and the input boundary
 * (whisper-pcm.h): *pcm is then the sanitised input (*fixed owns it when it
 * is a copy). */
static gboolean
begin_call (WhisperStream *s, const float **pcm, gsize n_samples, float **fixed, GError **error)
{
  g_atomic_int_set (&s->cancelled, 0);
  /* word timestamps need alignment heads (whisper-alignment.h) */
  if (s->options.word_timestamps &&
      !whisper_alignment_heads_check (&s->engine->align_heads, s->engine->model_path, error))
    return FALSE;
  if (n_samples > 0 && !*pcm) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_AUDIO,
                 "no audio buffer given for %zu samples", n_samples);
    return FALSE;
  }
  if (!prepare_transcription (s, error))
    return FALSE;
  WhisperPcmFixes fixes = { 0, 0 };
  *pcm = whisper_pcm_sanitize (*pcm, n_samples, fixed, &fixes);
  s->stats.samples_non_finite += fixes.non_finite;
  s->stats.samples_clipped += fixes.clipped;
  return TRUE;
}

/* Input quieter than the silence threshold, before a transcription that
 * would run the detector over all of it: a silent window, neither the
 * detector nor the model runs (counted as the window loop counts it); TRUE
 * (and no segments) when it is. */
static gboolean
skip_quiet_input (WhisperStream *s, const float *pcm, gsize n_samples, GPtrArray **segments_out)
{
  if (n_samples == 0 ||
      whisper_gate_is_loud_enough (pcm, n_samples, s->options.silence_threshold_db))
    return FALSE;
  s->stats.windows_silent++;
  if (segments_out)
    *segments_out = g_ptr_array_new_with_free_func ((GDestroyNotify) whisper_segment_free);
  return TRUE;
}

/* One transcription call's input, as the windows read it. */
typedef struct {
  const float *pcm;         /* sanitised */
  gsize n_samples;
  const float *mel;         /* [n_mels, mel_stride] */
  gsize mel_stride;
  gsize content_frames;     /* mel frames of the audio (the rest is padding) */
  const GArray *speech;     /* the detector's speech regions, or NULL */
} CallInput;

/* TRUE when the window [seek, seek + segment_size) is not to be decoded:
 * silence (conditioned on earlier text, the model writes "you" into it and
 * the no-speech rule lets it through), or noise in which the detector finds
 * no speech (the model may write a confident phrase into a tone sequence,
 * which the no-speech rule keeps). */
static gboolean
window_is_skipped (WhisperStream *s, const CallInput *in, gsize seek, int segment_size)
{
  const gsize first_sample = seek * WHISPER_HOP_LENGTH;
  const gsize window_samples =
      MIN ((gsize) segment_size * WHISPER_HOP_LENGTH, in->n_samples - first_sample);
  if (!whisper_gate_is_loud_enough (in->pcm + first_sample, window_samples,
                                    s->options.silence_threshold_db)) {
    s->stats.windows_silent++;
    return TRUE;
  }
  if (in->speech && !speech_in (in->speech, first_sample, window_samples)) {
    s->stats.windows_no_voice++;
    return TRUE;
  }
  return FALSE;
}

/* Decodes the window at *seek of segment_size frames, hands its segments
 * to the sink and moves *seek on. */
static gboolean
transcribe_window (WhisperStream *s, const CallInput *in, SegmentSink *sink, gsize *seek,
                   int segment_size, GError **error)
{
  WhisperEngine *e = s->engine;
  const double time_offset = *seek / (double) FRAMES_PER_SECOND;
  WindowResult wr;
  /* the prefix goes on the stream's first window, where its audio starts */
  const gboolean with_prefix = *seek == 0 && s->windows_since_reset == 0;
  const gint64 window_start_us = g_get_monotonic_time ();
  s->windows_since_reset++;
  if (!whisper_stream_decode_window (s, in->mel, in->mel_stride, *seek, segment_size,
                                     time_offset, with_prefix, &wr, error)) {
    whisper_stream_return_decoder (s);
    return FALSE;
  }
  g_autofree char *text = whisper_engine_decode_tokens (e, s->sampled, wr.n_sampled);
  g_strstrip (text);
  if (window_is_no_speech (&s->options, wr.no_speech_prob, wr.avg_logprob,
                           wr.compression_ratio, text)) {
    whisper_stream_return_decoder (s);
    s->stats.windows_no_speech++;
    *seek += segment_size;
    return TRUE;
  }
  const gsize previous_seek = *seek;
  const gboolean reaches_end = previous_seek + (gsize) segment_size >= in->content_frames;
  gboolean once = s->options.last_window_once && reaches_end;
  g_autoptr (GPtrArray) window = g_ptr_array_new ();
  *seek += split_segments (s, window, &wr, time_offset, segment_size, wr.avg_logprob,
                           wr.compression_ratio);
  /* ---- word timestamps (whisper-words.h) ---- */
  gboolean skip_window = FALSE;
  guint n_keep = window->len;
  if (s->options.word_timestamps &&
      !whisper_words_window (s->dec, &e->timing, window, s->sampled, wr.n_sampled,
                             s->sot_sequence, s->n_sot,
                             wr.language >= 0 ? whisper_language_code (wr.language) : "en",
                             time_offset, segment_size, previous_seek, in->content_frames,
                             s->prepend_punctuations, s->append_punctuations,
                             s->options.hallucination_silence_threshold,
                             &s->last_speech_timestamp, seek, &skip_window, &n_keep, error)) {
    whisper_stream_return_decoder (s);
    free_segments (window);
    return FALSE;
  }
  whisper_stream_return_decoder (s);
  if (skip_window) {
    free_segments (window);
    return TRUE;
  }
  /* last_window_by: a window the rule adds would end too late (counted as
   * long as this one) */
  if (!once && reaches_end && s->options.last_window_by > 0
      && *seek < previous_seek + (gsize) segment_size) {
    const gint64 now = g_get_monotonic_time ();
    if (now + (now - window_start_us) > s->options.last_window_by) {
      once = TRUE;
      s->stats.windows_past_deadline++;
    }
  }
  /* last_window_once: no window from the last closed segment or the last
   * word's end (the tokens after them are dropped as the rule drops them,
   * but not decoded again) */
  if (once)
    *seek = MAX (*seek, previous_seek + (gsize) segment_size);
  for (guint i = n_keep; i < window->len; i++)
    whisper_segment_free (g_ptr_array_index (window, i));
  g_ptr_array_set_size (window, MIN (n_keep, window->len));
  /* ---- */
  for (guint i = 0; i < window->len; i++)
    deliver_segment (s, sink, g_ptr_array_index (window, i));
  if (!s->options.condition_on_previous_text ||
      wr.temperature > s->options.prompt_reset_on_temperature)
    s->prompt_reset_since = s->history->len;
  return TRUE;
}

/* The windows over the clips of clip_timestamps (all the audio without
 * them), one after the other from the first clip's start. */
static gboolean
transcribe_clips (WhisperStream *s, const CallInput *in, SegmentSink *sink, GError **error)
{
  const int window_frames = 2 * s->encoder_length;
  gint64 clips[2 * MAX_CLIPS];
  int n_clips = whisper_decode_options_parse_clips (s->options.clip_timestamps, clips, MAX_CLIPS,
                                                    error);
  if (n_clips < 0)
    return FALSE;
  if (n_clips == 0) {
    clips[0] = 0;
    clips[1] = -1;
    n_clips = 1;
  }

  /* The language, when it is to be detected: from the first clip's start. */
  if (!s->language_detected && s->engine->info.is_multilingual && in->content_frames > 0) {
    const gsize from = (gsize) clips[0] < in->content_frames ? (gsize) clips[0] : 0;
    const gboolean detected = whisper_stream_detect_language (
        s, in->mel, in->mel_stride, MIN (in->mel_stride, in->content_frames + 1), from, error);
    whisper_stream_return_decoder (s);
    if (!detected)
      return FALSE;
    s->language_detected = TRUE;
  }

  int clip = 0;
  gsize seek = (gsize) clips[0];
  while (clip < n_clips && !sink->stop) {
    const gsize clip_start = (gsize) clips[2 * clip];
    const gsize clip_end = clips[2 * clip + 1] < 0 ||
                                   (gsize) clips[2 * clip + 1] > in->content_frames
                               ? in->content_frames
                               : (gsize) clips[2 * clip + 1];
    if (seek < clip_start)
      seek = clip_start;
    if (seek >= clip_end) {
      clip++;
      if (clip < n_clips)
        seek = (gsize) clips[2 * clip];
      continue;
    }
    const int segment_size =
        (int) MIN ((gsize) window_frames, MIN (in->content_frames, clip_end) - seek);
    if (window_is_skipped (s, in, seek, segment_size)) {
      seek += segment_size;
      continue;
    }
    if (!transcribe_window (s, in, sink, &seek, segment_size, error))
      return FALSE;
  }
  return TRUE;
}

gboolean
whisper_stream_transcribe (WhisperStream *s, const float *pcm, gsize n_samples,
                           WhisperSegmentFunc segment_func, gpointer user_data,
                           GPtrArray **segments_out, GError **error)
{
  WhisperEngine *e = s->engine;
  g_autofree float *fixed = NULL;
  if (!begin_call (s, &pcm, n_samples, &fixed, error))
    return FALSE;

  /* faster-whisper's vad_filter (whisper-vad-filter.h): transcribes the
   * speech regions' concatenation by calling back into this function with
   * vad_filter off, then maps the times back. */
  if (s->options.vad_filter && !s->options.clip_timestamps) {
    /* (a live caller decodes every chunk of silence so) */
    if (s->options.vad && skip_quiet_input (s, pcm, n_samples, segments_out))
      return TRUE;
    return whisper_vad_filter_transcribe (s, &s->options, &s->token_func, &s->token_data,
                                          whisper_stream_transcribe, pcm, n_samples,
                                          segment_func, user_data, segments_out, error);
  }

  /* The voice activity detector's speech regions of the whole input
   * (whisper-vad.h): a small network on the CPU, cheap beside the model. */
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
  s->stats.mel_seconds += whisper_elapsed_since (t0);

  s->encoder_length = s->options.encoder_length > 0 ? s->options.encoder_length
                                                    : e->net.max_encoder_length;
  const CallInput in = { .pcm = pcm, .n_samples = n_samples, .mel = mel,
                         .mel_stride = mel_stride,
                         .content_frames = n_samples / WHISPER_HOP_LENGTH, .speech = speech };
  gboolean ok = transcribe_clips (s, &in, &sink, error);

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

/* ---- for whisper-batched.c (whisper-batched.h) ------------------------- */

const WhisperDecodeOptions *
whisper_stream_begin_batched (WhisperStream *s, const float **pcm, gsize n_samples, float **fixed,
                              GPtrArray **segments_out, gboolean *quiet, WhisperEngine **engine,
                              const gint **cancelled, GError **error)
{
  *quiet = FALSE;
  if (!begin_call (s, pcm, n_samples, fixed, error))
    return NULL;
  *quiet = skip_quiet_input (s, *pcm, n_samples, segments_out);
  *engine = s->engine;
  *cancelled = &s->cancelled;
  return &s->options;
}

WhisperStreamStats *
whisper_stream_batched_stats (WhisperStream *s)
{
  return &s->stats;
}

void
whisper_stream_set_batched_language (WhisperStream *s, const char *language, double probability)
{
  const int n_languages = s->engine->info.token_translate - s->engine->info.token_sot - 1;
  int index;
  if (language && whisper_language_parse (language, n_languages, &index, NULL) && index >= 0) {
    s->language_index = index;
    s->language_probability = probability;
  }
}
