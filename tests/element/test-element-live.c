/* test-element-live.c: whispersink's live commit path (gstwhisperlive.c)
 * on real speech, fed paced.
 *
 * The element in a GstHarness with a live upstream (the LATENCY query
 * answered live, 100 ms), latency=3000, the other properties at their
 * defaults (beam 5 live, as users get it). jfk.wav goes in as 100-ms F32
 * buffers, each pushed once the element has handled the one before (a
 * custom serialized event pushed behind it has come out, as live-wer.c's
 * --paced does): inference always keeps up however slow the machine is, so
 * nothing is dropped and the decodes see every chunk. A pad probe on the
 * harness's sink pad records the text buffers, the final-transcript events
 * and EOS in the order they arrive. For output=words and output=segments:
 *  - the committed text's word error rate against the published jfk
 *    transcript (../shared/data/README.md) is at most 15 % (measured 4.5 %:
 *    one inserted word, the same with each output and with 1 s added to
 *    every call's duration);
 *  - buffers are in time order without overlaps, each with a PTS and a
 *    DURATION, within the audio;
 *  - no word is committed twice: no two consecutive committed words with
 *    the same text where the second starts before the first's end + 0.2 s
 *    (the commit policy moves a committed word's start onto the previous
 *    committed end, so a repeat's span touches its first copy rather than
 *    overlapping it), no phrase of 3 or more words twice in a row, and the
 *    committed word count is the transcript's 22 within 3;
 *  - every buffer has its whisper-text message (final=TRUE, the same text
 *    and times, granularity "word" or "segment"), and at least one
 *    final=FALSE "interim" message came;
 *  - the custom downstream event rstranscribe/final-transcript reached the
 *    sink pad, the last one after the last text buffer and before EOS.
 * And 5 s of digital silence, jfk.wav, 5 s of silence (output=words): the
 * same, and no buffer lies wholly inside the silences more than 0.3 s from
 * the speech. */
#include <gst/check/gstcheck.h>
#include <string.h>

#include "wer-util.h"
#include "wt-util.h"

#define RATE WHISPER_SAMPLE_RATE
#define BUF_SAMPLES (RATE / 10)
#define BARRIER_NAME "test-element-live-barrier"
#define FINAL_TRANSCRIPT "rstranscribe/final-transcript"
#define LATENCY_MS 3000
#define JFK_TEXT "And so my fellow Americans, ask not what your country can do for you, " \
  "ask what you can do for your country."
#define JFK_WORDS 22
#define MAX_WER_PERCENT 15.0
#define WORD_COUNT_SLACK 3
/* Estimated word times may overlap a little (live-commit.c's slack). */
#define REPEAT_SLACK (200 * GST_MSECOND)
#define MIN_PHRASE_WORDS 3
#define SILENCE_MARGIN (300 * GST_MSECOND)
#define SILENCE_S 5

typedef enum {
  SEEN_TEXT,
  SEEN_FINAL_TRANSCRIPT,
  SEEN_EOS,
} SeenKind;

typedef struct {
  SeenKind kind;
  GstClockTime pts, duration;
  gchar *text;
} Seen;

typedef struct {
  GMutex lock;
  GArray *seen;              /* Seen, in arrival order at the sink pad */
  guint final_wrong_type;    /* final-transcript events not CUSTOM_DOWNSTREAM */
} Probe;

/* A committed word of a final message's words list. */
typedef struct {
  gchar *text;
  GstClockTime start, end;
} Word;

static void
seen_clear (gpointer data)
{
  g_free (((Seen *) data)->text);
}

static void
word_clear (gpointer data)
{
  g_free (((Word *) data)->text);
}

/* Records what reaches the harness's sink pad (the src pad task's thread). */
static GstPadProbeReturn
on_sink_data (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  Probe *p = data;
  Seen s = { 0, GST_CLOCK_TIME_NONE, GST_CLOCK_TIME_NONE, NULL };

  (void) pad;
  if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
    GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
    s.kind = SEEN_TEXT;
    s.pts = GST_BUFFER_PTS (buf);
    s.duration = GST_BUFFER_DURATION (buf);
    s.text = wt_buffer_text (buf);
  } else {
    GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);
    if (GST_EVENT_TYPE (ev) == GST_EVENT_EOS)
      s.kind = SEEN_EOS;
    else if (gst_event_has_name (ev, FINAL_TRANSCRIPT))
      s.kind = SEEN_FINAL_TRANSCRIPT;
    else
      return GST_PAD_PROBE_OK;
  }
  g_mutex_lock (&p->lock);
  if (s.kind == SEEN_FINAL_TRANSCRIPT
      && GST_EVENT_TYPE (GST_PAD_PROBE_INFO_EVENT (info)) != GST_EVENT_CUSTOM_DOWNSTREAM)
    p->final_wrong_type++;
  g_array_append_val (p->seen, s);
  g_mutex_unlock (&p->lock);
  return GST_PAD_PROBE_OK;
}

typedef struct {
  GArray *seen;           /* Seen */
  GPtrArray *messages;    /* whisper-text messages, in order */
  guint final_wrong_type;
  guint errors;           /* error messages on the bus */
  guint64 dropped;        /* stats audio-dropped */
} Run;

static void
run_clear (Run *r)
{
  g_array_unref (r->seen);
  g_ptr_array_unref (r->messages);
}

/* whispersink latency=LATENCY_MS output=`output` live-commit=`commit` on a
 * live upstream, `n` samples of `pcm` pushed paced, then EOS. */
static Run
run_paced (const float *pcm, gsize n, const gchar *output, const gchar *commit)
{
  GstElement *e = gst_element_factory_make ("whispersink", NULL);
  GstBus *bus = gst_bus_new ();
  Probe p = { 0, };
  Run r = { 0, };
  GstHarness *h;
  GstMessage *m;
  gsize off;

  fail_unless (e != NULL);
  g_object_set (e, "latency", (guint) LATENCY_MS, NULL);
  gst_util_set_object_arg (G_OBJECT (e), "output", output);
  gst_util_set_object_arg (G_OBJECT (e), "live-commit", commit);
  gst_element_set_bus (e, bus);
  h = gst_harness_new_with_element (e, "sink", "src");
  gst_object_unref (e);
  gst_harness_set_live (h, TRUE);
  gst_harness_set_upstream_latency (h, 100 * GST_MSECOND);
  gst_harness_set_src_caps_str (h, WT_CAPS_F32);

  g_mutex_init (&p.lock);
  p.seen = g_array_new (FALSE, TRUE, sizeof (Seen));
  g_array_set_clear_func (p.seen, seen_clear);
  gst_pad_add_probe (h->sinkpad, GST_PAD_PROBE_TYPE_BUFFER
      | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, on_sink_data, &p, NULL);

  for (off = 0; off < n; off += BUF_SAMPLES) {
    GstBuffer *b;
    fail_unless_equals_int (wt_push_pcm (h, pcm + off, MIN (BUF_SAMPLES, n - off),
            gst_util_uint64_scale_int_round (off, GST_SECOND, RATE), BUF_SAMPLES, off == 0),
        GST_FLOW_OK);
    fail_unless (wt_barrier (h, BARRIER_NAME), "the element did not pass the barrier at %"
        G_GSIZE_FORMAT " samples", off);
    while ((b = gst_harness_try_pull (h)))
      gst_buffer_unref (b);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  for (;;) {
    GstEvent *ev = gst_harness_pull_event (h);
    gboolean eos = ev && GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
    fail_unless (ev != NULL, "no EOS from the element");
    gst_event_unref (ev);
    if (eos)
      break;
  }

  r.dropped = wt_stats_u64 (h->element, "audio-dropped");
  r.messages = wt_pop_text_messages (bus);
  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR))) {
    GError *err = NULL;
    gst_message_parse_error (m, &err, NULL);
    GST_WARNING ("error: %s", err->message);
    g_clear_error (&err);
    r.errors++;
    gst_message_unref (m);
  }
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  g_mutex_lock (&p.lock);
  r.seen = p.seen;
  r.final_wrong_type = p.final_wrong_type;
  g_mutex_unlock (&p.lock);
  g_mutex_clear (&p.lock);
  return r;
}

/* The words lists of the final=TRUE messages, in order. */
static GArray *
committed_words (const Run *r)
{
  GArray *words = g_array_new (FALSE, TRUE, sizeof (Word));

  g_array_set_clear_func (words, word_clear);
  for (guint i = 0; i < r->messages->len; i++) {
    const GstStructure *s = gst_message_get_structure (g_ptr_array_index (r->messages, i));
    gboolean final = FALSE;
    const GValue *list = gst_structure_get_value (s, "words");

    fail_unless (gst_structure_get_boolean (s, "final", &final));
    if (!final)
      continue;
    fail_unless (list != NULL && GST_VALUE_HOLDS_LIST (list), "a final message without words");
    for (guint k = 0; k < gst_value_list_get_size (list); k++) {
      const GstStructure *ws = gst_value_get_structure (gst_value_list_get_value (list, k));
      Word w = { g_strdup (gst_structure_get_string (ws, "text")), 0, 0 };
      guint64 ts = 0, dur = 0;
      fail_unless (w.text != NULL);
      fail_unless (gst_structure_get_uint64 (ws, "timestamp", &ts));
      fail_unless (gst_structure_get_uint64 (ws, "duration", &dur));
      w.start = ts;
      w.end = ts + dur;
      g_array_append_val (words, w);
    }
  }
  return words;
}

/* A word as wer-util scores it: lower-cased letters, digits, apostrophes. */
static gchar *
normalised (const gchar *text)
{
  gchar **parts = wer_words (text);
  gchar *joined = g_strjoinv (" ", parts);

  g_strfreev (parts);
  return joined;
}

/* Time order, no overlaps, PTS and DURATION set, within [0, audio_end];
 * returns the texts joined. */
static gchar *
check_buffers (const Run *r, GstClockTime audio_end, guint *n_buffers)
{
  GString *text = g_string_new (NULL);
  GstClockTime prev_end = 0;
  guint n = 0;

  for (guint i = 0; i < r->seen->len; i++) {
    const Seen *s = &g_array_index (r->seen, Seen, i);
    if (s->kind != SEEN_TEXT)
      continue;
    fail_unless (GST_CLOCK_TIME_IS_VALID (s->pts), "buffer %u '%s' without PTS", n, s->text);
    fail_unless (GST_CLOCK_TIME_IS_VALID (s->duration), "buffer %u '%s' without DURATION", n,
        s->text);
    fail_unless (s->pts >= prev_end, "buffer %u '%s' at %" GST_TIME_FORMAT
        " before the previous one's end %" GST_TIME_FORMAT, n, s->text,
        GST_TIME_ARGS (s->pts), GST_TIME_ARGS (prev_end));
    /* the output stage's 1-ms minimum duration may pass the last sample */
    fail_unless (s->pts + s->duration <= audio_end + GST_MSECOND, "buffer %u '%s' ends at %"
        GST_TIME_FORMAT ", after the audio (%" GST_TIME_FORMAT ")", n, s->text,
        GST_TIME_ARGS (s->pts + s->duration), GST_TIME_ARGS (audio_end));
    prev_end = s->pts + s->duration;
    g_string_append_printf (text, "%s%s", text->len ? " " : "", s->text);
    n++;
  }
  *n_buffers = n;
  return g_string_free (text, FALSE);
}

/* Each buffer's message: final, the same text and times, the granularity;
 * and at least one interim message. */
static void
check_messages (const Run *r, const gchar *granularity)
{
  guint b = 0, interim = 0;

  for (guint i = 0; i < r->messages->len; i++) {
    const GstStructure *s = gst_message_get_structure (g_ptr_array_index (r->messages, i));
    const gchar *g = gst_structure_get_string (s, "granularity");
    const gchar *text = gst_structure_get_string (s, "text");
    gboolean final = FALSE;
    guint64 ts = 0, dur = 0;

    fail_unless (gst_structure_get_boolean (s, "final", &final));
    fail_unless (text != NULL && g != NULL);
    if (!final) {
      fail_unless_equals_string (g, "interim");
      interim++;
      continue;
    }
    fail_unless_equals_string (g, granularity);
    /* the next buffer */
    while (b < r->seen->len && g_array_index (r->seen, Seen, b).kind != SEEN_TEXT)
      b++;
    fail_unless (b < r->seen->len, "final message '%s' without a buffer", text);
    const Seen *buf = &g_array_index (r->seen, Seen, b);
    fail_unless_equals_string (text, buf->text);
    fail_unless (gst_structure_get_uint64 (s, "timestamp", &ts)
        && gst_structure_get_uint64 (s, "duration", &dur));
    fail_unless_equals_uint64 (ts, buf->pts);
    fail_unless_equals_uint64 (dur, buf->duration);
    b++;
  }
  while (b < r->seen->len && g_array_index (r->seen, Seen, b).kind != SEEN_TEXT)
    b++;
  fail_unless (b == r->seen->len, "buffer '%s' without a final message",
      b < r->seen->len ? g_array_index (r->seen, Seen, b).text : "");
  fail_unless (interim > 0, "no interim message");
}

/* The last final-transcript event after the last text buffer, before EOS;
 * EOS last. */
static void
check_final_transcript (const Run *r)
{
  gint last_text = -1, last_final = -1, eos = -1;
  guint n_final = 0;

  for (guint i = 0; i < r->seen->len; i++) {
    switch (g_array_index (r->seen, Seen, i).kind) {
      case SEEN_TEXT:
        fail_unless (eos < 0, "text after EOS");
        last_text = i;
        break;
      case SEEN_FINAL_TRANSCRIPT:
        fail_unless (eos < 0, "final-transcript after EOS");
        last_final = i;
        n_final++;
        break;
      case SEEN_EOS:
        eos = i;
        break;
    }
  }
  fail_unless_equals_int (r->final_wrong_type, 0);
  fail_unless (n_final > 0, "no " FINAL_TRANSCRIPT " event");
  fail_unless (eos >= 0, "no EOS at the sink pad");
  fail_unless (last_final > last_text, "the last text buffer (%d) after the last "
      FINAL_TRANSCRIPT " (%d)", last_text, last_final);
  GST_INFO ("%u final-transcript events", n_final);
}

/* No word committed twice in a row, no phrase twice in a row, about the
 * transcript's word count. */
static void
check_no_repeats (const GArray *words)
{
  g_autoptr (GPtrArray) norm = g_ptr_array_new_with_free_func (g_free);

  for (guint i = 0; i < words->len; i++)
    g_ptr_array_add (norm, normalised (g_array_index (words, Word, i).text));
  for (guint i = 1; i < words->len; i++) {
    const Word *a = &g_array_index (words, Word, i - 1), *b = &g_array_index (words, Word, i);
    fail_if (strcmp (norm->pdata[i - 1], norm->pdata[i]) == 0 && b->start < a->end
        + REPEAT_SLACK, "'%s' at %" GST_TIME_FORMAT " repeats '%s' ending at %"
        GST_TIME_FORMAT, b->text, GST_TIME_ARGS (b->start), a->text, GST_TIME_ARGS (a->end));
  }
  for (guint k = MIN_PHRASE_WORDS; 2 * k <= words->len; k++)
    for (guint i = 0; i + 2 * k <= words->len; i++) {
      gboolean same = TRUE;
      for (guint j = 0; j < k && same; j++)
        same = strcmp (norm->pdata[i + j], norm->pdata[i + k + j]) == 0;
      fail_if (same, "a phrase of %u words from '%s' committed twice in a row", k,
          g_array_index (words, Word, i).text);
    }
  fail_unless (words->len + WORD_COUNT_SLACK >= JFK_WORDS
      && words->len <= JFK_WORDS + WORD_COUNT_SLACK, "%u words committed, the transcript "
      "has %d", words->len, JFK_WORDS);
}

/* Every check but the silence one; returns the committed text. */
static gchar *
check_run (const Run *r, const gchar *granularity, GstClockTime audio_end)
{
  g_autoptr (GArray) words = committed_words (r);
  guint n_buffers = 0, errors = 0, ref_words = 0, short_words = 0;
  gchar *text = check_buffers (r, audio_end, &n_buffers);
  double wer = wer_percent (JFK_TEXT, text, &errors, &ref_words);

  for (guint i = 0; i < words->len; i++)
    if (g_array_index (words, Word, i).end - g_array_index (words, Word, i).start
        < 20 * GST_MSECOND)
      short_words++;
  GST_INFO ("%s: %u buffers, %u words (%u under 20 ms), WER %.1f %% (%u/%u): %s",
      granularity, n_buffers, words->len, short_words, wer, errors, ref_words, text);
  fail_unless_equals_int (r->errors, 0);
  fail_unless_equals_uint64 (r->dropped, 0);
  fail_unless (n_buffers > 0, "no text");
  fail_unless (wer <= MAX_WER_PERCENT, "%s: WER %.1f %% (%u/%u): '%s'", granularity, wer,
      errors, ref_words, text);
  check_messages (r, granularity);
  check_final_transcript (r);
  check_no_repeats (words);
  return text;
}

static void
check_jfk (const gchar *output, const gchar *granularity, const gchar *commit)
{
  gsize n;
  float *pcm = wt_load_jfk (&n);
  Run r = run_paced (pcm, n, output, commit);
  g_autofree gchar *text = check_run (&r, granularity,
      gst_util_uint64_scale_int_round (n, GST_SECOND, RATE));

  run_clear (&r);
  g_free (pcm);
}

GST_START_TEST (test_live_words)
{
  check_jfk ("words", "word", "agreement");
}
GST_END_TEST;

/* Every word at its deadline instead of at agreement: the same checks. */
GST_START_TEST (test_live_words_deadline)
{
  check_jfk ("words", "word", "deadline");
}
GST_END_TEST;

GST_START_TEST (test_live_segments)
{
  check_jfk ("segments", "segment", "agreement");
}
GST_END_TEST;

/* Silence, jfk, silence: nothing is timed in the silences. */
GST_START_TEST (test_live_silence_around)
{
  gsize n_jfk;
  float *jfk = wt_load_jfk (&n_jfk);
  const gsize lead = SILENCE_S * RATE, n = lead + n_jfk + SILENCE_S * RATE;
  float *pcm = g_new0 (float, n);
  const GstClockTime speech_start = gst_util_uint64_scale_int_round (lead, GST_SECOND, RATE);
  const GstClockTime speech_end = gst_util_uint64_scale_int_round (lead + n_jfk, GST_SECOND,
      RATE);

  memcpy (pcm + lead, jfk, n_jfk * sizeof (float));
  Run r = run_paced (pcm, n, "words", "agreement");
  g_autofree gchar *text = check_run (&r, "word",
      gst_util_uint64_scale_int_round (n, GST_SECOND, RATE));

  for (guint i = 0; i < r.seen->len; i++) {
    const Seen *s = &g_array_index (r.seen, Seen, i);
    if (s->kind != SEEN_TEXT)
      continue;
    fail_if (s->pts + s->duration + SILENCE_MARGIN < speech_start, "'%s' at %"
        GST_TIME_FORMAT " + %" GST_TIME_FORMAT " in the leading silence", s->text,
        GST_TIME_ARGS (s->pts), GST_TIME_ARGS (s->duration));
    fail_if (s->pts > speech_end + SILENCE_MARGIN, "'%s' at %" GST_TIME_FORMAT
        " in the trailing silence", s->text, GST_TIME_ARGS (s->pts));
  }
  run_clear (&r);
  g_free (jfk);
  g_free (pcm);
}
GST_END_TEST;

/* WHISPER_LIVE_CALL_DURATION_MS (gstwhispercall.c) replaces the measured
 * duration of every live call in the deadline: at 4000 ms against a
 * budget of 3000 ms, the next decode would come too late for every word,
 * so each word is committed by the decode that first gives it and no
 * interim message ever comes (the real calls, a fraction of a second
 * here, leave words waiting: test_live_words sees interim messages). The
 * element reads the variable once per process: this relies on check's
 * fork of each test (not with CK_FORK=no). */
GST_START_TEST (test_live_nominal_call_duration)
{
  gsize n;
  float *pcm = wt_load_jfk (&n);
  guint interim = 0, final = 0;
  Run r;

  g_setenv ("WHISPER_LIVE_CALL_DURATION_MS", "4000", TRUE);
  r = run_paced (pcm, n, "words", "agreement");
  fail_unless_equals_int (r.errors, 0);
  for (guint i = 0; i < r.messages->len; i++) {
    gboolean is_final = FALSE;
    gst_structure_get_boolean (gst_message_get_structure (g_ptr_array_index (r.messages, i)),
        "final", &is_final);
    if (is_final)
      final++;
    else
      interim++;
  }
  fail_unless (final > 0, "no word committed");
  fail_unless_equals_int (interim, 0);
  run_clear (&r);
  g_free (pcm);
}
GST_END_TEST;

static Suite *
live_suite (void)
{
  Suite *s = suite_create ("whispersink-live");
  TCase *tc = tcase_create ("live");

  /* each test: 8 to 11 s on a quiet 2-core machine */
  tcase_set_timeout (tc, 300);
  tcase_add_test (tc, test_live_words);
  tcase_add_test (tc, test_live_words_deadline);
  tcase_add_test (tc, test_live_segments);
  tcase_add_test (tc, test_live_silence_around);
  tcase_add_test (tc, test_live_nominal_call_duration);
  suite_add_tcase (s, tc);
  return s;
}

int
main (int argc, char **argv)
{
  return wt_run_suite_with_model (argc, argv, live_suite, "whispersink-live", __FILE__);
}
