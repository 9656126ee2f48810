/* test-element-silence: no text in silence and noise on default settings.
 * Each case runs twice: with the element's defaults (silence-threshold
 * -60 dBFS, strict-no-speech and vad-gate on) it must give no text, and
 * with the reference's rules (silence-threshold -150, strict-no-speech and
 * vad-gate off: what the element did before) it must give text, so the
 * case is real and the test can fail:
 *  - 300 s of digital silence, offline: "you" in every window before;
 *  - 60 s of digital silence, live (latency 4000): with the reference's
 *    rules the calls decode "you" at the end of each 30-s window (bus
 *    messages, final=false); the commit policy alone keeps it from the
 *    text (each reading is at another time, no two decodes agree on
 *    it), and with the defaults no call decodes anything;
 *  - tests/reference/clips/max-length-loop.flac (178 s of real speech with
 *    low noise between): a window near 145 s loops on "he was a
 *    well-known woman" to the maximum decode length, at a high no-speech
 *    probability; the speech around it stays. */
#include <gst/check/gstcheck.h>
#include <string.h>

#include "wt-util.h"

#define REFERENCE_RULES "silence-threshold=-150 strict-no-speech=false vad-gate=false"

/* The texts of the interim (final=false) whisper-text messages on `bus`,
 * joined with spaces. */
static gchar *
interim_texts (GstBus *bus)
{
  g_autoptr (GPtrArray) msgs = wt_pop_text_messages (bus);
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < msgs->len; i++) {
    const GstStructure *st = gst_message_get_structure (g_ptr_array_index (msgs, i));
    gboolean final = TRUE;
    if (gst_structure_get_boolean (st, "final", &final) && !final)
      g_string_append_printf (s, "%s%s", s->len ? " " : "",
          gst_structure_get_string (st, "text"));
  }
  return g_string_free (s, FALSE);
}

/* Pushes pcm (1-s buffers) and EOS; returns the joined text and, when not
 * NULL, the element's windows-silent and windows-no-speech counts and the
 * interim texts of its bus messages. */
static gchar *
transcribe_full (gboolean live, const gchar *props, const float *pcm, gsize n,
    guint64 *silent, guint64 *no_speech, gchar **interim)
{
  GstHarness *h = wt_harness_new (live, props);
  GstBus *bus = gst_bus_new ();
  gchar *text;

  gst_element_set_bus (h->element, bus);
  fail_unless_equals_int (wt_push_pcm (h, pcm, n, 0, WHISPER_SAMPLE_RATE, TRUE),
      GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  text = wt_pull_joined_text (h);
  if (interim)
    *interim = interim_texts (bus);
  fail_unless_equals_uint64 (wt_stats_u64 (h->element, "audio-dropped"), 0);
  if (silent)
    *silent = wt_stats_u64 (h->element, "windows-silent");
  if (no_speech)
    *no_speech = wt_stats_u64 (h->element, "windows-no-speech");
  gst_harness_teardown (h);
  gst_object_unref (bus);
  return text;
}

static gchar *
transcribe (gboolean live, const gchar *props, const float *pcm, gsize n,
    guint64 *silent, guint64 *no_speech)
{
  return transcribe_full (live, props, pcm, n, silent, no_speech, NULL);
}

GST_START_TEST (test_silence_offline)
{
  const gsize n = 300 * WHISPER_SAMPLE_RATE;
  float *zeros = g_new0 (float, n);
  guint64 silent = 0;
  gchar *got = transcribe (FALSE, NULL, zeros, n, &silent, NULL);
  gchar *before = transcribe (FALSE, REFERENCE_RULES, zeros, n, NULL, NULL);

  GST_INFO ("defaults: '%s'; reference rules: '%s'", got, before);
  fail_unless_equals_string (got, "");
  fail_unless_equals_uint64 (silent, 10);  /* ten 30-s windows, none decoded */
  fail_unless (strstr (before, "you") != NULL, "the case does not arise: '%s'", before);
  g_free (got);
  g_free (before);
  g_free (zeros);
}
GST_END_TEST;

GST_START_TEST (test_silence_live)
{
  /* latency 4000: 1-s chunks; lateness large so that audio pushed faster
   * than real time is not dropped */
  const gchar *live = "latency=4000 lateness=600000";
  g_autofree gchar *reference = g_strdup_printf ("%s %s", live, REFERENCE_RULES);
  g_autofree gchar *interim = NULL, *before_interim = NULL;
  const gsize n = 60 * WHISPER_SAMPLE_RATE;
  float *zeros = g_new0 (float, n);
  guint64 silent = 0;
  gchar *got = transcribe_full (TRUE, live, zeros, n, &silent, NULL, &interim);
  gchar *before = transcribe_full (TRUE, reference, zeros, n, NULL, NULL, &before_interim);

  GST_INFO ("defaults: '%s', interim '%s' (%" G_GUINT64_FORMAT " silent calls); reference "
      "rules: '%s', interim '%s'", got, interim, silent, before, before_interim);
  fail_unless_equals_string (got, "");
  fail_unless_equals_string (interim, "");
  fail_unless (silent > 0);
  fail_unless (strlen (before) + strlen (before_interim) > 0,
      "the case does not arise: no words decoded with the reference rules");
  g_free (got);
  g_free (before);
  g_free (zeros);
}
GST_END_TEST;

static guint
count (const gchar *haystack, const gchar *needle)
{
  guint k = 0;
  for (const gchar *p = haystack; (p = strstr (p, needle)); p += strlen (needle))
    k++;
  return k;
}

GST_START_TEST (test_noise_loop_offline)
{
  g_autofree gchar *path = g_build_filename (SOURCE_ROOT,
      "tests", "reference", "clips", "max-length-loop.flac", NULL);
  g_autoptr (GError) err = NULL;
  gsize n;
  float *pcm = whisper_audio_load_file (path, -1, &n, &err);
  guint64 no_speech = 0;
  gchar *got, *before;

  fail_unless (pcm != NULL, "%s", err ? err->message : path);
  got = transcribe (FALSE, NULL, pcm, n, NULL, &no_speech);
  before = transcribe (FALSE, REFERENCE_RULES, pcm, n, NULL, NULL);
  GST_INFO ("defaults: '%s'", got);
  fail_unless_equals_int (count (got, "well-known woman"), 0);
  fail_unless (no_speech >= 1);
  fail_unless (strstr (got, "amiable himself") != NULL, "speech lost: %s", got);
  fail_unless (count (before, "well-known woman") >= 10, "the case does not arise: %s",
      before);
  g_free (got);
  g_free (before);
  g_free (pcm);
}
GST_END_TEST;

static Suite *
silence_suite (void)
{
  Suite *s = suite_create ("whispersink-silence");
  TCase *tc = tcase_create ("silence");

  tcase_set_timeout (tc, 600);
  tcase_add_test (tc, test_silence_offline);
  tcase_add_test (tc, test_silence_live);
  tcase_add_test (tc, test_noise_loop_offline);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (silence);
