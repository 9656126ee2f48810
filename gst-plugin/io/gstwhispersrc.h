/* gstwhispersrc.h: a src pad's task (the src pad's, and each
 * translate_src_%u pad's): it pushes what an output queue holds
 * downstream, in order (gstwhispersrc.c). */
#pragma once

#include <gst/gst.h>

#include "io/gstwhisperoutqueue.h"

G_BEGIN_DECLS

/* A src pad and what its task pushes. */
typedef struct {
  GstElement *element;        /* posts the flow errors and the EOS message */
  GstPad *pad;
  GstWhisperOutQueue *outq;
  GstClockTime position;      /* end of what was pushed (src pad task) */
  gboolean post_eos;          /* the element's EOS message goes with this pad's EOS */
} GstWhisperSrcLane;

/* Forgets the output position (task stopped). */
void gst_whisper_src_reset (GstWhisperSrcLane *lane);
/* The task of lane->pad; user_data is the lane. */
void gst_whisper_src_loop (gpointer user_data);

G_END_DECLS
