/* gstwhisperengines.c: the engines of the process, shared between elements
 * (gstwhisperengines.h), in a registry of gstwhispershared.h keyed by every
 * setting that makes two engines differ: an engine is loaded once however
 * many elements go to READY together. */
#include "gstwhisperengines.h"

#include "gstwhispershared.h"

static GstWhisperShared engines = GST_WHISPER_SHARED_INIT ("engine", whisper_engine_unref);

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

  return gst_whisper_shared_acquire (&engines, key, load_engine, options, error);
}

void
gst_whisper_engines_release (WhisperEngine *engine)
{
  gst_whisper_shared_release (&engines, engine);
}

guint
gst_whisper_engines_users (WhisperEngine *engine)
{
  return gst_whisper_shared_users (&engines, engine);
}
