/* test-remote: whispersink device=remote against a real OpenAI-compatible
 * server on 127.0.0.1 (tests/remote/whisper-server.py: faster-whisper on
 * the CPU with the local tiny.en model, offline), directly and through a
 * fault-injecting proxy (tests/remote/fault-proxy.py).
 *
 * Cases: jfk.wav and a LibriVox clip through `whispersink device=remote !
 * srtenc` give the words of the server's own answer to the same file;
 * live (appsrc is-live, paced in real time) works; faults (the server
 * killed mid-stream and started again, live and file; answers slower than
 * server-timeout; 500s; malformed JSON; a 401) give the documented
 * warnings or error and no crash, and every second of audio is covered by
 * text or a GAP (with a dropped-audio warning for any audio dropped). The
 * server needs an API key, which the element sends from server-api-key or
 * $OPENAI_API_KEY; no message may contain it.
 *
 * Exit 77 (with the reason) only when the server cannot run (no
 * faster-whisper, no model). */
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/app/app.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "remote-util.h"

#define API_KEY "test-secret-key-4711"
#define LIBRIVOX "/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0870.wav"

static const gchar *python = "python3";
static gchar *model_dir, *server_py, *proxy_py, *jfk;
static guint server_port, proxy_port;
static GSubprocess *server, *proxy;
static int failures;
static gchar **only;          /* the cases named on the command line, or all */

static gboolean
want (const gchar *name)
{
  return only == NULL || *only == NULL || g_strv_contains ((const gchar *const *) only, name);
}

#define CHECK(cond, ...) G_STMT_START { if (!(cond)) { failures++; \
  g_printerr ("FAIL %s:%d: ", __FILE__, __LINE__); g_printerr (__VA_ARGS__); \
  g_printerr ("\n"); } } G_STMT_END

/* ------------------------------------------------------------------------ */
/* Processes */

static gboolean
start_server (void)
{
  gchar *port = g_strdup_printf ("%u", server_port);
  const gchar *argv[] = { python, server_py, "--model", model_dir, "--port", port,
    "--api-key", API_KEY, "--threads", "2", NULL };

  server = remote_start_helper (argv);
  g_free (port);
  return server != NULL;
}

static void
kill_server (void)
{
  if (server == NULL)
    return;
  g_subprocess_force_exit (server);
  g_subprocess_wait (server, NULL, NULL);
  g_clear_object (&server);
}

static gboolean
start_proxy (void)
{
  gchar *up = g_strdup_printf ("%u", server_port), *port = g_strdup_printf ("%u", proxy_port);
  const gchar *argv[] = { python, proxy_py, "--upstream", up, "--port", port, NULL };

  proxy = remote_start_helper (argv);
  g_free (up);
  g_free (port);
  return proxy != NULL;
}

static SoupSession *session;

static void
set_fault (const gchar *mode, guint count, double delay)
{
  gchar *url = g_strdup_printf ("http://127.0.0.1:%u/__fault?mode=%s&count=%u&delay=%g",
      proxy_port, mode, count, delay);
  SoupMessage *msg = soup_message_new ("GET", url);
  GBytes *b = soup_session_send_and_read (session, msg, NULL, NULL);

  g_assert (b && soup_message_get_status (msg) == 200);
  g_bytes_unref (b);
  g_object_unref (msg);
  g_free (url);
}

/* The server's own answer to the file, posted directly (no proxy). */
static gchar *
server_text (const gchar *path)
{
  gchar *data, *url, *text;
  gsize len;
  SoupMultipart *mp;
  SoupMessage *msg;
  GBytes *wav, *b;
  JsonParser *parser;

  g_assert (g_file_get_contents (path, &data, &len, NULL));
  wav = g_bytes_new_take (data, len);
  mp = soup_multipart_new (SOUP_FORM_MIME_TYPE_MULTIPART);
  soup_multipart_append_form_file (mp, "file", "audio.wav", "audio/wav", wav);
  soup_multipart_append_form_string (mp, "model", "whisper-1");
  soup_multipart_append_form_string (mp, "language", "en");
  soup_multipart_append_form_string (mp, "temperature", "0");
  soup_multipart_append_form_string (mp, "response_format", "verbose_json");
  url = g_strdup_printf ("http://127.0.0.1:%u/v1/audio/transcriptions", server_port);
  msg = soup_message_new_from_multipart (url, mp);
  soup_message_headers_replace (soup_message_get_request_headers (msg), "Authorization",
      "Bearer " API_KEY);
  b = soup_session_send_and_read (session, msg, NULL, NULL);
  g_assert (b && soup_message_get_status (msg) == 200);
  parser = json_parser_new ();
  g_assert (json_parser_load_from_data (parser, g_bytes_get_data (b, NULL),
          (gssize) g_bytes_get_size (b), NULL));
  text = g_strdup (json_object_get_string_member (json_node_get_object (json_parser_get_root
              (parser)), "text"));
  g_object_unref (parser);
  g_bytes_unref (b);
  g_bytes_unref (wav);
  g_object_unref (msg);
  soup_multipart_free (mp);
  g_free (url);
  return text;
}

/* ------------------------------------------------------------------------ */
/* Pipelines */

typedef struct {
  GString *text;            /* text buffers, joined with spaces */
  GArray *spans;            /* GstClockTime pairs: text buffers and GAPs */
  guint unavailable, recovered, dropped_warnings, other_warnings;
  gchar *error;
  gboolean eos, leaked_key;
  GstClockTime received;    /* stats audio-received at the end */
  GstClockTime transcribed, dropped;
  guint max_delay_ms;       /* max-observed-delay */
  double seconds;           /* wall-clock time to EOS */
} Run;

static void
run_clear (Run *r)
{
  g_string_free (r->text, TRUE);
  g_array_unref (r->spans);
  g_free (r->error);
}

static GstPadProbeReturn
probe (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  Run *r = data;
  GstClockTime span[2];

  (void) pad;
  if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
    GstBuffer *b = GST_PAD_PROBE_INFO_BUFFER (info);
    GstMapInfo map;
    span[0] = GST_BUFFER_PTS (b);
    span[1] = span[0] + GST_BUFFER_DURATION (b);
    if (gst_buffer_map (b, &map, GST_MAP_READ)) {
      g_string_append_c (r->text, ' ');
      g_string_append_len (r->text, (const gchar *) map.data, (gssize) map.size);
      gst_buffer_unmap (b, &map);
    }
    g_array_append_val (r->spans, span);
  } else if (GST_EVENT_TYPE (GST_PAD_PROBE_INFO_EVENT (info)) == GST_EVENT_GAP) {
    GstClockTime ts, dur;
    gst_event_parse_gap (GST_PAD_PROBE_INFO_EVENT (info), &ts, &dur);
    span[0] = ts;
    span[1] = ts + (GST_CLOCK_TIME_IS_VALID (dur) ? dur : 0);
    g_array_append_val (r->spans, span);
  }
  return GST_PAD_PROBE_OK;
}

static gint
cmp_span (gconstpointer a, gconstpointer b)
{
  const GstClockTime *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The largest hole in the text + GAP coverage of [0, end), in s. */
static double
largest_hole (Run *r, GstClockTime end)
{
  GstClockTime covered = 0, hole = 0;
  guint i;

  g_array_sort (r->spans, cmp_span);
  for (i = 0; i < r->spans->len; i++) {
    GstClockTime *s = &g_array_index (r->spans, GstClockTime, 2 * i);
    if (s[0] > covered)
      hole = MAX (hole, s[0] - covered);
    covered = MAX (covered, s[1]);
  }
  if (end > covered)
    hole = MAX (hole, end - covered);
  return hole / 1e9;
}

static void
check_message_text (Run *r, GstMessage *m)
{
  const GstStructure *st = gst_message_get_structure (m);
  gchar *s = st ? gst_structure_to_string (st) : NULL;
  GError *e = NULL;
  gchar *dbg = NULL;

  if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_WARNING)
    gst_message_parse_warning (m, &e, &dbg);
  else if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR)
    gst_message_parse_error (m, &e, &dbg);
  else if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_INFO)
    gst_message_parse_info (m, &e, &dbg);
  if ((s && strstr (s, API_KEY)) || (e && strstr (e->message, API_KEY))
      || (dbg && strstr (dbg, API_KEY)))
    r->leaked_key = TRUE;
  g_free (s);
  g_free (dbg);
  g_clear_error (&e);
}

static void
handle_message (Run *r, GstMessage *m)
{
  const gchar *reason;

  check_message_text (r, m);
  reason = remote_take_message (m, &r->error, &r->eos);
  if (g_strcmp0 (reason, "server-unavailable") == 0)
    r->unavailable++;
  else if (g_strcmp0 (reason, "server-recovered") == 0)
    r->recovered++;
  else if (g_strcmp0 (reason, "dropped-audio") == 0)
    r->dropped_warnings++;
  else if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_WARNING)
    r->other_warnings++;
}

typedef void (*DuringFunc) (double seconds, gpointer data);

/* Live source: pushes the file's 16-kHz S16 samples in 100-ms buffers at
 * real-time pace, calling `during` every buffer with the stream time. */
static void
feed_live (GstElement *pipeline, GstAppSrc *src, const gchar *path, Run *r, DuringFunc during,
    gpointer data)
{
  gchar *wav;
  gsize off, size, len, n = 1600 * 2;
  gint64 t0 = g_get_monotonic_time ();
  GstClockTime pts = 0;
  GstBus *bus = gst_element_get_bus (pipeline);

  wav = remote_wav_samples (path, &off, &size);
  len = off + size;
  while (off < len) {
    gsize take = MIN (n, len - off);
    GstBuffer *b = gst_buffer_new_memdup (wav + off, take);
    GstMessage *m;
    GST_BUFFER_PTS (b) = pts;
    GST_BUFFER_DURATION (b) = gst_util_uint64_scale (take / 2, GST_SECOND, 16000);
    pts += GST_BUFFER_DURATION (b);
    off += take;
    gst_app_src_push_buffer (src, b);
    if (during)
      during (pts / 1e9, data);
    while ((m = gst_bus_pop (bus))) {
      handle_message (r, m);
      gst_message_unref (m);
    }
    if (r->error)
      break;
    {
      gint64 due = t0 + (gint64) (pts / 1000);
      gint64 now = g_get_monotonic_time ();
      if (due > now)
        g_usleep (due - now);
    }
  }
  gst_app_src_end_of_stream (src);
  gst_object_unref (bus);
  g_free (wav);
}

/* Runs `desc` (a whispersink named w; for live, an appsrc named src) to EOS
 * or error, at most timeout_s. */
static void
run_pipeline (const gchar *desc, const gchar *live_file, DuringFunc during, gpointer data,
    guint timeout_s, Run *r)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err), *w;
  GstPad *pad;
  GstBus *bus;
  gint64 t0 = g_get_monotonic_time ();
  gint64 deadline = t0 + timeout_s * G_TIME_SPAN_SECOND;
  GstStructure *stats = NULL;
  GParamSpec *key_spec;

  memset (r, 0, sizeof *r);
  r->text = g_string_new (NULL);
  r->spans = g_array_new (FALSE, FALSE, 2 * sizeof (GstClockTime));
  g_assert_no_error (err);
  w = gst_bin_get_by_name (GST_BIN (p), "w");
  key_spec = g_object_class_find_property (G_OBJECT_GET_CLASS (w), "server-api-key");
  CHECK (key_spec && !(key_spec->flags & G_PARAM_READABLE), "server-api-key is readable");
  pad = gst_element_get_static_pad (w, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
      probe, r, NULL);
  gst_object_unref (pad);
  bus = gst_element_get_bus (p);
  gst_element_set_state (p, GST_STATE_PLAYING);
  if (live_file) {
    GstElement *src = gst_bin_get_by_name (GST_BIN (p), "src");
    feed_live (p, GST_APP_SRC (src), live_file, r, during, data);
    gst_object_unref (src);
  }
  while (!r->eos && !r->error && g_get_monotonic_time () < deadline) {
    GstMessage *m = gst_bus_timed_pop (bus, 100 * GST_MSECOND);
    if (during && !live_file)
      during ((g_get_monotonic_time () - deadline) / 1e6 + timeout_s, data);
    if (m) {
      handle_message (r, m);
      gst_message_unref (m);
    }
  }
  if (!r->eos && !r->error)
    r->error = g_strdup ("time-out: no EOS");
  g_object_get (w, "stats", &stats, NULL);
  gst_structure_get_uint64 (stats, "audio-received", &r->received);
  gst_structure_get_uint64 (stats, "audio-transcribed", &r->transcribed);
  gst_structure_get_uint64 (stats, "audio-dropped", &r->dropped);
  g_object_get (w, "max-observed-delay", &r->max_delay_ms, NULL);
  r->seconds = (g_get_monotonic_time () - t0) / 1e6;
  gst_structure_free (stats);
  gst_element_set_state (p, GST_STATE_NULL);
  {
    GstMessage *m;
    while ((m = gst_bus_pop (bus))) {
      check_message_text (r, m);
      gst_message_unref (m);
    }
  }
  gst_object_unref (bus);
  gst_object_unref (w);
  gst_object_unref (p);
}

static gchar *
file_pipeline (const gchar *path, guint port, const gchar *extra, const gchar *srt)
{
  return g_strdup_printf ("filesrc location=%s ! decodebin ! audioconvert ! audioresample ! "
      "whispersink name=w device=remote server-url=http://127.0.0.1:%u %s ! srtenc ! "
      "filesink location=%s", path, port, extra, srt);
}

static gchar *
live_pipeline (guint port, const gchar *extra)
{
  return g_strdup_printf ("appsrc name=src is-live=true format=time "
      "caps=audio/x-raw,format=S16LE,rate=16000,channels=1,layout=interleaved ! "
      "whispersink name=w device=remote server-url=http://127.0.0.1:%u/v1 %s ! fakesink "
      "sync=false", port, extra);
}

static gchar *
srt_text (const gchar *srt)
{
  gchar *data = NULL, **lines;
  GString *s = g_string_new (NULL);
  guint i;

  if (!g_file_get_contents (srt, &data, NULL, NULL))
    return g_string_free (s, FALSE);
  lines = g_strsplit (data, "\n", -1);
  for (i = 0; lines[i]; i++) {
    g_strstrip (lines[i]);
    if (*lines[i] == '\0' || strstr (lines[i], "-->") || (g_ascii_isdigit (*lines[i])
        && strspn (lines[i], "0123456789") == strlen (lines[i])))
      continue;
    g_string_append_printf (s, " %s", lines[i]);
  }
  g_strfreev (lines);
  g_free (data);
  return g_string_free (s, FALSE);
}

static void
report (const gchar *name, Run *r, const gchar *ref, double max_wer, gboolean expect_eos)
{
  double e = ref ? remote_wer (ref, r->text->str) : 0.0;
  double hole = largest_hole (r, r->received);

  g_print ("%s: WER %.1f %%, %u unavailable, %u recovered, %u dropped, error %s, largest "
      "hole %.2f s\n  text:%s\n", name, 100 * e, r->unavailable, r->recovered, r->dropped_warnings,
      r->error ? r->error : "none", hole, r->text->str);
  CHECK (!r->leaked_key, "%s: a message holds the API key", name);
  if (expect_eos) {
    CHECK (r->eos && r->error == NULL, "%s: no EOS (%s)", name, r->error);
    CHECK (e <= max_wer, "%s: WER %.3f > %.3f against \"%s\"", name, e, max_wer, ref);
    /* Every second is transcribed or under a GAP. */
    CHECK (hole < 0.1, "%s: %.2f s of audio neither transcribed nor under a GAP", name,
        hole);
    CHECK (r->received > 0, "%s: no audio received", name);
    /* Nothing lost silently: what was not transcribed was dropped, with
     * a warning. */
    CHECK (ABS ((gint64) r->received - (gint64) (r->transcribed + r->dropped)) <= 1000, "%s: received %" G_GUINT64_FORMAT
        " ns, transcribed %" G_GUINT64_FORMAT ", dropped %" G_GUINT64_FORMAT, name,
        r->received, r->transcribed, r->dropped);
    CHECK (r->dropped == 0 || r->dropped_warnings > 0, "%s: audio dropped without a warning",
        name);
  }
}

/* ------------------------------------------------------------------------ */
/* Cases */

static void
case_file (const gchar *name, const gchar *path, const gchar *extra)
{
  gchar *ref = server_text (path);
  gchar *srt = g_strdup_printf ("%s/test-remote-%s.srt", g_get_tmp_dir (), name);
  gchar *desc = file_pipeline (path, server_port, extra, srt);
  gchar *got;
  Run r;

  run_pipeline (desc, NULL, NULL, NULL, 120, &r);
  report (name, &r, ref, 0.0, TRUE);
  got = srt_text (srt);
  CHECK (remote_wer (ref, got) == 0.0, "%s: the SRT file says \"%s\", the server \"%s\"", name,
      got, ref);
  CHECK (r.unavailable == 0 && r.dropped_warnings == 0, "%s: warnings without a fault", name);
  g_free (got);
  run_clear (&r);
  g_free (desc);
  g_free (srt);
  g_free (ref);
}

/* A fault for the next `count` requests through the proxy, then a file. */
static void
case_fault (const gchar *name, const gchar *mode, guint count, double delay,
    const gchar *extra, gboolean expect_eos, Run *r)
{
  gchar *ref = server_text (jfk);
  gchar *srt = g_strdup_printf ("%s/test-remote-%s.srt", g_get_tmp_dir (), name);
  gchar *desc = file_pipeline (jfk, proxy_port, extra, srt);

  set_fault (mode, count, delay);
  run_pipeline (desc, NULL, NULL, NULL, 240, r);
  set_fault ("pass", 0, 0);
  report (name, r, ref, 0.0, expect_eos);
  g_free (desc);
  g_free (srt);
  g_free (ref);
}

typedef struct {
  double kill_at, restart_at;
  gboolean killed, restarted;
} Outage;

static void
outage_step (double t, gpointer data)
{
  Outage *o = data;

  if (!o->killed && t >= o->kill_at) {
    g_print ("  killing the server at %.1f s\n", t);
    kill_server ();
    o->killed = TRUE;
  }
  if (o->killed && !o->restarted && t >= o->restart_at) {
    g_print ("  starting the server again at %.1f s\n", t);
    o->restarted = TRUE;
    if (!start_server ())
      CHECK (FALSE, "the server did not start again");
  }
}

/* ------------------------------------------------------------------------ */
/* `test-remote bench` (not in the suite): the remote path against the local
 * engine on this machine. */

static int
cmp_double (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static double
median3 (double *t)
{
  qsort (t, 3, sizeof *t, cmp_double);
  return t[1];
}

static void
bench (void)
{
  gchar *wav, *long_path = g_build_filename (g_get_tmp_dir (), "test-remote-long.wav", NULL);
  gsize off, size;
  const gchar *files[2];
  const gchar *devices[2] = { "device=cpu threads=2", NULL };
  gchar *remote = g_strdup_printf ("device=remote server-url=http://127.0.0.1:%u "
      "server-api-key=" API_KEY, server_port);
  guint f, d, i;
  Run r;

  /* jfk.wav six times: 66 s, two full windows and a rest. */
  {
    GByteArray *b = g_byte_array_new ();
    guint8 h[44];
    wav = remote_wav_samples (jfk, &off, &size);
    memcpy (h, "RIFF\0\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0\x80\x3e\0\0\0\x7d\0\0"
        "\x02\0\x10\0data\0\0\0\0", 44);
    GST_WRITE_UINT32_LE (h + 40, (guint32) (6 * size));
    GST_WRITE_UINT32_LE (h + 4, (guint32) (6 * size + 36));
    g_byte_array_append (b, h, 44);
    for (i = 0; i < 6; i++)
      g_byte_array_append (b, (const guint8 *) wav + off, (guint) size);
    g_assert (g_file_set_contents (long_path, (const gchar *) b->data, b->len, NULL));
    g_byte_array_unref (b);
    g_free (wav);
  }
  files[0] = jfk;
  files[1] = long_path;
  devices[1] = remote;
  for (f = 0; f < 2; f++) {
    double audio = f == 0 ? 11.0 : 66.0, t[3];
    for (d = 0; d < 2; d++) {
      for (i = 0; i < 3; i++) {
        gchar *desc = g_strdup_printf ("filesrc location=%s ! decodebin ! audioconvert ! "
            "audioresample ! whispersink name=w %s ! fakesink", files[f], devices[d]);
        run_pipeline (desc, NULL, NULL, NULL, 600, &r);
        t[i] = r.seconds;
        run_clear (&r);
        g_free (desc);
      }
      g_print ("BENCH file %s, %s: median %.2f s of 3 (%.1fx real time)\n",
          f == 0 ? "jfk.wav (11 s)" : "jfk x6 (66 s)", d == 0 ? "local cpu" : "remote",
          median3 (t), audio / median3 (t));
    }
    for (i = 0; i < 3; i++) {
      gint64 t0 = g_get_monotonic_time ();
      g_free (server_text (files[f]));
      t[i] = (g_get_monotonic_time () - t0) / 1e6;
    }
    g_print ("BENCH file %s, the server's own answer to one POST: median %.2f s of 3\n",
        f == 0 ? "jfk.wav (11 s)" : "jfk x6 (66 s)", median3 (t));
  }
  for (d = 0; d < 2; d++) {
    gchar *ref = server_text (jfk);
    gchar *desc = g_strdup_printf ("appsrc name=src is-live=true format=time "
        "caps=audio/x-raw,format=S16LE,rate=16000,channels=1,layout=interleaved ! "
        "whispersink name=w latency=8000 lateness=60000 %s ! fakesink sync=false",
        devices[d]);
    run_pipeline (desc, jfk, NULL, NULL, 120, &r);
    g_print ("BENCH live jfk.wav, latency 8000, %s: max-observed-delay %u ms, WER %.1f %%\n",
        d == 0 ? "local cpu" : "remote", r.max_delay_ms, 100 * remote_wer (ref, r.text->str));
    run_clear (&r);
    g_free (desc);
    g_free (ref);
  }
  g_unlink (long_path);
  g_free (long_path);
  g_free (remote);
}

int
main (int argc, char **argv)
{
  const gchar *src = g_getenv ("WHISPER_SOURCE_ROOT");
  const gchar *shared = g_getenv ("WHISPER_SHARED_DATA");
  gchar *out = NULL;
  gint status = 0;
  Run r;

  gst_init (&argc, &argv);
  only = argv + 1;
  g_setenv ("no_proxy", "127.0.0.1", TRUE);
  g_unsetenv ("OPENAI_API_KEY");
  model_dir = g_getenv ("WHISPER_MODEL") ? g_strdup (g_getenv ("WHISPER_MODEL"))
      : g_build_filename (g_get_user_data_dir (), "gst-whisper", "models", "tiny.en", NULL);
  server_py = g_build_filename (src, "tests", "remote", "whisper-server.py", NULL);
  proxy_py = g_build_filename (src, "tests", "remote", "fault-proxy.py", NULL);
  jfk = g_build_filename (shared, "jfk.wav", NULL);

  {
    const gchar *probe_argv[] = { python, "-c", "import faster_whisper", NULL };
    if (!g_spawn_sync (NULL, (gchar **) probe_argv, NULL, G_SPAWN_SEARCH_PATH
            | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL, &status, NULL)
        || !g_spawn_check_wait_status (status, NULL)) {
      g_print ("SKIP: the test server needs faster-whisper (pip install "
          "faster-whisper==1.2.1, tools/install-deps.sh)\n");
      return 77;
    }
    g_free (out);
    if (!g_file_test (model_dir, G_FILE_TEST_IS_DIR)) {
      g_print ("SKIP: no model at %s (tools/fetch-model.sh)\n", model_dir);
      return 77;
    }
  }

  session = soup_session_new ();
  server_port = remote_free_port ();
  proxy_port = remote_free_port ();
  if (!start_server () || !start_proxy ()) {
    g_print ("FAIL: the test server or proxy did not start\n");
    return 1;
  }

  /* Files: the server's own words, the key from the property and from the
   * environment. */
  if (want ("jfk"))
    case_file ("jfk", jfk, "server-api-key=" API_KEY);
  g_setenv ("OPENAI_API_KEY", API_KEY, TRUE);
  if (!want ("librivox"))
    ;
  else if (g_file_test (LIBRIVOX, G_FILE_TEST_EXISTS))
    case_file ("librivox", LIBRIVOX, "");
  else
    CHECK (FALSE, "%s is missing (Debian's pocketsphinx-testdata)", LIBRIVOX);
  if (want ("jfk-words"))
    case_file ("jfk-words", jfk, "output=words");

  /* Live, paced in real time. */
  {
    gchar *ref = server_text (jfk), *desc = live_pipeline (server_port, "latency=8000 lateness=60000");
    if (want ("live")) {
      run_pipeline (desc, jfk, NULL, NULL, 120, &r);
      report ("live", &r, ref, 0.25, TRUE);
      CHECK (r.unavailable == 0 && r.dropped_warnings == 0, "live: warnings without a fault");
      run_clear (&r);
    }
    g_free (desc);

    /* The server killed mid-stream and started again 5 s later: the audio
     * waits and goes when it is back. */
    if (want ("live-outage")) {
      Outage o = { 3.0, 8.0, FALSE, FALSE };
      desc = live_pipeline (proxy_port, "latency=8000 lateness=60000");
      run_pipeline (desc, jfk, outage_step, &o, 90, &r);
      report ("live-outage", &r, ref, 0.25, TRUE);
      CHECK (r.unavailable >= 1 && r.recovered >= 1, "live-outage: no warning or recovery");
      CHECK (r.dropped_warnings == 0, "live-outage: audio dropped within server-queue");
      run_clear (&r);
      g_free (desc);
    }

    /* The same with a queue of 2 s: the oldest audio is dropped, with GAPs
     * and warnings, and the rest is transcribed. */
    if (want ("live-outage-drop")) {
      Outage o = { 1.0, 8.0, FALSE, FALSE };
      desc = live_pipeline (proxy_port, "latency=8000 lateness=0 server-queue=2000");
      run_pipeline (desc, jfk, outage_step, &o, 90, &r);
      report ("live-outage-drop", &r, ref, 1.0, TRUE);
      CHECK (r.unavailable >= 1 && r.dropped_warnings >= 1, "live-outage-drop: no drop warning");
      run_clear (&r);
      g_free (desc);
    }
    g_free (ref);
  }

  /* A file while the server is down: the element waits for it. */
  if (want ("file-outage")) {
    Outage o = { 0.0, 4.0, FALSE, FALSE };
    gchar *ref = server_text (jfk);
    gchar *srt = g_strdup_printf ("%s/test-remote-file-outage.srt", g_get_tmp_dir ());
    gchar *desc = file_pipeline (jfk, proxy_port, "", srt);
    run_pipeline (desc, NULL, outage_step, &o, 120, &r);
    report ("file-outage", &r, ref, 0.0, TRUE);
    CHECK (r.unavailable >= 1 && r.recovered >= 1, "file-outage: no warning or recovery");
    run_clear (&r);
    g_free (desc);
    g_free (srt);
    g_free (ref);
  }

  /* Answers slower than server-timeout, 500s, malformed JSON, a reset. */
  if (want ("slow")) {
  case_fault ("slow", "slow", 1, 60.0, "server-timeout=20000", TRUE, &r);
  CHECK (r.unavailable == 1 && r.recovered == 1, "slow: %u warnings", r.unavailable);
  run_clear (&r);
  }
  if (want ("http500")) {
  case_fault ("http500", "500", 3, 0, "", TRUE, &r);
  CHECK (r.unavailable == 3 && r.recovered == 1, "http500: %u warnings", r.unavailable);
  run_clear (&r);
  }
  if (want ("garbage")) {
  case_fault ("garbage", "garbage", 2, 0, "", TRUE, &r);
  CHECK (r.unavailable == 2 && r.recovered == 1, "garbage: %u warnings", r.unavailable);
  run_clear (&r);
  }
  if (want ("reset")) {
  case_fault ("reset", "reset", 2, 0, "", TRUE, &r);
  CHECK (r.unavailable == 2 && r.recovered == 1, "reset: %u warnings", r.unavailable);
  run_clear (&r);
  }

  /* A 401 injected, and a real one from the server (no key): an error
   * naming the server's message, no retry. */
  if (want ("http401")) {
  case_fault ("http401", "401", 1, 0, "", FALSE, &r);
  CHECK (r.error && strstr (r.error, "Incorrect API key provided (injected)"),
      "http401: error \"%s\"", r.error);
  CHECK (r.unavailable == 0, "http401: retried");
  run_clear (&r);
  }
  g_unsetenv ("OPENAI_API_KEY");
  if (want ("no-key")) {
  case_fault ("no-key", "pass", 0, 0, "", FALSE, &r);
  CHECK (r.error && strstr (r.error, "401") && strstr (r.error, "Incorrect API key provided"),
      "no-key: error \"%s\"", r.error);
  run_clear (&r);
  }

  /* A bad setting fails the change to READY with a message naming it. */
  if (want ("bad-url")) {
    GstElement *e = gst_element_factory_make ("whispersink", NULL);
    GstStateChangeReturn ret;
    gst_util_set_object_arg (G_OBJECT (e), "device", "remote");
    g_object_set (e, "server-url", "ftp://127.0.0.1/", NULL);
    ret = gst_element_set_state (e, GST_STATE_READY);
    CHECK (ret == GST_STATE_CHANGE_FAILURE, "ftp:// server-url accepted");
    gst_element_set_state (e, GST_STATE_NULL);
    gst_object_unref (e);
  }

  if (only && *only && g_strv_contains ((const gchar *const *) only, "bench"))
    bench ();

  kill_server ();
  g_subprocess_force_exit (proxy);
  g_subprocess_wait (proxy, NULL, NULL);
  g_object_unref (proxy);
  g_object_unref (session);
  g_print ("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
