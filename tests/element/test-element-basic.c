/* test-element-basic.c: whispersink without much inference: caps,
 * properties and their flags, state changes with good, missing and corrupt
 * models, devices, language codes, the LATENCY answer, and an unlinked src
 * pad ending a pipeline. */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <string.h>

#include "wt-util.h"
#include "gpu-probe.h"

/* Where the engine's loader finds the CUDA module (engine/backend/
 * backend-cuda-loader.c): the one this build made ('' when it made none) and
 * the installed one. */
#ifndef WT_CUDA_MODULE_BUILT
#define WT_CUDA_MODULE_BUILT ""
#endif
#ifndef WT_CUDA_MODULE_INSTALLED
#define WT_CUDA_MODULE_INSTALLED ""
#endif

static GstElement *
make_sink (void)
{
  GstElement *e = gst_element_factory_make ("whispersink", NULL);
  fail_unless (e != NULL, "whispersink not found (GST_PLUGIN_PATH_1_0?)");
  return e;
}

/* Sets `state`, expects failure (`why`: what makes it fail, for the
 * message), returns the ERROR message text (or NULL). */
static gchar *
expect_state_failure (GstElement *e, GstState state, const gchar *why)
{
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GError *err = NULL;
  gchar *debug = NULL, *text = NULL;
  GstStateChangeReturn ret;

  gst_element_set_bus (e, bus);
  ret = gst_element_set_state (e, state);
  fail_unless (ret == GST_STATE_CHANGE_FAILURE, "the change to %s did not fail (%s) "
      "although %s", gst_element_state_get_name (state),
      gst_element_state_change_return_get_name (ret), why);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  if (msg) {
    gst_message_parse_error (msg, &err, &debug);
    GST_INFO ("error: %s (%s)", err->message, debug);
    text = g_strdup (err->message);
    g_error_free (err);
    g_free (debug);
    gst_message_unref (msg);
  }
  gst_element_set_state (e, GST_STATE_NULL);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  return text;
}

/* ------------------------------------------------------------------------ */

GST_START_TEST (test_caps_accepted)
{
  GstElement *e = make_sink ();
  GstPad *sink = gst_element_get_static_pad (e, "sink");
  /* several channels are taken (mixed or one chosen: the channel property) */
  const gchar *good[] = { WT_CAPS_F32, WT_CAPS_S16,
    "audio/x-raw, format=F32LE, rate=16000, channels=2, layout=interleaved",
    "audio/x-raw, format=S16LE, rate=16000, channels=6, layout=interleaved" };
  const gchar *bad[] = {
    "audio/x-raw, format=F32LE, rate=48000, channels=1, layout=interleaved",
    "audio/x-raw, format=F32LE, rate=48000, channels=2, layout=interleaved",
    "audio/x-raw, format=F32LE, rate=16000, channels=65, layout=interleaved",
    "audio/x-raw, format=S16BE, rate=16000, channels=1, layout=interleaved",
    "audio/x-raw, format=F64LE, rate=16000, channels=1, layout=interleaved",
    "audio/x-raw, format=F32LE, rate=16000, channels=1, layout=non-interleaved",
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (good); i++) {
    GstCaps *caps = gst_caps_from_string (good[i]);
    fail_unless (gst_pad_query_accept_caps (sink, caps), "refused %s", good[i]);
    gst_caps_unref (caps);
  }
  for (i = 0; i < G_N_ELEMENTS (bad); i++) {
    GstCaps *caps = gst_caps_from_string (bad[i]);
    fail_if (gst_pad_query_accept_caps (sink, caps), "accepted %s", bad[i]);
    gst_caps_unref (caps);
  }
  gst_object_unref (sink);
  gst_object_unref (e);
}
GST_END_TEST;

GST_START_TEST (test_caps_both_formats_flow)
{
  /* S16 and F32 of the same audio give the same text. */
  gsize n;
  float *pcm = wt_load_jfk (&n);
  gsize cut = 3 * WHISPER_SAMPLE_RATE;   /* a short clip is enough */
  const gchar *formats[] = { WT_CAPS_F32, WT_CAPS_S16 };
  gchar *texts[2];
  guint f;

  for (f = 0; f < 2; f++) {
    GstHarness *h = gst_harness_new ("whispersink");
    GPtrArray *t = g_ptr_array_new_with_free_func (g_free), *bufs;
    GstBuffer *buf;

    gst_harness_set_src_caps_str (h, formats[f]);
    if (f == 0) {
      buf = gst_buffer_new_memdup (pcm, cut * sizeof (float));
    } else {
      gint16 *s16 = g_new (gint16, cut);
      gsize i;
      for (i = 0; i < cut; i++)
        s16[i] = (gint16) CLAMP (pcm[i] * 32768.0f, -32768.0f, 32767.0f);
      buf = gst_buffer_new_wrapped (s16, cut * sizeof (gint16));
    }
    GST_BUFFER_PTS (buf) = 0;
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
    fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
    bufs = wt_pull_until_eos (h, t);
    fail_unless (t->len > 0);
    g_ptr_array_add (t, NULL);
    texts[f] = g_strjoinv (" ", (gchar **) t->pdata);
    GST_INFO ("%s: %s", formats[f], texts[f]);
    g_ptr_array_unref (bufs);
    g_ptr_array_unref (t);
    gst_harness_teardown (h);
  }
  /* jfk.wav is 16-bit, so the two inputs hold the same samples. */
  fail_unless_equals_string (texts[0], texts[1]);
  g_free (texts[0]);
  g_free (texts[1]);
  g_free (pcm);
}
GST_END_TEST;

GST_START_TEST (test_caps_48k_stereo_fails_cleanly)
{
  GError *err = NULL;
  gchar *debug = NULL;
  GstElement *p, *src, *filter, *sink, *fake;
  GstCaps *caps;
  GstBus *bus;
  GstMessage *msg;

  /* At link time: gst-launch refuses the link. */
  p = gst_parse_launch_full ("audiotestsrc ! audio/x-raw,rate=48000,channels=2 ! "
      "whispersink ! fakesink", NULL, GST_PARSE_FLAG_FATAL_ERRORS, &err);
  fail_unless (p == NULL && err != NULL);
  fail_unless (g_error_matches (err, GST_PARSE_ERROR, GST_PARSE_ERROR_LINK), "%s",
      err->message);
  g_clear_error (&err);

  /* At run time (pads linked without a caps check): not-negotiated, an error
   * message and a clean shutdown. */
  p = gst_pipeline_new (NULL);
  src = gst_element_factory_make ("audiotestsrc", NULL);
  filter = gst_element_factory_make ("capsfilter", NULL);
  sink = gst_element_factory_make ("whispersink", NULL);
  fake = gst_element_factory_make ("fakesink", NULL);
  caps = gst_caps_from_string ("audio/x-raw,format=F32LE,rate=48000,channels=2");
  g_object_set (filter, "caps", caps, NULL);
  g_object_set (src, "num-buffers", 5, NULL);
  gst_caps_unref (caps);
  gst_bin_add_many (GST_BIN (p), src, filter, sink, fake, NULL);
  fail_unless (gst_element_link (src, filter));
  fail_unless (gst_element_link_pads_full (filter, "src", sink, "sink",
          GST_PAD_LINK_CHECK_NOTHING));
  fail_unless (gst_element_link (sink, fake));

  bus = gst_element_get_bus (p);
  gst_element_set_state (p, GST_STATE_PLAYING);
  msg = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  fail_unless (msg != NULL, "no error within 60 s");
  fail_unless_equals_int (GST_MESSAGE_TYPE (msg), GST_MESSAGE_ERROR);
  gst_message_parse_error (msg, &err, &debug);
  GST_INFO ("error: %s / %s", err->message, debug);
  fail_unless (debug && strstr (debug, "not-negotiated"), "debug: %s", debug);
  g_clear_error (&err);
  g_free (debug);
  gst_message_unref (msg);
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (bus);
  gst_object_unref (p);
}
GST_END_TEST;

/* ------------------------------------------------------------------------ */

static void
check_flags (GObjectClass *klass, const gchar *name, GParamFlags want, GParamFlags not)
{
  GParamSpec *p = g_object_class_find_property (klass, name);

  fail_unless (p != NULL, "no property %s", name);
  fail_unless ((p->flags & want) == want, "%s: flags 0x%x lack 0x%x", name, p->flags,
      want);
  fail_unless ((p->flags & not) == 0, "%s: flags 0x%x have 0x%x", name, p->flags, not);
  fail_unless (g_param_spec_get_blurb (p) && strlen (g_param_spec_get_blurb (p)) > 10,
      "%s: no description", name);
}

GST_START_TEST (test_property_flags_and_defaults)
{
  GstElement *e = make_sink ();
  GObjectClass *k = G_OBJECT_GET_CLASS (e);
  const GParamFlags rw = G_PARAM_READWRITE;
  const gchar *ready_only[] = { "model", "device", "threads", "encoder-context" };
  const gchar *playing[] = { "language-code", "latency", "lateness", "output",
    "no-speech-threshold", "offline-mode", "live-commit", "live-prompt", "live-context",
    "live-min-probability"
  };
  gchar *model = NULL, *def = whisper_engine_default_model_path (), *lang = NULL;
  guint latency, lateness, delay;
  gint mel, threads, ctx;
  gdouble nst;
  const gchar *counters[] = { "audio-received", "audio-transcribed", "audio-dropped" };
  const gchar *items[] = { "text-dropped", "output-queued" };
  GstStructure *stats = NULL;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (ready_only); i++)
    check_flags (k, ready_only[i], rw | GST_PARAM_MUTABLE_READY,
        GST_PARAM_MUTABLE_PAUSED | GST_PARAM_MUTABLE_PLAYING);
  for (i = 0; i < G_N_ELEMENTS (playing); i++)
    check_flags (k, playing[i], rw | GST_PARAM_MUTABLE_PLAYING, 0);
  check_flags (k, "max-encoder-length", G_PARAM_READABLE, G_PARAM_WRITABLE);
  check_flags (k, "max-observed-delay", G_PARAM_READABLE, G_PARAM_WRITABLE);
  check_flags (k, "stats", G_PARAM_READABLE, G_PARAM_WRITABLE);

  g_object_get (e, "model", &model, "language-code", &lang, "latency", &latency,
      "lateness", &lateness, "max-encoder-length", &mel, "max-observed-delay", &delay,
      "threads", &threads, "encoder-context", &ctx, "no-speech-threshold", &nst, NULL);
  fail_unless_equals_string (model, def);
  fail_unless_equals_string (lang, "auto");
  fail_unless (latency > 0);
  fail_unless_equals_int (lateness, 0);
  fail_unless_equals_int (mel, 0);
  fail_unless_equals_int (delay, 0);
  fail_unless_equals_int (threads, 0);
  fail_unless_equals_int (ctx, 0);
  fail_unless (nst > 0.59 && nst < 0.61);
  {
    GParamSpec *p = g_object_class_find_property (k, "live-commit");
    GEnumClass *ec = g_type_class_ref (p->value_type);
    gint commit = -1;
    g_object_get (e, "live-commit", &commit, NULL);
    fail_unless_equals_string (g_enum_get_value (ec, commit)->value_nick, "agreement");
    fail_unless (g_enum_get_value_by_nick (ec, "deadline") != NULL);
    g_type_class_unref (ec);
  }

  /* Every counter starts at zero. */
  g_object_get (e, "stats", &stats, NULL);
  fail_unless (stats != NULL && gst_structure_has_name (stats, "whispersink-stats"));
  for (i = 0; i < G_N_ELEMENTS (counters); i++) {
    guint64 v = G_MAXUINT64;
    fail_unless (gst_structure_get_uint64 (stats, counters[i], &v), "no %s", counters[i]);
    fail_unless_equals_uint64 (v, 0);
  }
  for (i = 0; i < G_N_ELEMENTS (items); i++) {
    guint v = G_MAXUINT;
    fail_unless (gst_structure_get_uint (stats, items[i], &v), "no %s", items[i]);
    fail_unless_equals_int (v, 0);
  }
  gst_structure_free (stats);
  g_free (model);
  g_free (lang);
  g_free (def);
  gst_object_unref (e);
}
GST_END_TEST;

GST_START_TEST (test_max_encoder_length)
{
  WhisperEngineOptions opts;
  WhisperEngine *engine;
  GstElement *e = make_sink ();
  gint mel, want;

  whisper_engine_options_init (&opts);
  engine = whisper_engine_new (&opts, NULL);
  fail_unless (engine != NULL);
  want = whisper_engine_get_info (engine)->max_encoder_length;
  whisper_engine_unref (engine);

  g_object_get (e, "max-encoder-length", &mel, NULL);
  fail_unless_equals_int (mel, 0);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_READY),
      GST_STATE_CHANGE_SUCCESS);
  g_object_get (e, "max-encoder-length", &mel, NULL);
  fail_unless_equals_int (mel, want);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  g_object_get (e, "max-encoder-length", &mel, NULL);
  fail_unless_equals_int (mel, 0);

  /* A shorter encoder context is what the engine resolves. */
  g_object_set (e, "encoder-context", 500, NULL);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_READY),
      GST_STATE_CHANGE_SUCCESS);
  g_object_get (e, "max-encoder-length", &mel, NULL);
  fail_unless_equals_int (mel, 500);

  /* Changed in READY: the engine is rebuilt on the way to PAUSED. */
  g_object_set (e, "encoder-context", 750, NULL);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_SUCCESS);
  g_object_get (e, "max-encoder-length", &mel, NULL);
  fail_unless_equals_int (mel, 750);

  /* Not changeable beyond READY: ignored. */
  g_object_set (e, "encoder-context", 300, NULL);
  g_object_get (e, "encoder-context", &mel, NULL);
  fail_unless_equals_int (mel, 750);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (e);
}
GST_END_TEST;

/* ------------------------------------------------------------------------ */

GST_START_TEST (test_missing_model)
{
  const gchar *path = "/nonexistent/gst-whisper-test/no-such-model";
  GstElement *e = make_sink ();
  gchar *text;

  g_object_set (e, "model", path, NULL);
  text = expect_state_failure (e, GST_STATE_READY, "the model does not exist");
  fail_unless (text != NULL, "no error message");
  fail_unless (strstr (text, path) != NULL, "path not in: %s", text);
  /* The reason follows the path. */
  fail_unless (strlen (strstr (text, path) + strlen (path)) > 5, "no reason in: %s", text);
  g_free (text);
  gst_object_unref (e);
}
GST_END_TEST;

static gchar *
write_junk (const gchar *dir, const gchar *name, gsize size)
{
  gchar *path = g_build_filename (dir, name, NULL);
  gchar *junk = g_malloc (size);
  gsize i;

  for (i = 0; i < size; i++)
    junk[i] = (gchar) (i * 131 + 7);
  fail_unless (g_file_set_contents (path, junk, size, NULL));
  g_free (junk);
  return path;
}

GST_START_TEST (test_corrupt_model)
{
  gchar *dir = g_dir_make_tmp ("whispersink-XXXXXX", NULL);
  gchar *ct2dir = g_build_filename (dir, "ct2", NULL);
  gchar *files[4];
  const gchar *models[2];
  guint i;

  fail_unless (dir != NULL);
  g_mkdir (ct2dir, 0700);
  files[0] = write_junk (ct2dir, "model.bin", 4096);
  files[1] = write_junk (ct2dir, "config.json", 64);
  files[2] = write_junk (ct2dir, "vocabulary.txt", 64);
  files[3] = write_junk (dir, "ggml-junk.bin", 4096);
  models[0] = ct2dir;
  models[1] = files[3];

  for (i = 0; i < G_N_ELEMENTS (models); i++) {
    GstElement *e = make_sink ();
    gchar *text;

    g_object_set (e, "model", models[i], NULL);
    text = expect_state_failure (e, GST_STATE_READY, "the model is corrupt");
    fail_unless (text != NULL, "no error message for %s", models[i]);
    fail_unless (strstr (text, models[i]) != NULL, "path not in: %s", text);
    fail_unless (strlen (text) > strlen (models[i]) + 25, "no reason in: %s", text);
    g_free (text);
    gst_object_unref (e);
  }

  for (i = 0; i < G_N_ELEMENTS (files); i++) {
    g_unlink (files[i]);
    g_free (files[i]);
  }
  g_rmdir (ct2dir);
  g_rmdir (dir);
  g_free (ct2dir);
  g_free (dir);
}
GST_END_TEST;

/* The mapped file whose path contains `name` (its line of /proc/self/maps),
 * or NULL. */
static gchar *
mapped_file (const gchar *name)
{
  gchar *maps = NULL, *found = NULL;
  gchar **lines, **l;

  fail_unless (g_file_get_contents ("/proc/self/maps", &maps, NULL, NULL));
  lines = g_strsplit (maps, "\n", -1);
  for (l = lines; *l && !found; l++)
    if (strstr (*l, name))
      found = g_strdup (*l);
  g_strfreev (lines);
  g_free (maps);
  return found;
}

GST_START_TEST (test_devices)
{
  GstElement *e = make_sink ();

  /* auto works with or without a GPU. */
  gst_util_set_object_arg (G_OBJECT (e), "device", "auto");
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_READY),
      GST_STATE_CHANGE_SUCCESS);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);

  gst_util_set_object_arg (G_OBJECT (e), "device", "cpu");
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_READY),
      GST_STATE_CHANGE_SUCCESS);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (e);
}
GST_END_TEST;

/* device=cuda. Whether it must work is decided without the code under
 * test: the tests' own driver probe (tests/gpu/gpu-probe.c) asks the real
 * NVIDIA driver library whether it sees a device ($WHISPER_GPU_TEST_DRIVER
 * is not used: the engine's loader always asks libcuda.so.1), and the CUDA
 * module must exist where the loader looks for it. Where both hold, the
 * change to READY must succeed and map the module (the engine is really on
 * the GPU); anywhere else it must fail, with an error that carries the
 * engine's own reason. A device=cuda that silently falls back to the CPU
 * fails on every machine. */
GST_START_TEST (test_device_cuda)
{
  GstElement *e;
  gchar *reason = NULL, *text, *before;
  gint n_devices = 0;
  GpuProbeResult probe;
  gboolean module = FALSE;
  const gchar *modules[] = { WT_CUDA_MODULE_BUILT, WT_CUDA_MODULE_INSTALLED };
  guint i;

  /* A module named there (the CPU emulator of CUDA) is loaded without
   * asking the driver: not the case checked here. */
  g_unsetenv ("WHISPER_CUDA_MODULE");
  probe = gpu_probe_library (GPU_PROBE_DRIVER_LIBRARY, &n_devices, &reason);
  for (i = 0; i < G_N_ELEMENTS (modules); i++)
    module |= *modules[i] && g_file_test (modules[i], G_FILE_TEST_IS_REGULAR);
  GST_INFO ("driver probe: %s; CUDA module %s", reason, module ? "present" : "absent");

  e = make_sink ();
  gst_util_set_object_arg (G_OBJECT (e), "device", "cuda");
  if (probe == GPU_PROBE_DEVICE && module) {
    GstStateChangeReturn ret;

    before = mapped_file ("libwhisper-engine-cuda");
    ret = gst_element_set_state (e, GST_STATE_READY);
    fail_unless (ret == GST_STATE_CHANGE_SUCCESS, "device=cuda failed (%s) although %s "
        "and the CUDA module is built", gst_element_state_change_return_get_name (ret),
        reason);
    if (before == NULL) {
      gchar *after = mapped_file ("libwhisper-engine-cuda");
      fail_unless (after != NULL, "device=cuda reached READY without loading the CUDA "
          "module (%s): the engine is not on the GPU", reason);
      g_free (after);
    } else {
      GST_INFO ("the CUDA module was mapped before (CK_FORK=no?): not checked");
    }
    g_free (before);
    gst_element_set_state (e, GST_STATE_NULL);
  } else {
    WhisperEngineOptions opts;
    WhisperEngine *engine;
    GError *err = NULL;
    gchar *why = g_strdup_printf ("%s%s", reason, module ? "" :
        " and this build has no CUDA module");

    text = expect_state_failure (e, GST_STATE_READY, why);
    fail_unless (text != NULL, "device=cuda failed without an error message (%s)", why);
    /* The error carries the engine's reason. */
    whisper_engine_options_init (&opts);
    opts.device = WHISPER_DEVICE_CUDA;
    engine = whisper_engine_new (&opts, &err);
    fail_unless (engine == NULL, "the engine opened device=cuda although %s", why);
    fail_unless (err != NULL && strstr (text, err->message) != NULL,
        "the error does not carry the engine's reason \"%s\": %s",
        err ? err->message : "(none)", text);
    g_clear_error (&err);
    g_free (text);
    g_free (why);
  }
  g_free (reason);
  gst_object_unref (e);
}
GST_END_TEST;

/* The multilingual base model (tools/fetch-model.sh base). */
static gchar *
base_model_path (void)
{
  const gchar *data = g_getenv ("XDG_DATA_HOME");
  g_autofree gchar *root = data && *data ? g_strdup (data)
      : g_build_filename (g_get_home_dir (), ".local", "share", NULL);
  return g_build_filename (root, "gst-whisper", "models", "base", NULL);
}

/* English-only tiny.en takes English in any form and refuses the others;
 * the multilingual base model takes every Whisper language in the forms
 * GStreamer users write, and auto. */
GST_START_TEST (test_language_codes)
{
  const gchar *english[] = { "en", "en-US", "EN_gb", "eng", "", "auto", "English" };
  const gchar *others[] = { "de", "de-DE", "de_DE", "deu", "ger", "German", "zh-Hans-CN",
    "haw", "auto" };
  GstElement *e;
  GstBus *bus;
  GstMessage *msg;
  gchar *text;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (english); i++) {
    e = make_sink ();
    g_object_set (e, "language-code", english[i], NULL);
    fail_unless (gst_element_set_state (e, GST_STATE_READY) == GST_STATE_CHANGE_SUCCESS,
        "refused '%s'", english[i]);
    gst_element_set_state (e, GST_STATE_NULL);
    gst_object_unref (e);
  }

  e = make_sink ();
  g_object_set (e, "language-code", "fr-FR", NULL);
  text = expect_state_failure (e, GST_STATE_READY, "the language is not English");
  fail_unless (text && strstr (text, "fr-FR") && strstr (text, "English-only"),
      "unclear: %s", text);
  g_free (text);
  gst_object_unref (e);

  {
    g_autofree gchar *base = base_model_path ();
    for (i = 0; i < G_N_ELEMENTS (others); i++) {
      e = make_sink ();
      g_object_set (e, "model", base, "language-code", others[i], NULL);
      fail_unless (gst_element_set_state (e, GST_STATE_READY) == GST_STATE_CHANGE_SUCCESS,
          "the base model refused '%s'", others[i]);
      gst_element_set_state (e, GST_STATE_NULL);
      gst_object_unref (e);
    }
    e = make_sink ();
    g_object_set (e, "model", base, NULL);
    /* not a Whisper language: refused when set (a warning), the old value stays */
    g_object_set (e, "language-code", "klingon", NULL);
    {
      gchar *lang = NULL;
      g_object_get (e, "language-code", &lang, NULL);
      fail_unless_equals_string (lang, "auto");
      g_free (lang);
    }
    gst_object_unref (e);
    /* translation needs a multilingual model */
    e = make_sink ();
    gst_util_set_object_arg (G_OBJECT (e), "task", "translate");
    text = expect_state_failure (e, GST_STATE_READY, "translation on tiny.en");
    fail_unless (text && strstr (text, "English-only"), "unclear: %s", text);
    g_free (text);
    gst_object_unref (e);
  }

  e = make_sink ();

  /* Later (as transcriberbin does it): a warning, English goes on. */
  g_object_set (e, "language-code", "en", NULL);
  bus = gst_bus_new ();
  gst_element_set_bus (e, bus);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_READY),
      GST_STATE_CHANGE_SUCCESS);
  g_object_set (e, "language-code", "de", NULL);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  fail_unless (msg != NULL, "no warning");
  gst_message_unref (msg);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  gst_object_unref (e);
}
GST_END_TEST;

/* ------------------------------------------------------------------------ */

static void
query_latency (GstPad *pad, gboolean *live, GstClockTime *min, GstClockTime *max)
{
  GstQuery *q = gst_query_new_latency ();

  fail_unless (gst_pad_query (pad, q), "LATENCY query failed");
  gst_query_parse_latency (q, live, min, max);
  gst_query_unref (q);
}

GST_START_TEST (test_latency_query_paused)
{
  /* Live upstream, PAUSED, no data yet: transcriberbin asks this way, with
   * a live fakesrc in front. */
  GstElement *p = gst_parse_launch ("fakesrc is-live=true ! "
      "audio/x-raw,format=F32LE,rate=16000,channels=1 ! capsfilter name=cf ! "
      "whispersink name=w latency=3000 ! fakesink", NULL);
  GstElement *w = gst_bin_get_by_name (GST_BIN (p), "w");
  GstElement *cf = gst_bin_get_by_name (GST_BIN (p), "cf");
  GstPad *wsrc = gst_element_get_static_pad (w, "src");
  GstPad *cfsrc = gst_element_get_static_pad (cf, "src");
  gboolean live, up_live;
  GstClockTime min, max, up_min, up_max;

  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_PAUSED),
      GST_STATE_CHANGE_NO_PREROLL);
  query_latency (cfsrc, &up_live, &up_min, &up_max);
  query_latency (wsrc, &live, &min, &max);
  fail_unless (up_live && live);
  fail_unless_equals_uint64 (min, up_min + 3 * GST_SECOND);
  if (GST_CLOCK_TIME_IS_VALID (up_max))
    fail_unless_equals_uint64 (max, up_max + 3 * GST_SECOND);

  /* A change is reflected at once. */
  g_object_set (w, "latency", 5000, NULL);
  query_latency (wsrc, &live, &min, &max);
  fail_unless_equals_uint64 (min, up_min + 5 * GST_SECOND);

  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (wsrc);
  gst_object_unref (cfsrc);
  gst_object_unref (w);
  gst_object_unref (cf);
  gst_object_unref (p);
}
GST_END_TEST;

GST_START_TEST (test_latency_query_harness)
{
  GstHarness *h = gst_harness_new ("whispersink");
  GstClockTime own = 2500 * GST_MSECOND;

  g_object_set (h->element, "latency", 2500, NULL);
  gst_harness_set_src_caps_str (h, WT_CAPS_F32);
  gst_harness_set_upstream_latency (h, 100 * GST_MSECOND);
  fail_unless_equals_uint64 (gst_harness_query_latency (h), 100 * GST_MSECOND + own);

  /* Non-live upstream: upstream's answer, nothing added. */
  gst_harness_set_live (h, FALSE);
  {
    GstQuery *q = gst_query_new_latency ();
    gboolean live;
    GstClockTime min;

    fail_unless (gst_pad_peer_query (h->sinkpad, q));
    gst_query_parse_latency (q, &live, &min, NULL);
    fail_if (live);
    fail_unless_equals_uint64 (min, 100 * GST_MSECOND);
    gst_query_unref (q);
  }
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_unlinked_src_ends_pipeline)
{
  /* `... ! whispersink` is a complete pipeline: EOS arrives, no error. */
  GstElement *p = gst_parse_launch ("audiotestsrc num-buffers=8 wave=silence ! "
      "audio/x-raw,format=S16LE,rate=16000,channels=1 ! whispersink", NULL);
  GstBus *bus = gst_element_get_bus (p);
  GstMessage *msg;

  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  msg = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND,
      GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  fail_unless (msg != NULL, "no EOS within 120 s");
  fail_unless_equals_int (GST_MESSAGE_TYPE (msg), GST_MESSAGE_EOS);
  gst_message_unref (msg);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (p);
}
GST_END_TEST;

static Suite *
whispersink_basic_suite (void)
{
  Suite *s = suite_create ("whispersink-basic");
  TCase *tc = tcase_create ("basic");

  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_caps_accepted);
  tcase_add_test (tc, test_caps_both_formats_flow);
  tcase_add_test (tc, test_caps_48k_stereo_fails_cleanly);
  tcase_add_test (tc, test_property_flags_and_defaults);
  tcase_add_test (tc, test_max_encoder_length);
  tcase_add_test (tc, test_missing_model);
  tcase_add_test (tc, test_corrupt_model);
  tcase_add_test (tc, test_devices);
  tcase_add_test (tc, test_device_cuda);
  tcase_add_test (tc, test_language_codes);
  tcase_add_test (tc, test_latency_query_paused);
  tcase_add_test (tc, test_latency_query_harness);
  tcase_add_test (tc, test_unlinked_src_ends_pipeline);
  return s;
}

GST_CHECK_MAIN (whispersink_basic);
