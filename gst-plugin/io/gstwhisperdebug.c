/* gstwhisperdebug.c: see gstwhisperdebug.h. */
#include "io/gstwhisperdebug.h"

GST_DEBUG_CATEGORY (gst_whisper_sink_debug);

void
gst_whisper_debug_init (void)
{
  static gsize done;
  if (g_once_init_enter (&done)) {
    GST_DEBUG_CATEGORY_INIT (gst_whisper_sink_debug, "whispersink", 0,
                             "Whisper speech-to-text element");
    g_once_init_leave (&done, 1);
  }
}
