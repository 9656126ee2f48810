/* whisper-example: the smallest useful application around whispersink.
 *
 *   whisper-example [--model PATH] [--words] FILE
 *
 * Decodes FILE, transcribes it and prints every text item twice: as the
 * buffer an appsink receives ("appsink" lines) and as the "whisper-text"
 * element message on the bus ("bus" lines, with the scores). */
#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <stdio.h>

typedef struct {
  GMainLoop *loop;
  int status;
} App;

static GstFlowReturn
on_new_sample (GstAppSink *sink, gpointer user_data)
{
  GstSample *sample = gst_app_sink_pull_sample (sink);
  GstBuffer *buffer;
  GstMapInfo map;

  (void) user_data;
  if (sample == NULL)
    return GST_FLOW_EOS;
  buffer = gst_sample_get_buffer (sample);
  if (gst_buffer_map (buffer, &map, GST_MAP_READ)) {
    g_print ("appsink %" GST_TIME_FORMAT " +%" GST_TIME_FORMAT " %.*s\n",
        GST_TIME_ARGS (GST_BUFFER_PTS (buffer)),
        GST_TIME_ARGS (GST_BUFFER_DURATION (buffer)), (int) map.size,
        (const char *) map.data);
    gst_buffer_unmap (buffer, &map);
  }
  gst_sample_unref (sample);
  return GST_FLOW_OK;
}

static void
print_text_message (const GstStructure *s)
{
  guint64 ts = GST_CLOCK_TIME_NONE, dur = GST_CLOCK_TIME_NONE;
  gdouble logprob = 0.0, no_speech = 0.0;
  gboolean final = FALSE;

  gst_structure_get_uint64 (s, "timestamp", &ts);
  gst_structure_get_uint64 (s, "duration", &dur);
  gst_structure_get_double (s, "avg-logprob", &logprob);
  gst_structure_get_double (s, "no-speech-prob", &no_speech);
  gst_structure_get_boolean (s, "final", &final);
  g_print ("bus     %" GST_TIME_FORMAT " +%" GST_TIME_FORMAT
      " %s logprob=%.2f no-speech=%.2f %s %s\n", GST_TIME_ARGS (ts), GST_TIME_ARGS (dur),
      gst_structure_get_string (s, "granularity"), logprob, no_speech,
      final ? "final" : "tentative", gst_structure_get_string (s, "text"));
}

static gboolean
on_bus_message (GstBus *bus, GstMessage *msg, gpointer user_data)
{
  App *app = user_data;
  g_autoptr (GError) err = NULL;
  g_autofree gchar *debug = NULL;

  (void) bus;
  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_ELEMENT:
      if (gst_message_has_name (msg, "whisper-text"))
        print_text_message (gst_message_get_structure (msg));
      break;
    case GST_MESSAGE_WARNING:
      gst_message_parse_warning (msg, &err, &debug);
      g_printerr ("warning: %s\n", err->message);
      break;
    case GST_MESSAGE_ERROR:
      gst_message_parse_error (msg, &err, &debug);
      g_printerr ("error: %s\n%s\n", err->message, debug ? debug : "");
      app->status = 1;
      g_main_loop_quit (app->loop);
      break;
    case GST_MESSAGE_EOS:
      g_main_loop_quit (app->loop);
      break;
    default:
      break;
  }
  return G_SOURCE_CONTINUE;
}

int
main (int argc, char **argv)
{
  g_autofree gchar *model = NULL;
  gboolean words = FALSE;
  GOptionEntry entries[] = {
    {"model", 'm', 0, G_OPTION_ARG_FILENAME, &model, "Whisper model (default: the "
          "installed default model)", "PATH"},
    {"words", 'w', 0, G_OPTION_ARG_NONE, &words, "One item per word", NULL},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("FILE - transcribe a file");
  g_autoptr (GError) err = NULL;
  GstElement *pipeline, *src, *whisper, *sink;
  GstAppSinkCallbacks callbacks = { 0, };
  App app = { NULL, 0 };
  GstBus *bus;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || argc != 2) {
    g_printerr ("%s\n", err ? err->message : "usage: whisper-example [OPTION...] FILE");
    return 2;
  }

  pipeline = gst_parse_launch ("filesrc name=src ! decodebin ! audioconvert ! "
      "audioresample ! whispersink name=whisper ! appsink name=text sync=false", &err);
  if (pipeline == NULL) {
    g_printerr ("cannot build the pipeline: %s\n", err->message);
    return 1;
  }
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  whisper = gst_bin_get_by_name (GST_BIN (pipeline), "whisper");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "text");
  g_object_set (src, "location", argv[1], NULL);
  if (model)
    g_object_set (whisper, "model", model, NULL);
  if (words)
    gst_util_set_object_arg (G_OBJECT (whisper), "output", "words");
  callbacks.new_sample = on_new_sample;
  gst_app_sink_set_callbacks (GST_APP_SINK (sink), &callbacks, NULL, NULL);

  app.loop = g_main_loop_new (NULL, FALSE);
  bus = gst_element_get_bus (pipeline);
  gst_bus_add_watch (bus, on_bus_message, &app);
  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    /* The error message (e.g. a missing model) is on the bus. */
    GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    if (msg) {
      on_bus_message (bus, msg, &app);
      gst_message_unref (msg);
    }
    app.status = 1;
  } else {
    g_main_loop_run (app.loop);
  }

  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_bus_remove_watch (bus);
  gst_object_unref (bus);
  gst_object_unref (src);
  gst_object_unref (whisper);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  g_main_loop_unref (app.loop);
  return app.status;
}
