/* gstwhisperoverload.h: whispersink's overload ladder (overload=degrade):
 * live calls spend less, step by step, before audio is dropped, and take
 * the steps back when calls are quick again (see gstwhisperoverload.c).
 * Inference task only. */
#pragma once

#include <gst/gst.h>

#include "settings/gstwhispersettings.h"

G_BEGIN_DECLS

/* The steps, in the order they are taken (undone in reverse). */
typedef enum {
  GST_WHISPER_OVERLOAD_STEP_ONE_WINDOW,      /* one window a call (last_window_once) */
  GST_WHISPER_OVERLOAD_STEP_GREEDY,          /* beam search -> greedy */
  GST_WHISPER_OVERLOAD_STEP_BUFFERED,        /* live-encoder full -> buffered */
  GST_WHISPER_OVERLOAD_STEP_SHORT_CONTEXT,   /* live-context -> 1 s */
  GST_WHISPER_OVERLOAD_STEP_NO_TRANSLATION,  /* translate_src pads: GAPs, no decode */
  GST_WHISPER_OVERLOAD_STEP_LATE_TEXT,       /* new audio waits up to
                                                GST_WHISPER_OVERLOAD_LATE_S (only
                                                where audio would be dropped) */
  GST_WHISPER_OVERLOAD_N_STEPS
} GstWhisperOverloadStep;

/* late-text: how much new audio may wait for a call before the oldest is
 * dropped (seconds; latency + lateness when that is more). */
#define GST_WHISPER_OVERLOAD_LATE_S 20

/* Calls one measure of the load spans. */
#define GST_WHISPER_OVERLOAD_CALLS 3

typedef struct {
  guint level;                  /* how many steps are in effect: taken[0, level) */
  GstWhisperOverloadStep taken[GST_WHISPER_OVERLOAD_N_STEPS];  /* the steps in
                                   effect, in the order they were taken (posted) */
  guint can;                    /* steps that give something up with the settings of
                                   the last call (bit per step) */
  gboolean enabled;             /* overload=degrade at the last call */
  GstClockTime spent[GST_WHISPER_OVERLOAD_CALLS];  /* the last calls' time ... */
  GstClockTime allowed[GST_WHISPER_OVERLOAD_CALLS];  /* ... and what each could take:
                                   its new audio or a share of the budget */
  guint n_calls;                /* calls measured since the last step (ring index) */
  guint quick;                  /* consecutive quick calls */
  guint warned;                 /* steps warned about this run (bit per step) */
} GstWhisperOverload;

/* A new run: no step in effect, nothing measured, nothing warned. */
void gst_whisper_overload_reset (GstWhisperOverload *o);

/* The task's copy of the settings (`s`, taken for one call) gets the steps
 * in effect: the properties keep their values. `translating`: the
 * element has translate_src pads. */
void gst_whisper_overload_apply (GstWhisperOverload *o, GstWhisperSettings *s,
    gboolean translating);

/* Whether the translate_src pads' decode is skipped (they get GAPs). */
gboolean gst_whisper_overload_skips_translation (const GstWhisperOverload *o);

/* Whether `step` changes the task's settings now: taken, and it gives
 * something up with the settings of the last call. */
gboolean gst_whisper_overload_in_effect (const GstWhisperOverload *o,
    GstWhisperOverloadStep step);

/* After a live call that took `spent` for `covered` of new audio, with
 * `budget` latency + lateness (GST_CLOCK_TIME_NONE: none) and `behind`
 * TRUE when the next call was due before it ended (a chunk of new audio
 * waits): each call may take its new audio or a quarter of the budget,
 * whichever is more; when the last calls took longer than 0.9 of that
 * and this one is behind, the next step is taken; after 6 calls in a row
 * under 0.4 of it the last step taken is undone. Each change is posted on
 * `element`'s bus. */
void gst_whisper_overload_observe (GstWhisperOverload *o, GstElement *element,
    GstClockTime spent, GstClockTime covered, GstClockTime budget, gboolean behind);

/* Audio is about to be dropped: the next step is taken at once instead
 * (posted) and TRUE returned; FALSE when every step is taken or
 * overload=drop (the audio goes). late-text is taken only here. */
gboolean gst_whisper_overload_before_drop (GstWhisperOverload *o, GstElement *element);

/* How much new audio may wait for a call before the oldest is dropped,
 * in samples at `rate`: `budget_samples`, or more while late-text is in
 * effect. */
gsize gst_whisper_overload_backlog_limit (const GstWhisperOverload *o, gsize budget_samples,
    guint rate);

/* The step's name in messages ("greedy", "buffered-encoder", ...). */
const gchar *gst_whisper_overload_step_name (GstWhisperOverloadStep step);

G_END_DECLS
