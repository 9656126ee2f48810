/* multi-stream: how many live streams of real speech whispersink holds in
 * one pipeline.
 *
 *   multi-stream [--streams N] [--seconds S] [--model PATH] [--latency MS]
 *                [--set PROP=VALUE]... [--independent] [--no-offline] [--verbose]
 *                SHARED_DATA_DIR LIBRIVOX_DIR
 *
 * N branches in one pipeline, each
 *   appsrc (live, 100-ms F32LE buffers, pushed when their capture would end
 *           on the pipeline clock) ! whispersink name=wI ! fakesink sync=true
 * Branch I plays the programme of programme.h (at least S seconds, 120),
 * rotated to start at its clip instance I, so that the streams speak
 * different clips at any moment; the samples are held once for all
 * branches, so that the resident memory grows with the elements only. One
 * thread pushes every branch's buffer of each 100 ms. Every element has the element's default
 * settings (latency 8000 unless --latency) and the --set properties;
 * --independent gives each its own engine (engine-group=stream-I), as
 * every element had before engines were shared.
 *
 * Then (unless --no-offline) the offline pass: each stream's samples (the
 * same start and length, the same 100-ms buffers and timestamps) pushed
 * once more, stream after stream, each through its own pipeline
 *   appsrc (not live, every buffer queued at once) ! whispersink ! fakesink
 * with the same element settings (--model, --latency, --set, the
 * engine-group of --independent), as fast as the element takes them; its
 * text (in PTS order) is the stream's offline text.
 *
 * Reported: per stream the text items, the word error rate of its text (in
 * PTS order) against the published text of what it played, the audio it
 * dropped (stats: audio-dropped), its dropped-audio and excessive-delay
 * warnings, the overload steps it took (whisper-overload messages with
 * taken=TRUE: what it gave up, overload=degrade), its max-observed-delay and
 * how many elements share its engine; with the offline pass also its live
 * text's word error rate against its offline text (wer_percent_lang
 * ("en", offline, live)) and its offline text's against the published text
 * (wer_percent_lang ("en", published, offline)). These two columns read
 * numbers as English ("twenty" and "20" are one word: wer-util.h); the
 * live-against-published column does not (wer_percent ()), as before;
 * over all streams the delay of every text item (arrival running time -
 * PTS - DURATION) as p50 / p95 / max; the resident memory (VmRSS) once
 * every element is PLAYING with its engine loaded and at its peak. Then
 * one line
 *   RESULT streams=N held=yes|no rss_playing_mib=.. rss_peak_mib=.. dropped_s=..
 *          dropped_warnings=.. late_warnings=.. steps_taken=.. wer_mean=.. p95=.. ...
 *          wer_live_offline_mean=.. wer_live_offline_max=.. wer_offline_mean=..
 * (held: no audio dropped, no warning of either kind and no overload step:
 * nothing given up; the last three "na" with --no-offline, after a failed
 * live run, or when an offline pass failed). It reports, it
 * does not judge: exit 0, 1 on an error message or no EOS in time (either
 * pass), 2 on bad usage or missing files. Used by multi-stream.sh. */
#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "programme.h"
#include "wer-util.h"

#define RATE PROGRAMME_RATE
#define BUF_SAMPLES (RATE / 10)
#define CAPS "audio/x-raw,format=F32LE,rate=16000,channels=1,layout=interleaved"

typedef struct {
  gchar *text;
  GstClockTime pts, dur, arrival;
} Item;

typedef struct {
  guint index;
  guint first_span;     /* the programme's clip instance it starts with */
  gsize start;          /* its first sample in the programme */
  GstElement *appsrc, *whisper;
  GMutex lock;
  GArray *items;        /* Item, arrival order */
  GArray *offline_items;        /* Item (no arrival), of the offline pass */
  gchar *live_text;     /* items in PTS order */
  gint dropped_warnings, late_warnings, other_warnings, steps_taken;
  guint64 audio_dropped;
  guint max_observed_delay, engine_users;
  double wer;
  double wer_live_offline, wer_offline;        /* NAN without an offline pass */
} Stream;

typedef struct {
  gint n_streams, latency;
  gdouble seconds;
  gchar *model;
  gchar **sets;
  gboolean independent, no_offline, verbose;
} Options;

typedef struct {
  GstElement *pipeline;
  Programme prog;
  float *loop;          /* the programme twice: a branch reads loop + start */
  Stream *streams;
  guint n;
  gint stop, errors;
} Run;

#define sample_time programme_sample_time
#define secs programme_secs

/* VmRSS of this process in MiB (-1 when /proc cannot tell). */
static double
rss_mib (void)
{
  g_autofree gchar *status = NULL;
  const gchar *line;

  if (!g_file_get_contents ("/proc/self/status", &status, NULL, NULL))
    return -1;
  line = strstr (status, "VmRSS:");
  return line ? g_ascii_strtod (line + 6, NULL) / 1024.0 : -1;
}

/* Pushes every stream's next 100 ms when its capture would end on the
 * pipeline clock, each from its own start in the programme; EOS on each
 * at its end. */
static gpointer
feed (gpointer data)
{
  Run *run = data;
  GstClock *clock = NULL;
  GstClockTime base;
  const gsize n = run->prog.n;
  gsize off;
  guint i;

  while (!g_atomic_int_get (&run->stop) && !(clock = gst_element_get_clock (run->pipeline)))
    g_usleep (10000);
  if (!clock)
    return NULL;
  base = gst_element_get_base_time (run->pipeline);
  for (off = 0; off < n && !g_atomic_int_get (&run->stop); off += BUF_SAMPLES) {
    const gsize len = MIN (BUF_SAMPLES, n - off);
    GstClockID id = gst_clock_new_single_shot_id (clock,
        base + sample_time (off + BUF_SAMPLES));
    gst_clock_id_wait (id, NULL);
    gst_clock_id_unref (id);
    for (i = 0; i < run->n; i++) {
      Stream *s = &run->streams[i];
      GstBuffer *buf = gst_buffer_new_memdup (run->loop + s->start + off,
          len * sizeof (float));
      GST_BUFFER_PTS (buf) = sample_time (off);
      GST_BUFFER_DURATION (buf) = sample_time (off + len) - sample_time (off);
      gst_app_src_push_buffer (GST_APP_SRC (s->appsrc), buf);
      if (off + len >= n)
        gst_app_src_end_of_stream (GST_APP_SRC (s->appsrc));
    }
  }
  gst_object_unref (clock);
  return NULL;
}

/* A text buffer as an Item (no arrival time); FALSE when it cannot be read. */
static gboolean
item_of (GstBuffer *buf, Item *it)
{
  GstMapInfo map;

  it->pts = GST_BUFFER_PTS (buf);
  it->dur = GST_CLOCK_TIME_IS_VALID (GST_BUFFER_DURATION (buf)) ? GST_BUFFER_DURATION (buf) : 0;
  it->arrival = GST_CLOCK_TIME_NONE;
  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return FALSE;
  it->text = g_strstrip (g_strndup ((const gchar *) map.data, map.size));
  gst_buffer_unmap (buf, &map);
  return TRUE;
}

static GstPadProbeReturn
on_text_buffer (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  Stream *s = data;
  GstElement *parent = gst_pad_get_parent_element (pad);
  GstClock *clock = parent ? gst_element_get_clock (parent) : NULL;
  GstClockTime arrival = GST_CLOCK_TIME_NONE;
  Item it;

  if (clock) {
    GstClockTime now = gst_clock_get_time (clock), base = gst_element_get_base_time (parent);
    arrival = now > base ? now - base : 0;
    gst_object_unref (clock);
  }
  g_clear_object (&parent);
  if (!item_of (GST_PAD_PROBE_INFO_BUFFER (info), &it))
    return GST_PAD_PROBE_OK;
  it.arrival = arrival;
  g_mutex_lock (&s->lock);
  g_array_append_val (s->items, it);
  g_mutex_unlock (&s->lock);
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
on_offline_text_buffer (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  Stream *s = data;
  Item it;

  (void) pad;
  if (!item_of (GST_PAD_PROBE_INFO_BUFFER (info), &it))
    return GST_PAD_PROBE_OK;
  g_mutex_lock (&s->lock);
  g_array_append_val (s->offline_items, it);
  g_mutex_unlock (&s->lock);
  return GST_PAD_PROBE_OK;
}

static Stream *
stream_of (Run *run, GstObject *src)
{
  guint i;

  for (i = 0; i < run->n; i++)
    if (src == GST_OBJECT (run->streams[i].whisper))
      return &run->streams[i];
  return NULL;
}

static GstBusSyncReply
on_message (GstBus *bus, GstMessage *m, gpointer data)
{
  Run *run = data;
  g_autoptr (GError) err = NULL;
  const GstStructure *details = NULL;
  const gchar *reason = NULL;
  Stream *s;

  (void) bus;
  switch (GST_MESSAGE_TYPE (m)) {
    case GST_MESSAGE_WARNING:
      gst_message_parse_warning (m, &err, NULL);
      gst_message_parse_warning_details (m, &details);
      if (details)
        reason = gst_structure_get_string (details, "reason");
      s = stream_of (run, GST_MESSAGE_SRC (m));
      g_printerr ("%s warning (%s): %s\n", GST_MESSAGE_SRC_NAME (m),
          reason ? reason : "no reason", err->message);
      if (!s)
        return GST_BUS_DROP;
      if (g_strcmp0 (reason, "dropped-audio") == 0)
        g_atomic_int_inc (&s->dropped_warnings);
      else if (g_strcmp0 (reason, "excessive-delay") == 0)
        g_atomic_int_inc (&s->late_warnings);
      else
        g_atomic_int_inc (&s->other_warnings);
      return GST_BUS_DROP;
    case GST_MESSAGE_ERROR:
      gst_message_parse_error (m, &err, NULL);
      g_printerr ("%s error: %s\n", GST_MESSAGE_SRC_NAME (m), err->message);
      g_atomic_int_inc (&run->errors);
      return GST_BUS_PASS;
    case GST_MESSAGE_EOS:
      return GST_BUS_PASS;
    case GST_MESSAGE_ELEMENT:{
      const GstStructure *st = gst_message_get_structure (m);
      gboolean taken = FALSE;

      if (!st || !gst_structure_has_name (st, "whisper-overload"))
        return GST_BUS_DROP;
      gst_structure_get_boolean (st, "taken", &taken);
      g_printerr ("%s overload: %s %s\n", GST_MESSAGE_SRC_NAME (m),
          taken ? "took" : "undid", gst_structure_get_string (st, "step"));
      s = stream_of (run, GST_MESSAGE_SRC (m));
      if (s && taken)
        g_atomic_int_inc (&s->steps_taken);
      return GST_BUS_DROP;
    }
    default:
      return GST_BUS_DROP;
  }
}

static gboolean
configure_whisper (GstElement *w, const Options *o, guint index)
{
  guint i;

  if (o->model)
    g_object_set (w, "model", o->model, NULL);
  if (o->latency > 0)
    g_object_set (w, "latency", (guint) o->latency, NULL);
  for (i = 0; o->sets && o->sets[i]; i++) {
    g_auto (GStrv) kv = g_strsplit (o->sets[i], "=", 2);
    if (!kv[0] || !kv[1] || !g_object_class_find_property (G_OBJECT_GET_CLASS (w), kv[0])) {
      g_printerr ("--set %s: not a whispersink property=value\n", o->sets[i]);
      return FALSE;
    }
    gst_util_set_object_arg (G_OBJECT (w), kv[0], kv[1]);
  }
  if (o->independent) {
    g_autofree gchar *group = g_strdup_printf ("stream-%u", index);
    g_object_set (w, "engine-group", group, NULL);
  }
  return TRUE;
}

/* The pipeline of all branches. FALSE (after a message) on bad settings. */
static gboolean
setup (Run *run, const Options *o)
{
  GString *desc = g_string_new (NULL);
  g_autoptr (GError) err = NULL;
  GstBus *bus;
  guint i;

  for (i = 0; i < run->n; i++)
    g_string_append_printf (desc, "appsrc name=src%u is-live=true format=time "
        "min-latency=100000000 caps=\"" CAPS "\" ! whispersink name=w%u "
        "! fakesink name=tsink%u sync=true ", i, i, i);
  run->pipeline = gst_parse_launch (desc->str, &err);
  g_string_free (desc, TRUE);
  if (!run->pipeline) {
    g_printerr ("%s\n", err->message);
    return FALSE;
  }
  bus = gst_element_get_bus (run->pipeline);
  gst_bus_set_sync_handler (bus, on_message, run, NULL);
  gst_object_unref (bus);
  for (i = 0; i < run->n; i++) {
    Stream *s = &run->streams[i];
    g_autofree gchar *src = g_strdup_printf ("src%u", i), *w = g_strdup_printf ("w%u", i),
        *t = g_strdup_printf ("tsink%u", i);
    GstElement *tsink = gst_bin_get_by_name (GST_BIN (run->pipeline), t);
    GstPad *pad = gst_element_get_static_pad (tsink, "sink");

    s->appsrc = gst_bin_get_by_name (GST_BIN (run->pipeline), src);
    s->whisper = gst_bin_get_by_name (GST_BIN (run->pipeline), w);
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_text_buffer, s, NULL);
    gst_object_unref (pad);
    gst_object_unref (tsink);
    if (!configure_whisper (s->whisper, o, i))
      return FALSE;
  }
  return TRUE;
}

static gint
by_pts (gconstpointer a, gconstpointer b)
{
  const Item *x = a, *y = b;
  return (x->pts > y->pts) - (x->pts < y->pts);
}

static gint
cmp_gint64 (gconstpointer a, gconstpointer b)
{
  const gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
  return (x > y) - (x < y);
}

/* The items' texts in PTS order (sorts `items`), one space between. */
static gchar *
joined_text (GArray *items)
{
  GString *text = g_string_new (NULL);
  guint i;

  g_array_sort (items, by_pts);
  for (i = 0; i < items->len; i++) {
    const Item *it = &g_array_index (items, Item, i);
    if (text->len)
      g_string_append_c (text, ' ');
    g_string_append (text, it->text);
  }
  return g_string_free (text, FALSE);
}

/* Per-stream counters and WER, after EOS. */
static void
collect (const Programme *p, Stream *s)
{
  GstStructure *stats = NULL;
  g_autofree gchar *published = programme_text (p, s->first_span);

  g_object_get (s->whisper, "stats", &stats, "max-observed-delay", &s->max_observed_delay,
      NULL);
  if (stats) {
    gst_structure_get_uint64 (stats, "audio-dropped", &s->audio_dropped);
    gst_structure_get_uint (stats, "engine-users", &s->engine_users);
    gst_structure_free (stats);
  }
  s->live_text = joined_text (s->items);
  s->wer = wer_percent (published, s->live_text, NULL, NULL);
}

/* The offline pass of stream `s`: the samples it played live, the same
 * 100-ms buffers with the same timestamps, through a pipeline of its own
 * with a non-live appsrc and an element set up as its live one; then its
 * live text's WER against the offline text and the offline text's against
 * the published text. FALSE (after a message) when the pass did not reach
 * EOS; its WERs stay NAN. */
static gboolean
offline_pass (Run *run, const Options *o, Stream *s)
{
  g_autofree gchar *name = g_strdup_printf ("offline-w%u", s->index);
  g_autofree gchar *desc = g_strdup_printf ("appsrc name=src is-live=false format=time "
      "max-bytes=0 caps=\"" CAPS "\" ! whispersink name=%s ! fakesink name=tsink sync=false",
      name);
  g_autoptr (GError) err = NULL;
  GstElement *pipeline, *src, *w, *tsink;
  GstMessage *msg;
  GstPad *pad;
  GstBus *bus;
  const gsize n = run->prog.n;
  gboolean eos = FALSE;
  gsize off;

  pipeline = gst_parse_launch (desc, &err);
  if (!pipeline) {
    g_printerr ("offline pass of stream %u: %s\n", s->index, err->message);
    return FALSE;
  }
  bus = gst_element_get_bus (pipeline);
  /* warnings and errors printed (naming offline-wI), errors counted */
  gst_bus_set_sync_handler (bus, on_message, run, NULL);
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  w = gst_bin_get_by_name (GST_BIN (pipeline), name);
  tsink = gst_bin_get_by_name (GST_BIN (pipeline), "tsink");
  pad = gst_element_get_static_pad (tsink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_offline_text_buffer, s, NULL);
  gst_object_unref (pad);
  gst_object_unref (tsink);
  /* the live element took these settings already: no message expected */
  configure_whisper (w, o, s->index);

  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    g_printerr ("offline pass of stream %u: the pipeline did not start\n", s->index);
  } else {
    /* all of it queued at once (max-bytes=0), the samples not copied */
    for (off = 0; off < n; off += BUF_SAMPLES) {
      const gsize len = MIN (BUF_SAMPLES, n - off);
      GstBuffer *buf = gst_buffer_new_wrapped_full (GST_MEMORY_FLAG_READONLY,
          run->loop + s->start + off, len * sizeof (float), 0, len * sizeof (float), NULL, NULL);
      GST_BUFFER_PTS (buf) = sample_time (off);
      GST_BUFFER_DURATION (buf) = sample_time (off + len) - sample_time (off);
      gst_app_src_push_buffer (GST_APP_SRC (src), buf);
    }
    gst_app_src_end_of_stream (GST_APP_SRC (src));
    msg = gst_bus_timed_pop_filtered (bus, sample_time (n) + 300 * GST_SECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    if (!msg)
      g_printerr ("offline pass of stream %u: no EOS after %.0f s\n", s->index,
          secs (sample_time (n) + 300 * GST_SECOND));
    eos = msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS;
    g_clear_pointer (&msg, gst_message_unref);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (src);
  gst_object_unref (w);
  gst_object_unref (pipeline);
  if (eos) {
    g_autofree gchar *published = programme_text (&run->prog, s->first_span);
    g_autofree gchar *offline_text = joined_text (s->offline_items);

    s->wer_live_offline = wer_percent_lang ("en", offline_text, s->live_text, NULL, NULL);
    s->wer_offline = wer_percent_lang ("en", published, offline_text, NULL, NULL);
  }
  return eos;
}

/* `v` with one decimal, or "na" when it is NAN, in `buf`. */
static const gchar *
fmt1 (gchar *buf, gsize size, double v)
{
  if (isnan (v))
    g_strlcpy (buf, "na", size);
  else
    g_snprintf (buf, size, "%.1f", v);
  return buf;
}

static int
run_streams (Run *run, const Options *o)
{
  GThread *feeder;
  GstBus *bus;
  GstMessage *msg;
  GstClockTime deadline;
  double rss_playing = -1, rss_peak = 0;
  gboolean eos = FALSE;
  guint i, dropped_w = 0, late_w = 0, other_w = 0, steps = 0;
  guint64 dropped = 0;
  double wer_sum = 0, wer_max = 0, lo_sum = 0, lo_max = 0, off_sum = 0;
  gchar b1[16], b2[16], b3[16];
  g_autoptr (GArray) delays = g_array_new (FALSE, FALSE, sizeof (gint64));
  gint64 start;
  int rc = 0;

  if (gst_element_set_state (run->pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    g_printerr ("the pipeline did not start\n");
    return 1;
  }
  feeder = g_thread_new ("feeder", feed, run);
  bus = gst_element_get_bus (run->pipeline);
  start = g_get_monotonic_time ();
  deadline = sample_time (run->prog.n) + 300 * GST_SECOND;
  while (!eos && rc == 0) {
    double rss;
    msg = gst_bus_timed_pop_filtered (bus, GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    rss = rss_mib ();
    rss_peak = MAX (rss_peak, rss);
    /* every element loaded its engine on the way to PLAYING */
    if (rss_playing < 0 && GST_STATE (run->pipeline) == GST_STATE_PLAYING)
      rss_playing = rss;
    if (msg) {
      /* the pipeline posts one EOS, once every sink has it */
      if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR)
        rc = 1;
      else
        eos = TRUE;
      gst_message_unref (msg);
    }
    if ((GstClockTime) (g_get_monotonic_time () - start) * GST_USECOND > deadline) {
      g_printerr ("no EOS after %.0f s\n", secs (deadline));
      rc = 1;
    }
  }
  gst_object_unref (bus);
  g_atomic_int_set (&run->stop, 1);
  for (i = 0; i < run->n; i++)
    collect (&run->prog, &run->streams[i]);
  gst_element_set_state (run->pipeline, GST_STATE_NULL);
  g_thread_join (feeder);

  /* after a failed live run there is nothing to compare */
  if (!o->no_offline && rc == 0) {
    gint64 t0 = g_get_monotonic_time ();
    for (i = 0; i < run->n; i++)
      if (!offline_pass (run, o, &run->streams[i]))
        rc = 1;
    g_print ("# offline pass: %u streams in %.1f s\n", run->n,
        (g_get_monotonic_time () - t0) / 1e6);
  }

  g_print ("%-6s %6s %7s %9s %8s %5s %5s %9s %6s %7s %8s\n", "stream", "items", "WER %",
      "dropped s", "warn d/l", "other", "steps", "max delay", "shares", "off %", "live/off");
  for (i = 0; i < run->n; i++) {
    Stream *s = &run->streams[i];
    guint k;
    g_print ("%-6u %6u %7.1f %9.1f %5d/%-2d %5d %5d %8.2fs %6u %7s %8s\n", i, s->items->len,
        s->wer, secs (s->audio_dropped), s->dropped_warnings, s->late_warnings,
        s->other_warnings, s->steps_taken, s->max_observed_delay / 1000.0, s->engine_users,
        fmt1 (b1, sizeof b1, s->wer_offline), fmt1 (b2, sizeof b2, s->wer_live_offline));
    for (k = 0; k < s->items->len; k++) {
      const Item *it = &g_array_index (s->items, Item, k);
      if (GST_CLOCK_TIME_IS_VALID (it->arrival)) {
        gint64 d = (gint64) it->arrival - (gint64) (it->pts + it->dur);
        g_array_append_val (delays, d);
      }
      if (o->verbose)
        g_print ("  %8.2f %8.2f  %s\n", secs (it->pts), secs (it->arrival), it->text);
    }
    for (k = 0; o->verbose && s->offline_items && k < s->offline_items->len; k++) {
      const Item *it = &g_array_index (s->offline_items, Item, k);
      g_print ("  %8.2f  offline  %s\n", secs (it->pts), it->text);
    }
    dropped += s->audio_dropped;
    dropped_w += s->dropped_warnings;
    late_w += s->late_warnings;
    other_w += s->other_warnings;
    steps += s->steps_taken;
    wer_sum += s->wer;
    wer_max = MAX (wer_max, s->wer);
    /* NAN (no offline pass) makes the sums NAN: "na" */
    lo_sum += s->wer_live_offline;
    lo_max = isnan (lo_max) || isnan (s->wer_live_offline) ? NAN
        : MAX (lo_max, s->wer_live_offline);
    off_sum += s->wer_offline;
  }
  g_array_sort (delays, cmp_gint64);
  {
    const guint n = delays->len;
    const double p50 = n ? g_array_index (delays, gint64, n / 2) / 1e9 : 0,
        p95 = n ? g_array_index (delays, gint64, MIN (n - 1, n * 95 / 100)) / 1e9 : 0,
        max = n ? g_array_index (delays, gint64, n - 1) / 1e9 : 0;
    const gboolean held = dropped == 0 && dropped_w == 0 && late_w == 0 && steps == 0;
    g_print ("RESULT streams=%u engines=%s held=%s rss_playing_mib=%.0f rss_peak_mib=%.0f "
        "dropped_s=%.1f dropped_warnings=%u late_warnings=%u other_warnings=%u steps_taken=%u "
        "wer_mean=%.1f wer_max=%.1f p50=%.2f p95=%.2f max=%.2f items=%u "
        "wer_live_offline_mean=%s wer_live_offline_max=%s wer_offline_mean=%s\n", run->n,
        o->independent ? "independent" : "shared", held ? "yes" : "no", rss_playing,
        rss_peak, secs (dropped), dropped_w, late_w, other_w, steps, wer_sum / run->n, wer_max, p50,
        p95, max, n, fmt1 (b1, sizeof b1, lo_sum / run->n), fmt1 (b2, sizeof b2, lo_max),
        fmt1 (b3, sizeof b3, off_sum / run->n));
  }
  return rc || g_atomic_int_get (&run->errors) > 0 ? 1 : 0;
}

int
main (int argc, char **argv)
{
  Options o = { 1, 0, 120.0, NULL, NULL, FALSE, FALSE, FALSE };
  GOptionEntry entries[] = {
    {"streams", 'n', 0, G_OPTION_ARG_INT, &o.n_streams, "Live streams (1)", "N"},
    {"seconds", 'S', 0, G_OPTION_ARG_DOUBLE, &o.seconds, "Seconds of speech at least (120)",
        "S"},
    {"latency", 'l', 0, G_OPTION_ARG_INT, &o.latency, "whispersink latency (its default)",
        "MS"},
    {"model", 'm', 0, G_OPTION_ARG_FILENAME, &o.model, "whispersink model", "PATH"},
    {"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &o.sets,
        "Another whispersink property (repeatable)", "PROP=VALUE"},
    {"independent", 'i', 0, G_OPTION_ARG_NONE, &o.independent,
        "An engine per element (engine-group=stream-I)", NULL},
    {"no-offline", 0, 0, G_OPTION_ARG_NONE, &o.no_offline,
        "No offline pass (no WER against each stream's offline text)", NULL},
    {"verbose", 'v', 0, G_OPTION_ARG_NONE, &o.verbose, "Print every item", NULL},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("SHARED_DATA_DIR LIBRIVOX_DIR");
  g_autoptr (GError) err = NULL;
  Run run = { 0, };
  guint i;
  int rc;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || argc != 3 || o.n_streams < 1
      || o.seconds <= 0 || o.latency < 0) {
    g_printerr ("usage: multi-stream [--streams N] [--seconds S] [--latency MS] [--model PATH] "
        "[--set PROP=VALUE]... [--independent] [--no-offline] [--verbose] "
        "SHARED_DATA_DIR LIBRIVOX_DIR\n");
    return 2;
  }
  run.prog.clips = g_ptr_array_new_with_free_func (programme_clip_free);
  if (!programme_load_clips (run.prog.clips, argv[1], argv[2], &err)) {
    g_printerr ("%s\n", err->message);
    return 2;
  }
  programme_build (&run.prog, o.seconds / 60.0, 1, 0);
  run.loop = g_new (float, 2 * run.prog.n);
  memcpy (run.loop, run.prog.pcm, run.prog.n * sizeof (float));
  memcpy (run.loop + run.prog.n, run.prog.pcm, run.prog.n * sizeof (float));
  run.n = (guint) o.n_streams;
  run.streams = g_new0 (Stream, run.n);
  for (i = 0; i < run.n; i++) {
    Stream *s = &run.streams[i];
    s->index = i;
    s->first_span = i % run.prog.spans->len;
    s->start = g_array_index (run.prog.spans, ClipSpan, s->first_span).start;
    g_mutex_init (&s->lock);
    s->items = g_array_new (FALSE, FALSE, sizeof (Item));
    s->offline_items = g_array_new (FALSE, FALSE, sizeof (Item));
    s->wer_live_offline = s->wer_offline = NAN;
  }
  g_print ("# %u live streams of %.1f s (%u clip instances), %s engines\n", run.n,
      secs (sample_time (run.prog.n)), run.prog.spans->len,
      o.independent ? "independent" : "shared");
  if (!setup (&run, &o))
    return 2;
  rc = run_streams (&run, &o);

  for (i = 0; i < run.n; i++) {
    Stream *s = &run.streams[i];
    guint k;
    for (k = 0; k < s->items->len; k++)
      g_free (g_array_index (s->items, Item, k).text);
    g_array_free (s->items, TRUE);
    for (k = 0; k < s->offline_items->len; k++)
      g_free (g_array_index (s->offline_items, Item, k).text);
    g_array_free (s->offline_items, TRUE);
    g_free (s->live_text);
    g_mutex_clear (&s->lock);
    gst_clear_object (&s->appsrc);
    gst_clear_object (&s->whisper);
  }
  gst_object_unref (run.pipeline);
  programme_clear (&run.prog);
  g_free (run.loop);
  g_free (run.streams);
  g_free (o.model);
  g_strfreev (o.sets);
  return rc;
}
