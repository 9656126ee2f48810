/* test-element-harness.c: whispersink's timing behaviour through GstHarness,
 * on real speech (jfk.wav) whose transcript the engine gives directly:
 * PTS/DURATION against the engine's segments, a non-zero segment start,
 * DISCONT, GAP, the EOS drain, exact and windowed offline modes over
 * several windows, a flush in the middle of a window, words pushed during
 * the decode, live chunking with dropping, and the cases the element fuzzer
 * (tests/fuzz/element-fuzz.c) found: reverse segments, timestamps at the
 * end of the clock's range, a flush before a stream's first events went out.
 *
 * No assertion depends on how long anything takes. Where a test needs to
 * know what the element did with the input so far, it asks in order: a
 * custom serialized event (the barrier) goes through the element's queues
 * behind the audio, so once it reaches the harness everything the element
 * made of that audio before a drain is downstream too. Where it needs to
 * know how far the engine is, it reads the engine's own decode-step counter
 * (whisper_stream_get_stats () on the element's stream), and holds the
 * engine still by blocking the inference thread in a bus sync handler
 * while it posts a word's message (between two decode steps). Waits have
 * generous watchdogs that fail with a message. */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <string.h>

#include "wt-util.h"
/* The instance structure, for the engine stream's decode-step counter
 * only: read under the object lock, as the element reads the pointer. */
#include "task/gstwhispersink-private.h"

static float *jfk;
static gsize jfk_n;
static GArray *ref;         /* engine segments of jfk.wav */
static gchar *ref_text;
static guint64 ref_steps;   /* decode steps the engine's own transcription of jfk.wav runs */

/* Generous: only a hang or a missing output reaches them. */
#define WATCHDOG_S 120

#define MS100 (WHISPER_SAMPLE_RATE / 10)

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
/* Watching the element from outside */

/* Decoder forward passes the element's engine stream has run since it was
 * created (READY->PAUSED): the engine's own counter. */
static guint64
element_decode_steps (GstElement *e)
{
  GstWhisperSink *self = (GstWhisperSink *) e;
  WhisperStreamStats st = { 0, };

  GST_OBJECT_LOCK (e);
  if (self->stream)
    whisper_stream_get_stats (self->stream, &st);
  GST_OBJECT_UNLOCK (e);
  return st.decode_steps;
}

#define BARRIER_NAME "wt-barrier"

/* What reaches the harness's sink pad (a probe, in the element's src pad
 * task), and what the engine had done by then; and the word messages, seen
 * in the inference thread by a bus sync handler (word_gate ()). */
typedef struct {
  GMutex lock;
  GCond cond;
  GstElement *element;
  GstPad *pad;
  gulong probe;

  GArray *buffer_steps;       /* guint64: decode steps when each buffer arrived */
  GPtrArray *buffer_texts;    /* the text of each buffer */
  guint barriers;             /* barrier events arrived */
  guint buffers_at_barrier;   /* buffers arrived before the last barrier */
  gint buffers_at_flush_stop; /* buffers arrived before FLUSH_STOP; -1: none yet */
  gboolean eos;               /* EOS arrived */

  /* word_gate (): each word message waits (the engine with it) until its
   * buffer has arrived... */
  GArray *message_steps;      /* guint64: decode steps when each word message was posted */
  GPtrArray *message_texts;   /* the text of each word message */
  GArray *message_fields;     /* gint: the decode-step field of each word message */
  gboolean gave_up;           /* a buffer never came: stop waiting */
  guint gave_up_word;
  /* ...or, with hold_first, the first one waits until the test releases it. */
  gboolean hold_first, holding, released, flush_start_returned;
  guint64 steps_at_hold;
} Monitor;

static GstPadProbeReturn
monitor_probe (G_GNUC_UNUSED GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  Monitor *m = user_data;

  if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
    guint64 steps = element_decode_steps (m->element);
    gchar *text = wt_buffer_text (GST_PAD_PROBE_INFO_BUFFER (info));

    g_mutex_lock (&m->lock);
    g_array_append_val (m->buffer_steps, steps);
    g_ptr_array_add (m->buffer_texts, text);
  } else {
    GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);

    g_mutex_lock (&m->lock);
    if (GST_EVENT_TYPE (ev) == GST_EVENT_CUSTOM_DOWNSTREAM
        && gst_event_has_name (ev, BARRIER_NAME)) {
      m->barriers++;
      m->buffers_at_barrier = m->buffer_steps->len;
    } else if (GST_EVENT_TYPE (ev) == GST_EVENT_FLUSH_STOP) {
      m->buffers_at_flush_stop = m->buffer_steps->len;
      m->eos = FALSE;
    } else if (GST_EVENT_TYPE (ev) == GST_EVENT_EOS) {
      m->eos = TRUE;
    }
  }
  g_cond_broadcast (&m->cond);
  g_mutex_unlock (&m->lock);
  return GST_PAD_PROBE_OK;
}

static Monitor *
monitor_new (GstHarness *h)
{
  Monitor *m = g_new0 (Monitor, 1);

  g_mutex_init (&m->lock);
  g_cond_init (&m->cond);
  m->element = h->element;
  m->pad = gst_object_ref (h->sinkpad);
  m->buffer_steps = g_array_new (FALSE, FALSE, sizeof (guint64));
  m->buffer_texts = g_ptr_array_new_with_free_func (g_free);
  m->message_steps = g_array_new (FALSE, FALSE, sizeof (guint64));
  m->message_texts = g_ptr_array_new_with_free_func (g_free);
  m->message_fields = g_array_new (FALSE, FALSE, sizeof (gint));
  m->buffers_at_flush_stop = -1;
  m->probe = gst_pad_add_probe (m->pad, GST_PAD_PROBE_TYPE_BUFFER
      | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM | GST_PAD_PROBE_TYPE_EVENT_FLUSH,
      monitor_probe, m, NULL);
  return m;
}

static void
monitor_free (Monitor *m)
{
  gst_pad_remove_probe (m->pad, m->probe);
  gst_object_unref (m->pad);
  g_array_unref (m->buffer_steps);
  g_ptr_array_unref (m->buffer_texts);
  g_array_unref (m->message_steps);
  g_ptr_array_unref (m->message_texts);
  g_array_unref (m->message_fields);
  g_mutex_clear (&m->lock);
  g_cond_clear (&m->cond);
  g_free (m);
}

static guint64
monitor_steps (GArray *a, guint i)
{
  return g_array_index (a, guint64, i);
}

/* Bus sync handler: runs in the inference thread, inside the engine's
 * token callback (between two decode steps), for each word message. */
static GstBusSyncReply
word_gate (G_GNUC_UNUSED GstBus *bus, GstMessage *msg, gpointer user_data)
{
  Monitor *m = user_data;
  const GstStructure *st;
  guint64 steps;
  gint field;
  guint k;

  if (GST_MESSAGE_TYPE (msg) != GST_MESSAGE_ELEMENT
      || !gst_message_has_name (msg, "whisper-text"))
    return GST_BUS_PASS;
  st = gst_message_get_structure (msg);
  if (g_strcmp0 (gst_structure_get_string (st, "granularity"), "word") != 0)
    return GST_BUS_PASS;

  steps = element_decode_steps (m->element);
  if (!gst_structure_get_int (st, "decode-step", &field))
    field = -1;
  g_mutex_lock (&m->lock);
  k = m->message_steps->len;
  g_array_append_val (m->message_steps, steps);
  g_ptr_array_add (m->message_texts, g_strdup (gst_structure_get_string (st, "text")));
  g_array_append_val (m->message_fields, field);
  if (m->hold_first) {
    if (k == 0) {
      gint64 deadline = g_get_monotonic_time () + 2 * WATCHDOG_S * G_TIME_SPAN_SECOND;

      m->holding = TRUE;
      m->steps_at_hold = steps;
      g_cond_broadcast (&m->cond);
      while (!m->released && g_cond_wait_until (&m->cond, &m->lock, deadline));
    }
  } else if (!m->gave_up) {
    gint64 deadline = g_get_monotonic_time () + WATCHDOG_S * G_TIME_SPAN_SECOND;

    /* The engine waits here until this word is downstream. */
    while (m->buffer_steps->len <= k) {
      if (!g_cond_wait_until (&m->cond, &m->lock, deadline)) {
        m->gave_up = TRUE;
        m->gave_up_word = k;
        break;
      }
    }
  }
  g_mutex_unlock (&m->lock);
  return GST_BUS_PASS;
}

/* A custom serialized event: it leaves the element behind everything the
 * element made of the data before it. */
static void
push_barrier (GstHarness *h)
{
  fail_unless (gst_harness_push_event (h, gst_event_new_custom
          (GST_EVENT_CUSTOM_DOWNSTREAM, gst_structure_new_empty (BARRIER_NAME))));
}

/* Waits until `n` barriers have reached the harness; returns the number of
 * buffers that arrived before the last one. */
static guint
wait_barrier (Monitor *m, guint n)
{
  gint64 deadline = g_get_monotonic_time () + WATCHDOG_S * G_TIME_SPAN_SECOND;
  guint before;

  g_mutex_lock (&m->lock);
  while (m->barriers < n && g_cond_wait_until (&m->cond, &m->lock, deadline));
  fail_unless (m->barriers >= n, "the barrier event did not come out within %d s",
      WATCHDOG_S);
  before = m->buffers_at_barrier;
  g_mutex_unlock (&m->lock);
  return before;
}

/* Waits for EOS at the harness (gst_harness_pull () gives up after 60 s,
 * less than word_gate () may hold the engine). */
static void
wait_eos (Monitor *m, gint seconds)
{
  gint64 deadline = g_get_monotonic_time () + seconds * G_TIME_SPAN_SECOND;

  g_mutex_lock (&m->lock);
  while (!m->eos && g_cond_wait_until (&m->cond, &m->lock, deadline));
  fail_unless (m->eos, "no EOS within %d s", seconds);
  g_mutex_unlock (&m->lock);
}

/* ------------------------------------------------------------------------ */
/* What was said */

/* The key phrases of jfk.wav, in order: the whole sentence... */
static const gchar *jfk_phrases[] = {
  "and so my fellow americans",
  "ask not what your country can do for you",
  "ask what you can do for your country",
  NULL
};

/* ...and anchors in each for live mode, in the order they are spoken
 * (live text is committed word by word, so a phrase may be split across
 * buffers, but the words come once each, in order). */
static const gchar *jfk_anchors[] = { "americans", "ask not", "do for you",
  "for your country", NULL };

/* Lower-case letters and apostrophes, words separated by one space, and a
 * space at both ends (so that " phrase " matches whole words only). */
static gchar *
normalize_text (const gchar *text)
{
  GString *out = g_string_new (" ");
  const gchar *p;

  for (p = text; *p; p++) {
    if (g_ascii_isalpha (*p) || *p == '\'')
      g_string_append_c (out, g_ascii_tolower (*p));
    else if (out->str[out->len - 1] != ' ')
      g_string_append_c (out, ' ');
  }
  if (out->str[out->len - 1] != ' ')
    g_string_append_c (out, ' ');
  return g_string_free (out, FALSE);
}

/* The phrases found in `text` (whole words), in the order they occur, as
 * digits: "012" is jfk.wav once. */
static gchar *
phrase_sequence (const gchar *text, const gchar **phrases)
{
  gchar *norm = normalize_text (text);
  GString *seq = g_string_new (NULL);
  const gchar *p = norm;

  for (;;) {
    const gchar *best = NULL;
    guint i, which = 0, len = 0;

    for (i = 0; phrases[i]; i++) {
      gchar *pattern = g_strdup_printf (" %s ", phrases[i]);
      const gchar *q = strstr (p, pattern);
      if (q && (!best || q < best)) {
        best = q;
        which = i;
        len = strlen (pattern);
      }
      g_free (pattern);
    }
    if (!best)
      break;
    g_string_append_c (seq, '0' + which);
    p = best + len - 1;         /* the closing space opens the next match */
  }
  g_free (norm);
  return g_string_free (seq, FALSE);
}

/* Each phrase as often as the input (`times` x jfk.wav) holds it, in
 * order: nothing lost, nothing said twice. */
static void
check_phrases (const gchar *what, const gchar *text, const gchar **phrases, guint times)
{
  gchar *got = phrase_sequence (text, phrases);
  GString *want = g_string_new (NULL), *names = g_string_new (NULL);
  guint i, k;

  for (k = 0; k < times; k++)
    for (i = 0; phrases[i]; i++)
      g_string_append_c (want, '0' + i);
  for (i = 0; phrases[i]; i++)
    g_string_append_printf (names, "%s%u: \"%s\"", i ? ", " : "", i, phrases[i]);
  fail_unless (strcmp (got, want->str) == 0, "%s: phrases in the order %s, the input holds "
      "%s (%s); text: %s", what, got, want->str, names->str, text);
  g_string_free (names, TRUE);
  g_string_free (want, TRUE);
  g_free (got);
}

/* ------------------------------------------------------------------------ */

GST_START_TEST (test_pts_duration_match_engine)
{
  GstHarness *h = wt_harness_new (FALSE, NULL);
  GstBus *bus = attach_bus (h);
  GPtrArray *texts = g_ptr_array_new_with_free_func (g_free);
  GPtrArray *bufs, *events, *msgs;
  guint i;

  /* (exact mode: nothing before the drain, see test_exact_mode_long_input) */
  fail_unless_equals_int (wt_push_pcm (h, jfk, jfk_n, 0, MS100, TRUE), GST_FLOW_OK);
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
  msgs = wt_pop_text_messages (bus);
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

/* The `words` list of a whisper-text message, checked present. */
static const GValue *
message_words (const GstStructure *st)
{
  const GValue *words = gst_structure_get_value (st, "words");

  fail_unless (words != NULL && GST_VALUE_HOLDS_LIST (words), "no words list in %s",
      gst_structure_to_string (st));
  return words;
}

/* Word k of a `words` list, with its timestamp and duration. */
static const GstStructure *
word_at (const GValue *words, guint k, guint64 *ts, guint64 *dur)
{
  const GstStructure *w = gst_value_get_structure (gst_value_list_get_value (words, k));

  fail_unless (gst_structure_get (w, "timestamp", G_TYPE_UINT64, ts, "duration",
          G_TYPE_UINT64, dur, NULL), "word %u: %s", k, gst_structure_to_string (w));
  return w;
}

/* word-timestamps=true: each segment message carries its words (the
 * engine's DTW times, faster-whisper's: test-words), inside the segment and
 * in order, whose texts make up the segment's; output=words buffers are
 * timed by their steps' alignment-head attention and still go out. */
GST_START_TEST (test_word_timestamps)
{
  GstHarness *h = wt_harness_new (FALSE, "word-timestamps=true");
  GstBus *bus = attach_bus (h);
  GPtrArray *texts = g_ptr_array_new_with_free_func (g_free);
  GPtrArray *bufs, *msgs;
  guint i, n_words = 0;

  fail_unless_equals_int (wt_push_pcm (h, jfk, jfk_n, 0, MS100, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, texts);
  msgs = wt_pop_text_messages (bus);
  fail_unless_equals_int (msgs->len, bufs->len);
  for (i = 0; i < msgs->len; i++) {
    const GstStructure *st = gst_message_get_structure (g_ptr_array_index (msgs, i));
    const GValue *words = message_words (st);
    guint64 ts, dur, last = 0;
    GString *joined = g_string_new (NULL);
    guint k;

    fail_unless (gst_structure_get (st, "timestamp", G_TYPE_UINT64, &ts, "duration",
            G_TYPE_UINT64, &dur, NULL));
    fail_unless (gst_value_list_get_size (words) > 0);
    for (k = 0; k < gst_value_list_get_size (words); k++) {
      guint64 wts, wdur;
      gdouble p;
      const GstStructure *w = word_at (words, k, &wts, &wdur);

      fail_unless (gst_structure_get_double (w, "probability", &p));
      fail_unless (wts >= ts && wts + wdur <= ts + dur && wts >= last,
          "word %u of message %u out of its segment or out of order", k, i);
      fail_unless (p >= 0.0 && p <= 1.0);
      last = wts + wdur;
      g_string_append_printf (joined, "%s%s", k ? " " : "", gst_structure_get_string (w,
              "text"));
      n_words++;
    }
    fail_unless_equals_string (joined->str, gst_structure_get_string (st, "text"));
    g_string_free (joined, TRUE);
  }
  fail_unless_equals_int (n_words, 22);  /* jfk.wav: test-words */
  g_ptr_array_unref (msgs);
  g_ptr_array_unref (bufs);
  g_ptr_array_unref (texts);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);

  /* output=words: the words go out, with word-timestamps' times */
  h = wt_harness_new (FALSE, "output=words word-timestamps=true");
  texts = g_ptr_array_new_with_free_func (g_free);
  fail_unless_equals_int (wt_push_pcm (h, jfk, jfk_n, 0, MS100, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, texts);
  fail_unless_equals_int (bufs->len, 22);
  g_ptr_array_unref (bufs);
  g_ptr_array_unref (texts);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* The DTW times of the words of every segment message (not the word
 * messages of output=words), in order: a
 * GstClockTime pair (timestamp, duration) per word. */
static GArray *
message_word_times (GPtrArray *msgs)
{
  GArray *times = g_array_new (FALSE, FALSE, sizeof (GstClockTime));

  for (guint i = 0; i < msgs->len; i++) {
    const GstStructure *st = gst_message_get_structure (g_ptr_array_index (msgs, i));
    const GValue *words;

    if (g_strcmp0 (gst_structure_get_string (st, "granularity"), "segment") != 0)
      continue;
    words = message_words (st);
    for (guint k = 0; k < gst_value_list_get_size (words); k++) {
      guint64 wts, wdur;

      word_at (words, k, &wts, &wdur);
      g_array_append_val (times, wts);
      g_array_append_val (times, wdur);
    }
  }
  return times;
}

/* output=words word-timestamps=true with a beam search (beam-size 5, the
 * file default): the search's tokens come after it, without per-step
 * attention, so each word buffer carries the DTW time of its segment's
 * word (the segment message's `words`), not an estimate; with the
 * greedy decoder each word is timed as its step completes it, in order and
 * on average within 0.3 s of the DTW starts. */
GST_START_TEST (test_word_buffers_timed_by_alignment)
{
  const gchar *props[] = {
    "output=words word-timestamps=true beam-size=5",
    "output=words word-timestamps=true",
  };

  for (guint p = 0; p < G_N_ELEMENTS (props); p++) {
    GstHarness *h = wt_harness_new (FALSE, props[p]);
    GstBus *bus = attach_bus (h);
    GPtrArray *texts = g_ptr_array_new_with_free_func (g_free);
    GPtrArray *bufs, *msgs;
    GArray *times;
    gdouble off_sum = 0.0;

    fail_unless_equals_int (wt_push_pcm (h, jfk, jfk_n, 0, MS100, TRUE), GST_FLOW_OK);
    fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
    bufs = wt_pull_until_eos (h, texts);
    msgs = wt_pop_text_messages (bus);
    times = message_word_times (msgs);
    fail_unless_equals_int (times->len, 2 * bufs->len);
    fail_unless_equals_int (bufs->len, 22);  /* jfk.wav: test-words */
    for (guint i = 0; i < bufs->len; i++) {
      GstBuffer *b = g_ptr_array_index (bufs, i);
      GstClockTime ts = g_array_index (times, GstClockTime, 2 * i);
      GstClockTime dur = g_array_index (times, GstClockTime, 2 * i + 1);

      if (p == 0) {
        fail_unless_equals_uint64 (GST_BUFFER_PTS (b), ts);
        fail_unless_equals_uint64 (GST_BUFFER_DURATION (b), dur);
      } else {
        off_sum += ABS ((gdouble) GST_BUFFER_PTS (b) - (gdouble) ts) / GST_SECOND;
        if (i > 0)
          fail_unless (GST_BUFFER_PTS (b) >= GST_BUFFER_PTS ((GstBuffer *)
                  g_ptr_array_index (bufs, i - 1)), "word %u goes back", i);
      }
    }
    /* the greedy steps' times: mean 0.12-0.17 s from the DTW starts on
     * the parity clips (gstwhispersink.c, word-timestamps) */
    if (p == 1)
      fail_unless (off_sum / bufs->len < 0.3, "greedy word times %.2f s from DTW on average",
          off_sum / bufs->len);
    g_array_unref (times);
    g_ptr_array_unref (msgs);
    g_ptr_array_unref (bufs);
    g_ptr_array_unref (texts);
    gst_element_set_bus (h->element, NULL);
    gst_object_unref (bus);
    gst_harness_teardown (h);
  }
}
GST_END_TEST;

GST_START_TEST (test_nonzero_segment_start)
{
  GstHarness *h = wt_harness_new (FALSE, NULL);
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
    /* Output PTS are running time (srtenc writes them as they are). */
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), s->start);
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (b), s->end - s->start);
  }

  /* The output segment starts at the input's base (0) and keeps its stream
   * time. */
  events = pull_events (h);
  for (i = 0; i < events->len; i++) {
    GstEvent *ev = g_ptr_array_index (events, i);
    const GstSegment *out;
    if (GST_EVENT_TYPE (ev) != GST_EVENT_SEGMENT)
      continue;
    gst_event_parse_segment (ev, &out);
    if (out->time == time) {
      fail_unless_equals_uint64 (out->start, 0);
      fail_unless_equals_uint64 (out->base, 0);
      found = TRUE;
    }
  }
  fail_unless (found, "no output segment with the input's time");
  check_coverage (bufs, events, 0, samples_time (jfk_n));

  msgs = wt_pop_text_messages (bus);
  fail_unless (msgs->len > 0);
  for (i = 0; i < msgs->len; i++) {
    const GstStructure *st = gst_message_get_structure (g_ptr_array_index (msgs, i));
    guint64 ts, rt, stt;
    gst_structure_get (st, "timestamp", G_TYPE_UINT64, &ts, "running-time",
        G_TYPE_UINT64, &rt, "stream-time", G_TYPE_UINT64, &stt, NULL);
    fail_unless_equals_uint64 (rt, ts);
    fail_unless_equals_uint64 (stt, ts + time);
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
  GstHarness *h = wt_harness_new (FALSE, NULL);
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
  GstHarness *h = wt_harness_new (FALSE, NULL);
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
  GstHarness *h = wt_harness_new (FALSE, "offline-mode=exact");
  Monitor *m = monitor_new (h);
  GPtrArray *texts = g_ptr_array_new_with_free_func (g_free), *bufs;
  gsize n;
  float *pcm = long_input (&n);
  GArray *want = wt_engine_segments (pcm, n);
  guint64 received, transcribed, dropped;
  guint i, early;

  fail_unless_equals_int (wt_push_pcm (h, pcm, n, 0, MS100, TRUE), GST_FLOW_OK);
  /* Nothing before the drain. 36 s is more than a window plus its
   * lookahead: windowed mode has text out at this point
   * (test_windowed_mode_long_input), live mode would have had it after a
   * few seconds. Once the barrier is out, the element has handled all of
   * that audio: neither text nor a call to the engine may have come of it. */
  push_barrier (h);
  early = wait_barrier (m, 1);
  fail_unless (early == 0, "exact mode pushed %u text buffers before the drain, the "
      "first: \"%s\"", early, early ? (gchar *) g_ptr_array_index (m->buffer_texts, 0) : "");
  get_stats (h->element, &received, &transcribed, &dropped);
  fail_unless_equals_uint64 (received, samples_time (n));
  fail_unless (transcribed == 0, "exact mode gave the engine %" GST_TIME_FORMAT
      " of audio before the drain", GST_TIME_ARGS (transcribed));
  fail_unless (element_decode_steps (h->element) == 0, "the engine ran %" G_GUINT64_FORMAT
      " decode steps before the drain", element_decode_steps (h->element));

  /* The drain: the engine's own transcription of the whole input. */
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
  monitor_free (m);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_windowed_mode_long_input)
{
  GstHarness *h = wt_harness_new (FALSE, "offline-mode=windowed");
  Monitor *m = monitor_new (h);
  GPtrArray *texts = g_ptr_array_new_with_free_func (g_free), *bufs;
  gsize n;
  float *pcm = long_input (&n);
  GArray *want = wt_engine_segments (pcm, n);
  gchar *got_text, *want_text = wt_join_segments (want);
  GstClockTime last_end = 0;
  guint i, early;

  fail_unless_equals_int (wt_push_pcm (h, pcm, n, 0, MS100, TRUE), GST_FLOW_OK);
  /* The first window comes out before the drain: by the time the barrier
   * is out (no timing involved). */
  push_barrier (h);
  early = wait_barrier (m, 1);
  fail_unless (early > 0, "windowed mode pushed no text before the drain, with %"
      GST_TIME_FORMAT " buffered", GST_TIME_ARGS (samples_time (n)));
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, texts);
  fail_unless (bufs->len > early);

  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);
    GST_INFO ("%s%" GST_TIME_FORMAT " %s", i < early ? "early " : "", GST_TIME_ARGS
        (GST_BUFFER_PTS (b)), (gchar *) g_ptr_array_index (texts, i));
    fail_unless (GST_BUFFER_PTS (b) >= last_end);
    last_end = GST_BUFFER_PTS (b) + GST_BUFFER_DURATION (b);
  }
  fail_unless (last_end <= samples_time (n));
  g_ptr_array_add (texts, NULL);
  got_text = g_strjoinv (" ", (gchar **) texts->pdata);
  GST_INFO ("windowed: %s", got_text);
  GST_INFO ("engine:   %s", want_text);
  /* The same speech three times; the window edges may differ slightly in
   * wording, but every phrase is there once per repetition, in order. */
  check_phrases ("windowed mode", got_text, jfk_phrases, 3);
  check_phrases ("the engine (reference)", want_text, jfk_phrases, 3);
  g_free (got_text);
  g_free (want_text);
  g_ptr_array_unref (bufs);
  g_ptr_array_unref (texts);
  wt_segments_free (want);
  g_free (pcm);
  monitor_free (m);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* ------------------------------------------------------------------------ */

static gpointer
flush_start_thread (gpointer user_data)
{
  GstHarness *h = user_data;
  Monitor *m = g_object_get_data (G_OBJECT (h->element), "wt-monitor");

  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  g_mutex_lock (&m->lock);
  m->flush_start_returned = TRUE;
  g_cond_broadcast (&m->cond);
  g_mutex_unlock (&m->lock);
  return NULL;
}

/* A flush while the engine is in the middle of a window. The engine is held
 * still inside its token callback, right after the window's first word
 * (the sync handler blocks the inference thread there), and FLUSH_START
 * comes from another thread: it must return while the engine is held (it
 * never waits for the window), and once released the engine must stop at
 * the next check instead of decoding the rest of the window. Nothing of
 * the flushed window may come out after FLUSH_STOP. */
GST_START_TEST (test_flush_mid_window)
{
  GstHarness *h = wt_harness_new (FALSE, "output=words");
  GstBus *bus = attach_bus (h);
  Monitor *m = monitor_new (h);
  GArray *part_ref;
  gchar *part_text, *after_text;
  GPtrArray *bufs, *after;
  GstSegment seg;
  GThread *thread;
  GstMessage *err;
  gsize part = 3 * WHISPER_SAMPLE_RATE;
  guint64 steps_after;
  gint64 deadline;
  guint i;

  m->hold_first = TRUE;
  g_object_set_data (G_OBJECT (h->element), "wt-monitor", m);
  gst_bus_set_sync_handler (bus, word_gate, m, NULL);

  fail_unless_equals_int (wt_push_pcm (h, jfk, jfk_n, 0, MS100, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  /* The first word: the engine is held in the middle of the window. */
  deadline = g_get_monotonic_time () + WATCHDOG_S * G_TIME_SPAN_SECOND;
  g_mutex_lock (&m->lock);
  while (!m->holding && g_cond_wait_until (&m->cond, &m->lock, deadline));
  g_mutex_unlock (&m->lock);
  fail_unless (m->holding, "no word within %d s", WATCHDOG_S);
  GST_INFO ("engine held after decode step %" G_GUINT64_FORMAT " of the %" G_GUINT64_FORMAT
      " the window takes", m->steps_at_hold, ref_steps);
  fail_unless (m->steps_at_hold + 1 < ref_steps, "the first word came after decode step %"
      G_GUINT64_FORMAT " of the window's %" G_GUINT64_FORMAT ": not in the middle of it",
      m->steps_at_hold, ref_steps);

  /* FLUSH_START returns while the engine stays held. */
  thread = g_thread_new ("flush-start", flush_start_thread, h);
  deadline = g_get_monotonic_time () + WATCHDOG_S * G_TIME_SPAN_SECOND;
  g_mutex_lock (&m->lock);
  while (!m->flush_start_returned && g_cond_wait_until (&m->cond, &m->lock, deadline));
  g_mutex_unlock (&m->lock);
  fail_unless (m->flush_start_returned, "FLUSH_START did not return within %d s while the "
      "engine was held after decode step %" G_GUINT64_FORMAT ": it waits for the window",
      WATCHDOG_S, m->steps_at_hold);

  /* Released, the engine stops at its next check. */
  g_mutex_lock (&m->lock);
  m->released = TRUE;
  g_cond_broadcast (&m->cond);
  g_mutex_unlock (&m->lock);
  g_thread_join (thread);
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
  steps_after = element_decode_steps (h->element);
  GST_INFO ("decode steps: %" G_GUINT64_FORMAT " when held, %" G_GUINT64_FORMAT
      " after FLUSH_STOP, %" G_GUINT64_FORMAT " for the whole window", m->steps_at_hold,
      steps_after, ref_steps);
  fail_unless (steps_after <= m->steps_at_hold + 1, "the flushed window was not cancelled: "
      "the engine ran %" G_GUINT64_FORMAT " decode steps after the flush (from step %"
      G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT "; the whole window takes %" G_GUINT64_FORMAT
      ")", steps_after - m->steps_at_hold, m->steps_at_hold, steps_after, ref_steps);
  fail_unless (m->buffers_at_flush_stop >= 0, "FLUSH_STOP not forwarded");

  /* Whatever was queued before the flush is stale. */
  {
    GstBuffer *b;
    GstEvent *ev;
    while ((b = gst_harness_try_pull (h)))
      gst_buffer_unref (b);
    while ((ev = gst_harness_try_pull_event (h)))
      gst_event_unref (ev);
  }

  /* The element works again after FLUSH_STOP, from a clean state: what
   * comes out after it is the engine's transcription of the new audio,
   * nothing of the flushed window. */
  gst_segment_init (&seg, GST_FORMAT_TIME);
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&seg)));
  fail_unless_equals_int (wt_push_pcm (h, jfk, part, 0, MS100, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, NULL);
  fail_unless (bufs->len > 0);
  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);
    fail_unless (GST_BUFFER_PTS (b) + GST_BUFFER_DURATION (b) <= samples_time (part));
  }
  part_ref = wt_engine_segments (jfk, part);
  part_text = wt_join_segments (part_ref);
  after = g_ptr_array_new ();
  g_mutex_lock (&m->lock);
  for (i = m->buffers_at_flush_stop; i < m->buffer_texts->len; i++)
    g_ptr_array_add (after, g_ptr_array_index (m->buffer_texts, i));
  g_ptr_array_add (after, NULL);
  after_text = g_strjoinv (" ", (gchar **) after->pdata);
  g_mutex_unlock (&m->lock);
  fail_unless (strcmp (after_text, part_text) == 0, "after FLUSH_STOP: \"%s\", the new "
      "audio says \"%s\"", after_text, part_text);

  err = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (err == NULL, "unexpected error");
  g_free (after_text);
  g_free (part_text);
  g_ptr_array_unref (after);
  wt_segments_free (part_ref);
  g_ptr_array_unref (bufs);
  gst_bus_set_sync_handler (bus, NULL, NULL, NULL);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  monitor_free (m);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* output=words pushes each word as soon as the decode step that completes
 * it returns. Checked where the buffers arrive: the harness's sink pad
 * notes how many decode steps the engine had run when each word buffer
 * reached it, and each word's message (posted in the token callback, the
 * inference thread) holds the engine there until that word is downstream,
 * so the count is exact. A word held back, even by one decode step, and
 * all words leaving after the window, both fail. */
GST_START_TEST (test_words_before_last_step)
{
  GstHarness *h = wt_harness_new (FALSE, "output=words");
  GstBus *bus = attach_bus (h);
  Monitor *m = monitor_new (h);
  GPtrArray *texts = g_ptr_array_new_with_free_func (g_free), *bufs, *msgs;
  gint first_word_msg = -1, first_segment_msg = -1;
  GstClockTime last_pts = 0;
  guint64 base, total;
  gchar *joined;
  guint i;

  gst_bus_set_sync_handler (bus, word_gate, m, NULL);
  fail_unless_equals_int (wt_push_pcm (h, jfk, jfk_n, 0, MS100, TRUE), GST_FLOW_OK);
  /* exact mode: the engine starts at the drain */
  base = element_decode_steps (h->element);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  wait_eos (m, 3 * WATCHDOG_S);
  bufs = wt_pull_until_eos (h, texts);
  total = element_decode_steps (h->element) - base;
  g_mutex_lock (&m->lock);
  fail_unless (!m->gave_up, "word %u (\"%s\"), complete after decode step %" G_GUINT64_FORMAT
      ", was not downstream %d s later while the engine waited: words are held back",
      m->gave_up_word, (gchar *) g_ptr_array_index (m->message_texts, m->gave_up_word),
      monitor_steps (m->message_steps, m->gave_up_word) - base, WATCHDOG_S);
  g_mutex_unlock (&m->lock);

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
  /* The whole window ran (the same steps as the engine's own call). */
  fail_unless_equals_uint64 (total, ref_steps);

  /* When each word reached downstream. */
  g_mutex_lock (&m->lock);
  fail_unless_equals_int (m->buffer_steps->len, bufs->len);
  fail_unless_equals_int (m->message_steps->len, bufs->len);
  for (i = 0; i < bufs->len; i++) {
    guint64 pushed = monitor_steps (m->buffer_steps, i) - base;
    guint64 complete = monitor_steps (m->message_steps, i) - base;
    gint field = g_array_index (m->message_fields, gint, i);

    /* The message goes out during the step that completed the word: the
     * token of step s (0-based) is chosen by the engine's forward pass
     * number s + 1, the first being the prompt's. */
    fail_unless (field >= 0 && complete == (guint64) field + 1, "word %u (\"%s\") was "
        "completed by the token of decode step %d, but its message came after %"
        G_GUINT64_FORMAT " forward passes (the step's is %d): the word was held back", i,
        (gchar *) g_ptr_array_index (texts, i), field, complete, field + 1);

    GST_INFO ("word %u \"%s\": complete after step %" G_GUINT64_FORMAT ", downstream after "
        "step %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT, i,
        (gchar *) g_ptr_array_index (texts, i), complete, pushed, total);
    fail_unless (pushed < total, "word %u (\"%s\") reached downstream only after the "
        "window's last decode step (%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT ")", i,
        (gchar *) g_ptr_array_index (texts, i), pushed, total);
    fail_unless (pushed <= complete, "word %u (\"%s\") reached downstream after decode step %"
        G_GUINT64_FORMAT ", though complete after step %" G_GUINT64_FORMAT, i,
        (gchar *) g_ptr_array_index (texts, i), pushed, complete);
  }
  g_mutex_unlock (&m->lock);

  /* The bus: each word's message before the segment's final message. */
  msgs = wt_pop_text_messages (bus);
  for (i = 0; i < msgs->len; i++) {
    const GstStructure *st = gst_message_get_structure (g_ptr_array_index (msgs, i));
    const gchar *gran = gst_structure_get_string (st, "granularity");

    if (g_strcmp0 (gran, "word") == 0) {
      if (first_word_msg < 0)
        first_word_msg = i;
    } else if (first_segment_msg < 0) {
      first_segment_msg = i;
    }
  }
  fail_unless (first_word_msg >= 0 && first_segment_msg >= 0);
  fail_unless (first_word_msg < first_segment_msg);

  g_free (joined);
  g_ptr_array_unref (msgs);
  g_ptr_array_unref (bufs);
  g_ptr_array_unref (texts);
  gst_bus_set_sync_handler (bus, NULL, NULL, NULL);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  monitor_free (m);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* ------------------------------------------------------------------------ */

GST_START_TEST (test_live_chunks)
{
  /* Audio is fed a second at a time, as a live source would, each second
   * one buffer (more than the element's chunk, latency / 6) pushed once the
   * element has handled the one before (the barrier behind it is out):
   * every engine call ends on a second's boundary whatever the machine's
   * speed, and nothing falls behind. (Pushed in 100-ms pieces, a call
   * started after any 0.67 s of them, at a point that moved with the load,
   * and the text with it.) The words are committed when two decodes agree:
   * `lateness` is far above what the buffer can hold, so the deadline
   * (which depends on how long each call takes, and so on the machine's
   * load) never commits a word first, and the text is the same on a busy
   * machine as on an idle one. (The deadline itself is test-element-commit's
   * test_force_before; a CI machine under load once forced "ask not what"
   * after one decode here, which then read "Just knock, watch".) */
  guint latency = 4000;         /* pushes of 1 s */
  gchar *props = g_strdup_printf ("latency=%u lateness=60000", latency);
  GstHarness *h = wt_harness_new (TRUE, props);
  GstBus *bus = attach_bus (h);
  Monitor *m = monitor_new (h);
  GPtrArray *bufs, *texts = g_ptr_array_new_with_free_func (g_free);
  gsize chunk = gst_util_uint64_scale_int (latency / 4, WHISPER_SAMPLE_RATE, 1000), off, n;
  float *pcm = long_input (&n);
  guint barriers = 0;
  GstMessage *warn;
  gchar *joined;
  guint i;

  gst_harness_set_upstream_latency (h, 20 * GST_MSECOND);
  fail_unless_equals_uint64 (gst_harness_query_latency (h), (latency + 20) * GST_MSECOND);
  for (off = 0; off < n; off += chunk) {
    fail_unless_equals_int (wt_push_pcm (h, pcm + off, MIN (chunk, n - off),
            samples_time (off), chunk, off == 0), GST_FLOW_OK);
    push_barrier (h);
    wait_barrier (m, ++barriers);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, texts);
  check_stats_at_eos (h->element, n, FALSE);
  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);
    GST_INFO ("live %" GST_TIME_FORMAT " +%" GST_TIME_FORMAT " %s",
        GST_TIME_ARGS (GST_BUFFER_PTS (b)), GST_TIME_ARGS (GST_BUFFER_DURATION (b)),
        (gchar *) g_ptr_array_index (texts, i));
    fail_unless (GST_BUFFER_PTS (b) + GST_BUFFER_DURATION (b) <= samples_time (n));
  }
  g_ptr_array_add (texts, NULL);
  joined = g_strjoinv (" ", (gchar **) texts->pdata);
  GST_INFO ("live text: %s", joined);
  /* The speech, once: the words of the three repetitions within 5 % WER
   * (1 of 66 words differs here: "what" in the first),
   * and no anchor more often than it is spoken (nothing said twice). */
  {
    gchar *three = g_strjoin (" ", ref_text, ref_text, ref_text, NULL);
    gchar *got = phrase_sequence (joined, jfk_anchors);
    const double wer = wt_wer (three, joined);
    fail_unless (wer <= 0.05, "live mode: WER %.3f: %s", wer, joined);
    for (i = 0; jfk_anchors[i]; i++) {
      guint count = 0;
      for (const gchar *c = got; *c; c++)
        count += *c == (gchar) ('0' + i);
      fail_unless (count <= 3, "live mode: \"%s\" %u times: %s", jfk_anchors[i], count,
          joined);
    }
    g_free (got);
    g_free (three);
  }
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
  g_free (props);
  g_free (pcm);
  g_ptr_array_unref (texts);
  g_ptr_array_unref (bufs);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  monitor_free (m);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_live_overload_drops_with_gap)
{
  /* 33 s of live audio at once: far more than latency + lateness (4 s).
   * overload=drop: dropped at once (overload=degrade takes its steps
   * first, and may catch up: test-element-overload.c) */
  GstHarness *h = wt_harness_new (TRUE, "latency=4000 overload=drop");
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

/* A segment with a negative rate (reverse playback) is refused with an
 * error naming the rate; before, its text reached
 * gst_segment_to_running_time () with stop -1, a CRITICAL (found by
 * tests/fuzz/element-fuzz.c). A forward segment after it works. */
GST_START_TEST (test_reverse_segment_refused)
{
  GstHarness *h = wt_harness_new (FALSE, NULL);
  GstBus *bus = attach_bus (h);
  GstMessage *msg;
  GError *err = NULL;
  GPtrArray *bufs;
  GstSegment seg;

  gst_segment_init (&seg, GST_FORMAT_TIME);
  seg.rate = -1.0;
  /* TRUE either way: the harness's pad stores a sticky event it pushes. */
  gst_harness_push_event (h, gst_event_new_segment (&seg));
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error for a reverse segment");
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (strstr (err->message, "Reverse playback") != NULL, "%s", err->message);
  g_error_free (err);
  gst_message_unref (msg);

  gst_segment_init (&seg, GST_FORMAT_TIME);
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&seg)));
  fail_unless_equals_int (wt_push_pcm (h, jfk, jfk_n, 0, MS100, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, NULL);
  fail_unless_equals_int (bufs->len, ref->len);

  g_ptr_array_unref (bufs);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* Timestamps at the end of the clock's range (found by
 * tests/fuzz/element-fuzz.c: text whose PTS + DURATION wrapped around):
 * audio that ends past the largest valid timestamp is dropped, not
 * counted as received and gives no text; a GAP that reaches past it covers
 * up to it. */
GST_START_TEST (test_timestamps_past_max)
{
  GstHarness *h = wt_harness_new (FALSE, NULL);
  const GstClockTime last = GST_CLOCK_TIME_NONE - 1;
  const GstClockTime audio_at = last - GST_SECOND / 2, gap_at = last - GST_SECOND;
  GstStructure *stats = NULL;
  guint64 received = G_MAXUINT64;
  GPtrArray *bufs, *events;
  gboolean gap_found = FALSE;
  guint i;

  /* 3 s of speech in one buffer that starts 0.5 s before the end. */
  fail_unless_equals_int (wt_push_pcm (h, jfk, 3 * WHISPER_SAMPLE_RATE, audio_at,
          3 * WHISPER_SAMPLE_RATE, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_gap (gap_at, 5 * GST_SECOND)));
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, NULL);
  fail_unless_equals_int (bufs->len, 0);

  events = pull_events (h);
  for (i = 0; i < events->len; i++) {
    GstEvent *ev = g_ptr_array_index (events, i);
    GstClockTime ts, dur;
    if (GST_EVENT_TYPE (ev) != GST_EVENT_GAP)
      continue;
    gst_event_parse_gap (ev, &ts, &dur);
    if (!GST_CLOCK_TIME_IS_VALID (dur) || dur == 0)
      continue;
    fail_unless (ts <= last - dur, "GAP %" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT
        " wraps around", ts, dur);
    if (ts == gap_at && ts + dur == last)
      gap_found = TRUE;
  }
  fail_unless (gap_found, "no GAP up to the largest timestamp");

  g_object_get (h->element, "stats", &stats, NULL);
  fail_unless (gst_structure_get_uint64 (stats, "audio-received", &received));
  fail_unless_equals_uint64 (received, 0);

  gst_structure_free (stats);
  g_ptr_array_unref (events);
  g_ptr_array_unref (bufs);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* A GAP up to the largest timestamp leaves no room for text in its
 * segment: text of audio after it (at earlier timestamps) is dropped, not
 * sent with a PTS + DURATION that wraps around (found by
 * tests/fuzz/element-fuzz.c, seed 200 case 12524). */
GST_START_TEST (test_text_after_gap_to_end)
{
  GstHarness *h = wt_harness_new (FALSE, NULL);
  const GstClockTime last = GST_CLOCK_TIME_NONE - 1;
  GPtrArray *bufs;
  guint i;

  fail_unless (gst_harness_push_event (h, gst_event_new_gap (last - GST_SECOND,
              5 * GST_SECOND)));
  fail_unless_equals_int (wt_push_pcm (h, jfk, 3 * WHISPER_SAMPLE_RATE, 0, MS100, TRUE),
      GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, NULL);
  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);
    GstClockTime pts = GST_BUFFER_PTS (b), dur = GST_BUFFER_DURATION (b);
    fail_unless (GST_CLOCK_TIME_IS_VALID (pts) && GST_CLOCK_TIME_IS_VALID (dur));
    fail_unless (pts <= last - dur, "text %u: %" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT
        " wraps around", i, pts, dur);
  }
  g_ptr_array_unref (bufs);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* The first buffer of a run takes its DISCONT: when it is dropped (its
 * audio ends past the largest timestamp), the next buffer must start the
 * run, or that audio has no start time and its text no PTS. An empty
 * buffer is never dropped. (Found by tests/fuzz/element-fuzz.c, seed 200
 * case 2323, an empty buffer whose duration was not set.) */
GST_START_TEST (test_dropped_buffer_keeps_discont)
{
  /* Words: a word of audio without a start time still went out. */
  GstHarness *h = wt_harness_new (FALSE, "output=words");
  GstBuffer *empty = gst_buffer_new ();
  GPtrArray *bufs;
  guint i;

  fail_unless_equals_int (wt_push_pcm (h, jfk, WHISPER_SAMPLE_RATE,
          GST_CLOCK_TIME_NONE - 1 - GST_SECOND / 2, WHISPER_SAMPLE_RATE, FALSE), GST_FLOW_OK);
  fail_unless_equals_int (wt_push_pcm (h, jfk, 3 * WHISPER_SAMPLE_RATE, 2 * GST_SECOND,
          MS100, FALSE), GST_FLOW_OK);
  GST_BUFFER_PTS (empty) = 5 * GST_SECOND;
  fail_unless_equals_int (gst_harness_push (h, empty), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, NULL);
  fail_unless (bufs->len > 0);
  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);
    fail_unless (GST_CLOCK_TIME_IS_VALID (GST_BUFFER_PTS (b)), "text %u has no PTS", i);
    fail_unless (GST_BUFFER_PTS (b) >= 2 * GST_SECOND);
  }
  g_ptr_array_unref (bufs);
  gst_harness_teardown (h);
}
GST_END_TEST;

typedef struct {
  GMutex lock;
  GCond cond;
  gboolean holding, released;
} Hold;

/* Bus sync handler: the first text message holds the inference thread
 * until the test releases it. */
static GstBusSyncReply
hold_first_text (G_GNUC_UNUSED GstBus *bus, GstMessage *msg, gpointer user_data)
{
  Hold *hold = user_data;
  gint64 deadline = g_get_monotonic_time () + 2 * WATCHDOG_S * G_TIME_SPAN_SECOND;

  if (GST_MESSAGE_TYPE (msg) != GST_MESSAGE_ELEMENT
      || !gst_message_has_name (msg, "whisper-text"))
    return GST_BUS_PASS;
  g_mutex_lock (&hold->lock);
  if (!hold->holding) {
    hold->holding = TRUE;
    g_cond_broadcast (&hold->cond);
    while (!hold->released && g_cond_wait_until (&hold->cond, &hold->lock, deadline));
  }
  g_mutex_unlock (&hold->lock);
  return GST_BUS_PASS;
}

/* A second stream whose STREAM_START and CAPS are still queued behind the
 * first stream's transcription when a flush comes: upstream does not send
 * them again, and the text after the flush must still go out in the second
 * stream (found by tests/fuzz/element-fuzz.c: text after a flush without
 * any STREAM_START). The inference thread is held inside the first
 * stream's EOS drain while they are queued. */
GST_START_TEST (test_flush_keeps_queued_stream_start)
{
  GstHarness *h = wt_harness_new (FALSE, NULL);
  GstBus *bus = attach_bus (h);
  Hold hold = { 0, };
  const gsize part = 3 * WHISPER_SAMPLE_RATE;
  GstEvent *ss;
  const gchar *id = NULL;
  GPtrArray *bufs;
  GstCaps *caps;
  GstSegment seg;
  gint64 deadline;

  g_mutex_init (&hold.lock);
  g_cond_init (&hold.cond);
  gst_bus_set_sync_handler (bus, hold_first_text, &hold, NULL);
  fail_unless_equals_int (wt_push_pcm (h, jfk, part, 0, MS100, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  deadline = g_get_monotonic_time () + WATCHDOG_S * G_TIME_SPAN_SECOND;
  g_mutex_lock (&hold.lock);
  while (!hold.holding && g_cond_wait_until (&hold.cond, &hold.lock, deadline));
  g_mutex_unlock (&hold.lock);
  fail_unless (hold.holding, "no text within %d s", WATCHDOG_S);

  /* The second stream's first events wait behind the held drain. */
  fail_unless (gst_harness_push_event (h, gst_event_new_stream_start ("second-stream")));
  caps = gst_caps_from_string (WT_CAPS_F32);
  fail_unless (gst_harness_push_event (h, gst_event_new_caps (caps)));
  gst_caps_unref (caps);
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  g_mutex_lock (&hold.lock);
  hold.released = TRUE;
  g_cond_broadcast (&hold.cond);
  g_mutex_unlock (&hold.lock);
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));

  gst_segment_init (&seg, GST_FORMAT_TIME);
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&seg)));
  fail_unless_equals_int (wt_push_pcm (h, jfk, part, 0, MS100, TRUE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  bufs = wt_pull_until_eos (h, NULL);
  fail_unless (bufs->len > 0);

  ss = gst_pad_get_sticky_event (h->sinkpad, GST_EVENT_STREAM_START, 0);
  fail_unless (ss != NULL, "no STREAM_START downstream");
  gst_event_parse_stream_start (ss, &id);
  fail_unless_equals_string (id, "second-stream");
  fail_unless (gst_pad_has_current_caps (h->sinkpad));

  gst_event_unref (ss);
  g_ptr_array_unref (bufs);
  gst_bus_set_sync_handler (bus, NULL, NULL, NULL);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  g_mutex_clear (&hold.lock);
  g_cond_clear (&hold.cond);
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
  tcase_add_test (tc, test_reverse_segment_refused);
  tcase_add_test (tc, test_timestamps_past_max);
  tcase_add_test (tc, test_dropped_buffer_keeps_discont);
  tcase_add_test (tc, test_text_after_gap_to_end);
  tcase_add_test (tc, test_flush_keeps_queued_stream_start);
  tcase_add_test (tc, test_discont_drains_and_resyncs);
  tcase_add_test (tc, test_gap_event);
  tcase_add_test (tc, test_exact_mode_long_input);
  tcase_add_test (tc, test_windowed_mode_long_input);
  tcase_add_test (tc, test_flush_mid_window);
  tcase_add_test (tc, test_words_before_last_step);
  tcase_add_test (tc, test_word_timestamps);
  tcase_add_test (tc, test_word_buffers_timed_by_alignment);
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
  ref = wt_engine_segments_full (jfk, jfk_n, &ref_steps);
  ref_text = wt_join_segments (ref);
  GST_INFO ("engine transcript: %s", ref_text);
  return gst_check_run_suite (whispersink_harness_suite (), "whispersink-harness",
      __FILE__);
}
