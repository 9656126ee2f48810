/* test-element-overload.c: whispersink's overload ladder
 * (task/gstwhisperoverload.c) with a slowed engine: the test hook
 * GST_WHISPER_TEST_SLOW_CALLS=MS:N makes the element's first N live calls
 * take MS longer (read when the element is made).
 *  - At the pace of real time (33 s): live calls 1 s slower than their
 *    0.5-s chunk fall behind and take every step in order (one-window,
 *    greedy, buffered-encoder, short-context, no-translation; late-text
 *    too where a drop is due), each posted (whisper-overload) with one
 *    warning (reason=overload), before any audio is dropped; with
 *    no-translation in effect the translate_src pad's decode is skipped
 *    (encoder passes no translation took). When the steps are undone
 *    depends on how fast the machine is:
 *    test-element-units.c checks that on given call times.
 *  - Paced (each 100-ms buffer once the element has handled the one
 *    before): upstream waits, nothing is behind: no step, however slow.
 *  - Unpaced (33 s of audio at once, far more than latency):
 *    overload=degrade takes a step where audio would be dropped, and
 *    drops only once every step is taken; overload=drop drops at once and
 *    takes none.
 * The assertions are on the order of what is posted, not on times. */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "wt-util.h"

#define SLOW_HOOK "GST_WHISPER_TEST_SLOW_CALLS"
#define BARRIER_NAME "test-element-overload-barrier"
#define BUF_SAMPLES (WHISPER_SAMPLE_RATE / 10)

/* late-text, the last, only where a drop is due */
static const gchar *const ladder[] = {
  "one-window", "greedy", "buffered-encoder", "short-context", "no-translation", "late-text"
};
/* the steps that spend less, taken by slow calls alone */
#define SPENDING_STEPS (G_N_ELEMENTS (ladder) - 1)

/* whispersink live, latency=3000 (0.5-s chunks), beam 5, a
 * translate_src pad, `overload`, its bus on `bus`; `slow` the hook's value
 * (NULL: none). */
static GstHarness *
new_element (const gchar *overload, const gchar *slow, GstBus *bus, GstHarness **ht)
{
  GstHarness *h;

  if (slow)
    g_setenv (SLOW_HOOK, slow, TRUE);
  h = wt_harness_new (TRUE, "latency=3000 beam-size=5");
  g_unsetenv (SLOW_HOOK);
  gst_util_set_object_arg (G_OBJECT (h->element), "overload", overload);
  gst_element_set_bus (h->element, bus);
  *ht = gst_harness_new_with_element (h->element, NULL, "translate_src_%u");
  gst_harness_play (*ht);
  return h;
}

static void
push_paced (GstHarness *h, GstHarness *ht, const float *pcm, gsize n, GstClockTime *pts,
    gboolean discont)
{
  GstBuffer *b;

  for (gsize off = 0; off < n; off += BUF_SAMPLES) {
    gsize k = MIN ((gsize) BUF_SAMPLES, n - off);
    fail_unless_equals_int (wt_push_pcm (h, pcm + off, k, *pts, k, discont && off == 0),
        GST_FLOW_OK);
    *pts += gst_util_uint64_scale (k, GST_SECOND, WHISPER_SAMPLE_RATE);
    fail_unless (wt_barrier (h, BARRIER_NAME));
    while ((b = gst_harness_try_pull (h)))
      gst_buffer_unref (b);
    while ((b = gst_harness_try_pull (ht)))
      gst_buffer_unref (b);
  }
}

/* 100-ms buffers at the pace of real time, not waiting for the element. */
static void
push_real_time (GstHarness *h, GstHarness *ht, const float *pcm, gsize n, GstClockTime *pts,
    gboolean discont)
{
  const gint64 t0 = g_get_monotonic_time () - GST_TIME_AS_USECONDS (*pts);
  GstBuffer *b;

  for (gsize off = 0; off < n; off += BUF_SAMPLES) {
    gsize k = MIN ((gsize) BUF_SAMPLES, n - off);
    gint64 wait = t0 + (gint64) GST_TIME_AS_USECONDS (*pts) - g_get_monotonic_time ();
    if (wait > 0)
      g_usleep ((gulong) wait);
    fail_unless_equals_int (wt_push_pcm (h, pcm + off, k, *pts, k, discont && off == 0),
        GST_FLOW_OK);
    *pts += gst_util_uint64_scale (k, GST_SECOND, WHISPER_SAMPLE_RATE);
    while ((b = gst_harness_try_pull (h)))
      gst_buffer_unref (b);
    while ((b = gst_harness_try_pull (ht)))
      gst_buffer_unref (b);
  }
}

static void
finish (GstHarness *h)
{
  g_autoptr (GPtrArray) bufs = NULL;

  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, NULL);
  g_ptr_array_set_free_func (bufs, (GDestroyNotify) gst_buffer_unref);
}

/* What the bus holds, in order: "+step" for a step taken, "-step" for one
 * undone, "drop" for a dropped-audio warning; *warned counts the warnings
 * with reason=overload. */
static GPtrArray *
pop_events (GstBus *bus, guint *warned)
{
  GPtrArray *events = g_ptr_array_new_with_free_func (g_free);
  GstMessage *m;

  *warned = 0;
  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT | GST_MESSAGE_WARNING))) {
    const GstStructure *s = gst_message_get_structure (m);
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_WARNING) {
      const GstStructure *d = NULL;
      const gchar *reason;
      gst_message_parse_warning_details (m, &d);
      reason = d ? gst_structure_get_string (d, "reason") : NULL;
      if (g_strcmp0 (reason, "dropped-audio") == 0)
        g_ptr_array_add (events, g_strdup ("drop"));
      *warned += g_strcmp0 (reason, "overload") == 0;
    } else if (gst_structure_has_name (s, "whisper-overload")) {
      gboolean taken = FALSE;
      fail_unless (gst_structure_get_boolean (s, "taken", &taken));
      g_ptr_array_add (events, g_strdup_printf ("%c%s", taken ? '+' : '-',
              gst_structure_get_string (s, "step")));
      fail_unless (gst_structure_get_string (s, "gave-up") != NULL);
    }
    gst_message_unref (m);
  }
  for (guint i = 0; i < events->len; i++)
    GST_INFO ("bus: %s", (gchar *) g_ptr_array_index (events, i));
  return events;
}

static const gchar *
event_at (GPtrArray *events, guint i)
{
  return g_ptr_array_index (events, i);
}

/* Every step in order before any drop (a drop only once all are taken),
 * undone in reverse order (a step undone may be taken again when calls
 * fall behind once more): returns the most steps in effect at once. */
static guint
check_order (GPtrArray *events)
{
  guint taken = 0, most = 0;
  g_autoptr (GString) seq = g_string_new (NULL);

  for (guint i = 0; i < events->len; i++)
    g_string_append_printf (seq, " %s", (const gchar *) event_at (events, i));
  GST_INFO ("overload events:%s", seq->str);
  for (guint i = 0; i < events->len; i++) {
    const gchar *ev = event_at (events, i);
    if (g_strcmp0 (ev, "drop") == 0) {
      fail_unless_equals_int (taken, G_N_ELEMENTS (ladder));
    } else if (ev[0] == '+') {
      fail_unless (taken < G_N_ELEMENTS (ladder), "step %s taken with every step in effect",
          ev + 1);
      fail_unless_equals_string (ev + 1, ladder[taken]);
      /* not MAX (most, ++taken): the macro evaluates its arguments twice */
      taken++;
      most = MAX (most, taken);
    } else {
      fail_unless (taken > 0, "step %s undone with none in effect", ev + 1);
      fail_unless_equals_string (ev + 1, ladder[taken - 1]);
      taken--;
    }
  }
  return most;
}

/* The order check itself, on a list written by hand: every step taken,
 * the last undone and taken again, then a drop (it once counted each step
 * taken twice and failed every run that took two steps). */
GST_START_TEST (test_check_order)
{
  static const gchar *const seq[] = {
    "+one-window", "+greedy", "+buffered-encoder", "+short-context", "+no-translation",
    "-no-translation", "-short-context", "+short-context", "+no-translation", "+late-text",
    "drop"
  };
  g_autoptr (GPtrArray) events = g_ptr_array_new ();

  for (guint i = 0; i < G_N_ELEMENTS (seq); i++)
    g_ptr_array_add (events, (gpointer) seq[i]);
  fail_unless_equals_int (check_order (events), G_N_ELEMENTS (ladder));
}
GST_END_TEST;

GST_START_TEST (test_ladder_real_time)
{
  GstBus *bus = gst_bus_new ();
  GstHarness *h, *ht;
  GstClockTime pts = 0;
  gsize n;
  float *pcm = wt_load_jfk (&n);
  g_autoptr (GPtrArray) events = NULL;
  guint warned, most;

  /* the first 19 calls take 1 s more: calls fall behind the audio (the
   * five steps need 15 calls that fall behind, 3 each, or fewer where a
   * drop is due; 4 more to spare) */
  h = new_element ("degrade", "1000:19", bus, &ht);
  for (int k = 0; k < 3; k++)
    push_real_time (h, ht, pcm, n, &pts, k == 0);
  finish (h);

  events = pop_events (bus, &warned);
  /* every step that spends less; late-text too where a drop was due */
  most = check_order (events);
  fail_unless (most >= SPENDING_STEPS);
  fail_unless_equals_int (warned, most);
  /* the translate_src pad's decode stopped at the last step: passes
   * without it (undoing the step takes 6 quick calls, and the first call
   * after it decodes speech) */
  fail_unless (wt_stats_u64 (h->element, "encoder-shared") > 0);
  fail_unless (wt_stats_u64 (h->element, "encoder-shared")
      < wt_stats_u64 (h->element, "encoder-passes"));

  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (ht);
  gst_harness_teardown (h);
  g_free (pcm);
}
GST_END_TEST;

/* Paced (each buffer once the element has handled the one before):
 * upstream waits for the element, nothing is behind, whatever the calls
 * take: no step. */
GST_START_TEST (test_paced_not_behind)
{
  GstBus *bus = gst_bus_new ();
  GstHarness *h, *ht;
  GstClockTime pts = 0;
  gsize n;
  float *pcm = wt_load_jfk (&n);
  g_autoptr (GPtrArray) events = NULL;
  guint warned;

  h = new_element ("degrade", "1000:6", bus, &ht);
  push_paced (h, ht, pcm, 3 * WHISPER_SAMPLE_RATE, &pts, TRUE);
  finish (h);
  events = pop_events (bus, &warned);
  fail_unless_equals_int (events->len, 0);
  fail_unless_equals_uint64 (wt_stats_u64 (h->element, "encoder-shared"),
      wt_stats_u64 (h->element, "encoder-passes"));

  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (ht);
  gst_harness_teardown (h);
  g_free (pcm);
}
GST_END_TEST;

/* 33 s of jfk.wav at once: far more audio waits than latency +
 * lateness. Returns the bus events. */
static GPtrArray *
run_unpaced (const gchar *overload, guint64 *dropped)
{
  GstBus *bus = gst_bus_new ();
  GstHarness *h, *ht;
  GstClockTime pts = 0;
  gsize n;
  float *pcm = wt_load_jfk (&n);
  GPtrArray *events;
  guint warned;

  /* the first call takes 3 s more: everything is pushed meanwhile */
  h = new_element (overload, "3000:1", bus, &ht);
  for (int k = 0; k < 3; k++) {
    fail_unless_equals_int (wt_push_pcm (h, pcm, n, pts, BUF_SAMPLES, k == 0), GST_FLOW_OK);
    pts += gst_util_uint64_scale (n, GST_SECOND, WHISPER_SAMPLE_RATE);
  }
  finish (h);
  *dropped = wt_stats_u64 (h->element, "audio-dropped");
  events = pop_events (bus, &warned);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (ht);
  gst_harness_teardown (h);
  g_free (pcm);
  return events;
}

GST_START_TEST (test_steps_before_drop)
{
  guint64 dropped;
  g_autoptr (GPtrArray) events = run_unpaced ("degrade", &dropped);
  guint taken;

  /* a step before anything is dropped (calls that fall behind commit
   * what is late and may catch up before the last step: a drop is not
   * certain), each in order, and a drop only once all are taken */
  fail_unless (events->len > 0);
  taken = check_order (events);
  fail_unless (taken > 0);
  GST_INFO ("%u steps taken, %" G_GUINT64_FORMAT " ns dropped", taken, dropped);
}
GST_END_TEST;

GST_START_TEST (test_drop_mode)
{
  guint64 dropped;
  g_autoptr (GPtrArray) events = run_unpaced ("drop", &dropped);

  fail_unless (dropped > 0);
  fail_unless (events->len > 0);
  for (guint i = 0; i < events->len; i++)
    fail_unless_equals_string (event_at (events, i), "drop");
}
GST_END_TEST;

static Suite *
overload_suite (void)
{
  Suite *s = suite_create ("whispersink-overload");
  TCase *tc = tcase_create ("overload");

  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  /* The ladder's rules on given call times, and with settings that change
   * between calls, are test-element-units' overload cases. */
  tcase_add_test (tc, test_check_order);
  tcase_add_test (tc, test_ladder_real_time);
  tcase_add_test (tc, test_paced_not_behind);
  tcase_add_test (tc, test_steps_before_drop);
  tcase_add_test (tc, test_drop_mode);
  return s;
}

int
main (int argc, char **argv)
{
  return wt_run_suite_with_model (argc, argv, overload_suite, "whispersink-overload", __FILE__);
}
