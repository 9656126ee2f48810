/* test-element-timestamps.c: whispersink's text in running time across
 * segments, on real speech (jfk.wav, whose transcript the engine gives
 * directly).
 *
 * srtenc and webvttenc write each buffer's PTS as the cue time and ignore
 * the segment, so the text must leave with PTS = running time:
 *  - `concat` of two files (the second one's segment starts at 0 with base
 *    = the first file's duration): the second file's cues follow the
 *    first's in the SRT and WebVTT files, and the running time of every
 *    text buffer at an appsink (what textoverlay and muxers use) is the
 *    audio's;
 *  - single segments through a harness: a non-zero base, a seek segment
 *    (start = time = 5 s), a seek with a base, and the lateness shift:
 *    PTS, the output segment's running time and stream time, and the bus
 *    message fields.
 * No assertion depends on how long anything takes. */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/app/gstappsink.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

#include "wt-util.h"

static float *jfk;
static gsize jfk_n;
static GArray *ref;           /* engine segments of jfk.wav */
static GstClockTime jfk_duration;
static gchar *tmpdir;

#define MS100 (WHISPER_SAMPLE_RATE / 10)

/* ------------------------------------------------------------------------ */
/* Subtitle files */

typedef struct {
  GstClockTime start, end;
  gchar *text;
} Cue;

static void
cue_clear (gpointer p)
{
  g_free (((Cue *) p)->text);
}

/* The cues of an SRT (`sep` ',') or WebVTT (`sep` '.') file: every line
 * "HH:MM:SS<sep>mmm --> HH:MM:SS<sep>mmm" and the text line after it. */
static GArray *
read_cues (const gchar *path, gchar sep)
{
  g_autofree gchar *contents = NULL;
  g_auto (GStrv) lines = NULL;
  GArray *cues = g_array_new (FALSE, TRUE, sizeof (Cue));
  gchar fmt[64];
  guint i;

  g_array_set_clear_func (cues, cue_clear);
  fail_unless (g_file_get_contents (path, &contents, NULL, NULL), "cannot read %s", path);
  GST_INFO ("%s:\n%s", path, contents);
  g_snprintf (fmt, sizeof (fmt), "%%u:%%u:%%u%c%%u --> %%u:%%u:%%u%c%%u", sep, sep);
  lines = g_strsplit (contents, "\n", -1);
  for (i = 0; lines[i]; i++) {
    guint h1, m1, s1, ms1, h2, m2, s2, ms2;
    Cue c;

    if (sscanf (lines[i], fmt, &h1, &m1, &s1, &ms1, &h2, &m2, &s2, &ms2) != 8)
      continue;
    fail_unless (lines[i + 1] != NULL, "%s: cue without text", path);
    c.start = ((h1 * 60 + m1) * 60 + s1) * GST_SECOND + ms1 * GST_MSECOND;
    c.end = ((h2 * 60 + m2) * 60 + s2) * GST_SECOND + ms2 * GST_MSECOND;
    c.text = g_strstrip (g_strdup (lines[i + 1]));
    g_array_append_val (cues, c);
  }
  return cues;
}

/* The cues are the engine's segments of jfk.wav twice, the second time
 * `offset` later (SRT and WebVTT keep milliseconds). */
static void
check_cues_twice (GArray *cues, GstClockTime offset)
{
  guint i;

  fail_unless_equals_int (cues->len, 2 * ref->len);
  for (i = 0; i < cues->len; i++) {
    Cue *c = &g_array_index (cues, Cue, i);
    WtSegment *s = &g_array_index (ref, WtSegment, i % ref->len);
    GstClockTime shift = i < ref->len ? 0 : offset;

    fail_unless_equals_uint64 (c->start / GST_MSECOND, (shift + s->start) / GST_MSECOND);
    fail_unless_equals_uint64 (c->end / GST_MSECOND, (shift + s->end) / GST_MSECOND);
    fail_unless_equals_string (c->text, s->text);
  }
}

/* ------------------------------------------------------------------------ */
/* concat */

typedef struct {
  GMutex lock;
  GArray *running;     /* running time of each text buffer's start */
  GArray *running_end; /* ... and end */
} Collected;

static GstFlowReturn
on_new_sample (GstAppSink *sink, gpointer user_data)
{
  Collected *c = user_data;
  GstSample *sample = gst_app_sink_pull_sample (sink);
  GstBuffer *b = gst_sample_get_buffer (sample);
  const GstSegment *seg = gst_sample_get_segment (sample);
  GstClockTime rt, rt_end;

  rt = gst_segment_to_running_time (seg, GST_FORMAT_TIME, GST_BUFFER_PTS (b));
  rt_end = gst_segment_to_running_time (seg, GST_FORMAT_TIME,
      GST_BUFFER_PTS (b) + GST_BUFFER_DURATION (b));
  g_mutex_lock (&c->lock);
  g_array_append_val (c->running, rt);
  g_array_append_val (c->running_end, rt_end);
  g_mutex_unlock (&c->lock);
  gst_sample_unref (sample);
  return GST_FLOW_OK;
}

/* Runs `p` to EOS, failing on an error or after 180 s without messages. */
static void
play_to_eos (GstElement *p)
{
  GstBus *bus = gst_element_get_bus (p);
  gboolean done = FALSE;

  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  while (!done) {
    GstMessage *m = gst_bus_timed_pop_filtered (bus, 180 * GST_SECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    fail_unless (m != NULL, "timeout waiting for EOS");
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR) {
      GError *err = NULL;
      gchar *debug = NULL;
      gst_message_parse_error (m, &err, &debug);
      fail ("error: %s (%s)", err->message, debug);
    }
    done = TRUE;
    gst_message_unref (m);
  }
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (bus);
}

GST_START_TEST (test_concat_cues_follow)
{
  g_autofree gchar *jfk_path = wt_data_path ("jfk.wav");
  g_autofree gchar *srt = g_build_filename (tmpdir, "concat.srt", NULL);
  g_autofree gchar *vtt = g_build_filename (tmpdir, "concat.vtt", NULL);
  g_autofree gchar *desc = g_strdup_printf ("concat name=c ! audioconvert ! "
      "audioresample ! whispersink " WT_GREEDY " ! tee name=t "
      "t. ! queue ! srtenc ! filesink location=\"%s\" "
      "t. ! queue ! webvttenc ! filesink location=\"%s\" "
      "t. ! queue ! appsink name=s sync=false "
      "filesrc location=\"%s\" ! decodebin ! c. "
      "filesrc location=\"%s\" ! decodebin ! c.", srt, vtt, jfk_path, jfk_path);
  GstAppSinkCallbacks cb = { 0, };
  Collected c;
  GError *err = NULL;
  GstElement *p, *sink;
  GArray *cues;
  guint i;

  cb.new_sample = on_new_sample;
  g_mutex_init (&c.lock);
  c.running = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  c.running_end = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  p = gst_parse_launch (desc, &err);
  fail_unless (p != NULL, "%s: %s", desc, err ? err->message : "?");
  sink = gst_bin_get_by_name (GST_BIN (p), "s");
  gst_app_sink_set_callbacks (GST_APP_SINK (sink), &cb, &c, NULL);
  play_to_eos (p);
  gst_object_unref (sink);
  gst_object_unref (p);

  /* The second file's cues at (duration of the first + their time in it),
   * not again from 0. */
  cues = read_cues (srt, ',');
  check_cues_twice (cues, jfk_duration);
  g_array_unref (cues);
  cues = read_cues (vtt, '.');
  check_cues_twice (cues, jfk_duration);
  g_array_unref (cues);

  /* Running time (textoverlay, muxers): the audio's, to the nanosecond. */
  fail_unless_equals_int (c.running->len, 2 * ref->len);
  for (i = 0; i < c.running->len; i++) {
    WtSegment *s = &g_array_index (ref, WtSegment, i % ref->len);
    GstClockTime shift = i < ref->len ? 0 : jfk_duration;
    fail_unless_equals_uint64 (g_array_index (c.running, GstClockTime, i),
        shift + s->start);
    fail_unless_equals_uint64 (g_array_index (c.running_end, GstClockTime, i),
        shift + s->end);
  }
  g_array_unref (c.running);
  g_array_unref (c.running_end);
  g_mutex_clear (&c.lock);
  g_unlink (srt);
  g_unlink (vtt);
}
GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* Single segments through a harness */

typedef struct {
  const gchar *name;
  GstClockTime start, time, base;
  guint lateness_ms;
} SegmentCase;

static const SegmentCase segment_cases[] = {
  /* concat's second file: from 0, base = what went before */
  { "non-zero base", 0, 0, 7 * GST_SECOND, 0 },
  /* a flushing seek to 5 s: running time restarts at 0 */
  { "seek", 5 * GST_SECOND, 5 * GST_SECOND, 0, 0 },
  /* a segment seek after 2 s of playback */
  { "seek with base", 3 * GST_SECOND, 3 * GST_SECOND, 2 * GST_SECOND, 0 },
  /* the lateness shift moves the running time, not the PTS */
  { "lateness", 5 * GST_SECOND, 100 * GST_SECOND, 0, 500 },
};

GST_START_TEST (test_segment_running_time)
{
  const SegmentCase *sc = &segment_cases[__i__];
  GstElement *e = gst_element_factory_make ("whispersink", NULL);
  g_object_set (e, "beam-size", 1, "temperatures", "0", NULL);  /* WT_GREEDY */
  GstBus *bus = gst_bus_new ();
  GstSegment seg, out;
  GstHarness *h;
  GstEvent *ev;
  GstMessage *m;
  GPtrArray *bufs;
  GstClockTime shift = sc->lateness_ms * GST_MSECOND;
  gboolean have_out = FALSE;
  guint i, n_msgs = 0;

  GST_INFO ("case: %s", sc->name);
  g_object_set (e, "lateness", sc->lateness_ms, NULL);
  h = gst_harness_new_with_element (e, "sink", "src");
  gst_element_set_bus (e, bus);
  gst_object_unref (e);
  /* Non-live (exact mode): the text is the engine's, segment by segment. */
  gst_harness_set_live (h, FALSE);
  gst_harness_set_src_caps_str (h, WT_CAPS_F32);

  gst_segment_init (&seg, GST_FORMAT_TIME);
  seg.start = seg.position = sc->start;
  seg.time = sc->time;
  seg.base = sc->base;
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&seg)));
  fail_unless_equals_int (wt_push_pcm (h, jfk, jfk_n, sc->start, MS100, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, NULL);

  /* The last output segment (the harness's own default one goes first). */
  while ((ev = gst_harness_try_pull_event (h))) {
    if (GST_EVENT_TYPE (ev) == GST_EVENT_SEGMENT) {
      gst_event_copy_segment (ev, &out);
      have_out = TRUE;
    }
    gst_event_unref (ev);
  }
  fail_unless (have_out);
  GST_INFO ("output %" GST_SEGMENT_FORMAT, &out);

  fail_unless_equals_int (bufs->len, ref->len);
  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);
    WtSegment *s = &g_array_index (ref, WtSegment, i);
    GstClockTime pts = GST_BUFFER_PTS (b);

    /* PTS: the running time of the audio, as srtenc writes it. */
    fail_unless_equals_uint64 (pts, sc->base + s->start);
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (b), s->end - s->start);
    /* Running time: the audio's plus the lateness shift (textoverlay). */
    fail_unless_equals_uint64 (gst_segment_to_running_time (&out, GST_FORMAT_TIME, pts),
        sc->base + s->start + shift);
    /* Stream time: the audio's position in the input. */
    fail_unless_equals_uint64 (gst_segment_to_stream_time (&out, GST_FORMAT_TIME, pts),
        sc->time + s->start);
  }

  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT))) {
    const GstStructure *st = gst_message_get_structure (m);
    guint64 ts, rt, stt;

    if (gst_structure_has_name (st, "whisper-text")) {
      WtSegment *s = &g_array_index (ref, WtSegment, n_msgs);
      fail_unless (gst_structure_get (st, "timestamp", G_TYPE_UINT64, &ts,
              "running-time", G_TYPE_UINT64, &rt, "stream-time", G_TYPE_UINT64, &stt,
              NULL));
      fail_unless_equals_uint64 (ts, sc->base + s->start);
      fail_unless_equals_uint64 (rt, sc->base + s->start);
      fail_unless_equals_uint64 (stt, sc->time + s->start);
      n_msgs++;
    }
    gst_message_unref (m);
  }
  fail_unless_equals_int (n_msgs, ref->len);

  g_ptr_array_unref (bufs);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

static Suite *
whispersink_timestamps_suite (void)
{
  Suite *s = suite_create ("whispersink-timestamps");
  TCase *tc = tcase_create ("timestamps");

  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_concat_cues_follow);
  tcase_add_loop_test (tc, test_segment_running_time, 0, G_N_ELEMENTS (segment_cases));
  return s;
}

int
main (int argc, char **argv)
{
  int ret;

  gst_check_init (&argc, &argv);
  jfk = wt_load_jfk (&jfk_n);
  ref = wt_engine_segments (jfk, jfk_n);
  jfk_duration = gst_util_uint64_scale_int_round (jfk_n, GST_SECOND, WHISPER_SAMPLE_RATE);
  tmpdir = g_dir_make_tmp ("whispersink-timestamps-XXXXXX", NULL);

  ret = gst_check_run_suite (whispersink_timestamps_suite (), "whispersink-timestamps",
      __FILE__);
  g_rmdir (tmpdir);
  wt_segments_free (ref);
  g_free (jfk);
  return ret;
}
