/* gstwhisperinputsettings.h: the settings of what whispersink takes from
 * the sink pad (channel, max-gap) and how non-live input is cut into engine
 * calls (offline-mode, batch-size).
 * A typed copy of the properties: set and read under the element's object
 * lock, copied whole for each engine call; no runtime state. */
#pragma once

#include <gst/gst.h>
#include "settings/gstwhisperenums.h"

G_BEGIN_DECLS

typedef struct {
  gint channel;               /* -1: the mean of all channels */
  guint max_gap_ms;           /* holes up to this are filled with silence */
  GstWhisperOfflineMode offline_mode;
  gint batch_size;            /* offline-mode=batched: pieces decoded at once */
} GstWhisperInputSettings;

void gst_whisper_input_settings_init (GstWhisperInputSettings *s);

/* Installs the group's properties with ids first.. and returns the id
 * after the last. */
guint gst_whisper_input_settings_install (GObjectClass *klass, guint first);
/* FALSE when prop_id is not one of the group's; a read-only one gives
 * FALSE on get (the element answers it from its state). Object lock
 * held. */
gboolean gst_whisper_input_settings_set (GstWhisperInputSettings *s, guint prop_id, guint first, const GValue *value);
gboolean gst_whisper_input_settings_get (const GstWhisperInputSettings *s, guint prop_id, guint first, GValue *value);

G_END_DECLS
