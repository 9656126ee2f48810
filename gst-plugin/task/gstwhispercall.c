/* gstwhispercall.c: one engine call of whispersink's inference task
 * (gstwhispertask.c decides when): the audio of a region of the window
 * goes to the engine (or, device=remote, to the server) with the options
 * of the task's copy of the settings, and what comes back (tokens, words,
 * segments) becomes output items (io/gstwhisperoutput.c,
 * io/gstwhisperwords.c), live through the commit policy
 * (gstwhisperlive.c), and the translate_src pads decode the same audio
 * again (gstwhispertranslate.c). device=remote, live: the answers' words
 * are committed by agreement (gstwhisperagree.h), and with server-stream
 * the text deltas are interim messages as they arrive and agreed words go
 * out before the answer ends. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "task/gstwhispercall.h"

#include <math.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_whisper_sink_debug

/* Segment times and token times are the same 20-ms timestamps, computed
 * apart. */
#define SEGMENT_TIME_EPSILON 0.005
/* Live decodes (the commit policy) sample at most this many tokens plus
 * this many per second of their audio. */
#define LIVE_TOKENS_BASE 20
#define LIVE_TOKENS_PER_S 6

/* Bytes [from, to) of a live remote answer's text were spoken from `start`
 * to `end` s (a segment, or a word when the answer has word times). */
typedef struct {
  gsize from, to;
  double start, end;
} AnswerSpan;

typedef struct {
  GstWhisperSink *self;
  GstWhisperOutputMode output;
  guint64 start;             /* run index of the first sample handed over */
  gsize n_samples;
  GstWhisperCarry carry;
  double next_window;        /* where the engine went on after its first window, s */
  gboolean vad_filter;       /* window starts are times in the input, the first > 0 */
  double first_window;       /* vad_filter: the first window start seen, s; < 0: none */
  WhisperSegment *held;      /* CARRY_LAST_SEGMENT: the latest segment, not out yet */
  GArray *held_words;        /* CARRY_LAST_SEGMENT: words of segments not out yet */
  GPtrArray *segments;       /* CARRY_COMMIT: the call's segments, for the commit policy */
  gboolean batched;          /* offline-mode=batched: no token events */
  gboolean words_from_segments; /* output=words timed by the segments' word timestamps */
  GString *answer;           /* device=remote, live: the answer's text, for the
                                agreement (gstwhisperagree.h); NULL: its segments go out */
  GArray *spans;             /* AnswerSpan: times of parts of `answer`, when it has them */
  GArray *answer_words;      /* GstWhisperWord: the answer's timed words not placed in
                                `answer` yet (they come before their segment) */
  GstFlowReturn flow;
} CallContext;

/* Flushing stops the running transcription at the next decode step. */
static gboolean
is_cancelled (GstWhisperSink *self)
{
  return gst_whisper_queue_is_flushing (&self->queue);
}

/* ------------------------------------------------------------------------ */
/* Output of one engine call */

static GstClockTime
call_time (CallContext *ctx, double seconds)
{
  GstWhisperWindow *w = &ctx->self->window;
  guint64 idx = ctx->start + (seconds > 0.0 ? (guint64) llround (seconds * w->rate) : 0);

  return gst_whisper_window_time_at (w, MIN (idx, ctx->start + ctx->n_samples));
}

static void
push_word (CallContext *ctx, GstWhisperWord *word)
{
  GstWhisperItem item = { 0, };
  GstClockTime start = call_time (ctx, word->start), end = call_time (ctx, word->end);

  if (ctx->flow != GST_FLOW_OK)
    return;
  item.text = word->text;
  item.pts = start;
  item.duration = end > start ? end - start : GST_MSECOND;
  item.avg_logprob = word->avg_logprob;
  item.no_speech_prob = NAN;
  item.final = FALSE;
  item.granularity = "word";
  item.decode_step = word->step;
  item.push = TRUE;
  ctx->flow = gst_whisper_output_push_item (&ctx->self->out, &item);
}

/* Pushes the held words whose segment started before `before` (G_MAXDOUBLE:
 * all of them). */
static void
release_words (CallContext *ctx, double before)
{
  guint i = 0;

  while (i < ctx->held_words->len) {
    GstWhisperWord *w = &g_array_index (ctx->held_words, GstWhisperWord, i);
    if (w->segment_start < before) {
      push_word (ctx, w);
      gst_whisper_word_clear (w);
      g_array_remove_index (ctx->held_words, i);
    } else {
      i++;
    }
  }
}

/* A word for output=words (takes it): out now, or held with its segment
 * under CARRY_LAST_SEGMENT until a newer segment starts. */
static void
take_word (CallContext *ctx, GstWhisperWord *word)
{
  if (ctx->carry == GST_WHISPER_CARRY_LAST_SEGMENT) {
    /* A word of a newer segment: the earlier segments are complete. */
    release_words (ctx, word->segment_start - SEGMENT_TIME_EPSILON);
    g_array_append_val (ctx->held_words, *word);
  } else {
    push_word (ctx, word);
    gst_whisper_word_clear (word);
  }
}

static void
drop_words (CallContext *ctx)
{
  guint i;

  for (i = 0; i < ctx->held_words->len; i++)
    gst_whisper_word_clear (&g_array_index (ctx->held_words, GstWhisperWord, i));
  g_array_set_size (ctx->held_words, 0);
}

/* A segment goes out: a buffer in segments mode, a bus message only in words
 * mode (its words went out already). Takes the segment. */
static void
push_segment (CallContext *ctx, WhisperSegment *segment)
{
  GstWhisperItem item = { 0, };
  GstClockTime start = call_time (ctx, segment->start), end = call_time (ctx, segment->end);
  gchar *text = g_strstrip (g_strdup (segment->text ? segment->text : ""));

  if (ctx->flow == GST_FLOW_OK && *text != '\0' && end > start) {
    item.text = text;
    item.pts = start;
    item.duration = end - start;
    item.avg_logprob = segment->avg_logprob;
    item.no_speech_prob = segment->no_speech_prob;
    item.final = TRUE;
    item.granularity = "segment";
    item.decode_step = -1;
    item.push = ctx->output == GST_WHISPER_OUTPUT_SEGMENTS;
    /* word timestamps: the segment's words, timed as the message */
    GValue words = G_VALUE_INIT;
    if (segment->words) {
      g_value_init (&words, GST_TYPE_LIST);
      for (gsize i = 0; i < segment->n_words; i++) {
        const WhisperWord *sw = &segment->words[i];
        gchar *wt = g_strstrip (g_strdup (sw->text));
        gst_whisper_output_append_word (&ctx->self->out, &words, wt,
            call_time (ctx, sw->start), call_time (ctx, sw->end), sw->probability);
        g_free (wt);
      }
      item.words = &words;
    }
    ctx->flow = gst_whisper_output_push_item (&ctx->self->out, &item);
    if (G_IS_VALUE (&words))
      g_value_unset (&words);
  }
  g_free (text);
  whisper_segment_free (segment);
}

/* The tag code of a Whisper language: its two-letter ISO 639-1 code, else
 * its ISO 639-2 (or 639-3) code, as GST_TAG_LANGUAGE_CODE asks. */
static const gchar *
tag_language_code (const gchar *code, int index)
{
  if (strlen (code) == 2 && strcmp (code, "jw") != 0)
    return code;
  const gchar *iso = whisper_language_iso639_2 (index);
  return iso ? iso : whisper_language_iso639_3 (index);
}

/* When the language of the text changes (the first segment, or a window
 * detected in another language): a "whisper-language" element message
 * and a GST_TAG_LANGUAGE_CODE tag event downstream, in order with the text. */
static void
announce_language (GstWhisperSink *self, const gchar *code)
{
  double probability = 1.0;
  int index = -1;
  if (!code || g_strcmp0 (code, self->announced_language) == 0 ||
      !whisper_language_parse (code, WHISPER_N_LANGUAGES_MAX, &index, NULL) || index < 0)
    return;
  g_free (self->announced_language);
  self->announced_language = g_strdup (code);
  const gchar *stream_language = whisper_stream_get_language (self->stream, &probability);
  const gboolean per_window = g_strcmp0 (stream_language, code) != 0;
  const gchar *tag = tag_language_code (code, index);

  GST_INFO_OBJECT (self, "text in %s (%s)", whisper_language_name (index), code);
  gst_whisper_out_queue_push_event (&self->outq,
      gst_event_new_tag (gst_tag_list_new (GST_TAG_LANGUAGE_CODE, tag, NULL)));
  gst_element_post_message (GST_ELEMENT (self), gst_message_new_element (GST_OBJECT (self),
          gst_structure_new ("whisper-language",
              "language-code", G_TYPE_STRING, code,
              "tag-language-code", G_TYPE_STRING, tag,
              "name", G_TYPE_STRING, whisper_language_name (index),
              "probability", G_TYPE_DOUBLE, per_window ? -1.0 : probability,
              "per-window", G_TYPE_BOOLEAN, per_window, NULL)));
}

/* ------------------------------------------------------------------------ */
/* Engine callbacks (task thread, inside whisper_stream_transcribe) */

static gboolean
on_token (const WhisperTokenEvent *event, gpointer user_data)
{
  CallContext *ctx = user_data;
  GstWhisperWord word;

  if (is_cancelled (ctx->self) || ctx->flow != GST_FLOW_OK)
    return FALSE;
  /* live commit policy: words go out once committed, after the call */
  if (ctx->carry == GST_WHISPER_CARRY_COMMIT)
    return TRUE;
  if (ctx->carry == GST_WHISPER_CARRY_AFTER_WINDOW && ctx->vad_filter) {
    /* vad-filter: the first window starts where the first speech does */
    if (ctx->first_window < 0.0)
      ctx->first_window = event->window_start;
    else if (event->window_start > ctx->first_window) {
      ctx->next_window = event->window_start;
      return FALSE;
    }
  } else if (ctx->carry == GST_WHISPER_CARRY_AFTER_WINDOW && event->window_start > 0.0) {
    ctx->next_window = event->window_start;
    return FALSE;
  }
  if (ctx->output != GST_WHISPER_OUTPUT_WORDS || ctx->words_from_segments
      || !gst_whisper_words_feed (&ctx->self->words, event, &word))
    return TRUE;

  take_word (ctx, &word);
  return ctx->flow == GST_FLOW_OK;
}

static void
add_span (CallContext *ctx, gsize from, gsize to, double start, double end)
{
  AnswerSpan span = { from, to, start, end };

  if (ctx->spans && to > from && end >= start)
    g_array_append_val (ctx->spans, span);
}

/* Live remote: a segment of the answer joins its text; its times, and those
 * of its words (found in its text in order), become spans. */
static void
add_answer_segment (CallContext *ctx, const WhisperSegment *segment)
{
  const gchar *text = segment->text ? segment->text : "";
  gsize base = ctx->answer->len, at = 0;

  g_string_append (ctx->answer, text);
  add_span (ctx, base + strspn (text, " "), ctx->answer->len, segment->start, segment->end);
  for (guint i = 0; ctx->answer_words && i < ctx->answer_words->len; i++) {
    GstWhisperWord *w = &g_array_index (ctx->answer_words, GstWhisperWord, i);
    const gchar *found = *w->text ? strstr (text + at, w->text) : NULL;
    if (found) {
      at = (gsize) (found - text) + strlen (w->text);
      add_span (ctx, base + (gsize) (found - text), base + at, w->start, w->end);
    }
  }
  if (ctx->answer_words)
    g_array_set_size (ctx->answer_words, 0);
}

/* Live remote: the time of byte `at` of the answer's text, from the
 * narrowest span that holds it; NAN when none does. */
static double
answer_time_at (const CallContext *ctx, gsize at)
{
  const AnswerSpan *best = NULL;

  for (guint i = 0; ctx->spans && i < ctx->spans->len; i++) {
    const AnswerSpan *sp = &g_array_index (ctx->spans, AnswerSpan, i);
    if (sp->from <= at && at <= sp->to && (best == NULL
            || sp->to - sp->from < best->to - best->from))
      best = sp;
  }
  if (best == NULL)
    return NAN;
  return best->start + (best->end - best->start) * (double) (at - best->from)
      / (double) (best->to - best->from);
}

static gboolean
on_segment (WhisperSegment *segment, gpointer user_data)
{
  CallContext *ctx = user_data;

  announce_language (ctx->self, segment->language);
  if (ctx->answer) {
    /* live remote: the text, committed by agreement */
    add_answer_segment (ctx, segment);
    whisper_segment_free (segment);
    return TRUE;
  }

  if (ctx->words_from_segments) {
    /* the segment's words, with their word timestamps */
    for (gsize i = 0; i < segment->n_words && ctx->flow == GST_FLOW_OK; i++) {
      const WhisperWord *sw = &segment->words[i];
      GstWhisperWord word = { 0, };
      word.text = g_strstrip (g_strdup (sw->text));
      word.start = sw->start;
      word.end = sw->end;
      word.avg_logprob = sw->probability > 0.0 ? log (sw->probability) : -INFINITY;
      word.step = -1;
      word.segment_start = segment->start;
      if (*word.text)
        take_word (ctx, &word);
      else
        gst_whisper_word_clear (&word);
    }
  }
  if (ctx->carry == GST_WHISPER_CARRY_COMMIT) {
    g_ptr_array_add (ctx->segments, segment);
    return TRUE;
  }
  if (ctx->carry == GST_WHISPER_CARRY_LAST_SEGMENT) {
    if (ctx->held)
      push_segment (ctx, g_steal_pointer (&ctx->held));
    ctx->held = segment;
  } else {
    push_segment (ctx, segment);
  }
  return ctx->flow == GST_FLOW_OK;
}

/* ------------------------------------------------------------------------ */
/* One call */

static const gchar *
carry_name (GstWhisperCarry carry)
{
  switch (carry) {
    case GST_WHISPER_CARRY_AFTER_WINDOW:
      return " (first window only)";
    case GST_WHISPER_CARRY_LAST_SEGMENT:
      return " (last segment carried)";
    case GST_WHISPER_CARRY_COMMIT:
      return " (commit policy)";
    default:
      return "";
  }
}

/* How much of the region is transcribed once the call returned. */
static gsize
finish_call (CallContext *ctx, const GstWhisperRegion *region)
{
  gsize done = region->n_samples;

  if (ctx->carry == GST_WHISPER_CARRY_AFTER_WINDOW && ctx->next_window >= 0.0) {
    done = (gsize) MIN ((guint64) llround (ctx->next_window * WHISPER_SAMPLE_RATE),
        region->n_samples);
  } else if (ctx->carry == GST_WHISPER_CARRY_LAST_SEGMENT && ctx->held) {
    /* The last segment and its words wait for more audio (the window
     * policy bounds how long). */
    done = (gsize) MIN ((guint64) llround (MAX (ctx->held->start, 0.0)
            * WHISPER_SAMPLE_RATE), region->n_samples);
    release_words (ctx, ctx->held->start - SEGMENT_TIME_EPSILON);
    drop_words (ctx);
    g_clear_pointer (&ctx->held, whisper_segment_free);
  }
  if (ctx->held_words->len > 0)
    release_words (ctx, G_MAXDOUBLE);
  if (ctx->held)
    push_segment (ctx, g_steal_pointer (&ctx->held));
  return done;
}

/* After a call on `region`: `done` samples are transcribed (counted), the
 * window moves past them, and a GAP covers the time up to its new start. */
void
gst_whisper_call_advance (GstWhisperSink *self, const GstWhisperRegion *region, gsize done)
{
  GstWhisperWindow *w = &self->window;
  guint64 given = w->given;

  gst_whisper_window_advance (w, region->n_samples, done);
  GST_OBJECT_LOCK (self);
  self->stats.audio_transcribed += w->given - given;
  GST_OBJECT_UNLOCK (self);
  gst_whisper_output_gap_until (&self->out, gst_whisper_window_time_at (w, w->seek));
  gst_whisper_translate_gap_until (self, gst_whisper_window_time_at (w, w->seek));
}

/* A call of `region` from the window's seek point: nothing out yet. */
static void
call_context_init (CallContext *ctx, GstWhisperSink *self, const GstWhisperRegion *region)
{
  ctx->self = self;
  ctx->output = self->task_settings.output.output;
  ctx->start = self->window.seek;
  ctx->n_samples = region->n_samples;
  ctx->carry = region->carry;
  ctx->next_window = -1.0;
  ctx->first_window = -1.0;
  ctx->held_words = g_array_new (FALSE, TRUE, sizeof (GstWhisperWord));
  ctx->flow = GST_FLOW_OK;
}

/* WHISPER_LIVE_CALL_DURATION_MS: the duration every live call counts as
 * for the deadline instead of its measured one (unset, empty or not a
 * number from 0 to 60000: measured). For paced measurements
 * (tests/element/live-commit.c --paced): the deadline counts a call's
 * duration, so on a loaded machine every word was committed at first
 * sight and the text depended on the load. Read once. */
static GstClockTime
nominal_call_duration (void)
{
  static gsize once = 0;
  static GstClockTime nominal = GST_CLOCK_TIME_NONE;

  if (g_once_init_enter (&once)) {
    const gchar *env = g_getenv ("WHISPER_LIVE_CALL_DURATION_MS");
    guint64 ms;
    if (env && *env && g_ascii_string_to_unsigned (env, 10, 0, 60000, &ms, NULL))
      nominal = ms * GST_MSECOND;
    else if (env && *env)
      g_warning ("WHISPER_LIVE_CALL_DURATION_MS=%s: not a number of ms from 0 to 60000, "
          "ignored (calls count as measured)", env);
    g_once_init_leave (&once, 1);
  }
  return nominal;
}

/* The options of one engine call: the task's copy of the settings, group
 * by group, and what the call's kind asks (batched, a carried segment, the
 * commit policy). Sets what `ctx` learns from them. */
static void
call_options (GstWhisperSink *self, const GstWhisperRegion *region,
    const GstWhisperWindowPolicy *policy, const GstWhisperLiveInput *in, gboolean drain,
    CallContext *ctx, WhisperDecodeOptions *opts, GArray *suppress)
{
  const GstWhisperSettings *s = &self->task_settings;
  const GstWhisperOutputMode output = s->output.output;

  whisper_decode_options_init (opts);
  gst_whisper_vad_settings_fill (&s->vad, self->vad, opts);
  gst_whisper_output_settings_fill (&s->output, opts);
  ctx->vad_filter = opts->vad_filter;
  /* offline-mode=batched: a drained run of file input, cut where the
   * detector (vad-model) finds no speech */
  ctx->batched = policy->offline == GST_WHISPER_OFFLINE_BATCHED && !policy->live
      && region->carry == GST_WHISPER_CARRY_NONE;
  if (ctx->batched) {
    opts->vad = self->vad;
    opts->vad_filter = FALSE;
    opts->word_timestamps |= output == GST_WHISPER_OUTPUT_WORDS;
  }
  gst_whisper_decoding_fill (&s->decoding, self->out.live, opts, suppress);
  /* The prompt history would hold the text of a carried segment, which is
   * decoded again: condition live calls on nothing. */
  if (region->carry == GST_WHISPER_CARRY_LAST_SEGMENT)
    opts->condition_on_previous_text = FALSE;
  /* The commit policy compares the words of consecutive decodes, by their
   * times: every call has word timestamps, and is conditioned on the text
   * committed so far (not on the engine's own history, which holds text
   * not committed). */
  if (region->carry == GST_WHISPER_CARRY_COMMIT) {
    /* Speech is 3 to 5 tokens a second: a decode that goes on is a loop,
     * and its length is the next decode's wait */
    const int bound = LIVE_TOKENS_BASE + (int) (in->n * LIVE_TOKENS_PER_S
        / WHISPER_SAMPLE_RATE);
    if (opts->max_new_tokens <= 0 || opts->max_new_tokens > bound)
      opts->max_new_tokens = bound;
    opts->word_timestamps = TRUE;
    opts->condition_on_previous_text = TRUE;
    /* the overload ladder's first step: the next call decodes the tail
     * again, with more audio after it, so one window, not a second one
     * from the last word's end; a drain has no next call (the words after
     * the first window's text were lost at EOS) */
    opts->last_window_once = s->live.one_window && !drain;
    gst_whisper_live_settings_fill (&s->live, in->n,
        whisper_engine_get_info (self->engine)->max_encoder_length, opts);
    /* Only the speech: trailing noise is read as a closing phrase (the
     * detector is loaded with vad-gate, the default, or vad-filter) */
    if (self->vad) {
      opts->vad = self->vad;
      opts->vad_filter = TRUE;
    }
    gst_whisper_live_prepare (self, &self->live, self->stream, s->decoding.initial_prompt,
        s->live.prompt, s->live.min_probability);
  }
  /* output=words with word timestamps: a greedy step's alignment-head
   * attention times its word as the step completes it; a beam search's
   * tokens come after the search without it, so its words are the
   * segments', timed by the window's alignment pass */
  ctx->words_from_segments = output == GST_WHISPER_OUTPUT_WORDS
      && region->carry != GST_WHISPER_CARRY_COMMIT
      && (ctx->batched || (opts->word_timestamps && opts->beam_size != 1));
}

/* Whether the call's audio is decoded again for translate_src pads (not
 * while the overload ladder skips them: they get GAPs). */
static gboolean
translating (GstWhisperSink *self)
{
  return gst_whisper_translate_any (self)
      && !gst_whisper_overload_skips_translation (&self->overload);
}

GstFlowReturn
gst_whisper_call_transcribe (GstWhisperSink *self, const GstWhisperRegion *region,
    const GstWhisperWindowPolicy *policy, gboolean drain)
{
  const GstWhisperSettings *s = &self->task_settings;
  const GstWhisperOutputMode output = s->output.output;
  GstWhisperWindow *w = &self->window;
  WhisperDecodeOptions opts;
  WhisperStreamStats before, stats;
  CallContext ctx = { 0, };
  g_autoptr (GArray) suppress = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GError) err = NULL;
  GstFlowReturn ret = GST_FLOW_OK;
  GstClockTime call_duration, measured_duration, translate_duration = 0;
  gint64 call_start_us;
  gsize done = 0;
  gboolean ok;
  GstWhisperLiveInput in = { 0, };
  /* the new audio the call takes (the overload ladder's measure) */
  const guint64 covered = w->seek + region->n_samples
      - MIN (w->seek + region->n_samples, MAX (w->given, w->seek));

  if (is_cancelled (self))
    return GST_FLOW_FLUSHING;

  /* What the call decodes: the buffer, live after the context of
   * committed speech (the detector runs here, without the lock) */
  in.pcm = in.window = gst_whisper_window_data (w);
  in.n = in.window_n = region->n_samples;
  in.start = in.splice = in.window_start = w->seek;
  if (region->carry == GST_WHISPER_CARRY_COMMIT) {
    WhisperVadOptions vo;
    gst_whisper_vad_settings_fill_vad (&s->vad, &vo);
    gst_whisper_live_begin_call (self, &self->live, self->vad, &vo, s->live.context_s,
        in.window, in.window_start, in.window_n, &in);
  }

  call_context_init (&ctx, self, region);
  ctx.segments = g_ptr_array_new_with_free_func ((GDestroyNotify) whisper_segment_free);

  call_options (self, region, policy, &in, drain, &ctx, &opts, suppress);
  /* The pending words wait for this call (the deadline let them wait,
   * counting on it taking no longer than the longest of the last few,
   * gstwhisperlive.c): a window Whisper's rule adds after the text (as long
   * as the first again) is left out where it would make one of them late;
   * its audio is read again by the next call anyway (not when draining:
   * there is none). Not with a nominal call time (paced measurements stay
   * deterministic). */
  if (region->carry == GST_WHISPER_CARRY_COMMIT && !drain
      && !GST_CLOCK_TIME_IS_VALID (nominal_call_duration ())) {
    const GstClockTime slack = gst_whisper_live_pending_slack (&self->live, &self->out, w,
        in.start + in.n, self->out.budget);
    if (GST_CLOCK_TIME_IS_VALID (slack))
      opts.last_window_by = g_get_monotonic_time () + 1 + (gint64) (slack / GST_USECOND);
  }
  whisper_stream_set_options (self->stream, &opts);
  /* the translate_src pads' options too */
  gst_whisper_translate_prepare (self, &opts, region->carry == GST_WHISPER_CARRY_COMMIT,
      output);
  whisper_stream_set_token_callback (self->stream, on_token, &ctx);
  self->words.token_eot = whisper_engine_get_info (self->engine)->token_eot;
  gst_whisper_words_begin_call (&self->words);

  GST_DEBUG_OBJECT (self, "transcribing %" G_GSIZE_FORMAT " samples at %" GST_TIME_FORMAT
      "%s", region->n_samples, GST_TIME_ARGS (gst_whisper_window_time_at (w, w->seek)),
      carry_name (region->carry));
  whisper_stream_get_stats (self->stream, &before);
  call_start_us = g_get_monotonic_time ();
  if (ctx.batched) {
    /* offline-mode=batched: the whole run in pieces at once (the words of
     * output=words come from the segments' word timestamps) */
    ok = whisper_stream_transcribe_batched (self->stream, s->input.batch_size,
        gst_whisper_window_data (w), region->n_samples, on_segment, &ctx, NULL, &err);
  } else {
    ok = whisper_stream_transcribe (self->stream, in.pcm, in.n, on_segment, &ctx, NULL, &err);
  }
  if (region->carry == GST_WHISPER_CARRY_COMMIT && self->slow_calls > 0) {
    self->slow_calls--;         /* test hook: a slow engine */
    g_usleep ((gulong) self->slow_ms * 1000);
  }
  call_duration = (GstClockTime) (g_get_monotonic_time () - call_start_us) * GST_USECOND;
  measured_duration = call_duration;
  if (region->carry == GST_WHISPER_CARRY_COMMIT
      && GST_CLOCK_TIME_IS_VALID (nominal_call_duration ()))
    call_duration = nominal_call_duration ();
  whisper_stream_set_token_callback (self->stream, NULL, NULL);
  whisper_stream_get_stats (self->stream, &stats);
  gst_whisper_sink_count_encoder (self, &before, &stats);
  GST_DEBUG_OBJECT (self, "call of %" G_GSIZE_FORMAT " samples took %.3f s: mel %.3f s, "
      "encoder %.3f s, decoder %.3f s, %" G_GUINT64_FORMAT " windows, %" G_GUINT64_FORMAT
      " decode steps, %" G_GUINT64_FORMAT " fallbacks, %" G_GUINT64_FORMAT
      " windows left for time", region->n_samples,
      measured_duration / (double) GST_SECOND, stats.mel_seconds - before.mel_seconds,
      stats.encoder_seconds - before.encoder_seconds,
      stats.decoder_seconds - before.decoder_seconds, stats.windows - before.windows,
      stats.decode_steps - before.decode_steps, stats.windows_fallback - before.windows_fallback,
      stats.windows_past_deadline - before.windows_past_deadline);
  GST_OBJECT_LOCK (self);
  self->stats.windows_silent = stats.windows_silent;
  self->stats.windows_no_voice = stats.windows_no_voice;
  self->stats.windows_no_speech = stats.windows_no_speech;
  GST_OBJECT_UNLOCK (self);

  if (!ok && ctx.flow == GST_FLOW_OK) {
    if (!g_error_matches (err, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_CANCELLED)) {
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Transcription failed: %s",
              err ? err->message : "unknown error"), (NULL));
      ret = GST_FLOW_ERROR;
    } else if (ctx.next_window < 0.0) {
      ret = GST_FLOW_FLUSHING;
    }
  }
  /* the translate_src pads: the same input again, task=translate, at
   * once (their streams take this decode's encoder output) */
  if (ok && ctx.flow == GST_FLOW_OK && translating (self)) {
    call_start_us = g_get_monotonic_time ();
    ctx.flow = gst_whisper_translate_transcribe (self, in.pcm, in.n);
    translate_duration = (GstClockTime) (g_get_monotonic_time () - call_start_us) * GST_USECOND;
  }
  if (region->carry == GST_WHISPER_CARRY_COMMIT)
    gst_whisper_overload_observe (&self->overload, GST_ELEMENT (self),
        call_duration + translate_duration, gst_whisper_sink_samples_to_time (covered),
        self->out.budget, gst_whisper_window_end (w) + gst_whisper_queue_samples (&self->queue)
        >= w->seek + region->n_samples + policy->chunk_samples);
  if (ret == GST_FLOW_OK && ctx.flow == GST_FLOW_OK) {
    if (region->carry == GST_WHISPER_CARRY_COMMIT)
      /* the next call waits for this one's translation too */
      done = gst_whisper_live_finish_call (self, &self->live, &self->out, &in,
          ctx.segments, drain, call_duration + translate_duration,
          gst_util_uint64_scale_int (policy->chunk_samples, GST_SECOND, WHISPER_SAMPLE_RATE),
          self->out.budget, output, &ctx.flow);
    else
      done = finish_call (&ctx, region);
  }
  /* the translate_src pads' text of it */
  if (ret == GST_FLOW_OK && ctx.flow == GST_FLOW_OK && translating (self)) {
    GstWhisperTranslateCall tc = { 0, };
    tc.pcm = gst_whisper_window_data (w);
    tc.in = &in;
    tc.call_start = ctx.start;
    tc.n_samples = region->n_samples;
    tc.done = done;
    tc.commit = region->carry == GST_WHISPER_CARRY_COMMIT;
    tc.drain = drain;
    tc.call_duration = call_duration + translate_duration;
    tc.chunk = gst_util_uint64_scale_int (policy->chunk_samples, GST_SECOND,
        WHISPER_SAMPLE_RATE);
    tc.budget = self->out.budget;
    tc.output = output;
    ctx.flow = gst_whisper_translate_decode (self, &tc);
  } else if (ret == GST_FLOW_OK && ctx.flow == GST_FLOW_OK
      && region->carry == GST_WHISPER_CARRY_COMMIT && gst_whisper_translate_any (self)) {
    /* the overload ladder skips their decode: what they had pending goes
     * out as it stands, GAPs follow (gst_whisper_call_advance) */
    GstFlowReturn tr = gst_whisper_translate_flush (self, output);
    /* (downstream of a translation pad may be unlinked or gone) */
    if (tr != GST_FLOW_NOT_LINKED && tr != GST_FLOW_EOS)
      ctx.flow = tr;
  }
  if (ctx.flow != GST_FLOW_OK)
    ret = ctx.flow;

  drop_words (&ctx);
  g_array_unref (ctx.held_words);
  g_ptr_array_unref (ctx.segments);
  g_clear_pointer (&ctx.held, whisper_segment_free);
  if (ret != GST_FLOW_OK)
    return ret;

  gst_whisper_call_advance (self, region, done);
  return GST_FLOW_OK;
}

/* ------------------------------------------------------------------------ */
/* device=remote: the server instead of the engine (gstwhisperremote.h) */

static gboolean
remote_cancelled (gpointer user_data)
{
  CallContext *ctx = user_data;

  return is_cancelled (ctx->self);
}

/* A word of the server's answer (takes it), as on_token gives them. */
static gboolean
on_remote_word (GstWhisperWord *word, gpointer user_data)
{
  CallContext *ctx = user_data;

  if (ctx->flow != GST_FLOW_OK) {
    gst_whisper_word_clear (word);
    return FALSE;
  }
  if (ctx->answer) {
    /* live remote: out when agreed on, timed by it (add_answer_segment) */
    if (ctx->answer_words)
      g_array_append_val (ctx->answer_words, *word);
    else
      gst_whisper_word_clear (word);
    return TRUE;
  }
  take_word (ctx, word);
  return ctx->flow == GST_FLOW_OK;
}

/* Live remote: committed words (gstwhisperagree.h) go out: a buffer per
 * word (output=words) or per run of words, final. */
static void
push_agreed (CallContext *ctx, GArray *agreed)
{
  GstWhisperItem item = { 0, };
  GString *run = g_string_new (NULL);
  guint i;

  item.avg_logprob = NAN;
  item.no_speech_prob = NAN;
  item.final = TRUE;
  item.decode_step = -1;
  item.push = TRUE;
  for (i = 0; i < agreed->len; i++) {
    /* an answer with times times its words better than the estimate */
    GstWhisperAgreedWord *w = &g_array_index (agreed, GstWhisperAgreedWord, i);
    double start = answer_time_at (ctx, w->from), end = answer_time_at (ctx, w->to);
    if (isfinite (start) && isfinite (end)) {
      w->start = start;
      w->end = MAX (end, start);
    }
  }
  for (i = 0; i < agreed->len && ctx->flow == GST_FLOW_OK; i++) {
    GstWhisperAgreedWord *w = &g_array_index (agreed, GstWhisperAgreedWord, i);
    GstWhisperAgreedWord *first = &g_array_index (agreed, GstWhisperAgreedWord, 0);
    g_string_append_printf (run, "%s%s", run->len ? " " : "", w->text);
    if (ctx->output != GST_WHISPER_OUTPUT_WORDS && i + 1 < agreed->len)
      continue;
    item.text = run->str;
    item.pts = call_time (ctx, ctx->output == GST_WHISPER_OUTPUT_WORDS ? w->start
        : first->start);
    item.duration = MAX (call_time (ctx, w->end), item.pts + GST_MSECOND) - item.pts;
    item.granularity = ctx->output == GST_WHISPER_OUTPUT_WORDS ? "word" : "segment";
    ctx->flow = gst_whisper_output_push_item (&ctx->self->out, &item);
    g_string_truncate (run, 0);
  }
  g_string_free (run, TRUE);
}

/* server-stream: the words of the answer so far that the previous answer
 * agrees with, out now (`complete`: the whole answer). */
static void
commit_agreed (CallContext *ctx, const gchar *text, gboolean complete)
{
  g_autoptr (GArray) agreed = g_array_new (FALSE, FALSE, sizeof (GstWhisperAgreedWord));

  g_array_set_clear_func (agreed, gst_whisper_agreed_word_clear);
  if (gst_whisper_agree_update (&ctx->self->agree, text, complete,
          ctx->n_samples / (double) WHISPER_SAMPLE_RATE, agreed) > 0)
    push_agreed (ctx, agreed);
}

/* server-stream: the text so far of the answer being read, as a local
 * live decode's words not committed yet: a whisper-text message with
 * final=FALSE and granularity "interim", over the audio sent; the words
 * the previous answer agrees with are committed at once. */
static gboolean
on_remote_delta (const gchar *text, G_GNUC_UNUSED const gchar *delta, gpointer user_data)
{
  CallContext *ctx = user_data;
  GstWhisperItem item = { 0, };
  gchar *shown = g_strstrip (g_strdup (text));
  GstClockTime start = call_time (ctx, 0.0);

  GST_OBJECT_LOCK (ctx->self);
  ctx->self->stats.remote_deltas++;
  GST_OBJECT_UNLOCK (ctx->self);
  if (ctx->answer)
    commit_agreed (ctx, text, FALSE);
  if (ctx->flow == GST_FLOW_OK && *shown != '\0') {
    item.text = shown;
    item.pts = start;
    item.duration = call_time (ctx, ctx->n_samples / (double) WHISPER_SAMPLE_RATE) - start;
    item.avg_logprob = NAN;
    item.no_speech_prob = NAN;
    item.final = FALSE;
    item.granularity = "interim";
    item.decode_step = -1;
    item.push = FALSE;
    ctx->flow = gst_whisper_output_push_item (&ctx->self->out, &item);
  }
  g_free (shown);
  return ctx->flow == GST_FLOW_OK && !is_cancelled (ctx->self);
}

/* Live remote: after the answer, what agreement commits (gstwhisperagree.h);
 * how much of the region is done (none while the answer is carried), and
 * the text that leaves the window (`gone`). */
static gsize
finish_agreed (CallContext *ctx, const GstWhisperRegion *region, GString *gone)
{
  const double seconds = region->n_samples / (double) WHISPER_SAMPLE_RATE;
  g_autoptr (GArray) agreed = NULL;

  if (region->carry == GST_WHISPER_CARRY_LAST_SEGMENT) {
    commit_agreed (ctx, ctx->answer->str, TRUE);
    gst_whisper_agree_keep (&ctx->self->agree, ctx->answer->str, seconds);
    return 0;
  }
  agreed = g_array_new (FALSE, FALSE, sizeof (GstWhisperAgreedWord));
  g_array_set_clear_func (agreed, gst_whisper_agreed_word_clear);
  gst_whisper_agree_finish (&ctx->self->agree, ctx->answer->str, seconds, agreed, gone);
  push_agreed (ctx, agreed);
  return region->n_samples;
}

GstFlowReturn
gst_whisper_call_remote_piece (GstWhisperSink *self, GstWhisperRemoteJob *job,
    gsize n_samples)
{
  GstWhisperRegion region = { n_samples, GST_WHISPER_CARRY_NONE };
  CallContext ctx = { 0, };
  g_autoptr (GError) err = NULL;
  GstFlowReturn ret = GST_FLOW_OK;
  gsize done = n_samples;

  if (job == NULL) {
    gst_whisper_call_advance (self, &region, n_samples);
    return GST_FLOW_OK;
  }
  call_context_init (&ctx, self, &region);
  switch (gst_whisper_remote_finish (self->remote, job, on_segment, on_remote_word,
          remote_cancelled, &ctx, &err)) {
    case GST_WHISPER_REMOTE_DONE:
      if (ctx.flow == GST_FLOW_OK)
        done = finish_call (&ctx, &region);
      break;
    case GST_WHISPER_REMOTE_CANCELLED:
    case GST_WHISPER_REMOTE_LATER:
      ret = GST_FLOW_FLUSHING;
      break;
    case GST_WHISPER_REMOTE_FAILED:
      GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s", err->message),
          ("device=remote, server-url %s", gst_whisper_remote_get_url (self->remote)));
      ret = GST_FLOW_ERROR;
      break;
  }
  if (ret == GST_FLOW_OK && ctx.flow != GST_FLOW_OK)
    ret = ctx.flow;
  drop_words (&ctx);
  g_array_unref (ctx.held_words);
  if (ret != GST_FLOW_OK)
    return ret;
  gst_whisper_call_advance (self, &region, done);
  return GST_FLOW_OK;
}

/* One request for the live region (file input goes through
 * gstwhisperfleet.c): *later when the server did not answer (the audio
 * stays buffered). Blocks (retries) when draining. */
GstFlowReturn
gst_whisper_call_transcribe_remote (GstWhisperSink *self, const GstWhisperRegion *region,
    gboolean drain, gboolean *later)
{
  const GstWhisperSettings *s = &self->task_settings;
  const GstWhisperOutputMode output = s->output.output;
  GstWhisperWindow *w = &self->window;
  GstWhisperRemoteRequest req = { 0, };
  CallContext ctx = { 0, };
  g_autoptr (GError) err = NULL;
  GstWhisperRemoteResult res;
  GstFlowReturn ret = GST_FLOW_OK;
  gsize done = 0;

  *later = FALSE;
  if (is_cancelled (self))
    return GST_FLOW_FLUSHING;
  call_context_init (&ctx, self, region);

  req.language = s->decoding.language_code;
  req.condition = s->decoding.condition_on_previous_text;
  req.temperature = 0.0;
  req.words = output == GST_WHISPER_OUTPUT_WORDS;
  /* server-stream: live calls only (file pieces need the segments' times) */
  req.stream = s->remote.stream;
  req.delta_func = on_remote_delta;
  /* committed by agreement, streamed or not: server-stream changes when the
   * words come, not which (gstwhisperagree.h) */
  ctx.answer = g_string_new (NULL);
  if (!req.stream) {
    ctx.spans = g_array_new (FALSE, FALSE, sizeof (AnswerSpan));
    ctx.answer_words = g_array_new (FALSE, FALSE, sizeof (GstWhisperWord));
    g_array_set_clear_func (ctx.answer_words, (GDestroyNotify) gst_whisper_word_clear);
  }
  gst_whisper_agree_begin (&self->agree, w->seek);

  GST_DEBUG_OBJECT (self, "sending %" G_GSIZE_FORMAT " samples at %" GST_TIME_FORMAT
      "%s to the server", region->n_samples,
      GST_TIME_ARGS (gst_whisper_window_time_at (w, w->seek)), carry_name (region->carry));
  res = gst_whisper_remote_transcribe (self->remote, gst_whisper_window_data (w),
      region->n_samples, &req, drain, on_segment, on_remote_word, remote_cancelled, &ctx,
      &err);
  switch (res) {
    case GST_WHISPER_REMOTE_DONE:
      break;
    case GST_WHISPER_REMOTE_LATER:
      *later = TRUE;
      break;
    case GST_WHISPER_REMOTE_CANCELLED:
      ret = GST_FLOW_FLUSHING;
      break;
    case GST_WHISPER_REMOTE_FAILED:
      GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s", err->message),
          ("device=remote, server-url %s", gst_whisper_remote_get_url (self->remote)));
      ret = GST_FLOW_ERROR;
      break;
  }
  if (res == GST_WHISPER_REMOTE_DONE && ctx.flow == GST_FLOW_OK) {
    g_autoptr (GString) gone = g_string_new (NULL);
    done = finish_agreed (&ctx, region, gone);
    gst_whisper_remote_commit_text (self->remote, gone->str);
  }
  if (ret == GST_FLOW_OK && ctx.flow != GST_FLOW_OK)
    ret = ctx.flow;
  drop_words (&ctx);
  g_array_unref (ctx.held_words);
  g_clear_pointer (&ctx.held, whisper_segment_free);
  if (ctx.answer)
    g_string_free (ctx.answer, TRUE);
  g_clear_pointer (&ctx.spans, g_array_unref);
  g_clear_pointer (&ctx.answer_words, g_array_unref);
  if (ret != GST_FLOW_OK || *later)
    return ret;

  gst_whisper_call_advance (self, region, done);
  return GST_FLOW_OK;
}
