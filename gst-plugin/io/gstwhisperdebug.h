/* gstwhisperdebug.h: the element's debug category ("whispersink"), in a
 * file of its own so that every file of the element can log without
 * depending on the element's main file. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_whisper_sink_debug);

/* Registers the category; safe to call more than once (the element's type
 * registration calls it). */
void gst_whisper_debug_init (void);

G_END_DECLS
