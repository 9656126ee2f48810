/* gstwhispersinkengine.h: what whispersink loads at its state changes
 * (gstwhispersinkengine.c): the engine and the voice activity detector, or
 * with device=remote the client of the server, and the engine stream of a
 * run. The element's part: gstwhispersink.c calls these. */
#pragma once

#include "task/gstwhispersink-private.h"

G_BEGIN_DECLS

/* NULL->READY, or READY->PAUSED after a setting it is made with changed:
 * loads the engine and the detector (or makes the device=remote client)
 * from a copy of the settings, replacing what was loaded. FALSE with an
 * error posted that names the setting and the reason. */
gboolean gst_whisper_sink_engine_open (GstWhisperSink *self);
/* READY->NULL: gives the engine, the detector and the client back. */
void gst_whisper_sink_engine_close (GstWhisperSink *self);

/* READY->PAUSED: the engine stream and the translate_src pads' streams;
 * FALSE with an error posted. PAUSED->READY: they go. */
gboolean gst_whisper_sink_stream_open (GstWhisperSink *self);
void gst_whisper_sink_stream_close (GstWhisperSink *self);

/* Posts the warnings about settings below their useful range
 * (encoder-context, latency) once each, as soon as the element has a bus
 * to post them on. */
void gst_whisper_sink_post_setting_warnings (GstWhisperSink *self);

G_END_DECLS
