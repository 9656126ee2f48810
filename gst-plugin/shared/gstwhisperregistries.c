/* gstwhisperregistries.c: the engines and the voice activity detectors of
 * the process (gstwhisperregistries.h), each a registry of
 * gstwhispershared.h: the engines keyed by every setting that makes two
 * engines differ, the detectors by the file's canonical path. */
#include "shared/gstwhisperregistries.h"

GstWhisperShared gst_whisper_engines = GST_WHISPER_SHARED_INIT ("engine",
    whisper_engine_unref);
GstWhisperShared gst_whisper_vads = GST_WHISPER_SHARED_INIT ("voice activity detector",
    whisper_vad_free);

/* Every setting that makes two engines differ, and the group. */
static gchar *
engine_key (const WhisperEngineOptions *options, const gchar *group)
{
  g_autofree gchar *default_path = options->model_path ? NULL
      : whisper_engine_default_model_path ();
  g_autofree gchar *model = gst_whisper_shared_canonical_path (options->model_path
      ? options->model_path : default_path);

  return g_strdup_printf ("group=%s\nmodel=%s\ndevice=%d\nprecision=%d\nthreads=%d\n"
      "context=%d\nheads=%s", group ? group : "", model, (int) options->device,
      (int) options->precision, options->n_threads,
      options->max_encoder_length, options->alignment_heads ? options->alignment_heads : "");
}

static gpointer
load_engine (gconstpointer options, GError **error)
{
  return whisper_engine_new (options, error);
}

WhisperEngine *
gst_whisper_engines_acquire (const WhisperEngineOptions *options, const gchar *group,
    GError **error)
{
  g_autofree gchar *key = engine_key (options, group);

  return gst_whisper_shared_acquire (&gst_whisper_engines, key, load_engine, options, error);
}

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
  return gst_whisper_shared_acquire (&gst_whisper_vads, key, load_vad, path, error);
}
