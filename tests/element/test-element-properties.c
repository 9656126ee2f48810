/* test-element-properties: properties whose effect a user cannot see
 * otherwise.
 *
 * - condition-on-previous-text=false: a file's windows are decoded without
 *   the previous text as prompt. On a 178-s clip whose conditioned
 *   transcript falls into a repetition loop (tests/reference/clips/
 *   max-length-loop.flac), the element's text equals the engine's own run
 *   with condition_on_previous_text off, and differs from the default's.
 * - channel: one channel of a stereo stream, or their mean.
 * - An engine property (model, device, threads, encoder-context) set while
 *   PLAYING is ignored with a bus warning naming it (it used to be dropped
 *   with a debug line only). */
#include <gst/check/gstcheck.h>

#include "wt-util.h"

static gchar *
loop_clip_path (void)
{
  return g_build_filename (SOURCE_ROOT, "tests", "reference", "clips", "max-length-loop.flac",
      NULL);
}

/* The engine's own text of pcm with conditioning on or off. */
static gchar *
engine_text (const float *pcm, gsize n, gboolean condition)
{
  WhisperEngineOptions eo;
  WhisperDecodeOptions dopt;
  GError *err = NULL;
  GPtrArray *segments = NULL;
  GString *text = g_string_new (NULL);
  WhisperEngine *engine;
  WhisperStream *stream;
  guint i;

  whisper_engine_options_init (&eo);
  eo.device = WHISPER_DEVICE_CPU;
  engine = whisper_engine_new (&eo, &err);
  fail_unless (engine != NULL, "engine: %s", err ? err->message : "?");
  stream = whisper_stream_new (engine, &err);
  fail_unless (stream != NULL);
  whisper_decode_options_init (&dopt);
  dopt.condition_on_previous_text = condition;
  whisper_stream_set_options (stream, &dopt);
  fail_unless (whisper_stream_transcribe (stream, pcm, n, NULL, NULL, &segments, &err));
  for (i = 0; i < segments->len; i++) {
    const WhisperSegment *s = g_ptr_array_index (segments, i);
    gchar *t = g_strstrip (g_strdup (s->text));
    if (*t)
      g_string_append_printf (text, "%s%s", text->len ? " " : "", t);
    g_free (t);
  }
  g_ptr_array_unref (segments);
  whisper_stream_free (stream);
  whisper_engine_unref (engine);
  return g_string_free (text, FALSE);
}

static gchar *
element_text (const float *pcm, gsize n, gboolean condition)
{
  GstHarness *h = gst_harness_new_with_element (
      gst_element_factory_make ("whispersink", NULL), "sink", "src");
  gchar *text;

  g_object_set (h->element, "condition-on-previous-text", condition, "beam-size", 1,
      "temperatures", "0", NULL);  /* WT_GREEDY */
  gst_harness_set_live (h, FALSE);
  gst_harness_set_src_caps_str (h, WT_CAPS_F32);
  fail_unless_equals_int (wt_push_pcm (h, pcm, n, 0, 16000, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  text = wt_pull_joined_text (h);
  gst_harness_teardown (h);
  return text;
}

GST_START_TEST (test_condition_off)
{
  gchar *path = loop_clip_path ();
  GError *err = NULL;
  gsize n;
  float *pcm = whisper_audio_load_file (path, -1, &n, &err);
  gchar *engine_off, *engine_on, *element_off, *element_on;

  fail_unless (pcm != NULL, "%s: %s", path, err ? err->message : "?");
  engine_off = engine_text (pcm, n, FALSE);
  engine_on = engine_text (pcm, n, TRUE);
  /* the clip is chosen so that conditioning matters */
  fail_if (g_str_equal (engine_off, engine_on), "conditioning changes nothing on %s", path);

  element_off = element_text (pcm, n, FALSE);
  element_on = element_text (pcm, n, TRUE);
  fail_unless_equals_string (element_off, engine_off);
  fail_unless_equals_string (element_on, engine_on);

  g_free (engine_off);
  g_free (engine_on);
  g_free (element_off);
  g_free (element_on);
  g_free (pcm);
  g_free (path);
}
GST_END_TEST;

GST_START_TEST (test_engine_property_while_playing)
{
  GstElement *pipeline = gst_parse_launch (
      "audiotestsrc is-live=true wave=silence ! audio/x-raw,rate=16000,channels=1,"
      "format=F32LE ! whispersink name=w threads=1 " WT_GREEDY " ! fakesink", NULL);
  GstElement *w = gst_bin_get_by_name (GST_BIN (pipeline), "w");
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *m;
  gint threads = -1;
  const GstStructure *details = NULL;
  GError *err = NULL;

  fail_unless (pipeline != NULL);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  fail_unless_equals_int (gst_element_get_state (pipeline, NULL, NULL, 60 * GST_SECOND),
      GST_STATE_CHANGE_SUCCESS);

  g_object_set (w, "threads", 2, NULL);
  g_object_get (w, "threads", &threads, NULL);
  fail_unless_equals_int (threads, 1);

  m = gst_bus_timed_pop_filtered (bus, 10 * GST_SECOND, GST_MESSAGE_WARNING);
  fail_unless (m != NULL, "no warning for a property change that is ignored");
  gst_message_parse_warning (m, &err, NULL);
  gst_message_parse_warning_details (m, &details);
  GST_INFO ("warning: %s", err->message);
  fail_unless (strstr (err->message, "'threads'") != NULL);
  fail_unless (details != NULL);
  fail_unless_equals_string (gst_structure_get_string (details, "reason"), "property-ignored");
  g_error_free (err);
  gst_message_unref (m);

  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (w);
  gst_object_unref (pipeline);
}
GST_END_TEST;

/* The element's text of interleaved F32 stereo with channel = `channel`. */
static gchar *
element_stereo_text (const float *stereo, gsize frames, gint channel)
{
  GstHarness *h = gst_harness_new_with_element (
      gst_element_factory_make ("whispersink", NULL), "sink", "src");
  gchar *text;
  gsize at, chunk = 1600;

  g_object_set (h->element, "channel", channel, "beam-size", 1, "temperatures", "0", NULL);
  gst_harness_set_live (h, FALSE);
  gst_harness_set_src_caps_str (h, "audio/x-raw, format=F32LE, rate=16000, channels=2, "
      "layout=interleaved");
  for (at = 0; at < frames; at += chunk) {
    gsize n = MIN (chunk, frames - at);
    GstBuffer *b = gst_buffer_new_memdup (stereo + 2 * at, 2 * n * sizeof (float));
    GST_BUFFER_PTS (b) = gst_util_uint64_scale_int (at, GST_SECOND, 16000);
    GST_BUFFER_DURATION (b) = gst_util_uint64_scale_int (n, GST_SECOND, 16000);
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  text = wt_pull_joined_text (h);
  gst_harness_teardown (h);
  return text;
}

/* channel=0 and channel=1 of stereo_diarization.wav (a different speaker
 * on each side) give the engine's text of that channel alone; the default
 * mixes them, as the engine's -1 does. */
GST_START_TEST (test_channel)
{
  gchar *path = wt_data_path ("stereo_diarization.wav");
  GError *err = NULL;
  gsize n_left, n_right, n_mix, i;
  float *left = whisper_audio_load_file (path, 0, &n_left, &err);
  float *right = whisper_audio_load_file (path, 1, &n_right, &err);
  float *mix = whisper_audio_load_file (path, -1, &n_mix, &err);
  float *stereo;
  gint c;

  fail_unless (left && right && mix, "%s: %s", path, err ? err->message : "?");
  fail_unless_equals_uint64 (n_left, n_right);
  stereo = g_new (float, 2 * n_left);
  for (i = 0; i < n_left; i++) {
    stereo[2 * i] = left[i];
    stereo[2 * i + 1] = right[i];
  }
  for (c = -1; c <= 1; c++) {
    const float *one = c < 0 ? mix : c == 0 ? left : right;
    gchar *want = engine_text (one, n_left, TRUE);
    gchar *got = element_stereo_text (stereo, n_left, c);
    GST_INFO ("channel %d: %s", c, got);
    fail_unless_equals_string (got, want);
    g_free (want);
    g_free (got);
  }
  g_free (stereo);
  g_free (left);
  g_free (right);
  g_free (mix);
  g_free (path);
}
GST_END_TEST;

static Suite *
properties_suite (void)
{
  Suite *s = suite_create ("whispersink-properties");
  TCase *tc = tcase_create ("properties");
  tcase_set_timeout (tc, 600);
  tcase_add_test (tc, test_engine_property_while_playing);
  tcase_add_test (tc, test_condition_off);
  tcase_add_test (tc, test_channel);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (properties);
