/* gstwhispervads.c: the voice activity detectors of the process, shared
 * between elements (see gstwhispervads.h), in a registry of
 * gstwhispershared.h keyed by the detector file's canonical path. */
#include "shared/gstwhispervads.h"

#include "shared/gstwhispershared.h"

static GstWhisperShared vads = GST_WHISPER_SHARED_INIT ("voice activity detector",
    whisper_vad_free);

/* the path as given: errors name the file the user wrote */
static gpointer
load_vad (gconstpointer path, GError **error)
{
  return whisper_vad_new (path, error);
}

WhisperVad *
gst_whisper_vads_acquire (const gchar *path, GError **error)
{
  g_autofree gchar *key = NULL;

  g_return_val_if_fail (path != NULL, NULL);
  key = gst_whisper_shared_canonical_path (path);
  return gst_whisper_shared_acquire (&vads, key, load_vad, path, error);
}

void
gst_whisper_vads_release (WhisperVad *vad)
{
  gst_whisper_shared_release (&vads, vad);
}

guint
gst_whisper_vads_users (WhisperVad *vad)
{
  return gst_whisper_shared_users (&vads, vad);
}
