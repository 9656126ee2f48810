/* live-wer: word error rate of whispersink's live transcript of one clip.
 *
 *   live-wer [--paced] [--latency MS] [--encoder-context N] [--channel C]
 *            [--model PATH] [--reference TEXT] SPEECH_FILE
 *
 * Real time (default):
 *   appsrc (live, the clip once at real time in 100-ms buffers)
 *     ! whispersink ! fakesink sync=true
 * --paced: the element in a GstHarness with a live upstream, each 100-ms
 * buffer pushed only once the element has handled the one before (a custom
 * serialized event pushed behind it has come out), so inference always
 * keeps up however slow the machine is.
 *
 * It prints one line: the settings, the WER against --reference (words
 * lower-cased, everything but letters, digits and apostrophes a separator;
 * substitutions + deletions + insertions over the reference's words), the
 * stats property's audio-dropped, max-observed-delay, the number of
 * warnings, and the transcript (the text of the segment messages). Used by
 * live-wer.sh, which makes the latency and encoder-context tables of
 * gst-plugin/README.md. */
#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/check/gstharness.h>
#include <string.h>

#include <whisper/whisper.h>
#include "wer-util.h"
#include "wt-util.h"

#define BUF_SAMPLES (WHISPER_SAMPLE_RATE / 10)
#define BARRIER_NAME "live-wer-barrier"

typedef struct {
  GMutex lock;
  GString *text;
  gint warnings;
  gint errors;
} Collected;

static void
collect_message (Collected *c, GstMessage *m)
{
  GError *err = NULL;

  switch (GST_MESSAGE_TYPE (m)) {
    case GST_MESSAGE_ELEMENT:
      if (gst_message_has_name (m, "whisper-text")) {
        const GstStructure *s = gst_message_get_structure (m);
        gboolean final = FALSE;

        gst_structure_get_boolean (s, "final", &final);
        if (final) {
          g_mutex_lock (&c->lock);
          if (c->text->len > 0)
            g_string_append_c (c->text, ' ');
          g_string_append (c->text, gst_structure_get_string (s, "text"));
          g_mutex_unlock (&c->lock);
        }
      }
      break;
    case GST_MESSAGE_WARNING:
      gst_message_parse_warning (m, &err, NULL);
      g_printerr ("warning: %s\n", err->message);
      g_atomic_int_inc (&c->warnings);
      break;
    case GST_MESSAGE_ERROR:
      gst_message_parse_error (m, &err, NULL);
      g_printerr ("error: %s\n", err->message);
      g_atomic_int_inc (&c->errors);
      break;
    default:
      break;
  }
  g_clear_error (&err);
}

static GstBusSyncReply
on_message (GstBus *bus, GstMessage *m, gpointer data)
{
  (void) bus;
  collect_message (data, m);
  return GST_BUS_PASS;
}

static GstBuffer *
s16_buffer (const gint16 *pcm, gsize n, GstClockTime pts)
{
  GstBuffer *buf = gst_buffer_new_memdup (pcm, n * sizeof (gint16));

  GST_BUFFER_PTS (buf) = pts;
  GST_BUFFER_DURATION (buf) = gst_util_uint64_scale_int (n, GST_SECOND,
      WHISPER_SAMPLE_RATE);
  return buf;
}

static GstClockTime
samples_time (gsize n)
{
  return gst_util_uint64_scale_int (n, GST_SECOND, WHISPER_SAMPLE_RATE);
}

/* Real time: appsrc pushes each buffer when its capture would end. */
static gboolean
run_real_time (GstElement *whisper, const gint16 *pcm, gsize n, Collected *c,
    GstElement **pipeline_out)
{
  g_autoptr (GError) err = NULL;
  GstElement *pipeline = gst_pipeline_new (NULL);
  GstElement *src = gst_element_factory_make ("appsrc", NULL);
  GstElement *sink = gst_element_factory_make ("fakesink", NULL);
  GstCaps *caps = gst_caps_from_string ("audio/x-raw,format=S16LE,rate=16000,channels=1,"
      "layout=interleaved");
  GstBus *bus;
  GstMessage *msg;
  GstClock *clock;
  GstClockTime base;
  gsize off;
  gboolean ok = TRUE;

  g_object_set (src, "is-live", TRUE, "format", GST_FORMAT_TIME, "caps", caps,
      "min-latency", (gint64) (100 * GST_MSECOND), NULL);
  gst_caps_unref (caps);
  g_object_set (sink, "sync", TRUE, NULL);
  gst_bin_add_many (GST_BIN (pipeline), src, whisper, sink, NULL);
  if (!gst_element_link_many (src, whisper, sink, NULL)) {
    g_printerr ("cannot link appsrc ! whispersink ! fakesink\n");
    return FALSE;
  }
  bus = gst_element_get_bus (pipeline);
  gst_bus_set_sync_handler (bus, on_message, c, NULL);
  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    g_printerr ("cannot start the pipeline\n");
    return FALSE;
  }
  while (!(clock = gst_element_get_clock (pipeline)))
    g_usleep (10000);
  base = gst_element_get_base_time (pipeline);
  for (off = 0; off < n; off += BUF_SAMPLES) {
    gsize len = MIN (BUF_SAMPLES, n - off);
    GstClockID id = gst_clock_new_single_shot_id (clock, base + samples_time (off + len));

    gst_clock_id_wait (id, NULL);
    gst_clock_id_unref (id);
    if (gst_app_src_push_buffer (GST_APP_SRC (src), s16_buffer (pcm + off, len,
                samples_time (off))) != GST_FLOW_OK)
      break;
  }
  gst_object_unref (clock);
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  msg = gst_bus_timed_pop_filtered (bus, 600 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (!msg || GST_MESSAGE_TYPE (msg) != GST_MESSAGE_EOS) {
    g_printerr ("no EOS\n");
    ok = FALSE;
  }
  g_clear_pointer (&msg, gst_message_unref);
  gst_object_unref (bus);
  *pipeline_out = pipeline;
  return ok;
}

/* Paced: the next buffer once the element has handled the previous one. */
static gboolean
run_paced (GstElement *whisper, const gint16 *pcm, gsize n, Collected *c,
    GstHarness **harness_out)
{
  GstHarness *h = gst_harness_new_with_element (whisper, "sink", "src");
  GstBus *bus = gst_bus_new ();
  GstBuffer *b;
  gsize off;
  gboolean ok = TRUE;

  gst_element_set_bus (whisper, bus);
  gst_bus_set_sync_handler (bus, on_message, c, NULL);
  gst_harness_set_live (h, TRUE);
  gst_harness_set_upstream_latency (h, 100 * GST_MSECOND);
  gst_harness_set_src_caps_str (h, "audio/x-raw,format=S16LE,rate=16000,channels=1,"
      "layout=interleaved");
  for (off = 0; off < n && ok; off += BUF_SAMPLES) {
    GstBuffer *buf = s16_buffer (pcm + off, MIN (BUF_SAMPLES, n - off), samples_time (off));

    if (off == 0)
      GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
    ok = gst_harness_push (h, buf) == GST_FLOW_OK && wt_barrier (h, BARRIER_NAME);
    while ((b = gst_harness_try_pull (h)))
      gst_buffer_unref (b);
  }
  ok = ok && gst_harness_push_event (h, gst_event_new_eos ());
  while (ok) {
    GstEvent *ev = gst_harness_pull_event (h);
    gboolean eos = ev == NULL || GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
    g_clear_pointer (&ev, gst_event_unref);
    if (eos)
      break;
  }
  while ((b = gst_harness_try_pull (h)))
    gst_buffer_unref (b);
  gst_object_unref (bus);
  *harness_out = h;
  return ok;
}

int
main (int argc, char **argv)
{
  gint latency = 8000, encoder_context = 0, channel = -1;
  gboolean paced = FALSE;
  g_autofree gchar *model = NULL, *reference = NULL;
  g_auto (GStrv) sets = NULL;
  GOptionEntry entries[] = {
    {"paced", 'p', 0, G_OPTION_ARG_NONE, &paced,
        "Push each buffer once the element has handled the previous one", NULL},
    {"latency", 'l', 0, G_OPTION_ARG_INT, &latency, "whispersink latency (8000)", "MS"},
    {"encoder-context", 'e', 0, G_OPTION_ARG_INT, &encoder_context,
        "whispersink encoder-context (0)", "N"},
    {"channel", 'c', 0, G_OPTION_ARG_INT, &channel,
        "Channel of the file to transcribe (-1: the mean)", "C"},
    {"model", 'm', 0, G_OPTION_ARG_FILENAME, &model, "whispersink model", "PATH"},
    {"reference", 'r', 0, G_OPTION_ARG_STRING, &reference, "Expected transcript", "TEXT"},
    {"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &sets,
        "Set a whispersink property (repeatable)", "NAME=VALUE"},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("SPEECH_FILE");
  g_autoptr (GError) err = NULL;
  GstElement *whisper, *pipeline = NULL;
  GstHarness *harness = NULL;
  GstStructure *stats = NULL;
  Collected c = { 0, };
  gint16 *pcm;
  float *f;
  gsize n, i;
  guint64 dropped = 0;
  guint delay = 0, errors = 0, ref_words = 0;
  gboolean ok;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || argc != 2) {
    g_printerr ("usage: live-wer [--paced] [--latency MS] [--encoder-context N] "
        "[--channel C] [--model PATH] [--reference TEXT] SPEECH_FILE\n");
    return 2;
  }
  f = whisper_audio_load_file (argv[1], channel, &n, &err);
  if (!f) {
    g_printerr ("%s\n", err->message);
    return 2;
  }
  pcm = g_new (gint16, n);
  for (i = 0; i < n; i++)
    pcm[i] = (gint16) CLAMP (f[i] * 32768.0f, -32768.0f, 32767.0f);
  g_free (f);

  whisper = gst_element_factory_make ("whispersink", NULL);
  if (!whisper) {
    g_printerr ("no whispersink: set GST_PLUGIN_PATH_1_0 to the build's gst-plugin\n");
    return 2;
  }
  g_object_set (whisper, "latency", (guint) latency, "encoder-context", encoder_context,
      NULL);
  {
    guint set = 0;
    g_object_get (whisper, "latency", &set, NULL);
    if (set != (guint) latency) {
      g_printerr ("latency=%d refused (the element keeps %u)\n", latency, set);
      return 2;
    }
  }
  if (model)
    g_object_set (whisper, "model", model, NULL);
  for (i = 0; sets && sets[i]; i++) {
    g_auto (GStrv) kv = g_strsplit (sets[i], "=", 2);
    if (!kv[0] || !kv[1]) {
      g_printerr ("--set %s: expected NAME=VALUE\n", sets[i]);
      return 2;
    }
    gst_util_set_object_arg (G_OBJECT (whisper), kv[0], kv[1]);
  }
  g_mutex_init (&c.lock);
  c.text = g_string_new (NULL);

  gst_object_ref_sink (whisper);
  ok = paced ? run_paced (whisper, pcm, n, &c, &harness)
      : run_real_time (whisper, pcm, n, &c, &pipeline);
  g_object_get (whisper, "stats", &stats, "max-observed-delay", &delay, NULL);
  if (stats)
    gst_structure_get_uint64 (stats, "audio-dropped", &dropped);
  if (reference) {
    gchar **ref = wer_words (reference), **hyp = wer_words (c.text->str);
    errors = wer_errors (ref, hyp);
    ref_words = g_strv_length (ref);
    g_strfreev (ref);
    g_strfreev (hyp);
  }
  g_print ("%s latency=%d encoder-context=%d wer=%.1f%% (%u/%u) audio-dropped=%"
      G_GUINT64_FORMAT "ms max-observed-delay=%ums warnings=%d errors=%d text: %s\n",
      paced ? "paced" : "real-time", latency, encoder_context,
      ref_words ? 100.0 * errors / ref_words : 0.0, errors, ref_words,
      dropped / GST_MSECOND, delay, g_atomic_int_get (&c.warnings),
      g_atomic_int_get (&c.errors), c.text->str);

  g_clear_pointer (&stats, gst_structure_free);
  if (harness)
    gst_harness_teardown (harness);
  if (pipeline) {
    gst_element_set_state (pipeline, GST_STATE_NULL);
    gst_object_unref (pipeline);
  }
  gst_object_unref (whisper);
  g_string_free (c.text, TRUE);
  g_free (pcm);
  return ok && c.errors == 0 ? 0 : 1;
}
