/* gstwhisperoutput.h: what whispersink sends out: text buffers with PTS and
 * DURATION, GAP events over the time without text, one "whisper-text"
 * element message per item, and the delay it observes in live pipelines.
 *
 * Output times are running time. Items and GAPs are given in the input's
 * time domain (the input segment's PTS) and leave with PTS = their running
 * time in the input segment, in an output segment that keeps their running
 * time (plus the lateness shift) and their stream time: start = the input
 * base, base = the input base + shift, time = the input time, applied_rate
 * = rate x applied_rate. srtenc and webvttenc write the buffer PTS as the cue
 * time and ignore the segment (gst-plugins-bad gst/subenc/gstsrtenc.c,
 * gstwebvttenc.c), so with the input's PTS the cues of the second file of a
 * `concat` (a segment from 0 with base = the first file's duration) started
 * again at 0; in running time they follow the first file's. Running-time
 * based consumers (textoverlay, muxers) see the same running time as
 * before.
 * Used by the inference task: buffers and events go to the output queue
 * (gstwhisperoutqueue.h), from which the src pad task pushes them; the bus
 * message and the delay are of the moment the item is handed over. The
 * observed delay is also read by the property getter, under the element's
 * object lock. */
#pragma once

#include <gst/gst.h>
#include "io/gstwhisperoutqueue.h"

G_BEGIN_DECLS

#define GST_WHISPER_MESSAGE_NAME "whisper-text"

typedef struct {
  const gchar *text;          /* UTF-8, without surrounding spaces */
  GstClockTime pts;
  GstClockTime duration;
  double avg_logprob;
  double no_speech_prob;      /* NaN when unknown (words) */
  gboolean final;             /* FALSE: a later decode of the window may differ (words) */
  const gchar *granularity;   /* "segment" or "word" */
  gint decode_step;           /* decode step that completed a word; -1 for segments */
  gboolean push;              /* FALSE: bus message only */
  const GValue *words;        /* word timestamps, segments: GST_TYPE_LIST of "word"
                                 structures for the message's `words` field, or NULL */
} GstWhisperItem;

typedef struct {
  GstElement *element;
  GstWhisperOutQueue *queue;
  const gchar *pad_name;       /* the src pad the items go to ("src", "translate_src_0"):
                                 the messages' `pad` field */
  GstSegment segment;          /* the input segment: running and stream time of items */
  GstSegment out_segment;      /* the output segment before the lateness shift */
  GstClockTime position;       /* end of what was pushed (buffers and GAPs), output time */
  /* live only */
  gboolean live;
  GstClockTime upstream_min;
  GstClockTime budget;         /* latency + lateness: warn when the delay exceeds it */
  GstClockTime max_delay;      /* object lock */
  GstClockTime warned_delay;
} GstWhisperOutput;

void gst_whisper_output_init (GstWhisperOutput *o, GstElement *element,
    GstWhisperOutQueue *queue);
/* Forgets the position and the observed delay (new stream, flush). */
void gst_whisper_output_reset (GstWhisperOutput *o);
/* A new segment: items are timed in `segment` from now on and the position
 * is forgotten. Downstream gets the output segment (see above) with its base
 * moved by `base_shift`, then a zero-duration GAP at its start: sinks
 * preroll on it before there is any text (srtenc and webvttenc make no cue
 * of a GAP). */
void gst_whisper_output_start_segment (GstWhisperOutput *o, const GstSegment *segment,
    GstClockTime base_shift);
/* The output time (running time in the input segment, never before the
 * output segment's start) of `t`, a time of the input segment. */
GstClockTime gst_whisper_output_time (const GstWhisperOutput *o, GstClockTime t);
/* Starts the output position at input time `t` if nothing was output yet. */
void gst_whisper_output_start_at (GstWhisperOutput *o, GstClockTime t);
/* Pushes a GAP from the position up to input time `t` (nothing when it is
 * not later). */
void gst_whisper_output_gap_until (GstWhisperOutput *o, GstClockTime t);
/* GAP before it when needed, the text buffer, the bus message; the item's
 * times are input times. Returns the
 * output queue's answer (OK, FLUSHING, or the flow downstream returned).
 * Items never go back in time: an item that starts before the position is
 * moved to it. */
GstFlowReturn gst_whisper_output_push_item (GstWhisperOutput *o, const GstWhisperItem *item);
/* Appends a "word" structure (text, timestamp and duration in output
 * time, probability) to `list` (GST_TYPE_LIST), the `words` field of an
 * item's message; `start` and `end` are input times. */
void gst_whisper_output_append_word (const GstWhisperOutput *o, GValue *list,
    const gchar *text, GstClockTime start, GstClockTime end, double probability);
/* Largest delay observed so far (takes the object lock). */
GstClockTime gst_whisper_output_get_max_delay (GstWhisperOutput *o);
/* Live: running time now minus the running time of input time `pts` minus
 * what upstream already accounts for (its minimum latency): how long after
 * its capture an item ending at `pts` would be ready now.
 * GST_CLOCK_TIME_NONE when not live or without a clock. */
GstClockTime gst_whisper_output_delay_now (const GstWhisperOutput *o, GstClockTime pts);

G_END_DECLS
