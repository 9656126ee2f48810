/* gstwhisperlatency.c: the LATENCY answer of whispersink's src pads (the
 * src pad and each translate_src_%u pad), see gstwhisperlatency.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "io/gstwhisperlatency.h"
#include "io/gstwhisperdebug.h"

#define GST_CAT_DEFAULT gst_whisper_sink_debug

gboolean
gst_whisper_latency_answer (GstPad *sinkpad, GstWhisperQueue *queue, GstClockTime own,
    GstQuery *query)
{
  gboolean live;
  GstClockTime min, max;

  if (!gst_pad_peer_query (sinkpad, query))
    return FALSE;
  gst_query_parse_latency (query, &live, &min, &max);

  gst_whisper_queue_set_upstream (queue, live, min);

  if (live) {
    min += own;
    if (GST_CLOCK_TIME_IS_VALID (max))
      max += own;
  }
  GST_DEBUG_OBJECT (sinkpad, "latency: live %d, min %" GST_TIME_FORMAT ", max %"
      GST_TIME_FORMAT, live, GST_TIME_ARGS (min), GST_TIME_ARGS (max));
  gst_query_set_latency (query, live, min, max);
  return TRUE;
}
