/* gstwhispersnapshot.c: whispersink's settings as the inference task and
 * the src pads read them: each read is one copy taken under the object
 * lock (the task's before each engine call, the pads' latency when they
 * answer a LATENCY query). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "task/gstwhispersink-private.h"

void
gst_whisper_sink_take_settings (GstWhisperSink *self)
{
  GST_OBJECT_LOCK (self);
  gst_whisper_settings_clear (&self->task_settings);
  gst_whisper_settings_copy (&self->task_settings, &self->settings);
  GST_OBJECT_UNLOCK (self);
}

GstClockTime
gst_whisper_sink_own_latency (GstWhisperSink *self, gboolean translate)
{
  guint ms;

  GST_OBJECT_LOCK (self);
  ms = self->settings.live.latency_ms + (translate ? self->settings.live.translate_latency_ms : 0);
  GST_OBJECT_UNLOCK (self);
  return (GstClockTime) ms * GST_MSECOND;
}
