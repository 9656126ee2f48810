/* gstwhispersink.h: the whispersink element (speech to timestamped text). */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_WHISPER_SINK (gst_whisper_sink_get_type ())
G_DECLARE_FINAL_TYPE (GstWhisperSink, gst_whisper_sink, GST, WHISPER_SINK, GstElement)

GST_ELEMENT_REGISTER_DECLARE (whispersink);

G_END_DECLS
