/* test-element-flow.c: whispersink where something else holds data back.
 *
 * Preroll: beside a branch that plays the audio in real time (tee), the
 * text branch must let its sink preroll before there is any text, in both
 * offline modes; the SRT file stays what the plain pipeline writes.
 *
 * None of these checks measure time: a pipeline that would hang gets a
 * generous watchdog that fails the test with a message saying what hung. */
#include <gst/check/gstcheck.h>
#include <glib/gstdio.h>
#include <string.h>

#include "wt-util.h"

/* Watchdog for anything that would otherwise hang for ever. */
#define WATCHDOG_S 120

static gchar *tmpdir;

static const gchar *
state_name (GstState s)
{
  return gst_element_state_get_name (s);
}

/* Fails unless `p` completes its state change within the watchdog. */
static void
expect_state_reached (GstElement *p, const gchar *what)
{
  GstState state = GST_STATE_VOID_PENDING, pending = GST_STATE_VOID_PENDING;
  GstStateChangeReturn ret = gst_element_get_state (p, &state, &pending,
      WATCHDOG_S * GST_SECOND);

  fail_unless (ret == GST_STATE_CHANGE_SUCCESS || ret == GST_STATE_CHANGE_NO_PREROLL,
      "%s: the state change did not complete within %d s (state %s, pending %s): "
      "a sink never got anything to preroll on", what, WATCHDOG_S, state_name (state),
      state_name (pending));
}

/* Pops bus messages until EOS; fails on an error, or when no EOS comes
 * within the watchdog. */
static void
wait_eos (GstElement *p, const gchar *what)
{
  GstBus *bus = gst_element_get_bus (p);
  gint64 deadline = g_get_monotonic_time () + WATCHDOG_S * G_TIME_SPAN_SECOND;

  for (;;) {
    GstMessage *m = gst_bus_timed_pop_filtered (bus, 100 * GST_MSECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR);

    if (m && GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR) {
      GError *err = NULL;
      gchar *debug = NULL;
      gst_message_parse_error (m, &err, &debug);
      fail ("%s: error from %s: %s (%s)", what, GST_OBJECT_NAME (GST_MESSAGE_SRC (m)),
          err->message, debug);
    }
    if (m) {
      gst_message_unref (m);
      break;
    }
    if (g_get_monotonic_time () > deadline) {
      GstState state, pending;
      gst_element_get_state (p, &state, &pending, 0);
      fail ("%s: no EOS within %d s (pipeline %s, pending %s): the pipeline hangs",
          what, WATCHDOG_S, state_name (state), state_name (pending));
    }
  }
  gst_object_unref (bus);
}

static GstElement *
launch (const gchar *desc)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err);

  fail_unless (p != NULL, "%s: %s", desc, err ? err->message : "?");
  return p;
}

static void
stop (GstElement *p)
{
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (p);
}

static gchar *
read_file (const gchar *path)
{
  gchar *contents = NULL;

  fail_unless (g_file_get_contents (path, &contents, NULL, NULL), "cannot read %s", path);
  return contents;
}

/* ------------------------------------------------------------------------ */
/* Preroll beside a real-time branch */

static gchar *
decoded_jfk (void)
{
  g_autofree gchar *path = wt_data_path ("jfk.wav");
  return g_strdup_printf ("filesrc location=\"%s\" ! decodebin ! audioconvert ! "
      "audioresample", path);
}

/* The SRT file of the plain pipeline, the reference. */
static gchar *
plain_srt (const gchar *mode)
{
  g_autofree gchar *src = decoded_jfk ();
  g_autofree gchar *path = g_build_filename (tmpdir, "plain.srt", NULL);
  g_autofree gchar *desc = g_strdup_printf ("%s ! whispersink offline-mode=%s ! srtenc ! "
      "filesink location=\"%s\"", src, mode, path);
  GstElement *p = launch (desc);
  gchar *srt;

  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  wait_eos (p, desc);
  stop (p);
  srt = read_file (path);
  g_unlink (path);
  fail_unless (strstr (srt, "ask not what your country can do for you") != NULL,
      "plain pipeline: %s", srt);
  return srt;
}

/* The captioning pipeline of the issue: one branch plays the audio (the
 * sink synchronises to the clock), the other writes subtitles. */
static void
check_tee (const gchar *mode)
{
  g_autofree gchar *src = decoded_jfk ();
  g_autofree gchar *path = g_build_filename (tmpdir, "tee.srt", NULL);
  g_autofree gchar *desc = g_strdup_printf ("%s ! tee name=t "
      "t. ! queue ! fakesink sync=true "
      "t. ! queue ! whispersink offline-mode=%s ! srtenc ! filesink location=\"%s\"",
      src, mode, path);
  g_autofree gchar *want = plain_srt (mode);
  g_autofree gchar *got = NULL;
  GstElement *p = launch (desc);

  GST_INFO ("%s", desc);
  fail_unless (gst_element_set_state (p, GST_STATE_PAUSED) != GST_STATE_CHANGE_FAILURE);
  expect_state_reached (p, "PAUSED (preroll)");
  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  expect_state_reached (p, "PLAYING");
  wait_eos (p, desc);
  stop (p);

  /* GAPs make no cues: the file is the plain pipeline's. */
  got = read_file (path);
  GST_INFO ("SRT:\n%s", got);
  fail_unless_equals_string (got, want);
  g_unlink (path);
}

GST_START_TEST (test_tee_exact_prerolls)
{
  check_tee ("exact");
}
GST_END_TEST;

GST_START_TEST (test_tee_windowed_prerolls)
{
  check_tee ("windowed");
}
GST_END_TEST;

/* ------------------------------------------------------------------------ */

static Suite *
whispersink_flow_suite (void)
{
  Suite *s = suite_create ("whispersink-flow");
  TCase *tc = tcase_create ("flow");

  tcase_set_timeout (tc, 400);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_tee_exact_prerolls);
  tcase_add_test (tc, test_tee_windowed_prerolls);
  return s;
}

int
main (int argc, char **argv)
{
  int ret;

  gst_check_init (&argc, &argv);
  tmpdir = g_dir_make_tmp ("whispersink-flow-XXXXXX", NULL);
  ret = gst_check_run_suite (whispersink_flow_suite (), "whispersink-flow", __FILE__);
  g_rmdir (tmpdir);
  return ret;
}
