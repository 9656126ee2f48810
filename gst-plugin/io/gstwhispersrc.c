/* gstwhispersrc.c: whispersink's src pad task. It takes what the inference
 * task (task/gstwhispertask.c) produced from the output queue
 * (gstwhisperoutqueue.c) and pushes it downstream in order. It is the only
 * thread that pushes data on the src pad (FLUSH_START and FLUSH_STOP go
 * out from the streaming thread while it is stopped or flushing), so a
 * sink that blocks it (preroll, waiting for the running time of a buffer)
 * does not stop inference.
 *
 * When downstream fails (NOT_NEGOTIATED, ERROR, ...) it posts the error as
 * GStreamer's queue element does, sends EOS, and pauses; the inference
 * task gets the flow from the output queue and pauses too. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "io/gstwhispersrc.h"
#include "io/gstwhisperdebug.h"

#define GST_CAT_DEFAULT gst_whisper_sink_debug

void
gst_whisper_src_reset (GstWhisperSrcLane *lane)
{
  lane->position = GST_CLOCK_TIME_NONE;
}

static void
pause_src_task (GstWhisperSrcLane *lane, GstFlowReturn ret)
{
  GstElement *self = lane->element;

  GST_DEBUG_OBJECT (lane->pad, "pausing the src pad task: %s", gst_flow_get_name (ret));
  gst_whisper_out_queue_pause (lane->outq, ret);
  gst_pad_pause_task (lane->pad);

  if (ret == GST_FLOW_NOT_NEGOTIATED || ret < GST_FLOW_EOS) {
    if (ret != GST_FLOW_ERROR)     /* GST_FLOW_ERROR: downstream posted it */
      GST_ELEMENT_FLOW_ERROR (self, ret);
    gst_pad_push_event (lane->pad, gst_event_new_eos ());
  }
}

static void
push_event (GstWhisperSrcLane *lane, GstEvent *event)
{
  GstEventType type = GST_EVENT_TYPE (event);

  if (!gst_pad_push_event (lane->pad, event))
    GST_DEBUG_OBJECT (lane->pad, "downstream refused a %s event",
        gst_event_type_get_name (type));
}

/* Keeps the end of what went out, for the GAP after PLAYING -> PAUSED. */
static void
note_event (GstWhisperSrcLane *lane, GstEvent *event)
{
  if (GST_EVENT_TYPE (event) == GST_EVENT_SEGMENT) {
    const GstSegment *segment;
    gst_event_parse_segment (event, &segment);
    lane->position = segment->start;
  } else if (GST_EVENT_TYPE (event) == GST_EVENT_GAP) {
    GstClockTime ts, dur;
    gst_event_parse_gap (event, &ts, &dur);
    lane->position = GST_CLOCK_TIME_IS_VALID (dur) ? ts + dur : ts;
  }
}

void
gst_whisper_src_loop (gpointer user_data)
{
  GstWhisperSrcLane *lane = user_data;
  GstElement *self = lane->element;
  GstWhisperOutItem *item = gst_whisper_out_queue_pop (lane->outq);
  GstFlowReturn ret = GST_FLOW_OK;

  if (item == NULL) {
    GST_DEBUG_OBJECT (lane->pad, "output flushing, pausing the src pad task");
    gst_pad_pause_task (lane->pad);
    return;
  }

  switch (item->type) {
    case GST_WHISPER_OUT_BUFFER:{
      GstBuffer *buf = GST_BUFFER_CAST (g_steal_pointer (&item->object));
      GstClockTime end = GST_BUFFER_PTS (buf) + GST_BUFFER_DURATION (buf);

      ret = gst_pad_push (lane->pad, buf);
      if (ret == GST_FLOW_NOT_LINKED)
        ret = GST_FLOW_OK;      /* the src pad may stay unlinked */
      lane->position = end;
      break;
    }
    case GST_WHISPER_OUT_EVENT:{
      GstEvent *event = GST_EVENT_CAST (g_steal_pointer (&item->object));

      note_event (lane, event);
      push_event (lane, event);
      break;
    }
    case GST_WHISPER_OUT_END_OF_STREAM:
      push_event (lane, GST_EVENT_CAST (g_steal_pointer (&item->object)));
      /* The bin counts whispersink among its sinks (once: the src pad's). */
      if (lane->post_eos)
        gst_element_post_message (self,
            gst_message_new_eos (GST_OBJECT (self)));
      break;
    case GST_WHISPER_OUT_PREROLL:
      /* Sinks need something again to complete PLAYING -> PAUSED. */
      if (GST_CLOCK_TIME_IS_VALID (lane->position))
        push_event (lane, gst_event_new_gap (lane->position, 0));
      break;
  }
  gst_whisper_out_item_free (item);

  if (ret != GST_FLOW_OK)
    pause_src_task (lane, ret);
}
