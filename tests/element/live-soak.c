/* live-soak: a live captioning pipeline run for a while, with numbers.
 *
 *   live-soak [--duration S] [--latency MS] [--words] SPEECH_FILE
 *
 *   appsrc (live, speech looped at real time, 100-ms buffers)
 *     ! whispersink ! queue ! textoverlay.text_sink
 *   videotestsrc (live, 10 fps) ! textoverlay ! fakesink sync=true
 *
 * Every 5 s it prints the pipeline latency, whispersink's
 * max-observed-delay, the resident memory, the number of text items and
 * the video position. It fails (exit 1) when the video stalls, no text came
 * in the last 20 s, an error is posted, or memory grows by more than 64 MiB
 * between the first report and the end. Used by live-soak.sh. */
#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <stdio.h>
#include <string.h>

#include "whisper-engine.h"

#define BUF_SAMPLES (WHISPER_SAMPLE_RATE / 10)

typedef struct {
  GstElement *pipeline, *appsrc, *whisper, *vsink;
  gint16 *pcm;
  gsize n;
  GThread *feeder;
  gint stop;
  gint items;
  gint warnings;
  gint errors;
  gint64 last_item_us;
  GMutex lock;
  gchar *last_text;
} Soak;

/* Pushes the speech in a loop, each buffer when its capture would end. */
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

static GstBusSyncReply
on_message (GstBus *bus, GstMessage *m, gpointer data)
{
  Soak *s = data;
  GError *err = NULL;

  (void) bus;
  switch (GST_MESSAGE_TYPE (m)) {
    case GST_MESSAGE_ELEMENT:
      if (gst_message_has_name (m, "whisper-text")) {
        g_mutex_lock (&s->lock);
        s->items++;
        s->last_item_us = g_get_monotonic_time ();
        g_free (s->last_text);
        s->last_text = g_strdup (gst_structure_get_string (gst_message_get_structure (m),
                "text"));
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

int
main (int argc, char **argv)
{
  gint duration = 60, latency = 8000;
  gboolean words = FALSE;
  GOptionEntry entries[] = {
    {"duration", 'd', 0, G_OPTION_ARG_INT, &duration, "Seconds to run (60)", "S"},
    {"latency", 'l', 0, G_OPTION_ARG_INT, &latency, "whispersink latency (8000)", "MS"},
    {"words", 'w', 0, G_OPTION_ARG_NONE, &words, "output=words", NULL},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("SPEECH_FILE");
  g_autoptr (GError) err = NULL;
  g_autofree gchar *desc = NULL;
  Soak s = { 0, };
  float *f;
  gsize i;
  gint t, failed = 0, last_items = 0;
  glong rss_first = -1, rss = -1;
  gint64 start_us;
  GstClockTime last_vpos = 0, pipeline_latency = 0;
  GstBus *bus;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || argc != 2) {
    g_printerr ("usage: live-soak [--duration S] [--latency MS] SPEECH_FILE\n");
    return 2;
  }
  f = whisper_audio_load_file (argv[1], -1, &s.n, &err);
  if (!f) {
    g_printerr ("%s\n", err->message);
    return 2;
  }
  s.pcm = g_new (gint16, s.n);
  for (i = 0; i < s.n; i++)
    s.pcm[i] = (gint16) CLAMP (f[i] * 32768.0f, -32768.0f, 32767.0f);
  g_free (f);
  g_mutex_init (&s.lock);

  desc = g_strdup_printf ("appsrc name=audio is-live=true format=time "
      "min-latency=%" G_GUINT64_FORMAT " caps=\"audio/x-raw,format=S16LE,rate=16000,"
      "channels=1,layout=interleaved\" ! whispersink name=w latency=%d output=%s ! "
      "queue ! o.text_sink "
      "videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,"
      "framerate=10/1 ! textoverlay name=o ! fakesink name=vsink sync=true",
      (guint64) (100 * GST_MSECOND), latency, words ? "words" : "segments");
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

  g_print ("# t_s latency_ms max_observed_delay_ms rss_kib items video_pos_s last_text\n");
  for (t = 5; t <= duration; t += 5) {
    GstQuery *q = gst_query_new_latency ();
    guint delay = 0;
    gint64 vpos = 0;
    gint items;
    gint64 since_item;
    g_autofree gchar *text = NULL;

    g_usleep (start_us + (gint64) t * G_TIME_SPAN_SECOND - g_get_monotonic_time ());
    if (gst_element_query (s.pipeline, q))
      gst_query_parse_latency (q, NULL, &pipeline_latency, NULL);
    gst_query_unref (q);
    g_object_get (s.whisper, "max-observed-delay", &delay, NULL);
    gst_element_query_position (s.vsink, GST_FORMAT_TIME, &vpos);
    rss = rss_kib ();
    if (rss_first < 0)
      rss_first = rss;
    g_mutex_lock (&s.lock);
    items = s.items;
    since_item = g_get_monotonic_time () - s.last_item_us;
    text = g_strdup (s.last_text ? s.last_text : "");
    g_mutex_unlock (&s.lock);

    g_print ("%4d %6" G_GUINT64_FORMAT " %6u %8ld %5d %7.1f  %s\n", t,
        pipeline_latency / GST_MSECOND, delay, rss, items, vpos / 1e9, text);
    if ((GstClockTime) vpos <= last_vpos && t > 10) {
      g_printerr ("video position stalled at %.1f s\n", vpos / 1e9);
      failed = 1;
    }
    if (since_item > 20 * G_TIME_SPAN_SECOND && t > 20) {
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
    g_print ("summary: duration=%ds latency=%" G_GUINT64_FORMAT "ms "
        "max-observed-delay=%ums rss-start=%ldKiB rss-end=%ldKiB items=%d warnings=%d "
        "errors=%d\n", duration, pipeline_latency / GST_MSECOND, delay, rss_first, rss,
        last_items, g_atomic_int_get (&s.warnings), g_atomic_int_get (&s.errors));
  }
  gst_element_set_state (s.pipeline, GST_STATE_NULL);
  if (g_atomic_int_get (&s.errors) > 0)
    failed = 1;
  if (rss - rss_first > 64 * 1024) {
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
  g_free (s.last_text);
  g_mutex_clear (&s.lock);
  g_print ("%s\n", failed ? "live-soak: FAILED" : "live-soak: OK");
  return failed;
}
