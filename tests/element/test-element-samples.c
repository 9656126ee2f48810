/* test-element-samples: hostile F32 samples at the element's input. One
 * +Inf, one NaN and two samples beyond full scale in jfk.wav used to turn
 * the whole clip into one "!!!!..." cue with NaN scores; now the element
 * fixes them (NaN/Inf to 0, beyond +-1 clamped), gives the text of the
 * same audio with the bad samples fixed by hand, counts them in the stats
 * property and posts one warning naming them. */
#include <gst/check/gstcheck.h>
#include <math.h>

#include "wt-util.h"

static GstHarness *
harness_new (void)
{
  GstHarness *h = gst_harness_new_with_element (
      gst_element_factory_make ("whispersink", NULL), "sink", "src");
  gst_harness_set_live (h, FALSE); /* a file: nothing dropped for time */
  gst_harness_set_src_caps_str (h, WT_CAPS_F32);
  return h;
}

/* The joined text of every buffer up to EOS. */
static gchar *
transcribe (GstHarness *h, const float *pcm, gsize n)
{
  fail_unless_equals_int (wt_push_pcm (h, pcm, n, 0, 1600, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  return wt_pull_joined_text (h);
}

GST_START_TEST (test_hostile_samples)
{
  gsize n;
  float *clean = wt_load_jfk (&n);
  float *hostile = g_memdup2 (clean, n * sizeof (float));
  float *fixed = g_memdup2 (clean, n * sizeof (float));
  GstHarness *h;
  GstBus *bus;
  GstMessage *m;
  gchar *want, *got;
  guint warnings = 0;

  hostile[16000] = INFINITY;
  hostile[48000] = NAN;
  hostile[80000] = 3e19f;
  hostile[80001] = -1.5f;
  fixed[16000] = 0.0f;
  fixed[48000] = 0.0f;
  fixed[80000] = 1.0f;
  fixed[80001] = -1.0f;

  h = harness_new ();
  want = transcribe (h, fixed, n);
  fail_unless_equals_uint64 (wt_stats_u64 (h->element, "samples-non-finite"), 0);
  gst_harness_teardown (h);

  h = harness_new ();
  bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  got = transcribe (h, hostile, n);
  GST_INFO ("fixed by hand: %s", want);
  GST_INFO ("fixed by the element: %s", got);
  fail_unless (strstr (got, "!!!") == NULL, "bad samples ruined the text: %s", got);
  fail_unless_equals_string (got, want);
  fail_unless_equals_uint64 (wt_stats_u64 (h->element, "samples-non-finite"), 2);
  fail_unless_equals_uint64 (wt_stats_u64 (h->element, "samples-clipped"), 2);

  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING))) {
    GError *err = NULL;
    const GstStructure *details = NULL;
    gst_message_parse_warning (m, &err, NULL);
    gst_message_parse_warning_details (m, &details);
    GST_INFO ("warning: %s", err->message);
    fail_unless (details != NULL);
    fail_unless_equals_string (gst_structure_get_string (details, "reason"),
        "invalid-samples");
    fail_unless (strstr (err->message, "not finite") != NULL);
    warnings++;
    g_error_free (err);
    gst_message_unref (m);
  }
  /* all four are within 10 s of audio: one warning */
  fail_unless_equals_int (warnings, 1);

  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  g_free (want);
  g_free (got);
  g_free (clean);
  g_free (hostile);
  g_free (fixed);
}
GST_END_TEST;

static Suite *
samples_suite (void)
{
  Suite *s = suite_create ("whispersink-samples");
  TCase *tc = tcase_create ("samples");
  tcase_set_timeout (tc, 300);
  tcase_add_test (tc, test_hostile_samples);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (samples);
