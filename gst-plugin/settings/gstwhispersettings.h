/* gstwhispersettings.h: all of whispersink's settings, one typed struct per
 * property group (one file each in this folder), and the dispatch of the
 * element's property ids to the groups.
 *
 * The element keeps one GstWhisperSettings under its object lock; whoever
 * needs them for an engine call takes a copy under that lock
 * (gst_whisper_settings_copy ()) and reads the copy without it. The
 * settings hold no runtime state: what they are checked against (the
 * engine for language-code) comes as an argument. */
#pragma once

#include <gst/gst.h>

#include "settings/gstwhispermodelsettings.h"
#include "settings/gstwhisperdecoding.h"
#include "settings/gstwhisperlivesettings.h"
#include "settings/gstwhispervadsettings.h"
#include "settings/gstwhisperinputsettings.h"
#include "settings/gstwhisperoutputsettings.h"
#include "settings/gstwhisperremotesettings.h"

G_BEGIN_DECLS

typedef struct {
  GstWhisperModelSettings model;      /* model, device, ... encoder-context */
  GstWhisperDecoding decoding;        /* language-code, task, search, prompts */
  GstWhisperLiveSettings live;        /* latency, lateness, live-* */
  GstWhisperVadSettings vad;          /* vad-*, silence-threshold, no-speech rule */
  GstWhisperInputSettings input;      /* channel, max-gap, offline-mode, batch-size */
  GstWhisperOutputSettings output;    /* output, word-timestamps */
  GstWhisperRemoteSettings remote;    /* server-* (device=remote) */
} GstWhisperSettings;

/* What setting a property did, for the element to act on. */
typedef enum {
  GST_WHISPER_SETTING_UNKNOWN = 0,          /* not a property of the groups */
  GST_WHISPER_SETTING_SET = 1 << 0,         /* handled (stored, or refused) */
  GST_WHISPER_SETTING_REFUSED = 1 << 1,     /* the old value stays: *problem says why */
  GST_WHISPER_SETTING_LATENCY = 1 << 2,     /* latency: the LATENCY answer changed */
  GST_WHISPER_SETTING_MAX_ENCODER_LENGTH = 1 << 3,  /* encoder-context */
  GST_WHISPER_SETTING_TOO_SMALL = 1 << 4,   /* below its useful range: warn */
} GstWhisperSettingChange;

/* What is made from a property when the element goes to READY (so that it
 * changes in NULL and READY only). */
typedef enum {
  GST_WHISPER_SETTING_LOADS_NOTHING,
  GST_WHISPER_SETTING_LOADS_ENGINE,         /* the engine or the detector */
  GST_WHISPER_SETTING_LOADS_REMOTE,         /* the device=remote client */
} GstWhisperSettingLoads;

/* Installs every group's properties, ids from first_prop_id on. */
void gst_whisper_settings_install (GObjectClass *klass, guint first_prop_id);

void gst_whisper_settings_init (GstWhisperSettings *s);
void gst_whisper_settings_clear (GstWhisperSettings *s);
/* A deep copy into `dst` (cleared with gst_whisper_settings_clear ()). */
void gst_whisper_settings_copy (GstWhisperSettings *dst, const GstWhisperSettings *src);

GstWhisperSettingLoads gst_whisper_settings_loads (guint prop_id);
/* Object lock held. `engine`: the loaded engine, to check language-code
 * against (NULL: none yet). */
GstWhisperSettingChange gst_whisper_settings_set_property (GstWhisperSettings *s,
    guint prop_id, const GValue *value, WhisperEngine *engine, gchar **problem);
/* FALSE for a property that is not the groups' or is read-only (the
 * element answers those from its state). Object lock held. */
gboolean gst_whisper_settings_get_property (const GstWhisperSettings *s, guint prop_id,
    GValue *value);

G_END_DECLS
