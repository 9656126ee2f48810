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
 * of the engine. Non-live audio is cut at non-speech into pieces of at
 * most a window whatever offline-mode says, up to server-requests of them
 * in flight on the servers of server-url, their text out in order
 * (gstwhisperfleet.c); live audio goes chunk by chunk as above (whole
 * chunks, gstwhisperwindow.c), the answer carried and sent again with the
 * next chunk, its words committed by agreement (gstwhisperagree.h). While
 * the server does
 * not answer the audio stays in the window: the task goes on taking audio
 * from the queue and tries again after a back-off, up to server-queue of
 * audio; beyond it live audio is dropped (GAP, warning) and non-live audio
 * waits (the task blocks in the retries, the queue fills, upstream
 * blocks). A drain (EOS, GAP, DISCONT, new SEGMENT) waits for the server. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "task/gstwhispersink-private.h"
#include "task/gstwhispercall.h"
#include "task/gstwhisperfleet.h"
#include <whisper/whisper.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_whisper_sink_debug

#define WINDOWED_LOOKAHEAD_SAMPLES (WHISPER_SAMPLE_RATE)
/* Live: text may wait this much longer than latency + lateness for
 * downstream before the oldest is dropped. */
#define OUTPUT_SLACK (GST_SECOND)

static void task_loop (gpointer user_data);

/* The test hook GST_WHISPER_TEST_SLOW_CALLS=MS:N (docs/testing.md): the
 * first N live calls of the element take MS longer (a slow engine). */
static void
read_slow_calls (GstWhisperSink *self)
{
  const gchar *v = g_getenv ("GST_WHISPER_TEST_SLOW_CALLS");

  if (v && sscanf (v, "%u:%u", &self->slow_ms, &self->slow_calls) != 2) {
    GST_WARNING_OBJECT (self, "GST_WHISPER_TEST_SLOW_CALLS=%s is not MS:N: ignored", v);
    self->slow_ms = self->slow_calls = 0;
  }
}

void
gst_whisper_sink_task_init (GstWhisperSink *self)
{
  gst_whisper_window_init (&self->window, WHISPER_SAMPLE_RATE);
  gst_whisper_output_init (&self->out, GST_ELEMENT (self), &self->outq);
  gst_whisper_words_init (&self->words, -1);
  gst_whisper_live_init (&self->live, WHISPER_SAMPLE_RATE);
  gst_whisper_agree_init (&self->agree);
  read_slow_calls (self);
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
  gst_whisper_agree_clear (&self->agree);
  gst_whisper_settings_clear (&self->task_settings);
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
  if (self->remote)
    gst_whisper_fleet_reset (self);
  gst_whisper_window_reset (&self->window, GST_CLOCK_TIME_NONE);
  gst_whisper_live_reset (&self->live);
  gst_whisper_agree_reset (&self->agree);
  gst_whisper_overload_reset (&self->overload);
  gst_whisper_translate_reset (self);
  gst_whisper_output_reset (&self->out);
  gst_segment_init (&self->out.segment, GST_FORMAT_TIME);
  gst_segment_init (&self->out.out_segment, GST_FORMAT_TIME);
  self->seen_segment = FALSE;
  self->caps_queued = FALSE;
  g_clear_pointer (&self->announced_language, g_free);
}

/* ------------------------------------------------------------------------ */
/* Engine calls */

/* The window policy of the calls of one process () from the task's copy of
 * the settings, and the limits of the output queues that go with it. */
static void
read_policy (GstWhisperSink *self, GstWhisperWindowPolicy *policy)
{
  const WhisperEngineInfo *info = self->engine ? whisper_engine_get_info (self->engine) : NULL;
  const GstWhisperSettings *s = &self->task_settings;
  const guint latency_ms = s->live.latency_ms;

  gst_whisper_queue_get_upstream (&self->queue, &policy->live, &self->out.upstream_min);
  self->out.live = policy->live;
  policy->offline = s->input.offline_mode;
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
  self->out.budget = (GstClockTime) (latency_ms + s->live.lateness_ms) * GST_MSECOND;
  policy->budget_samples = gst_util_uint64_scale (self->out.budget, WHISPER_SAMPLE_RATE,
      GST_SECOND);
  /* A sink synchronising to the clock takes text within latency + lateness
   * of its time; text waiting longer is stuck behind downstream. */
  gst_whisper_out_queue_set_limits (&self->outq, policy->live,
      self->out.budget + OUTPUT_SLACK);
  gst_whisper_translate_set_limits (self, policy->live, self->out.budget + OUTPUT_SLACK,
      self->out.budget, self->out.upstream_min);
}

/* Live: `dropped` samples from `from` on went unheard; the warning says
 * why (the engine too slow, or the server not taking the audio). */
static void
post_dropped_audio (GstWhisperSink *self, guint64 from, gsize dropped)
{
  GstWhisperWindow *w = &self->window;
  GstClockTime start = gst_whisper_window_time_at (w, from);
  GstClockTime duration = gst_util_uint64_scale_int (dropped, GST_SECOND, w->rate);

  if (self->remote)
    GST_ELEMENT_WARNING_WITH_DETAILS (self, STREAM, FAILED,
        ("The transcription server %s has not taken the audio: dropped the oldest %.1f s "
            "(from %" GST_TIME_FORMAT ")", gst_whisper_remote_get_url (self->remote),
            dropped / (double) w->rate, GST_TIME_ARGS (start)),
        ("more than server-queue of audio was waiting for the server; raise server-queue "
            "or add servers"),
        ("reason", G_TYPE_STRING, "dropped-audio", "start", G_TYPE_UINT64, start,
            "duration", G_TYPE_UINT64, duration, NULL));
  else
    GST_ELEMENT_WARNING_WITH_DETAILS (self, STREAM, FAILED,
        ("Inference is slower than real time: dropped %.1f s of audio (from %"
            GST_TIME_FORMAT ")", dropped / (double) w->rate, GST_TIME_ARGS (start)),
        ("more audio was waiting than latency + lateness; raise latency, lower "
            "encoder-context or use a faster device"),
        ("reason", G_TYPE_STRING, "dropped-audio", "start", G_TYPE_UINT64, start,
            "duration", G_TYPE_UINT64, duration, NULL));
}

/* Live: drop what cannot be transcribed in time any more (device=remote:
 * what waits for the server beyond server-queue). */
static void
drop_backlog (GstWhisperSink *self, const GstWhisperWindowPolicy *policy,
    GstWhisperOutputMode output)
{
  GstWhisperWindow *w = &self->window;
  guint64 from = w->seek, given;
  gsize dropped, keep, limit = gst_whisper_window_backlog_limit (policy);

  if (policy->commit) {
    /* The commit policy keeps committed audio up to a segment end in the
     * buffer: behind means more new audio than the budget waits for a
     * call. What is pending is committed as it stands, then the audio
     * goes. */
    gsize fresh = (gsize) (gst_whisper_window_end (w) - MAX (w->given, w->seek));
    if (fresh <= MAX (gst_whisper_overload_backlog_limit (&self->overload,
                policy->budget_samples, w->rate), 2 * policy->chunk_samples))
      return;
    /* overload=degrade: the next call spends less instead, while a step
     * is left (gstwhisperoverload.c) */
    if (!self->remote && gst_whisper_overload_before_drop (&self->overload, GST_ELEMENT (self)))
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
  /* The engine keeps one chunk; the server a chunk below the limit, so that
   * there is one warning per chunk of audio, not one per buffer. */
  keep = policy->chunk_samples;
  if (self->remote)
    keep = MAX (limit > policy->chunk_samples ? limit - policy->chunk_samples : 0,
        policy->chunk_samples);
  given = w->given;
  dropped = gst_whisper_window_drop_backlog (w, keep);
  if (dropped == 0)
    return;
  /* Counted once: audio the engine had seen already (a held-back segment)
   * counts as transcribed. */
  GST_OBJECT_LOCK (self);
  self->stats.audio_dropped += w->given - given;
  GST_OBJECT_UNLOCK (self);
  post_dropped_audio (self, from, dropped);
  gst_whisper_output_gap_until (&self->out, gst_whisper_window_time_at (w, w->seek));
  if (!self->remote)            /* device=remote translates nothing */
    gst_whisper_translate_gap_until (self, gst_whisper_window_time_at (w, w->seek));
}

/* The task's copy of the settings for the next engine call, with the
 * overload steps in effect on live input on the local engine
 * (gstwhisperoverload.c; the properties keep their values). */
static void
take_settings (GstWhisperSink *self)
{
  gboolean live;
  GstClockTime upstream_min;

  gst_whisper_sink_take_settings (self);
  gst_whisper_queue_get_upstream (&self->queue, &live, &upstream_min);
  if (live && !self->remote)
    gst_whisper_overload_apply (&self->overload, &self->task_settings,
        gst_whisper_translate_any (self));
  else
    self->overload.enabled = FALSE;
}

/* Runs every engine call that is due (all of the buffered audio when
 * draining). */
static GstFlowReturn
process (GstWhisperSink *self, gboolean drain)
{
  GstWhisperWindowPolicy policy;
  GstWhisperOutputMode output;
  GstWhisperRegion region;
  GstFlowReturn ret;

  if (gst_whisper_window_pending (&self->window) == 0
      && !(drain && self->live.commit.pending->len > 0))
    return GST_FLOW_OK;
  take_settings (self);
  read_policy (self, &policy);
  output = self->task_settings.output.output;
  /* device=remote, file input: pieces sent ahead (gstwhisperfleet.c) */
  if (self->remote && !policy.live)
    return gst_whisper_fleet_process (self, drain);
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
          gst_whisper_call_advance (self, &rest, rest.n_samples);
        }
        return ret;
      }
      return GST_FLOW_OK;
    }
    take_settings (self);     /* one copy per engine call */
    if (self->remote) {
      gboolean later;
      ret = gst_whisper_call_transcribe_remote (self, &region, drain, &later);
      if (ret == GST_FLOW_OK && later)
        return GST_FLOW_OK;     /* the server is down: wait for more audio */
      if (ret != GST_FLOW_OK)
        return ret;
      continue;
    }
    ret = gst_whisper_call_transcribe (self, &region, &policy, drain);
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
      lateness_ms = self->settings.live.lateness_ms;
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
