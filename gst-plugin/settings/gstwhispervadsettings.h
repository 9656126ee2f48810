/* gstwhispervadsettings.h: whispersink's settings of what counts as speech: the voice
 * activity detector (vad-gate, vad-model, vad-filter, and faster-whisper's
 * VadOptions: vad-threshold, vad-neg-threshold, vad-min-speech-ms,
 * vad-max-speech-s, vad-min-silence-ms, vad-speech-pad-ms), the silence
 * gate (silence-threshold) and the no-speech rule (no-speech-threshold,
 * strict-no-speech).
 * A typed copy of the properties: set and read under the element's object
 * lock, copied whole for each engine call; no runtime state. */
#pragma once

#include <gst/gst.h>
#include <whisper/whisper.h>

G_BEGIN_DECLS

typedef struct {
  gboolean gate;              /* vad-gate */
  gchar *model;               /* NULL: whisper_vad_default_path () */
  gboolean filter;            /* vad-filter */
  /* VadOptions */
  gdouble threshold;
  gdouble neg_threshold;      /* < 0: derived from threshold */
  gint min_speech_ms;
  gdouble max_speech_s;       /* INFINITY: no limit */
  gint min_silence_ms;
  gint speech_pad_ms;
  gdouble silence_threshold;  /* dBFS */
  gdouble no_speech_threshold;
  gboolean strict_no_speech;
} GstWhisperVadSettings;

void gst_whisper_vad_settings_init (GstWhisperVadSettings *s);
void gst_whisper_vad_settings_clear (GstWhisperVadSettings *s);
void gst_whisper_vad_settings_copy (GstWhisperVadSettings *dst,
    const GstWhisperVadSettings *src);
/* The detector's file (vad-model, or the installed one): free it. */
gchar *gst_whisper_vad_settings_path (const GstWhisperVadSettings *s);
/* The detector's options (VadOptions). */
void gst_whisper_vad_settings_fill_vad (const GstWhisperVadSettings *s,
    WhisperVadOptions *options);
/* The gates of one call: silence, no-speech rule, and the detector `vad`
 * (the loaded one, NULL for none) as vad-gate and vad-filter ask. */
void gst_whisper_vad_settings_fill (const GstWhisperVadSettings *s, WhisperVad *vad,
    WhisperDecodeOptions *options);

/* Installs the group's properties with ids first.. and returns the id
 * after the last. */
guint gst_whisper_vad_settings_install (GObjectClass *klass, guint first);
/* FALSE when prop_id is not one of the group's; a read-only one gives
 * FALSE on get (the element answers it from its state). Object lock
 * held. */
gboolean gst_whisper_vad_settings_set (GstWhisperVadSettings *s, guint prop_id, guint first, const GValue *value);
gboolean gst_whisper_vad_settings_get (const GstWhisperVadSettings *s, guint prop_id, guint first, GValue *value);

/* Whether the detector is loaded with prop_id (vad-gate, vad-model,
 * vad-filter: loaded with the engine, so NULL and READY only). */
gboolean gst_whisper_vad_settings_loads_engine (guint prop_id, guint first);

G_END_DECLS
