/* cea608sched.h: cea608enc's scheduler, the queue of caption bytes of each
 * channel and the pacer that turns it into one byte pair per field per
 * video frame (docs/captions.md, "Modes" and "Limits and rules").
 *
 * Text goes in with its frames (cea608_sched_text); a frame's pairs come
 * out with cea608_sched_frame. Nothing here pushes or locks: the element
 * calls it under its stream lock and learns of shown and shortened text
 * through the hooks.
 */
#ifndef __CEA608_SCHED_H__
#define __CEA608_SCHED_H__

#include <gst/gst.h>
#include "gstcea608enc.h"

G_BEGIN_DECLS

/* A queued unit of bytes: a caption's load (pop-on), or text, a carriage
 * return or an erase (roll-up, paint-on). */
typedef struct {
  GArray *pairs;                /* guint16, without parity */
  guint pos;
  gint64 not_before;            /* first frame it may be sent in */
  gint64 start, end;            /* pop-on: EOC frame, EDM frame */
  gboolean popon;
  GstClockTime pts;             /* running time of its text, or NONE */
  gchar *text;
  /* a pop-on caption after a painted one: RDC, EDM, RCL from exit_at,
   * after the load and before the EOC, to erase the painted caption */
  GArray *exit;
  guint exit_pos;
  gint64 exit_at;
  /* a painted pop-on caption: the pair whose frame starts it (its EDM) */
  gint paint_mark;
} Cea608Unit;

/* One caption channel: a sink pad's input and its queued bytes. */
typedef struct {
  GstPad *pad;                  /* NULL: the channel is absent */
  guint field;                  /* 0: field 1 (CC1), 1: field 2 (CC3) */
  GstCea608EncMode mode;        /* resolved at the first text */
  GstSegment segment;
  gboolean have_segment;
  gint64 known;                 /* frames before it are covered by input */
  gboolean eos;
  GQueue units;
  guint16 burst[2];
  guint n_burst;
  gint64 erase_frame;           /* pop-on: EDM due, or -1 */
  /* enqueue-time bookkeeping */
  gint64 tail;                  /* pop-on: estimated EOC of the last queued caption
                                 * (+2); roll-up/paint-on: frame its bytes end */
  gint64 last_end;              /* end frame of the last text, -1 none */
  gboolean rollup_on;           /* roll-up preamble sent and not erased */
  guint col;
  gboolean painted;             /* paint-on: a caption on screen */
  /* pop-on: a caption painted because it could not be loaded in time is
   * queued or on screen (until its erase is sent) */
  gboolean painting;
  gint64 paint_end;             /* its end frame */
  gint64 paint_erase;           /* its EDM is due from this frame, or -1 */
} Cea608Chan;

/* What the scheduler tells its owner. shown: a text is on screen in frame
 * at (late: frames after its start for a pop-on caption, else -1);
 * shortened: words were left out of a text to keep max-delay. */
typedef struct {
  void (*shown) (gpointer user, const Cea608Chan *c, const gchar *text, GstClockTime pts,
      GstClockTime at, gint64 late);
  void (*shortened) (gpointer user, const Cea608Chan *c, GstClockTime pts, const gchar *text,
      const gchar *sent, const gchar *left_out, guint n_left_out, GstClockTime delay);
} Cea608SchedHooks;

/* The limits a text is queued under (the element's settings). */
typedef struct {
  guint max_delay_ms;
  guint pop_on_rows;
  guint roll_up_rows;
  guint roll_up_timeout_ms;
} Cea608SchedLimits;

typedef struct {
  gint fps_n, fps_d;
  gint64 next_frame;            /* the next frame to go out */
  Cea608Chan chan[2];           /* [0]: "sink", [1]: "sink_cc3" */
  const Cea608SchedHooks *hooks;
  gpointer user;
} Cea608Sched;

void cea608_sched_init (Cea608Sched *s, const Cea608SchedHooks *hooks, gpointer user);
void cea608_sched_clear (Cea608Sched *s);

/* Frame numbers and times at the scheduler's frame rate. */
GstClockTime cea608_sched_frame_time (const Cea608Sched *s, gint64 n);
gint64 cea608_sched_frame_floor (const Cea608Sched *s, GstClockTime t);
gint64 cea608_sched_ms_frames (const Cea608Sched *s, guint ms);

/* Empties a channel (its pad and field are left to the caller). */
void cea608_chan_reset (Cea608Chan *c);
gboolean cea608_chan_active (const Cea608Chan *c);

/* Queues normalized text of running time [rs, re) on channel c by its
 * mode (pop-on captions, or roll-up / paint-on text). */
void cea608_sched_text (Cea608Sched *s, Cea608Chan *c, const gchar *text, GstClockTime rs,
    GstClockTime re, const Cea608SchedLimits *lim);
/* Roll-up: a new row for what follows (the live transcript is final). */
void cea608_sched_new_row (Cea608Sched *s, Cea608Chan *c);
/* Input of c covers running time up to running_end (NONE: no change):
 * queues the erase of roll-up or paint-on text whose time is over. */
void cea608_sched_covered (Cea608Sched *s, Cea608Chan *c, GstClockTime running_end,
    guint roll_up_timeout_ms);
/* c's input ended: queues its final erase. */
void cea608_sched_finish (Cea608Sched *s, Cea608Chan *c, guint roll_up_timeout_ms);
/* The frame after which every queued byte has gone out. */
gint64 cea608_sched_last_frame (const Cea608Sched *s);

/* The pairs (without parity, 0 for padding) of frame f for field 1 and
 * field 2; have[i]: a channel writes field i + 1. */
void cea608_sched_frame (Cea608Sched *s, gint64 f, guint16 pairs[2], gboolean have[2]);

G_END_DECLS

#endif /* __CEA608_SCHED_H__ */
