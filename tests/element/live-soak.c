/* live-soak: a live captioning pipeline run for a while, with numbers.
 *
 *   live-soak [--duration S] [--latency MS] [--words] [--silence S] [--noise S]
 *             SPEECH_FILE...
 *
 *   appsrc (live, 100-ms buffers at real time: each speech file, then
 *           --silence s of digital silence, the next file, then --noise s
 *           of white noise at -30 dBFS, and so on, looped)
 *     ! tee ! queue (latency + 2 s) ! fakesink sync=true   (the playback branch)
 *       tee ! queue ! whispersink ! textoverlay.text_sink   (no queue after it)
 *   videotestsrc (live, 10 fps) ! textoverlay ! fakesink sync=true
 *
 * Every 5 s it prints the pipeline latency, whispersink's
 * max-observed-delay, the resident memory, the number of text items, the
 * audio and text the element dropped, and the video position. It fails
 * (exit 1) when the video stalls, no text came for 60 s, an error or a
 * warning is posted, the element drops audio or text, a text item lies
 * wholly inside silence or noise (more than 1 s from any speech), or memory
 * grows by more than 16 MiB between the report at a sixth of the run and
 * the end. Used by live-soak.sh. */
#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <stdio.h>
#include <string.h>

#include <whisper/whisper.h>

#define BUF_SAMPLES (WHISPER_SAMPLE_RATE / 10)
#define EDGE_MARGIN (GST_SECOND)  /* how far text may reach past speech */

/* One stretch of the looped programme: speech or not. */
typedef struct {
  gsize start, end;  /* samples in the programme */
  gboolean speech;
} Span;

typedef struct {
  GstElement *pipeline, *appsrc, *whisper, *vsink;
  gint16 *pcm;       /* the programme, looped */
  gsize n;
  GArray *spans;     /* Span, in order, covering [0, n) */
  GThread *feeder;
  gint stop;
  gint items;
  gint items_in_non_speech;
  gint warnings;
  gint errors;
  gint64 last_item_us;
  GMutex lock;
  gchar *last_text;
} Soak;

/* Pushes the programme in a loop, each buffer when its capture would end. */
static gpointer
feed (gpointer data)
{
  Soak *s = data;
  GstClock *clock = NULL;
  GstClockTime base;
  guint64 k = 0;
  gsize pos = 0;

  while (!g_atomic_int_get (&s->stop) && !(clock = gst_element_get_clock (s->pipeline)))
    g_usleep (10000);
  if (!clock)
    return NULL;
  base = gst_element_get_base_time (s->pipeline);

  while (!g_atomic_int_get (&s->stop)) {
    GstClockTime pts = gst_util_uint64_scale_int (k * BUF_SAMPLES, GST_SECOND,
        WHISPER_SAMPLE_RATE);
    GstClockTime dur = gst_util_uint64_scale_int (BUF_SAMPLES, GST_SECOND,
        WHISPER_SAMPLE_RATE);
    GstClockID id = gst_clock_new_single_shot_id (clock, base + pts + dur);
    GstBuffer *buf = gst_buffer_new_allocate (NULL, BUF_SAMPLES * 2, NULL);
    GstMapInfo map;
    gsize i;

    gst_clock_id_wait (id, NULL);
    gst_clock_id_unref (id);
    gst_buffer_map (buf, &map, GST_MAP_WRITE);
    for (i = 0; i < BUF_SAMPLES; i++) {
      ((gint16 *) map.data)[i] = s->pcm[pos];
      pos = (pos + 1) % s->n;
    }
    gst_buffer_unmap (buf, &map);
    GST_BUFFER_PTS (buf) = pts;
    GST_BUFFER_DURATION (buf) = dur;
    if (gst_app_src_push_buffer (GST_APP_SRC (s->appsrc), buf) != GST_FLOW_OK)
      break;
    k++;
  }
  gst_object_unref (clock);
  return NULL;
}

/* TRUE when [start, end) (ns of stream time, the programme looped) comes
 * within EDGE_MARGIN of a speech span. */
static gboolean
touches_speech (const Soak *s, GstClockTime start, GstClockTime end)
{
  const GstClockTime loop = gst_util_uint64_scale_int (s->n, GST_SECOND, WHISPER_SAMPLE_RATE);
  const GstClockTime first_loop = start / loop * loop;
  guint i;

  /* the spans of this loop and the next (an item may straddle the wrap) */
  for (GstClockTime offset = first_loop; offset <= end; offset += loop) {
    for (i = 0; i < s->spans->len; i++) {
      const Span *sp = &g_array_index (s->spans, Span, i);
      GstClockTime a = offset + gst_util_uint64_scale_int (sp->start, GST_SECOND,
          WHISPER_SAMPLE_RATE);
      GstClockTime b = offset + gst_util_uint64_scale_int (sp->end, GST_SECOND,
          WHISPER_SAMPLE_RATE);
      if (sp->speech && start < b + EDGE_MARGIN && end + EDGE_MARGIN > a)
        return TRUE;
    }
  }
  return FALSE;
}

static GstBusSyncReply
on_message (GstBus *bus, GstMessage *m, gpointer data)
{
  Soak *s = data;
  GError *err = NULL;

  (void) bus;
  switch (GST_MESSAGE_TYPE (m)) {
    case GST_MESSAGE_ELEMENT:
      if (gst_message_has_name (m, "whisper-text")) {
        const GstStructure *st = gst_message_get_structure (m);
        guint64 rt = 0, dur = 0;
        const gchar *text = gst_structure_get_string (st, "text");
        gst_structure_get_uint64 (st, "running-time", &rt);
        gst_structure_get_uint64 (st, "duration", &dur);
        g_mutex_lock (&s->lock);
        s->items++;
        s->last_item_us = g_get_monotonic_time ();
        g_free (s->last_text);
        s->last_text = g_strdup (text);
        if (!touches_speech (s, rt, rt + dur)) {
          s->items_in_non_speech++;
          g_printerr ("text in silence or noise at %.1f s: %s\n", rt / 1e9, text);
        }
        g_mutex_unlock (&s->lock);
      }
      break;
    case GST_MESSAGE_WARNING:
      gst_message_parse_warning (m, &err, NULL);
      g_printerr ("warning: %s\n", err->message);
      g_atomic_int_inc (&s->warnings);
      break;
    case GST_MESSAGE_ERROR:
      gst_message_parse_error (m, &err, NULL);
      g_printerr ("error: %s\n", err->message);
      g_atomic_int_inc (&s->errors);
      break;
    default:
      break;
  }
  g_clear_error (&err);
  return GST_BUS_DROP;
}

static glong
rss_kib (void)
{
  g_autofree gchar *status = NULL;
  const gchar *p;

  if (!g_file_get_contents ("/proc/self/status", &status, NULL, NULL))
    return -1;
  p = strstr (status, "VmRSS:");
  return p ? strtol (p + 6, NULL, 10) : -1;
}

/* Appends `n` samples to the programme as one span. */
static void
append_span (GArray *pcm, GArray *spans, const gint16 *samples, gsize n, gboolean speech)
{
  Span sp = { pcm->len, pcm->len + n, speech };
  g_array_append_vals (pcm, samples, n);
  g_array_append_val (spans, sp);
}

/* The programme: each file, then silence or white noise in turn. */
static gboolean
build_programme (Soak *s, char **files, double silence_s, double noise_s)
{
  GArray *pcm = g_array_new (FALSE, FALSE, sizeof (gint16));
  const gsize n_silence = (gsize) (silence_s * WHISPER_SAMPLE_RATE);
  const gsize n_noise = (gsize) (noise_s * WHISPER_SAMPLE_RATE);
  g_autofree gint16 *quiet = g_new0 (gint16, MAX (n_silence, 1));
  g_autofree gint16 *noise = g_new (gint16, MAX (n_noise, 1));
  guint32 lcg = 12345;
  gsize i;

  /* uniform white noise, RMS 0.0316 of full scale (-30 dBFS) */
  for (i = 0; i < n_noise; i++) {
    lcg = lcg * 1664525u + 1013904223u;
    noise[i] = (gint16) (((gint32) (lcg >> 16) - 32768) * 0.0316 * 1.732);
  }
  s->spans = g_array_new (FALSE, FALSE, sizeof (Span));
  for (guint f = 0; files[f]; f++) {
    g_autoptr (GError) err = NULL;
    gsize n;
    float *x = whisper_audio_load_file (files[f], -1, &n, &err);
    g_autofree gint16 *speech = NULL;
    if (!x) {
      g_printerr ("%s\n", err->message);
      g_array_free (pcm, TRUE);
      return FALSE;
    }
    speech = g_new (gint16, n);
    for (i = 0; i < n; i++)
      speech[i] = (gint16) CLAMP (x[i] * 32768.0f, -32768.0f, 32767.0f);
    g_free (x);
    append_span (pcm, s->spans, speech, n, TRUE);
    if (f % 2 == 0 && n_silence)
      append_span (pcm, s->spans, quiet, n_silence, FALSE);
    else if (f % 2 == 1 && n_noise)
      append_span (pcm, s->spans, noise, n_noise, FALSE);
  }
  s->n = pcm->len;
  s->pcm = (gint16 *) g_array_free (pcm, FALSE);
  return TRUE;
}

static void
get_drops (GstElement *whisper, guint64 *audio_dropped, guint *text_dropped)
{
  GstStructure *st = NULL;
  g_object_get (whisper, "stats", &st, NULL);
  *audio_dropped = 0;
  *text_dropped = 0;
  if (st) {
    gst_structure_get_uint64 (st, "audio-dropped", audio_dropped);
    gst_structure_get_uint (st, "text-dropped", text_dropped);
    gst_structure_free (st);
  }
}

int
main (int argc, char **argv)
{
  gint duration = 60, latency = 8000;
  gdouble silence_s = 10, noise_s = 10;
  gboolean words = FALSE;
  GOptionEntry entries[] = {
    {"duration", 'd', 0, G_OPTION_ARG_INT, &duration, "Seconds to run (60)", "S"},
    {"latency", 'l', 0, G_OPTION_ARG_INT, &latency, "whispersink latency (8000)", "MS"},
    {"words", 'w', 0, G_OPTION_ARG_NONE, &words, "output=words", NULL},
    {"silence", 0, 0, G_OPTION_ARG_DOUBLE, &silence_s,
      "Seconds of digital silence after odd-numbered files (10)", "S"},
    {"noise", 0, 0, G_OPTION_ARG_DOUBLE, &noise_s,
      "Seconds of white noise at -30 dBFS after even-numbered files (10)", "S"},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("SPEECH_FILE...");
  g_autoptr (GError) err = NULL;
  g_autofree gchar *desc = NULL;
  Soak s = { 0, };
  gint t, failed = 0, last_items = 0;
  glong rss_first = -1, rss = -1;
  gint64 start_us;
  GstClockTime last_vpos = 0, pipeline_latency = 0;
  guint64 audio_dropped = 0;
  guint text_dropped = 0;
  GstBus *bus;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || argc < 2) {
    g_printerr ("usage: live-soak [--duration S] [--latency MS] [--silence S] [--noise S] "
        "SPEECH_FILE...\n");
    return 2;
  }
  if (!build_programme (&s, argv + 1, silence_s, noise_s))
    return 2;
  g_mutex_init (&s.lock);
  g_print ("# programme: %.1f s looped, %u spans\n", (double) s.n / WHISPER_SAMPLE_RATE,
      s.spans->len);

  desc = g_strdup_printf ("appsrc name=audio is-live=true format=time "
      "min-latency=%" G_GUINT64_FORMAT " caps=\"audio/x-raw,format=S16LE,rate=16000,"
      "channels=1,layout=interleaved\" ! tee name=t "
      /* a synced sink waits out the pipeline latency, whispersink's
       * included: its queue holds that much (gst-plugin/README.md) */
      "t. ! queue max-size-time=%" G_GUINT64_FORMAT " max-size-buffers=0 max-size-bytes=0 ! "
      "fakesink name=asink sync=true "
      "t. ! queue ! whispersink name=w latency=%d output=%s ! o.text_sink "
      "videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,"
      "framerate=10/1 ! textoverlay name=o ! fakesink name=vsink sync=true",
      (guint64) (100 * GST_MSECOND), (guint64) (latency + 2000) * GST_MSECOND, latency,
      words ? "words" : "segments");
  s.pipeline = gst_parse_launch (desc, &err);
  if (!s.pipeline) {
    g_printerr ("%s\n", err->message);
    return 2;
  }
  s.appsrc = gst_bin_get_by_name (GST_BIN (s.pipeline), "audio");
  s.whisper = gst_bin_get_by_name (GST_BIN (s.pipeline), "w");
  s.vsink = gst_bin_get_by_name (GST_BIN (s.pipeline), "vsink");
  bus = gst_element_get_bus (s.pipeline);
  gst_bus_set_sync_handler (bus, on_message, &s, NULL);

  if (gst_element_set_state (s.pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    g_printerr ("cannot start the pipeline\n");
    return 1;
  }
  s.feeder = g_thread_new ("feeder", feed, &s);
  start_us = g_get_monotonic_time ();
  s.last_item_us = start_us;

  g_print ("# t_s latency_ms max_observed_delay_ms rss_kib items audio_dropped_ms "
      "text_dropped video_pos_s last_text\n");
  for (t = 5; t <= duration; t += 5) {
    GstQuery *q = gst_query_new_latency ();
    guint delay = 0;
    gint64 vpos = 0;
    gint items;
    gint64 since_item;
    g_autofree gchar *text = NULL;

    g_usleep (MAX (0, start_us + (gint64) t * G_TIME_SPAN_SECOND - g_get_monotonic_time ()));
    if (gst_element_query (s.pipeline, q))
      gst_query_parse_latency (q, NULL, &pipeline_latency, NULL);
    gst_query_unref (q);
    g_object_get (s.whisper, "max-observed-delay", &delay, NULL);
    get_drops (s.whisper, &audio_dropped, &text_dropped);
    gst_element_query_position (s.vsink, GST_FORMAT_TIME, &vpos);
    rss = rss_kib ();
    /* memory is compared from a sixth of the run on: the first minutes
     * fill the allocator's arenas and the queues */
    if (rss_first < 0 && t >= duration / 6)
      rss_first = rss;
    g_mutex_lock (&s.lock);
    items = s.items;
    since_item = g_get_monotonic_time () - s.last_item_us;
    text = g_strdup (s.last_text ? s.last_text : "");
    g_mutex_unlock (&s.lock);

    g_print ("%4d %6" G_GUINT64_FORMAT " %6u %8ld %5d %6" G_GUINT64_FORMAT " %3u %7.1f  %s\n",
        t, pipeline_latency / GST_MSECOND, delay, rss, items, audio_dropped / GST_MSECOND,
        text_dropped, vpos / 1e9, text);
    if ((GstClockTime) vpos <= last_vpos && t > 10) {
      g_printerr ("video position stalled at %.1f s\n", vpos / 1e9);
      failed = 1;
    }
    if (since_item > 60 * G_TIME_SPAN_SECOND && t > 60) {
      g_printerr ("no text for %.0f s\n", since_item / 1e6);
      failed = 1;
    }
    last_vpos = vpos;
    last_items = items;
  }

  g_atomic_int_set (&s.stop, 1);
  gst_app_src_end_of_stream (GST_APP_SRC (s.appsrc));
  g_thread_join (s.feeder);
  {
    guint delay = 0;
    g_object_get (s.whisper, "max-observed-delay", &delay, NULL);
    get_drops (s.whisper, &audio_dropped, &text_dropped);
    g_print ("summary: duration=%ds latency=%" G_GUINT64_FORMAT "ms "
        "max-observed-delay=%ums rss-from=%ldKiB rss-end=%ldKiB items=%d "
        "items-in-silence-or-noise=%d audio-dropped=%" G_GUINT64_FORMAT "ms text-dropped=%u "
        "warnings=%d errors=%d\n", duration, pipeline_latency / GST_MSECOND, delay, rss_first,
        rss, last_items, s.items_in_non_speech, audio_dropped / GST_MSECOND, text_dropped,
        g_atomic_int_get (&s.warnings), g_atomic_int_get (&s.errors));
  }
  gst_element_set_state (s.pipeline, GST_STATE_NULL);
  if (g_atomic_int_get (&s.errors) > 0 || g_atomic_int_get (&s.warnings) > 0)
    failed = 1;
  if (audio_dropped > 0 || text_dropped > 0 || s.items_in_non_speech > 0)
    failed = 1;
  if (rss_first >= 0 && rss - rss_first > 16 * 1024) {
    g_printerr ("memory grew by %ld KiB\n", rss - rss_first);
    failed = 1;
  }
  if (last_items == 0)
    failed = 1;

  gst_object_unref (bus);
  gst_object_unref (s.appsrc);
  gst_object_unref (s.whisper);
  gst_object_unref (s.vsink);
  gst_object_unref (s.pipeline);
  g_free (s.pcm);
  g_array_free (s.spans, TRUE);
  g_free (s.last_text);
  g_mutex_clear (&s.lock);
  g_print ("%s\n", failed ? "live-soak: FAILED" : "live-soak: OK");
  return failed;
}
