/* live-commit: what a live-subtitling user sees from whispersink.
 *
 *   live-commit [--minutes M] [--latency MS] [--model PATH] [--set PROP=VALUE]...
 *               [--output words|segments] [--playback | --paced]
 *               [--live-only | --offline-only] [--seed N] [--verbose]
 *               [--language LANG]
 *               SHARED_DATA_DIR LIBRIVOX_DIR | --programme FILE.wav
 *
 * The programme: real speech with published transcripts (jfk.wav, the left
 * channel of stereo_diarization.wav, the LibriVox clips of LIBRIVOX_DIR's
 * `transcription` file in file order), each clip followed by 1.0-2.0 s
 * (seeded random) of white noise at about -70 dBFS (N(0, 3e-4) floats),
 * looped until at least M minutes (10) of audio. --programme instead: a
 * programme made beforehand, FILE.wav and its manifest FILE.tsv
 * (tests/live-eval/make-set.py; programme_load_made ()).
 *
 * Live pass:
 *   appsrc (live, 100-ms F32LE buffers, each pushed when its capture would
 *           end on the pipeline clock)
 *     [! tee ! queue (latency + 2 s) ! fakesink sync=true   (--playback)
 *        tee ! queue]
 *     ! whispersink latency=L output=words ! fakesink sync=true
 * A buffer probe on the last fakesink's sink pad records every text
 * buffer's text, PTS, DURATION and the running time at which it arrived.
 * --paced instead: whispersink alone in a GstHarness with a live upstream,
 * each 100-ms buffer pushed once the element has handled the one before (a
 * custom serialized event pushed behind it has come out). Its calls start
 * at the chunk boundaries of a real-time run whose calls are shorter than
 * a chunk, so the text is that run's, however busy or slow the machine,
 * and the pass takes the inference time only; arrival is then audio time:
 * the end of the audio pushed when the item came out, held (as fakesink
 * sync=true holds the items after it) until the item before it was
 * rendered at its PTS + latency + the upstream's 100 ms. The delays leave
 * out the calls' own duration (about 0.2 s for tiny.en here). The
 * element's deadline counts every call as --call-ms (250) long
 * (WHISPER_LIVE_CALL_DURATION_MS, unless set): counted as measured, on a
 * loaded machine every word was committed at first sight.
 * Offline pass: the same samples through a non-live appsrc (block=true, as
 * fast as the element takes them) ! whispersink ! fakesink, the same model
 * and --set properties.
 *
 * Reported: per committed item (one word with output=words, one phrase with
 * segments) the delay, arrival - (PTS + DURATION), as p50 / p95 / max; the
 * word error rate (wer-util.c: lower-cased, letters, digits and apostrophes)
 * of the live and the offline text (buffers in PTS order) against the
 * published text and of the live text against the offline one, and the
 * same three with the numbers read (wer_words_lang () of wer-util.h: "320",
 * "three hundred and twenty" and "three hundred twenty" are one word,
 * "twelve months" is "12 months") in the programme's language: --language
 * LANG, else the LANG of --programme HALF-LANG.wav, else --set
 * language-code, else en for the built-in programme (English only: other
 * languages keep their numbers as written, the figures are the same); repeated
 * items (a span starting more than 0.2 s before the end of the items
 * committed before it, the same word again over an overlapping span, or a
 * phrase of 3 or more words committed twice in a row); items wholly inside
 * a noise gap, more than 0.3 s from both neighbouring clips; items under
 * 20 ms (times the element clamped); the audio the element dropped (stats), its dropped-audio and
 * excessive-delay warnings and its max-observed-delay; the five clip
 * instances with the worst live word error rate (with --verbose: every item
 * and every clip instance with an error, of both passes). Then one line
 *   RESULT latency=.. p50=.. p95=.. max=.. (s) wer_live_pub=.. wer_offline_pub=..
 *          wer_live_offline=.. (%) repeats=.. in_silence=.. dropped_s=.. ...
 *          lang=.. wer_live_pub_num=.. wer_offline_pub_num=.. wer_live_offline_num=..
 * ("na" for a pass not run). It reports, it does not judge: exit 0, 1 on an
 * error message or a pass that did not reach EOS in time, 2 on bad usage
 * or missing files. Used by live-commit.sh. */
#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/check/gstharness.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "programme.h"
#include "wt-util.h"
#include "wer-util.h"
#include <whisper/whisper.h>

#define RATE WHISPER_SAMPLE_RATE
#define BUF_SAMPLES (RATE / 10)
#define CAPS "audio/x-raw,format=F32LE,rate=16000,channels=1,layout=interleaved"
#define REPEAT_SLACK (200 * GST_MSECOND)     /* estimated word times may overlap */
#define SILENCE_MARGIN (300 * GST_MSECOND)   /* from the clips around a gap */
#define CLIP_MARGIN (500 * GST_MSECOND)      /* a clip's words for its own WER */
#define SQUEEZED (20 * GST_MSECOND)         /* shorter than a spoken word */
#define MIN_PHRASE_WORDS 3                   /* a phrase said twice in a row */
#define MAX_PHRASE_ITEMS 64
#define MAX_LISTED 10
#define WORST_CLIPS 5
#define PACED_BARRIER "live-commit-barrier"
#define UPSTREAM_LATENCY (100 * GST_MSECOND)  /* appsrc min-latency, the harness's */

/* One text buffer as it reached the text fakesink. */
typedef struct {
  gchar *text;
  GstClockTime pts, dur;
  GstClockTime arrival; /* running time; GST_CLOCK_TIME_NONE offline */
} Item;

typedef struct {
  gdouble minutes;
  gint latency;
  gchar *model;
  gchar **sets;
  gchar *output;
  gboolean playback, paced, live_only, offline_only, verbose;
  gint seed;
  gchar *made;
  gint call_ms;
  gchar *language;  /* the programme's, for the number reading of the WER */
} Options;

/* One pass (live or offline) and what it collected. */
typedef struct {
  gboolean live;
  const Programme *prog;
  GstElement *pipeline, *appsrc, *whisper;
  GThread *feeder;
  gint stop;
  GMutex lock;
  GArray *items;        /* Item, in arrival order */
  gint warnings, dropped_warnings, late_warnings, errors, interim, final;
  gboolean eos;
  guint64 audio_dropped;
  guint max_observed_delay;
} Pass;

#define sample_time programme_sample_time
#define secs programme_secs

/* ---------------------------------------------------------------------- */
/* A pass: pipeline, feeder, probe, bus */

/* Pushes the programme once in 100-ms buffers, then EOS. Live: each buffer
 * when its capture would end on the pipeline clock; otherwise as fast as
 * appsrc (block=true) takes them. */
static gpointer
feed (gpointer data)
{
  Pass *ps = data;
  const Programme *p = ps->prog;
  GstClock *clock = NULL;
  GstClockTime base = 0;
  gsize off;

  if (ps->live) {
    while (!g_atomic_int_get (&ps->stop) && !(clock = gst_element_get_clock (ps->pipeline)))
      g_usleep (10000);
    if (!clock)
      return NULL;
    base = gst_element_get_base_time (ps->pipeline);
  }
  for (off = 0; off < p->n && !g_atomic_int_get (&ps->stop); off += BUF_SAMPLES) {
    gsize len = MIN (BUF_SAMPLES, p->n - off);
    GstBuffer *buf = gst_buffer_new_memdup (p->pcm + off, len * sizeof (float));

    if (clock) {
      GstClockID id = gst_clock_new_single_shot_id (clock, base + sample_time (off + len));
      gst_clock_id_wait (id, NULL);
      gst_clock_id_unref (id);
    }
    GST_BUFFER_PTS (buf) = sample_time (off);
    GST_BUFFER_DURATION (buf) = sample_time (off + len) - sample_time (off);
    if (gst_app_src_push_buffer (GST_APP_SRC (ps->appsrc), buf) != GST_FLOW_OK)
      break;
  }
  gst_app_src_end_of_stream (GST_APP_SRC (ps->appsrc));
  g_clear_object (&clock);
  return NULL;
}

/* Records each text buffer and, live, the running time it arrived at. */
static GstPadProbeReturn
on_text_buffer (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  Pass *ps = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  Item it = { NULL, GST_BUFFER_PTS (buf), GST_BUFFER_DURATION (buf), GST_CLOCK_TIME_NONE };
  GstMapInfo map;

  (void) pad;
  if (ps->live) {
    GstClock *clock = gst_element_get_clock (ps->pipeline);
    if (clock) {
      GstClockTime now = gst_clock_get_time (clock), base = gst_element_get_base_time (ps->pipeline);
      it.arrival = now > base ? now - base : 0;
      gst_object_unref (clock);
    }
  }
  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return GST_PAD_PROBE_OK;
  it.text = g_strstrip (g_strndup ((const gchar *) map.data, map.size));
  gst_buffer_unmap (buf, &map);
  if (!GST_CLOCK_TIME_IS_VALID (it.dur))
    it.dur = 0;
  g_mutex_lock (&ps->lock);
  g_array_append_val (ps->items, it);
  g_mutex_unlock (&ps->lock);
  return GST_PAD_PROBE_OK;
}

static void
on_warning (Pass *ps, GstMessage *m)
{
  g_autoptr (GError) err = NULL;
  const GstStructure *details = NULL;
  const gchar *reason = NULL;

  gst_message_parse_warning (m, &err, NULL);
  gst_message_parse_warning_details (m, &details);
  if (details)
    reason = gst_structure_get_string (details, "reason");
  g_printerr ("%s warning (%s): %s\n", ps->live ? "live" : "offline",
      reason ? reason : "no reason", err->message);
  g_atomic_int_inc (&ps->warnings);
  if (g_strcmp0 (reason, "dropped-audio") == 0)
    g_atomic_int_inc (&ps->dropped_warnings);
  else if (g_strcmp0 (reason, "excessive-delay") == 0)
    g_atomic_int_inc (&ps->late_warnings);
}

/* Counts and prints in the posting thread; only EOS and ERROR reach the
 * main thread. */
static GstBusSyncReply
on_message (GstBus *bus, GstMessage *m, gpointer data)
{
  Pass *ps = data;
  g_autoptr (GError) err = NULL;

  (void) bus;
  switch (GST_MESSAGE_TYPE (m)) {
    case GST_MESSAGE_ELEMENT:
      if (gst_message_has_name (m, "whisper-text")) {
        gboolean final = FALSE;
        gst_structure_get_boolean (gst_message_get_structure (m), "final", &final);
        g_atomic_int_inc (final ? &ps->final : &ps->interim);
      }
      return GST_BUS_DROP;
    case GST_MESSAGE_WARNING:
      on_warning (ps, m);
      return GST_BUS_DROP;
    case GST_MESSAGE_ERROR:
      gst_message_parse_error (m, &err, NULL);
      g_printerr ("%s error: %s\n", ps->live ? "live" : "offline", err->message);
      g_atomic_int_inc (&ps->errors);
      return GST_BUS_PASS;
    case GST_MESSAGE_EOS:
      return GST_BUS_PASS;
    default:
      return GST_BUS_DROP;
  }
}

/* The pass's pipeline description (whispersink's own settings come from
 * configure_whisper ()). */
static gchar *
pipeline_description (const Options *o, gboolean live)
{
  if (!live)
    return g_strdup ("appsrc name=src is-live=false format=time block=true caps=\"" CAPS "\" "
        "! whispersink name=w ! fakesink name=tsink");
  if (!o->playback)
    return g_strdup ("appsrc name=src is-live=true format=time min-latency=100000000 "
        "caps=\"" CAPS "\" ! whispersink name=w ! fakesink name=tsink sync=true");
  /* a synced audio sink waits out the pipeline latency, whispersink's
   * included: its queue holds that much (as live-soak.c's) */
  return g_strdup_printf ("appsrc name=src is-live=true format=time min-latency=100000000 "
      "caps=\"" CAPS "\" ! tee name=t "
      "t. ! queue max-size-time=%" G_GUINT64_FORMAT " max-size-buffers=0 max-size-bytes=0 "
      "! fakesink name=asink sync=true "
      "t. ! queue ! whispersink name=w ! fakesink name=tsink sync=true",
      (guint64) (o->latency + 2000) * GST_MSECOND);
}

/* output, model and the --set properties (both passes), latency (live). */
static gboolean
configure_whisper (GstElement *w, const Options *o, gboolean live)
{
  guint i;

  gst_util_set_object_arg (G_OBJECT (w), "output", o->output);
  if (o->model)
    g_object_set (w, "model", o->model, NULL);
  for (i = 0; o->sets && o->sets[i]; i++) {
    g_auto (GStrv) kv = g_strsplit (o->sets[i], "=", 2);
    if (!kv[0] || !kv[1] || !g_object_class_find_property (G_OBJECT_GET_CLASS (w), kv[0])) {
      g_printerr ("--set %s: not a whispersink property=value\n", o->sets[i]);
      return FALSE;
    }
    gst_util_set_object_arg (G_OBJECT (w), kv[0], kv[1]);
  }
  if (live) {
    guint set = 0;
    g_object_set (w, "latency", (guint) o->latency, NULL);
    g_object_get (w, "latency", &set, NULL);
    if (set != (guint) o->latency) {
      g_printerr ("latency=%d refused (the element keeps %u)\n", o->latency, set);
      return FALSE;
    }
  }
  return TRUE;
}

/* Builds the pass's pipeline. FALSE (after a message) on bad settings. */
static gboolean
pass_setup (Pass *ps, const Options *o)
{
  g_autofree gchar *desc = pipeline_description (o, ps->live);
  g_autoptr (GError) err = NULL;
  GstElement *tsink;
  GstPad *pad;
  GstBus *bus;

  ps->items = g_array_new (FALSE, FALSE, sizeof (Item));
  g_mutex_init (&ps->lock);
  ps->pipeline = gst_parse_launch (desc, &err);
  if (!ps->pipeline) {
    g_printerr ("%s\n", err->message);
    return FALSE;
  }
  ps->appsrc = gst_bin_get_by_name (GST_BIN (ps->pipeline), "src");
  ps->whisper = gst_bin_get_by_name (GST_BIN (ps->pipeline), "w");
  /* before the properties: setting latency may post a warning */
  bus = gst_element_get_bus (ps->pipeline);
  gst_bus_set_sync_handler (bus, on_message, ps, NULL);
  gst_object_unref (bus);
  if (!configure_whisper (ps->whisper, o, ps->live))
    return FALSE;
  tsink = gst_bin_get_by_name (GST_BIN (ps->pipeline), "tsink");
  pad = gst_element_get_static_pad (tsink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_text_buffer, ps, NULL);
  gst_object_unref (pad);
  gst_object_unref (tsink);
  return TRUE;
}

/* Runs the pass to EOS (or an error, or `timeout`), then reads the
 * element's counters. FALSE when it did not reach EOS. */
static gboolean
pass_run (Pass *ps, GstClockTime timeout)
{
  GstBus *bus = gst_element_get_bus (ps->pipeline);
  GstMessage *m = NULL;
  GstStructure *stats = NULL;

  if (gst_element_set_state (ps->pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    g_printerr ("%s: cannot start the pipeline\n", ps->live ? "live" : "offline");
    /* the error message says why */
    m = gst_bus_timed_pop_filtered (bus, 0, GST_MESSAGE_ERROR);
  } else {
    ps->feeder = g_thread_new ("feeder", feed, ps);
    m = gst_bus_timed_pop_filtered (bus, timeout, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  }
  ps->eos = m && GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS;
  if (!m && ps->feeder)
    g_printerr ("%s: no EOS within %.0f s\n", ps->live ? "live" : "offline", secs (timeout));
  g_clear_pointer (&m, gst_message_unref);
  gst_object_unref (bus);

  g_object_get (ps->whisper, "stats", &stats, "max-observed-delay", &ps->max_observed_delay,
      NULL);
  if (stats) {
    gst_structure_get_uint64 (stats, "audio-dropped", &ps->audio_dropped);
    gst_structure_free (stats);
  }
  /* NULL unblocks a feeder waiting on the clock or on a full appsrc */
  g_atomic_int_set (&ps->stop, 1);
  gst_element_set_state (ps->pipeline, GST_STATE_NULL);
  if (ps->feeder)
    g_thread_join (ps->feeder);
  ps->feeder = NULL;
  return ps->eos;
}

static void
pass_clear (Pass *ps)
{
  guint i;

  if (ps->items) {
    for (i = 0; i < ps->items->len; i++)
      g_free (g_array_index (ps->items, Item, i).text);
    g_array_free (ps->items, TRUE);
    g_mutex_clear (&ps->lock);
  }
  g_clear_object (&ps->appsrc);
  g_clear_object (&ps->whisper);
  g_clear_object (&ps->pipeline);
}

/* ---------------------------------------------------------------------- */
/* Measurements */

static gint
by_pts (gconstpointer a, gconstpointer b)
{
  const Item *x = *(const Item **) a, *y = *(const Item **) b;
  return x->pts < y->pts ? -1 : x->pts > y->pts;
}

/* The items in PTS order (arrival order among equal PTS). */
static GPtrArray *
items_by_pts (GArray *items)
{
  GPtrArray *v = g_ptr_array_sized_new (items->len);
  guint i;

  for (i = 0; i < items->len; i++)
    g_ptr_array_add (v, &g_array_index (items, Item, i));
  g_ptr_array_sort (v, by_pts);   /* g_ptr_array_sort is stable */
  return v;
}

static gchar *
joined_text (GArray *items)
{
  g_autoptr (GPtrArray) v = items_by_pts (items);
  GString *s = g_string_new (NULL);
  guint i;

  for (i = 0; i < v->len; i++) {
    const Item *it = g_ptr_array_index (v, i);
    if (!*it->text)
      continue;
    if (s->len)
      g_string_append_c (s, ' ');
    g_string_append (s, it->text);
  }
  return g_string_free (s, FALSE);
}

static gint
cmp_gint64 (gconstpointer a, gconstpointer b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
  return x < y ? -1 : x > y;
}

typedef struct {
  guint n;
  double p50, p95, max;   /* s */
} Delays;

/* Nearest-rank percentiles of arrival - (PTS + DURATION). */
static Delays
delay_stats (GArray *items)
{
  Delays d = { 0, NAN, NAN, NAN };
  g_autoptr (GArray) v = g_array_new (FALSE, FALSE, sizeof (gint64));
  guint i;

  for (i = 0; i < items->len; i++) {
    const Item *it = &g_array_index (items, Item, i);
    gint64 delay;
    if (!GST_CLOCK_TIME_IS_VALID (it->arrival) || !GST_CLOCK_TIME_IS_VALID (it->pts))
      continue;
    delay = (gint64) it->arrival - (gint64) (it->pts + it->dur);
    g_array_append_val (v, delay);
  }
  if (v->len == 0)
    return d;
  g_array_sort (v, cmp_gint64);
  d.n = v->len;
  d.p50 = g_array_index (v, gint64, (guint) ceil (0.50 * v->len) - 1) / 1e9;
  d.p95 = g_array_index (v, gint64, (guint) ceil (0.95 * v->len) - 1) / 1e9;
  d.max = g_array_index (v, gint64, v->len - 1) / 1e9;
  return d;
}

static void
print_item (const gchar *what, const Item *it)
{
  g_print ("  %-7s %8.2f-%8.2f s (%4" G_GUINT64_FORMAT " ms)", what, secs (it->pts),
      secs (it->pts + it->dur), it->dur / GST_MSECOND);
  if (GST_CLOCK_TIME_IS_VALID (it->arrival))
    g_print (" (at %8.2f s)", secs (it->arrival));
  g_print (" \"%s\"\n", it->text);
}

/* The reasons an item counts as repeated (see count_repeats ()). */
typedef enum {
  REPEAT_NONE,
  REPEAT_EARLY,     /* starts well before the end of what was committed */
  REPEAT_SAME,      /* the word before again, over an overlapping span */
  REPEAT_PHRASE,    /* the phrase before again, word for word */
} RepeatKind;

static const gchar *const repeat_names[] = { "", "early", "same", "phrase" };

/* The items' texts in wer_words ()'s form, and their numbers of words. */
static gchar **
plain_texts (GArray *items, guint **n_words)
{
  gchar **t = g_new0 (gchar *, items->len + 1);
  guint i;

  *n_words = g_new0 (guint, items->len);
  for (i = 0; i < items->len; i++) {
    g_auto (GStrv) w = wer_words (g_array_index (items, Item, i).text);
    t[i] = g_strjoinv (" ", w);
    (*n_words)[i] = g_strv_length (w);
  }
  return t;
}

/* The number of items from `i` on that repeat the same number of items
 * just before `i`, text for text, when those hold at least
 * MIN_PHRASE_WORDS words; 0 when none do. The longest such run. */
static guint
phrase_repeat (gchar **t, const guint *n_words, guint n, guint i)
{
  guint k, best = 0;

  for (k = 1; k <= i && i + k <= n && k <= MAX_PHRASE_ITEMS; k++) {
    guint j, words = 0;
    for (j = 0; j < k && strcmp (t[i + j], t[i - k + j]) == 0; j++)
      words += n_words[i + j];
    if (j == k && words >= MIN_PHRASE_WORDS)
      best = k;
  }
  return best;
}

/* Items, in commit (arrival) order, that give audio already given: one
 * starting more than REPEAT_SLACK before the end of the items committed
 * before it (the latest end so far, so that a whole phrase output again
 * counts word by word, not only its first word); the same word as the one
 * before over an overlapping span; or a phrase of MIN_PHRASE_WORDS or more
 * words committed again right after itself, whatever its times (the
 * element keeps word times from going backwards: a phrase decoded again
 * comes out clamped onto the end of its first copy). */
static guint
count_repeats (GArray *items, const gchar *pass)
{
  g_autofree guint *n_words = NULL;
  g_auto (GStrv) t = plain_texts (items, &n_words);
  GstClockTime reach = 0;
  guint i, n = 0, phrase_left = 0;

  for (i = 0; i < items->len; i++) {
    const Item *it = &g_array_index (items, Item, i);
    const Item *prev = i > 0 ? &g_array_index (items, Item, i - 1) : NULL;
    GstClockTime end = it->pts + it->dur;
    RepeatKind kind = REPEAT_NONE;

    if (phrase_left == 0)
      phrase_left = phrase_repeat (t, n_words, items->len, i);
    if (phrase_left > 0) {
      kind = REPEAT_PHRASE;
      phrase_left--;
    } else if (prev && it->pts + REPEAT_SLACK < reach) {
      kind = REPEAT_EARLY;
    } else if (prev && *t[i] && strcmp (t[i], t[i - 1]) == 0
        && it->pts < prev->pts + prev->dur && end > prev->pts) {
      kind = REPEAT_SAME;
    }
    if (kind != REPEAT_NONE && n++ < MAX_LISTED) {
      if (n == 1)
        g_print ("%s: repeated items (early: starts before the end of the text committed "
            "before it; same: the word before again; phrase: the phrase before again):\n",
            pass);
      print_item (repeat_names[kind], it);
    }
    reach = MAX (reach, end);
  }
  return n;
}

/* Items shorter than any spoken word: times the element could not place
 * (a word's estimated span clamped onto the end of the audio it had gets
 * the output's minimum DURATION, 1 ms). */
static guint
count_squeezed (GArray *items)
{
  guint i, n = 0;

  for (i = 0; i < items->len; i++)
    n += g_array_index (items, Item, i).dur < SQUEEZED;
  return n;
}

static GstClockTime
span_start (const Programme *p, guint i)
{
  return sample_time (g_array_index (p->spans, ClipSpan, i).start);
}

static GstClockTime
span_end (const Programme *p, guint i)
{
  return sample_time (g_array_index (p->spans, ClipSpan, i).end);
}

/* TRUE when [a, b) lies inside the noise after some clip, more than
 * SILENCE_MARGIN from it and from the next clip (if any). */
static gboolean
in_silence (const Programme *p, GstClockTime a, GstClockTime b)
{
  guint i;

  for (i = 0; i < p->spans->len; i++) {
    GstClockTime gap_start = span_end (p, i);
    gboolean last = i + 1 == p->spans->len;
    if (a < gap_start + SILENCE_MARGIN)
      continue;
    if (!last && a >= span_start (p, i + 1))
      continue;
    return last || b + SILENCE_MARGIN <= span_start (p, i + 1);
  }
  return FALSE;
}

static guint
count_in_silence (const Programme *p, GArray *items, const gchar *pass)
{
  guint i, n = 0;

  for (i = 0; i < items->len; i++) {
    const Item *it = &g_array_index (items, Item, i);
    if (*it->text && in_silence (p, it->pts, it->pts + it->dur) && n++ < MAX_LISTED) {
      if (n == 1)
        g_print ("%s: in the noise between clips (start, end, arrival, text):\n", pass);
      print_item ("silence", it);
    }
  }
  return n;
}

typedef struct {
  guint span;
  double wer;
  gchar *text;
} ClipScore;

static gint
worse_first (gconstpointer a, gconstpointer b)
{
  const ClipScore *x = a, *y = b;
  return x->wer > y->wer ? -1 : x->wer < y->wer;
}

/* The clip instance whose span, widened by CLIP_MARGIN, holds `t`, or -1. */
static gint
clip_at (const Programme *p, GstClockTime t)
{
  guint i;

  for (i = 0; i < p->spans->len; i++)
    if (t + CLIP_MARGIN >= span_start (p, i) && t < span_end (p, i) + CLIP_MARGIN)
      return (gint) i;
  return -1;
}

/* Each item goes to the clip instance at its midpoint; prints the word
 * errors of each clip summed over its instances, then the WORST_CLIPS
 * instances with the highest word error rate. */
static void
print_worst_clips (const Programme *p, GArray *items, const gchar *pass, gboolean all)
{
  g_autoptr (GPtrArray) v = items_by_pts (items);
  GString **texts = g_new0 (GString *, p->spans->len);
  g_autoptr (GArray) scores = g_array_new (FALSE, FALSE, sizeof (ClipScore));
  guint *clip_errors = g_new0 (guint, p->clips->len);
  guint *clip_words = g_new0 (guint, p->clips->len);
  guint i, outside = 0;

  for (i = 0; i < p->spans->len; i++)
    texts[i] = g_string_new (NULL);
  for (i = 0; i < v->len; i++) {
    const Item *it = g_ptr_array_index (v, i);
    gint c = clip_at (p, it->pts + it->dur / 2);
    if (c < 0) {
      outside++;
      continue;
    }
    if (texts[c]->len)
      g_string_append_c (texts[c], ' ');
    g_string_append (texts[c], it->text);
  }
  for (i = 0; i < p->spans->len; i++) {
    guint clip = g_array_index (p->spans, ClipSpan, i).clip;
    const Clip *c = g_ptr_array_index (p->clips, clip);
    guint e = 0, n = 0;
    ClipScore s = { i, wer_percent (c->text, texts[i]->str, &e, &n),
      g_string_free (texts[i], FALSE) };
    g_array_append_val (scores, s);
    clip_errors[clip] += e;
    clip_words[clip] += n;
  }
  g_free (texts);
  g_print ("%s: errors by clip, over all its instances:\n", pass);
  for (i = 0; i < p->clips->len; i++) {
    const Clip *c = g_ptr_array_index (p->clips, i);
    g_print ("  %-8s %5u errors / %5u words  WER %5.1f %%\n", c->name, clip_errors[i],
        clip_words[i], clip_words[i] ? 100.0 * clip_errors[i] / clip_words[i] : 0.0);
  }
  g_free (clip_errors);
  g_free (clip_words);
  g_array_sort (scores, worse_first);
  g_print ("%s: %s clip instances (%u items outside every clip):\n", pass,
      all ? "every imperfect" : "worst", outside);
  for (i = 0; i < scores->len; i++) {
    ClipScore *s = &g_array_index (scores, ClipScore, i);
    const Clip *c = g_ptr_array_index (p->clips, g_array_index (p->spans, ClipSpan, s->span).clip);
    if (i < WORST_CLIPS || (all && s->wer > 0))
      g_print ("  #%-3u %-8s %7.2f-%7.2f s  WER %5.1f %%  \"%s\"\n", s->span, c->name,
          secs (span_start (p, s->span)), secs (span_end (p, s->span)), s->wer, s->text);
    g_free (s->text);
  }
}

static void
print_items (GArray *items, const gchar *pass)
{
  guint i;

  g_print ("%s: every item in commit order:\n", pass);
  for (i = 0; i < items->len; i++)
    print_item ("item", &g_array_index (items, Item, i));
}

/* A figure for the RESULT line: "na" when not measured. */
static gchar *
fig (double x, const gchar *format)
{
  return isnan (x) ? g_strdup ("na") : g_strdup_printf (format, x);
}

/* A count for the RESULT line: "na" when not measured. */
static gchar *
fig_u (gboolean measured, guint n)
{
  return measured ? g_strdup_printf ("%u", n) : g_strdup ("na");
}

/* One row of the table; takes the cells ("na" printed as "-"). */
static void
row (const gchar *what, gchar *live, gchar *offline)
{
  g_print ("%-34s %10s %10s\n", what, g_strcmp0 (live, "na") ? live : "-",
      offline && strcmp (offline, "na") ? offline : (offline ? "-" : ""));
  g_free (live);
  g_free (offline);
}

/* The language of the programme when --language does not give it: the
 * LANG of a --programme HALF-LANG.wav or HALF-LANG-net.wav
 * (tests/live-eval/make-set.py's names: the last part of two letters),
 * else the value of --set language-code (unless auto), else "en" for the
 * built-in programme (jfk.wav, stereo_diarization.wav and LibriVox are
 * English) and "und" (undetermined: numbers as written) for another
 * --programme. */
static gchar *
programme_language (const Options *o)
{
  guint i;

  if (o->made) {
    g_autofree gchar *base = g_path_get_basename (o->made);
    g_auto (GStrv) parts = NULL;
    gchar *dot = strrchr (base, '.');
    if (dot)
      *dot = '\0';
    parts = g_strsplit (base, "-", -1);
    for (i = g_strv_length (parts); i > 0; i--) {
      const gchar *c = parts[i - 1];
      if (strlen (c) == 2 && g_ascii_isalpha (c[0]) && g_ascii_isalpha (c[1]))
        return g_ascii_strdown (c, -1);
    }
  }
  for (i = 0; o->sets && o->sets[i]; i++)
    if (g_str_has_prefix (o->sets[i], "language-code=")
        && strcmp (o->sets[i] + strlen ("language-code="), "auto") != 0)
      return g_strdup (o->sets[i] + strlen ("language-code="));
  return g_strdup (o->made ? "und" : "en");
}

/* The table and the RESULT line. */
static void
report (const Options *o, const Programme *p, Pass *live, Pass *offline)
{
  g_autofree gchar *published = programme_text (p, 0);
  g_autofree gchar *live_text = live ? joined_text (live->items) : NULL;
  g_autofree gchar *offline_text = offline ? joined_text (offline->items) : NULL;
  double wer_live = NAN, wer_offline = NAN, wer_lo = NAN, dropped_s = NAN;
  double num_live = NAN, num_offline = NAN, num_lo = NAN;
  const gchar *lang = o->language;
  guint ref_words = 0, repeats = 0, silence = 0, off_repeats = 0, off_silence = 0;
  Delays d = { 0, NAN, NAN, NAN };
  gchar *f[17] = { NULL, };

  if (live) {
    wer_live = wer_percent (published, live_text, NULL, &ref_words);
    num_live = wer_percent_lang (lang, published, live_text, NULL, NULL);
    d = delay_stats (live->items);
    repeats = count_repeats (live->items, "live");
    silence = count_in_silence (p, live->items, "live");
    dropped_s = live->audio_dropped / 1e9;
    print_worst_clips (p, live->items, "live", o->verbose);
  }
  if (offline) {
    wer_offline = wer_percent (published, offline_text, NULL, &ref_words);
    num_offline = wer_percent_lang (lang, published, offline_text, NULL, NULL);
    off_repeats = count_repeats (offline->items, "offline");
    off_silence = count_in_silence (p, offline->items, "offline");
    if (!live || o->verbose)
      print_worst_clips (p, offline->items, "offline", o->verbose);
  }
  if (live && offline) {
    wer_lo = wer_percent (offline_text, live_text, NULL, NULL);
    num_lo = wer_percent_lang (lang, offline_text, live_text, NULL, NULL);
  }

  g_print ("\n# live-commit: %.1f s of programme (%u clip instances, %u words published), "
      "output=%s, model %s, seed %d\n", secs (sample_time (p->n)), p->spans->len, ref_words,
      o->output, o->model ? o->model : "(default)", o->seed);
  g_print ("%-34s %10s %10s\n", "", "live", "offline");
  row ("items", fig_u (live != NULL, live ? live->items->len : 0),
      fig_u (offline != NULL, offline ? offline->items->len : 0));
  row ("WER vs published (%)", fig (wer_live, "%.1f"), fig (wer_offline, "%.1f"));
  row ("WER live vs offline (%)", fig (wer_lo, "%.1f"), NULL);
  row ("live - offline (points)", fig (wer_live - wer_offline, "%+.1f"), NULL);
  g_print ("numbers read (wer-util.h wer_words_lang (), language %s):%s\n", lang,
      wer_lang_is_english (lang) ? "" : " none, the same figures");
  row ("  WER vs published (%)", fig (num_live, "%.1f"), fig (num_offline, "%.1f"));
  row ("  WER live vs offline (%)", fig (num_lo, "%.1f"), NULL);
  row ("  live - offline (points)", fig (num_live - num_offline, "%+.1f"), NULL);
  row ("items under 20 ms", fig_u (live != NULL, live ? count_squeezed (live->items) : 0),
      fig_u (offline != NULL, offline ? count_squeezed (offline->items) : 0));
  row ("repeated items", fig_u (live != NULL, repeats), fig_u (offline != NULL, off_repeats));
  row ("items in silence", fig_u (live != NULL, silence), fig_u (offline != NULL, off_silence));
  if (live) {
    g_print ("%-34s %d ms\n", "latency", o->latency);
    g_print ("%-34s %.2f / %.2f / %.2f s (%u items)\n", "delay p50 / p95 / max", d.p50, d.p95,
        d.max, d.n);
    g_print ("%-34s %.2f s\n", "audio dropped", dropped_s);
    g_print ("%-34s %d dropped-audio, %d excessive-delay, %d in all\n", "warnings",
        live->dropped_warnings, live->late_warnings, live->warnings);
    g_print ("%-34s %u ms\n", "max-observed-delay", live->max_observed_delay);
    g_print ("%-34s %d interim, %d final\n", "whisper-text messages", live->interim,
        live->final);
  }
  f[0] = fig (d.p50, "%.2f");
  f[1] = fig (d.p95, "%.2f");
  f[2] = fig (d.max, "%.2f");
  f[3] = fig (wer_live, "%.1f");
  f[4] = fig (wer_offline, "%.1f");
  f[5] = fig (wer_lo, "%.1f");
  f[6] = fig (dropped_s, "%.2f");
  f[7] = fig_u (live != NULL, live ? live->max_observed_delay : 0);
  f[8] = fig_u (live != NULL, repeats);
  f[9] = fig_u (live != NULL, silence);
  f[10] = fig_u (live != NULL, live ? live->dropped_warnings : 0);
  f[11] = fig_u (live != NULL, live ? live->late_warnings : 0);
  f[12] = fig_u (live != NULL, live ? live->items->len : 0);
  f[13] = fig_u (offline != NULL, offline ? offline->items->len : 0);
  f[14] = fig (num_live, "%.1f");
  f[15] = fig (num_offline, "%.1f");
  f[16] = fig (num_lo, "%.1f");
  g_print ("RESULT latency=%d p50=%s p95=%s max=%s wer_live_pub=%s wer_offline_pub=%s "
      "wer_live_offline=%s repeats=%s in_silence=%s dropped_s=%s dropped_warnings=%s "
      "late_warnings=%s max_observed_delay_ms=%s items=%s offline_items=%s "
      "programme_s=%.1f output=%s lang=%s wer_live_pub_num=%s wer_offline_pub_num=%s "
      "wer_live_offline_num=%s\n", o->latency, f[0], f[1], f[2], f[3], f[4], f[5],
      f[8], f[9], f[6], f[10], f[11], f[7], f[12], f[13],
      secs (sample_time (p->n)), o->output, lang, f[14], f[15], f[16]);
  for (guint i = 0; i < G_N_ELEMENTS (f); i++)
    g_free (f[i]);
}

/* ---------------------------------------------------------------------- */

/* One pass from setup to teardown of its pipeline; the items stay in `ps`.
 * Returns 0, 1 (error message or no EOS) or 2 (bad settings). */
static gint
run_pass (Pass *ps, const Options *o, const Programme *p, GstClockTime timeout)
{
  ps->prog = p;
  if (!pass_setup (ps, o))
    return 2;
  if (!pass_run (ps, timeout) || g_atomic_int_get (&ps->errors) > 0)
    return 1;
  if (o->verbose)
    print_items (ps->items, ps->live ? "live" : "offline");
  return 0;
}

/* ---------------------------------------------------------------------- */
/* The paced live pass (--paced, see the top) */

/* The item of `buf`, arriving (audio time) at `arrival`. */
static void
paced_item (Pass *ps, GstBuffer *buf, GstClockTime arrival)
{
  Item it = { NULL, GST_BUFFER_PTS (buf), GST_BUFFER_DURATION (buf), arrival };
  GstMapInfo map;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return;
  it.text = g_strstrip (g_strndup ((const gchar *) map.data, map.size));
  gst_buffer_unmap (buf, &map);
  if (!GST_CLOCK_TIME_IS_VALID (it.dur))
    it.dur = 0;
  g_array_append_val (ps->items, it);
}

/* Every buffer the harness holds, arrived at `arrival`, each held until
 * the one before was rendered (*rendered: its PTS + latency, or its
 * arrival when later). */
static void
paced_pull (Pass *ps, GstHarness *h, GstClockTime arrival, GstClockTime latency,
    GstClockTime *rendered)
{
  GstBuffer *b;

  while ((b = gst_harness_try_pull (h))) {
    GstClockTime at = MAX (arrival, *rendered);
    paced_item (ps, b, at);
    if (GST_BUFFER_PTS_IS_VALID (b))
      *rendered = MAX (at, GST_BUFFER_PTS (b) + latency);
    gst_buffer_unref (b);
  }
}

/* The live pass, paced. Returns 0, 1 (an error message, a flow error or
 * no EOS) or 2 (bad settings). */
static gint
run_paced_pass (Pass *ps, const Options *o, const Programme *p)
{
  GstElement *w = gst_element_factory_make ("whispersink", NULL);
  GstBus *bus;
  GstStructure *stats = NULL;
  GstClockTime latency = (GstClockTime) o->latency * GST_MSECOND + UPSTREAM_LATENCY;
  GstClockTime rendered = 0;
  GstHarness *h;
  gboolean ok = TRUE;
  gsize off;

  ps->prog = p;
  ps->items = g_array_new (FALSE, FALSE, sizeof (Item));
  g_mutex_init (&ps->lock);
  if (!w) {
    g_printerr ("no whispersink element (GST_PLUGIN_PATH_1_0)\n");
    return 2;
  }
  bus = gst_bus_new ();
  gst_element_set_bus (w, bus);
  gst_bus_set_sync_handler (bus, on_message, ps, NULL);
  ps->whisper = gst_object_ref (w);
  if (!configure_whisper (w, o, TRUE)) {
    gst_object_unref (w);
    gst_object_unref (bus);
    return 2;
  }
  h = gst_harness_new_with_element (w, "sink", "src");
  gst_object_unref (w);
  gst_harness_set_live (h, TRUE);
  gst_harness_set_upstream_latency (h, UPSTREAM_LATENCY);
  gst_harness_set_src_caps_str (h, CAPS);
  for (off = 0; off < p->n && ok && g_atomic_int_get (&ps->errors) == 0; off += BUF_SAMPLES) {
    gsize len = MIN (BUF_SAMPLES, p->n - off);
    GstBuffer *buf = gst_buffer_new_memdup (p->pcm + off, len * sizeof (float));

    GST_BUFFER_PTS (buf) = sample_time (off);
    GST_BUFFER_DURATION (buf) = sample_time (off + len) - sample_time (off);
    if (off == 0)
      GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
    ok = gst_harness_push (h, buf) == GST_FLOW_OK && wt_barrier (h, PACED_BARRIER);
    paced_pull (ps, h, sample_time (off + len), latency, &rendered);
  }
  if (ok && gst_harness_push_event (h, gst_event_new_eos ())) {
    GstEvent *ev;
    while ((ev = gst_harness_pull_event (h))) {
      gboolean eos = GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
      gst_event_unref (ev);
      if (eos) {
        ps->eos = TRUE;
        break;
      }
    }
  }
  paced_pull (ps, h, sample_time (p->n), latency, &rendered);
  if (!ps->eos)
    g_printerr ("live (paced): no EOS\n");
  g_object_get (ps->whisper, "stats", &stats, "max-observed-delay", &ps->max_observed_delay,
      NULL);
  if (stats) {
    gst_structure_get_uint64 (stats, "audio-dropped", &ps->audio_dropped);
    gst_structure_free (stats);
  }
  gst_harness_teardown (h);
  gst_object_unref (bus);
  if (!ps->eos || g_atomic_int_get (&ps->errors) > 0)
    return 1;
  if (o->verbose)
    print_items (ps->items, "live");
  return 0;
}

int
main (int argc, char **argv)
{
  Options o = { 10.0, 8000, NULL, NULL, NULL, FALSE, FALSE, FALSE, FALSE, FALSE, 1, NULL, 250,
    NULL };
  GOptionEntry entries[] = {
    {"minutes", 'M', 0, G_OPTION_ARG_DOUBLE, &o.minutes,
        "Minutes of programme at least (10)", "M"},
    {"latency", 'l', 0, G_OPTION_ARG_INT, &o.latency, "whispersink latency (8000)", "MS"},
    {"model", 'm', 0, G_OPTION_ARG_FILENAME, &o.model, "whispersink model", "PATH"},
    {"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &o.sets,
        "Another whispersink property, both passes (repeatable)", "PROP=VALUE"},
    {"output", 'o', 0, G_OPTION_ARG_STRING, &o.output, "words (default) or segments",
        "words|segments"},
    {"playback", 'p', 0, G_OPTION_ARG_NONE, &o.playback,
        "Live: a tee with a synced playback branch", NULL},
    {"paced", 0, 0, G_OPTION_ARG_NONE, &o.paced,
        "Live: in a harness, each buffer once the one before is handled (audio time)", NULL},
    {"live-only", 0, 0, G_OPTION_ARG_NONE, &o.live_only, "No offline pass", NULL},
    {"offline-only", 0, 0, G_OPTION_ARG_NONE, &o.offline_only, "No live pass", NULL},
    {"seed", 0, 0, G_OPTION_ARG_INT, &o.seed, "Seed of the noise gaps (1)", "N"},
    {"verbose", 'v', 0, G_OPTION_ARG_NONE, &o.verbose, "Print every item", NULL},
    {"call-ms", 0, 0, G_OPTION_ARG_INT, &o.call_ms,
        "--paced: each call counts as this long for the deadline (250)", "MS"},
    {"programme", 0, 0, G_OPTION_ARG_FILENAME, &o.made,
        "A programme made beforehand (and FILE.tsv)", "FILE.wav"},
    {"language", 0, 0, G_OPTION_ARG_STRING, &o.language,
        "The programme's language, for the WER with numbers read (default: LANG of "
        "--programme HALF-LANG.wav, else --set language-code, else en)", "LANG"},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("SHARED_DATA_DIR LIBRIVOX_DIR");
  g_autoptr (GError) err = NULL;
  Programme p = { 0, };
  Pass live = { 0, }, offline = { 0, };
  GstClockTime length;
  gint rc = 0;

  /* the texts print as UTF-8 where the terminal takes it (in the C
   * locale g_print () wrote "f?hrt"); numbers keep the C locale's "." */
  setlocale (LC_CTYPE, "");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || argc != (o.made ? 1 : 3)
      || (o.live_only && o.offline_only) || (o.paced && o.playback) || o.minutes <= 0) {
    g_printerr ("usage: live-commit [--minutes M] [--latency MS] [--model PATH] "
        "[--set PROP=VALUE]... [--output words|segments] [--playback|--paced] "
        "[--live-only|--offline-only] [--seed N] [--verbose] [--language LANG] "
        "SHARED_DATA_DIR LIBRIVOX_DIR | --programme FILE.wav\n");
    return 2;
  }
  if (!o.output)
    o.output = g_strdup ("words");
  if (strcmp (o.output, "words") != 0 && strcmp (o.output, "segments") != 0) {
    g_printerr ("--output: words or segments\n");
    return 2;
  }
  if (!o.made)
    p.clips = g_ptr_array_new_with_free_func (programme_clip_free);
  if (o.made ? !programme_load_made (&p, o.made, &err)
      : !programme_load_clips (p.clips, argv[1], argv[2], &err)) {
    g_printerr ("%s\n", err->message);
    programme_clear (&p);
    return 2;
  }
  if (!o.made)
    programme_build (&p, o.minutes, o.seed, 0);
  if (!o.language)
    o.language = programme_language (&o);
  length = sample_time (p.n);
  g_print ("# programme: %.1f s, %u clip instances of %u clips\n", secs (length),
      p.spans->len, p.clips->len);

  live.live = TRUE;
  if (!o.offline_only) {
    if (o.paced) {
      g_autofree gchar *ms = g_strdup_printf ("%d", o.call_ms);
      g_setenv ("WHISPER_LIVE_CALL_DURATION_MS", ms, FALSE);
      g_print ("# live pass (paced, audio time, calls counted as %s ms)\n",
          g_getenv ("WHISPER_LIVE_CALL_DURATION_MS"));
      rc = run_paced_pass (&live, &o, &p);
    } else {
      g_print ("# live pass (real time, about %.0f s)\n", secs (length));
      rc = run_pass (&live, &o, &p, length + 300 * GST_SECOND);
    }
  }
  if (rc == 0 && !o.live_only) {
    g_print ("# offline pass\n");
    rc = run_pass (&offline, &o, &p, length + 600 * GST_SECOND);
  }
  if (rc != 2)
    report (&o, &p, o.offline_only ? NULL : &live, o.live_only || !offline.items ? NULL
        : &offline);

  pass_clear (&live);
  pass_clear (&offline);
  programme_clear (&p);
  g_free (o.model);
  g_free (o.output);
  g_free (o.made);
  g_free (o.language);
  g_strfreev (o.sets);
  return rc;
}
