/* gstwhisperoutqueue.c: the bounded queue between whispersink's inference
 * task and its src pad task (see gstwhisperoutqueue.h). */
#include "io/gstwhisperoutqueue.h"

#include <string.h>

#include "io/gstwhisperdebug.h"
#define GST_CAT_DEFAULT gst_whisper_sink_debug

/* Waits until the src pad task took an item. Leaves to `label` when the
 * queue is flushing or the src pad task stopped, which every wake-up
 * re-checks. */
#define GST_WHISPER_OUT_QUEUE_WAIT_DEL_CHECK(q, label) G_STMT_START {   \
  g_cond_wait (&(q)->item_del, &(q)->lock);                             \
  if ((q)->srcresult != GST_FLOW_OK)                                    \
    goto label;                                                         \
} G_STMT_END

/* Waits until an item was added. Leaves to `label` when the queue is
 * flushing. */
#define GST_WHISPER_OUT_QUEUE_WAIT_ADD_CHECK(q, label) G_STMT_START {   \
  g_cond_wait (&(q)->item_add, &(q)->lock);                             \
  if ((q)->flushing)                                                    \
    goto label;                                                         \
} G_STMT_END

/* What a live overflow dropped, for the warning. */
typedef struct {
  guint n;
  GstClockTime pts, duration;   /* of the first text dropped */
  gchar *text;
} Dropped;

void
gst_whisper_out_item_free (GstWhisperOutItem *item)
{
  if (item->object)
    gst_mini_object_unref (item->object);
  g_free (item);
}

static GstWhisperOutItem *
item_new (GstWhisperOutType type, gpointer object)
{
  GstWhisperOutItem *item = g_new0 (GstWhisperOutItem, 1);

  item->type = type;
  item->object = object;
  return item;
}

/* The time a buffer or a GAP with a duration covers. */
static gboolean
item_times (const GstWhisperOutItem *item, GstClockTime *start, GstClockTime *end)
{
  GstClockTime ts, dur;

  if (item->type == GST_WHISPER_OUT_BUFFER) {
    GstBuffer *buf = GST_BUFFER_CAST (item->object);
    ts = GST_BUFFER_PTS (buf);
    dur = GST_BUFFER_DURATION (buf);
  } else if (item->type == GST_WHISPER_OUT_EVENT
      && GST_EVENT_TYPE (item->object) == GST_EVENT_GAP) {
    gst_event_parse_gap (GST_EVENT_CAST (item->object), &ts, &dur);
  } else {
    return FALSE;
  }
  if (!GST_CLOCK_TIME_IS_VALID (ts) || !GST_CLOCK_TIME_IS_VALID (dur))
    return FALSE;
  *start = ts;
  *end = ts + dur;
  return TRUE;
}

static gboolean
item_is_gap (const GstWhisperOutItem *item)
{
  return item->type == GST_WHISPER_OUT_EVENT
      && GST_EVENT_TYPE (item->object) == GST_EVENT_GAP;
}

void
gst_whisper_out_queue_init (GstWhisperOutQueue *q, GstElement *element)
{
  memset (q, 0, sizeof (*q));
  q->element = element;
  g_mutex_init (&q->lock);
  g_cond_init (&q->item_add);
  g_cond_init (&q->item_del);
  g_queue_init (&q->items);
  q->flushing = TRUE;
  q->srcresult = GST_FLOW_FLUSHING;
  q->max_span = GST_CLOCK_TIME_NONE;
}

static void
gst_whisper_out_queue_locked_flush (GstWhisperOutQueue *q)
{
  g_queue_clear_full (&q->items, (GDestroyNotify) gst_whisper_out_item_free);
  q->warned = FALSE;
}

void
gst_whisper_out_queue_clear (GstWhisperOutQueue *q)
{
  gst_whisper_out_queue_locked_flush (q);
  g_mutex_clear (&q->lock);
  g_cond_clear (&q->item_add);
  g_cond_clear (&q->item_del);
}

void
gst_whisper_out_queue_set_limits (GstWhisperOutQueue *q, gboolean live,
    GstClockTime max_span)
{
  g_mutex_lock (&q->lock);
  q->live = live;
  q->max_span = max_span;
  /* An inference task waiting for room does not wait any more once live. */
  g_cond_broadcast (&q->item_del);
  g_mutex_unlock (&q->lock);
}

static void
gst_whisper_out_queue_locked_enqueue (GstWhisperOutQueue *q, GstWhisperOutItem *item)
{
  g_queue_push_tail (&q->items, item);
  g_cond_broadcast (&q->item_add);
}

/* Non-live: waits until there is room. Returns OK, or why the item is
 * refused. */
static GstFlowReturn
gst_whisper_out_queue_locked_wait_for_room (GstWhisperOutQueue *q)
{
  if (q->srcresult != GST_FLOW_OK)
    goto done;
  while (!q->live && q->items.length >= GST_WHISPER_OUT_QUEUE_MAX_ITEMS)
    GST_WHISPER_OUT_QUEUE_WAIT_DEL_CHECK (q, done);
done:
  return q->srcresult;
}

/* Merges the GAPs of `a` and `b` (consecutive links, b after a) into `a`
 * when they are contiguous. */
static gboolean
gst_whisper_out_queue_locked_merge_gaps (GstWhisperOutQueue *q, GList *a, GList *b)
{
  GstWhisperOutItem *x = a->data, *y = b->data;
  GstClockTime xs, xe, ys, ye;

  if (!item_is_gap (x) || !item_is_gap (y) || !item_times (x, &xs, &xe)
      || !item_times (y, &ys, &ye) || xe != ys)
    return FALSE;
  gst_mini_object_unref (x->object);
  x->object = GST_MINI_OBJECT_CAST (gst_event_new_gap (xs, ye - xs));
  gst_whisper_out_item_free (y);
  g_queue_delete_link (&q->items, b);
  return TRUE;
}

static gchar *
buffer_text (GstBuffer *buf)
{
  GstMapInfo map;
  gchar *text;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return g_strdup ("");
  text = g_strndup ((const gchar *) map.data, map.size);
  gst_buffer_unmap (buf, &map);
  return text;
}

/* Live: while the queued text spans more than max_span, the oldest text
 * buffer becomes a GAP over its time (merged with the GAPs next to it). */
static void
gst_whisper_out_queue_locked_enforce_span (GstWhisperOutQueue *q, Dropped *d)
{
  for (;;) {
    GList *oldest = NULL, *l;
    GstClockTime start = GST_CLOCK_TIME_NONE, end = GST_CLOCK_TIME_NONE, s, e;
    GstWhisperOutItem *item;
    GstBuffer *buf;

    for (l = q->items.head; l && oldest == NULL; l = l->next)
      if (((GstWhisperOutItem *) l->data)->type == GST_WHISPER_OUT_BUFFER)
        oldest = l;
    for (l = q->items.tail; l && !GST_CLOCK_TIME_IS_VALID (end); l = l->prev)
      if (item_times (l->data, &s, &e))
        end = e;
    if (oldest == NULL || !item_times (oldest->data, &start, &e)
        || !GST_CLOCK_TIME_IS_VALID (end) || end <= start
        || !GST_CLOCK_TIME_IS_VALID (q->max_span) || end - start <= q->max_span)
      return;

    item = oldest->data;
    buf = GST_BUFFER_CAST (item->object);
    if (d->n++ == 0) {
      d->pts = GST_BUFFER_PTS (buf);
      d->duration = GST_BUFFER_DURATION (buf);
      d->text = buffer_text (buf);
    }
    q->dropped++;
    GST_DEBUG_OBJECT (q->element, "output queue over %" GST_TIME_FORMAT ": dropping the "
        "text at %" GST_TIME_FORMAT, GST_TIME_ARGS (q->max_span), GST_TIME_ARGS (start));
    item->type = GST_WHISPER_OUT_EVENT;
    item->object = GST_MINI_OBJECT_CAST (gst_event_new_gap (start, e - start));
    gst_buffer_unref (buf);

    if (oldest->next)
      gst_whisper_out_queue_locked_merge_gaps (q, oldest, oldest->next);
    if (oldest->prev)
      gst_whisper_out_queue_locked_merge_gaps (q, oldest->prev, oldest);
  }
}

/* Queues a buffer or a GAP: waits for room (non-live), or merges GAPs and
 * keeps the text span (live). */
static GstFlowReturn
gst_whisper_out_queue_push_timed (GstWhisperOutQueue *q, GstWhisperOutItem *item)
{
  GstFlowReturn ret;
  Dropped d = { 0, };
  gboolean warn = FALSE;

  g_mutex_lock (&q->lock);
  ret = gst_whisper_out_queue_locked_wait_for_room (q);
  if (ret == GST_FLOW_OK) {
    gst_whisper_out_queue_locked_enqueue (q, g_steal_pointer (&item));
    if (q->live) {
      GList *tail = q->items.tail;
      if (tail->prev)
        gst_whisper_out_queue_locked_merge_gaps (q, tail->prev, tail);
      gst_whisper_out_queue_locked_enforce_span (q, &d);
    }
    if (d.n > 0 && !q->warned)
      warn = q->warned = TRUE;
  }
  g_mutex_unlock (&q->lock);

  if (item)
    gst_whisper_out_item_free (item);
  if (warn) {
    GST_ELEMENT_WARNING_WITH_DETAILS (q->element, STREAM, FAILED,
        ("%s dropped text that downstream did not take in time: \"%s\" at %"
            GST_TIME_FORMAT " (%u item%s)", GST_ELEMENT_NAME (q->element), d.text,
            GST_TIME_ARGS (d.pts), d.n, d.n == 1 ? "" : "s"),
        ("The text waiting for downstream spanned more than latency + lateness + 1 s: "
            "the element after whispersink (a sink synchronising to the clock, "
            "textoverlay) does not take text as fast as it comes; each dropped item is "
            "replaced by a GAP, further drops are counted in the stats property "
            "(text-dropped)"),
        ("reason", G_TYPE_STRING, "dropped-text", "start", G_TYPE_UINT64, d.pts,
            "duration", G_TYPE_UINT64, d.duration, "text", G_TYPE_STRING, d.text,
            "count", G_TYPE_UINT, d.n, NULL));
  } else if (d.n > 0) {
    GST_DEBUG_OBJECT (q->element, "dropped %u more text item(s), first \"%s\" at %"
        GST_TIME_FORMAT, d.n, d.text, GST_TIME_ARGS (d.pts));
  }
  g_free (d.text);
  return ret;
}

GstFlowReturn
gst_whisper_out_queue_push_buffer (GstWhisperOutQueue *q, GstBuffer *buf)
{
  return gst_whisper_out_queue_push_timed (q, item_new (GST_WHISPER_OUT_BUFFER, buf));
}

/* Events other than GAP never wait. */
static GstFlowReturn
gst_whisper_out_queue_push_untimed (GstWhisperOutQueue *q, GstWhisperOutItem *item)
{
  GstFlowReturn ret;

  g_mutex_lock (&q->lock);
  ret = q->srcresult;
  if (ret == GST_FLOW_OK)
    gst_whisper_out_queue_locked_enqueue (q, g_steal_pointer (&item));
  g_mutex_unlock (&q->lock);

  if (item)
    gst_whisper_out_item_free (item);
  return ret;
}

GstFlowReturn
gst_whisper_out_queue_push_event (GstWhisperOutQueue *q, GstEvent *event)
{
  GstWhisperOutItem *item = item_new (GST_WHISPER_OUT_EVENT, event);

  if (GST_EVENT_TYPE (event) == GST_EVENT_GAP)
    return gst_whisper_out_queue_push_timed (q, item);
  return gst_whisper_out_queue_push_untimed (q, item);
}

GstFlowReturn
gst_whisper_out_queue_push_eos (GstWhisperOutQueue *q)
{
  return gst_whisper_out_queue_push_untimed (q,
      item_new (GST_WHISPER_OUT_END_OF_STREAM, gst_event_new_eos ()));
}

void
gst_whisper_out_queue_push_preroll (GstWhisperOutQueue *q)
{
  gst_whisper_out_queue_push_untimed (q, item_new (GST_WHISPER_OUT_PREROLL, NULL));
}

GstWhisperOutItem *
gst_whisper_out_queue_pop (GstWhisperOutQueue *q)
{
  GstWhisperOutItem *item;

  g_mutex_lock (&q->lock);
  if (q->flushing)
    goto flushing;
  while (g_queue_is_empty (&q->items))
    GST_WHISPER_OUT_QUEUE_WAIT_ADD_CHECK (q, flushing);
  item = g_queue_pop_head (&q->items);
  if (g_queue_is_empty (&q->items))
    q->warned = FALSE;        /* downstream caught up */
  g_cond_broadcast (&q->item_del);
  g_mutex_unlock (&q->lock);
  return item;

flushing:
  g_mutex_unlock (&q->lock);
  return NULL;
}

void
gst_whisper_out_queue_set_flushing (GstWhisperOutQueue *q, gboolean flushing)
{
  g_mutex_lock (&q->lock);
  gst_whisper_out_queue_locked_flush (q);
  q->flushing = flushing;
  q->srcresult = flushing ? GST_FLOW_FLUSHING : GST_FLOW_OK;
  g_cond_broadcast (&q->item_add);
  g_cond_broadcast (&q->item_del);
  g_mutex_unlock (&q->lock);
}

void
gst_whisper_out_queue_pause (GstWhisperOutQueue *q, GstFlowReturn ret)
{
  g_mutex_lock (&q->lock);
  if (q->srcresult == GST_FLOW_OK)
    q->srcresult = ret;
  g_cond_broadcast (&q->item_del);
  g_mutex_unlock (&q->lock);
}

GstFlowReturn
gst_whisper_out_queue_get_result (GstWhisperOutQueue *q)
{
  GstFlowReturn ret;

  g_mutex_lock (&q->lock);
  ret = q->srcresult;
  g_mutex_unlock (&q->lock);
  return ret;
}

void
gst_whisper_out_queue_get_stats (GstWhisperOutQueue *q, guint *queued, guint *dropped)
{
  g_mutex_lock (&q->lock);
  *queued = q->items.length;
  *dropped = q->dropped;
  g_mutex_unlock (&q->lock);
}

void
gst_whisper_out_queue_reset_stats (GstWhisperOutQueue *q)
{
  g_mutex_lock (&q->lock);
  q->dropped = 0;
  g_mutex_unlock (&q->lock);
}
