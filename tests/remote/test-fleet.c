/* test-fleet: whispersink device=remote with file input against a fleet of
 * stand-in servers (tests/remote/fleet-server.py: no model, a fixed service
 * time per request, one request at a time, text that depends on the audio
 * only), all on 127.0.0.1.
 *
 * The audio: jfk.wav again and again with pauses of 2 to 6 s between (a
 * little noise in them), as long as asked, pushed through appsrc as fast
 * as the element takes it.
 *
 * Cases (all by default; or those named with --case):
 *   parallel  the same audio one request at a time on one server, then
 *             --requests at a time on --servers servers: the same text and
 *             timestamps; with --max-ratio R, the parallel run within R of
 *             the ideal time (service time x pieces / servers + one service
 *             time; timed checks only when asked: the suite runs on shared,
 *             noisy machines, fleet-scaling.sh --check asks for 1.3);
 *   kill      the parallel run again, one server killed when a third of
 *             the pieces are answered: the same text, a warning naming the
 *             killed server (and no API key in any message); with
 *             --max-ratio, at most R x (the ideal plus one service time per
 *             request it lost);
 *   tls       an https server with a certificate from a CA the test makes
 *             (openssl): refused without server-ca-file (an error naming
 *             the URL and the reason), the same text with it; an unreadable
 *             server-ca-file fails the change to READY;
 *   key       the API key over plain http: to a host that is not this
 *             machine (192.0.2.1, TEST-NET-1, never contacted: the element
 *             refuses at the change to READY, before any request) refused,
 *             allowed with server-allow-insecure-key (a warning), and to
 *             127.0.0.2 allowed without a word;
 *   scaling   the parallel run on 1, 2, 4, ... --servers servers (requests
 *             = servers), printed as a table (for tests/remote/fleet-scaling.sh).
 *
 * Exit 77 only when jfk.wav is missing. */
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/app/app.h>
#include <libsoup/soup.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>
#include "remote-util.h"

#define API_KEY "fleet-secret-key-0815"
#define RATE 16000

static double opt_minutes = 6.0, opt_service = 0.3, opt_max_ratio = 0, opt_ref_service = -1;
static double opt_slack = 1.0;
static gint opt_servers = 4, opt_requests = 0, opt_min_servers = 1;
static gchar **opt_cases;
static gchar *server_py;
static int failures;

#define CHECK(cond, ...) G_STMT_START { if (!(cond)) { failures++; \
  g_printerr ("FAIL %s:%d: ", __FILE__, __LINE__); g_printerr (__VA_ARGS__); \
  g_printerr ("\n"); } } G_STMT_END

/* ------------------------------------------------------------------------ */
/* The audio */

static gint16 *audio;
static gsize audio_n;

static gboolean
make_audio (const gchar *jfk_path)
{
  gchar *data = NULL;
  gsize len = 0, pos = 12, speech_n = 0, cap;
  const gint16 *speech = NULL;
  guint32 seed = 12345;
  guint k = 0;

  if (!g_file_get_contents (jfk_path, &data, &len, NULL))
    return FALSE;
  while (pos + 8 <= len) {
    guint32 size = GST_READ_UINT32_LE (data + pos + 4);
    if (memcmp (data + pos, "data", 4) == 0) {
      speech = (const gint16 *) (data + pos + 8);
      speech_n = MIN (size, len - pos - 8) / 2;
      break;
    }
    pos += 8 + size + (size & 1);
  }
  g_assert (speech_n > 0);
  cap = (gsize) (opt_minutes * 60 * RATE);
  audio = g_new (gint16, cap);
  audio_n = 0;
  while (audio_n < cap) {
    gsize pause = (gsize) ((2 + (k * 7) % 5) * RATE), i;
    for (i = 0; i < speech_n && audio_n < cap; i++)
      audio[audio_n++] = speech[i];
    for (i = 0; i < pause && audio_n < cap; i++) {
      seed = seed * 1103515245u + 12345u;
      audio[audio_n++] = (gint16) ((gint) ((seed >> 16) & 0x3f) - 32);
    }
    k++;
  }
  g_free (data);
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* The fleet */

typedef struct {
  GSubprocess *proc;
  guint port;
} Server;

static gchar *tls_cert, *tls_key;     /* the next server speaks https */

static gboolean
start_server (Server *srv)
{
  gchar *port, *service;
  const gchar *argv[12];

  srv->port = remote_free_port ();
  port = g_strdup_printf ("%u", srv->port);
  service = g_strdup_printf ("%g", opt_service);
  argv[0] = "python3";
  argv[1] = server_py;
  argv[2] = "--port";
  argv[3] = port;
  argv[4] = "--service";
  argv[5] = service;
  argv[6] = NULL;
  if (tls_cert) {
    argv[6] = "--tls-cert";
    argv[7] = tls_cert;
    argv[8] = "--tls-key";
    argv[9] = tls_key;
    argv[10] = NULL;
  }
  srv->proc = remote_start_helper (argv);
  g_free (port);
  g_free (service);
  return srv->proc != NULL;
}

static void
stop_server (Server *srv)
{
  if (srv->proc == NULL)
    return;
  g_subprocess_force_exit (srv->proc);
  g_subprocess_wait (srv->proc, NULL, NULL);
  g_clear_object (&srv->proc);
}

static Server *
start_fleet (gint n)
{
  Server *f = g_new0 (Server, n);

  for (gint i = 0; i < n; i++)
    g_assert (start_server (&f[i]));
  return f;
}

static void
stop_fleet (Server *f, gint n)
{
  for (gint i = 0; i < n; i++)
    stop_server (&f[i]);
  g_free (f);
}

static gchar *
fleet_urls (Server *f, gint n)
{
  GString *s = g_string_new (NULL);

  for (gint i = 0; i < n; i++)
    g_string_append_printf (s, "%shttp://127.0.0.1:%u/v1", i ? "," : "", f[i].port);
  return g_string_free (s, FALSE);
}

/* ------------------------------------------------------------------------ */
/* A run */

typedef struct {
  GString *items;           /* "pts dur text" lines */
  guint n_items;
  double seconds;
  gchar *error;
  guint warnings;
  GString *warned_urls;
  gboolean key_leaked;
} Run;

typedef struct {
  Server *fleet;
  gint n;
  gint kill;                /* index of the server to kill, -1 none */
  guint kill_after;         /* items out before the kill */
  gboolean killed;
} Plan;

static GstPadProbeReturn
on_item (G_GNUC_UNUSED GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  Run *r = data;
  GstBuffer *b = GST_PAD_PROBE_INFO_BUFFER (info);
  GstMapInfo map;

  if (gst_buffer_get_size (b) == 0 || !gst_buffer_map (b, &map, GST_MAP_READ))
    return GST_PAD_PROBE_OK;
  g_string_append_printf (r->items, "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %.*s\n",
      GST_BUFFER_PTS (b), GST_BUFFER_DURATION (b), (int) map.size, (const gchar *) map.data);
  r->n_items++;
  gst_buffer_unmap (b, &map);
  return GST_PAD_PROBE_OK;
}

static gpointer
feed (gpointer data)
{
  GstAppSrc *src = data;
  const gsize step = RATE;      /* one second a buffer */

  for (gsize pos = 0; pos < audio_n; pos += step) {
    gsize n = MIN (step, audio_n - pos);
    GstBuffer *b = gst_buffer_new_memdup (audio + pos, n * 2);
    GST_BUFFER_PTS (b) = gst_util_uint64_scale (pos, GST_SECOND, RATE);
    GST_BUFFER_DURATION (b) = gst_util_uint64_scale (n, GST_SECOND, RATE);
    if (gst_app_src_push_buffer (src, b) != GST_FLOW_OK)
      break;
  }
  gst_app_src_end_of_stream (src);
  return NULL;
}

static void
check_message (Run *r, GstMessage *m)
{
  GError *err = NULL;
  gchar *dbg = NULL;
  const GstStructure *details = NULL;
  gchar *all;

  switch (GST_MESSAGE_TYPE (m)) {
    case GST_MESSAGE_ERROR:
      gst_message_parse_error (m, &err, &dbg);
      break;
    case GST_MESSAGE_WARNING:
      gst_message_parse_warning (m, &err, &dbg);
      gst_message_parse_warning_details (m, &details);
      break;
    case GST_MESSAGE_INFO:
      gst_message_parse_info (m, &err, &dbg);
      break;
    default:
      return;
  }
  all = g_strdup_printf ("%s %s %s", err->message, dbg ? dbg : "",
      details ? gst_structure_to_string (details) : "");
  if (strstr (all, API_KEY))
    r->key_leaked = TRUE;
  if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR && r->error == NULL)
    r->error = g_strdup (err->message);
  if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_WARNING && details
      && g_strcmp0 (gst_structure_get_string (details, "reason"), "server-unavailable") == 0) {
    r->warnings++;
    g_string_append_printf (r->warned_urls, "%s\n", gst_structure_get_string (details, "url"));
  }
  g_free (all);
  g_clear_error (&err);
  g_free (dbg);
}

static void
run_fleet_with (const gchar *urls, gint requests, const gchar *extra, Plan *plan,
    guint timeout_s, Run *r)
{
  gchar *desc = g_strdup_printf ("appsrc name=src format=time block=true max-bytes=640000 "
      "caps=audio/x-raw,format=S16LE,rate=16000,channels=1,layout=interleaved ! "
      "whispersink name=w device=remote server-api-key=" API_KEY " server-requests=%d "
      "server-timeout=60000 %s ! fakesink sync=false", requests, extra);
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err), *w, *src;
  GstPad *pad;
  GstBus *bus;
  GThread *feeder;
  gint64 t0, deadline;
  gboolean eos = FALSE;

  g_assert_no_error (err);
  memset (r, 0, sizeof *r);
  r->items = g_string_new (NULL);
  r->warned_urls = g_string_new (NULL);
  w = gst_bin_get_by_name (GST_BIN (p), "w");
  g_object_set (w, "server-url", urls, NULL);
  src = gst_bin_get_by_name (GST_BIN (p), "src");
  pad = gst_element_get_static_pad (w, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_item, r, NULL);
  gst_object_unref (pad);
  bus = gst_element_get_bus (p);
  t0 = g_get_monotonic_time ();
  deadline = t0 + timeout_s * G_TIME_SPAN_SECOND;
  gst_element_set_state (p, GST_STATE_PLAYING);
  feeder = g_thread_new ("feed", feed, src);
  while (!eos && r->error == NULL && g_get_monotonic_time () < deadline) {
    GstMessage *m = gst_bus_timed_pop (bus, 20 * GST_MSECOND);
    if (plan && plan->kill >= 0 && !plan->killed && r->n_items >= plan->kill_after) {
      g_print ("  killing the server on port %u\n", plan->fleet[plan->kill].port);
      stop_server (&plan->fleet[plan->kill]);
      plan->killed = TRUE;
    }
    if (m == NULL)
      continue;
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS)
      eos = TRUE;
    check_message (r, m);
    gst_message_unref (m);
  }
  r->seconds = (g_get_monotonic_time () - t0) / 1e6;
  if (!eos && r->error == NULL)
    r->error = g_strdup ("time-out: no EOS");
  gst_element_set_state (p, GST_STATE_NULL);
  g_thread_join (feeder);
  gst_object_unref (bus);
  gst_object_unref (src);
  gst_object_unref (w);
  gst_object_unref (p);
  g_free (desc);
}

static void
run_fleet (const gchar *urls, gint requests, Plan *plan, guint timeout_s, Run *r)
{
  run_fleet_with (urls, requests, "", plan, timeout_s, r);
}

static void
run_clear (Run *r)
{
  g_string_free (r->items, TRUE);
  g_string_free (r->warned_urls, TRUE);
  g_free (r->error);
}

/* Requests the fleet answered, from each server's /stats. */
static guint
fleet_requests (Server *f, gint n)
{
  SoupSession *s = soup_session_new ();
  guint total = 0;

  for (gint i = 0; i < n; i++) {
    gchar *url;
    SoupMessage *msg;
    GBytes *body;
    JsonParser *jp;
    if (f[i].proc == NULL)
      continue;
    url = g_strdup_printf ("http://127.0.0.1:%u/stats", f[i].port);
    msg = soup_message_new ("GET", url);
    body = soup_session_send_and_read (s, msg, NULL, NULL);
    jp = json_parser_new ();
    if (body && json_parser_load_from_data (jp, g_bytes_get_data (body, NULL),
            (gssize) g_bytes_get_size (body), NULL))
      total += (guint) json_object_get_int_member (json_node_get_object
          (json_parser_get_root (jp)), "requests");
    g_object_unref (jp);
    g_clear_pointer (&body, g_bytes_unref);
    g_object_unref (msg);
    g_free (url);
  }
  g_object_unref (s);
  return total;
}

/* ------------------------------------------------------------------------ */
/* TLS and the key */

static gboolean
run_tool (const gchar *const *argv)
{
  gint status = 0;
  GError *err = NULL;

  if (!g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH
          | G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, NULL, NULL,
          &status, &err) || !g_spawn_check_wait_status (status, NULL)) {
    g_printerr ("%s failed: %s\n", argv[0], err ? err->message : "exit status");
    g_clear_error (&err);
    return FALSE;
  }
  return TRUE;
}

/* A CA and a certificate for 127.0.0.1 signed by it, in `dir`. */
static gboolean
make_ca (const gchar *dir)
{
  g_autofree gchar *ca_key = g_build_filename (dir, "ca.key", NULL);
  g_autofree gchar *ca_pem = g_build_filename (dir, "ca.pem", NULL);
  g_autofree gchar *csr = g_build_filename (dir, "server.csr", NULL);
  g_autofree gchar *ext = g_build_filename (dir, "server.ext", NULL);
  g_autofree gchar *serial = g_build_filename (dir, "ca.srl", NULL);
  const gchar *ca[] = { "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
    "-keyout", ca_key, "-out", ca_pem, "-subj", "/CN=gst-whisper test CA", "-days", "2",
    NULL
  };
  const gchar *req[] = { "openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout",
    tls_key, "-out", csr, "-subj", "/CN=127.0.0.1", NULL
  };
  const gchar *sign[] = { "openssl", "x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey",
    ca_key, "-CAserial", serial, "-CAcreateserial", "-out", tls_cert, "-days", "2",
    "-extfile", ext, NULL
  };

  if (!g_file_set_contents (ext, "subjectAltName=IP:127.0.0.1,DNS:localhost\n", -1, NULL))
    return FALSE;
  return run_tool (ca) && run_tool (req) && run_tool (sign);
}

static void
case_tls (const gchar *ref_items)
{
  g_autofree gchar *dir = g_dir_make_tmp ("test-fleet-tls-XXXXXX", NULL);
  g_autofree gchar *ca_pem = NULL, *urls = NULL, *with_ca = NULL;
  Server srv = { 0, };
  Run r;

  g_assert (dir);
  tls_cert = g_build_filename (dir, "server.pem", NULL);
  tls_key = g_build_filename (dir, "server.key", NULL);
  ca_pem = g_build_filename (dir, "ca.pem", NULL);
  if (!make_ca (dir)) {
    CHECK (FALSE, "tls: openssl could not make the test CA");
    goto out;
  }
  CHECK (start_server (&srv), "tls: the https server did not start");
  urls = g_strdup_printf ("https://127.0.0.1:%u/v1", srv.port);

  /* not trusted: an error naming the URL and why */
  run_fleet_with (urls, 2, "", NULL, 120, &r);
  g_print ("tls without server-ca-file: %s\n", r.error ? r.error : "(no error)");
  CHECK (r.error && strstr (r.error, urls) && strstr (r.error, "TLS certificate")
      && strstr (r.error, "unknown CA") && strstr (r.error, "server-ca-file"),
      "tls: no clear error without server-ca-file");
  CHECK (r.n_items == 0 && !r.key_leaked, "tls: text or the key without server-ca-file");
  run_clear (&r);

  /* trusted through server-ca-file: the text of a plain http run */
  with_ca = g_strdup_printf ("server-ca-file=\"%s\"", ca_pem);
  run_fleet_with (urls, 2, with_ca, NULL, 300, &r);
  g_print ("tls with server-ca-file: %u items, error %s\n", r.n_items,
      r.error ? r.error : "none");
  CHECK (r.error == NULL, "tls: %s", r.error);
  CHECK (ref_items == NULL || strcmp (r.items->str, ref_items) == 0,
      "tls: the text differs from the plain http run's");
  run_clear (&r);

  /* a file that is not a CA file: READY fails, naming the property */
  {
    GstElement *e = gst_element_factory_make ("whispersink", NULL);
    gst_util_set_object_arg (G_OBJECT (e), "device", "remote");
    g_object_set (e, "server-url", urls, "server-ca-file", "/nonexistent/ca.pem", NULL);
    CHECK (gst_element_set_state (e, GST_STATE_READY) == GST_STATE_CHANGE_FAILURE,
        "tls: a missing server-ca-file accepted");
    gst_element_set_state (e, GST_STATE_NULL);
    gst_object_unref (e);
  }
  stop_server (&srv);
out:
  g_clear_pointer (&tls_cert, g_free);
  g_clear_pointer (&tls_key, g_free);
  {
    const gchar *rm[] = { "rm", "-rf", dir, NULL };
    run_tool (rm);
  }
}

/* The change to READY with `url`, the key set: its result, and the
 * messages' text (error or warning) in *text. */
static GstStateChangeReturn
ready_with (const gchar *url, gboolean allow, gchar **text)
{
  GstElement *e = gst_element_factory_make ("whispersink", NULL);
  GstBus *bus = gst_bus_new ();
  GstStateChangeReturn ret;
  GString *all = g_string_new (NULL);
  GstMessage *m;

  gst_element_set_bus (e, bus);
  gst_util_set_object_arg (G_OBJECT (e), "device", "remote");
  g_object_set (e, "server-url", url, "server-api-key", API_KEY,
      "server-allow-insecure-key", allow, NULL);
  ret = gst_element_set_state (e, GST_STATE_READY);
  gst_element_set_state (e, GST_STATE_NULL);
  while ((m = gst_bus_pop (bus))) {
    GError *err = NULL;
    gchar *dbg = NULL;
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR)
      gst_message_parse_error (m, &err, &dbg);
    else if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_WARNING)
      gst_message_parse_warning (m, &err, &dbg);
    if (err)
      g_string_append_printf (all, "%s: %s (%s)\n", gst_message_type_get_name
          (GST_MESSAGE_TYPE (m)), err->message, dbg ? dbg : "");
    g_clear_error (&err);
    g_free (dbg);
    gst_message_unref (m);
  }
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  gst_object_unref (e);
  *text = g_string_free (all, FALSE);
  return ret;
}

static void
case_key (void)
{
  gchar *text = NULL;
  /* TEST-NET-1 (RFC 5737): refused before any request, never contacted */
  const gchar *far = "http://192.0.2.1:8000/v1";

  CHECK (ready_with (far, FALSE, &text) == GST_STATE_CHANGE_FAILURE,
      "key: plain http to a host that is not this machine accepted");
  g_print ("key, plain http to 192.0.2.1:\n%s", text);
  CHECK (strstr (text, "server-allow-insecure-key") && strstr (text, "192.0.2.1")
      && !strstr (text, API_KEY), "key: the error does not name the rule or shows the key");
  g_free (text);
  CHECK (ready_with (far, TRUE, &text) == GST_STATE_CHANGE_SUCCESS,
      "key: server-allow-insecure-key=true refused");
  CHECK (strstr (text, "warning") && strstr (text, "plain http") && !strstr (text, API_KEY),
      "key: no warning with server-allow-insecure-key=true");
  g_free (text);
  CHECK (ready_with ("http://127.0.0.2:8000", FALSE, &text) == GST_STATE_CHANGE_SUCCESS
      && *text == '\0', "key: plain http to 127.0.0.2 refused or warned: %s", text);
  g_free (text);
  CHECK (ready_with ("https://192.0.2.1:8000", FALSE, &text) == GST_STATE_CHANGE_SUCCESS
      && *text == '\0', "key: https refused or warned: %s", text);
  g_free (text);
}

static gboolean
want (const gchar *name)
{
  if (opt_cases == NULL || *opt_cases == NULL)
    return g_strcmp0 (name, "scaling") != 0;
  return g_strv_contains ((const gchar *const *) opt_cases, name);
}

int
main (int argc, char **argv)
{
  const gchar *srcdir = g_getenv ("WHISPER_SOURCE_ROOT");
  const gchar *shared = g_getenv ("WHISPER_SHARED_DATA");
  gchar *jfk;
  GOptionEntry entries[] = {
    {"minutes", 0, 0, G_OPTION_ARG_DOUBLE, &opt_minutes, "minutes of audio", "M"},
    {"servers", 0, 0, G_OPTION_ARG_INT, &opt_servers, "servers in the fleet", "K"},
    {"min-servers", 0, 0, G_OPTION_ARG_INT, &opt_min_servers, "scaling: the first fleet size",
        "K"},
    {"requests", 0, 0, G_OPTION_ARG_INT, &opt_requests, "server-requests (default: K)", "N"},
    {"service", 0, 0, G_OPTION_ARG_DOUBLE, &opt_service, "service time per request, s", "S"},
    {"ref-service", 0, 0, G_OPTION_ARG_DOUBLE, &opt_ref_service,
        "service time of the one-at-a-time reference run (default: --service; the text "
        "does not depend on it)", "S"},
    {"slack", 0, 0, G_OPTION_ARG_DOUBLE, &opt_slack, "seconds allowed on top of max-ratio x "
          "ideal (the element's start and the cutting, which a short run does not "
          "amortise; 0 for long runs)", "S"},
    {"max-ratio", 0, 0, G_OPTION_ARG_DOUBLE, &opt_max_ratio, "measured / ideal allowed (default: not checked)", "R"},
    {"case", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_cases, "parallel, kill, tls, key, "
          "scaling", "C"},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("- whispersink device=remote fleet test");
  GError *err = NULL;
  Run ref = { 0, }, par;
  guint pieces = 0;
  double par_seconds = 0.0;

  gst_init (&argc, &argv);
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
    g_printerr ("%s\n", err->message);
    return 2;
  }
  g_option_context_free (ctx);
  if (opt_requests <= 0)
    opt_requests = opt_servers;
  g_setenv ("no_proxy", "127.0.0.1", TRUE);
  server_py = g_build_filename (srcdir ? srcdir : ".", "tests", "remote", "fleet-server.py",
      NULL);
  jfk = g_build_filename (shared ? shared : "/work/shared/data", "jfk.wav", NULL);
  if (!make_audio (jfk)) {
    g_print ("SKIP: no %s\n", jfk);
    return 77;
  }
  g_print ("audio %.1f min, service %.3f s per request\n", audio_n / (double) RATE / 60,
      opt_service);

  if (want ("parallel") || want ("kill") || want ("tls")) {
    /* the reference: one request at a time on one server */
    double service = opt_service;
    Server *one;
    gchar *urls;
    if (opt_ref_service >= 0)
      opt_service = opt_ref_service;
    one = start_fleet (1);
    opt_service = service;
    urls = fleet_urls (one, 1);
    run_fleet (urls, 1, NULL, 3600, &ref);
    pieces = fleet_requests (one, 1);
    g_print ("one at a time: %u pieces, %u items, %.2f s (ideal %.2f s)\n", pieces,
        ref.n_items, ref.seconds, pieces * (opt_ref_service >= 0 ? opt_ref_service
            : opt_service));
    CHECK (ref.error == NULL, "reference run: %s", ref.error);
    CHECK (ref.n_items > 0 && pieces > 0, "reference run: no text");
    stop_fleet (one, 1);
    g_free (urls);
  }

  if (want ("parallel") || want ("kill")) {
    Server *f = start_fleet (opt_servers);
    gchar *urls = fleet_urls (f, opt_servers);
    double ideal = pieces * opt_service / opt_servers + opt_service;
    run_fleet (urls, opt_requests, NULL, 3600, &par);
    g_print ("parallel: %d servers, %d requests: %u pieces, %.2f s, ideal %.2f s, "
        "ratio %.3f\n", opt_servers, opt_requests, fleet_requests (f, opt_servers),
        par.seconds, ideal, par.seconds / ideal);
    CHECK (par.error == NULL, "parallel: %s", par.error);
    CHECK (strcmp (par.items->str, ref.items->str) == 0,
        "parallel: the text or timestamps differ from the one-at-a-time run's");
    CHECK (opt_max_ratio <= 0 || par.seconds <= opt_max_ratio * ideal + opt_slack,
        "parallel: %.2f s > %.2f x %.2f s + %.2f s", par.seconds, opt_max_ratio, ideal,
        opt_slack);
    CHECK (par.warnings == 0 && !par.key_leaked, "parallel: warnings or key in a message");
    par_seconds = par.seconds;
    run_clear (&par);
    stop_fleet (f, opt_servers);
    g_free (urls);
  }

  if (want ("kill") && opt_servers >= 2) {
    Server *f = start_fleet (opt_servers);
    gchar *urls = fleet_urls (f, opt_servers);
    Plan plan = { f, opt_servers, opt_servers - 1, ref.n_items / 3, FALSE };
    gchar *killed_url = g_strdup_printf ("http://127.0.0.1:%u/v1/audio/transcriptions",
        f[opt_servers - 1].port);
    double ideal = pieces * opt_service / opt_servers + opt_service;
    /* what the fleet cannot avoid: the lost request once more, and the
     * pieces after the kill on one server less */
    double loss = opt_service + (pieces * 2 / 3) * opt_service
        * (1.0 / (opt_servers - 1) - 1.0 / opt_servers);
    run_fleet (urls, opt_requests, &plan, 3600, &par);
    g_print ("kill: %.2f s, the same without a fault %.2f s: extra %.2f s = %.2f service "
        "times (one lost request plus the capacity of one server for the rest: %.2f s); "
        "%u warnings: %s", par.seconds, par_seconds, par.seconds - par_seconds,
        (par.seconds - par_seconds) / opt_service, loss, par.warnings, par.warned_urls->str);
    CHECK (par.error == NULL, "kill: %s", par.error);
    CHECK (plan.killed, "kill: the run ended before the kill");
    CHECK (strcmp (par.items->str, ref.items->str) == 0,
        "kill: the text or timestamps differ from the one-at-a-time run's");
    CHECK (par.warnings >= 1 && strstr (par.warned_urls->str, killed_url),
        "kill: no warning naming %s", killed_url);
    CHECK (!par.key_leaked, "kill: the API key in a message");
    /* the killed server had one request in flight (server-requests = servers) */
    CHECK (opt_max_ratio <= 0 || par.seconds <= opt_max_ratio * (ideal + loss) + opt_slack,
        "kill: %.2f s > %.2f x (%.2f s + %.2f s) + %.2f s", par.seconds, opt_max_ratio, ideal,
        loss, opt_slack);
    run_clear (&par);
    stop_fleet (f, opt_servers);
    g_free (urls);
    g_free (killed_url);
  }

  if (want ("tls"))
    case_tls (ref.items ? ref.items->str : NULL);
  if (want ("key"))
    case_key ();

  if (want ("scaling")) {
    g_print ("servers  requests  pieces  seconds  ideal  ratio\n");
    for (gint k = MAX (opt_min_servers, 1); k <= opt_servers; k *= 2) {
      Server *f = start_fleet (k);
      gchar *urls = fleet_urls (f, k);
      guint n;
      double ideal;
      run_fleet (urls, k, NULL, 7200, &par);
      n = fleet_requests (f, k);
      ideal = n * opt_service / k + opt_service;
      g_print ("%7d  %8d  %6u  %7.2f  %5.2f  %5.3f%s\n", k, k, n, par.seconds, ideal,
          par.seconds / ideal, par.error ? "  (error)" : "");
      CHECK (par.error == NULL, "scaling %d: %s", k, par.error);
      run_clear (&par);
      stop_fleet (f, k);
      g_free (urls);
    }
  }

  if (ref.items)
    run_clear (&ref);
  g_free (jfk);
  g_free (server_py);
  g_print ("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
