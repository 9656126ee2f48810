/* test-element-queues.c: whispersink's two hand-off queues, without a
 * model: the sink pad's queue to the inference task (gstwhisperqueue.c)
 * and the output queue to the src pad task (gstwhisperoutqueue.c): batches
 * and order, flushing, EOS and flow results, waiting for room, and the
 * live output policy (GAPs merged, the oldest text dropped beyond the span,
 * one warning naming the element). No check measures time: a wait that
 * never ends is caught by the test timeout. */
#include <gst/check/gstcheck.h>
#include <string.h>

#include "io/gstwhisperoutqueue.h"
#include "io/gstwhisperdebug.h"
#include "io/gstwhisperqueue.h"

static GArray *
pcm_new (gsize n)
{
  GArray *pcm = g_array_sized_new (FALSE, TRUE, sizeof (float), n);
  g_array_set_size (pcm, n);
  return pcm;
}

/* Pops one batch and checks its item types; returns the audio samples in it. */
static gsize
pop_expect (GstWhisperQueue *q, const GstWhisperItemType *types, guint n_types)
{
  GQueue batch = G_QUEUE_INIT;
  GstWhisperQueueItem *item;
  gsize samples = 0;
  guint i = 0;

  fail_unless (gst_whisper_queue_pop (q, &batch));
  fail_unless_equals_int (g_queue_get_length (&batch), n_types);
  while ((item = g_queue_pop_head (&batch))) {
    fail_unless_equals_int (item->type, types[i++]);
    if (item->type == GST_WHISPER_ITEM_AUDIO)
      samples += item->pcm->len;
    gst_whisper_queue_item_free (item);
  }
  return samples;
}

GST_START_TEST (test_queue_batches)
{
  GstWhisperQueue q;
  const GstWhisperItemType event[] = { GST_WHISPER_ITEM_EVENT };
  const GstWhisperItemType resync[] = { GST_WHISPER_ITEM_RESYNC };
  const GstWhisperItemType audio[] = { GST_WHISPER_ITEM_AUDIO };

  gst_whisper_queue_init (&q);
  gst_whisper_queue_set_flushing (&q, FALSE);
  fail_unless (gst_whisper_queue_push_event (&q, gst_event_new_stream_start ("s")));
  fail_unless_equals_int (gst_whisper_queue_push_audio (&q, pcm_new (100), TRUE, 0),
      GST_FLOW_OK);
  fail_unless_equals_int (gst_whisper_queue_push_audio (&q, pcm_new (50), FALSE, 0),
      GST_FLOW_OK);
  fail_unless (gst_whisper_queue_push_event (&q, gst_event_new_gap (0, GST_SECOND)));
  fail_unless_equals_int (gst_whisper_queue_push_audio (&q, pcm_new (10), TRUE,
          5 * GST_SECOND), GST_FLOW_OK);
  fail_unless_equals_int (q.n_samples, 160);

  /* One event, one resync point, or all the audio up to the next of them
   * (consecutive audio in one piece). */
  pop_expect (&q, event, 1);
  pop_expect (&q, resync, 1);
  fail_unless_equals_int (pop_expect (&q, audio, 1), 150);
  pop_expect (&q, event, 1);
  pop_expect (&q, resync, 1);
  fail_unless_equals_int (pop_expect (&q, audio, 1), 10);
  fail_unless_equals_int (q.n_samples, 0);
  gst_whisper_queue_clear (&q);
}
GST_END_TEST;

GST_START_TEST (test_queue_flow)
{
  GstWhisperQueue q;
  GQueue batch = G_QUEUE_INIT;

  /* Flushing until the task starts: everything refused. */
  gst_whisper_queue_init (&q);
  fail_unless_equals_int (gst_whisper_queue_push_audio (&q, pcm_new (10), TRUE, 0),
      GST_FLOW_FLUSHING);
  fail_if (gst_whisper_queue_push_event (&q, gst_event_new_eos ()));
  fail_if (gst_whisper_queue_pop (&q, &batch));

  /* EOS refuses audio until STREAM_START. */
  gst_whisper_queue_set_flushing (&q, FALSE);
  fail_unless (gst_whisper_queue_push_event (&q, gst_event_new_eos ()));
  fail_unless_equals_int (gst_whisper_queue_push_audio (&q, pcm_new (10), FALSE, 0),
      GST_FLOW_EOS);
  fail_unless (gst_whisper_queue_push_event (&q, gst_event_new_stream_start ("s")));
  fail_unless_equals_int (gst_whisper_queue_push_audio (&q, pcm_new (10), FALSE, 0),
      GST_FLOW_OK);

  /* The task's flow result is upstream's answer; the first one sticks. */
  gst_whisper_queue_pause (&q, GST_FLOW_NOT_NEGOTIATED);
  gst_whisper_queue_pause (&q, GST_FLOW_EOS);
  fail_unless_equals_int (gst_whisper_queue_push_audio (&q, pcm_new (10), FALSE, 0),
      GST_FLOW_NOT_NEGOTIATED);

  /* A flush forgets all of it. */
  gst_whisper_queue_set_flushing (&q, TRUE);
  fail_unless (gst_whisper_queue_is_flushing (&q));
  gst_whisper_queue_set_flushing (&q, FALSE);
  fail_unless (g_queue_is_empty (&q.items));
  fail_unless_equals_int (q.n_samples, 0);
  fail_unless_equals_int (gst_whisper_queue_push_audio (&q, pcm_new (10), FALSE, 0),
      GST_FLOW_OK);
  gst_whisper_queue_clear (&q);
}
GST_END_TEST;

static gpointer
push_audio_thread (gpointer data)
{
  return GINT_TO_POINTER (gst_whisper_queue_push_audio (data, pcm_new (10), FALSE, 0));
}

GST_START_TEST (test_queue_room)
{
  GstWhisperQueue q;
  GQueue batch = G_QUEUE_INIT;
  GThread *t;

  gst_whisper_queue_init (&q);
  gst_whisper_queue_set_flushing (&q, FALSE);
  fail_unless_equals_int (gst_whisper_queue_push_audio (&q,
          pcm_new (GST_WHISPER_QUEUE_MAX_SAMPLES + 1), FALSE, 0), GST_FLOW_OK);

  /* Non-live and full: a push waits until the task takes audio. */
  t = g_thread_new ("push", push_audio_thread, &q);
  fail_unless (gst_whisper_queue_pop (&q, &batch));
  fail_unless_equals_int (GPOINTER_TO_INT (g_thread_join (t)), GST_FLOW_OK);
  g_queue_clear_full (&batch, (GDestroyNotify) gst_whisper_queue_item_free);

  /* ... or until flushing. */
  fail_unless_equals_int (gst_whisper_queue_push_audio (&q,
          pcm_new (GST_WHISPER_QUEUE_MAX_SAMPLES + 1), FALSE, 0), GST_FLOW_OK);
  t = g_thread_new ("push", push_audio_thread, &q);
  gst_whisper_queue_set_flushing (&q, TRUE);
  fail_unless_equals_int (GPOINTER_TO_INT (g_thread_join (t)), GST_FLOW_FLUSHING);

  /* A live upstream is never held up. */
  gst_whisper_queue_set_flushing (&q, FALSE);
  gst_whisper_queue_set_upstream (&q, TRUE, 20 * GST_MSECOND);
  fail_unless_equals_int (gst_whisper_queue_push_audio (&q,
          pcm_new (GST_WHISPER_QUEUE_MAX_SAMPLES + 1), FALSE, 0), GST_FLOW_OK);
  fail_unless_equals_int (gst_whisper_queue_push_audio (&q, pcm_new (10), FALSE, 0),
      GST_FLOW_OK);
  gst_whisper_queue_clear (&q);
}
GST_END_TEST;

/* ------------------------------------------------------------------------ */

static GstBuffer *
text_at (const gchar *text, guint start_s, guint dur_s)
{
  GstBuffer *buf = gst_buffer_new_memdup (text, strlen (text));

  GST_BUFFER_PTS (buf) = start_s * GST_SECOND;
  GST_BUFFER_DURATION (buf) = dur_s * GST_SECOND;
  return buf;
}

/* The items queued now, as "text[s,e)" and "gap[s,e)" words. */
static gchar *
describe (GstWhisperOutQueue *q)
{
  GString *s = g_string_new (NULL);
  GList *l;

  for (l = q->items.head; l; l = l->next) {
    GstWhisperOutItem *item = l->data;
    GstClockTime ts = 0, dur = 0;

    if (s->len)
      g_string_append_c (s, ' ');
    if (item->type == GST_WHISPER_OUT_BUFFER) {
      GstMapInfo map;
      gst_buffer_map (GST_BUFFER (item->object), &map, GST_MAP_READ);
      g_string_append_len (s, (const gchar *) map.data, map.size);
      gst_buffer_unmap (GST_BUFFER (item->object), &map);
      ts = GST_BUFFER_PTS (item->object);
      dur = GST_BUFFER_DURATION (item->object);
    } else if (item->type == GST_WHISPER_OUT_EVENT
        && GST_EVENT_TYPE (item->object) == GST_EVENT_GAP) {
      g_string_append (s, "gap");
      gst_event_parse_gap (GST_EVENT (item->object), &ts, &dur);
    } else {
      g_string_append (s, "other");
      continue;
    }
    g_string_append_printf (s, "[%u,%u)", (guint) (ts / GST_SECOND),
        (guint) ((ts + dur) / GST_SECOND));
  }
  return g_string_free (s, FALSE);
}

static void
expect_queue (GstWhisperOutQueue *q, const gchar *want)
{
  gchar *got = describe (q);

  fail_unless_equals_string (got, want);
  g_free (got);
}

static guint
count_dropped_text_warnings (GstBus *bus, GstElement *e)
{
  GstMessage *m;
  guint n = 0;

  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING))) {
    GError *err = NULL;
    const GstStructure *details = NULL;
    const gchar *text;
    guint64 start, duration;

    gst_message_parse_warning (m, &err, NULL);
    gst_message_parse_warning_details (m, &details);
    GST_INFO ("%s %" GST_PTR_FORMAT, err->message, details);
    fail_unless (GST_MESSAGE_SRC (m) == GST_OBJECT (e));
    fail_unless (strstr (err->message, GST_ELEMENT_NAME (e)) != NULL, "%s", err->message);
    fail_unless (details != NULL);
    fail_unless_equals_string (gst_structure_get_string (details, "reason"),
        "dropped-text");
    text = gst_structure_get_string (details, "text");
    fail_unless (text != NULL && strstr (err->message, text) != NULL);
    fail_unless (gst_structure_get_uint64 (details, "start", &start));
    fail_unless (gst_structure_get_uint64 (details, "duration", &duration));
    fail_unless (duration > 0);
    g_error_free (err);
    gst_message_unref (m);
    n++;
  }
  return n;
}

GST_START_TEST (test_out_queue_order_and_flow)
{
  GstElement *e = gst_bin_new ("w0");
  GstWhisperOutQueue q;
  GstWhisperOutItem *item;
  GstSegment seg;
  const GstWhisperOutType want[] = { GST_WHISPER_OUT_EVENT, GST_WHISPER_OUT_BUFFER,
    GST_WHISPER_OUT_EVENT, GST_WHISPER_OUT_END_OF_STREAM, GST_WHISPER_OUT_PREROLL
  };
  guint i;

  gst_whisper_out_queue_init (&q, e);
  fail_unless_equals_int (gst_whisper_out_queue_push_buffer (&q, text_at ("a", 0, 1)),
      GST_FLOW_FLUSHING);
  fail_unless (gst_whisper_out_queue_pop (&q) == NULL);

  gst_whisper_out_queue_set_flushing (&q, FALSE);
  gst_segment_init (&seg, GST_FORMAT_TIME);
  fail_unless_equals_int (gst_whisper_out_queue_push_event (&q,
          gst_event_new_segment (&seg)), GST_FLOW_OK);
  fail_unless_equals_int (gst_whisper_out_queue_push_buffer (&q, text_at ("a", 0, 1)),
      GST_FLOW_OK);
  fail_unless_equals_int (gst_whisper_out_queue_push_event (&q,
          gst_event_new_gap (GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  fail_unless_equals_int (gst_whisper_out_queue_push_eos (&q), GST_FLOW_OK);
  gst_whisper_out_queue_push_preroll (&q);
  for (i = 0; i < G_N_ELEMENTS (want); i++) {
    item = gst_whisper_out_queue_pop (&q);
    fail_unless (item != NULL);
    fail_unless_equals_int (item->type, want[i]);
    gst_whisper_out_item_free (item);
  }

  /* What downstream returned is the inference task's answer. */
  gst_whisper_out_queue_pause (&q, GST_FLOW_NOT_NEGOTIATED);
  fail_unless_equals_int (gst_whisper_out_queue_get_result (&q), GST_FLOW_NOT_NEGOTIATED);
  fail_unless_equals_int (gst_whisper_out_queue_push_buffer (&q, text_at ("b", 1, 1)),
      GST_FLOW_NOT_NEGOTIATED);
  fail_unless_equals_int (gst_whisper_out_queue_push_eos (&q), GST_FLOW_NOT_NEGOTIATED);
  gst_whisper_out_queue_set_flushing (&q, TRUE);
  gst_whisper_out_queue_set_flushing (&q, FALSE);
  fail_unless_equals_int (gst_whisper_out_queue_get_result (&q), GST_FLOW_OK);
  gst_whisper_out_queue_clear (&q);
  gst_object_unref (e);
}
GST_END_TEST;

GST_START_TEST (test_out_queue_live_overflow)
{
  GstElement *e = gst_bin_new ("w0");
  GstBus *bus = gst_bus_new ();
  GstWhisperOutQueue q;
  GstWhisperOutItem *item;
  guint queued, dropped;

  gst_element_set_bus (e, bus);
  gst_whisper_out_queue_init (&q, e);
  gst_whisper_out_queue_set_flushing (&q, FALSE);
  /* Live, the queued text may span 3 s. */
  gst_whisper_out_queue_set_limits (&q, TRUE, 3 * GST_SECOND);

  gst_whisper_out_queue_push_buffer (&q, text_at ("a", 0, 1));
  gst_whisper_out_queue_push_event (&q, gst_event_new_gap (1 * GST_SECOND, GST_SECOND));
  gst_whisper_out_queue_push_buffer (&q, text_at ("b", 2, 1));
  expect_queue (&q, "a[0,1) gap[1,2) b[2,3)");
  fail_unless_equals_int (count_dropped_text_warnings (bus, e), 0);

  /* 4 s from the start of "a": it becomes a GAP, merged with the next. */
  gst_whisper_out_queue_push_event (&q, gst_event_new_gap (3 * GST_SECOND, GST_SECOND));
  expect_queue (&q, "gap[0,2) b[2,3) gap[3,4)");
  fail_unless_equals_int (count_dropped_text_warnings (bus, e), 1);

  /* A GAP after a GAP: one GAP. */
  gst_whisper_out_queue_push_buffer (&q, text_at ("c", 4, 1));
  gst_whisper_out_queue_push_event (&q, gst_event_new_gap (5 * GST_SECOND, GST_SECOND));
  expect_queue (&q, "gap[0,4) c[4,5) gap[5,6)");
  gst_whisper_out_queue_push_event (&q, gst_event_new_gap (6 * GST_SECOND, GST_SECOND));
  expect_queue (&q, "gap[0,4) c[4,5) gap[5,7)");
  /* Still the same overflow: no second warning, but counted. */
  fail_unless_equals_int (count_dropped_text_warnings (bus, e), 0);
  gst_whisper_out_queue_get_stats (&q, &queued, &dropped);
  fail_unless_equals_int (queued, 3);
  fail_unless_equals_int (dropped, 2);

  /* Downstream caught up (the queue drained): the next overflow warns again. */
  while (!g_queue_is_empty (&q.items))
    gst_whisper_out_item_free (gst_whisper_out_queue_pop (&q));
  gst_whisper_out_queue_push_buffer (&q, text_at ("d", 7, 1));
  gst_whisper_out_queue_push_buffer (&q, text_at ("e", 10, 1));
  expect_queue (&q, "gap[7,8) e[10,11)");
  fail_unless_equals_int (count_dropped_text_warnings (bus, e), 1);
  item = gst_whisper_out_queue_pop (&q);
  gst_whisper_out_item_free (item);

  gst_whisper_out_queue_reset_stats (&q);
  gst_whisper_out_queue_get_stats (&q, &queued, &dropped);
  fail_unless_equals_int (dropped, 0);
  gst_whisper_out_queue_clear (&q);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  gst_object_unref (e);
}
GST_END_TEST;

static gpointer
push_text_thread (gpointer data)
{
  return GINT_TO_POINTER (gst_whisper_out_queue_push_buffer (data, text_at ("z", 99, 1)));
}

GST_START_TEST (test_out_queue_nonlive_room)
{
  GstElement *e = gst_bin_new ("w0");
  GstWhisperOutQueue q;
  GstSegment seg;
  GThread *t;
  guint i;

  gst_whisper_out_queue_init (&q, e);
  gst_whisper_out_queue_set_flushing (&q, FALSE);
  gst_whisper_out_queue_set_limits (&q, FALSE, GST_CLOCK_TIME_NONE);
  for (i = 0; i < GST_WHISPER_OUT_QUEUE_MAX_ITEMS; i++)
    fail_unless_equals_int (gst_whisper_out_queue_push_buffer (&q, text_at ("x", i, 1)),
        GST_FLOW_OK);
  /* Full: events other than GAP still go in, nothing is dropped. */
  gst_segment_init (&seg, GST_FORMAT_TIME);
  fail_unless_equals_int (gst_whisper_out_queue_push_event (&q,
          gst_event_new_segment (&seg)), GST_FLOW_OK);
  fail_unless_equals_int (q.dropped, 0);

  /* A buffer waits until the src pad task makes room (the event counts)... */
  t = g_thread_new ("push", push_text_thread, &q);
  gst_whisper_out_item_free (gst_whisper_out_queue_pop (&q));
  gst_whisper_out_item_free (gst_whisper_out_queue_pop (&q));
  fail_unless_equals_int (GPOINTER_TO_INT (g_thread_join (t)), GST_FLOW_OK);
  /* ... or until flushing. */
  t = g_thread_new ("push", push_text_thread, &q);
  gst_whisper_out_queue_set_flushing (&q, TRUE);
  fail_unless_equals_int (GPOINTER_TO_INT (g_thread_join (t)), GST_FLOW_FLUSHING);
  gst_whisper_out_queue_clear (&q);
  gst_object_unref (e);
}
GST_END_TEST;

static Suite *
whispersink_queues_suite (void)
{
  Suite *s = suite_create ("whispersink-queues");
  TCase *tc = tcase_create ("queues");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_queue_batches);
  tcase_add_test (tc, test_queue_flow);
  tcase_add_test (tc, test_queue_room);
  tcase_add_test (tc, test_out_queue_order_and_flow);
  tcase_add_test (tc, test_out_queue_live_overflow);
  tcase_add_test (tc, test_out_queue_nonlive_room);
  return s;
}

int
main (int argc, char **argv)
{
  gst_check_init (&argc, &argv);
  gst_whisper_debug_init ();
  return gst_check_run_suite (whispersink_queues_suite (), "whispersink-queues", __FILE__);
}
