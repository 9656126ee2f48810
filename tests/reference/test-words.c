/* test-words.c: word timestamps against faster-whisper's
 * transcribe(word_timestamps=True) (fixtures/words-<model>.json, made by
 * make-word-reference.py) for tiny.en and the multilingual base (English),
 * greedy, on every parity clip.
 *
 * Passes when the words (text and punctuation) are the reference's, at
 * least 95 % of the starts and of the ends are within 20 ms of the
 * reference's and every one within 100 ms. Also prints how far each word's
 * per-step time (WhisperTokenEvent.aligned_time of its first token: the
 * frame the alignment heads attend to most in the step that chose it) is
 * from its DTW start: mean, p95, max. tiny.en runs a second time with
 * hallucination_silence_threshold 1 s (words-tiny.en-hst1.json).
 *
 * Models: <folder of the default model>/<name>, or $WHISPER_WORDS_MODELS
 * ("name=path,name=path"). A missing model fails the test with a message.
 * Optional arguments PYTHON3 CONVERTER (meson passes both): tiny.en is also
 * converted to a ggml file with tools/ct2-to-ggml.py (as test-parity-ggml
 * does) and must give the same words and times: a ggml file has no
 * config.json, so its alignment heads come from OpenAI's set for the
 * dimensions. */
#include "reference-common.h"

#include <glib/gstdio.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL_CLOSE 0.0201
#define TOL_MAX 0.1001

typedef struct {
  gint32 id;
  double aligned_time;
} StepEvent;

typedef struct {
  GArray *window;   /* StepEvent of the window being decoded */
  GArray *step_err; /* double: |per-step time - DTW start| per word */
  GArray *signed_err; /* double: per-step time - DTW start */
  GArray *next_err;   /* double: |next step's time - DTW start| */
  GPtrArray *segments;
} Collect;

static gboolean
on_token (const WhisperTokenEvent *ev, gpointer data)
{
  Collect *c = data;
  if (ev->step == 0)
    g_array_set_size (c->window, 0);
  StepEvent e = { ev->id, ev->aligned_time };
  g_array_append_val (c->window, e);
  return TRUE;
}

static gboolean
on_segment (WhisperSegment *seg, gpointer data)
{
  Collect *c = data;
  /* the segment's tokens among the window's steps */
  const StepEvent *ev = (const StepEvent *) c->window->data;
  for (guint at = 0; seg->n_tokens && at + seg->n_tokens <= c->window->len; at++) {
    gboolean same = TRUE;
    for (gsize k = 0; k < seg->n_tokens && same; k++)
      same = ev[at + k].id == seg->tokens[k];
    if (!same)
      continue;
    for (gsize w = 0; w < seg->n_words; w++) {
      const guint k = at + seg->words[w].first_token;
      const double t = ev[k].aligned_time;
      if (t >= 0) {
        const double err = fabs (t - seg->words[w].start), sgn = t - seg->words[w].start;
        g_array_append_val (c->step_err, err);
        g_array_append_val (c->signed_err, sgn);
        /* the step that takes the token as its input */
        if (k + 1 < c->window->len && ev[k + 1].aligned_time >= 0) {
          const double e2 = fabs (ev[k + 1].aligned_time - seg->words[w].start);
          g_array_append_val (c->next_err, e2);
        }
      }
    }
    break;
  }
  g_ptr_array_add (c->segments, seg);
  return TRUE;
}

static int
compare_double (const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* mean, p95, max of absolute errors (sorts them) */
static void
report_errors (GString *report, const char *what, GArray *errs)
{
  if (errs->len == 0)
    return;
  double *v = (double *) errs->data, sum = 0;
  qsort (v, errs->len, sizeof (double), compare_double);
  for (guint i = 0; i < errs->len; i++)
    sum += v[i];
  const guint p95 = MIN (errs->len - 1, (guint) ceil (0.95 * errs->len) - 1);
  g_string_append_printf (report, "%s, %u words: mean %.0f ms, p95 %.0f ms, max %.0f ms\n", what,
                          errs->len, 1000 * sum / errs->len, 1000 * v[p95],
                          1000 * v[errs->len - 1]);
}

typedef struct {
  guint words, words_ref, close_start, close_end, compared;
  double max_diff;
  gboolean same_words;
  GArray *step_err;
} Tally;

static GPtrArray *
transcribe_words (WhisperEngine *engine, const float *pcm, gsize n, double hst,
                  GArray *step_err, GArray *signed_err, GArray *next_err, GError **error)
{
  g_autoptr (WhisperStream) stream = whisper_stream_new (engine, error);
  if (!stream)
    return NULL;
  WhisperDecodeOptions o;
  whisper_decode_options_init (&o);
  o.silence_threshold_db = WHISPER_SILENCE_THRESHOLD_OFF_DB;
  o.strict_no_speech = FALSE;
  o.word_timestamps = TRUE;
  o.hallucination_silence_threshold = hst;
  whisper_stream_set_options (stream, &o);
  Collect c = { g_array_new (FALSE, FALSE, sizeof (StepEvent)), step_err, signed_err, next_err,
                g_ptr_array_new_with_free_func ((GDestroyNotify) whisper_segment_free) };
  whisper_stream_set_token_callback (stream, on_token, &c);
  gboolean ok = whisper_stream_transcribe (stream, pcm, n, on_segment, &c, NULL, error);
  g_array_unref (c.window);
  if (!ok) {
    g_ptr_array_unref (c.segments);
    return NULL;
  }
  return c.segments;
}

/* Compares our words with the fixture clip's; appends problems. */
static void
compare_clip (GPtrArray *segs, JsonObject *clip, Tally *t, GString *problems)
{
  JsonArray *ref_segs = ref_array (clip, "segments");
  GPtrArray *ours = g_ptr_array_new ();
  for (guint i = 0; i < segs->len; i++) {
    WhisperSegment *s = g_ptr_array_index (segs, i);
    for (gsize w = 0; w < s->n_words; w++)
      g_ptr_array_add (ours, &s->words[w]);
  }
  GPtrArray *ref = g_ptr_array_new ();
  for (guint i = 0; i < json_array_get_length (ref_segs); i++) {
    JsonArray *ws = ref_array (json_array_get_object_element (ref_segs, i), "words");
    for (guint w = 0; w < json_array_get_length (ws); w++)
      g_ptr_array_add (ref, json_array_get_object_element (ws, w));
  }
  t->words = ours->len;
  t->words_ref = ref->len;
  t->same_words = ours->len == ref->len;
  for (guint i = 0; i < MIN (ours->len, ref->len); i++) {
    const WhisperWord *a = g_ptr_array_index (ours, i);
    JsonObject *b = g_ptr_array_index (ref, i);
    if (strcmp (a->text, ref_string (b, "word")) != 0) {
      if (t->same_words)
        g_string_append_printf (problems, "word %u is '%s', the reference's '%s'; ", i, a->text,
                                ref_string (b, "word"));
      t->same_words = FALSE;
      continue;
    }
    const double ds = fabs (a->start - ref_double (b, "start"));
    const double de = fabs (a->end - ref_double (b, "end"));
    t->compared++;
    t->close_start += ds <= TOL_CLOSE;
    t->close_end += de <= TOL_CLOSE;
    t->max_diff = MAX (t->max_diff, MAX (ds, de));
  }
  if (ours->len != ref->len)
    g_string_append_printf (problems, "%u words, the reference %u; ", ours->len, ref->len);
  g_ptr_array_unref (ours);
  g_ptr_array_unref (ref);
}

static gboolean
run_model (const char *name, const char *label, const char *model_path, double hst,
           GString *report)
{
  g_autofree char *hst_suffix = hst >= 0 ? g_strdup_printf ("-hst%g", hst) : g_strdup ("");
  g_autofree char *fixture_name = g_strdup_printf ("words-%s%s.json", name, hst_suffix);
  g_autofree char *fixture = ref_fixture_path (fixture_name);
  g_autoptr (JsonParser) parser = ref_load_json (fixture);
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  JsonArray *clips = ref_array (root, "clips");

  g_autofree char *bin = g_build_filename (model_path, "model.bin", NULL);
  if (!g_file_test (bin, G_FILE_TEST_IS_REGULAR) && !g_file_test (model_path, G_FILE_TEST_IS_REGULAR)) {
    g_printerr ("FAIL: model %s is missing: no %s (tools/fetch-model.sh %s, or set "
                "$WHISPER_WORDS_MODELS=\"%s=PATH\")\n", name, bin, name, name);
    return FALSE;
  }
  WhisperEngineOptions eo;
  whisper_engine_options_init (&eo);
  eo.model_path = model_path;
  eo.device = WHISPER_DEVICE_CPU;
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperEngine) engine = whisper_engine_new (&eo, &error);
  if (!engine) {
    g_printerr ("FAIL: %s: %s\n", model_path, error->message);
    return FALSE;
  }
  const WhisperEngineInfo *info = whisper_engine_get_info (engine);
  g_string_append_printf (report, "\n%s (%s; %d alignment heads from %s)\n", label, model_path,
                          info->n_alignment_heads, info->alignment_heads_source);
  g_string_append_printf (report, "%-24s %6s %6s %6s %8s %8s %8s  %s\n", "clip", "words", "ref",
                          "same", "start20", "end20", "max ms", "problems");
  gboolean pass = TRUE;
  guint all_compared = 0, all_close_start = 0, all_close_end = 0;
  double all_max = 0;
  GArray *step_err = g_array_new (FALSE, FALSE, sizeof (double));
  GArray *signed_err = g_array_new (FALSE, FALSE, sizeof (double));
  GArray *next_err = g_array_new (FALSE, FALSE, sizeof (double));
  for (guint i = 0; i < json_array_get_length (clips); i++) {
    JsonObject *clip = json_array_get_object_element (clips, i);
    const char *root_dir = ref_root_dir (ref_string (clip, "root"));
    g_autofree char *path = g_build_filename (root_dir, ref_string (clip, "path"), NULL);
    gsize n = 0;
    g_autoptr (GError) err = NULL;
    g_autofree float *pcm = whisper_audio_load_file (path, (int) ref_int (clip, "channel"), &n,
                                                     &err);
    g_autoptr (GString) problems = g_string_new (NULL);
    Tally t = { 0 };
    if (!pcm) {
      g_string_append_printf (problems, "cannot load %s: %s; ", path, err->message);
    } else {
      g_autofree char *sha = ref_sha256_f32 (pcm, n);
      if (g_ascii_strcasecmp (sha, ref_string (clip, "pcm_sha256")) != 0)
        g_string_append (problems, "PCM differs from the fixture's: regenerate it; ");
      GPtrArray *segs = transcribe_words (engine, pcm, n, hst, step_err, signed_err, next_err,
                                          &err);
      if (!segs) {
        g_string_append_printf (problems, "transcription failed: %s; ", err->message);
      } else {
        compare_clip (segs, clip, &t, problems);
        g_ptr_array_unref (segs);
      }
    }
    const gboolean ok = problems->len == 0 && t.same_words &&
                        t.close_start >= 0.95 * t.compared && t.close_end >= 0.95 * t.compared &&
                        t.max_diff <= TOL_MAX;
    pass = pass && ok;
    all_compared += t.compared;
    all_close_start += t.close_start;
    all_close_end += t.close_end;
    all_max = MAX (all_max, t.max_diff);
    g_string_append_printf (report, "%-24s %6u %6u %6s %7.1f%% %7.1f%% %8.0f  %s%s\n",
                            ref_string (clip, "name"), t.words, t.words_ref,
                            t.same_words ? "yes" : "NO",
                            t.compared ? 100.0 * t.close_start / t.compared : 0,
                            t.compared ? 100.0 * t.close_end / t.compared : 0, t.max_diff * 1000,
                            ok ? "" : "FAIL ", problems->str);
  }
  g_string_append_printf (report, "%-24s %6s %6s %6s %7.1f%% %7.1f%% %8.0f\n", "all", "", "", "",
                          all_compared ? 100.0 * all_close_start / all_compared : 0,
                          all_compared ? 100.0 * all_close_end / all_compared : 0, all_max * 1000);
  if (step_err->len > 0) {
    double bias = 0;
    for (guint i = 0; i < signed_err->len; i++)
      bias += g_array_index (signed_err, double, i);
    bias /= signed_err->len;
    report_errors (report, "per-step time (argmax of the mean alignment-head attention in the "
                   "step that chose the word's first token) vs DTW start", step_err);
    g_string_append_printf (report, "  (signed mean: per-step %+.0f ms from the DTW start)\n",
                            1000 * bias);
    report_errors (report, "  alternative: the next step's (the token as input)", next_err);
    /* a constant shift of -0.16 s (about tiny.en's signed mean) */
    GArray *shifted = g_array_new (FALSE, FALSE, sizeof (double));
    for (guint i = 0; i < signed_err->len; i++) {
      const double e = fabs (g_array_index (signed_err, double, i) - 0.16);
      g_array_append_val (shifted, e);
    }
    report_errors (report, "  alternative: per-step time - 0.16 s", shifted);
    g_array_unref (shifted);
  }
  g_array_unref (step_err);
  g_array_unref (signed_err);
  g_array_unref (next_err);
  return pass;
}

/* tools/ct2-to-ggml.py on the default model into a temporary folder; the
 * file's path (g_free), or NULL after a message. */
static char *
convert_to_ggml (const char *python, const char *converter, const char *ct2_dir)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *tmpdir = g_dir_make_tmp ("whisper-words-ggml-XXXXXX", &error);
  if (!tmpdir) {
    g_printerr ("FAIL: cannot make a temporary folder: %s\n", error->message);
    return NULL;
  }
  char *path = g_build_filename (tmpdir, "tiny.en-f16.bin", NULL);
  const char *argv[] = { python, converter, ct2_dir, path, NULL };
  g_autofree char *out = NULL, *err = NULL;
  int status = 0;
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                     &status, &error) ||
      !g_spawn_check_wait_status (status, &error)) {
    g_printerr ("FAIL: %s %s %s %s: %s\n%s\n", python, converter, ct2_dir, path,
                error->message, err ? err : "");
    g_free (path);
    return NULL;
  }
  return path;
}

int
main (int argc, char **argv)
{
  if (!ref_default_model_present ())
    return 1;
  g_autofree char *def = whisper_engine_default_model_path ();
  g_autofree char *models_dir = g_path_get_dirname (def);
  g_autoptr (GString) report = g_string_new (NULL);
  gboolean pass = TRUE;

  const char *env = g_getenv ("WHISPER_WORDS_MODELS");
  g_auto (GStrv) pairs = g_strsplit (env && *env ? env : "tiny.en=,base=", ",", -1);
  for (int i = 0; pairs[i]; i++) {
    g_auto (GStrv) kv = g_strsplit (pairs[i], "=", 2);
    if (!kv[0] || !kv[0][0])
      continue;
    g_autofree char *path = kv[1] && kv[1][0] ? g_strdup (kv[1])
                                              : g_build_filename (models_dir, kv[0], NULL);
    pass = run_model (kv[0], kv[0], path, -1.0, report) && pass;
    /* faster-whisper's hallucination_silence_threshold on top (1 s: on
     * max_length_loop it drops a segment) */
    if (g_str_equal (kv[0], "tiny.en"))
      pass = run_model (kv[0], "tiny.en, hallucination_silence_threshold=1", path, 1.0,
                        report) && pass;
  }
  if (argc >= 3) {
    g_autofree char *ggml = convert_to_ggml (argv[1], argv[2], def);
    if (!ggml) {
      pass = FALSE;
    } else {
      pass = run_model ("tiny.en", "tiny.en as ggml (tools/ct2-to-ggml.py)", ggml, -1.0,
                        report) &&
             pass;
      g_unlink (ggml);
      g_autofree char *dir = g_path_get_dirname (ggml);
      g_rmdir (dir);
    }
  }
  g_print ("%s\n%s\n", report->str, pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
