/* gstwhisperlivesettings.h: whispersink's live settings (latency, lateness,
 * translate-latency, live-prompt, live-commit, live-context,
 * live-min-probability, live-encoder, overload).
 * A typed copy of the properties: set and read under the element's object
 * lock, copied whole for each engine call; no runtime state. */
#pragma once

#include <gst/gst.h>
#include "settings/gstwhisperenums.h"

#include <whisper/whisper.h>

G_BEGIN_DECLS

typedef struct {
  guint latency_ms;           /* the budget, added to upstream's latency */
  guint lateness_ms;
  guint translate_latency_ms; /* translate_src_%u pads: added to their LATENCY answer */
  gboolean prompt;            /* live-prompt: condition on the committed text */
  GstWhisperLiveCommit commit;  /* when a word is committed */
  gdouble context_s;          /* seconds of committed speech before a decode */
  gdouble min_probability;    /* agreed words below it wait */
  GstWhisperLiveEncoder encoder;  /* the encoder window of a call */
  GstWhisperOverloadMode overload;  /* what falling behind gives up first */
  gboolean one_window;        /* no property: the overload ladder's first step
                                 (task/gstwhisperoverload.c) sets it in the
                                 task's copy: each call decodes one window */
} GstWhisperLiveSettings;

/* Below this latency most words are committed by their deadline: a
 * warning is posted (reason latency-too-short). */
#define GST_WHISPER_USEFUL_LATENCY_MS 2000

void gst_whisper_live_settings_init (GstWhisperLiveSettings *s);
/* Whether latency is below the useful minimum. */
gboolean gst_whisper_live_settings_too_short (const GstWhisperLiveSettings *s);
/* The live part of one commit-policy call's options: with
 * live-encoder=buffered, an encoder as long as the call's `n_samples`
 * plus a second (at least 375 frames), at most `max_encoder_length`. */
void gst_whisper_live_settings_fill (const GstWhisperLiveSettings *s, gsize n_samples,
    int max_encoder_length, WhisperDecodeOptions *options);

/* Installs the group's properties with ids first.. and returns the id
 * after the last. */
guint gst_whisper_live_settings_install (GObjectClass *klass, guint first);
/* FALSE when prop_id is not one of the group's; a read-only one gives
 * FALSE on get (the element answers it from its state). Object lock
 * held. */
gboolean gst_whisper_live_settings_set (GstWhisperLiveSettings *s, guint prop_id, guint first, const GValue *value);
gboolean gst_whisper_live_settings_get (const GstWhisperLiveSettings *s, guint prop_id, guint first, GValue *value);

/* Whether prop_id is latency. */
gboolean gst_whisper_live_settings_is_latency (guint prop_id, guint first);

G_END_DECLS
