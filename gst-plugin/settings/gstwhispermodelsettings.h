/* gstwhispermodelsettings.h: the settings of whispersink's model and where it
 * runs (model, device, precision, threads, engine-group, encoder-context; the
 * read-only max-encoder-length is the engine's, answered by the element).
 * The engine is loaded with them: they change in NULL and READY only.
 * A typed copy of the properties: set and read under the element's object
 * lock, copied whole for each engine call; no runtime state. */
#pragma once

#include <gst/gst.h>
#include "settings/gstwhisperenums.h"

#include <whisper/whisper.h>

G_BEGIN_DECLS

typedef struct {
  gchar *model;               /* NULL: whisper_engine_default_model_path () */
  GstWhisperDevice device;
  GstWhisperPrecision precision;
  gint threads;               /* 0: one per core */
  gchar *engine_group;        /* NULL: the shared group (shared/gstwhisperregistries.h) */
  gint max_encoder_length;    /* encoder-context: frames per window asked for, 0: the model's */
} GstWhisperModelSettings;

/* Below this many encoder frames the transcript is mostly wrong or loops:
 * a warning is posted (reason encoder-context-too-short). */
#define GST_WHISPER_USEFUL_MAX_ENCODER_LENGTH 250

void gst_whisper_model_settings_init (GstWhisperModelSettings *s);
void gst_whisper_model_settings_clear (GstWhisperModelSettings *s);
void gst_whisper_model_settings_copy (GstWhisperModelSettings *dst,
    const GstWhisperModelSettings *src);
/* Whether encoder-context asks for fewer frames than are useful. */
gboolean gst_whisper_model_settings_too_short (const GstWhisperModelSettings *s);
/* The engine's options; *model_path takes the model's path (the default
 * model's when unset: free it), which options->model_path borrows. */
void gst_whisper_model_settings_fill (const GstWhisperModelSettings *s,
    WhisperEngineOptions *options, gchar **model_path);

/* Installs the group's properties with ids first.. and returns the id
 * after the last. */
guint gst_whisper_model_settings_install (GObjectClass *klass, guint first);
/* FALSE when prop_id is not one of the group's; a read-only one gives
 * FALSE on get (the element answers it from its state). Object lock
 * held. */
gboolean gst_whisper_model_settings_set (GstWhisperModelSettings *s, guint prop_id, guint first, const GValue *value);
gboolean gst_whisper_model_settings_get (const GstWhisperModelSettings *s, guint prop_id, guint first, GValue *value);

/* Whether the engine is loaded with prop_id (all but the read-only one). */
gboolean gst_whisper_model_settings_loads_engine (guint prop_id, guint first);

/* Whether prop_id is encoder-context. */
gboolean gst_whisper_model_settings_is_max_encoder_length (guint prop_id, guint first);

G_END_DECLS
