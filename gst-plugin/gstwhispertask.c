/* gstwhispertask.c: whispersink's inference task. It takes the audio and
 * events the streaming thread queued (gstwhisperqueue.c), keeps the audio
 * in the window (gstwhisperwindow.c), decides when to call the engine,
 * turns what the engine reports into output items (gstwhisperoutput.c,
 * gstwhisperwords.c) and forwards the serialized events in order, draining
 * before SEGMENT, GAP, DISCONT and EOS. Everything it sends goes through
 * the output queue (gstwhisperoutqueue.c) to the src pad task
 * (gstwhispersrc.c): downstream never blocks it (live), or only once the
 * output queue is full (non-live).
 *
 * Non-live upstream (offline-mode=exact, the default): the audio of a run is
 * buffered and transcribed by one whisper_stream_transcribe() call when the
 * run ends (EOS, DISCONT, GAP, new SEGMENT). That call is what the engine
 * does for a whole file, so the text is the engine's own: its long-form
 * loop seeks by the last timestamp of each 30-s window and its log-mel
 * normalisation (clamp at max - 8) is over the whole input, both of which
 * depend on all of the audio. Segments still go out as each window
 * completes during that call.
 *
 * Non-live, offline-mode=windowed: as soon as a window plus one second of
 * lookahead is buffered, the engine gets exactly that audio; the call is
 * stopped when the engine starts its second window (token event with a new
 * window start), which is where its own loop would seek next, and the audio
 * from there on stays buffered for the next call. Memory stays bounded and
 * text comes early; it can differ from the whole-file text because each
 * window's log-mel is normalised over that call's audio only and the first
 * frames of a window see reflect padding instead of the audio before it.
 *
 * Live upstream: every chunk (`latency`/4) of new audio the engine gets all
 * the audio not transcribed yet. Every segment but the last goes out; the
 * last one may be cut by the edge of the audio, so while the next call
 * stays within three chunks it is held back and its audio is decoded again
 * with the next chunk (a sentence grows until Whisper closes it). A sample
 * therefore waits at most three chunks before a call that outputs it, and
 * the last quarter of the budget is left for inference. Live calls are not
 * conditioned on previous text: the engine's prompt history would hold the
 * held-back segment (the API has no way to take it out).
 * When more audio waits than that plan leaves room for
 * (gst_whisper_window_backlog_limit (): latency + lateness, or more when
 * the budget is under two 0.5-s chunks), inference is slower than real
 * time: the oldest audio is dropped down to one chunk, a GAP covers it and
 * a warning is posted.
 *
 * device=remote (gstwhisperremote.h): the same plan, with a server instead
 * of the engine. Non-live audio goes window by window (30 s, no
 * lookahead) whatever offline-mode says, each window with the previous
 * windows' text as prompt; live audio goes chunk by chunk as above, a
 * carried segment sent again with the next chunk. While the server does
 * not answer the audio stays in the window: the task goes on taking audio
 * from the queue and tries again after a back-off, up to server-queue of
 * audio; beyond it live audio is dropped (GAP, warning) and non-live audio
 * waits (the task blocks in the retries, the queue fills, upstream
 * blocks). A drain (EOS, GAP, DISCONT, new SEGMENT) waits for the server. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstwhispersink-private.h"
#include "whisper-languages.h"

#include <math.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_whisper_sink_debug

#define WINDOWED_LOOKAHEAD_SAMPLES (WHISPER_SAMPLE_RATE)
/* Live: text may wait this much longer than latency + lateness for
 * downstream before the oldest is dropped. */
#define OUTPUT_SLACK (GST_SECOND)
/* Segment times and token times are the same 20-ms timestamps, computed
 * apart. */
#define SEGMENT_TIME_EPSILON 0.005
/* Live decodes (the commit policy) sample at most this many tokens plus
 * this many per second of their audio. */
#define LIVE_TOKENS_BASE 20
#define LIVE_TOKENS_PER_S 6

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
  GstFlowReturn flow;
} CallContext;

/* live-encoder=buffered: a live call's encoder window is its audio and
 * this much more (a word being said at its end), in steps of 0.5 s
 * (25 frames), at least LIVE_ENCODER_MIN_FRAMES: the shortest window the
 * measurements of encoder-context found as good as 30 s (gstwhispersink.c). */
#define LIVE_ENCODER_MARGIN_S 1.0
#define LIVE_ENCODER_STEP_FRAMES 25
#define LIVE_ENCODER_MIN_FRAMES 375

/* Encoder frames (50 a second) of a live call of n_samples, at most the
 * engine's window. */
static int
live_encoder_frames (gsize n_samples, int max_frames)
{
  const double seconds = n_samples / (double) WHISPER_SAMPLE_RATE + LIVE_ENCODER_MARGIN_S;
  const int steps = (int) ceil (seconds * 50.0 / LIVE_ENCODER_STEP_FRAMES);
  return CLAMP (steps * LIVE_ENCODER_STEP_FRAMES, MIN (LIVE_ENCODER_MIN_FRAMES, max_frames),
      max_frames);
}

static void task_loop (gpointer user_data);

void
gst_whisper_sink_task_init (GstWhisperSink *self)
{
  gst_whisper_window_init (&self->window, WHISPER_SAMPLE_RATE);
  gst_whisper_output_init (&self->out, GST_ELEMENT (self), &self->outq);
  gst_whisper_words_init (&self->words, -1);
  gst_whisper_live_init (&self->live, WHISPER_SAMPLE_RATE);
  g_rec_mutex_init (&self->task_lock);
  self->task = gst_task_new (task_loop, self, NULL);
  gst_task_set_lock (self->task, &self->task_lock);
}

void
gst_whisper_sink_task_finalize (GstWhisperSink *self)
{
  gst_object_unref (self->task);
  g_rec_mutex_clear (&self->task_lock);
  gst_whisper_window_clear (&self->window);
  gst_whisper_words_clear (&self->words);
  gst_whisper_live_clear (&self->live);
}

gboolean
gst_whisper_sink_task_start (GstWhisperSink *self)
{
  return gst_task_start (self->task);
}

void
gst_whisper_sink_task_pause (GstWhisperSink *self)
{
  gst_task_pause (self->task);
  /* The loop function runs with the lock held. */
  g_rec_mutex_lock (&self->task_lock);
  g_rec_mutex_unlock (&self->task_lock);
}

void
gst_whisper_sink_task_stop (GstWhisperSink *self)
{
  gst_task_stop (self->task);
  /* The loop function may pause the task itself (flushing) after this
   * stop, which would leave the thread waiting in PAUSED; once it has
   * returned, gst_task_join() sets STOPPED again and wakes it (as
   * gst_pad_stop_task() does with the stream lock). */
  g_rec_mutex_lock (&self->task_lock);
  g_rec_mutex_unlock (&self->task_lock);
  gst_task_join (self->task);
}

void
gst_whisper_sink_task_reset (GstWhisperSink *self)
{
  gst_whisper_window_reset (&self->window, GST_CLOCK_TIME_NONE);
  gst_whisper_live_reset (&self->live);
  gst_whisper_translate_reset (self);
  gst_whisper_output_reset (&self->out);
  gst_segment_init (&self->out.segment, GST_FORMAT_TIME);
  gst_segment_init (&self->out.out_segment, GST_FORMAT_TIME);
  self->seen_segment = FALSE;
  self->caps_queued = FALSE;
  g_clear_pointer (&self->announced_language, g_free);
}

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

static gboolean
on_segment (WhisperSegment *segment, gpointer user_data)
{
  CallContext *ctx = user_data;

  announce_language (ctx->self, segment->language);

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
/* Engine calls */

static void
read_policy (GstWhisperSink *self, GstWhisperWindowPolicy *policy,
    GstWhisperOutputMode *output, double *no_speech_threshold)
{
  const WhisperEngineInfo *info = self->engine ? whisper_engine_get_info (self->engine) : NULL;
  guint latency_ms, lateness_ms;

  gst_whisper_queue_get_upstream (&self->queue, &policy->live, &self->out.upstream_min);
  self->out.live = policy->live;

  GST_OBJECT_LOCK (self);
  policy->offline = self->offline_mode;
  latency_ms = self->latency_ms;
  lateness_ms = self->lateness_ms;
  if (output)
    *output = self->output;
  if (no_speech_threshold)
    *no_speech_threshold = self->no_speech_threshold;
  GST_OBJECT_UNLOCK (self);

  policy->window_samples = info ? (gsize) info->window_samples
      : GST_WHISPER_REMOTE_WINDOW_SAMPLES;
  policy->lookahead_samples = WINDOWED_LOOKAHEAD_SAMPLES;
  if (self->remote) {
    /* device=remote: non-live audio window by window (see the top). */
    policy->offline = GST_WHISPER_OFFLINE_WINDOWED;
    policy->lookahead_samples = 0;
  }
  policy->commit = policy->live && !self->remote;
  policy->chunk_samples = policy->commit
      ? gst_whisper_window_commit_chunk (latency_ms, WHISPER_SAMPLE_RATE, policy->window_samples)
      : gst_whisper_window_chunk_for_latency (latency_ms, WHISPER_SAMPLE_RATE,
      policy->window_samples);
  self->out.budget = (GstClockTime) (latency_ms + lateness_ms) * GST_MSECOND;
  policy->budget_samples = gst_util_uint64_scale (self->out.budget, WHISPER_SAMPLE_RATE,
      GST_SECOND);
  /* A sink synchronising to the clock takes text within latency + lateness
   * of its time; text waiting longer is stuck behind downstream. */
  gst_whisper_out_queue_set_limits (&self->outq, policy->live,
      self->out.budget + OUTPUT_SLACK);
  gst_whisper_translate_set_limits (self, policy->live, self->out.budget + OUTPUT_SLACK,
      self->out.budget, self->out.upstream_min);
}

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
static void
advance_region (GstWhisperSink *self, const GstWhisperRegion *region, gsize done)
{
  GstWhisperWindow *w = &self->window;
  guint64 given = w->given;

  gst_whisper_window_advance (w, region->n_samples, done);
  GST_OBJECT_LOCK (self);
  self->audio_transcribed += w->given - given;
  GST_OBJECT_UNLOCK (self);
  gst_whisper_output_gap_until (&self->out, gst_whisper_window_time_at (w, w->seek));
  gst_whisper_translate_gap_until (self, gst_whisper_window_time_at (w, w->seek));
}

/* The detector's options from the vad-* properties. Object lock held. */
static void
vad_options_locked (GstWhisperSink *self, WhisperVadOptions *vo)
{
  whisper_vad_options_init (vo);
  vo->threshold = self->vad_threshold;
  vo->neg_threshold = self->vad_neg_threshold;
  vo->min_speech_duration_ms = self->vad_min_speech_ms;
  vo->max_speech_duration_s = self->vad_max_speech_s;
  vo->min_silence_duration_ms = self->vad_min_silence_ms;
  vo->speech_pad_ms = self->vad_speech_pad_ms;
}

static GstFlowReturn
transcribe (GstWhisperSink *self, const GstWhisperRegion *region,
    const GstWhisperWindowPolicy *policy, gboolean drain, GstWhisperOutputMode output,
    double no_speech_threshold)
{
  GstWhisperWindow *w = &self->window;
  WhisperDecodeOptions opts;
  WhisperStreamStats stats;
  CallContext ctx = { 0, };
  g_autoptr (GArray) suppress = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GError) err = NULL;
  GstFlowReturn ret = GST_FLOW_OK;
  GstClockTime call_duration;
  gint64 call_start_us;
  gsize done = 0;
  gboolean ok;
  int batch_size;
  GstWhisperLiveInput in = { 0, };

  if (is_cancelled (self))
    return GST_FLOW_FLUSHING;

  /* What the call decodes: the buffer, live after the context of
   * committed speech (the detector runs here, without the lock) */
  in.pcm = in.window = gst_whisper_window_data (w);
  in.n = in.window_n = region->n_samples;
  in.start = in.splice = in.window_start = w->seek;
  if (region->carry == GST_WHISPER_CARRY_COMMIT) {
    WhisperVadOptions vo;
    double context_s;
    GST_OBJECT_LOCK (self);
    vad_options_locked (self, &vo);
    context_s = self->live_context;
    GST_OBJECT_UNLOCK (self);
    gst_whisper_live_begin_call (self, &self->live, self->vad, &vo, context_s, in.window,
        in.window_start, in.window_n, &in);
  }

  ctx.self = self;
  ctx.output = output;
  ctx.start = w->seek;
  ctx.n_samples = region->n_samples;
  ctx.carry = region->carry;
  ctx.next_window = -1.0;
  ctx.first_window = -1.0;
  ctx.held_words = g_array_new (FALSE, TRUE, sizeof (GstWhisperWord));
  ctx.segments = g_ptr_array_new_with_free_func ((GDestroyNotify) whisper_segment_free);
  ctx.flow = GST_FLOW_OK;

  whisper_decode_options_init (&opts);
  opts.no_speech_threshold = no_speech_threshold;
  /* the translate_src pads' options too: their lock first */
  gst_whisper_translate_lock (self);
  GST_OBJECT_LOCK (self);
  opts.condition_on_previous_text = self->condition_on_previous_text;
  opts.silence_threshold_db = self->silence_threshold;
  opts.strict_no_speech = self->strict_no_speech;
  opts.word_timestamps = self->word_timestamps;
  opts.vad = self->vad_gate ? self->vad : NULL;
  /* vad-filter (gstwhispersink.c): the engine transcribes the speech only */
  vad_options_locked (self, &opts.vad_options);
  if (self->vad_filter && self->vad) {
    opts.vad = self->vad;
    opts.vad_filter = TRUE;
  }
  ctx.vad_filter = opts.vad_filter;
  /* offline-mode=batched: a drained run of file input, cut where the
   * detector (vad-model) finds no speech */
  ctx.batched = policy->offline == GST_WHISPER_OFFLINE_BATCHED && !policy->live
      && region->carry == GST_WHISPER_CARRY_NONE;
  batch_size = self->batch_size;
  if (ctx.batched) {
    opts.vad = self->vad;
    opts.vad_filter = FALSE;
    opts.word_timestamps |= output == GST_WHISPER_OUTPUT_WORDS;
  }
  opts.language = self->language_code;
  gst_whisper_decoding_fill (&self->decoding, self->out.live, &opts, suppress);
  /* The prompt history would hold the text of a carried segment, which is
   * decoded again: condition live calls on nothing. */
  if (region->carry == GST_WHISPER_CARRY_LAST_SEGMENT)
    opts.condition_on_previous_text = FALSE;
  /* The commit policy compares the words of consecutive decodes, by their
   * times: every call has word timestamps, and is conditioned on the text
   * committed so far (not on the engine's own history, which holds text
   * not committed). */
  if (region->carry == GST_WHISPER_CARRY_COMMIT) {
    /* Speech is 3 to 5 tokens a second: a decode that goes on is a loop,
     * and its length is the next decode's wait */
    const int bound = LIVE_TOKENS_BASE + (int) (in.n * LIVE_TOKENS_PER_S
        / WHISPER_SAMPLE_RATE);
    if (opts.max_new_tokens <= 0 || opts.max_new_tokens > bound)
      opts.max_new_tokens = bound;
    opts.word_timestamps = TRUE;
    opts.condition_on_previous_text = TRUE;
    if (self->live_encoder == GST_WHISPER_LIVE_ENCODER_BUFFERED)
      opts.encoder_length = live_encoder_frames (in.n,
          whisper_engine_get_info (self->engine)->max_encoder_length);
    /* Only the speech: trailing noise made "Thank you." (the detector is
     * loaded with vad-gate, the default, or vad-filter) */
    if (self->vad) {
      opts.vad = self->vad;
      opts.vad_filter = TRUE;
    }
    gst_whisper_live_prepare (self, &self->live, self->stream, self->decoding.initial_prompt,
        self->live_prompt, self->live_min_probability);
  }
  /* output=words with word timestamps: a greedy step's alignment-head
   * attention times its word as the step completes it; a beam search's
   * tokens come after the search without it, so its words are the
   * segments', timed by the window's alignment pass */
  ctx.words_from_segments = output == GST_WHISPER_OUTPUT_WORDS
      && region->carry != GST_WHISPER_CARRY_COMMIT
      && (ctx.batched || (opts.word_timestamps && opts.beam_size != 1));
  /* the options' strings are the properties': copied before unlocking */
  whisper_stream_set_options (self->stream, &opts);
  gst_whisper_translate_prepare (self, &opts, region->carry == GST_WHISPER_CARRY_COMMIT,
      output);
  GST_OBJECT_UNLOCK (self);
  gst_whisper_translate_unlock (self);
  whisper_stream_set_token_callback (self->stream, on_token, &ctx);
  self->words.token_eot = whisper_engine_get_info (self->engine)->token_eot;
  gst_whisper_words_begin_call (&self->words);

  GST_DEBUG_OBJECT (self, "transcribing %" G_GSIZE_FORMAT " samples at %" GST_TIME_FORMAT
      "%s", region->n_samples, GST_TIME_ARGS (gst_whisper_window_time_at (w, w->seek)),
      carry_name (region->carry));
  call_start_us = g_get_monotonic_time ();
  if (ctx.batched) {
    /* offline-mode=batched: the whole run in pieces at once (the words of
     * output=words come from the segments' word timestamps) */
    ok = whisper_stream_transcribe_batched (self->stream, batch_size,
        gst_whisper_window_data (w), region->n_samples, on_segment, &ctx, NULL, &err);
  } else {
    ok = whisper_stream_transcribe (self->stream, in.pcm, in.n, on_segment, &ctx, NULL, &err);
  }
  call_duration = (GstClockTime) (g_get_monotonic_time () - call_start_us) * GST_USECOND;
  whisper_stream_set_token_callback (self->stream, NULL, NULL);
  whisper_stream_get_stats (self->stream, &stats);
  GST_OBJECT_LOCK (self);
  self->windows_silent = stats.windows_silent;
  self->windows_no_voice = stats.windows_no_voice;
  self->windows_no_speech = stats.windows_no_speech;
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
  if (ret == GST_FLOW_OK && ctx.flow == GST_FLOW_OK) {
    if (region->carry == GST_WHISPER_CARRY_COMMIT)
      /* the next call waits for this one's translation too */
      done = gst_whisper_live_finish_call (self, &self->live, &self->out, &in,
          ctx.segments, drain, call_duration + self->translate_duration,
          gst_util_uint64_scale_int (policy->chunk_samples, GST_SECOND, WHISPER_SAMPLE_RATE),
          self->out.budget, output, &ctx.flow);
    else
      done = finish_call (&ctx, region);
  }
  /* the translate_src pads: the same audio again, task=translate */
  if (ret == GST_FLOW_OK && ctx.flow == GST_FLOW_OK && gst_whisper_translate_any (self)) {
    GstWhisperTranslateCall tc = { 0, };
    tc.pcm = gst_whisper_window_data (w);
    tc.call_start = ctx.start;
    tc.n_samples = region->n_samples;
    tc.done = done;
    tc.commit = region->carry == GST_WHISPER_CARRY_COMMIT;
    tc.drain = drain;
    tc.call_duration = call_duration + self->translate_duration;
    tc.chunk = gst_util_uint64_scale_int (policy->chunk_samples, GST_SECOND,
        WHISPER_SAMPLE_RATE);
    tc.budget = self->out.budget;
    tc.output = output;
    call_start_us = g_get_monotonic_time ();
    ctx.flow = gst_whisper_translate_decode (self, &tc);
    self->translate_duration = (GstClockTime) (g_get_monotonic_time () - call_start_us)
        * GST_USECOND;
  }
  if (ctx.flow != GST_FLOW_OK)
    ret = ctx.flow;

  drop_words (&ctx);
  g_array_unref (ctx.held_words);
  g_ptr_array_unref (ctx.segments);
  g_clear_pointer (&ctx.held, whisper_segment_free);
  if (ret != GST_FLOW_OK)
    return ret;

  advance_region (self, region, done);
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
  take_word (ctx, word);
  return ctx->flow == GST_FLOW_OK;
}

/* One request for the region: *later when the server did not answer (the
 * audio stays buffered). Blocks (retries) when draining, and for non-live
 * audio once server-queue of it waits. */
static GstFlowReturn
transcribe_remote (GstWhisperSink *self, const GstWhisperRegion *region,
    const GstWhisperWindowPolicy *policy, GstWhisperOutputMode output, gboolean drain,
    gboolean *later)
{
  GstWhisperWindow *w = &self->window;
  GstWhisperRemoteRequest req = { 0, };
  CallContext ctx = { 0, };
  g_autoptr (GError) err = NULL;
  g_autofree gchar *language = NULL;
  GstWhisperRemoteResult res;
  GstFlowReturn ret = GST_FLOW_OK;
  gboolean block;
  gsize done = 0;

  *later = FALSE;
  if (is_cancelled (self))
    return GST_FLOW_FLUSHING;
  ctx.self = self;
  ctx.output = output;
  ctx.start = w->seek;
  ctx.n_samples = region->n_samples;
  ctx.carry = region->carry;
  ctx.next_window = -1.0;
  ctx.held_words = g_array_new (FALSE, TRUE, sizeof (GstWhisperWord));
  ctx.flow = GST_FLOW_OK;

  GST_OBJECT_LOCK (self);
  language = g_strdup (self->language_code);
  req.condition = self->condition_on_previous_text;
  GST_OBJECT_UNLOCK (self);
  req.language = language;
  req.temperature = 0.0;
  req.words = output == GST_WHISPER_OUTPUT_WORDS;
  block = drain || (!policy->live
      && gst_whisper_window_pending (w) >= gst_whisper_remote_queue_samples (self->remote));

  GST_DEBUG_OBJECT (self, "sending %" G_GSIZE_FORMAT " samples at %" GST_TIME_FORMAT
      "%s to the server", region->n_samples,
      GST_TIME_ARGS (gst_whisper_window_time_at (w, w->seek)), carry_name (region->carry));
  res = gst_whisper_remote_transcribe (self->remote, gst_whisper_window_data (w),
      region->n_samples, &req, block, on_segment, on_remote_word, remote_cancelled, &ctx,
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
    done = finish_call (&ctx, region);
    gst_whisper_remote_commit (self->remote, done / (double) WHISPER_SAMPLE_RATE);
  }
  if (ret == GST_FLOW_OK && ctx.flow != GST_FLOW_OK)
    ret = ctx.flow;
  drop_words (&ctx);
  g_array_unref (ctx.held_words);
  g_clear_pointer (&ctx.held, whisper_segment_free);
  if (ret != GST_FLOW_OK || *later)
    return ret;

  advance_region (self, region, done);
  return GST_FLOW_OK;
}

/* Live, device=remote: more than server-queue of audio waits for the
 * server; the oldest goes, as drop_backlog () drops it. */
static void
drop_backlog_remote (GstWhisperSink *self, const GstWhisperWindowPolicy *policy,
    gsize limit)
{
  GstWhisperWindow *w = &self->window;
  guint64 from = w->seek, given = w->given;
  /* A chunk below the limit: one warning per chunk of audio, not one per
   * buffer. */
  gsize keep = MAX (limit > policy->chunk_samples ? limit - policy->chunk_samples : 0,
      policy->chunk_samples);
  gsize dropped = gst_whisper_window_drop_backlog (w, keep);

  if (dropped == 0)
    return;
  GST_OBJECT_LOCK (self);
  self->audio_dropped += w->given - given;
  GST_OBJECT_UNLOCK (self);
  GST_ELEMENT_WARNING_WITH_DETAILS (self, STREAM, FAILED,
      ("The transcription server %s has not taken the audio: dropped the oldest %.1f s "
          "(from %" GST_TIME_FORMAT ")", gst_whisper_remote_get_url (self->remote),
          dropped / (double) w->rate, GST_TIME_ARGS (gst_whisper_window_time_at (w, from))),
      ("more than server-queue of audio was waiting for the server; raise server-queue "
          "or add servers"),
      ("reason", G_TYPE_STRING, "dropped-audio", "start", G_TYPE_UINT64,
          gst_whisper_window_time_at (w, from), "duration", G_TYPE_UINT64,
          gst_util_uint64_scale_int (dropped, GST_SECOND, w->rate), NULL));
  gst_whisper_output_gap_until (&self->out, gst_whisper_window_time_at (w, w->seek));
}

/* Live: drop what cannot be transcribed in time any more. */
static void
drop_backlog (GstWhisperSink *self, const GstWhisperWindowPolicy *policy,
    GstWhisperOutputMode output)
{
  GstWhisperWindow *w = &self->window;
  guint64 from = w->seek, given;
  gsize dropped, limit = gst_whisper_window_backlog_limit (policy);

  if (policy->commit) {
    /* The commit policy keeps committed audio up to a segment end in the
     * buffer: behind means more new audio than the budget waits for a
     * call. What is pending is committed as it stands, then the audio
     * goes. */
    gsize fresh = (gsize) (gst_whisper_window_end (w) - MAX (w->given, w->seek));
    if (fresh <= MAX (policy->budget_samples, 2 * policy->chunk_samples))
      return;
    if (gst_whisper_live_flush (self, &self->live, &self->out, output) != GST_FLOW_OK)
      return;
    limit = 0;
  }
  /* device=remote: audio waits for the server up to server-queue. */
  if (self->remote)
    limit = MAX (limit, gst_whisper_remote_queue_samples (self->remote));
  if (gst_whisper_window_pending (w) <= limit)
    return;
  if (self->remote) {
    drop_backlog_remote (self, policy, limit);
    return;
  }
  given = w->given;
  dropped = gst_whisper_window_drop_backlog (w, policy->chunk_samples);
  if (dropped == 0)
    return;
  /* Counted once: audio the engine had seen already (a held-back segment)
   * counts as transcribed. */
  GST_OBJECT_LOCK (self);
  self->audio_dropped += w->given - given;
  GST_OBJECT_UNLOCK (self);
  GST_ELEMENT_WARNING_WITH_DETAILS (self, STREAM, FAILED,
      ("Inference is slower than real time: dropped %.1f s of audio (from %"
          GST_TIME_FORMAT ")", dropped / (double) w->rate,
          GST_TIME_ARGS (gst_whisper_window_time_at (w, from))),
      ("more audio was waiting than latency + lateness; raise latency, lower "
          "encoder-context or use a faster device"),
      ("reason", G_TYPE_STRING, "dropped-audio", "start", G_TYPE_UINT64,
          gst_whisper_window_time_at (w, from), "duration", G_TYPE_UINT64,
          gst_util_uint64_scale_int (dropped, GST_SECOND, w->rate), NULL));
  gst_whisper_output_gap_until (&self->out, gst_whisper_window_time_at (w, w->seek));
  gst_whisper_translate_gap_until (self, gst_whisper_window_time_at (w, w->seek));
}

/* Runs every engine call that is due (all of the buffered audio when
 * draining). */
static GstFlowReturn
process (GstWhisperSink *self, gboolean drain)
{
  GstWhisperWindowPolicy policy;
  GstWhisperOutputMode output;
  GstWhisperRegion region;
  double threshold;
  GstFlowReturn ret;

  if (gst_whisper_window_pending (&self->window) == 0
      && !(drain && self->live.commit.pending->len > 0))
    return GST_FLOW_OK;
  read_policy (self, &policy, &output, &threshold);
  for (;;) {
    if (policy.live && !drain)
      drop_backlog (self, &policy, output);
    if (!gst_whisper_window_next_region (&self->window, &policy, drain, &region)) {
      /* the commit policy: what is still pending is final now */
      if (drain && policy.commit) {
        ret = gst_whisper_live_flush (self, &self->live, &self->out, output);
        if (ret == GST_FLOW_OK)
          ret = gst_whisper_translate_flush (self, output);
        /* what the buffer kept is done with: a GAP to its end */
        if (ret == GST_FLOW_OK && gst_whisper_window_pending (&self->window) > 0) {
          GstWhisperRegion rest = { gst_whisper_window_pending (&self->window),
            GST_WHISPER_CARRY_COMMIT };
          advance_region (self, &rest, rest.n_samples);
        }
        return ret;
      }
      return GST_FLOW_OK;
    }
    if (self->remote) {
      gboolean later;
      ret = transcribe_remote (self, &region, &policy, output, drain, &later);
      if (ret == GST_FLOW_OK && later)
        return GST_FLOW_OK;     /* the server is down: wait for more audio */
      if (ret != GST_FLOW_OK)
        return ret;
      continue;
    }
    ret = transcribe (self, &region, &policy, drain, output, threshold);
    if (ret != GST_FLOW_OK)
      return ret;
  }
}

/* ------------------------------------------------------------------------ */
/* Events */

static void
push_event (GstWhisperSink *self, GstEvent *event)
{
  GstFlowReturn ret;

  gst_whisper_translate_push_event (self, event);
  ret = gst_whisper_out_queue_push_event (&self->outq, event);

  if (ret != GST_FLOW_OK)
    GST_DEBUG_OBJECT (self, "event not queued: %s", gst_flow_get_name (ret));
}

static GstFlowReturn
handle_event (GstWhisperSink *self, GstEvent *event)
{
  GstFlowReturn ret = GST_FLOW_OK;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps = gst_pad_get_pad_template_caps (self->srcpad);
      gst_event_unref (event);
      /* The src pad may not have them yet while they wait in the queue. */
      if (!self->caps_queued && !gst_pad_has_current_caps (self->srcpad)) {
        push_event (self, gst_event_new_caps (caps));
        self->caps_queued = TRUE;
      }
      gst_caps_unref (caps);
      break;
    }
    case GST_EVENT_SEGMENT:{
      GstSegment segment;
      guint lateness_ms;

      ret = process (self, TRUE);
      gst_event_copy_segment (event, &segment);
      gst_event_unref (event);
      if (ret != GST_FLOW_OK)
        break;
      if (self->seen_segment && self->stream)
        whisper_stream_reset (self->stream);
      if (self->seen_segment && self->remote)
        gst_whisper_remote_reset (self->remote);
      self->seen_segment = TRUE;
      gst_whisper_window_reset (&self->window, GST_CLOCK_TIME_NONE);
      gst_whisper_live_reset (&self->live);

      GST_OBJECT_LOCK (self);
      lateness_ms = self->lateness_ms;
      GST_OBJECT_UNLOCK (self);
      gst_whisper_output_start_segment (&self->out, &segment,
          (GstClockTime) lateness_ms * GST_MSECOND);
      gst_whisper_translate_start_segment (self, &segment,
          (GstClockTime) lateness_ms * GST_MSECOND);
      break;
    }
    case GST_EVENT_GAP:{
      GstClockTime ts, dur;

      ret = process (self, TRUE);
      gst_event_parse_gap (event, &ts, &dur);
      gst_event_unref (event);
      if (ret != GST_FLOW_OK)
        break;
      gst_whisper_window_reset (&self->window, GST_CLOCK_TIME_NONE);
      gst_whisper_live_reset (&self->live);
      if (GST_CLOCK_TIME_IS_VALID (ts)) {
        /* Saturated: a GAP may reach past the largest valid timestamp. */
        GstClockTime end = GST_CLOCK_TIME_IS_VALID (dur)
            ? ts + MIN (dur, GST_CLOCK_TIME_NONE - 1 - ts) : ts;
        gst_whisper_output_start_at (&self->out, ts);
        gst_whisper_output_gap_until (&self->out, end);
        gst_whisper_translate_start_at (self, ts);
        gst_whisper_translate_gap_until (self, end);
      }
      break;
    }
    case GST_EVENT_EOS:
      ret = process (self, TRUE);
      if (ret != GST_FLOW_OK) {
        gst_event_unref (event);
        break;
      }
      gst_event_unref (event);
      /* The src pad task pushes it after the text and posts the EOS
       * message. */
      gst_whisper_translate_push_eos (self);
      ret = gst_whisper_out_queue_push_eos (&self->outq);
      break;
    default:
      push_event (self, event);
      break;
  }
  return ret;
}

static GstFlowReturn
handle_item (GstWhisperSink *self, GstWhisperQueueItem *item)
{
  GstFlowReturn ret = GST_FLOW_OK;

  switch (item->type) {
    case GST_WHISPER_ITEM_AUDIO:
      gst_whisper_window_append (&self->window, (const float *) item->pcm->data,
          item->pcm->len);
      break;
    case GST_WHISPER_ITEM_RESYNC:
      ret = process (self, TRUE);
      if (ret == GST_FLOW_OK) {
        GST_DEBUG_OBJECT (self, "new run at %" GST_TIME_FORMAT, GST_TIME_ARGS (item->pts));
        gst_whisper_window_reset (&self->window, item->pts);
        gst_whisper_live_reset (&self->live);
        gst_whisper_output_start_at (&self->out, item->pts);
        gst_whisper_translate_start_at (self, item->pts);
      }
      break;
    case GST_WHISPER_ITEM_EVENT:
      ret = handle_event (self, item->event);
      item->event = NULL;
      break;
  }
  return ret;
}

/* ------------------------------------------------------------------------ */
/* The loop */

static void
pause_task (GstWhisperSink *self, GstFlowReturn ret)
{
  GST_DEBUG_OBJECT (self, "pausing the inference task: %s", gst_flow_get_name (ret));
  gst_whisper_queue_pause (&self->queue, ret);
  gst_task_pause (self->task);

  /* Flows downstream returned were handled by the src pad task (an error
   * posted, EOS sent). An error of our own was posted already (a failed
   * transcription): downstream gets EOS after the text queued. */
  if ((ret == GST_FLOW_NOT_NEGOTIATED || ret < GST_FLOW_EOS)
      && gst_whisper_out_queue_get_result (&self->outq) == GST_FLOW_OK)
    gst_whisper_out_queue_push_event (&self->outq, gst_event_new_eos ());
}

static void
task_loop (gpointer user_data)
{
  GstWhisperSink *self = user_data;
  GQueue batch = G_QUEUE_INIT;
  GstWhisperQueueItem *item;
  GstFlowReturn ret = GST_FLOW_OK;
  gboolean had_audio = FALSE;

  /* All audio up to the next resync or event, or that one item. */
  if (!gst_whisper_queue_pop (&self->queue, &batch)) {
    GST_DEBUG_OBJECT (self, "flushing, pausing the inference task");
    gst_task_pause (self->task);
    return;
  }

  while ((item = g_queue_pop_head (&batch))) {
    if (ret == GST_FLOW_OK) {
      had_audio |= item->type == GST_WHISPER_ITEM_AUDIO;
      ret = handle_item (self, item);
    }
    gst_whisper_queue_item_free (item);
  }
  if (ret == GST_FLOW_OK && had_audio)
    ret = process (self, FALSE);

  if (ret != GST_FLOW_OK)
    pause_task (self, ret);
}
