/* test-bpe.c: text to token ids (engine/src/text/whisper-bpe.c) against
 * faster-whisper's tokenizer (tests/engine/fixtures/tokenizer-reference.json,
 * tests/reference/make-tokenizer-reference.py) on tiny.en (GPT-2 vocabulary)
 * and base (multilingual); the round trip through the decoder; the
 * pre-tokenizer's pieces on hand-made strings; invalid UTF-8; long inputs;
 * and OpenAI's derivation of the non-speech tokens
 * (https://github.com/openai/whisper/blob/main/whisper/tokenizer.py,
 * non_speech_tokens) against the lists engine/src/core/whisper-engine.c hardcodes. */
#include "tokenizer-fixture.h"
#include "whisper-bpe.h"
#include "whisper-engine-struct.h"

#include <string.h>

static const char *const model_names[] = { "tiny.en", "base" };

static gint32 *
encode_or_fail (WhisperEngine *engine, const char *text, gsize *n)
{
  g_autoptr (GError) error = NULL;
  gint32 *ids = whisper_engine_encode_text (engine, text, n, &error);
  if (!ids)
    g_error ("encoding \"%s\" failed: %s", text, error->message);
  return ids;
}

/* Every fixture string gives faster-whisper's ids and decodes back. */
static void
test_reference (gconstpointer data)
{
  const char *name = data;
  WhisperEngine *engine = tf_engine (name);
  JsonObject *fixture = tf_fixture ();
  JsonArray *strings = tf_array (fixture, "strings");
  JsonArray *all_ids = tf_array (tf_object (fixture, "ids"), name);
  const guint n = json_array_get_length (strings);
  g_assert_cmpuint (json_array_get_length (all_ids), ==, n);

  guint mismatches = 0, round_trip_failures = 0;
  for (guint i = 0; i < n; i++) {
    const char *text = json_array_get_string_element (strings, i);
    gsize n_expected, n_got;
    g_autofree gint32 *expected =
        tf_int32_array (json_array_get_array_element (all_ids, i), &n_expected);
    g_autofree gint32 *got = encode_or_fail (engine, text, &n_got);
    if (n_got != n_expected || memcmp (got, expected, n_got * sizeof (gint32)) != 0) {
      g_autofree char *e = tf_ids_string (expected, n_expected);
      g_autofree char *g = tf_ids_string (got, n_got);
      g_printerr ("%s: string %u \"%.200s\": faster-whisper %.400s, engine %.400s\n", name, i,
                  text, e, g);
      mismatches++;
    }
    g_autofree char *back = whisper_engine_decode_tokens (engine, got, n_got);
    if (strcmp (back, text) != 0) {
      g_printerr ("%s: string %u \"%.200s\" decodes back as \"%.200s\"\n", name, i, text, back);
      round_trip_failures++;
    }
  }
  g_test_message ("%s: %u strings, %u differ from faster-whisper, %u do not decode back", name,
                  n, mismatches, round_trip_failures);
  if (mismatches || round_trip_failures)
    g_test_fail_printf ("%s: %u of %u strings differ from faster-whisper's ids and %u do not "
                        "decode back (listed above)", name, mismatches, n, round_trip_failures);
}

/* The pieces of the GPT-2 pattern, without any vocabulary. */
static void
test_pieces (void)
{
  static const struct { const char *text; const char *pieces[12]; } cases[] = {
    { "I'm here", { "I", "'m", " here" } },
    { "they'll've'd", { "they", "'ll", "'ve", "'d" } },
    { "I'M", { "I", "'", "M" } },
    { " 's", { " '", "s" } },
    { "!!'s", { "!!'", "s" } },
    { "a  b", { "a", " ", " b" } },
    { "a   ", { "a", "   " } },
    { "a \n b", { "a", " \n", " b" } },
    { "\nb", { "\n", "b" } },
    { "x\t\ty", { "x", "\t", "\t", "y" } },
    { " 123 4567", { " 123", " 4567" } },
    { "abc123def", { "abc", "123", "def" } },
    { "hi... ok", { "hi", "...", " ok" } },
    { " ...", { " ..." } },
    { "e\xcc\x81t\xc3\xa9", { "e", "\xcc\x81", "t\xc3\xa9" } },            /* e + U+0301 (Mn) */
    { "a\xc2\xa0" "b", { "a", "\xc2\xa0", "b" } },                         /* U+00A0 is \s */
    { "a\xc2\x85" "b", { "a", "\xc2\x85", "b" } },                         /* U+0085 is \s */
    { "a\x0b" "b", { "a", "\x0b", "b" } },                                 /* U+000B is \s */
    { "\xe2\x85\xab" "x", { "\xe2\x85\xab", "x" } },                       /* U+216B is Nl */
    { "\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c", { "\xe4\xbd\xa0\xe5\xa5\xbd", "\xef\xbc\x8c" } },
    { " ", { " " } },
    { "  ", { "  " } },
  };
  for (gsize c = 0; c < G_N_ELEMENTS (cases); c++) {
    const char *text = cases[c].text;
    const gsize len = strlen (text);
    gsize pos = 0, k = 0;
    while (pos < len) {
      const gsize end = whisper_bpe_piece_end (text, len, pos);
      g_assert_cmpuint (end, >, pos);
      g_autofree char *piece = g_strndup (text + pos, end - pos);
      if (!cases[c].pieces[k] || strcmp (piece, cases[c].pieces[k]) != 0)
        g_error ("\"%s\": piece %" G_GSIZE_FORMAT " is \"%s\", expected \"%s\"", text, k, piece,
                 cases[c].pieces[k] ? cases[c].pieces[k] : "(none)");
      pos = end;
      k++;
    }
    if (cases[c].pieces[k])
      g_error ("\"%s\": %" G_GSIZE_FORMAT " pieces, expected more (\"%s\" next)", text, k,
               cases[c].pieces[k]);
  }
}

/* Special token names in text are ordinary characters. */
static void
test_no_special_tokens (void)
{
  for (gsize m = 0; m < G_N_ELEMENTS (model_names); m++) {
    WhisperEngine *engine = tf_engine (model_names[m]);
    const int eot = whisper_engine_get_info (engine)->token_eot;
    const char *text = "<|endoftext|> <|startoftranscript|><|en|><|0.00|>";
    gsize n;
    g_autofree gint32 *ids = encode_or_fail (engine, text, &n);
    for (gsize i = 0; i < n; i++)
      g_assert_cmpint (ids[i], <, eot);
    g_autofree char *back = whisper_engine_decode_tokens (engine, ids, n);
    g_assert_cmpstr (back, ==, text);
  }
}

static void
test_invalid_utf8 (void)
{
  WhisperEngine *engine = tf_engine ("tiny.en");
  static const struct { const char *text; const char *where; } cases[] = {
    { "\xff", "byte 0xff at offset 0" },
    { "abc\xc3", "byte 0xc3 at offset 3" },           /* truncated sequence */
    { "ok \xc0\xaf", "byte 0xc0 at offset 3" },        /* overlong "/" */
    { "\xed\xa0\x80", "byte 0xed at offset 0" },       /* UTF-16 surrogate */
    { "caf\xc3\xa9 \x80", "byte 0x80 at offset 6" },   /* lone continuation byte */
  };
  for (gsize c = 0; c < G_N_ELEMENTS (cases); c++) {
    g_autoptr (GError) error = NULL;
    gsize n = 99;
    gint32 *ids = whisper_engine_encode_text (engine, cases[c].text, &n, &error);
    g_assert_null (ids);
    g_assert_cmpuint (n, ==, 0);
    g_assert_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING);
    if (!strstr (error->message, "not valid UTF-8") || !strstr (error->message, cases[c].where))
      g_error ("case %" G_GSIZE_FORMAT ": message \"%s\" should say \"not valid UTF-8\" and "
               "\"%s\"", c, error->message, cases[c].where);
  }
}

/* "" and NULL give no ids (and a non-NULL array). */
static void
test_empty (void)
{
  WhisperEngine *engine = tf_engine ("tiny.en");
  gsize n = 99;
  g_autofree gint32 *a = encode_or_fail (engine, "", &n);
  g_assert_nonnull (a);
  g_assert_cmpuint (n, ==, 0);
  g_autoptr (GError) error = NULL;
  g_autofree gint32 *b = whisper_engine_encode_text (engine, NULL, &n, &error);
  g_assert_no_error (error);
  g_assert_nonnull (b);
  g_assert_cmpuint (n, ==, 0);
}

/* Long pieces (one piece of 256 KB) take linear-logarithmic time: this
 * would take minutes with a quadratic merge loop. */
static void
test_long_input (void)
{
  WhisperEngine *engine = tf_engine ("base");
  const gsize len = 256 * 1024;
  g_autofree char *letters = g_malloc (len + 1);
  for (gsize i = 0; i < len; i++)
    letters[i] = "abcdefghijklmnopqrstuvwxyz"[(i * 7 + i / 3) % 26];
  letters[len] = '\0';
  GString *chinese = g_string_new (NULL);
  while (chinese->len < len)
    g_string_append (chinese, "\xe8\xaf\xad\xe9\x9f\xb3\xe8\xaf\x86\xe5\x88\xab\xe6\xa8\xa1\xe5"
                              "\x9e\x8b\xe7\x9a\x84\xe6\x80\xa7\xe8\x83\xbd");
  const char *texts[] = { letters, chinese->str };
  for (gsize t = 0; t < G_N_ELEMENTS (texts); t++) {
    gint64 start = g_get_monotonic_time ();
    gsize n;
    g_autofree gint32 *ids = encode_or_fail (engine, texts[t], &n);
    const double seconds = (g_get_monotonic_time () - start) / 1e6;
    g_test_message ("%" G_GSIZE_FORMAT " bytes in one piece: %" G_GSIZE_FORMAT " ids, %.3f s",
                    strlen (texts[t]), n, seconds);
    g_autofree char *back = whisper_engine_decode_tokens (engine, ids, n);
    g_assert_true (strcmp (back, texts[t]) == 0);
    if (seconds > 20)
      g_test_fail_printf ("encoding %" G_GSIZE_FORMAT " bytes took %.1f s", strlen (texts[t]),
                          seconds);
  }
  g_string_free (chinese, TRUE);
}

/* OpenAI's non_speech_tokens, computed with the engine's encoder. */
static GArray *
derive_non_speech (WhisperEngine *engine)
{
  GHashTable *set = g_hash_table_new (NULL, NULL);
  gsize n;
  g_autofree gint32 *dash = encode_or_fail (engine, " -", &n);
  g_hash_table_add (set, GINT_TO_POINTER (dash[0]));
  g_autofree gint32 *quote = encode_or_fail (engine, " '", &n);
  g_hash_table_add (set, GINT_TO_POINTER (quote[0]));

  GPtrArray *symbols = g_ptr_array_new_with_free_func (g_free);
  const char *singles = "\"#()*+/:;<=>@[\\]^_`{|}~\xe3\x80\x8c\xe3\x80\x8d\xe3\x80\x8e\xe3\x80\x8f";
  for (const char *p = singles; *p; p = g_utf8_next_char (p))
    g_ptr_array_add (symbols, g_strndup (p, g_utf8_next_char (p) - p));
  g_auto (GStrv) multi = g_strsplit ("<< >> <<< >>> -- --- -( -[ (' (\" (( )) ((( ))) [[ ]] {{ }} "
                                     "\xe2\x99\xaa\xe2\x99\xaa \xe2\x99\xaa\xe2\x99\xaa\xe2\x99\xaa",
                                     " ", -1);
  for (int i = 0; multi[i]; i++)
    g_ptr_array_add (symbols, g_strdup (multi[i]));
  const guint n_plain = symbols->len;
  /* ♩♪♫♬♭♮♯: U+2669..U+266F, the first token of each is suppressed */
  for (gunichar c = 0x2669; c <= 0x266F; c++) {
    char buf[8] = { 0 };
    g_unichar_to_utf8 (c, buf);
    g_ptr_array_add (symbols, g_strdup (buf));
  }

  for (guint s = 0; s < symbols->len; s++) {
    const char *symbol = g_ptr_array_index (symbols, s);
    g_autofree char *spaced = g_strconcat (" ", symbol, NULL);
    const char *forms[] = { symbol, spaced };
    for (int f = 0; f < 2; f++) {
      g_autofree gint32 *ids = encode_or_fail (engine, forms[f], &n);
      if (n == 1 || s >= n_plain)
        g_hash_table_add (set, GINT_TO_POINTER (ids[0]));
    }
  }
  g_ptr_array_unref (symbols);

  GArray *out = g_array_new (FALSE, FALSE, sizeof (gint32));
  GHashTableIter iter;
  gpointer key;
  g_hash_table_iter_init (&iter, set);
  while (g_hash_table_iter_next (&iter, &key, NULL)) {
    const gint32 id = GPOINTER_TO_INT (key);
    g_array_append_val (out, id);
  }
  g_hash_table_unref (set);
  return out;
}

static gint
compare_ids (gconstpointer a, gconstpointer b)
{
  const gint32 x = *(const gint32 *) a, y = *(const gint32 *) b;
  return (x > y) - (x < y);
}

/* The derivation gives faster-whisper's list and, with the special tokens
 * the engine adds, the engine's suppress list (its hardcoded arrays). */
static void
test_non_speech (gconstpointer data)
{
  const char *name = data;
  WhisperEngine *engine = tf_engine (name);
  const WhisperEngineInfo *info = whisper_engine_get_info (engine);
  g_autoptr (GArray) derived = derive_non_speech (engine);
  g_array_sort (derived, compare_ids);

  gsize n_ref;
  g_autofree gint32 *ref =
      tf_int32_array (tf_array (tf_object (tf_fixture (), "non_speech_tokens"), name), &n_ref);
  g_autofree char *d = tf_ids_string ((gint32 *) derived->data, derived->len);
  g_autofree char *r = tf_ids_string (ref, n_ref);
  if (derived->len != n_ref || memcmp (derived->data, ref, n_ref * sizeof (gint32)) != 0)
    g_error ("%s: derived non-speech tokens %s, faster-whisper's %s", name, d, r);

  const gint32 specials[] = { info->token_transcribe, info->token_translate, info->token_sot,
                              info->token_sot_prev, info->token_sot_lm, info->token_no_speech };
  g_array_append_vals (derived, specials, G_N_ELEMENTS (specials));
  g_array_sort (derived, compare_ids);
  g_autofree char *with_specials = tf_ids_string ((gint32 *) derived->data, derived->len);
  g_autofree char *engine_list = tf_ids_string (engine->suppress_ids, engine->n_suppress_ids);
  g_assert_cmpstr (with_specials, ==, engine_list);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/bpe/pieces", test_pieces);
  for (gsize m = 0; m < G_N_ELEMENTS (model_names); m++) {
    g_autofree char *ref = g_strdup_printf ("/bpe/reference/%s", model_names[m]);
    g_autofree char *ns = g_strdup_printf ("/bpe/non-speech/%s", model_names[m]);
    g_test_add_data_func (ref, model_names[m], test_reference);
    g_test_add_data_func (ns, model_names[m], test_non_speech);
  }
  g_test_add_func ("/bpe/no-special-tokens", test_no_special_tokens);
  g_test_add_func ("/bpe/invalid-utf8", test_invalid_utf8);
  g_test_add_func ("/bpe/empty", test_empty);
  g_test_add_func ("/bpe/long-input", test_long_input);
  return g_test_run ();
}
