/* test-languages.c: Whisper's language table (engine/src/text/whisper-languages.c):
 * its codes against faster-whisper's (_LANGUAGE_CODES, in the fixture
 * tests/engine/fixtures/tokenizer-reference.json) and against the
 * vocabularies of tiny.en and base (<|code|> is token sot + 1 + i), its
 * three-letter codes against Debian's iso-codes data
 * (/usr/share/iso-codes/json, package iso-codes), and the parser: every
 * accepted form, and the errors. */
#include "tokenizer-fixture.h"
#include "whisper-languages.h"

#include <string.h>

/* Languages of the vocabularies here (all but Cantonese). */
#define N_LANGUAGES_99 99

static int
n_table (void)
{
  int n = 0;
  while (whisper_language_code (n))
    n++;
  return n;
}

static void
test_table (void)
{
  g_assert_cmpint (n_table (), ==, WHISPER_N_LANGUAGES_MAX);
  g_assert_null (whisper_language_code (-1));
  g_assert_null (whisper_language_name (WHISPER_N_LANGUAGES_MAX));
  g_assert_null (whisper_language_iso639_2 (WHISPER_N_LANGUAGES_MAX));
  g_assert_null (whisper_language_iso639_2b (-1));
  g_assert_null (whisper_language_iso639_3 (-1));
  g_assert_cmpstr (whisper_language_code (0), ==, "en");
  g_assert_cmpstr (whisper_language_code (2), ==, "de");
  g_assert_cmpstr (whisper_language_name (2), ==, "german");
  g_assert_cmpstr (whisper_language_iso639_2 (2), ==, "deu");
  g_assert_cmpstr (whisper_language_iso639_2b (2), ==, "ger");
  g_assert_cmpstr (whisper_language_iso639_3 (2), ==, "deu");
  g_assert_cmpstr (whisper_language_code (99), ==, "yue");
  g_assert_null (whisper_language_iso639_2 (99));
  g_assert_cmpstr (whisper_language_iso639_3 (99), ==, "yue");
}

/* The same codes as faster-whisper's (which sorts them), in the order of
 * the base vocabulary's tokens (the fixture reads it from tokenizer.json). */
static void
test_faster_whisper_codes (void)
{
  JsonObject *fixture = tf_fixture ();
  JsonArray *sorted = tf_array (fixture, "faster_whisper_language_codes");
  g_assert_cmpuint (json_array_get_length (sorted), ==, WHISPER_N_LANGUAGES_MAX);
  GHashTable *ours = g_hash_table_new (g_str_hash, g_str_equal);
  for (int i = 0; i < WHISPER_N_LANGUAGES_MAX; i++)
    g_hash_table_add (ours, (gpointer) whisper_language_code (i));
  for (guint i = 0; i < json_array_get_length (sorted); i++) {
    const char *code = json_array_get_string_element (sorted, i);
    if (!g_hash_table_contains (ours, code))
      g_error ("faster-whisper's language \"%s\" is not in the table", code);
  }
  g_hash_table_unref (ours);

  JsonArray *order = tf_array (tf_object (fixture, "language_codes_token_order"), "codes");
  g_assert_cmpuint (json_array_get_length (order), ==, N_LANGUAGES_99);
  for (guint i = 0; i < json_array_get_length (order); i++)
    if (strcmp (json_array_get_string_element (order, i), whisper_language_code (i)) != 0)
      g_error ("language %u: tokenizer.json has \"%s\", the table \"%s\"", i,
               json_array_get_string_element (order, i), whisper_language_code (i));
}

/* Token sot + 1 + i of the engine's vocabulary is <|code|>. */
static void
test_vocabulary (gconstpointer data)
{
  WhisperEngine *engine = tf_engine (data);
  const WhisperEngineInfo *info = whisper_engine_get_info (engine);
  const int n_languages = info->token_translate - info->token_sot - 1;
  g_assert_cmpint (n_languages, ==, N_LANGUAGES_99);
  for (int i = 0; i < n_languages; i++) {
    g_autoptr (GBytes) bytes = whisper_engine_token_bytes (engine, info->token_sot + 1 + i);
    g_assert_nonnull (bytes);
    gsize size;
    const char *got = g_bytes_get_data (bytes, &size);
    g_autofree char *want = g_strdup_printf ("<|%s|>", whisper_language_code (i));
    /* tiny.en's vocabulary (from Hugging Face's English-only Whisper
     * tokenizer) names Hebrew by the withdrawn ISO 639-1 code "iw"; the token
     * is the same: sot + 1 + 20 */
    if (strcmp (whisper_language_code (i), "he") == 0 && size == 6 &&
        memcmp (got, "<|iw|>", 6) == 0 && !info->is_multilingual)
      continue;
    if (size != strlen (want) || memcmp (got, want, size) != 0)
      g_error ("%s: token %d is \"%.*s\", the table says %s", (const char *) data,
               info->token_sot + 1 + i, (int) size, got, want);
  }
}

static int
parse_ok (const char *text, int n_languages)
{
  g_autoptr (GError) error = NULL;
  int index = -2;
  if (!whisper_language_parse (text, n_languages, &index, &error))
    g_error ("\"%s\" does not parse: %s", text, error->message);
  return index;
}

static void
test_parse_forms (void)
{
  for (int i = 0; i < WHISPER_N_LANGUAGES_MAX; i++) {
    const char *code = whisper_language_code (i), *name = whisper_language_name (i);
    g_autofree char *upper = g_ascii_strup (code, -1);
    g_autofree char *name_upper = g_ascii_strup (name, -1);
    g_autofree char *title = g_strdup (name);
    title[0] = g_ascii_toupper (title[0]);
    g_autofree char *region = g_strdup_printf ("%s-%s", code, "DE");
    g_autofree char *posix = g_strdup_printf ("%s_%s.UTF-8", code, "DE");
    g_autofree char *script = g_strdup_printf ("%s-Latn-DE", upper);
    g_autofree char *spaced = g_strdup_printf ("  %s\t", code);
    const char *forms[] = { code, upper, name, name_upper, title, region, posix, script, spaced,
                            whisper_language_iso639_2 (i), whisper_language_iso639_2b (i),
                            whisper_language_iso639_3 (i) };
    for (gsize f = 0; f < G_N_ELEMENTS (forms); f++) {
      if (!forms[f])
        continue;
      const int got = parse_ok (forms[f], WHISPER_N_LANGUAGES_MAX);
      if (got != i)
        g_error ("\"%s\" parses as %d (%s), expected %d (%s)", forms[f], got,
                 whisper_language_code (got), i, code);
    }
  }
  g_assert_cmpint (parse_ok ("ger", 99), ==, 2);
  g_assert_cmpint (parse_ok ("deu", 99), ==, 2);
  g_assert_cmpint (parse_ok ("de-Latn-DE", 99), ==, 2);
  g_assert_cmpint (parse_ok ("Haitian Creole", 99), ==, 80);
  g_assert_cmpint (parse_ok ("zh-HK", 99), ==, 1);   /* the primary subtag decides */
  g_assert_cmpint (parse_ok ("yue-HK", 100), ==, 99);
}

static void
test_parse_aliases (void)
{
  static const struct { const char *alias, *code; } cases[] = {
    { "burmese", "my" }, { "valencian", "ca" }, { "flemish", "nl" }, { "haitian", "ht" },
    { "letzeburgesch", "lb" }, { "pushto", "ps" }, { "panjabi", "pa" },
    { "moldavian", "ro" }, { "moldovan", "ro" }, { "sinhalese", "si" },
    { "castilian", "es" }, { "mandarin", "zh" }, { "Mandarin", "zh" },
    { "jv", "jw" }, { "jv-ID", "jw" }, { "iw", "he" }, { "in", "id" }, { "ji", "yi" },
    { "mo", "ro" }, { "nb-NO", "no" },
  };
  for (gsize c = 0; c < G_N_ELEMENTS (cases); c++) {
    const int got = parse_ok (cases[c].alias, 99);
    g_assert_cmpstr (whisper_language_code (got), ==, cases[c].code);
  }
}

static void
test_parse_auto (void)
{
  const char *forms[] = { NULL, "", "auto", "AUTO", " Auto ", "  " };
  for (gsize f = 0; f < G_N_ELEMENTS (forms); f++)
    g_assert_cmpint (parse_ok (forms[f], 99), ==, -1);
}

static void
test_parse_errors (void)
{
  const char *unknown[] = { "xx", "klingon", "german-DE", "-de", "d", "deutsch", "en-",
                            "e1", "zz-DE", "c++", "\xc3\xa9" };
  for (gsize c = 0; c < G_N_ELEMENTS (unknown); c++) {
    g_autoptr (GError) error = NULL;
    int index = 5;
    if (strcmp (unknown[c], "en-") == 0) {
      /* a trailing separator: the primary subtag still decides */
      g_assert_cmpint (parse_ok (unknown[c], 99), ==, 0);
      continue;
    }
    g_assert_false (whisper_language_parse (unknown[c], 99, &index, &error));
    g_assert_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING);
    g_assert_cmpint (index, ==, -1);
    g_autofree char *quoted = g_strdup_printf ("'%s'", unknown[c]);
    if (!strstr (error->message, quoted) || !strstr (error->message, "not a Whisper language"))
      g_error ("\"%s\": message \"%s\" should name it and say it is not a Whisper language",
               unknown[c], error->message);
  }

  /* Cantonese on a 99-language vocabulary */
  const char *cantonese[] = { "yue", "Cantonese", "yue-HK" };
  for (gsize c = 0; c < G_N_ELEMENTS (cantonese); c++) {
    g_autoptr (GError) error = NULL;
    int index = 5;
    g_assert_false (whisper_language_parse (cantonese[c], 99, &index, &error));
    g_assert_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING);
    g_assert_cmpint (index, ==, -1);
    g_autofree char *quoted = g_strdup_printf ("'%s'", cantonese[c]);
    if (!strstr (error->message, quoted) || !strstr (error->message, "model does not have") ||
        !strstr (error->message, "99"))
      g_error ("\"%s\": message \"%s\" should name it, say the model does not have it and "
               "how many languages it has", cantonese[c], error->message);
  }
  g_assert_cmpint (parse_ok ("yue", 100), ==, 99);
}

/* ---------------------------------------------------------------------- */
/* ISO 639 codes against Debian's iso-codes */

static JsonArray *
iso_codes (const char *file, const char *member, JsonParser **keep)
{
  g_autofree char *path = g_build_filename ("/usr/share/iso-codes/json", file, NULL);
  g_autoptr (GError) error = NULL;
  *keep = json_parser_new_immutable ();
  if (!json_parser_load_from_file (*keep, path, &error))
    g_error ("cannot read %s (install Debian's iso-codes package, tools/install-deps.sh): %s",
             path, error->message);
  JsonObject *root = json_node_get_object (json_parser_get_root (*keep));
  return json_object_get_array_member (root, member);
}

static const char *
entry_string (JsonObject *entry, const char *member)
{
  return json_object_has_member (entry, member) ? json_object_get_string_member (entry, member)
                                                : NULL;
}

static JsonObject *
find_entry (JsonArray *entries, const char *member, const char *value)
{
  for (guint i = 0; i < json_array_get_length (entries); i++) {
    JsonObject *e = json_array_get_object_element (entries, i);
    const char *v = entry_string (e, member);
    if (v && strcmp (v, value) == 0)
      return e;
  }
  return NULL;
}

static void
test_iso_codes (void)
{
  g_autoptr (JsonParser) p2 = NULL, p3 = NULL;
  JsonArray *part2 = iso_codes ("iso_639-2.json", "639-2", &p2);
  JsonArray *part3 = iso_codes ("iso_639-3.json", "639-3", &p3);
  for (int i = 0; i < WHISPER_N_LANGUAGES_MAX; i++) {
    const char *code = whisper_language_code (i);
    /* ISO 639-1 of Javanese is "jv" (Whisper's "jw" is withdrawn) */
    const char *alpha_2 = strcmp (code, "jw") == 0 ? "jv" : code;
    const char *t = whisper_language_iso639_2 (i), *b = whisper_language_iso639_2b (i);
    const char *iso3 = whisper_language_iso639_3 (i);
    JsonObject *e2 = find_entry (part2, "alpha_2", alpha_2);
    if (strlen (code) == 2) {
      if (!e2)
        g_error ("%s: ISO 639-2 has no language with ISO 639-1 code %s", code, alpha_2);
      const char *want_b = entry_string (e2, "bibliographic");
      if (g_strcmp0 (t, entry_string (e2, "alpha_3")) != 0 ||
          g_strcmp0 (b, want_b ? want_b : entry_string (e2, "alpha_3")) != 0)
        g_error ("%s: the table has 639-2/T %s, /B %s; iso-codes has %s, %s (%s)", code, t, b,
                 entry_string (e2, "alpha_3"), want_b ? want_b : "the same",
                 entry_string (e2, "name"));
    } else if (t) {
      /* haw: no ISO 639-1 code; its 639-2 code is itself */
      JsonObject *e = find_entry (part2, "alpha_3", t);
      if (!e || entry_string (e, "alpha_2"))
        g_error ("%s: ISO 639-2 should have %s without a two-letter code", code, t);
    } else {
      /* yue: not in ISO 639-2 */
      g_assert_null (find_entry (part2, "alpha_3", iso3));
    }
    JsonObject *e3 = find_entry (part3, "alpha_3", iso3);
    if (!e3)
      g_error ("%s: ISO 639-3 has no code %s", code, iso3);
    if (strlen (code) == 2 && g_strcmp0 (entry_string (e3, "alpha_2"), alpha_2) != 0)
      g_error ("%s: ISO 639-3 %s has the two-letter code %s", code, iso3,
               entry_string (e3, "alpha_2"));
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/languages/table", test_table);
  g_test_add_func ("/languages/faster-whisper", test_faster_whisper_codes);
  g_test_add_data_func ("/languages/vocabulary/tiny.en", "tiny.en", test_vocabulary);
  g_test_add_data_func ("/languages/vocabulary/base", "base", test_vocabulary);
  g_test_add_func ("/languages/parse/forms", test_parse_forms);
  g_test_add_func ("/languages/parse/aliases", test_parse_aliases);
  g_test_add_func ("/languages/parse/auto", test_parse_auto);
  g_test_add_func ("/languages/parse/errors", test_parse_errors);
  g_test_add_func ("/languages/iso-codes", test_iso_codes);
  return g_test_run ();
}
