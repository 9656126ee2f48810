/* test-parity: whole transcriptions of the engine (CPU, default model
 * tiny.en, default WhisperDecodeOptions) against faster-whisper's
 * transcribe() (fixture transcripts.json, made by make-reference.py with
 * beam_size=1, temperature=0 only, condition_on_previous_text, timestamps,
 * suppress_blank, suppress_tokens=[-1]: the engine's defaults).
 *
 * Both sides get identical samples: the fixture was made from
 * `whisper-transcribe --dump-pcm`, and this test loads each clip with
 * whisper_audio_load_file() and checks the samples' SHA-256 first.
 *
 * Pass rule: every clip has the identical token sequence (all segments'
 * tokens, timestamp tokens included, concatenated), however many clips the
 * fixture holds; on every clip, segment count, boundaries, texts and times
 * are equal, and avg_logprob, no_speech_prob and compression_ratio are close
 * (tolerances below). */
#include <math.h>
#include <string.h>

#include "reference-common.h"

/* Segment times are offset + position * 0.02 on both sides: equal up to
 * floating-point formatting. */
#define TIME_TOLERANCE 1e-6
/* Scores: CT2 sums float32 log-softmax values of slightly different logits
 * (encoder/decoder rounding, see test-encoder). Measured on the 12 clips:
 * avg_logprob differs by at most 4.2e-5 absolute (AVX2 machine; 3.2e-5 on
 * AVX-512), which is up to 7.4e-4 relative where a repetition loop's
 * avg_logprob is near 0, so its bound is absolute, 5x the largest seen; a
 * different token moves it by far more. no_speech_prob (values 1e-4 to
 * 3e-2, where the former 1e-2 absolute bound accepted 250 % errors) differs
 * by at most 1.8e-5 relative; bound 1e-3 relative. */
#define AVG_LOGPROB_TOLERANCE 2e-4
#define NO_SPEECH_PROB_RELATIVE_TOLERANCE 1e-3
/* compression_ratio is a function of the window's text alone (zlib level 6
 * with header and Adler-32, reference section 4.3): equal texts give equal
 * values up to float formatting. */
#define COMPRESSION_RATIO_TOLERANCE 1e-6

static JsonParser *fixture;

/* |ours - ref| / |ref| (|ours - ref| where ref is 0). */
static double
relative_difference (double ours, double ref)
{
  const double d = fabs (ours - ref);
  return ref != 0.0 ? d / fabs (ref) : d;
}
static WhisperEngine *engine;

static JsonObject *
fixture_root (void)
{
  return json_node_get_object (json_parser_get_root (fixture));
}

/* The special token ids the engine resolved must be the ones faster-whisper's
 * tokenizer uses. */
static void
test_tokenizer (void)
{
  JsonObject *tok = ref_object (fixture_root (), "tokenizer");
  const WhisperEngineInfo *info = whisper_engine_get_info (engine);
  g_assert_cmpint (info->n_vocab, ==, ref_int (tok, "n_vocab"));
  g_assert_cmpint (info->is_multilingual, ==, json_object_get_boolean_member (tok, "is_multilingual"));
  g_assert_cmpint (info->token_eot, ==, ref_int (tok, "eot"));
  g_assert_cmpint (info->token_sot, ==, ref_int (tok, "sot"));
  g_assert_cmpint (info->token_sot_prev, ==, ref_int (tok, "sot_prev"));
  g_assert_cmpint (info->token_sot_lm, ==, ref_int (tok, "sot_lm"));
  g_assert_cmpint (info->token_no_speech, ==, ref_int (tok, "no_speech"));
  g_assert_cmpint (info->token_no_timestamps, ==, ref_int (tok, "no_timestamps"));
  g_assert_cmpint (info->token_timestamp_begin, ==, ref_int (tok, "timestamp_begin"));
  g_assert_cmpint (info->token_transcribe, ==, ref_int (tok, "transcribe"));
  g_assert_cmpint (info->token_translate, ==, ref_int (tok, "translate"));
}

typedef struct {
  const char *name;
  gboolean pcm_ok;
  gboolean identical;
  gssize first_diff;
  gsize n_ours, n_ref;
  double d_logprob, d_no_speech;   /* max over segments (identical clips) */
  guint64 windows_ours, windows_ref;
  double seconds;
  GString *problems;               /* checks that failed on an identical clip */
} ClipResult;

/* Detailed checks of a clip whose tokens are identical. */
static void
check_identical_clip (ClipResult *r, GPtrArray *ours, JsonArray *ref_segs)
{
  guint n_ref = json_array_get_length (ref_segs);
  if (ours->len != n_ref) {
    g_string_append_printf (r->problems, "%u segments, reference %u; ", ours->len, n_ref);
    return;
  }
  for (guint i = 0; i < n_ref; i++) {
    const WhisperSegment *s = g_ptr_array_index (ours, i);
    JsonObject *rs = json_array_get_object_element (ref_segs, i);
    gsize n_rt;
    g_autofree gint32 *rt = ref_int32_array (ref_array (rs, "tokens"), &n_rt);
    if (ref_first_difference (s->tokens, s->n_tokens, rt, n_rt) >= 0)
      g_string_append_printf (r->problems, "segment %u: other token boundaries; ", i);
    if (g_strcmp0 (s->text, ref_string (rs, "text")) != 0)
      g_string_append_printf (r->problems, "segment %u: text \"%s\" vs \"%s\"; ", i, s->text,
                              ref_string (rs, "text"));
    double d;
    if ((d = fabs (s->start - ref_double (rs, "start"))) > TIME_TOLERANCE)
      g_string_append_printf (r->problems, "segment %u: start %.6f vs %.6f; ", i, s->start,
                              ref_double (rs, "start"));
    if ((d = fabs (s->end - ref_double (rs, "end"))) > TIME_TOLERANCE)
      g_string_append_printf (r->problems, "segment %u: end %.6f vs %.6f; ", i, s->end,
                              ref_double (rs, "end"));
    d = fabs (s->avg_logprob - ref_double (rs, "avg_logprob"));
    r->d_logprob = MAX (r->d_logprob, d);
    if (!(d <= AVG_LOGPROB_TOLERANCE))
      g_string_append_printf (r->problems, "segment %u: avg_logprob %.5f vs %.5f; ", i,
                              s->avg_logprob, ref_double (rs, "avg_logprob"));
    d = relative_difference (s->no_speech_prob, ref_double (rs, "no_speech_prob"));
    r->d_no_speech = MAX (r->d_no_speech, d);
    if (!(d <= NO_SPEECH_PROB_RELATIVE_TOLERANCE))
      g_string_append_printf (r->problems, "segment %u: no_speech_prob %.5f vs %.5f; ", i,
                              s->no_speech_prob, ref_double (rs, "no_speech_prob"));
    d = fabs (s->compression_ratio - ref_double (rs, "compression_ratio"));
    if (!(d <= COMPRESSION_RATIO_TOLERANCE))
      g_string_append_printf (r->problems, "segment %u: compression_ratio %.6f vs %.6f; ", i,
                              s->compression_ratio, ref_double (rs, "compression_ratio"));
  }
  if (r->windows_ours != r->windows_ref)
    g_string_append_printf (r->problems, "%" G_GUINT64_FORMAT " windows, reference %"
                            G_GUINT64_FORMAT "; ", r->windows_ours, r->windows_ref);
}

static void
run_clip (JsonObject *clip, ClipResult *r)
{
  r->name = ref_string (clip, "name");
  r->first_diff = -2;
  r->problems = g_string_new (NULL);
  const char *root = ref_root_dir (ref_string (clip, "root"));
  g_assert_nonnull (root);
  g_autofree char *path = g_build_filename (root, ref_string (clip, "path"), NULL);
  int channel = (int) ref_int (clip, "channel");

  g_autoptr (GError) error = NULL;
  gsize n_samples = 0;
  g_autofree float *pcm = whisper_audio_load_file (path, channel, &n_samples, &error);
  if (!pcm) {
    g_string_append_printf (r->problems, "cannot load %s: %s; ", path, error->message);
    return;
  }
  g_autofree char *sha = ref_sha256_f32 (pcm, n_samples);
  r->pcm_ok = n_samples == (gsize) ref_int (clip, "n_samples")
              && g_ascii_strcasecmp (sha, ref_string (clip, "pcm_sha256")) == 0;
  if (!r->pcm_ok) {
    g_string_append_printf (r->problems, "PCM differs from the fixture's (%" G_GSIZE_FORMAT
                            " samples, reference %" G_GINT64_FORMAT "): regenerate the fixtures; ",
                            n_samples, ref_int (clip, "n_samples"));
  }

  JsonArray *ref_segs = ref_array (clip, "segments");
  GArray *ref_all = g_array_new (FALSE, FALSE, sizeof (gint32));
  for (guint i = 0; i < json_array_get_length (ref_segs); i++) {
    gsize n;
    g_autofree gint32 *t = ref_int32_array (ref_array (json_array_get_object_element (ref_segs, i),
                                                        "tokens"), &n);
    g_array_append_vals (ref_all, t, n);
  }
  r->windows_ref = json_array_get_length (ref_array (clip, "windows"));

  g_autoptr (RefTranscript) t = ref_transcribe (engine, pcm, n_samples);
  r->seconds = t->seconds;
  r->windows_ours = t->windows;
  if (t->error) {
    g_string_append_printf (r->problems, "transcription failed: %s; ", t->error->message);
    g_array_unref (ref_all);
    return;
  }
  r->n_ours = t->n_tokens;
  r->n_ref = ref_all->len;
  r->first_diff = ref_first_difference (t->tokens, t->n_tokens, (gint32 *) ref_all->data,
                                        ref_all->len);
  r->identical = r->first_diff < 0;

  g_autofree char *our_text = ref_joined_segments (t->segments);
  g_autofree char *ref_text = ref_joined_text (ref_segs);
  if (r->identical) {
    check_identical_clip (r, t->segments, ref_segs);
  } else {
    gssize p = r->first_diff;
    g_autofree char *ours = ref_describe_tokens (engine, t->tokens, t->n_tokens, p - 3, p + 6);
    g_autofree char *refs = ref_describe_tokens (engine, (gint32 *) ref_all->data, ref_all->len,
                                                 p - 3, p + 6);
    g_print ("#   %s: first difference at token %" G_GSSIZE_FORMAT " (of %" G_GSIZE_FORMAT
             " ours, %u reference)\n#     ours [%" G_GSSIZE_FORMAT "..]: %s\n#     ref  [%"
             G_GSSIZE_FORMAT "..]: %s\n", r->name, p, t->n_tokens, ref_all->len, MAX (p - 3, 0),
             ours, MAX (p - 3, 0), refs);
  }
  g_print ("#   %s ours: %s\n#   %s ref : %s\n", r->name, our_text, r->name, ref_text);
  g_array_unref (ref_all);
}

static void
test_clips (void)
{
  JsonArray *clips = ref_array (fixture_root (), "clips");
  guint n = json_array_get_length (clips);
  g_assert_cmpuint (n, >, 0);
  ClipResult *results = g_new0 (ClipResult, n);
  for (guint i = 0; i < n; i++)
    run_clip (json_array_get_object_element (clips, i), &results[i]);

  guint identical = 0;
  g_print ("#\n# %-24s %-4s %-9s %-10s %-13s %-9s %-9s %-7s %s\n", "clip", "pcm", "identical",
           "first diff", "tokens ours/ref", "d logprob", "d nospeech", "windows", "seconds");
  for (guint i = 0; i < n; i++) {
    ClipResult *r = &results[i];
    identical += r->identical;
    g_autofree char *diff = r->first_diff >= 0 ? g_strdup_printf ("%" G_GSSIZE_FORMAT,
                                                                  r->first_diff) : g_strdup ("-");
    g_autofree char *dl = r->identical ? g_strdup_printf ("%.2e", r->d_logprob) : g_strdup ("-");
    g_autofree char *dn = r->identical ? g_strdup_printf ("%.2e", r->d_no_speech) : g_strdup ("-");
    g_print ("# %-24s %-4s %-9s %-10s %6" G_GSIZE_FORMAT "/%-6" G_GSIZE_FORMAT " %-9s %-10s %"
             G_GUINT64_FORMAT "/%-5" G_GUINT64_FORMAT " %.1f\n", r->name, r->pcm_ok ? "ok" : "DIFF",
             r->identical ? "yes" : "NO", diff, r->n_ours, r->n_ref, dl, dn, r->windows_ours,
             r->windows_ref, r->seconds);
  }
  g_print ("# identical token sequences: %u of %u clips (pass needs all); d logprob is "
           "absolute, d nospeech relative\n#\n", identical, n);

  GString *failures = g_string_new (NULL);
  for (guint i = 0; i < n; i++) {
    ClipResult *r = &results[i];
    if (r->problems->len > 0) {
      g_print ("# FAIL %s: %s\n", r->name, r->problems->str);
      g_string_append_printf (failures, "%s: %s", r->name, r->problems->str);
    }
    g_string_free (r->problems, TRUE);
  }
  for (guint i = 0; i < n; i++) {
    if (!results[i].identical) {
      g_print ("# FAIL %s: not the reference's tokens (first difference at %" G_GSSIZE_FORMAT
               ")\n", results[i].name, results[i].first_diff);
      g_string_append_printf (failures, "%s: not the reference's tokens; ", results[i].name);
    }
  }
  if (failures->len > 0)
    g_test_fail_printf ("%s", failures->str);
  g_string_free (failures, TRUE);
  g_free (results);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (!ref_default_model_present ())
    return 1;

  g_autofree char *path = ref_fixture_path ("transcripts.json");
  fixture = ref_load_json (path);

  WhisperEngineOptions options;
  whisper_engine_options_init (&options);
  options.model_path = NULL;  /* the default model: tiny.en, CTranslate2 */
  options.device = WHISPER_DEVICE_CPU;
  g_autoptr (GError) error = NULL;
  engine = whisper_engine_new (&options, &error);
  if (!engine) {
    g_printerr ("FAIL: cannot create the engine on the default model: %s\n", error->message);
    return 1;
  }

  g_test_add_func ("/reference/parity/tokenizer", test_tokenizer);
  g_test_add_func ("/reference/parity/clips", test_clips);
  int ret = g_test_run ();

  whisper_engine_unref (engine);
  g_object_unref (fixture);
  return ret;
}
