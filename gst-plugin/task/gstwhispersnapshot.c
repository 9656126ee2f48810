/* gstwhispersnapshot.c: whispersink's settings as the task and the src
 * pads read them: each read is one copy taken under the object lock. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "task/gstwhispersink-private.h"

GstClockTime
gst_whisper_sink_own_latency (GstWhisperSink *self, gboolean translate)
{
  guint ms;

  GST_OBJECT_LOCK (self);
  ms = self->latency_ms + (translate ? self->translate_latency_ms : 0);
  GST_OBJECT_UNLOCK (self);
  return (GstClockTime) ms * GST_MSECOND;
}
