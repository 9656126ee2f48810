/* gstwhisperoutqueue.h: the bounded queue between whispersink's inference
 * task, which produces text buffers and events, and its src pad task
 * (gstwhispersrc.c), which pushes them downstream. A sink that waits for
 * the running time of a text buffer (sync=true, textoverlay) blocks the src
 * pad task only; inference goes on.
 *
 * Bounds:
 *  - non-live: at most GST_WHISPER_OUT_QUEUE_MAX_ITEMS items; the inference
 *    task waits for room before queueing a buffer or a GAP (nothing is
 *    lost: upstream waits too);
 *  - live: inference never waits. Consecutive GAPs are merged, and when the
 *    queued text spans more than the limit (from the start of the oldest
 *    text buffer to the end of the newest item), the oldest text buffers
 *    are dropped, each replaced by a GAP over its time so that the output
 *    still covers the timeline, and a warning naming the element and the
 *    text is posted (once until the queue has drained).
 *
 * Every operation takes the queue's lock itself; waits re-check the
 * flushing state and the src pad task's flow result after every wake-up,
 * as the locked helpers of GStreamer's queue element do
 * (https://gitlab.freedesktop.org/gstreamer/gstreamer/-/blob/main/subprojects/gstreamer/plugins/elements/gstqueue.c).
 * Warnings are posted with the lock released. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_WHISPER_OUT_QUEUE_MAX_ITEMS 64

typedef enum {
  GST_WHISPER_OUT_BUFFER,         /* a text buffer */
  GST_WHISPER_OUT_EVENT,          /* a serialized event */
  GST_WHISPER_OUT_END_OF_STREAM,  /* upstream's EOS: push it, then post the EOS message */
  GST_WHISPER_OUT_PREROLL,        /* a zero-duration GAP at the output position */
} GstWhisperOutType;

typedef struct {
  GstWhisperOutType type;
  GstMiniObject *object;          /* the buffer or event; NULL otherwise */
} GstWhisperOutItem;

void gst_whisper_out_item_free (GstWhisperOutItem *item);

typedef struct {
  GstElement *element;            /* named in the overflow warning */
  GMutex lock;
  GCond item_add;                 /* an item was added, or flushing started */
  GCond item_del;                 /* an item was taken, or the flow state changed */
  GQueue items;
  gboolean flushing;
  GstFlowReturn srcresult;        /* why the src pad task paused (OK while it runs) */
  gboolean live;
  GstClockTime max_span;          /* live: text the queue may hold, in stream time */
  guint dropped;                  /* text buffers dropped since the last reset */
  gboolean warned;                /* overflow warned about since the queue was empty */
} GstWhisperOutQueue;

/* Starts flushing, with srcresult FLUSHING. */
void gst_whisper_out_queue_init (GstWhisperOutQueue *q, GstElement *element);
void gst_whisper_out_queue_clear (GstWhisperOutQueue *q);

/* How the inference task runs now: live, and the text span a live queue
 * may hold. */
void gst_whisper_out_queue_set_limits (GstWhisperOutQueue *q, gboolean live,
    GstClockTime max_span);

/* Queue a buffer or an event (taken). Returns OK, FLUSHING, or the flow
 * the src pad task stopped on. A buffer or a GAP may wait for room
 * (non-live); other events never wait. */
GstFlowReturn gst_whisper_out_queue_push_buffer (GstWhisperOutQueue *q, GstBuffer *buf);
GstFlowReturn gst_whisper_out_queue_push_event (GstWhisperOutQueue *q, GstEvent *event);
/* Upstream's EOS, after everything queued. */
GstFlowReturn gst_whisper_out_queue_push_eos (GstWhisperOutQueue *q);
/* Sinks preroll again after PLAYING -> PAUSED: ask for a zero-duration GAP
 * at the output position after what is queued. Never waits. */
void gst_whisper_out_queue_push_preroll (GstWhisperOutQueue *q);

/* Src pad task: waits for the next item; NULL when flushing. */
GstWhisperOutItem *gst_whisper_out_queue_pop (GstWhisperOutQueue *q);

/* Drops the queued items. TRUE: refuse everything and wake every waiter
 * (srcresult FLUSHING). FALSE: accept items again (srcresult OK). */
void gst_whisper_out_queue_set_flushing (GstWhisperOutQueue *q, gboolean flushing);
/* The src pad task stopped on `ret` (the first result sticks until the
 * queue is flushed). */
void gst_whisper_out_queue_pause (GstWhisperOutQueue *q, GstFlowReturn ret);
GstFlowReturn gst_whisper_out_queue_get_result (GstWhisperOutQueue *q);

/* Items waiting now, and text buffers dropped since the last reset. */
void gst_whisper_out_queue_get_stats (GstWhisperOutQueue *q, guint *queued, guint *dropped);
void gst_whisper_out_queue_reset_stats (GstWhisperOutQueue *q);

G_END_DECLS
