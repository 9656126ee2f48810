/* wt-util.c: helpers shared by the whispersink tests (see wt-util.h). */
#include "wt-util.h"

#include <gst/check/gstcheck.h>
#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* Usable outside a check test too (the reference transcript is made in
 * main(), before the tests fork). */
#define WT_REQUIRE(cond, ...) \
  G_STMT_START { if (!(cond)) g_error (__VA_ARGS__); } G_STMT_END

/* See gst_whisper_sink_class_init(): the error domain must be registered
 * by libwhisper-engine before any CUDA module is tried. */
static void __attribute__ ((constructor))
wt_register_error_domain (void)
{
  (void) whisper_engine_error_quark ();
}

gchar *
wt_data_path (const gchar *name)
{
  const gchar *dir = g_getenv ("WHISPER_SHARED_DATA");

  if (dir && *dir)
    return g_build_filename (dir, name, NULL);
  return g_build_filename (SOURCE_ROOT, "..", "shared", "data", name, NULL);
}

float *
wt_load_jfk (gsize *n_samples)
{
  g_autofree gchar *path = wt_data_path ("jfk.wav");
  g_autoptr (GError) err = NULL;
  float *pcm = whisper_audio_load_file (path, -1, n_samples, &err);

  WT_REQUIRE (pcm != NULL, "cannot read %s: %s", path, err ? err->message : "?");
  return pcm;
}

static GstClockTime
seconds_to_time (double s)
{
  guint64 idx = s > 0 ? (guint64) (s * WHISPER_SAMPLE_RATE + 0.5) : 0;
  return gst_util_uint64_scale_int_round (idx, GST_SECOND, WHISPER_SAMPLE_RATE);
}

GArray *
wt_engine_segments (const float *pcm, gsize n)
{
  return wt_engine_segments_full (pcm, n, NULL);
}

static GArray *engine_segments (const float *pcm, gsize n, guint64 *decode_steps,
    gboolean search);

GArray *
wt_engine_segments_search (const float *pcm, gsize n)
{
  return engine_segments (pcm, n, NULL, TRUE);
}

GArray *
wt_engine_segments_full (const float *pcm, gsize n, guint64 *decode_steps)
{
  return engine_segments (pcm, n, decode_steps, FALSE);
}

static GArray *
engine_segments (const float *pcm, gsize n, guint64 *decode_steps, gboolean search)
{
  WhisperEngineOptions opts;
  g_autoptr (WhisperEngine) engine = NULL;
  g_autoptr (WhisperStream) stream = NULL;
  g_autoptr (GError) err = NULL;
  GPtrArray *segs = NULL;
  GArray *out = g_array_new (FALSE, TRUE, sizeof (WtSegment));
  GstClockTime audio_end = gst_util_uint64_scale_int_round (n, GST_SECOND,
      WHISPER_SAMPLE_RATE);
  guint i;

  whisper_engine_options_init (&opts);
  engine = whisper_engine_new (&opts, &err);
  WT_REQUIRE (engine != NULL, "engine: %s", err ? err->message : "?");
  stream = whisper_stream_new (engine, &err);
  WT_REQUIRE (stream != NULL, "stream: %s", err ? err->message : "?");
  if (search) {
    WhisperDecodeOptions o;
    whisper_decode_options_init (&o);
    whisper_decode_options_set_search_defaults (&o);
    whisper_stream_set_options (stream, &o);
  }
  WT_REQUIRE (whisper_stream_transcribe (stream, pcm, n, NULL, NULL, &segs, &err),
      "transcribe: %s", err ? err->message : "?");
  if (decode_steps) {
    WhisperStreamStats stats;
    whisper_stream_get_stats (stream, &stats);
    *decode_steps = stats.decode_steps;
  }

  for (i = 0; i < segs->len; i++) {
    WhisperSegment *s = g_ptr_array_index (segs, i);
    WtSegment w;

    w.text = g_strstrip (g_strdup (s->text ? s->text : ""));
    w.start = MIN (seconds_to_time (s->start), audio_end);
    w.end = MIN (seconds_to_time (s->end), audio_end);
    if (*w.text == '\0' || w.end <= w.start) {
      g_free (w.text);
      continue;
    }
    g_array_append_val (out, w);
  }
  g_ptr_array_unref (segs);
  return out;
}

gchar *
wt_join_segments (GArray *segments)
{
  GString *s = g_string_new (NULL);
  guint i;

  for (i = 0; i < segments->len; i++) {
    if (i)
      g_string_append_c (s, ' ');
    g_string_append (s, g_array_index (segments, WtSegment, i).text);
  }
  return g_string_free (s, FALSE);
}

void
wt_segments_free (GArray *segments)
{
  guint i;

  for (i = 0; i < segments->len; i++)
    g_free (g_array_index (segments, WtSegment, i).text);
  g_array_unref (segments);
}

GstFlowReturn
wt_push_pcm (GstHarness *h, const float *pcm, gsize n, GstClockTime pts, gsize chunk,
    gboolean discont)
{
  gsize off;

  for (off = 0; off < n; off += chunk) {
    gsize len = MIN (chunk, n - off);
    GstBuffer *buf = gst_buffer_new_memdup (pcm + off, len * sizeof (float));
    GstFlowReturn ret;

    GST_BUFFER_PTS (buf) = pts + gst_util_uint64_scale_int_round (off, GST_SECOND,
        WHISPER_SAMPLE_RATE);
    GST_BUFFER_DURATION (buf) = gst_util_uint64_scale_int_round (len, GST_SECOND,
        WHISPER_SAMPLE_RATE);
    if (off == 0 && discont)
      GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
    ret = gst_harness_push (h, buf);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  return GST_FLOW_OK;
}

gchar *
wt_buffer_text (GstBuffer *buf)
{
  GstMapInfo map;
  gchar *text;

  fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
  text = g_strndup ((const gchar *) map.data, map.size);
  gst_buffer_unmap (buf, &map);
  return text;
}

GPtrArray *
wt_pull_until_eos (GstHarness *h, GPtrArray *texts)
{
  GPtrArray *bufs = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  GstBuffer *buf;

  /* gst_harness_pull_until_eos() stops at the EOS event; buffers before it. */
  while (gst_harness_pull_until_eos (h, &buf)) {
    if (buf == NULL)
      break;
    if (texts)
      g_ptr_array_add (texts, wt_buffer_text (buf));
    g_ptr_array_add (bufs, buf);
  }
  return bufs;
}

gchar *
wt_pull_joined_text (GstHarness *h)
{
  GPtrArray *texts = g_ptr_array_new_with_free_func (g_free);
  GPtrArray *bufs = wt_pull_until_eos (h, texts);
  GString *joined = g_string_new (NULL);
  guint i;

  for (i = 0; i < texts->len; i++)
    g_string_append_printf (joined, "%s%s", i ? " " : "", (gchar *) texts->pdata[i]);
  g_ptr_array_unref (bufs);
  g_ptr_array_unref (texts);
  return g_string_free (joined, FALSE);
}

/* Lowercased words of `text`: runs of [a-z0-9'] with apostrophes stripped
 * at both ends, as tools/benchmark.py's normalize_words(). */
static gchar **
normalized_words (const gchar *text)
{
  GPtrArray *words = g_ptr_array_new ();
  gchar *low = g_ascii_strdown (text, -1), *p;
  gchar **parts;
  guint i;

  for (p = low; *p; p++)
    if (!g_ascii_isalnum (*p) && *p != '\'')
      *p = ' ';
  parts = g_strsplit (low, " ", -1);
  for (i = 0; parts[i]; i++) {
    gchar *w = parts[i];
    gsize len;

    while (*w == '\'')
      w++;
    len = strlen (w);
    while (len > 0 && w[len - 1] == '\'')
      len--;
    if (len > 0)
      g_ptr_array_add (words, g_strndup (w, len));
  }
  g_ptr_array_add (words, NULL);
  g_strfreev (parts);
  g_free (low);
  return (gchar **) g_ptr_array_free (words, FALSE);
}

double
wt_wer (const gchar *reference, const gchar *hypothesis)
{
  gchar **ref = normalized_words (reference), **hyp = normalized_words (hypothesis);
  guint nr = g_strv_length (ref), nh = g_strv_length (hyp), i, j;
  guint *prev = g_new (guint, nh + 1), *cur = g_new (guint, nh + 1);
  double wer;

  for (j = 0; j <= nh; j++)
    prev[j] = j;
  for (i = 1; i <= nr; i++) {
    cur[0] = i;
    for (j = 1; j <= nh; j++) {
      guint sub = prev[j - 1] + (strcmp (ref[i - 1], hyp[j - 1]) != 0);
      cur[j] = MIN (MIN (prev[j] + 1, cur[j - 1] + 1), sub);
    }
    memcpy (prev, cur, (nh + 1) * sizeof (guint));
  }
  wer = nr ? (double) prev[nh] / nr : (nh ? G_MAXDOUBLE : 0.0);
  g_free (prev);
  g_free (cur);
  g_strfreev (ref);
  g_strfreev (hyp);
  return wer;
}

glong
wt_rss_kib (void)
{
  g_autofree gchar *status = NULL;
  const gchar *p;

#ifdef __GLIBC__
  /* Give free heap pages back first: freed memory glibc keeps (and touches,
   * under MALLOC_PERTURB_, which meson sets) is not a leak. */
  malloc_trim (0);
#endif
  if (!g_file_get_contents ("/proc/self/status", &status, NULL, NULL))
    return -1;
  p = strstr (status, "VmRSS:");
  return p ? strtol (p + 6, NULL, 10) : -1;
}

GstHarness *
wt_harness_new (gboolean live, const gchar *props)
{
  GstElement *e = gst_element_factory_make ("whispersink", NULL);
  GstHarness *h;

  fail_unless (e != NULL);
  /* greedy, one temperature, as wt_engine_segments() decodes (see wt-util.h) */
  g_object_set (e, "beam-size", 1, "temperatures", "0", NULL);
  if (props) {
    gchar **kv = g_strsplit_set (props, " =", -1);
    for (guint i = 0; kv[i] && kv[i + 1]; i += 2)
      gst_util_set_object_arg (G_OBJECT (e), kv[i], kv[i + 1]);
    g_strfreev (kv);
  }
  h = gst_harness_new_with_element (e, "sink", "src");
  gst_object_unref (e);
  gst_harness_set_live (h, live);
  gst_harness_set_src_caps_str (h, WT_CAPS_F32);
  return h;
}

guint64
wt_stats_u64 (GstElement *element, const gchar *field)
{
  GstStructure *s = NULL;
  guint64 v = 0;

  g_object_get (element, "stats", &s, NULL);
  fail_unless (s != NULL);
  fail_unless (gst_structure_get_uint64 (s, field, &v), "stats has no %s", field);
  gst_structure_free (s);
  return v;
}

gboolean
wt_barrier (GstHarness *h, const gchar *name)
{
  GstEvent *ev;

  if (!gst_harness_push_event (h, gst_event_new_custom (GST_EVENT_CUSTOM_DOWNSTREAM,
              gst_structure_new_empty (name))))
    return FALSE;
  while ((ev = gst_harness_pull_event (h))) {
    gboolean found = GST_EVENT_TYPE (ev) == GST_EVENT_CUSTOM_DOWNSTREAM
        && gst_event_has_name (ev, name);
    gst_event_unref (ev);
    if (found)
      return TRUE;
  }
  return FALSE;
}

GPtrArray *
wt_pop_text_messages (GstBus *bus)
{
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_message_unref);
  GstMessage *m;

  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT))) {
    if (gst_message_has_name (m, "whisper-text"))
      g_ptr_array_add (out, m);
    else
      gst_message_unref (m);
  }
  return out;
}

int
wt_run_suite_with_model (int argc, char **argv, Suite *(*make_suite) (void), const gchar *name,
    const gchar *file)
{
  g_autofree gchar *model = whisper_engine_default_model_path ();
  g_autofree gchar *jfk = wt_data_path ("jfk.wav");

  if (!g_file_test (model, G_FILE_TEST_EXISTS) || !g_file_test (jfk, G_FILE_TEST_EXISTS)) {
    g_print ("SKIP: needs the default model (%s) and %s\n", model, jfk);
    return 77;
  }
  gst_check_init (&argc, &argv);
  return gst_check_run_suite (make_suite (), name, file);
}
