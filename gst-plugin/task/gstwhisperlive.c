/* gstwhisperlive.c: the live commit path of whispersink's inference task
 * (gstwhispertask.c calls it for local live input).
 *
 * Every chunk (`latency`/6, at least 0.5 s) of new audio the engine decodes
 * the whole uncommitted buffer, with word timestamps (and, with live-prompt,
 * conditioned on the text committed before the buffer). The commit policy
 * (gstwhispercommit.h) decides which words are final: with
 * live-commit=agreement (the default) a word is committed as soon as two
 * decodes agree on it (LocalAgreement-2), with live-commit=deadline from
 * the last decode that still meets its deadline. Only committed words go
 * downstream, once, in order:
 *  - output=words: a buffer per committed word, timed by its DTW word
 *    timestamps;
 *  - output=segments: a buffer per run of committed words of one Whisper
 *    segment (so a sentence may come in a few pieces, each as soon as it is
 *    stable; `srtenc` makes a cue of each).
 * Each committed item is also a `whisper-text` message with final=TRUE, and
 * after each call the words not committed yet are one message with
 * final=FALSE and granularity "interim" (they may still change).
 *
 * Deadline: a word that would reach downstream later than its end plus
 * the budget (latency + lateness) if it waited for the next decode (one
 * chunk, or the lag of this call's audio when that is longer, plus one
 * call's duration and a margin) is committed as it stands. The budget
 * therefore bounds the delay after the words were spoken. (A synchronised
 * consumer waits latency after a buffer's PTS, the word's start: a word
 * then arrives before its end is due, and is shown from then on.)
 *
 * Trimming: the buffer may start after the last Whisper segment whose
 * words are all committed and that another segment follows; after it the
 * custom downstream event `rstranscribe/final-transcript` is sent
 * (gst-plugins-rs' textaccumulate and tttocea608 drain or start a new row
 * on it). When nothing is pending (or only words the last decode left
 * unread, gstwhispercommit.h) and no word came in the last second,
 * the speech has stopped: the buffer may start a second before its end
 * (the engine's silence threshold, VAD gate and no-speech rule keep
 * silence and noise from being text). A buffer longer than
 * GST_WHISPER_LIVE_MAX_BUFFER_S commits its older half's words as the
 * decode reads them and is cut at the committed end (or before its first
 * pending word, when no word came before it). A drain
 * (EOS, GAP, DISCONT, new segment) commits the last decode's words.
 *
 * Context: the audio of the last committed speech (live-context seconds),
 * kept as it leaves the buffer, goes before the buffer's first speech in
 * each call's input, and the words decoded for it are dropped
 * (gstwhispercontext.h). The voice activity detector runs over the buffer
 * before each call for that splice point, and guards the silence trim:
 * the buffer is never cut within 0.3 s of speech that has no committed
 * words yet, and its speech regions tell the commit policy where a
 * decode that read only committed words left speech unread
 * (gstwhispercommit.h). With a context, committed speech leaves the buffer as soon
 * as nothing is pending (the context carries it into the next call): kept
 * and decoded again, a finished sentence pulls the next word's reading
 * towards it. Agreed words less probable
 * than live-min-probability wait for more audio, up to their deadline or
 * until GST_WHISPER_COMMIT_UNSURE_WAIT_S of audio after them has been
 * decoded, and a sentence's first word after a pause until both agreeing
 * decodes heard START_HOLD_S after it (gstwhispercommit.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "task/gstwhisperlive.h"
#include "task/gstwhispersink-private.h"

#include <math.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_whisper_sink_debug

/* A word is committed by the deadline this long before it would be late
 * (the time from the end of a call to the buffer reaching downstream, and
 * the jitter of the call's duration). */
#define DEADLINE_MARGIN_S 0.1
/* With nothing pending, this much of the end of the buffer is kept (a
 * word may be starting in it). */
#define SILENCE_KEEP_S 1.0
/* Speech the detector found that ends this soon after the committed end
 * is the committed words' own (their padding); the silence trim keeps
 * this much before the first speech after it. */
#define SPEECH_GUARD_S 0.3
/* Committed speech ending this much past the guard after the buffer's
 * start is still the trim's leftover of the last word. */
#define LEFTOVER_SLACK_S 0.05
/* The detector's options when looking for the pause after a sentence:
 * 500 ms of silence end speech (as whisper_streaming's voice activity
 * controller ends an utterance: https://github.com/ufal/whisper_streaming),
 * 200 ms of pad on each side. */
#define SENTENCE_PAUSE_MIN_SILENCE_MS 500
#define SENTENCE_PAUSE_PAD_MS 200

/* A sentence's first word after a pause is committed by agreement once
 * both decodes heard this much audio after it (gstwhispercommit.h). */
#define START_HOLD_S 1.5

#define FINAL_TRANSCRIPT_EVENT "rstranscribe/final-transcript"

void
gst_whisper_live_init (GstWhisperLive *live, gint rate)
{
  memset (live, 0, sizeof (*live));
  gst_whisper_commit_init (&live->commit, rate);
  gst_whisper_context_init (&live->context, rate);
  live->rate = rate;
  live->speech_from = G_MAXUINT64;
  live->sentence_onset = G_MAXUINT64;
}

void
gst_whisper_live_clear (GstWhisperLive *live)
{
  gst_whisper_commit_clear (&live->commit);
  gst_whisper_context_clear (&live->context);
  g_clear_pointer (&live->prompt_set, g_free);
  g_clear_pointer (&live->prompt_ids, g_free);
}

void
gst_whisper_live_reset (GstWhisperLive *live)
{
  gst_whisper_commit_reset (&live->commit);
  g_clear_pointer (&live->prompt_set, g_free);
  g_clear_pointer (&live->prompt_ids, g_free);
  live->n_prompt_ids = 0;
  live->since_final = 0;
  gst_whisper_context_reset (&live->context);
  live->speech_from = G_MAXUINT64;
  live->sentence_onset = G_MAXUINT64;
  memset (&live->calls, 0, sizeof live->calls);
}

/* Where the next sentence starts when the buffer begins with a finished
 * one's end and a pause: after a last committed word that ends a
 * sentence, with the buffer holding no more of the committed speech than
 * the guard's leftover of that word (the silence trim, below), the first
 * speech not committed yet by a detector that ends speech after
 * SENTENCE_PAUSE_MIN_SILENCE_MS of silence; G_MAXUINT64 otherwise, when
 * the last decode gave a word before that point (speech the detector
 * missed) or when that speech, padded, reaches back to the committed end
 * (no pause). */
static guint64
sentence_after_pause (GstWhisperSink *self, GstWhisperLive *live, const GArray *probs,
    const WhisperVadOptions *options, guint64 window_start, gsize n)
{
  g_autoptr (GArray) speech = g_array_new (FALSE, FALSE, sizeof (WhisperVadSpeech));
  g_autoptr (GError) err = NULL;
  WhisperVadOptions pauses = *options;
  const GstWhisperCommit *c = &live->commit;
  guint64 from;

  if (!c->any_committed || c->committed_end > window_start
      + (guint64) ((SPEECH_GUARD_S + LEFTOVER_SLACK_S) * live->rate)
      || !gst_whisper_commit_ends_sentence (c))
    return G_MAXUINT64;
  pauses.min_silence_duration_ms = MIN (pauses.min_silence_duration_ms,
      SENTENCE_PAUSE_MIN_SILENCE_MS);
  pauses.speech_pad_ms = MIN (pauses.speech_pad_ms, SENTENCE_PAUSE_PAD_MS);
  if (!whisper_vad_speech_from_probabilities ((const float *) probs->data, probs->len, n,
          &pauses, speech, &err)) {
    GST_DEBUG_OBJECT (self, "no pauses for the live context: %s", err->message);
    return G_MAXUINT64;
  }
  /* a region that ends within the guard and the pad after the committed
   * words is theirs */
  from = gst_whisper_live_speech_from (speech, window_start, c->committed_end,
      (guint64) ((SPEECH_GUARD_S + MAX (pauses.speech_pad_ms, 0) / 1000.0) * live->rate));
  if (from != G_MAXUINT64 && c->pending->len > 0
      && g_array_index (c->pending, GstWhisperTimedWord, 0).end < from)
    return G_MAXUINT64;
  /* no pause: speech (with its pad) from the committed end on. Cut there,
   * the input would begin inside the last word, where the decodes can give
   * nothing for seconds of speech until the output queue drops it as too
   * late */
  if (from != G_MAXUINT64 && from <= c->committed_end)
    return G_MAXUINT64;
  return from;
}

void
gst_whisper_live_begin_call (GstWhisperSink *self, GstWhisperLive *live, const WhisperVad *vad,
    const WhisperVadOptions *options, double context_s, const float *window,
    guint64 window_start, gsize n, GstWhisperLiveInput *in)
{
  g_autoptr (GArray) speech = g_array_new (FALSE, FALSE, sizeof (WhisperVadSpeech));
  g_autoptr (GArray) probs = g_array_new (FALSE, FALSE, sizeof (float));
  g_autoptr (GError) err = NULL;
  guint64 speech_start = G_MAXUINT64, next;

  live->context_s = context_s;
  live->sentence_onset = G_MAXUINT64;
  g_array_set_size (live->commit.speech, 0);
  /* the detector's network runs once; its probabilities give both the
   * speech regions and, after a sentence, the pauses */
  if (vad && context_s > 0) {
    whisper_vad_probabilities (vad, window, n, probs);
    if (!whisper_vad_speech_from_probabilities ((const float *) probs->data, probs->len, n,
            options, speech, &err)) {
      /* the same options fail the engine's call with this message */
      GST_DEBUG_OBJECT (self, "no speech regions for the live context: %s", err->message);
      g_array_set_size (speech, 0);
    } else {
      /* the commit policy keeps the words a decode left unread there */
      for (guint i = 0; i < speech->len; i++) {
        const WhisperVadSpeech *r = &g_array_index (speech, WhisperVadSpeech, i);
        GstWhisperCommitSpan span = { window_start + (guint64) MAX (r->start_sample, 0),
          window_start + (guint64) MAX (r->end_sample, 0)
        };
        g_array_append_val (live->commit.speech, span);
      }
    }
  }
  live->speech_from = gst_whisper_live_speech_from (speech, window_start,
      live->commit.committed_end, (guint64) (SPEECH_GUARD_S * live->rate));
  /* The context goes before the buffer's first speech; after a finished
   * sentence and a pause, before the next sentence: the leftover of the
   * last word and the pause are left out. Heard after a second or two of
   * noise, an utterance's first words come wrong, and right with the
   * pause cut; what the decode reads in the detector's pad before them is
   * dropped (drop_pause_noise). Pauses within a sentence stay: a word cut
   * from the sentence before it is misread. */
  if (speech->len > 0) {
    speech_start = window_start
        + (guint64) MAX (g_array_index (speech, WhisperVadSpeech, 0).start_sample, 0);
    next = sentence_after_pause (self, live, probs, options, window_start, n);
    if (next != G_MAXUINT64 && next > speech_start) {
      GST_LOG_OBJECT (self, "a pause after the sentence: %.2f s to %.2f s left out",
          speech_start / (double) live->rate, next / (double) live->rate);
      speech_start = next;
      live->sentence_onset = next + (guint64) (SENTENCE_PAUSE_PAD_MS / 1000.0 * live->rate);
    }
  }
  gst_whisper_context_input (&live->context, window, window_start, n, speech_start, in);
  if (in->splice != in->window_start || in->n != n)
    GST_LOG_OBJECT (self, "%.2f s of context before the buffer from %.2f s",
        (in->splice - in->start) / (double) live->rate, in->splice / (double) live->rate);
}

void
gst_whisper_live_prepare (GstWhisperSink *self, GstWhisperLive *live, WhisperStream *stream,
    const gchar *initial_prompt, gboolean committed, double min_probability)
{
  g_autofree gchar *prompt = g_strconcat (initial_prompt ? " " : "",
      initial_prompt ? initial_prompt : "",
      committed ? gst_whisper_commit_prompt (&live->commit) : "", NULL);

  /* Encoded when it changed; set before every call, as the engine adds
   * what it decodes to the history. */
  if (!live->prompt_set || strcmp (live->prompt_set, prompt) != 0) {
    g_autoptr (GError) err = NULL;
    gsize n = 0;
    g_free (live->prompt_ids);
    live->prompt_ids = NULL;
    live->n_prompt_ids = 0;
    if (*prompt) {
      live->prompt_ids = whisper_engine_encode_text (self->engine, prompt, &n, &err);
      if (live->prompt_ids)
        live->n_prompt_ids = n;
      else
        GST_WARNING_OBJECT (self, "committed text not usable as a prompt: %s", err->message);
    }
    g_free (live->prompt_set);
    live->prompt_set = g_strdup (prompt);
  }
  whisper_stream_set_history (stream, live->prompt_ids, live->n_prompt_ids);
  live->commit.min_probability = min_probability;
  live->commit.start_hold = (guint64) (START_HOLD_S * live->rate);
}

/* The `words` list of a message: each word's text, timestamp, duration and
 * probability (output times). */
static void
words_value (GstWhisperSink *self, GstWhisperOutput *out, const GArray *words, guint from,
    guint to, GValue *value)
{
  GstWhisperWindow *w = &self->window;

  g_value_init (value, GST_TYPE_LIST);
  for (guint i = from; i < to; i++) {
    const GstWhisperTimedWord *tw = &g_array_index (words, GstWhisperTimedWord, i);
    gchar *text = g_strstrip (g_strdup (tw->text));
    gst_whisper_output_append_word (out, value, text,
        gst_whisper_window_time_at (w, tw->start), gst_whisper_window_time_at (w, tw->end),
        tw->probability);
    g_free (text);
  }
}

/* One item of words [from, to): text joined, times of the first start and
 * the last end. */
static GstFlowReturn
push_words (GstWhisperSink *self, GstWhisperOutput *out, const GArray *words, guint from,
    guint to, gboolean final, const gchar *granularity, double avg_logprob,
    double no_speech_prob)
{
  GstWhisperWindow *w = &self->window;
  const GstWhisperTimedWord *first = &g_array_index (words, GstWhisperTimedWord, from);
  const GstWhisperTimedWord *last = &g_array_index (words, GstWhisperTimedWord, to - 1);
  GstWhisperItem item = { 0, };
  GString *text = g_string_new (NULL);
  GValue list = G_VALUE_INIT;
  GstClockTime start = gst_whisper_window_time_at (w, first->start);
  GstClockTime end = gst_whisper_window_time_at (w, last->end);
  GstFlowReturn ret;

  for (guint i = from; i < to; i++)
    g_string_append (text, g_array_index (words, GstWhisperTimedWord, i).text);
  g_strstrip (text->str);
  if (text->str[0] == '\0') {
    g_string_free (text, TRUE);
    return GST_FLOW_OK;
  }
  words_value (self, out, words, from, to, &list);
  item.text = text->str;
  item.pts = start;
  item.duration = end > start ? end - start : GST_MSECOND;
  item.avg_logprob = avg_logprob;
  item.no_speech_prob = no_speech_prob;
  item.final = final;
  item.granularity = granularity;
  item.decode_step = -1;
  item.push = final;
  item.words = &list;
  ret = gst_whisper_output_push_item (out, &item);
  g_value_unset (&list);
  g_string_free (text, TRUE);
  return ret;
}

/* The committed words go downstream: one item each (words), or one per
 * run of words of one segment (segments). */
static GstFlowReturn
push_committed (GstWhisperSink *self, GstWhisperOutput *out, const GArray *committed,
    const GPtrArray *segments, GstWhisperOutputMode output)
{
  GstFlowReturn ret = GST_FLOW_OK;
  guint i = 0;

  while (i < committed->len && ret == GST_FLOW_OK) {
    const GstWhisperTimedWord *tw = &g_array_index (committed, GstWhisperTimedWord, i);
    const WhisperSegment *seg = segments && tw->segment < segments->len
        ? g_ptr_array_index (segments, tw->segment) : NULL;
    double avg_logprob = seg ? seg->avg_logprob : NAN;
    double no_speech = seg ? seg->no_speech_prob : NAN;
    guint j = i + 1;

    if (output == GST_WHISPER_OUTPUT_WORDS) {
      ret = push_words (self, out, committed, i, j, TRUE, "word", log (MAX (tw->probability,
                  1e-12)), NAN);
    } else {
      while (j < committed->len
          && g_array_index (committed, GstWhisperTimedWord, j).segment == tw->segment)
        j++;
      ret = push_words (self, out, committed, i, j, TRUE, "segment", avg_logprob, no_speech);
    }
    i = j;
  }
  return ret;
}

static void
final_transcript (GstWhisperSink *self, GstWhisperLive *live, GstWhisperOutput *out)
{
  if (live->since_final == 0)
    return;
  live->since_final = 0;
  GST_LOG_OBJECT (self, "final transcript");
  gst_whisper_out_queue_push_event (out->queue,
      gst_event_new_custom (GST_EVENT_CUSTOM_DOWNSTREAM,
          gst_structure_new_empty (FINAL_TRANSCRIPT_EVENT)));
}

/* The call's words, in run sample indices, each with its segment; those
 * of the context (centred before in->splice and ending at most
 * GST_WHISPER_COMMIT_NEW_AFTER_S after it) are left out (counted in
 * *context_words). A
 * segment whose text is a loop (zlib compression ratio above the
 * threshold: the base model repeated jfk.wav's sentences for a whole
 * window, and 168 repeated words were committed) ends the hypothesis:
 * nothing from it on is agreed on or committed. */
static GArray *
hypothesis_of (GstWhisperSink *self, const GstWhisperWindow *w, const GstWhisperLiveInput *in,
    const GPtrArray *segments, double loop_threshold, guint *context_words)
{
  GArray *hyp = gst_whisper_timed_words_new ();
  const guint64 call_start = in->start, call_end = in->start + in->n;

  for (guint s = 0; s < segments->len; s++) {
    const WhisperSegment *seg = g_ptr_array_index (segments, s);
    if (loop_threshold > 0 && seg->compression_ratio > loop_threshold) {
      GST_DEBUG_OBJECT (self, "a loop from %.2f s (compression ratio %.2f): not used",
          seg->start, seg->compression_ratio);
      break;
    }
    for (gsize k = 0; k < seg->n_words; k++) {
      const WhisperWord *ww = &seg->words[k];
      GstWhisperTimedWord tw = { 0, };
      tw.text = g_strdup (ww->text);
      tw.start = MIN (call_start + (guint64) llround (MAX (ww->start, 0.0) * w->rate),
          call_end);
      tw.end = MIN (call_start + (guint64) llround (MAX (ww->end, 0.0) * w->rate), call_end);
      tw.probability = ww->probability;
      tw.segment = s;
      /* (one that ends well after the splice may be new speech whose
       * start the alignment drew back over a pause: the commit policy
       * tells it from committed words, gstwhispercommit.h) */
      if (tw.start + (tw.end - tw.start) / 2 < in->splice
          && tw.end <= in->splice + (guint64) (GST_WHISPER_COMMIT_NEW_AFTER_S * w->rate)) {
        g_free (tw.text);
        (*context_words)++;
        continue;
      }
      g_array_append_val (hyp, tw);
    }
  }
  return hyp;
}

/* Where the buffer may start after this call: the end of the last segment
 * all of whose words are committed and that another segment with words
 * follows; 0 when there is none. */
static guint64
segment_trim_point (const GstWhisperLive *live, guint64 call_start, gsize n_samples,
    const GPtrArray *segments, gint rate)
{
  guint64 trim = 0;
  gint last_with_words = -1;

  for (guint s = 0; s < segments->len; s++)
    if (((WhisperSegment *) g_ptr_array_index (segments, s))->n_words > 0)
      last_with_words = s;
  for (gint s = 0; s < last_with_words; s++) {
    const WhisperSegment *seg = g_ptr_array_index (segments, s);
    if (seg->n_words == 0)
      continue;
    guint64 last_end = call_start + (guint64) llround (MAX (seg->words[seg->n_words - 1].end,
            0.0) * rate);
    guint64 seg_end = call_start + (guint64) llround (MAX (seg->end, 0.0) * rate);
    if (!live->commit.any_committed || last_end > live->commit.committed_end)
      break;
    /* Whisper's closing timestamp: DTW word ends reach into the next word */
    trim = MIN (seg_end, call_start + n_samples);
  }
  return trim;
}

/* The buffer's audio before `trim` leaves it: its committed speech joins
 * the context (live-context seconds of it). Returns the samples released
 * from the buffer's start. */
static gsize
release (GstWhisperLive *live, const GstWhisperLiveInput *in, guint64 trim)
{
  if (trim <= in->window_start)
    return 0;
  gst_whisper_context_keep (&live->context, in->window, in->window_start, trim,
      live->commit.committed_end, live->commit.any_committed, live->context_s);
  return (gsize) (trim - in->window_start);
}

/* After a left-out pause the decode hears the detector's pad of noise
 * before the sentence, and may read it as an unsure word that the deadline
 * would commit: unsure words before the onset, up to one that ends a
 * sentence, are left out (gst_whisper_commit_drop_before_onset; the
 * sentence end keeps a sentence's first word). */
static void
drop_pause_noise (GstWhisperSink *self, const GstWhisperLive *live, GArray *hyp)
{
  g_autoptr (GArray) dropped = gst_whisper_timed_words_new ();

  if (live->sentence_onset == G_MAXUINT64
      || gst_whisper_commit_drop_before_onset (&live->commit, hyp, live->sentence_onset,
          dropped) == 0)
    return;
  for (guint i = 0; i < dropped->len; i++) {
    const GstWhisperTimedWord *tw = &g_array_index (dropped, GstWhisperTimedWord, i);
    GST_LOG_OBJECT (self, "'%s' (%.2f-%.2f s, %.2f) is the noise before the sentence at "
        "%.2f s: left out", tw->text, tw->start / (double) live->rate,
        tw->end / (double) live->rate, tw->probability,
        live->sentence_onset / (double) live->rate);
  }
}

GstClockTime
gst_whisper_live_pending_slack (const GstWhisperLive *live, const GstWhisperOutput *out,
    const GstWhisperWindow *w, guint64 call_end, GstClockTime budget)
{
  GstClockTime lag;
  double slack;

  if (live->commit.pending->len == 0)
    return GST_CLOCK_TIME_NONE;
  lag = gst_whisper_output_delay_now (out, gst_whisper_window_time_at (w, call_end));
  if (!GST_CLOCK_TIME_IS_VALID (lag))
    return GST_CLOCK_TIME_NONE;
  slack = gst_whisper_commit_pending_slack (&live->commit, call_end, lag / (double) GST_SECOND,
      budget / (double) GST_SECOND, DEADLINE_MARGIN_S);
  return isnan (slack) ? GST_CLOCK_TIME_NONE : (GstClockTime) (slack * GST_SECOND);
}

gsize
gst_whisper_live_finish_call (GstWhisperSink *self, GstWhisperLive *live,
    GstWhisperOutput *out, const GstWhisperLiveInput *in, GPtrArray *segments, gboolean drain,
    GstClockTime call_duration, GstClockTime chunk, GstClockTime budget,
    GstWhisperOutputMode output, GstFlowReturn *flow)
{
  GstWhisperWindow *w = &self->window;
  guint context_words = 0;
  g_autoptr (GArray) hyp = hypothesis_of (self, w, in, segments,
      self->task_settings.decoding.compression_ratio_threshold, &context_words);
  g_autoptr (GArray) committed = gst_whisper_timed_words_new ();
  const guint64 call_start = in->start, ws = in->window_start;
  const gsize n_samples = in->n;
  const guint64 max_buffer = (guint64) (GST_WHISPER_LIVE_MAX_BUFFER_S * w->rate);
  guint64 call_end = call_start + n_samples, force_before = 0, trim;
  GstClockTime lag = gst_whisper_output_delay_now (out, gst_whisper_window_time_at (w, call_end));
  const GstClockTime next_call = gst_whisper_call_times_add (&live->calls, call_duration);
  GstClockTime wait;

  drop_pause_noise (self, live, hyp);
  /* Committed now, a word reaches downstream by about now, `lag` after the
   * end of this call's audio (the call's duration when there is no clock);
   * at the next decode, which starts when one more chunk has come and
   * takes up to next_call, `wait` after that end. Late then: its end +
   * budget < call end + wait. */
  if (!GST_CLOCK_TIME_IS_VALID (lag))
    lag = call_duration;
  wait = MAX (lag, chunk) + next_call + (GstClockTime) (DEADLINE_MARGIN_S * GST_SECOND);
  if (budget < wait)
    force_before = call_end + gst_util_uint64_scale (wait - budget, w->rate, GST_SECOND);
  else if (call_end > gst_util_uint64_scale (budget - wait, w->rate, GST_SECOND))
    force_before = call_end - gst_util_uint64_scale (budget - wait, w->rate, GST_SECOND);
  /* A buffer past its limit is stuck (with a large lateness and audio
   * pushed faster than real time the deadline is far away): its words in
   * the older half are committed as this decode reads them. Left waiting,
   * the next call decoded the same full window again, and again. */
  if (call_end - ws > max_buffer)
    force_before = MAX (force_before, call_end - max_buffer / 2);

  if (G_UNLIKELY (gst_debug_category_get_threshold (GST_CAT_DEFAULT) >= GST_LEVEL_DEBUG)) {
    GString *t = g_string_new (NULL);
    for (guint i = 0; i < hyp->len; i++) {
      const GstWhisperTimedWord *tw = &g_array_index (hyp, GstWhisperTimedWord, i);
      g_string_append_printf (t, "%s%s[%.2f-%.2f %.2f]", i > 0
          && tw->segment != (tw - 1)->segment ? " |" : "", tw->text,
          tw->start / (double) w->rate, tw->end / (double) w->rate, tw->probability);
    }
    GST_DEBUG_OBJECT (self, "decode of %.2f-%.2f s (buffer from %.2f s): %s",
        in->splice / (double) w->rate, call_end / (double) w->rate, ws / (double) w->rate,
        t->str);
    g_string_free (t, TRUE);
  }
  live->commit.agree_before = self->task_settings.live.commit == GST_WHISPER_LIVE_COMMIT_AGREEMENT
      ? G_MAXUINT64 : 0;
  live->commit.decoded_end = call_end;
  live->commit.context_end = in->splice > in->start ? in->splice : 0;
  live->commit.context_words = context_words;
  gst_whisper_commit_update (&live->commit, hyp, force_before, drain, committed);
  /* (the detector's speech was this call's) */
  g_array_set_size (live->commit.speech, 0);
  live->since_final += committed->len;
  *flow = push_committed (self, out, committed, segments, output);
  if (*flow != GST_FLOW_OK)
    return 0;

  /* What may change: a message, no buffer. */
  if (live->commit.pending->len > 0)
    *flow = push_words (self, out, live->commit.pending, 0, live->commit.pending->len, FALSE,
        "interim", NAN, NAN);
  if (*flow != GST_FLOW_OK)
    return 0;

  if (drain) {
    gst_whisper_commit_trim (&live->commit, G_MAXUINT64);
    final_transcript (self, live, out);
    return release (live, in, call_end);
  }
  trim = segment_trim_point (live, call_start, n_samples, segments, w->rate);
  if (trim > ws)
    final_transcript (self, live, out);
  /* (words kept unread by the last decode, gstwhispercommit.h, lie in
   * speech the trim keeps: the buffer may lose its committed speech and
   * silence, which the decode read instead of them) */
  if (live->commit.pending->len == 0 || live->commit.pending_unread) {
    /* Nothing waits for agreement. When no word was decoded in the last
     * SILENCE_KEEP_S either, the speech has stopped: the buffer keeps
     * that last stretch only (a word may be starting in it). While words
     * keep coming the buffer stays, as the decode needs what was said
     * before (cut at the committed end, "ask" alone became "Like"). */
    guint64 keep = (guint64) (SILENCE_KEEP_S * w->rate);
    guint64 silent_from = call_end > keep ? call_end - keep : 0;
    /* ... and the detector's speech without committed words stays whole
     * (cut at its start less the guard, or the pad before it was lost) */
    if (live->speech_from != G_MAXUINT64) {
      guint64 guard = (guint64) (SPEECH_GUARD_S * w->rate);
      silent_from = MIN (silent_from, live->speech_from > guard ? live->speech_from - guard : 0);
    }
    if (!live->commit.any_committed || live->commit.committed_end <= silent_from) {
      trim = MAX (trim, silent_from);
      final_transcript (self, live, out);
    } else if (live->context_s > 0) {
      /* With a context, the committed speech leaves the buffer at once:
       * the context gives the next decode what was said before, and the
       * buffer's first speech is no longer decoded after a sentence it
       * has to read again (re-decoded with it, the next word is misread;
       * spliced after its context, it is not) */
      trim = MAX (trim, MIN (live->commit.committed_end, silent_from));
    }
  }
  if (call_end - MAX (trim, ws) > max_buffer && live->commit.any_committed)
    trim = MAX (trim, MIN (live->commit.committed_end, call_end));
  /* still past the limit with no words at all before the pending ones:
   * their audio goes */
  if (call_end - MAX (trim, ws) > max_buffer && live->commit.pending->len > 0) {
    guint64 guard = (guint64) (SPEECH_GUARD_S * w->rate);
    guint64 first = g_array_index (live->commit.pending, GstWhisperTimedWord, 0).start;
    if (first > guard)
      trim = MAX (trim, first - guard);
  }
  gst_whisper_commit_trim (&live->commit, MAX (trim, ws));
  GST_DEBUG_OBJECT (self, "committed %u words (to %.2f s), %u pending, buffer from %.2f s, "
      "%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " forced", committed->len, live->commit.committed_end / (double) w->rate,
      live->commit.pending->len, MAX (trim, ws) / (double) w->rate,
      live->commit.n_forced, live->commit.n_committed);
  return release (live, in, trim);
}

GstFlowReturn
gst_whisper_live_flush (GstWhisperSink *self, GstWhisperLive *live, GstWhisperOutput *out,
    GstWhisperOutputMode output)
{
  g_autoptr (GArray) committed = gst_whisper_timed_words_new ();
  GstFlowReturn ret;

  gst_whisper_commit_flush (&live->commit, committed);
  gst_whisper_commit_trim (&live->commit, G_MAXUINT64);
  live->since_final += committed->len;
  ret = push_committed (self, out, committed, NULL, output);
  final_transcript (self, live, out);
  return ret;
}
