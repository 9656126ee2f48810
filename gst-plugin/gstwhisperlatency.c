/* gstwhisperlatency.c: the LATENCY answer of whispersink's src pads (the
 * src pad and each translate_src_%u pad: gstwhispersink.c and
 * gstwhispertranslate.c both answer with it). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstwhispersink-private.h"

#define GST_CAT_DEFAULT gst_whisper_sink_debug

gboolean
gst_whisper_sink_answer_latency (GstWhisperSink *self, GstQuery *query, GstClockTime extra)
{
  gboolean live;
  GstClockTime min, max, own;

  if (!gst_pad_peer_query (self->sinkpad, query))
    return FALSE;
  gst_query_parse_latency (query, &live, &min, &max);

  gst_whisper_queue_set_upstream (&self->queue, live, min);

  if (live) {
    GST_OBJECT_LOCK (self);
    own = self->latency_ms * GST_MSECOND + extra;
    GST_OBJECT_UNLOCK (self);
    min += own;
    if (GST_CLOCK_TIME_IS_VALID (max))
      max += own;
  }
  GST_DEBUG_OBJECT (self, "latency: live %d, min %" GST_TIME_FORMAT ", max %"
      GST_TIME_FORMAT, live, GST_TIME_ARGS (min), GST_TIME_ARGS (max));
  gst_query_set_latency (query, live, min, max);
  return TRUE;
}
