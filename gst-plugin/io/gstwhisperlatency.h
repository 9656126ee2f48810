/* gstwhisperlatency.h: the LATENCY answer of whispersink's src pads. */
#pragma once

#include <gst/gst.h>

#include "io/gstwhisperqueue.h"

G_BEGIN_DECLS

/* Asks upstream through `sinkpad`, tells `queue` whether upstream is live
 * and its latency, and answers with upstream's latency plus `own` when it
 * is live. FALSE when upstream did not answer. */
gboolean gst_whisper_latency_answer (GstPad *sinkpad, GstWhisperQueue *queue,
    GstClockTime own, GstQuery *query);

G_END_DECLS
