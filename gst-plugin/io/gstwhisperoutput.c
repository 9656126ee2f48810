/* gstwhisperoutput.c: text buffers, GAP events, bus messages and the
 * observed delay of whispersink (see gstwhisperoutput.h). */
#include "io/gstwhisperoutput.h"

#include <math.h>
#include <string.h>

#include "io/gstwhisperdebug.h"
#define GST_CAT_DEFAULT gst_whisper_sink_debug

/* Warn again only when the delay grew by this much since the last warning. */
#define WARN_STEP (GST_SECOND)

void
gst_whisper_output_init (GstWhisperOutput *o, GstElement *element,
    GstWhisperOutQueue *queue)
{
  memset (o, 0, sizeof (*o));
  o->element = element;
  o->queue = queue;
  gst_segment_init (&o->segment, GST_FORMAT_TIME);
  gst_segment_init (&o->out_segment, GST_FORMAT_TIME);
  gst_whisper_output_reset (o);
}

void
gst_whisper_output_reset (GstWhisperOutput *o)
{
  o->position = GST_CLOCK_TIME_NONE;
  GST_OBJECT_LOCK (o->element);
  o->max_delay = 0;
  GST_OBJECT_UNLOCK (o->element);
  o->warned_delay = 0;
}

/* The output segment of input segment `in`: PTS = running time in `in`,
 * with the same running time and stream time as in `in` (rate > 0: the
 * sink pad refuses reverse segments). */
static void
output_segment (const GstSegment *in, GstSegment *out)
{
  gst_segment_init (out, GST_FORMAT_TIME);
  out->flags = in->flags;
  out->base = in->base;
  out->start = in->base;
  out->position = in->base;
  out->time = in->time;
  out->applied_rate = in->rate * in->applied_rate;
  if (GST_CLOCK_TIME_IS_VALID (in->stop))
    out->stop = gst_segment_to_running_time (in, GST_FORMAT_TIME, in->stop);
}

void
gst_whisper_output_start_segment (GstWhisperOutput *o, const GstSegment *segment,
    GstClockTime base_shift)
{
  GstSegment out;

  o->segment = *segment;
  output_segment (segment, &o->out_segment);
  o->position = GST_CLOCK_TIME_NONE;
  out = o->out_segment;
  out.base += base_shift;
  GST_DEBUG_OBJECT (o->element, "input %" GST_SEGMENT_FORMAT ", output %"
      GST_SEGMENT_FORMAT, segment, &out);
  gst_whisper_out_queue_push_event (o->queue, gst_event_new_segment (&out));
  /* Without it a sink waits for the first text to preroll, which may need
   * all of the audio (offline-mode=exact) while a branch beside this one
   * (tee) holds the audio back until every sink has prerolled. */
  gst_whisper_out_queue_push_event (o->queue, gst_event_new_gap (out.start, 0));
}

GstClockTime
gst_whisper_output_time (const GstWhisperOutput *o, GstClockTime t)
{
  guint64 rt = 0;
  gint sign;

  if (!GST_CLOCK_TIME_IS_VALID (t))
    return GST_CLOCK_TIME_NONE;
  /* Before the segment's start the running time is below its base, or
   * negative: such audio is timed at the start. */
  sign = gst_segment_to_running_time_full (&o->segment, GST_FORMAT_TIME, t, &rt);
  if (sign <= 0)
    return o->out_segment.start;
  return MAX (rt, o->out_segment.start);
}

void
gst_whisper_output_start_at (GstWhisperOutput *o, GstClockTime t)
{
  if (!GST_CLOCK_TIME_IS_VALID (o->position))
    o->position = gst_whisper_output_time (o, t);
}

/* Pushes a GAP from the position up to output time `t`. */
static void
gap_to (GstWhisperOutput *o, GstClockTime t)
{
  GstEvent *gap;

  if (!GST_CLOCK_TIME_IS_VALID (t))
    return;
  if (!GST_CLOCK_TIME_IS_VALID (o->position)) {
    o->position = t;
    return;
  }
  if (t <= o->position)
    return;

  gap = gst_event_new_gap (o->position, t - o->position);
  GST_LOG_OBJECT (o->element, "GAP %" GST_TIME_FORMAT " + %" GST_TIME_FORMAT,
      GST_TIME_ARGS (o->position), GST_TIME_ARGS (t - o->position));
  o->position = t;
  gst_whisper_out_queue_push_event (o->queue, gap);
}

void
gst_whisper_output_gap_until (GstWhisperOutput *o, GstClockTime t)
{
  gap_to (o, gst_whisper_output_time (o, t));
}

void
gst_whisper_output_append_word (const GstWhisperOutput *o, GValue *list, const gchar *text,
    GstClockTime start, GstClockTime end, double probability)
{
  GstClockTime ws = gst_whisper_output_time (o, start), we = gst_whisper_output_time (o, end);
  GValue v = G_VALUE_INIT;

  g_value_init (&v, GST_TYPE_STRUCTURE);
  g_value_take_boxed (&v, gst_structure_new ("word", "text", G_TYPE_STRING, text,
          "timestamp", G_TYPE_UINT64, ws, "duration", G_TYPE_UINT64,
          we > ws ? we - ws : (GstClockTime) 0, "probability", G_TYPE_DOUBLE, probability,
          NULL));
  gst_value_list_append_and_take_value (list, &v);
}

GstClockTime
gst_whisper_output_get_max_delay (GstWhisperOutput *o)
{
  GstClockTime d;

  GST_OBJECT_LOCK (o->element);
  d = o->max_delay;
  GST_OBJECT_UNLOCK (o->element);
  return d;
}

GstClockTime
gst_whisper_output_delay_now (const GstWhisperOutput *o, GstClockTime pts)
{
  GstClock *clock;
  GstClockTime now, base, rt;

  if (!o->live)
    return GST_CLOCK_TIME_NONE;
  rt = gst_segment_to_running_time (&o->segment, GST_FORMAT_TIME, pts);
  clock = gst_element_get_clock (o->element);
  if (!clock || !GST_CLOCK_TIME_IS_VALID (rt)) {
    g_clear_object (&clock);
    return GST_CLOCK_TIME_NONE;
  }
  now = gst_clock_get_time (clock);
  base = gst_element_get_base_time (o->element);
  gst_object_unref (clock);
  if (now < base)
    return GST_CLOCK_TIME_NONE;
  now -= base;
  return now > rt + o->upstream_min ? now - rt - o->upstream_min : 0;
}

/* The delay of an item ending at `pts`, recorded in max-observed-delay and
 * warned about past the budget. */
static GstClockTime
observe_delay (GstWhisperOutput *o, GstClockTime pts)
{
  GstClockTime delay = gst_whisper_output_delay_now (o, pts);

  if (!GST_CLOCK_TIME_IS_VALID (delay))
    return GST_CLOCK_TIME_NONE;
  GST_OBJECT_LOCK (o->element);
  if (delay > o->max_delay)
    o->max_delay = delay;
  GST_OBJECT_UNLOCK (o->element);

  if (delay > o->budget && delay >= o->warned_delay + WARN_STEP) {
    o->warned_delay = delay;
    GST_ELEMENT_WARNING_WITH_DETAILS (o->element, STREAM, FAILED,
        ("Transcription is late: text left %" GST_TIME_FORMAT " after its audio, "
            "more than latency + lateness (%" GST_TIME_FORMAT ")",
            GST_TIME_ARGS (delay), GST_TIME_ARGS (o->budget)),
        ("Raise the latency property, lower encoder-context, or use a faster device"),
        ("reason", G_TYPE_STRING, "excessive-delay", "delay", G_TYPE_UINT64, delay,
            "budget", G_TYPE_UINT64, o->budget, NULL));
  }
  return delay;
}

/* `pts` and `duration` as the buffer's (output time). */
static void
post_message (GstWhisperOutput *o, const GstWhisperItem *item, GstClockTime pts,
    GstClockTime duration, GstClockTime delay)
{
  GstStructure *s;
  GstClockTime rt = gst_segment_to_running_time (&o->out_segment, GST_FORMAT_TIME, pts);
  GstClockTime st = gst_segment_to_stream_time (&o->out_segment, GST_FORMAT_TIME, pts);

  s = gst_structure_new (GST_WHISPER_MESSAGE_NAME,
      "text", G_TYPE_STRING, item->text,
      "timestamp", G_TYPE_UINT64, pts,
      "duration", G_TYPE_UINT64, duration,
      "running-time", G_TYPE_UINT64, rt,
      "stream-time", G_TYPE_UINT64, st,
      "avg-logprob", G_TYPE_DOUBLE, item->avg_logprob,
      "no-speech-prob", G_TYPE_DOUBLE, item->no_speech_prob,
      "final", G_TYPE_BOOLEAN, item->final,
      "granularity", G_TYPE_STRING, item->granularity,
      "decode-step", G_TYPE_INT, item->decode_step,
      "delay", G_TYPE_UINT64, delay,
      "pad", G_TYPE_STRING, o->pad_name ? o->pad_name : "src", NULL);
  if (item->words)
    gst_structure_set_value (s, "words", item->words);
  gst_element_post_message (o->element,
      gst_message_new_element (GST_OBJECT (o->element), s));
}

GstFlowReturn
gst_whisper_output_push_item (GstWhisperOutput *o, const GstWhisperItem *item)
{
  GstClockTime a = gst_whisper_output_time (o, item->pts);
  GstClockTime b = gst_whisper_output_time (o, item->pts + item->duration);
  GstClockTime pts = MIN (a, b), end = MAX (a, b);
  GstClockTime delay = GST_CLOCK_TIME_NONE;
  GstFlowReturn ret = GST_FLOW_OK;

  /* Text before the segment's start (clamped to it) or shrunk by a high
   * rate keeps a duration. */
  if (end == pts)
    end = pts + GST_MSECOND;

  if (item->push && GST_CLOCK_TIME_IS_VALID (o->position) && pts < o->position) {
    pts = o->position;
    /* Output reached the largest valid timestamp (a GAP up to it): no room
     * left to time this text without wrapping around (found by
     * tests/fuzz/element-fuzz.c). */
    if (pts > GST_CLOCK_TIME_NONE - 1 - GST_MSECOND) {
      GST_WARNING_OBJECT (o->element, "dropping text past the largest timestamp: %s",
          item->text);
      return GST_FLOW_OK;
    }
    end = MAX (end, pts + GST_MSECOND);
  }

  if (item->push) {
    gsize len = strlen (item->text);
    GstBuffer *buf = gst_buffer_new_memdup (item->text, len);

    gap_to (o, pts);
    GST_BUFFER_PTS (buf) = pts;
    GST_BUFFER_DURATION (buf) = end - pts;
    GST_DEBUG_OBJECT (o->element, "text %" GST_TIME_FORMAT " + %" GST_TIME_FORMAT ": %s",
        GST_TIME_ARGS (pts), GST_TIME_ARGS (end - pts), item->text);
    ret = gst_whisper_out_queue_push_buffer (o->queue, buf);
    o->position = end;
    /* how long after the item's audio ended (live text is due latency
     * after the words were spoken) */
    delay = observe_delay (o, item->pts + item->duration);
  }

  post_message (o, item, pts, end - pts, delay);
  return ret;
}
