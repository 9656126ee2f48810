/* gstwhisperqueue.c: the hand-off queue between whispersink's sink pad and
 * its inference task (see gstwhisperqueue.h). */
#include "io/gstwhisperqueue.h"

/* Waits until the task took items. Leaves to `label` when the queue is
 * flushing or the task stopped, which every wake-up re-checks. */
#define GST_WHISPER_QUEUE_WAIT_DEL_CHECK(q, label) G_STMT_START {       \
  g_cond_wait (&(q)->item_del, &(q)->lock);                             \
  if ((q)->flushing || (q)->srcresult != GST_FLOW_OK)                   \
    goto label;                                                         \
} G_STMT_END

/* Waits until an item was added. Leaves to `label` when the queue is
 * flushing. */
#define GST_WHISPER_QUEUE_WAIT_ADD_CHECK(q, label) G_STMT_START {       \
  g_cond_wait (&(q)->item_add, &(q)->lock);                             \
  if ((q)->flushing)                                                    \
    goto label;                                                         \
} G_STMT_END

void
gst_whisper_queue_item_free (GstWhisperQueueItem *item)
{
  if (item->pcm)
    g_array_unref (item->pcm);
  if (item->event)
    gst_event_unref (item->event);
  g_free (item);
}

void
gst_whisper_queue_init (GstWhisperQueue *q)
{
  g_mutex_init (&q->lock);
  g_cond_init (&q->item_add);
  g_cond_init (&q->item_del);
  g_queue_init (&q->items);
  q->n_samples = 0;
  q->flushing = TRUE;
  q->eos = FALSE;
  q->srcresult = GST_FLOW_FLUSHING;
  q->live = FALSE;
  q->upstream_min = 0;
}

static void
gst_whisper_queue_locked_flush (GstWhisperQueue *q)
{
  g_queue_clear_full (&q->items, (GDestroyNotify) gst_whisper_queue_item_free);
  q->n_samples = 0;
}

void
gst_whisper_queue_clear (GstWhisperQueue *q)
{
  gst_whisper_queue_locked_flush (q);
  g_mutex_clear (&q->lock);
  g_cond_clear (&q->item_add);
  g_cond_clear (&q->item_del);
}

static void
gst_whisper_queue_locked_enqueue (GstWhisperQueue *q, GstWhisperQueueItem *item)
{
  g_queue_push_tail (&q->items, item);
  g_cond_broadcast (&q->item_add);
}

/* Consecutive audio goes into one item: the task takes it in one piece. */
static void
gst_whisper_queue_locked_enqueue_audio (GstWhisperQueue *q, GArray *pcm)
{
  GstWhisperQueueItem *tail = g_queue_peek_tail (&q->items);

  q->n_samples += pcm->len;
  if (tail && tail->type == GST_WHISPER_ITEM_AUDIO) {
    g_array_append_vals (tail->pcm, pcm->data, pcm->len);
    g_array_unref (pcm);
    g_cond_broadcast (&q->item_add);
  } else {
    GstWhisperQueueItem *item = g_new0 (GstWhisperQueueItem, 1);
    item->type = GST_WHISPER_ITEM_AUDIO;
    item->pcm = pcm;
    gst_whisper_queue_locked_enqueue (q, item);
  }
}

/* Why audio is refused now, or OK. */
static GstFlowReturn
gst_whisper_queue_locked_refusal (GstWhisperQueue *q)
{
  if (q->flushing)
    return GST_FLOW_FLUSHING;
  if (q->eos)
    return GST_FLOW_EOS;
  if (q->srcresult != GST_FLOW_OK && q->srcresult != GST_FLOW_NOT_LINKED)
    return q->srcresult;
  return GST_FLOW_OK;
}

GstFlowReturn
gst_whisper_queue_push_audio (GstWhisperQueue *q, GArray *pcm, gboolean resync,
    GstClockTime resync_pts)
{
  GstFlowReturn ret;

  g_mutex_lock (&q->lock);
  if (resync && !q->flushing) {
    GstWhisperQueueItem *resync = g_new0 (GstWhisperQueueItem, 1);
    resync->type = GST_WHISPER_ITEM_RESYNC;
    resync->pts = resync_pts;
    gst_whisper_queue_locked_enqueue (q, resync);
  }
  if (!q->flushing && q->srcresult == GST_FLOW_OK) {
    while (!q->live && q->n_samples > GST_WHISPER_QUEUE_MAX_SAMPLES)
      GST_WHISPER_QUEUE_WAIT_DEL_CHECK (q, checked);
  }
checked:
  ret = gst_whisper_queue_locked_refusal (q);
  if (ret == GST_FLOW_OK)
    gst_whisper_queue_locked_enqueue_audio (q, g_steal_pointer (&pcm));
  g_mutex_unlock (&q->lock);

  if (pcm)
    g_array_unref (pcm);
  return ret;
}

gboolean
gst_whisper_queue_push_event (GstWhisperQueue *q, GstEvent *event)
{
  GstWhisperQueueItem *item;
  gboolean queued = FALSE;

  g_mutex_lock (&q->lock);
  if (GST_EVENT_TYPE (event) == GST_EVENT_STREAM_START)
    q->eos = FALSE;
  else if (GST_EVENT_TYPE (event) == GST_EVENT_EOS)
    q->eos = TRUE;
  if (!q->flushing) {
    item = g_new0 (GstWhisperQueueItem, 1);
    item->type = GST_WHISPER_ITEM_EVENT;
    item->event = g_steal_pointer (&event);
    gst_whisper_queue_locked_enqueue (q, item);
    queued = TRUE;
  }
  g_mutex_unlock (&q->lock);

  if (event)
    gst_event_unref (event);
  return queued;
}

/* All the audio at the head up to the next resync point or event, or that
 * one item. */
static void
gst_whisper_queue_locked_dequeue (GstWhisperQueue *q, GQueue *batch)
{
  GstWhisperQueueItem *item;

  while ((item = g_queue_peek_head (&q->items))
      && (item->type == GST_WHISPER_ITEM_AUDIO || g_queue_is_empty (batch))) {
    g_queue_pop_head (&q->items);
    if (item->type == GST_WHISPER_ITEM_AUDIO)
      q->n_samples -= item->pcm->len;
    g_queue_push_tail (batch, item);
    if (item->type != GST_WHISPER_ITEM_AUDIO)
      break;
  }
  g_cond_broadcast (&q->item_del);
}

gboolean
gst_whisper_queue_pop (GstWhisperQueue *q, GQueue *batch)
{
  g_mutex_lock (&q->lock);
  if (q->flushing)
    goto flushing;
  while (g_queue_is_empty (&q->items))
    GST_WHISPER_QUEUE_WAIT_ADD_CHECK (q, flushing);
  gst_whisper_queue_locked_dequeue (q, batch);
  g_mutex_unlock (&q->lock);
  return TRUE;

flushing:
  g_mutex_unlock (&q->lock);
  return FALSE;
}

void
gst_whisper_queue_set_flushing (GstWhisperQueue *q, gboolean flushing)
{
  g_mutex_lock (&q->lock);
  if (flushing) {
    q->flushing = TRUE;
    q->srcresult = GST_FLOW_FLUSHING;
    g_cond_broadcast (&q->item_add);
    g_cond_broadcast (&q->item_del);
  } else {
    gst_whisper_queue_locked_flush (q);
    q->flushing = FALSE;
    q->eos = FALSE;
    q->srcresult = GST_FLOW_OK;
  }
  g_mutex_unlock (&q->lock);
}

gboolean
gst_whisper_queue_is_flushing (GstWhisperQueue *q)
{
  gboolean flushing;

  g_mutex_lock (&q->lock);
  flushing = q->flushing;
  g_mutex_unlock (&q->lock);
  return flushing;
}

void
gst_whisper_queue_pause (GstWhisperQueue *q, GstFlowReturn ret)
{
  g_mutex_lock (&q->lock);
  if (q->srcresult == GST_FLOW_OK)
    q->srcresult = ret;
  g_cond_broadcast (&q->item_del);
  g_mutex_unlock (&q->lock);
}

void
gst_whisper_queue_set_upstream (GstWhisperQueue *q, gboolean live, GstClockTime min_latency)
{
  g_mutex_lock (&q->lock);
  q->live = live;
  q->upstream_min = GST_CLOCK_TIME_IS_VALID (min_latency) ? min_latency : 0;
  /* A chain waiting for room does not wait any more once upstream is live. */
  g_cond_broadcast (&q->item_del);
  g_mutex_unlock (&q->lock);
}

gsize
gst_whisper_queue_samples (GstWhisperQueue *q)
{
  gsize n;

  g_mutex_lock (&q->lock);
  n = q->n_samples;
  g_mutex_unlock (&q->lock);
  return n;
}

void
gst_whisper_queue_get_upstream (GstWhisperQueue *q, gboolean *live,
    GstClockTime *min_latency)
{
  g_mutex_lock (&q->lock);
  *live = q->live;
  *min_latency = q->upstream_min;
  g_mutex_unlock (&q->lock);
}
