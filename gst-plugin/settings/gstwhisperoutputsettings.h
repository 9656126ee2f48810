/* gstwhisperoutputsettings.h: the settings of what whispersink pushes (output,
 * word-timestamps; the read-only max-observed-delay and stats are the
 * element's state, answered by the element).
 * A typed copy of the properties: set and read under the element's object
 * lock, copied whole for each engine call; no runtime state. */
#pragma once

#include <gst/gst.h>
#include "settings/gstwhisperenums.h"

#include <whisper/whisper.h>

G_BEGIN_DECLS

typedef struct {
  GstWhisperOutputMode output;
  gboolean word_timestamps;   /* faster-whisper's word_timestamps=True */
} GstWhisperOutputSettings;

void gst_whisper_output_settings_init (GstWhisperOutputSettings *s);
/* word-timestamps into one call's options. */
void gst_whisper_output_settings_fill (const GstWhisperOutputSettings *s,
    WhisperDecodeOptions *options);

/* Installs the group's properties with ids first.. and returns the id
 * after the last. */
guint gst_whisper_output_settings_install (GObjectClass *klass, guint first);
/* FALSE when prop_id is not one of the group's; a read-only one gives
 * FALSE on get (the element answers it from its state). Object lock
 * held. */
gboolean gst_whisper_output_settings_set (GstWhisperOutputSettings *s, guint prop_id, guint first, const GValue *value);
gboolean gst_whisper_output_settings_get (const GstWhisperOutputSettings *s, guint prop_id, guint first, GValue *value);

G_END_DECLS
