/* test-remote-stream: whispersink device=remote, live, with server-stream
 * against tests/remote/whisper-server.py's event stream (vLLM's
 * transcription stream format: a text delta per word, WORD_TIME apart,
 * then [DONE]; its other answers take as long). jfk.wav goes through an
 * appsrc paced in real time.
 *
 * Cases:
 *  - stream: server-stream=true. The deltas arrive as interim whisper-text
 *    messages while the answer is read, and words that two answers agree
 *    on are committed before the answer ends: a final whisper-text message
 *    comes between two interim messages of one answer (the later one the
 *    earlier one's text and more); every committed text was in an interim
 *    message before; stats remote-deltas counts the deltas; the committed
 *    text is the server's own answer to the whole file (WER as
 *    test-remote's live case).
 *  - ignored: server-stream=true against a server that ignores stream=true
 *    (answers JSON): no interim message, no delta, no warning.
 *  - plain: server-stream=false: no interim message, no delta.
 * The three give the same committed text, word for word: calls cut the
 * audio a chunk after the call before (io/gstwhisperwindow.c), not where
 * the audio ended when an answer came back, and live answers are committed by
 * agreement whether streamed or not, so streaming changes when words come
 * out, not which. (Before, the cuts followed the answers' timing and two
 * runs could differ where a cut fell in a word: "what you are coming
 * country" against "what your country".) Each text is also compared with
 * the server's answer to the whole file (test-remote's live tolerance,
 * SAME_MAX_WER).
 *  - malformed: the first streamed answer has an event that is not JSON: a
 *    server-unavailable warning naming the server's URL and the bad event;
 *    the audio is sent again and nothing is lost (WER, every second
 *    transcribed).
 *
 * Exit 77 only when the server cannot run (no faster-whisper, no model). */
#include <gst/gst.h>
#include <gst/app/app.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "remote-util.h"

/* The server's own answer to the whole of jfk.wav (tiny.en, greedy). */
#define JFK_TEXT "And so my fellow Americans, ask not what your country can do for you, " \
  "ask what you can do for your country."

/* The test server's pace: a word every this many seconds (--word-time). */
#define WORD_TIME "0.05"

/* A live run's committed text against the server's answer to the whole
 * file: at most this far apart (test-remote's live case). */
#define SAME_MAX_WER 0.25

static int failures;

#define CHECK(cond, ...) G_STMT_START { if (!(cond)) { failures++; \
  g_printerr ("FAIL %s:%d: ", __FILE__, __LINE__); g_printerr (__VA_ARGS__); \
  g_printerr ("\n"); } } G_STMT_END

typedef struct {
  gchar *text;
  gboolean final;           /* a committed item's message; else an interim one */
  gint64 at;                /* monotonic time it was posted, us */
} Seen;

typedef struct {
  GMutex lock;
  GArray *committed;        /* Seen: text buffers at the src pad */
  GArray *texts;            /* Seen: whisper-text messages in the order posted */
  guint n_interim;
  GString *warnings;        /* server-unavailable warnings, one a line */
  guint other_warnings;
  guint64 deltas, received, transcribed;
  gint64 t0;                /* monotonic time of the first sample, us */
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
  r->texts = g_array_new (FALSE, FALSE, sizeof (Seen));
  g_array_set_clear_func (r->committed, seen_clear);
  g_array_set_clear_func (r->texts, seen_clear);
  r->warnings = g_string_new (NULL);
}

static void
run_clear (Run *r)
{
  g_array_unref (r->committed);
  g_array_unref (r->texts);
  g_string_free (r->warnings, TRUE);
  g_free (r->error);
  g_mutex_clear (&r->lock);
}

static void
add_seen (Run *r, GArray *to, const gchar *text, gboolean final)
{
  Seen s = { g_strdup (text), final, g_get_monotonic_time () };

  g_mutex_lock (&r->lock);
  g_array_append_val (to, s);
  r->n_interim += to == r->texts && !final;
  g_mutex_unlock (&r->lock);
}

static GstPadProbeReturn
probe (G_GNUC_UNUSED GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  GstMapInfo map;
  GstBuffer *b = GST_PAD_PROBE_INFO_BUFFER (info);

  if (gst_buffer_map (b, &map, GST_MAP_READ)) {
    gchar *text = g_strndup ((const gchar *) map.data, map.size);
    add_seen (data, ((Run *) data)->committed, text, TRUE);
    g_free (text);
    gst_buffer_unmap (b, &map);
  }
  return GST_PAD_PROBE_OK;
}

/* On the posting thread: whisper-text messages in the order posted. */
static GstBusSyncReply
on_sync (G_GNUC_UNUSED GstBus *bus, GstMessage *m, gpointer data)
{
  const GstStructure *s = gst_message_get_structure (m);

  if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ELEMENT && gst_structure_has_name (s, "whisper-text"))
    add_seen (data, ((Run *) data)->texts, gst_structure_get_string (s, "text"),
        g_strcmp0 (gst_structure_get_string (s, "granularity"), "interim") != 0);
  return GST_BUS_PASS;
}

static void
handle_message (Run *r, GstMessage *m)
{
  const gchar *reason = remote_take_message (m, &r->error, &r->eos);

  if (GST_MESSAGE_TYPE (m) != GST_MESSAGE_WARNING)
    return;
  if (g_strcmp0 (reason, "server-unavailable") == 0) {
    GError *e = NULL;
    gst_message_parse_warning (m, &e, NULL);
    g_string_append_printf (r->warnings, "%s\n", e->message);
    g_error_free (e);
  } else {
    r->other_warnings++;
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

/* The samples of the files one after the other. */
static GByteArray *
samples_of (const gchar *const *paths)
{
  GByteArray *all = g_byte_array_new ();

  for (guint i = 0; paths[i]; i++) {
    gsize off, size;
    gchar *wav = remote_wav_samples (paths[i], &off, &size);
    g_byte_array_append (all, (const guint8 *) wav + off, (guint) size);
    g_free (wav);
  }
  return all;
}

/* Pushes the files' samples in 100-ms buffers at real-time pace. */
static void
feed_live (GstAppSrc *src, const gchar *const *paths, Run *r, GstBus *bus)
{
  GByteArray *pcm = samples_of (paths);
  gsize off = 0, n = 1600 * 2;
  GstClockTime pts = 0;

  r->t0 = g_get_monotonic_time ();
  while (off < pcm->len && r->error == NULL) {
    gsize take = MIN (n, pcm->len - off);
    GstBuffer *b = gst_buffer_new_memdup (pcm->data + off, take);
    gint64 due;
    GST_BUFFER_PTS (b) = pts;
    GST_BUFFER_DURATION (b) = gst_util_uint64_scale (take / 2, GST_SECOND, 16000);
    pts += GST_BUFFER_DURATION (b);
    off += take;
    gst_app_src_push_buffer (src, b);
    pop_messages (r, bus, 0);
    due = r->t0 + (gint64) (pts / 1000);
    if (due > g_get_monotonic_time ())
      g_usleep (due - g_get_monotonic_time ());
  }
  gst_app_src_end_of_stream (src);
  g_byte_array_unref (pcm);
}

static void
run_live (guint port, const gchar *extra, const gchar *const *paths, Run *r)
{
  gchar *desc = g_strdup_printf ("appsrc name=src is-live=true format=time "
      "caps=audio/x-raw,format=S16LE,rate=16000,channels=1,layout=interleaved ! "
      "whispersink name=w device=remote server-url=http://127.0.0.1:%u/v1 "
      "lateness=60000 %s ! fakesink", port, extra);
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
  feed_live (GST_APP_SRC (src), paths, r, bus);
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

/* The committed words, one space apart (how they were grouped into
 * buffers differs with and without streaming). */
static gchar *
committed_text (Run *r)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < r->committed->len; i++) {
    gchar **words = g_strsplit_set (g_array_index (r->committed, Seen, i).text, " \t\n", -1);
    for (guint j = 0; words[j]; j++)
      if (*words[j])
        g_string_append_printf (s, " %s", words[j]);
    g_strfreev (words);
  }
  return g_string_free (s, FALSE);
}

/* Whether every committed text was in an interim message before it; *early:
 * how many were committed between two interim messages of one answer (the
 * later one the earlier one's text and more). */
static gboolean
came_early (Run *r, guint *early)
{
  const Seen *before = NULL;

  *early = 0;
  for (guint i = 0; i < r->texts->len; i++) {
    const Seen *t = &g_array_index (r->texts, Seen, i);
    gboolean seen = FALSE;
    if (!t->final) {
      before = t;
      continue;
    }
    for (guint j = 0; j < i && !seen; j++)
      seen = !g_array_index (r->texts, Seen, j).final
          && strstr (g_array_index (r->texts, Seen, j).text, t->text);
    if (!seen)
      return FALSE;
    for (guint j = i + 1; j < r->texts->len && before; j++) {
      const Seen *after = &g_array_index (r->texts, Seen, j);
      if (after->final)
        continue;
      *early += strlen (after->text) > strlen (before->text)
          && g_str_has_prefix (after->text, before->text);
      break;
    }
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
      "  text:%s\n", name, 100 * e, r->committed->len, r->n_interim, r->deltas, got);
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
    "--threads", "2", "--word-time", WORD_TIME, flag, NULL };
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

/* ------------------------------------------------------------------------ */
/* bench: the delay of committed words with and without streaming */

#define LIBRIVOX_DIR "/usr/share/pocketsphinx/test/data/librivox/"

typedef struct {
  gchar *word;              /* normalised */
  double end;               /* s, in the stream (the files one after the other) */
} TimedWord;

static gchar *
normalise (const gchar *w)
{
  GString *s = g_string_new (NULL);

  for (const gchar *p = w; *p; p++)
    if (g_ascii_isalnum (*p) || *p == '\'')
      g_string_append_c (s, g_ascii_tolower (*p));
  return g_string_free (s, FALSE);
}

static void
timed_word_clear (gpointer p)
{
  g_free (((TimedWord *) p)->word);
}

/* The server's words of each file, timed in the stream. */
static GArray *
reference_words (guint port, const gchar *const *paths)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (TimedWord));
  SoupSession *session = soup_session_new ();
  gchar *url = g_strdup_printf ("http://127.0.0.1:%u/v1/audio/transcriptions", port);
  double offset = 0.0;

  g_array_set_clear_func (out, timed_word_clear);
  for (guint i = 0; paths[i]; i++) {
    gchar *data;
    gsize len, off, size;
    SoupMultipart *mp = soup_multipart_new (SOUP_FORM_MIME_TYPE_MULTIPART);
    GBytes *wav, *body;
    SoupMessage *msg;
    JsonParser *parser = json_parser_new ();
    JsonArray *words;

    g_assert (g_file_get_contents (paths[i], &data, &len, NULL));
    wav = g_bytes_new_take (data, len);
    soup_multipart_append_form_file (mp, "file", "audio.wav", "audio/wav", wav);
    soup_multipart_append_form_string (mp, "temperature", "0");
    soup_multipart_append_form_string (mp, "response_format", "verbose_json");
    soup_multipart_append_form_string (mp, "timestamp_granularities[]", "word");
    msg = soup_message_new_from_multipart (url, mp);
    body = soup_session_send_and_read (session, msg, NULL, NULL);
    g_assert (body && soup_message_get_status (msg) == 200);
    g_assert (json_parser_load_from_data (parser, g_bytes_get_data (body, NULL),
            (gssize) g_bytes_get_size (body), NULL));
    words = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)),
        "words");
    for (guint j = 0; j < json_array_get_length (words); j++) {
      JsonObject *o = json_array_get_object_element (words, j);
      TimedWord t = { normalise (json_object_get_string_member (o, "word")),
        offset + json_object_get_double_member (o, "end") };
      g_array_append_val (out, t);
    }
    g_free (remote_wav_samples (paths[i], &off, &size));
    offset += size / 2 / 16000.0;
    g_object_unref (parser);
    g_bytes_unref (body);
    g_bytes_unref (wav);
    g_object_unref (msg);
    soup_multipart_free (mp);
  }
  g_free (url);
  g_object_unref (session);
  return out;
}

/* Committed words, each timed by when its item's message was posted (s
 * after the first sample was pushed). */
static GArray *
committed_words (Run *r)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (TimedWord));

  g_array_set_clear_func (out, timed_word_clear);
  for (guint i = 0; i < r->texts->len; i++) {
    const Seen *t = &g_array_index (r->texts, Seen, i);
    gchar **parts = t->final ? g_strsplit_set (t->text, " \t\n", -1) : NULL;
    for (guint j = 0; parts && parts[j]; j++) {
      TimedWord w = { normalise (parts[j]), (t->at - r->t0) / 1e6 };
      if (*w.word)
        g_array_append_val (out, w);
      else
        g_free (w.word);
    }
    g_strfreev (parts);
  }
  return out;
}

static int
cmp_double (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* Delays of the committed words that match the reference's in order
 * (longest common subsequence): commit time - the word's end. */
static GArray *
word_delays (GArray *hyp, GArray *ref)
{
  guint n = hyp->len, m = ref->len, i, j;
  guint *d = g_new0 (guint, (n + 1) * (m + 1));
  GArray *out = g_array_new (FALSE, FALSE, sizeof (double));

#define D(a, b) d[(a) * (m + 1) + (b)]
  for (i = n; i-- > 0;)
    for (j = m; j-- > 0;)
      D (i, j) = strcmp (g_array_index (hyp, TimedWord, i).word,
          g_array_index (ref, TimedWord, j).word) == 0 ? D (i + 1, j + 1) + 1
          : MAX (D (i + 1, j), D (i, j + 1));
  for (i = 0, j = 0; i < n && j < m;) {
    TimedWord *h = &g_array_index (hyp, TimedWord, i), *t = &g_array_index (ref, TimedWord, j);
    if (strcmp (h->word, t->word) == 0) {
      double delay = h->end - t->end;
      g_array_append_val (out, delay);
      i++, j++;
    } else if (D (i + 1, j) >= D (i, j + 1)) {
      i++;
    } else {
      j++;
    }
  }
#undef D
  g_free (d);
  g_array_sort (out, cmp_double);
  return out;
}

/* Returns the run's committed text. */
static gchar *
bench_run (const gchar *name, guint port, const gchar *extra, const gchar *const *paths,
    GArray *ref)
{
  gchar *text;
  Run r;
  GArray *hyp, *delays;
  guint n;

  run_live (port, extra, paths, &r);
  hyp = committed_words (&r);
  delays = word_delays (hyp, ref);
  n = delays->len;
  if (n > 0)
    g_print ("BENCH %s (%s): %u of %u words matched, delay p50 %.2f s, p95 %.2f s, max "
        "%.2f s, %" G_GUINT64_FORMAT " deltas%s\n", name, extra, n, ref->len,
        g_array_index (delays, double, (n - 1) / 2),
        g_array_index (delays, double, (guint) ceil (0.95 * n) - 1),
        g_array_index (delays, double, n - 1), r.deltas, r.error ? r.error : "");
  else
    g_print ("BENCH %s: no word matched (%s)\n", name, r.error ? r.error : "");
  g_array_unref (delays);
  g_array_unref (hyp);
  text = committed_text (&r);
  run_clear (&r);
  return text;
}

/* Live, the files back to back in real time: server-stream off, on, and
 * on against a server that answers JSON; whether the three committed the
 * same text. */
static int
bench (const gchar *server_py, const gchar *model, guint port, const gchar *const *paths,
    const gchar *latency)
{
  GSubprocess *server = start_server (server_py, model, port, NULL);
  gchar *plain = g_strdup_printf ("latency=%s", latency);
  gchar *stream = g_strdup_printf ("latency=%s server-stream=true", latency);
  GArray *ref = reference_words (port, paths);

  gchar *texts[3];

  texts[0] = bench_run ("not streamed", port, plain, paths, ref);
  texts[1] = bench_run ("streamed", port, stream, paths, ref);
  stop_server (server);
  server = start_server (server_py, model, port, "--ignore-stream");
  texts[2] = bench_run ("stream ignored", port, stream, paths, ref);
  stop_server (server);
  g_print ("BENCH committed texts: streamed %s not streamed, stream ignored %s\n",
      strcmp (texts[0], texts[1]) == 0 ? "==" : "!=",
      strcmp (texts[1], texts[2]) == 0 ? "== streamed" : "!= streamed");
  for (guint i = 0; i < 3; i++)
    g_free (texts[i]);
  g_array_unref (ref);
  g_free (plain);
  g_free (stream);
  return 0;
}

/* external PORT: live jfk.wav against a server already running on
 * 127.0.0.1:PORT (tests/remote/packaged-server.sh), without and with
 * server-stream: EOS, the text within the live tolerance, what came. */
static int
external (guint port, const gchar *const *paths)
{
  const gchar *modes[] = { "latency=8000", "latency=8000 server-stream=true" };

  for (guint i = 0; i < G_N_ELEMENTS (modes); i++) {
    Run r;
    guint n = 0;
    run_live (port, modes[i], paths, &r);
    check_run (modes[i], &r, JFK_TEXT, SAME_MAX_WER);
    for (const gchar *c = r.warnings->str; *c; c++)
      n += *c == '\n';
    g_print ("%s: %u server-unavailable warnings\n", modes[i], n);
    run_clear (&r);
  }
  g_print ("%s\n", failures ? "FAILED" : "PASS");
  return failures ? 1 : 0;
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
  const gchar *jfk_only[] = { jfk, NULL };
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
  if (argc > 2 && strcmp (argv[1], "external") == 0)
    return external ((guint) atoi (argv[2]), jfk_only);
  if (argc > 1 && strcmp (argv[1], "bench") == 0) {
    const gchar *clips[] = { jfk, LIBRIVOX_DIR "sense_and_sensibility_01_austen_64kb-0870.wav",
      LIBRIVOX_DIR "sense_and_sensibility_01_austen_64kb-0880.wav",
      LIBRIVOX_DIR "sense_and_sensibility_01_austen_64kb-0890.wav",
      LIBRIVOX_DIR "sense_and_sensibility_01_austen_64kb-0920.wav",
      LIBRIVOX_DIR "sense_and_sensibility_01_austen_64kb-0930.wav", NULL };
    for (guint i = 1; i + 1 < G_N_ELEMENTS (clips); i++)
      if (!g_file_test (clips[i], G_FILE_TEST_EXISTS))
        clips[i] = NULL;    /* no pocketsphinx-testdata: jfk.wav alone */
    return bench (server_py, model, port, clips, argc > 2 ? argv[2] : "8000");
  }

  server = start_server (server_py, model, port, NULL);
  g_assert (server);
  run_live (port, "latency=8000", jfk_only, &r);
  check_run ("plain", &r, JFK_TEXT, SAME_MAX_WER);
  ref = committed_text (&r);
  CHECK (r.n_interim == 0 && r.deltas == 0, "plain: interim text without server-stream");
  run_clear (&r);

  run_live (port, "latency=8000 server-stream=true", jfk_only, &r);
  check_run ("stream", &r, JFK_TEXT, SAME_MAX_WER);
  {
    gchar *got = committed_text (&r);
    CHECK (strcmp (got, ref) == 0, "stream: \"%s\" against plain's \"%s\"", got, ref);
    g_free (got);
  }
  CHECK (r.deltas > r.committed->len && r.n_interim == r.deltas, "stream: %" G_GUINT64_FORMAT
      " deltas, %u interim messages, %u committed", r.deltas, r.n_interim, r.committed->len);
  CHECK (came_early (&r, &early), "stream: a committed text that no interim message had "
      "before it");
  CHECK (early > 0, "stream: nothing committed before the end of its answer");
  g_print ("stream: %u of %u committed before the end of their answer\n", early,
      r.committed->len);
  CHECK (r.warnings->len == 0, "stream: %s", r.warnings->str);
  streamed = committed_text (&r);
  run_clear (&r);
  stop_server (server);

  server = start_server (server_py, model, port, "--ignore-stream");
  g_assert (server);
  run_live (port, "latency=8000 server-stream=true", jfk_only, &r);
  check_run ("ignored", &r, JFK_TEXT, SAME_MAX_WER);
  {
    gchar *got = committed_text (&r);
    CHECK (strcmp (got, streamed) == 0, "ignored: \"%s\" against stream's \"%s\"", got,
        streamed);
    g_free (got);
  }
  CHECK (r.n_interim == 0 && r.deltas == 0, "ignored: deltas from a JSON answer");
  CHECK (r.warnings->len == 0, "ignored: %s", r.warnings->str);
  run_clear (&r);
  stop_server (server);

  server = start_server (server_py, model, port, "--bad-stream=1");
  g_assert (server);
  run_live (port, "latency=8000 server-stream=true", jfk_only, &r);
  check_run ("malformed", &r, JFK_TEXT, SAME_MAX_WER);
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
