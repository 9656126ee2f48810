/* plugin.c: registers the elements of the "whisper" plugin (libgstwhisper.so). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>
#include "element/gstwhispersink.h"
#include "captions/gstcea608enc.h"

static gboolean
plugin_init (GstPlugin *plugin)
{
  return GST_ELEMENT_REGISTER (whispersink, plugin) && GST_ELEMENT_REGISTER (cea608enc, plugin);
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, whisper,
    "Speech to text with OpenAI Whisper models (own CPU/CUDA inference engine)",
    plugin_init, PACKAGE_VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
