/* test-remote-stream: whispersink device=remote, live, with server-stream
 * against tests/remote/whisper-server.py's event stream (vLLM's
 * transcription stream format: a text delta per word, --stream-delay
 * apart, then [DONE]). jfk.wav goes through an appsrc paced in real time.
 *
 * Cases:
 *  - stream: server-stream=true. The deltas arrive as interim whisper-text
 *    messages while the answer is read: every committed buffer's text was
 *    an interim message's text before the buffer was pushed, and a shorter
 *    start of it came before that (text before the final); stats
 *    remote-deltas counts the deltas; the committed text is the server's
 *    own answer to the whole file (WER as test-remote's live case).
 *  - ignored: server-stream=true against a server that ignores stream=true
 *    (answers JSON): the committed text of `stream` (both are text-only
 *    answers), no interim message, no delta, no warning.
 *  - plain: server-stream=false: no interim message, no delta; the
 *    committed text is the server's answer, as with `stream`.
 * Where the calls cut the audio depends on when each answer came back, so
 * that two live runs' committed texts may differ where a cut fell in a word
 * ("what you are coming country" against "what your country"): the texts of
 * two runs are compared with a tolerance of such a word or two
 * (SAME_MAX_WER).
 *  - malformed: the first streamed answer has an event that is not JSON: a
 *    server-unavailable warning naming the server's URL and the bad event;
 *    the audio is sent again and nothing is lost (WER, every second
 *    transcribed).
 *
 * Exit 77 only when the server cannot run (no faster-whisper, no model). */
#include <gst/gst.h>
#include <gst/app/app.h>
#include <string.h>
#include "remote-util.h"

/* The server's own answer to the whole of jfk.wav (tiny.en, greedy). */
#define JFK_TEXT "And so my fellow Americans, ask not what your country can do for you, " \
  "ask what you can do for your country."

/* Two live runs' committed texts: at most this far apart (see the top). */
#define SAME_MAX_WER 0.2

static int failures;

#define CHECK(cond, ...) G_STMT_START { if (!(cond)) { failures++; \
  g_printerr ("FAIL %s:%d: ", __FILE__, __LINE__); g_printerr (__VA_ARGS__); \
  g_printerr ("\n"); } } G_STMT_END

typedef struct {
  gchar *text;
  gint64 at;                /* monotonic time, us */
} Seen;

typedef struct {
  GMutex lock;
  GArray *committed;        /* Seen: text buffers at the src pad */
  GArray *interim;          /* Seen: interim whisper-text messages as posted */
  GString *warnings;        /* server-unavailable warnings, one a line */
  guint other_warnings;
  guint64 deltas, received, transcribed;
  gboolean eos;
  gchar *error;
} Run;

static void
seen_clear (gpointer p)
{
  g_free (((Seen *) p)->text);
}

static void
run_init (Run *r)
{
  memset (r, 0, sizeof *r);
  g_mutex_init (&r->lock);
  r->committed = g_array_new (FALSE, FALSE, sizeof (Seen));
  r->interim = g_array_new (FALSE, FALSE, sizeof (Seen));
  g_array_set_clear_func (r->committed, seen_clear);
  g_array_set_clear_func (r->interim, seen_clear);
  r->warnings = g_string_new (NULL);
}

static void
run_clear (Run *r)
{
  g_array_unref (r->committed);
  g_array_unref (r->interim);
  g_string_free (r->warnings, TRUE);
  g_free (r->error);
  g_mutex_clear (&r->lock);
}

static void
add_seen (Run *r, GArray *to, const gchar *text)
{
  Seen s = { g_strdup (text), g_get_monotonic_time () };

  g_mutex_lock (&r->lock);
  g_array_append_val (to, s);
  g_mutex_unlock (&r->lock);
}

static GstPadProbeReturn
probe (G_GNUC_UNUSED GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  GstMapInfo map;
  GstBuffer *b = GST_PAD_PROBE_INFO_BUFFER (info);

  if (gst_buffer_map (b, &map, GST_MAP_READ)) {
    gchar *text = g_strndup ((const gchar *) map.data, map.size);
    add_seen (data, ((Run *) data)->committed, text);
    g_free (text);
    gst_buffer_unmap (b, &map);
  }
  return GST_PAD_PROBE_OK;
}

/* On the posting thread: interim messages with the time they were posted. */
static GstBusSyncReply
on_sync (G_GNUC_UNUSED GstBus *bus, GstMessage *m, gpointer data)
{
  const GstStructure *s = gst_message_get_structure (m);

  if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ELEMENT && gst_structure_has_name (s, "whisper-text")
      && g_strcmp0 (gst_structure_get_string (s, "granularity"), "interim") == 0)
    add_seen (data, ((Run *) data)->interim, gst_structure_get_string (s, "text"));
  return GST_BUS_PASS;
}

static void
handle_message (Run *r, GstMessage *m)
{
  const GstStructure *details = NULL;
  GError *e = NULL;

  switch (GST_MESSAGE_TYPE (m)) {
    case GST_MESSAGE_WARNING:
      gst_message_parse_warning (m, &e, NULL);
      gst_message_parse_warning_details (m, &details);
      g_print ("  warning: %s\n", e->message);
      if (details && g_strcmp0 (gst_structure_get_string (details, "reason"),
              "server-unavailable") == 0)
        g_string_append_printf (r->warnings, "%s\n", e->message);
      else
        r->other_warnings++;
      g_error_free (e);
      break;
    case GST_MESSAGE_ERROR:
      gst_message_parse_error (m, &e, NULL);
      g_print ("  error: %s\n", e->message);
      if (r->error == NULL)
        r->error = g_strdup (e->message);
      g_error_free (e);
      break;
    case GST_MESSAGE_EOS:
      r->eos = TRUE;
      break;
    default:
      break;
  }
}

static void
pop_messages (Run *r, GstBus *bus, GstClockTime wait)
{
  GstMessage *m;

  while ((m = gst_bus_timed_pop (bus, wait))) {
    handle_message (r, m);
    gst_message_unref (m);
    wait = 0;
  }
}

/* Pushes the file's samples in 100-ms buffers at real-time pace. */
static void
feed_live (GstAppSrc *src, const gchar *path, Run *r, GstBus *bus)
{
  gsize off, size, len, n = 1600 * 2;
  gchar *wav = remote_wav_samples (path, &off, &size);
  gint64 t0 = g_get_monotonic_time ();
  GstClockTime pts = 0;

  for (len = off + size; off < len && r->error == NULL;) {
    gsize take = MIN (n, len - off);
    GstBuffer *b = gst_buffer_new_memdup (wav + off, take);
    gint64 due;
    GST_BUFFER_PTS (b) = pts;
    GST_BUFFER_DURATION (b) = gst_util_uint64_scale (take / 2, GST_SECOND, 16000);
    pts += GST_BUFFER_DURATION (b);
    off += take;
    gst_app_src_push_buffer (src, b);
    pop_messages (r, bus, 0);
    due = t0 + (gint64) (pts / 1000);
    if (due > g_get_monotonic_time ())
      g_usleep (due - g_get_monotonic_time ());
  }
  gst_app_src_end_of_stream (src);
  g_free (wav);
}

static void
run_live (guint port, const gchar *extra, const gchar *path, Run *r)
{
  gchar *desc = g_strdup_printf ("appsrc name=src is-live=true format=time "
      "caps=audio/x-raw,format=S16LE,rate=16000,channels=1,layout=interleaved ! "
      "whispersink name=w device=remote server-url=http://127.0.0.1:%u/v1 "
      "latency=8000 lateness=60000 %s ! fakesink", port, extra);
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err), *w, *src;
  GstBus *bus = gst_element_get_bus (p);
  gint64 deadline = g_get_monotonic_time () + 120 * G_TIME_SPAN_SECOND;
  GstStructure *stats = NULL;
  GstPad *pad;

  g_assert_no_error (err);
  run_init (r);
  w = gst_bin_get_by_name (GST_BIN (p), "w");
  src = gst_bin_get_by_name (GST_BIN (p), "src");
  pad = gst_element_get_static_pad (w, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, probe, r, NULL);
  gst_object_unref (pad);
  gst_bus_set_sync_handler (bus, on_sync, r, NULL);
  gst_element_set_state (p, GST_STATE_PLAYING);
  feed_live (GST_APP_SRC (src), path, r, bus);
  while (!r->eos && r->error == NULL && g_get_monotonic_time () < deadline)
    pop_messages (r, bus, 100 * GST_MSECOND);
  if (!r->eos && r->error == NULL)
    r->error = g_strdup ("time-out: no EOS");
  g_object_get (w, "stats", &stats, NULL);
  gst_structure_get_uint64 (stats, "remote-deltas", &r->deltas);
  gst_structure_get_uint64 (stats, "audio-received", &r->received);
  gst_structure_get_uint64 (stats, "audio-transcribed", &r->transcribed);
  gst_structure_free (stats);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_bus_set_sync_handler (bus, NULL, NULL, NULL);
  gst_object_unref (bus);
  gst_object_unref (src);
  gst_object_unref (w);
  gst_object_unref (p);
  g_free (desc);
}

static gchar *
committed_text (Run *r)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < r->committed->len; i++)
    g_string_append_printf (s, " %s", g_array_index (r->committed, Seen, i).text);
  return g_string_free (s, FALSE);
}

/* Whether every committed buffer's text was an interim message's before it
 * was pushed, with a shorter start of it before that. */
static gboolean
came_early (Run *r, guint *early)
{
  *early = 0;
  for (guint i = 0; i < r->committed->len; i++) {
    Seen *c = &g_array_index (r->committed, Seen, i);
    gint64 whole = -1, part = -1;
    for (guint j = 0; j < r->interim->len; j++) {
      Seen *t = &g_array_index (r->interim, Seen, j);
      if (t->at > c->at)
        break;
      if (strcmp (t->text, c->text) == 0 && whole < 0)
        whole = t->at;
      else if (g_str_has_prefix (c->text, t->text) && part < 0)
        part = t->at;
    }
    if (whole < 0)
      return FALSE;
    *early += part >= 0 && part < whole;
  }
  return TRUE;
}

/* The common checks of a run: EOS, every sample transcribed, the text. */
static void
check_run (const gchar *name, Run *r, const gchar *ref, double max_wer)
{
  gchar *got = committed_text (r);
  double e = remote_wer (ref, got);

  g_print ("%s: WER %.1f %%, %u committed, %u interim, %" G_GUINT64_FORMAT " deltas\n"
      "  text:%s\n", name, 100 * e, r->committed->len, r->interim->len, r->deltas, got);
  CHECK (r->eos && r->error == NULL, "%s: no EOS (%s)", name, r->error);
  CHECK (e <= max_wer, "%s: WER %.3f > %.3f against \"%s\"", name, e, max_wer, ref);
  CHECK (r->received > 0 && r->transcribed == r->received, "%s: received %" G_GUINT64_FORMAT
      " ns, transcribed %" G_GUINT64_FORMAT, name, r->received, r->transcribed);
  CHECK (r->other_warnings == 0, "%s: unexpected warnings", name);
  g_free (got);
}

static GSubprocess *
start_server (const gchar *server_py, const gchar *model, guint port, const gchar *flag)
{
  gchar *p = g_strdup_printf ("%u", port);
  const gchar *argv[] = { "python3", server_py, "--model", model, "--port", p,
    "--threads", "2", "--stream-delay", "0.05", flag, NULL };
  GSubprocess *s = remote_start_helper (argv);

  g_free (p);
  return s;
}

static void
stop_server (GSubprocess *s)
{
  g_subprocess_force_exit (s);
  g_subprocess_wait (s, NULL, NULL);
  g_object_unref (s);
}

int
main (int argc, char **argv)
{
  const gchar *root = g_getenv ("WHISPER_SOURCE_ROOT");
  gchar *model = g_getenv ("WHISPER_MODEL") ? g_strdup (g_getenv ("WHISPER_MODEL"))
      : g_build_filename (g_get_user_data_dir (), "gst-whisper", "models", "tiny.en", NULL);
  gchar *server_py = g_build_filename (root, "tests", "remote", "whisper-server.py", NULL);
  gchar *jfk = g_build_filename (g_getenv ("WHISPER_SHARED_DATA"), "jfk.wav", NULL);
  gchar *ref, *streamed = NULL, *url;
  const gchar *probe_argv[] = { "python3", "-c", "import faster_whisper", NULL };
  gint status = 1;
  guint port = remote_free_port (), early;
  GSubprocess *server;
  Run r;

  gst_init (&argc, &argv);
  g_setenv ("no_proxy", "127.0.0.1", TRUE);
  g_unsetenv ("OPENAI_API_KEY");
  if (!g_spawn_sync (NULL, (gchar **) probe_argv, NULL, G_SPAWN_SEARCH_PATH
          | G_SPAWN_STDERR_TO_DEV_NULL | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, NULL,
          &status, NULL) || !g_spawn_check_wait_status (status, NULL)) {
    g_print ("SKIP: the test server needs faster-whisper (tools/install-deps.sh)\n");
    return 77;
  }
  if (!g_file_test (model, G_FILE_TEST_IS_DIR)) {
    g_print ("SKIP: no model at %s (tools/fetch-model.sh)\n", model);
    return 77;
  }
  url = g_strdup_printf ("http://127.0.0.1:%u/v1/audio/transcriptions", port);

  server = start_server (server_py, model, port, NULL);
  g_assert (server);
  run_live (port, "", jfk, &r);
  check_run ("plain", &r, JFK_TEXT, 0.25);
  ref = committed_text (&r);
  CHECK (r.interim->len == 0 && r.deltas == 0, "plain: interim text without server-stream");
  run_clear (&r);

  run_live (port, "server-stream=true", jfk, &r);
  check_run ("stream", &r, JFK_TEXT, 0.25);
  {
    gchar *got = committed_text (&r);
    CHECK (remote_wer (ref, got) <= SAME_MAX_WER, "stream: \"%s\" against plain's \"%s\"",
        got, ref);
    g_free (got);
  }
  CHECK (r.deltas > r.committed->len, "stream: %" G_GUINT64_FORMAT " deltas for %u segments",
      r.deltas, r.committed->len);
  CHECK (came_early (&r, &early), "stream: a committed text that no interim message had "
      "before it");
  CHECK (early > 0, "stream: no text came in pieces before its final");
  CHECK (r.warnings->len == 0, "stream: %s", r.warnings->str);
  streamed = committed_text (&r);
  run_clear (&r);
  stop_server (server);

  server = start_server (server_py, model, port, "--ignore-stream");
  g_assert (server);
  run_live (port, "server-stream=true", jfk, &r);
  check_run ("ignored", &r, streamed, SAME_MAX_WER);
  CHECK (r.interim->len == 0 && r.deltas == 0, "ignored: deltas from a JSON answer");
  CHECK (r.warnings->len == 0, "ignored: %s", r.warnings->str);
  run_clear (&r);
  stop_server (server);

  server = start_server (server_py, model, port, "--bad-stream=1");
  g_assert (server);
  run_live (port, "server-stream=true", jfk, &r);
  check_run ("malformed", &r, JFK_TEXT, 0.25);
  CHECK (strstr (r.warnings->str, url) && strstr (r.warnings->str, "event 3 is not JSON"),
      "malformed: no warning naming %s and the bad event: %s", url, r.warnings->str);
  run_clear (&r);
  stop_server (server);

  g_free (streamed);
  g_free (ref);
  g_free (url);
  g_free (jfk);
  g_free (server_py);
  g_free (model);
  g_print ("%s\n", failures ? "FAILED" : "PASS");
  return failures ? 1 : 0;
}
