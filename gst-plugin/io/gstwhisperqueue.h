/* gstwhisperqueue.h: the hand-off queue between whispersink's sink pad
 * (the upstream streaming thread, which converts and queues audio and
 * serialized events) and the inference task (which takes them in order).
 *
 * Every operation takes the queue's lock itself; none is called with it
 * held and none calls out of this file with it held. Waits re-check the
 * flushing state and the task's flow result after every wake-up, as the
 * locked helpers of GStreamer's queue element do
 * (https://gitlab.freedesktop.org/gstreamer/gstreamer/-/blob/main/subprojects/gstreamer/plugins/elements/gstqueue.c).
 *
 * The queue also keeps what upstream said about liveness (LATENCY query):
 * a live upstream is never blocked, a non-live one waits once
 * GST_WHISPER_QUEUE_MAX_SAMPLES of audio are queued. */
#pragma once

#include <gst/gst.h>
#include <whisper/whisper.h>

G_BEGIN_DECLS

/* Non-live upstream: pushing audio waits once this much audio is queued. */
#define GST_WHISPER_QUEUE_MAX_SAMPLES (10 * WHISPER_SAMPLE_RATE)

typedef enum {
  GST_WHISPER_ITEM_AUDIO,   /* float samples */
  GST_WHISPER_ITEM_RESYNC,  /* a new run starts at `pts` (first buffer, DISCONT) */
  GST_WHISPER_ITEM_EVENT,   /* a serialized event, in stream order */
} GstWhisperItemType;

typedef struct {
  GstWhisperItemType type;
  GArray *pcm;              /* AUDIO */
  GstClockTime pts;         /* RESYNC */
  GstEvent *event;          /* EVENT */
} GstWhisperQueueItem;

void gst_whisper_queue_item_free (GstWhisperQueueItem *item);

typedef struct {
  GMutex lock;
  GCond item_add;           /* an item was added, or flushing started */
  GCond item_del;           /* items were taken, or the flow state changed */
  GQueue items;
  gsize n_samples;          /* audio samples in `items` */
  gboolean flushing;
  gboolean eos;             /* EOS queued: no audio until STREAM_START or a flush */
  GstFlowReturn srcresult;  /* why the task paused (OK while it runs) */
  gboolean live;
  GstClockTime upstream_min;
} GstWhisperQueue;

/* Starts flushing, with srcresult FLUSHING. */
void gst_whisper_queue_init (GstWhisperQueue *q);
void gst_whisper_queue_clear (GstWhisperQueue *q);

/* Queues `pcm` (taken), preceded by a resync point at `resync_pts` when
 * `resync`. With a non-live upstream it first waits for room. Returns OK,
 * or why the audio was refused (FLUSHING, EOS, or the task's flow result;
 * NOT_LINKED counts as OK). */
GstFlowReturn gst_whisper_queue_push_audio (GstWhisperQueue *q, GArray *pcm,
    gboolean resync, GstClockTime resync_pts);
/* Queues a serialized event (taken); FALSE when flushing. EOS refuses audio
 * from then on, STREAM_START accepts it again. */
gboolean gst_whisper_queue_push_event (GstWhisperQueue *q, GstEvent *event);

/* Task side: waits for items and moves into `batch` all the audio up to
 * the next resync point or event, or that one item. FALSE when flushing
 * (nothing taken). */
gboolean gst_whisper_queue_pop (GstWhisperQueue *q, GQueue *batch);

/* TRUE: refuse everything and wake every waiter (srcresult FLUSHING).
 * FALSE: drop the queued items, forget EOS, srcresult OK. */
void gst_whisper_queue_set_flushing (GstWhisperQueue *q, gboolean flushing);
gboolean gst_whisper_queue_is_flushing (GstWhisperQueue *q);
/* The task stopped on `ret`: pushing audio returns it from now on (the
 * first result sticks until the queue is flushed). */
void gst_whisper_queue_pause (GstWhisperQueue *q, GstFlowReturn ret);

/* Audio samples queued for the task now. */
gsize gst_whisper_queue_samples (GstWhisperQueue *q);

/* What upstream answered to the LATENCY query. */
void gst_whisper_queue_set_upstream (GstWhisperQueue *q, gboolean live,
    GstClockTime min_latency);
void gst_whisper_queue_get_upstream (GstWhisperQueue *q, gboolean *live,
    GstClockTime *min_latency);

G_END_DECLS
