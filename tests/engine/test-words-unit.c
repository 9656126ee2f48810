/* test-words-unit.c: the pieces of word timestamps on hand-made inputs:
 * alignment-head lists (option parsing, where they come from), CTranslate2's
 * negative DTW (expected path from a Python transcription of
 * https://github.com/OpenNMT/CTranslate2 src/dtw.cc on the same matrix),
 * faster-whisper's word splitting (spaces, and unicode boundaries for
 * zh/ja/th/lo/my/yue) and merge_punctuations(), on the default model's
 * vocabulary (tiny.en; byte-level: every single byte is a token). */
#include "whisper-alignment.h"
#include "whisper-engine-struct.h"
#include "whisper-words.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <unistd.h>

static WhisperEngine *engine;

static void
test_heads_parse (void)
{
  int *pairs = NULL, n = 0;
  g_autoptr (GError) error = NULL;
  g_assert_true (whisper_alignment_heads_parse (" 3,1; 4 ,2;", 6, 8, "x", &pairs, &n, &error));
  g_assert_cmpint (n, ==, 2);
  g_assert_cmpint (pairs[0], ==, 3);
  g_assert_cmpint (pairs[1], ==, 1);
  g_assert_cmpint (pairs[2], ==, 4);
  g_assert_cmpint (pairs[3], ==, 2);
  g_free (pairs);
  const char *bad[] = { "3;1", "6,0", "0,8", "-1,0", "1,2,3", "", "a,b" };
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_clear_error (&error);
    g_assert_false (whisper_alignment_heads_parse (bad[i], 6, 8, "the alignment-heads option",
                                                   &pairs, &n, &error));
    g_assert_nonnull (error);
    g_assert_nonnull (strstr (error->message, "the alignment-heads option"));
  }
}

static void
test_heads_resolve (void)
{
  const WhisperEngineInfo *info = whisper_engine_get_info (engine);
  /* tiny.en's config.json lists 8 heads */
  g_assert_cmpint (info->n_alignment_heads, ==, 8);
  g_assert_nonnull (strstr (info->alignment_heads_source, "config.json"));

  WhisperEngineOptions o;
  whisper_engine_options_init (&o);
  o.device = WHISPER_DEVICE_CPU;
  o.alignment_heads = "0,0;3,5";
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperEngine) e = whisper_engine_new (&o, &error);
  g_assert_no_error (error);
  g_assert_cmpint (whisper_engine_get_info (e)->n_alignment_heads, ==, 2);
  g_assert_cmpstr (whisper_engine_get_info (e)->alignment_heads_source, ==,
                   "the alignment-heads option");

  o.alignment_heads = "4,0";  /* tiny has 4 decoder layers */
  g_autoptr (WhisperEngine) bad = whisper_engine_new (&o, &error);
  g_assert_null (bad);
  g_assert_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING);
  g_assert_nonnull (strstr (error->message, "layer in 0..3"));
}

/* A CTranslate2 directory whose config.json lists no head: the engine
 * loads, word timestamps fail with a message saying where heads were
 * looked for. The directory links tiny.en's files and writes its own
 * config.json. */
static void
test_heads_none (void)
{
  g_autofree char *src = whisper_engine_default_model_path ();
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("whisper-no-heads-XXXXXX", &error);
  g_assert_no_error (error);
  g_autoptr (GDir) d = g_dir_open (src, 0, &error);
  g_assert_no_error (error);
  const char *name;
  while ((name = g_dir_read_name (d))) {
    if (g_str_equal (name, "config.json"))
      continue;
    g_autofree char *from = g_build_filename (src, name, NULL);
    g_autofree char *to = g_build_filename (dir, name, NULL);
    g_assert_cmpint (symlink (from, to), ==, 0);
  }
  g_autofree char *config_src = g_build_filename (src, "config.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_assert_true (json_parser_load_from_file (parser, config_src, &error));
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  json_object_set_array_member (root, "alignment_heads", json_array_new ());
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  json_generator_set_root (gen, json_parser_get_root (parser));
  g_autofree char *config = g_build_filename (dir, "config.json", NULL);
  g_assert_true (json_generator_to_file (gen, config, &error));

  WhisperEngineOptions o;
  whisper_engine_options_init (&o);
  o.device = WHISPER_DEVICE_CPU;
  o.model_path = dir;
  g_autoptr (WhisperEngine) e = whisper_engine_new (&o, &error);
  g_assert_no_error (error);
  g_assert_cmpint (whisper_engine_get_info (e)->n_alignment_heads, ==, 0);
  g_autoptr (WhisperStream) stream = whisper_stream_new (e, &error);
  g_assert_no_error (error);
  WhisperDecodeOptions d_opts;
  whisper_decode_options_init (&d_opts);
  d_opts.word_timestamps = TRUE;
  d_opts.silence_threshold_db = WHISPER_SILENCE_THRESHOLD_OFF_DB;
  whisper_stream_set_options (stream, &d_opts);
  g_autofree float *pcm = g_new0 (float, WHISPER_SAMPLE_RATE);
  for (int i = 0; i < WHISPER_SAMPLE_RATE; i++)
    pcm[i] = 0.1f * (float) ((i * 7919) % 200 - 100) / 100.0f;
  g_assert_false (whisper_stream_transcribe (stream, pcm, WHISPER_SAMPLE_RATE, NULL, NULL,
                                             NULL, &error));
  g_assert_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "config.json"));
  g_assert_nonnull (strstr (error->message, "alignment-heads option"));

  g_autoptr (GDir) d2 = g_dir_open (dir, 0, NULL);
  while ((name = g_dir_read_name (d2))) {
    g_autofree char *f = g_build_filename (dir, name, NULL);
    g_unlink (f);
  }
  g_rmdir (dir);
}

static void
test_dtw (void)
{
  const float x[3][6] = { { 0.9f, 0.1f, 0.0f, 0.0f, 0.0f, 0.1f },
                          { 0.0f, 0.2f, 0.8f, 0.7f, 0.0f, 0.0f },
                          { 0.0f, 0.0f, 0.0f, 0.1f, 0.9f, 0.95f } };
  const int want[][2] = { { 0, 0 }, { 0, 1 }, { 1, 1 }, { 1, 2 },
                          { 1, 3 }, { 2, 3 }, { 2, 4 }, { 2, 5 } };
  int n = 0;
  g_autofree WhisperAlignStep *path = whisper_negative_dtw (&x[0][0], 3, 6, &n);
  g_assert_cmpint (n, ==, G_N_ELEMENTS (want));
  for (int i = 0; i < n; i++) {
    g_assert_cmpint (path[i].text, ==, want[i][0]);
    g_assert_cmpint (path[i].frame, ==, want[i][1]);
  }
}

/* The id of the token whose bytes are exactly `text` (len bytes). */
static gint32
token_of (const char *text, gsize len)
{
  const WhisperEngineInfo *info = whisper_engine_get_info (engine);
  for (gint32 id = 0; id < info->token_eot; id++) {
    g_autoptr (GBytes) b = whisper_engine_token_bytes (engine, id);
    gsize size;
    const void *data = b ? g_bytes_get_data (b, &size) : NULL;
    if (data && size == len && memcmp (data, text, len) == 0)
      return id;
  }
  g_error ("no token with the bytes of '%s' in the default model's vocabulary", text);
  return -1;
}

#define TOK(s) token_of (s, strlen (s))

static void
assert_words (GPtrArray *words, const char *const *want, const int *n_tok, gsize n)
{
  g_assert_cmpuint (words->len, ==, n);
  for (gsize i = 0; i < n; i++) {
    const WhisperAlignWord *w = g_ptr_array_index (words, i);
    g_assert_cmpstr (w->text->str, ==, want[i]);
    g_assert_cmpint (w->n_tok, ==, n_tok[i]);
  }
}

static void
test_split_spaces (void)
{
  const gint32 eot = whisper_engine_get_info (engine)->token_eot;
  const gint32 t[] = { TOK (" \""), TOK ("Hello"), TOK (","), TOK (" wor"), TOK ("ld"),
                       TOK ("."), TOK ("\""), eot };
  g_autoptr (GPtrArray) w = whisper_words_split (&engine->timing, t, G_N_ELEMENTS (t), FALSE);
  /* "Hello" has no space and is no punctuation: it joins the word before */
  const char *const want[] = { " \"Hello", ",", " world", ".", "\"", "" };
  const int n_tok[] = { 2, 1, 2, 1, 1, 1 };
  assert_words (w, want, n_tok, G_N_ELEMENTS (want));

  /* find_alignment() drops the eot's word before merging */
  g_ptr_array_remove_index (w, w->len - 1);
  whisper_words_merge_punctuations (w, WHISPER_DEFAULT_PREPEND_PUNCTUATIONS,
                                    WHISPER_DEFAULT_APPEND_PUNCTUATIONS);
  const char *const merged[] = { " \"Hello,", "", " world.\"", "", "" };
  const int merged_tok[] = { 3, 0, 4, 0, 0 };
  assert_words (w, merged, merged_tok, G_N_ELEMENTS (merged));
  const WhisperAlignWord *world = g_ptr_array_index (w, 2);
  g_assert_cmpint (world->tok_start, ==, 3);

  /* prepended punctuation with a space before it joins the next word */
  const gint32 p[] = { TOK (" \""), TOK (" Hello") };
  g_autoptr (GPtrArray) pw = whisper_words_split (&engine->timing, p, 2, FALSE);
  whisper_words_merge_punctuations (pw, WHISPER_DEFAULT_PREPEND_PUNCTUATIONS,
                                    WHISPER_DEFAULT_APPEND_PUNCTUATIONS);
  const char *const pre[] = { "", " \" Hello" };
  const int pre_tok[] = { 0, 2 };
  assert_words (pw, pre, pre_tok, G_N_ELEMENTS (pre));
  g_assert_cmpint (((WhisperAlignWord *) g_ptr_array_index (pw, 1))->tok_start, ==, 0);
}

static void
test_split_unicode (void)
{
  /* "你好," as single bytes: E4 BD A0, E5 A5 BD, then "," */
  const char bytes[] = "\xe4\xbd\xa0\xe5\xa5\xbd";
  gint32 t[8];
  for (int i = 0; i < 6; i++)
    t[i] = token_of (bytes + i, 1);
  t[6] = TOK (",");
  t[7] = whisper_engine_get_info (engine)->token_eot;
  g_assert_true (whisper_words_split_on_unicode ("zh"));
  g_assert_true (whisper_words_split_on_unicode ("yue"));
  g_assert_false (whisper_words_split_on_unicode ("en"));

  g_autoptr (GPtrArray) u = whisper_words_split (&engine->timing, t, 8, TRUE);
  const char *const want_u[] = { "你", "好", ",", "" };
  const int tok_u[] = { 3, 3, 1, 1 };
  assert_words (u, want_u, tok_u, G_N_ELEMENTS (want_u));

  g_autoptr (GPtrArray) s = whisper_words_split (&engine->timing, t, 8, FALSE);
  const char *const want_s[] = { "你好", ",", "" };
  const int tok_s[] = { 6, 1, 1 };
  assert_words (s, want_s, tok_s, G_N_ELEMENTS (want_s));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  WhisperEngineOptions o;
  whisper_engine_options_init (&o);
  o.device = WHISPER_DEVICE_CPU;
  g_autoptr (GError) error = NULL;
  engine = whisper_engine_new (&o, &error);
  if (!engine) {
    g_printerr ("FAIL: the default model (tiny.en, tools/fetch-model.sh): %s\n", error->message);
    return 1;
  }
  g_test_add_func ("/words/heads-parse", test_heads_parse);
  g_test_add_func ("/words/heads-resolve", test_heads_resolve);
  g_test_add_func ("/words/heads-none", test_heads_none);
  g_test_add_func ("/words/dtw", test_dtw);
  g_test_add_func ("/words/split-spaces", test_split_spaces);
  g_test_add_func ("/words/split-unicode", test_split_unicode);
  int rc = g_test_run ();
  whisper_engine_unref (engine);
  return rc;
}
