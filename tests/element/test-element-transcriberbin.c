/* test-element-transcriberbin: whispersink against what gst-plugins-rs'
 * transcriberbin does with a transcriber (Debian does not package it; its
 * source: https://gitlab.freedesktop.org/gstreamer/gst-plugins-rs,
 * video/closedcaption/src/transcriberbin/imp.rs):
 *  - it needs a static pad "src", the guint ms properties latency,
 *    lateness and translate-latency (checked with their types), and sets
 *    the string property language-code unconditionally, also in PLAYING,
 *    with values like "en-US";
 *  - for each translation it requests a pad "translate_src_%u" and sets
 *    its pad property language-code;
 *  - before building its graph it links a live fakesrc, sets PAUSED and
 *    queries LATENCY on every src pad before any data flows;
 *  - a transcriber that posts an ERROR is torn down (set to NULL) while the
 *    bin goes on in passthrough.
 * And the translation pads themselves: live jfk.wav (paced) gives English
 * text on the src pad and on translate_src_0 (tiny.en is English-only: its
 * translation is the transcript), with one encoder pass per call: the
 * pad's decode takes the transcript's encoder output (stats
 * encoder-passes, encoder-shared). */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/app/gstappsrc.h>

#include "wt-util.h"

#define LATENCY_MS 3000
#define TRANSLATE_LATENCY_MS 500

static void
check_property (GstElement *e, const gchar *name, GType type)
{
  GParamSpec *p = g_object_class_find_property (G_OBJECT_GET_CLASS (e), name);

  fail_unless (p != NULL, "no property %s", name);
  fail_unless (G_PARAM_SPEC_VALUE_TYPE (p) == type, "%s is a %s, not a %s", name,
      g_type_name (G_PARAM_SPEC_VALUE_TYPE (p)), g_type_name (type));
  fail_unless (p->flags & G_PARAM_WRITABLE, "%s is not writable", name);
}

/* The warnings posted on `bus` whose details have reason=`reason`. */
static guint
count_warnings (GstBus *bus, const gchar *reason)
{
  GstMessage *m;
  guint n = 0;

  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING))) {
    const GstStructure *d = NULL;
    gst_message_parse_warning_details (m, &d);
    if (d && g_strcmp0 (gst_structure_get_string (d, "reason"), reason) == 0)
      n++;
    gst_message_unref (m);
  }
  return n;
}

GST_START_TEST (test_contract)
{
  GstElement *e = gst_element_factory_make ("whispersink", NULL);
  GstBus *bus = gst_bus_new ();
  GstPadTemplate *t;
  GstPad *pad, *src;
  gchar *code = NULL;

  fail_unless (e != NULL);
  gst_element_set_bus (e, bus);
  check_property (e, "latency", G_TYPE_UINT);
  check_property (e, "lateness", G_TYPE_UINT);
  check_property (e, "translate-latency", G_TYPE_UINT);
  check_property (e, "language-code", G_TYPE_STRING);

  src = gst_element_get_static_pad (e, "src");
  fail_unless (src != NULL);
  gst_object_unref (src);
  t = gst_element_class_get_pad_template (GST_ELEMENT_GET_CLASS (e), "translate_src_%u");
  fail_unless (t != NULL);
  fail_unless_equals_int (GST_PAD_TEMPLATE_PRESENCE (t), GST_PAD_REQUEST);
  fail_unless_equals_int (GST_PAD_TEMPLATE_DIRECTION (t), GST_PAD_SRC);

  pad = gst_element_request_pad_simple (e, "translate_src_%u");
  fail_unless (pad != NULL);
  fail_unless_equals_string (GST_PAD_NAME (pad), "translate_src_0");
  g_object_get (pad, "language-code", &code, NULL);
  fail_unless_equals_string (code, "en");
  g_free (code);
  g_object_set (pad, "language-code", "en-US", NULL);
  g_object_get (pad, "language-code", &code, NULL);
  fail_unless_equals_string (code, "en-US");
  g_free (code);
  /* Whisper translates into English only: refused, with a warning */
  g_object_set (pad, "language-code", "fr-FR", NULL);
  g_object_get (pad, "language-code", &code, NULL);
  fail_unless_equals_string (code, "en-US");
  g_free (code);
  fail_unless_equals_int (count_warnings (bus, "language-invalid"), 1);

  /* a second translation pad, and both released */
  GstPad *pad2 = gst_element_request_pad_simple (e, "translate_src_%u");
  fail_unless_equals_string (GST_PAD_NAME (pad2), "translate_src_1");
  gst_element_release_request_pad (e, pad2);
  gst_object_unref (pad2);
  gst_element_release_request_pad (e, pad);
  gst_object_unref (pad);
  fail_unless (gst_element_get_static_pad (e, "translate_src_0") == NULL);

  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  gst_object_unref (e);
}
GST_END_TEST;

static void
query_latency (GstElement *e, const gchar *pad_name, GstClockTime want_min)
{
  GstPad *pad = gst_element_get_static_pad (e, pad_name);
  GstQuery *q = gst_query_new_latency ();
  gboolean live = FALSE;
  GstClockTime min = 0, max = 0;

  fail_unless (pad != NULL, "no pad %s", pad_name);
  fail_unless (gst_pad_query (pad, q), "%s did not answer LATENCY in PAUSED", pad_name);
  gst_query_parse_latency (q, &live, &min, &max);
  fail_unless (live, "%s: not live", pad_name);
  fail_unless_equals_uint64 (min, want_min);
  gst_query_unref (q);
  gst_object_unref (pad);
}

/* transcriberbin's query_latency: a live fakesrc, PAUSED, every src pad. */
GST_START_TEST (test_latency_in_paused)
{
  GstElement *pipeline, *fakesrc, *e;
  GstPad *tpad;
  GstStateChangeReturn sret;

  pipeline = gst_pipeline_new (NULL);
  fakesrc = gst_element_factory_make ("fakesrc", NULL);
  e = gst_element_factory_make ("whispersink", NULL);
  g_object_set (fakesrc, "is-live", TRUE, NULL);
  g_object_set (e, "latency", LATENCY_MS, "translate-latency", TRANSLATE_LATENCY_MS, NULL);
  gst_bin_add_many (GST_BIN (pipeline), fakesrc, e, NULL);
  fail_unless (gst_element_link_pads (fakesrc, "src", e, "sink"));
  tpad = gst_element_request_pad_simple (e, "translate_src_%u");
  fail_unless (tpad != NULL);

  sret = gst_element_set_state (pipeline, GST_STATE_PAUSED);
  fail_unless (sret == GST_STATE_CHANGE_NO_PREROLL || sret == GST_STATE_CHANGE_SUCCESS,
      "PAUSED: %s", gst_element_state_change_return_get_name (sret));
  query_latency (e, "src", LATENCY_MS * GST_MSECOND);
  query_latency (e, "translate_src_0", (LATENCY_MS + TRANSLATE_LATENCY_MS) * GST_MSECOND);

  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_element_release_request_pad (e, tpad);
  gst_object_unref (tpad);
  gst_object_unref (pipeline);
}
GST_END_TEST;

/* transcriberbin sets language-code when its configuration changes, in
 * PLAYING too: an English tag is taken, a language the English-only model
 * lacks is refused with a warning and the element goes on. */
GST_START_TEST (test_language_code_in_playing)
{
  GstHarness *h;
  GstBus *bus = gst_bus_new ();
  gchar *code = NULL;

  h = wt_harness_new (TRUE, "latency=3000");
  gst_element_set_bus (h->element, bus);
  gst_harness_play (h);
  g_object_set (h->element, "language-code", "en-US", NULL);
  g_object_get (h->element, "language-code", &code, NULL);
  fail_unless_equals_string (code, "en-US");
  g_free (code);
  g_object_set (h->element, "language-code", "de-DE", NULL);
  g_object_get (h->element, "language-code", &code, NULL);
  fail_unless_equals_string (code, "en-US");
  g_free (code);
  fail_unless_equals_int (count_warnings (bus, "language-invalid"), 1);
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR) == NULL);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* An error leaves the element in a state the bin can tear down. */
GST_START_TEST (test_error_teardown)
{
  GstElement *e = gst_element_factory_make ("whispersink", NULL);
  GstBus *bus = gst_bus_new ();
  GstMessage *m;
  GstElement *pipeline, *src;

  /* a model that does not exist: READY fails with an error naming it */
  gst_element_set_bus (e, bus);
  g_object_set (e, "model", "/nonexistent/whisper-model", NULL);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_READY),
      GST_STATE_CHANGE_FAILURE);
  m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (m != NULL);
  {
    GError *err = NULL;
    gchar *dbg = NULL;
    gst_message_parse_error (m, &err, &dbg);
    fail_unless (strstr (err->message, "/nonexistent/whisper-model")
        || (dbg && strstr (dbg, "/nonexistent/whisper-model")), "error: %s", err->message);
    g_error_free (err);
    g_free (dbg);
  }
  gst_message_unref (m);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  gst_object_unref (e);

  /* audio it cannot take (48 kHz): an error while PLAYING, then NULL */
  pipeline = gst_parse_launch ("appsrc name=a is-live=true format=time "
      "caps=audio/x-raw,format=S16LE,rate=48000,channels=1,layout=interleaved ! "
      "whispersink name=w", NULL);
  fail_unless (pipeline != NULL);
  bus = gst_element_get_bus (pipeline);
  src = gst_bin_get_by_name (GST_BIN (pipeline), "a");
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  {
    GstBuffer *buf = gst_buffer_new_allocate (NULL, 9600, NULL);
    gst_buffer_memset (buf, 0, 0, 9600);
    GST_BUFFER_PTS (buf) = 0;
    GST_BUFFER_DURATION (buf) = 100 * GST_MSECOND;
    gst_app_src_push_buffer (GST_APP_SRC (src), buf);
  }
  gst_object_unref (src);
  m = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND, GST_MESSAGE_ERROR);
  fail_unless (m != NULL, "no error for 48 kHz input");
  {
    GError *err = NULL;
    gchar *dbg = NULL;
    gst_message_parse_error (m, &err, &dbg);
    fail_unless (dbg && strstr (dbg, "not-negotiated"), "error: %s (%s)", err->message,
        dbg ? dbg : "");
    g_error_free (err);
    g_free (dbg);
  }
  gst_message_unref (m);
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}
GST_END_TEST;

/* Live jfk.wav, paced (each 100-ms buffer once the element has handled
 * the previous one): text on src and on translate_src_0. */
GST_START_TEST (test_translate_pad_live)
{
  GstHarness *h, *ht;
  gsize n;
  float *pcm;
  GString *src_text = g_string_new (NULL), *tr_text = g_string_new (NULL);
  const gchar *jfk = "And so my fellow Americans, ask not what your country can do for "
      "you, ask what you can do for your country.";
  gboolean tagged = FALSE;
  guint64 passes, shared;
  GstEvent *ev;
  GstBuffer *b;

  pcm = wt_load_jfk (&n);
  h = wt_harness_new (TRUE, "latency=3000 beam-size=1");
  ht = gst_harness_new_with_element (h->element, NULL, "translate_src_%u");
  gst_harness_set_live (h, TRUE);
  gst_harness_play (ht);
  for (gsize off = 0; off < n; off += WHISPER_SAMPLE_RATE / 10) {
    gsize k = MIN ((gsize) WHISPER_SAMPLE_RATE / 10, n - off);
    fail_unless_equals_int (wt_push_pcm (h, pcm + off, k,
            gst_util_uint64_scale (off, GST_SECOND, WHISPER_SAMPLE_RATE), k, off == 0),
        GST_FLOW_OK);
    fail_unless (wt_barrier (h, "test-barrier"));
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  {
    g_autoptr (GPtrArray) texts = g_ptr_array_new_with_free_func (g_free);
    g_autoptr (GPtrArray) bufs = wt_pull_until_eos (h, texts);
    for (guint i = 0; i < texts->len; i++)
      g_string_append_printf (src_text, "%s%s", i ? " " : "",
          (gchar *) g_ptr_array_index (texts, i));
    g_ptr_array_set_free_func (bufs, (GDestroyNotify) gst_buffer_unref);
  }
  /* the translation pad: its buffers, an "en" tag, then EOS */
  while ((ev = gst_harness_pull_event (ht))) {
    gboolean eos = GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
    if (GST_EVENT_TYPE (ev) == GST_EVENT_TAG) {
      GstTagList *tags;
      gchar *lang = NULL;
      gst_event_parse_tag (ev, &tags);
      if (gst_tag_list_get_string (tags, GST_TAG_LANGUAGE_CODE, &lang))
        tagged |= g_strcmp0 (lang, "en") == 0;
      g_free (lang);
    }
    gst_event_unref (ev);
    if (eos)
      break;
  }
  while ((b = gst_harness_try_pull (ht))) {
    gchar *t = wt_buffer_text (b);
    g_string_append_printf (tr_text, "%s%s", tr_text->len ? " " : "", t);
    g_free (t);
    gst_buffer_unref (b);
  }
  fail_unless (tagged, "no English language tag on translate_src_0");
  GST_INFO ("src: %s", src_text->str);
  GST_INFO ("translate_src_0: %s", tr_text->str);
  fail_unless (wt_wer (jfk, src_text->str) <= 0.2, "src: %s", src_text->str);
  fail_unless (wt_wer (jfk, tr_text->str) <= 0.2, "translate_src_0: %s", tr_text->str);
  /* the same input and options but the task: the same tokens */
  fail_unless_equals_string (tr_text->str, src_text->str);
  /* every window of the pad's took the transcript's pass: as many passes
   * as without the pad */
  passes = wt_stats_u64 (h->element, "encoder-passes");
  shared = wt_stats_u64 (h->element, "encoder-shared");
  GST_INFO ("encoder passes %" G_GUINT64_FORMAT ", shared %" G_GUINT64_FORMAT, passes, shared);
  fail_unless (shared > 0);
  fail_unless_equals_uint64 (passes, shared);
  g_string_free (src_text, TRUE);
  g_string_free (tr_text, TRUE);
  gst_harness_teardown (ht);
  gst_harness_teardown (h);
  g_free (pcm);
}
GST_END_TEST;

static Suite *
transcriberbin_suite (void)
{
  Suite *s = suite_create ("whispersink-transcriberbin");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 600);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_contract);
  tcase_add_test (tc, test_latency_in_paused);
  tcase_add_test (tc, test_language_code_in_playing);
  tcase_add_test (tc, test_error_teardown);
  tcase_add_test (tc, test_translate_pad_live);
  return s;
}

int
main (int argc, char **argv)
{
  return wt_run_suite_with_model (argc, argv, transcriberbin_suite,
      "whispersink-transcriberbin", __FILE__);
}
