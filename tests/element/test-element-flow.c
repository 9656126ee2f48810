/* test-element-flow.c: whispersink where something else holds data back.
 *
 * Preroll: beside a branch that plays the audio in real time (tee), the
 * text branch must let its sink preroll before there is any text, in both
 * offline modes, and again after PLAYING -> PAUSED while no audio reaches
 * the element; the SRT file stays what the plain pipeline writes.
 *
 * Live, straight into a sink that synchronises to the clock (no queue in
 * between): the pipeline runs on a GstTestClock that stands still, so the
 * sink waits for the running time of what it got for as long as the test
 * wants. Audio is fed one chunk at a time, each as soon as the engine has
 * seen the previous one (the stats property says so), as a live source
 * would: inference must go on while the sink waits, no audio may be
 * dropped, and when the output queue overflows a warning must say so.
 * EOS, a flush and PAUSED->READY while the sink waits must not deadlock.
 *
 * None of these checks measure time: a pipeline that would hang gets a
 * generous watchdog that fails the test with a message saying what hung. */
#include <gst/check/gstcheck.h>
#include <gst/check/gsttestclock.h>
#include <gst/app/gstappsrc.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#include "wt-util.h"

/* Watchdog for anything that would otherwise hang for ever, in seconds:
 * $WT_WATCHDOG_S, 120 by default (read in main()). */
static gint watchdog_s = 120;

static gchar *tmpdir;
static float *jfk;
static gsize jfk_n;

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
      watchdog_s * GST_SECOND);

  fail_unless (ret == GST_STATE_CHANGE_SUCCESS || ret == GST_STATE_CHANGE_NO_PREROLL,
      "%s: the state change did not complete within %d s (state %s, pending %s): "
      "a sink never got anything to preroll on", what, watchdog_s, state_name (state),
      state_name (pending));
}

/* Pops bus messages until EOS; fails on an error, or when no EOS comes
 * within the watchdog. */
static void
wait_eos (GstElement *p, const gchar *what)
{
  GstBus *bus = gst_element_get_bus (p);
  gint64 deadline = g_get_monotonic_time () + watchdog_s * G_TIME_SPAN_SECOND;

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
          what, watchdog_s, state_name (state), state_name (pending));
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
  return g_steal_pointer (&contents);
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

/* Holds back the audio of the text branch until removed. */
static GstPadProbeReturn
hold_audio (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  (void) pad;
  (void) info;
  (void) user_data;
  return GST_PAD_PROBE_OK;
}

/* The captioning pipeline of the issue: one branch plays the audio (the
 * sink synchronises to the clock), the other writes subtitles. With
 * `pause`, no audio reaches whispersink until the pipeline has played and
 * been paused again: the text sink then needs something to preroll on
 * again, and only the element can give it. */
static void
check_tee (const gchar *mode, gboolean pause)
{
  g_autofree gchar *src = decoded_jfk ();
  g_autofree gchar *path = g_build_filename (tmpdir, "tee.srt", NULL);
  g_autofree gchar *desc = g_strdup_printf ("%s ! tee name=t "
      "t. ! queue ! fakesink sync=true "
      "t. ! queue name=wq ! whispersink offline-mode=%s ! srtenc ! "
      "filesink location=\"%s\"", src, mode, path);
  g_autofree gchar *want = plain_srt (mode);
  g_autofree gchar *got = NULL;
  GstElement *p = launch (desc);
  GstElement *wq = gst_bin_get_by_name (GST_BIN (p), "wq");
  GstPad *wq_src = gst_element_get_static_pad (wq, "src");
  gulong probe = 0;

  GST_INFO ("%s", desc);
  if (pause)
    probe = gst_pad_add_probe (wq_src, GST_PAD_PROBE_TYPE_BLOCK | GST_PAD_PROBE_TYPE_BUFFER,
        hold_audio, NULL, NULL);
  fail_unless (gst_element_set_state (p, GST_STATE_PAUSED) != GST_STATE_CHANGE_FAILURE);
  expect_state_reached (p, "PAUSED (preroll)");
  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  expect_state_reached (p, "PLAYING");
  if (pause) {
    fail_unless (gst_element_set_state (p, GST_STATE_PAUSED) != GST_STATE_CHANGE_FAILURE);
    expect_state_reached (p, "PLAYING -> PAUSED with no audio reaching whispersink");
    gst_pad_remove_probe (wq_src, probe);
    fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
    expect_state_reached (p, "PAUSED -> PLAYING");
  }
  gst_object_unref (wq_src);
  gst_object_unref (wq);
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
  check_tee ("exact", FALSE);
}
GST_END_TEST;

/* `a` is in `text`, and `b` after it. */
static gboolean
appears_before (const gchar *text, const gchar *a, const gchar *b)
{
  const gchar *at = strstr (text, a);
  return at && strstr (at + strlen (a), b) != NULL;
}

/* offline-mode=batched: the file cut where the detector finds no speech,
 * its pieces decoded at once (gst-plugin/README.md); jfk.wav is one piece,
 * so the same sentence, and with output=words one cue a word, in order,
 * from the segments' word timestamps. */
GST_START_TEST (test_offline_batched)
{
  g_autofree gchar *srt = plain_srt ("batched");
  g_autofree gchar *src = decoded_jfk ();
  g_autofree gchar *path = g_build_filename (tmpdir, "words.srt", NULL);
  g_autofree gchar *desc = g_strdup_printf ("%s ! whispersink offline-mode=batched "
      "batch-size=2 output=words ! srtenc ! filesink location=\"%s\"", src, path);
  GstElement *p = launch (desc);
  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  wait_eos (p, desc);
  stop (p);
  g_autofree gchar *words = read_file (path);
  g_unlink (path);
  guint cues = 0;
  for (const gchar *c = words; (c = strstr (c, " --> ")); c++)
    cues++;
  /* 22 words, the punctuation attached */
  fail_unless (cues >= 20 && cues <= 24, "%u word cues: %s", cues, words);
  fail_unless (appears_before (words, "\nask\n", "\ncountry.\n"), "word order: %s", words);
}

GST_END_TEST;

GST_START_TEST (test_tee_windowed_prerolls)
{
  check_tee ("windowed", FALSE);
}
GST_END_TEST;

GST_START_TEST (test_tee_pause_prerolls_again)
{
  check_tee ("exact", TRUE);
}
GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* Live into a sink that waits for running time */

typedef struct {
  GstElement *pipeline, *src, *whisper;
  GstClock *clock;            /* a GstTestClock, at 0 until released */
  GstBus *bus;
  GPtrArray *items;           /* "whisper-text" structures, in order */
  GPtrArray *warnings;        /* GError messages of WARNING messages */
  GPtrArray *warning_details; /* their detail structures (or empty ones) */
  gint rendered;              /* text buffers the sink rendered (atomic) */
  gboolean eos;
  gboolean released;          /* the clock runs ahead: every wait returns */
  GstClockTime pushed;        /* end of the audio pushed so far */
  guint64 transcribed_base;   /* audio-transcribed before `pushed` started */
} Live;

static void
on_handoff (GstElement *sink, GstBuffer *buf, GstPad *pad, Live *l)
{
  (void) sink;
  (void) buf;
  (void) pad;
  g_atomic_int_inc (&l->rendered);
}

static void
live_start (Live *l, const gchar *props)
{
  g_autofree gchar *desc = g_strdup_printf ("appsrc name=src is-live=true format=time "
      "min-latency=0 caps=\"" WT_CAPS_F32 "\" ! whispersink name=w %s ! "
      "fakesink name=out sync=true signal-handoffs=true", props);
  GstElement *out;

  memset (l, 0, sizeof (*l));
  l->pipeline = launch (desc);
  l->src = gst_bin_get_by_name (GST_BIN (l->pipeline), "src");
  l->whisper = gst_bin_get_by_name (GST_BIN (l->pipeline), "w");
  out = gst_bin_get_by_name (GST_BIN (l->pipeline), "out");
  g_signal_connect (out, "handoff", G_CALLBACK (on_handoff), l);
  gst_object_unref (out);
  l->clock = gst_test_clock_new ();
  gst_pipeline_use_clock (GST_PIPELINE (l->pipeline), l->clock);
  l->bus = gst_element_get_bus (l->pipeline);
  l->items = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_structure_free);
  l->warnings = g_ptr_array_new_with_free_func (g_free);
  l->warning_details = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_structure_free);
  GST_INFO ("%s", desc);
  fail_unless (gst_element_set_state (l->pipeline, GST_STATE_PLAYING)
      != GST_STATE_CHANGE_FAILURE);
}

static void
live_stop (Live *l)
{
  stop (l->pipeline);
  gst_object_unref (l->src);
  gst_object_unref (l->whisper);
  gst_object_unref (l->clock);
  gst_object_unref (l->bus);
  g_ptr_array_unref (l->items);
  g_ptr_array_unref (l->warnings);
  g_ptr_array_unref (l->warning_details);
}

/* Takes every message on the bus; fails on an error. Once released, lets
 * every clock wait return. */
static void
live_poll (Live *l)
{
  GstMessage *m;
  GstClockID id;

  /* A GstTestClock releases a wait only when told to, even a late one. */
  while (l->released
      && (id = gst_test_clock_process_next_clock_id (GST_TEST_CLOCK (l->clock))))
    gst_clock_id_unref (id);

  while ((m = gst_bus_pop (l->bus))) {
    switch (GST_MESSAGE_TYPE (m)) {
      case GST_MESSAGE_ERROR:{
        GError *err = NULL;
        gchar *debug = NULL;
        gst_message_parse_error (m, &err, &debug);
        fail ("error from %s: %s (%s)", GST_OBJECT_NAME (GST_MESSAGE_SRC (m)),
            err->message, debug);
        break;
      }
      case GST_MESSAGE_WARNING:{
        GError *err = NULL;
        const GstStructure *details = NULL;
        gst_message_parse_warning (m, &err, NULL);
        gst_message_parse_warning_details (m, &details);
        GST_INFO ("warning from %s: %s %" GST_PTR_FORMAT,
            GST_OBJECT_NAME (GST_MESSAGE_SRC (m)), err->message, details);
        if (GST_MESSAGE_SRC (m) == GST_OBJECT (l->whisper)) {
          g_ptr_array_add (l->warnings, g_strdup (err->message));
          g_ptr_array_add (l->warning_details, details ? gst_structure_copy (details)
              : gst_structure_new_empty ("none"));
        }
        g_error_free (err);
        break;
      }
      case GST_MESSAGE_ELEMENT:
        if (gst_message_has_name (m, "whisper-text"))
          g_ptr_array_add (l->items,
              gst_structure_copy (gst_message_get_structure (m)));
        break;
      case GST_MESSAGE_EOS:
        l->eos = TRUE;
        break;
      default:
        break;
    }
    gst_message_unref (m);
  }
}

static guint64
get_stat (GstElement *whisper, const gchar *field)
{
  GstStructure *s = NULL;
  guint64 v = 0;
  guint u;

  g_object_get (whisper, "stats", &s, NULL);
  fail_unless (s != NULL);
  if (!gst_structure_get_uint64 (s, field, &v)) {
    fail_unless (gst_structure_get_uint (s, field, &u), "stats: no %s in %"
        GST_PTR_FORMAT, field, s);
    v = u;
  }
  gst_structure_free (s);
  return v;
}

/* Pushes `n` samples from `pcm` at `l->pushed` in chunks of `chunk`: each
 * chunk as soon as the engine has been given the one before, as a live
 * source that inference keeps up with. */
static void
live_push_paced (Live *l, const float *pcm, gsize n, gsize chunk)
{
  gsize off;

  for (off = 0; off + chunk <= n; off += chunk) {
    GstBuffer *buf = gst_buffer_new_memdup (pcm + off, chunk * sizeof (float));
    GstClockTime dur = gst_util_uint64_scale_int (chunk, GST_SECOND, WHISPER_SAMPLE_RATE);
    gint64 deadline = g_get_monotonic_time () + watchdog_s * G_TIME_SPAN_SECOND;

    GST_BUFFER_PTS (buf) = l->pushed;
    GST_BUFFER_DURATION (buf) = dur;
    if (l->pushed == 0)
      GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
    fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (l->src), buf),
        GST_FLOW_OK);
    l->pushed += dur;
    /* A full chunk of new audio: the engine gets it at once. */
    while (get_stat (l->whisper, "audio-transcribed") < l->transcribed_base + l->pushed) {
      live_poll (l);
      if (g_get_monotonic_time () > deadline)
        fail ("the engine stopped at %" GST_TIME_FORMAT " of %" GST_TIME_FORMAT
            " of audio while the sink waited for the running time of the text "
            "(%d rendered): inference is blocked by downstream",
            GST_TIME_ARGS (get_stat (l->whisper, "audio-transcribed")),
            GST_TIME_ARGS (l->pushed), g_atomic_int_get (&l->rendered));
      g_usleep (10 * 1000);
    }
  }
}

/* Lets the sink render everything: the clock jumps far ahead (the waits
 * return in live_poll()). */
static void
live_release (Live *l)
{
  gst_test_clock_set_time (GST_TEST_CLOCK (l->clock), 3600 * GST_SECOND);
  l->released = TRUE;
}

static void
live_wait_eos (Live *l)
{
  gint64 deadline = g_get_monotonic_time () + watchdog_s * G_TIME_SPAN_SECOND;

  while (!l->eos) {
    live_poll (l);
    fail_if (g_get_monotonic_time () > deadline, "no EOS within %d s after the sink "
        "was released", watchdog_s);
    g_usleep (10 * 1000);
  }
}

/* Waits until the sink blocks on the (standing) clock. */
static void
live_wait_sink_blocked (Live *l)
{
  fail_unless (gst_test_clock_timed_wait_for_multiple_pending_ids (
          GST_TEST_CLOCK (l->clock), 1, watchdog_s * 1000, NULL),
      "the sink never waited for the clock");
}

static guint
count_items (Live *l, const gchar *granularity)
{
  guint i, n = 0;

  for (i = 0; i < l->items->len; i++)
    n += g_strcmp0 (gst_structure_get_string (g_ptr_array_index (l->items, i),
            "granularity"), granularity) == 0;
  return n;
}

/* Warnings of whispersink whose details have reason=`reason`. */
static guint
count_warnings (Live *l, const gchar *reason)
{
  guint i, n = 0;

  for (i = 0; i < l->warnings->len; i++)
    n += g_strcmp0 (gst_structure_get_string (g_ptr_array_index (l->warning_details, i),
            "reason"), reason) == 0;
  return n;
}

GST_START_TEST (test_live_synced_sink_does_not_stall_inference)
{
  /* latency 4000 ms: 1-s chunks; the sink waits for running time + 4 s.
   * lateness 30 s: all of the clip's text may wait for the sink (with the
   * clock standing still it never gets any of it). */
  Live l;
  guint segments;

  live_start (&l, "latency=4000 lateness=30000");
  live_push_paced (&l, jfk, jfk_n, WHISPER_SAMPLE_RATE);
  fail_unless_equals_int (gst_app_src_end_of_stream (GST_APP_SRC (l.src)), GST_FLOW_OK);

  /* The whole transcript comes out of the engine while the sink still waits
   * for the running time of the first text. */
  {
    gint64 deadline = g_get_monotonic_time () + watchdog_s * G_TIME_SPAN_SECOND;
    gboolean done = FALSE;
    while (!done) {
      guint i;
      live_poll (&l);
      /* live text comes as committed phrases: the last one's words */
      GString *text = g_string_new (NULL);
      for (i = 0; i < l.items->len; i++) {
        const GstStructure *s = g_ptr_array_index (l.items, i);
        gboolean final = FALSE;
        gst_structure_get_boolean (s, "final", &final);
        if (final)
          g_string_append_printf (text, " %s", gst_structure_get_string (s, "text"));
      }
      done = strstr (text->str, "for your country") != NULL;
      g_string_free (text, TRUE);
      fail_if (!done && g_get_monotonic_time () > deadline, "the last sentence never came "
          "out while the sink waited");
      g_usleep (10 * 1000);
    }
  }
  segments = count_items (&l, "segment");
  GST_INFO ("%u segments, %d rendered while the clock stood still", segments,
      g_atomic_int_get (&l.rendered));
  fail_unless (segments >= 2);
  /* At most a text at running time 0, before the latency was configured. */
  fail_unless (g_atomic_int_get (&l.rendered) <= 1);

  live_release (&l);
  live_wait_eos (&l);
  live_poll (&l);
  /* Nothing lost on the way: every segment was rendered, no audio dropped. */
  fail_unless_equals_int (g_atomic_int_get (&l.rendered), segments);
  fail_unless_equals_int (count_warnings (&l, "dropped-audio"), 0);
  fail_unless_equals_int (l.warnings->len, 0);
  fail_unless_equals_uint64 (get_stat (l.whisper, "audio-dropped"), 0);
  fail_unless_equals_uint64 (get_stat (l.whisper, "audio-transcribed"), l.pushed);
  live_stop (&l);
}
GST_END_TEST;

GST_START_TEST (test_live_output_overflow_warns)
{
  /* latency 2000 ms: 0.5-s chunks, budget 2 s. The sink never takes
   * anything while the clock stands still: the words of the whole clip
   * cannot all wait in the output queue. */
  Live l;
  guint words, dropped, i;

  live_start (&l, "latency=2000 output=words");
  live_push_paced (&l, jfk, jfk_n, WHISPER_SAMPLE_RATE / 2);
  fail_unless_equals_int (gst_app_src_end_of_stream (GST_APP_SRC (l.src)), GST_FLOW_OK);
  {
    gint64 deadline = g_get_monotonic_time () + watchdog_s * G_TIME_SPAN_SECOND;
    while (count_warnings (&l, "dropped-text") == 0) {
      live_poll (&l);
      fail_if (g_get_monotonic_time () > deadline, "no warning about dropped text "
          "while the sink waited (%u words out of the engine)", count_items (&l, "word"));
      g_usleep (10 * 1000);
    }
  }
  for (i = 0; i < l.warnings->len; i++)
    GST_INFO ("warning: %s", (gchar *) g_ptr_array_index (l.warnings, i));
  /* The warning names the element and what went (latency 2000 also posts
   * latency-too-short, first). */
  {
    const gchar *dropped_warning = NULL;
    for (i = 0; i < l.warnings->len && !dropped_warning; i++)
      if (strstr (g_ptr_array_index (l.warnings, i), "dropped"))
        dropped_warning = g_ptr_array_index (l.warnings, i);
    fail_unless (dropped_warning != NULL);
    fail_unless (strstr (dropped_warning, GST_OBJECT_NAME (l.whisper)) != NULL);
  }

  live_release (&l);
  live_wait_eos (&l);
  live_poll (&l);
  words = count_items (&l, "word");
  dropped = (guint) get_stat (l.whisper, "text-dropped");
  GST_INFO ("%u words, %u dropped, %d rendered", words, dropped,
      g_atomic_int_get (&l.rendered));
  fail_unless (dropped > 0);
  /* Every word was either rendered or dropped (and counted). */
  fail_unless_equals_int (g_atomic_int_get (&l.rendered) + dropped, words);
  /* The engine kept up: text was dropped, audio was not. */
  fail_unless_equals_int (count_warnings (&l, "dropped-audio"), 0);
  fail_unless_equals_uint64 (get_stat (l.whisper, "audio-dropped"), 0);
  live_stop (&l);
}
GST_END_TEST;

/* Runs `func` in a thread; fails when it does not return within the
 * watchdog. */
typedef struct {
  void (*func) (gpointer data);
  gpointer data;
  GMutex lock;
  GCond cond;
  gboolean done;
} Job;

static gpointer
job_thread (gpointer user_data)
{
  Job *job = user_data;

  job->func (job->data);
  g_mutex_lock (&job->lock);
  job->done = TRUE;
  g_cond_signal (&job->cond);
  g_mutex_unlock (&job->lock);
  return NULL;
}

static void
run_with_watchdog (void (*func) (gpointer), gpointer data, const gchar *what)
{
  Job job = { 0, };
  gint64 deadline = g_get_monotonic_time () + watchdog_s * G_TIME_SPAN_SECOND;
  GThread *thread;

  job.func = func;
  job.data = data;
  g_mutex_init (&job.lock);
  g_cond_init (&job.cond);
  thread = g_thread_new ("watched", job_thread, &job);
  g_mutex_lock (&job.lock);
  while (!job.done)
    if (!g_cond_wait_until (&job.cond, &job.lock, deadline))
      break;
  g_mutex_unlock (&job.lock);
  fail_unless (job.done, "%s did not return within %d s: deadlock", what, watchdog_s);
  g_thread_join (thread);
  g_mutex_clear (&job.lock);
  g_cond_clear (&job.cond);
}

static void
set_ready (gpointer data)
{
  Live *l = data;

  fail_unless_equals_int (gst_element_set_state (l->pipeline, GST_STATE_READY),
      GST_STATE_CHANGE_SUCCESS);
}

static void
flush (gpointer data)
{
  Live *l = data;
  GstPad *pad = gst_element_get_static_pad (l->whisper, "sink");
  GstSegment seg;

  fail_unless (gst_pad_send_event (pad, gst_event_new_flush_start ()));
  fail_unless (gst_pad_send_event (pad, gst_event_new_flush_stop (TRUE)));
  /* As upstream does after a flushing seek. */
  gst_segment_init (&seg, GST_FORMAT_TIME);
  fail_unless (gst_pad_send_event (pad, gst_event_new_segment (&seg)));
  gst_object_unref (pad);
}

GST_START_TEST (test_live_state_change_while_sink_waits)
{
  Live l;

  live_start (&l, "latency=4000");
  live_push_paced (&l, jfk, 4 * WHISPER_SAMPLE_RATE, WHISPER_SAMPLE_RATE);
  live_wait_sink_blocked (&l);
  /* PLAYING -> PAUSED -> READY while the sink waits for the clock and the
   * element has text queued for it. */
  run_with_watchdog (set_ready, &l, "PAUSED->READY while the sink waited");
  live_poll (&l);
  live_stop (&l);
}
GST_END_TEST;

GST_START_TEST (test_live_flush_while_sink_waits)
{
  Live l;
  GstClockTime before;

  live_start (&l, "latency=4000");
  live_push_paced (&l, jfk, 4 * WHISPER_SAMPLE_RATE, WHISPER_SAMPLE_RATE);
  live_wait_sink_blocked (&l);
  run_with_watchdog (flush, &l, "a flush while the sink waited");

  /* The element works after the flush, the sink waiting again. */
  before = get_stat (l.whisper, "audio-transcribed");
  l.transcribed_base = before;
  l.pushed = 0;
  live_push_paced (&l, jfk, 3 * WHISPER_SAMPLE_RATE, WHISPER_SAMPLE_RATE);
  fail_unless (get_stat (l.whisper, "audio-transcribed") >= before + l.pushed);
  fail_unless_equals_int (gst_app_src_end_of_stream (GST_APP_SRC (l.src)), GST_FLOW_OK);
  live_release (&l);
  live_wait_eos (&l);
  fail_unless_equals_uint64 (get_stat (l.whisper, "audio-dropped"), 0);
  live_stop (&l);
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
  tcase_add_test (tc, test_offline_batched);
  tcase_add_test (tc, test_tee_pause_prerolls_again);
  tcase_add_test (tc, test_live_synced_sink_does_not_stall_inference);
  tcase_add_test (tc, test_live_output_overflow_warns);
  tcase_add_test (tc, test_live_state_change_while_sink_waits);
  tcase_add_test (tc, test_live_flush_while_sink_waits);
  return s;
}

int
main (int argc, char **argv)
{
  int ret;

  gst_check_init (&argc, &argv);
  if (g_getenv ("WT_WATCHDOG_S"))
    watchdog_s = MAX (1, atoi (g_getenv ("WT_WATCHDOG_S")));
  jfk = wt_load_jfk (&jfk_n);
  tmpdir = g_dir_make_tmp ("whispersink-flow-XXXXXX", NULL);
  ret = gst_check_run_suite (whispersink_flow_suite (), "whispersink-flow", __FILE__);
  g_rmdir (tmpdir);
  return ret;
}
