/* test-element-harness.c: whispersink's timing behaviour through GstHarness,
 * on real speech (jfk.wav) whose transcript the engine gives directly:
 * PTS/DURATION against the engine's segments, a non-zero segment start,
 * DISCONT, GAP, the EOS drain, exact and windowed offline modes over
 * several windows, a flush in the middle of a window, words before the
 * window's last decode step, and live chunking with dropping. */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <string.h>

#include "wt-util.h"

static float *jfk;
static gsize jfk_n;
static GArray *ref;         /* engine segments of jfk.wav */
static gchar *ref_text;

#define MS100 (WHISPER_SAMPLE_RATE / 10)

static GstHarness *
harness_new (gboolean live, const gchar *props)
{
  GstElement *e = gst_element_factory_make ("whispersink", NULL);
  GstHarness *h;

  fail_unless (e != NULL);
  if (props) {
    gchar **kv = g_strsplit_set (props, " =", -1);
    guint i;
    for (i = 0; kv[i] && kv[i + 1]; i += 2)
      gst_util_set_object_arg (G_OBJECT (e), kv[i], kv[i + 1]);
    g_strfreev (kv);
  }
  h = gst_harness_new_with_element (e, "sink", "src");
  gst_object_unref (e);
  gst_harness_set_live (h, live);
  gst_harness_set_src_caps_str (h, WT_CAPS_F32);
  return h;
}

static GstBus *
attach_bus (GstHarness *h)
{
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  return bus;
}

typedef struct {
  GstClockTime start, end;
  gboolean gap;
} Span;

static gint
span_cmp (gconstpointer a, gconstpointer b)
{
  const Span *x = a, *y = b;
  if (x->start != y->start)
    return x->start < y->start ? -1 : 1;
  return 0;
}

/* Buffers and GAP events together cover [from, to) without hole or overlap
 * (zero-duration GAPs aside). */
static void
check_coverage (GPtrArray *bufs, GPtrArray *events, GstClockTime from, GstClockTime to)
{
  GArray *spans = g_array_new (FALSE, FALSE, sizeof (Span));
  GstClockTime pos = from;
  guint i;

  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);
    Span s = { GST_BUFFER_PTS (b), GST_BUFFER_PTS (b) + GST_BUFFER_DURATION (b), FALSE };
    g_array_append_val (spans, s);
  }
  for (i = 0; i < events->len; i++) {
    GstEvent *ev = g_ptr_array_index (events, i);
    GstClockTime ts, dur;
    Span s;

    if (GST_EVENT_TYPE (ev) != GST_EVENT_GAP)
      continue;
    gst_event_parse_gap (ev, &ts, &dur);
    if (dur == 0)
      continue;     /* the GAP after each SEGMENT, for preroll: covers nothing */
    s.start = ts;
    s.end = ts + dur;
    s.gap = TRUE;
    g_array_append_val (spans, s);
  }
  g_array_sort (spans, span_cmp);
  for (i = 0; i < spans->len; i++) {
    Span *s = &g_array_index (spans, Span, i);
    GST_LOG ("%s %" GST_TIME_FORMAT " - %" GST_TIME_FORMAT, s->gap ? "gap " : "text",
        GST_TIME_ARGS (s->start), GST_TIME_ARGS (s->end));
    fail_unless_equals_uint64 (s->start, pos);
    fail_unless (s->end > s->start);
    pos = s->end;
  }
  fail_unless_equals_uint64 (pos, to);
  g_array_unref (spans);
}

static GPtrArray *
pull_events (GstHarness *h)
{
  GPtrArray *events = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_event_unref);
  GstEvent *ev;

  while ((ev = gst_harness_try_pull_event (h)))
    g_ptr_array_add (events, ev);
  return events;
}

static GstClockTime
samples_time (gsize n)
{
  return gst_util_uint64_scale_int_round (n, GST_SECOND, WHISPER_SAMPLE_RATE);
}

static GPtrArray *
whisper_messages (GstBus *bus)
{
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_message_unref);
  GstMessage *m;

  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT))) {
    if (gst_message_has_name (m, "whisper-text"))
      g_ptr_array_add (out, m);
    else
      gst_message_unref (m);
  }
  return out;
}

/* The element's counters (the stats property), in ns. */
static void
get_stats (GstElement *e, guint64 *received, guint64 *transcribed, guint64 *dropped)
{
  GstStructure *s = NULL;

  g_object_get (e, "stats", &s, NULL);
  fail_unless (s != NULL);
  fail_unless (gst_structure_get (s, "audio-received", G_TYPE_UINT64, received,
          "audio-transcribed", G_TYPE_UINT64, transcribed, "audio-dropped", G_TYPE_UINT64,
          dropped, NULL));
  gst_structure_free (s);
}

/* After EOS: all audio was either given to the engine or (live) dropped. */
static void
check_stats_at_eos (GstElement *e, gsize n_pushed, gboolean expect_drops)
{
  guint64 received, transcribed, dropped, sum;

  get_stats (e, &received, &transcribed, &dropped);
  GST_INFO ("stats: received %" GST_TIME_FORMAT ", transcribed %" GST_TIME_FORMAT
      ", dropped %" GST_TIME_FORMAT, GST_TIME_ARGS (received), GST_TIME_ARGS (transcribed),
      GST_TIME_ARGS (dropped));
  fail_unless_equals_uint64 (received, gst_util_uint64_scale_int (n_pushed, GST_SECOND,
          WHISPER_SAMPLE_RATE));
  sum = transcribed + dropped;
  /* each counter is rounded down to the ns on its own */
  fail_unless (sum <= received && sum + 1 >= received, "%" G_GUINT64_FORMAT " + %"
      G_GUINT64_FORMAT " != %" G_GUINT64_FORMAT, transcribed, dropped, received);
  if (expect_drops)
    fail_unless (dropped > 0, "no audio counted as dropped");
  else
    fail_unless_equals_uint64 (dropped, 0);
}

/* ------------------------------------------------------------------------ */

GST_START_TEST (test_pts_duration_match_engine)
{
  GstHarness *h = harness_new (FALSE, NULL);
  GstBus *bus = attach_bus (h);
  GPtrArray *texts = g_ptr_array_new_with_free_func (g_free);
  GPtrArray *bufs, *events, *msgs;
  guint i;

  fail_unless_equals_int (wt_push_pcm (h, jfk, jfk_n, 0, MS100, TRUE), GST_FLOW_OK);
  /* exact mode: nothing before the drain */
  g_usleep (300 * 1000);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  bufs = wt_pull_until_eos (h, texts);
  check_stats_at_eos (h->element, jfk_n, FALSE);
  fail_unless_equals_int (bufs->len, ref->len);
  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);
    WtSegment *s = &g_array_index (ref, WtSegment, i);

    GST_INFO ("%" GST_TIME_FORMAT " +%" GST_TIME_FORMAT " %s",
        GST_TIME_ARGS (GST_BUFFER_PTS (b)), GST_TIME_ARGS (GST_BUFFER_DURATION (b)),
        (gchar *) g_ptr_array_index (texts, i));
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), s->start);
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (b), s->end - s->start);
    fail_unless_equals_string (g_ptr_array_index (texts, i), s->text);
  }

  events = pull_events (h);
  check_coverage (bufs, events, 0, samples_time (jfk_n));

  /* one bus message per item, with the scores */
  msgs = whisper_messages (bus);
  fail_unless_equals_int (msgs->len, ref->len);
  for (i = 0; i < msgs->len; i++) {
    const GstStructure *st = gst_message_get_structure (g_ptr_array_index (msgs, i));
    guint64 ts, dur, rt, stt;
    gdouble lp, nsp;
    gboolean final;

    fail_unless (gst_structure_get (st, "timestamp", G_TYPE_UINT64, &ts, "duration",
            G_TYPE_UINT64, &dur, "running-time", G_TYPE_UINT64, &rt, "stream-time",
            G_TYPE_UINT64, &stt, "avg-logprob", G_TYPE_DOUBLE, &lp, "no-speech-prob",
            G_TYPE_DOUBLE, &nsp, "final", G_TYPE_BOOLEAN, &final, NULL));
    fail_unless_equals_string (gst_structure_get_string (st, "text"),
        g_ptr_array_index (texts, i));
    fail_unless_equals_uint64 (ts, GST_BUFFER_PTS ((GstBuffer *) g_ptr_array_index (bufs,
                i)));
    fail_unless_equals_uint64 (rt, ts);
    fail_unless_equals_uint64 (stt, ts);
    fail_unless (lp <= 0.0 && nsp >= 0.0 && nsp <= 1.0 && final);
  }

  g_ptr_array_unref (msgs);
  g_ptr_array_unref (events);
  g_ptr_array_unref (bufs);
  g_ptr_array_unref (texts);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_nonzero_segment_start)
{
  GstHarness *h = harness_new (FALSE, NULL);
  GstBus *bus = attach_bus (h);
  GstClockTime start = 5 * GST_SECOND, time = 100 * GST_SECOND;
  GPtrArray *bufs, *events, *msgs;
  GstSegment seg;
  gboolean found = FALSE;
  guint i;

  gst_segment_init (&seg, GST_FORMAT_TIME);
  seg.start = start;
  seg.time = time;
  seg.position = start;
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&seg)));
  fail_unless_equals_int (wt_push_pcm (h, jfk, jfk_n, start, MS100, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  bufs = wt_pull_until_eos (h, NULL);
  fail_unless_equals_int (bufs->len, ref->len);
  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);
    WtSegment *s = &g_array_index (ref, WtSegment, i);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), start + s->start);
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (b), s->end - s->start);
  }

  /* The input segment is forwarded unchanged. */
  events = pull_events (h);
  for (i = 0; i < events->len; i++) {
    GstEvent *ev = g_ptr_array_index (events, i);
    const GstSegment *out;
    if (GST_EVENT_TYPE (ev) != GST_EVENT_SEGMENT)
      continue;
    gst_event_parse_segment (ev, &out);
    if (out->start == start) {
      fail_unless_equals_uint64 (out->time, time);
      found = TRUE;
    }
  }
  fail_unless (found, "segment not forwarded");
  check_coverage (bufs, events, start, start + samples_time (jfk_n));

  msgs = whisper_messages (bus);
  fail_unless (msgs->len > 0);
  for (i = 0; i < msgs->len; i++) {
    const GstStructure *st = gst_message_get_structure (g_ptr_array_index (msgs, i));
    guint64 ts, rt, stt;
    gst_structure_get (st, "timestamp", G_TYPE_UINT64, &ts, "running-time",
        G_TYPE_UINT64, &rt, "stream-time", G_TYPE_UINT64, &stt, NULL);
    fail_unless_equals_uint64 (rt, ts - start);
    fail_unless_equals_uint64 (stt, ts - start + time);
  }

  g_ptr_array_unref (msgs);
  g_ptr_array_unref (events);
  g_ptr_array_unref (bufs);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_discont_drains_and_resyncs)
{
  GstHarness *h = harness_new (FALSE, NULL);
  gsize half = 6 * WHISPER_SAMPLE_RATE;
  GstClockTime second = 20 * GST_SECOND;
  GPtrArray *texts = g_ptr_array_new_with_free_func (g_free);
  GArray *first_ref = wt_engine_segments (jfk, half);
  GPtrArray *bufs, *events;
  guint i, n_first = 0;

  fail_unless_equals_int (wt_push_pcm (h, jfk, half, 0, MS100, TRUE), GST_FLOW_OK);
  /* Time jumps: DISCONT drains the first run before the second starts. */
  fail_unless_equals_int (wt_push_pcm (h, jfk + half, jfk_n - half, second, MS100, TRUE),
      GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  bufs = wt_pull_until_eos (h, texts);
  fail_unless (bufs->len > first_ref->len);
  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);
    GstClockTime pts = GST_BUFFER_PTS (b), end = pts + GST_BUFFER_DURATION (b);

    GST_INFO ("%" GST_TIME_FORMAT " %s", GST_TIME_ARGS (pts),
        (gchar *) g_ptr_array_index (texts, i));
    if (pts < second) {
      WtSegment *s = &g_array_index (first_ref, WtSegment, n_first);
      /* The first run is the engine's transcription of that audio alone. */
      fail_unless (n_first < first_ref->len);
      fail_unless_equals_uint64 (pts, s->start);
      fail_unless_equals_uint64 (end, s->end);
      fail_unless_equals_string (g_ptr_array_index (texts, i), s->text);
      fail_unless_equals_int (i, n_first);     /* all of run 1 before run 2 */
      n_first++;
    } else {
      fail_unless (end <= second + samples_time (jfk_n - half));
    }
  }
  fail_unless_equals_int (n_first, first_ref->len);

  /* The hole between the runs is a GAP. */
  events = pull_events (h);
  {
    GPtrArray *run1 = g_ptr_array_new (), *run2 = g_ptr_array_new ();
    GPtrArray *ev1 = g_ptr_array_new (), *ev2 = g_ptr_array_new ();
    for (i = 0; i < bufs->len; i++) {
      GstBuffer *b = g_ptr_array_index (bufs, i);
      g_ptr_array_add (GST_BUFFER_PTS (b) < second ? run1 : run2, b);
    }
    for (i = 0; i < events->len; i++) {
      GstEvent *ev = g_ptr_array_index (events, i);
      GstClockTime ts = 0, dur;
      if (GST_EVENT_TYPE (ev) == GST_EVENT_GAP)
        gst_event_parse_gap (ev, &ts, &dur);
      g_ptr_array_add (ts < second ? ev1 : ev2, ev);
    }
    check_coverage (run1, ev1, 0, second);
    check_coverage (run2, ev2, second, second + samples_time (jfk_n - half));
    g_ptr_array_unref (run1);
    g_ptr_array_unref (run2);
    g_ptr_array_unref (ev1);
    g_ptr_array_unref (ev2);
  }

  g_ptr_array_unref (events);
  g_ptr_array_unref (bufs);
  g_ptr_array_unref (texts);
  wt_segments_free (first_ref);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_gap_event)
{
  GstHarness *h = harness_new (FALSE, NULL);
  gsize part = 4 * WHISPER_SAMPLE_RATE;
  GPtrArray *bufs, *events;
  guint i, gaps = 0;

  fail_unless_equals_int (wt_push_pcm (h, jfk, part, 0, MS100, TRUE), GST_FLOW_OK);
  /* Silence announced by a GAP, then audio again (no DISCONT flag). */
  fail_unless (gst_harness_push_event (h, gst_event_new_gap (samples_time (part),
              6 * GST_SECOND)));
  fail_unless_equals_int (wt_push_pcm (h, jfk + part, part,
          samples_time (part) + 6 * GST_SECOND, MS100, FALSE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  bufs = wt_pull_until_eos (h, NULL);
  fail_unless (bufs->len >= 2);
  events = pull_events (h);
  for (i = 0; i < events->len; i++)
    gaps += GST_EVENT_TYPE (g_ptr_array_index (events, i)) == GST_EVENT_GAP;
  fail_unless (gaps >= 1);
  /* Text before the GAP stays before it, text after it starts after it. */
  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);
    GstClockTime pts = GST_BUFFER_PTS (b), end = pts + GST_BUFFER_DURATION (b);
    fail_unless (end <= samples_time (part)
        || pts >= samples_time (part) + 6 * GST_SECOND);
  }
  check_coverage (bufs, events, 0, 2 * samples_time (part) + 6 * GST_SECOND);
  g_ptr_array_unref (events);
  g_ptr_array_unref (bufs);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* ------------------------------------------------------------------------ */

/* jfk three times with a second of silence after each: 36 s, two windows. */
static float *
long_input (gsize *n)
{
  gsize one = jfk_n + WHISPER_SAMPLE_RATE, i;
  float *pcm = g_new0 (float, 3 * one);

  for (i = 0; i < 3; i++)
    memcpy (pcm + i * one, jfk, jfk_n * sizeof (float));
  *n = 3 * one;
  return pcm;
}

GST_START_TEST (test_exact_mode_long_input)
{
  GstHarness *h = harness_new (FALSE, "offline-mode=exact");
  GPtrArray *texts = g_ptr_array_new_with_free_func (g_free), *bufs;
  gsize n;
  float *pcm = long_input (&n);
  GArray *want = wt_engine_segments (pcm, n);
  guint i;

  fail_unless_equals_int (wt_push_pcm (h, pcm, n, 0, MS100, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, texts);
  fail_unless_equals_int (bufs->len, want->len);
  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);
    WtSegment *s = &g_array_index (want, WtSegment, i);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), s->start);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b) + GST_BUFFER_DURATION (b), s->end);
    fail_unless_equals_string (g_ptr_array_index (texts, i), s->text);
  }
  g_ptr_array_unref (bufs);
  g_ptr_array_unref (texts);
  wt_segments_free (want);
  g_free (pcm);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_windowed_mode_long_input)
{
  GstHarness *h = harness_new (FALSE, "offline-mode=windowed");
  GPtrArray *texts = g_ptr_array_new_with_free_func (g_free), *bufs;
  gsize n;
  float *pcm = long_input (&n);
  GArray *want = wt_engine_segments (pcm, n);
  gchar *got_text, *want_text = wt_join_segments (want);
  GstBuffer *early;
  GstClockTime last_end = 0;
  guint i;

  fail_unless_equals_int (wt_push_pcm (h, pcm, n, 0, MS100, TRUE), GST_FLOW_OK);
  /* The first window comes out before EOS. */
  early = gst_harness_pull (h);
  fail_unless (early != NULL, "no output before EOS");
  g_ptr_array_add (texts, wt_buffer_text (early));
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, texts);
  g_ptr_array_insert (bufs, 0, early);

  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);
    GST_INFO ("%" GST_TIME_FORMAT " %s", GST_TIME_ARGS (GST_BUFFER_PTS (b)),
        (gchar *) g_ptr_array_index (texts, i));
    fail_unless (GST_BUFFER_PTS (b) >= last_end);
    last_end = GST_BUFFER_PTS (b) + GST_BUFFER_DURATION (b);
  }
  fail_unless (last_end <= samples_time (n));
  g_ptr_array_add (texts, NULL);
  got_text = g_strjoinv (" ", (gchar **) texts->pdata);
  GST_INFO ("windowed: %s", got_text);
  GST_INFO ("engine:   %s", want_text);
  /* The same speech three times; the window edges may differ slightly. */
  fail_unless (strstr (got_text, "ask not what your country can do for you") != NULL);
  g_free (got_text);
  g_free (want_text);
  g_ptr_array_unref (bufs);
  g_ptr_array_unref (texts);
  wt_segments_free (want);
  g_free (pcm);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* ------------------------------------------------------------------------ */

GST_START_TEST (test_flush_mid_window)
{
  GstHarness *h = harness_new (FALSE, "output=words");
  GstBus *bus = attach_bus (h);
  GstBuffer *first, *b;
  GPtrArray *bufs;
  GstSegment seg;
  gint64 t0, took;
  GstMessage *err;
  gsize part = 3 * WHISPER_SAMPLE_RATE;
  guint i;

  fail_unless_equals_int (wt_push_pcm (h, jfk, jfk_n, 0, MS100, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  /* The first word: the engine is in the middle of the window now. */
  first = gst_harness_pull (h);
  fail_unless (first != NULL);
  gst_buffer_unref (first);

  t0 = g_get_monotonic_time ();
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  took = g_get_monotonic_time () - t0;
  GST_INFO ("FLUSH_START took %" G_GINT64_FORMAT " us", took);
  fail_unless (took < 200 * 1000, "FLUSH_START blocked for %" G_GINT64_FORMAT " us", took);
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));

  /* Whatever was queued before the flush is stale. */
  while ((b = gst_harness_try_pull (h)))
    gst_buffer_unref (b);
  while ((b = (GstBuffer *) gst_harness_try_pull_event (h)))
    gst_event_unref ((GstEvent *) b);

  /* The element works again after FLUSH_STOP, from a clean state. */
  gst_segment_init (&seg, GST_FORMAT_TIME);
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&seg)));
  fail_unless_equals_int (wt_push_pcm (h, jfk, part, 0, MS100, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, NULL);
  fail_unless (bufs->len > 0);
  for (i = 0; i < bufs->len; i++) {
    b = g_ptr_array_index (bufs, i);
    fail_unless (GST_BUFFER_PTS (b) + GST_BUFFER_DURATION (b) <= samples_time (part));
  }
  err = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (err == NULL, "unexpected error");
  g_ptr_array_unref (bufs);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_words_before_last_step)
{
  GstHarness *h = harness_new (FALSE, "output=words");
  GstBus *bus = attach_bus (h);
  GPtrArray *texts = g_ptr_array_new_with_free_func (g_free), *bufs, *msgs;
  gint first_step = -1, last_step = -1;
  gint first_word_msg = -1, first_segment_msg = -1;
  GstClockTime last_pts = 0;
  gchar *joined;
  guint i;

  fail_unless_equals_int (wt_push_pcm (h, jfk, jfk_n, 0, MS100, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, texts);

  /* Words in order, each with a duration, spelling the engine's text. */
  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);
    if (i > 0)
      fail_unless (GST_BUFFER_PTS (b) > last_pts, "PTS not increasing at word %u", i);
    fail_unless (GST_BUFFER_DURATION (b) > 0);
    last_pts = GST_BUFFER_PTS (b);
  }
  g_ptr_array_add (texts, NULL);
  joined = g_strjoinv (" ", (gchar **) texts->pdata);
  fail_unless_equals_string (joined, ref_text);

  msgs = whisper_messages (bus);
  for (i = 0; i < msgs->len; i++) {
    const GstStructure *st = gst_message_get_structure (g_ptr_array_index (msgs, i));
    const gchar *gran = gst_structure_get_string (st, "granularity");
    gint step;

    gst_structure_get_int (st, "decode-step", &step);
    if (g_strcmp0 (gran, "word") == 0) {
      if (first_word_msg < 0) {
        first_word_msg = i;
        first_step = step;
      }
      last_step = MAX (last_step, step);
    } else if (first_segment_msg < 0) {
      first_segment_msg = i;
    }
  }
  GST_INFO ("first word at step %d, last word at step %d", first_step, last_step);
  fail_unless (first_word_msg >= 0 && first_segment_msg >= 0);
  /* Pushed during the decode, not after the window: */
  fail_unless (first_step < last_step);
  fail_unless (first_word_msg < first_segment_msg);

  g_free (joined);
  g_ptr_array_unref (msgs);
  g_ptr_array_unref (bufs);
  g_ptr_array_unref (texts);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* ------------------------------------------------------------------------ */

/* Waits until the output (buffers and GAPs, from `*pos` on) covers `t`,
 * collecting buffers. */
static void
wait_output_until (GstHarness *h, GstClockTime t, GPtrArray *bufs, GstClockTime *pos_io)
{
  GstClockTime pos = *pos_io;
  gint64 deadline = g_get_monotonic_time () + 120 * G_TIME_SPAN_SECOND;

  while (pos < t) {
    GstBuffer *b;
    GstEvent *ev;

    fail_unless (g_get_monotonic_time () < deadline, "no output up to %" GST_TIME_FORMAT,
        GST_TIME_ARGS (t));
    while ((b = gst_harness_try_pull (h))) {
      pos = MAX (pos, GST_BUFFER_PTS (b) + GST_BUFFER_DURATION (b));
      g_ptr_array_add (bufs, b);
    }
    while ((ev = gst_harness_try_pull_event (h))) {
      if (GST_EVENT_TYPE (ev) == GST_EVENT_GAP) {
        GstClockTime ts, dur;
        gst_event_parse_gap (ev, &ts, &dur);
        pos = MAX (pos, ts + dur);
      }
      gst_event_unref (ev);
    }
    g_usleep (20 * 1000);
  }
  *pos_io = pos;
}

GST_START_TEST (test_live_chunks)
{
  /* latency 4000 ms: 1-s chunks. Audio is fed one chunk at a time, as a
   * live source would, waiting for the output to catch up. */
  GstHarness *h = harness_new (TRUE, "latency=4000");
  GstBus *bus = attach_bus (h);
  GPtrArray *bufs = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  GPtrArray *texts = g_ptr_array_new_with_free_func (g_free);
  gsize chunk = WHISPER_SAMPLE_RATE, off;
  GstClockTime pos = 0;
  GstMessage *warn;
  gchar *joined;
  guint i;

  gst_harness_set_upstream_latency (h, 20 * GST_MSECOND);
  fail_unless_equals_uint64 (gst_harness_query_latency (h), 4020 * GST_MSECOND);
  for (off = 0; off + chunk <= jfk_n; off += chunk) {
    fail_unless_equals_int (wt_push_pcm (h, jfk + off, chunk, samples_time (off), MS100,
            off == 0), GST_FLOW_OK);
    /* A call covers at most three chunks: once this chunk is in, the output
     * reaches the start of the one before. */
    if (off >= chunk)
      wait_output_until (h, samples_time (off - chunk), bufs, &pos);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  {
    GPtrArray *rest = wt_pull_until_eos (h, NULL);
    for (i = 0; i < rest->len; i++)
      g_ptr_array_add (bufs, gst_buffer_ref (g_ptr_array_index (rest, i)));
    g_ptr_array_unref (rest);
  }
  check_stats_at_eos (h->element, off, FALSE);
  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);
    g_ptr_array_add (texts, wt_buffer_text (b));
    GST_INFO ("live %" GST_TIME_FORMAT " +%" GST_TIME_FORMAT " %s",
        GST_TIME_ARGS (GST_BUFFER_PTS (b)), GST_TIME_ARGS (GST_BUFFER_DURATION (b)),
        (gchar *) g_ptr_array_index (texts, i));
    fail_unless (GST_BUFFER_PTS (b) + GST_BUFFER_DURATION (b) <= samples_time (jfk_n));
  }
  g_ptr_array_add (texts, NULL);
  joined = g_ascii_strdown (g_strjoinv (" ", (gchar **) texts->pdata), -1);
  GST_INFO ("live text: %s", joined);
  fail_unless (strstr (joined, "country") != NULL, "live text: %s", joined);
  /* Fed in time: nothing dropped. */
  warn = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  if (warn) {
    GError *e = NULL;
    gst_message_parse_warning (warn, &e, NULL);
    fail_if (strstr (e->message, "dropped") != NULL, "%s", e->message);
    g_error_free (e);
    gst_message_unref (warn);
  }
  g_free (joined);
  g_ptr_array_unref (texts);
  g_ptr_array_unref (bufs);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_live_overload_drops_with_gap)
{
  /* 33 s of live audio at once: far more than latency + lateness (4 s). */
  GstHarness *h = harness_new (TRUE, "latency=4000");
  GstBus *bus = attach_bus (h);
  gsize n;
  float *pcm = long_input (&n);
  GPtrArray *bufs, *events;
  GstMessage *m;
  gboolean dropped = FALSE;

  fail_unless_equals_int (wt_push_pcm (h, pcm, n, 0, MS100, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, NULL);
  check_stats_at_eos (h->element, n, TRUE);
  events = pull_events (h);
  /* Still no hole in the output: dropped audio is covered by GAPs. */
  check_coverage (bufs, events, 0, samples_time (n));
  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING))) {
    GError *e = NULL;
    gst_message_parse_warning (m, &e, NULL);
    GST_INFO ("warning: %s", e->message);
    dropped |= strstr (e->message, "dropped") != NULL;
    g_error_free (e);
    gst_message_unref (m);
  }
  fail_unless (dropped, "no warning about dropped audio");
  g_ptr_array_unref (events);
  g_ptr_array_unref (bufs);
  g_free (pcm);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

static Suite *
whispersink_harness_suite (void)
{
  Suite *s = suite_create ("whispersink-harness");
  TCase *tc = tcase_create ("harness");

  tcase_set_timeout (tc, 400);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_pts_duration_match_engine);
  tcase_add_test (tc, test_nonzero_segment_start);
  tcase_add_test (tc, test_discont_drains_and_resyncs);
  tcase_add_test (tc, test_gap_event);
  tcase_add_test (tc, test_exact_mode_long_input);
  tcase_add_test (tc, test_windowed_mode_long_input);
  tcase_add_test (tc, test_flush_mid_window);
  tcase_add_test (tc, test_words_before_last_step);
  tcase_add_test (tc, test_live_chunks);
  tcase_add_test (tc, test_live_overload_drops_with_gap);
  return s;
}

int
main (int argc, char **argv)
{
  gst_check_init (&argc, &argv);
  /* Shared by every (forked) test: the clip and the engine's transcript. */
  jfk = wt_load_jfk (&jfk_n);
  ref = wt_engine_segments (jfk, jfk_n);
  ref_text = wt_join_segments (ref);
  GST_INFO ("engine transcript: %s", ref_text);
  return gst_check_run_suite (whispersink_harness_suite (), "whispersink-harness",
      __FILE__);
}
