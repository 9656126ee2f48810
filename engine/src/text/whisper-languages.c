/* whisper-languages.c: Whisper's languages (see whisper-languages.h). */
#include "whisper.h"


#include <string.h>

typedef struct {
  const char *code;   /* Whisper's */
  const char *name;   /* OpenAI's, lower case */
  const char *t;      /* ISO 639-2/T, NULL where ISO 639-2 has none */
  const char *b;      /* ISO 639-2/B where it differs from /T */
  const char *iso3;   /* ISO 639-3 where it differs from 639-2/T */
} Language;

/* In token order: LANGUAGES of
 * https://github.com/openai/whisper/blob/main/whisper/tokenizer.py. */
static const Language languages[WHISPER_N_LANGUAGES_MAX] = {
  { "en", "english", "eng", NULL, NULL },
  { "zh", "chinese", "zho", "chi", NULL },
  { "de", "german", "deu", "ger", NULL },
  { "es", "spanish", "spa", NULL, NULL },
  { "ru", "russian", "rus", NULL, NULL },
  { "ko", "korean", "kor", NULL, NULL },
  { "fr", "french", "fra", "fre", NULL },
  { "ja", "japanese", "jpn", NULL, NULL },
  { "pt", "portuguese", "por", NULL, NULL },
  { "tr", "turkish", "tur", NULL, NULL },
  { "pl", "polish", "pol", NULL, NULL },
  { "ca", "catalan", "cat", NULL, NULL },
  { "nl", "dutch", "nld", "dut", NULL },
  { "ar", "arabic", "ara", NULL, NULL },
  { "sv", "swedish", "swe", NULL, NULL },
  { "it", "italian", "ita", NULL, NULL },
  { "id", "indonesian", "ind", NULL, NULL },
  { "hi", "hindi", "hin", NULL, NULL },
  { "fi", "finnish", "fin", NULL, NULL },
  { "vi", "vietnamese", "vie", NULL, NULL },
  { "he", "hebrew", "heb", NULL, NULL },
  { "uk", "ukrainian", "ukr", NULL, NULL },
  { "el", "greek", "ell", "gre", NULL },
  { "ms", "malay", "msa", "may", NULL },
  { "cs", "czech", "ces", "cze", NULL },
  { "ro", "romanian", "ron", "rum", NULL },
  { "da", "danish", "dan", NULL, NULL },
  { "hu", "hungarian", "hun", NULL, NULL },
  { "ta", "tamil", "tam", NULL, NULL },
  { "no", "norwegian", "nor", NULL, NULL },
  { "th", "thai", "tha", NULL, NULL },
  { "ur", "urdu", "urd", NULL, NULL },
  { "hr", "croatian", "hrv", NULL, NULL },
  { "bg", "bulgarian", "bul", NULL, NULL },
  { "lt", "lithuanian", "lit", NULL, NULL },
  { "la", "latin", "lat", NULL, NULL },
  { "mi", "maori", "mri", "mao", NULL },
  { "ml", "malayalam", "mal", NULL, NULL },
  { "cy", "welsh", "cym", "wel", NULL },
  { "sk", "slovak", "slk", "slo", NULL },
  { "te", "telugu", "tel", NULL, NULL },
  { "fa", "persian", "fas", "per", NULL },
  { "lv", "latvian", "lav", NULL, NULL },
  { "bn", "bengali", "ben", NULL, NULL },
  { "sr", "serbian", "srp", NULL, NULL },
  { "az", "azerbaijani", "aze", NULL, NULL },
  { "sl", "slovenian", "slv", NULL, NULL },
  { "kn", "kannada", "kan", NULL, NULL },
  { "et", "estonian", "est", NULL, NULL },
  { "mk", "macedonian", "mkd", "mac", NULL },
  { "br", "breton", "bre", NULL, NULL },
  { "eu", "basque", "eus", "baq", NULL },
  { "is", "icelandic", "isl", "ice", NULL },
  { "hy", "armenian", "hye", "arm", NULL },
  { "ne", "nepali", "nep", NULL, NULL },
  { "mn", "mongolian", "mon", NULL, NULL },
  { "bs", "bosnian", "bos", NULL, NULL },
  { "kk", "kazakh", "kaz", NULL, NULL },
  { "sq", "albanian", "sqi", "alb", NULL },
  { "sw", "swahili", "swa", NULL, NULL },
  { "gl", "galician", "glg", NULL, NULL },
  { "mr", "marathi", "mar", NULL, NULL },
  { "pa", "punjabi", "pan", NULL, NULL },
  { "si", "sinhala", "sin", NULL, NULL },
  { "km", "khmer", "khm", NULL, NULL },
  { "sn", "shona", "sna", NULL, NULL },
  { "yo", "yoruba", "yor", NULL, NULL },
  { "so", "somali", "som", NULL, NULL },
  { "af", "afrikaans", "afr", NULL, NULL },
  { "oc", "occitan", "oci", NULL, NULL },
  { "ka", "georgian", "kat", "geo", NULL },
  { "be", "belarusian", "bel", NULL, NULL },
  { "tg", "tajik", "tgk", NULL, NULL },
  { "sd", "sindhi", "snd", NULL, NULL },
  { "gu", "gujarati", "guj", NULL, NULL },
  { "am", "amharic", "amh", NULL, NULL },
  { "yi", "yiddish", "yid", NULL, NULL },
  { "lo", "lao", "lao", NULL, NULL },
  { "uz", "uzbek", "uzb", NULL, NULL },
  { "fo", "faroese", "fao", NULL, NULL },
  { "ht", "haitian creole", "hat", NULL, NULL },
  { "ps", "pashto", "pus", NULL, NULL },
  { "tk", "turkmen", "tuk", NULL, NULL },
  { "nn", "nynorsk", "nno", NULL, NULL },
  { "mt", "maltese", "mlt", NULL, NULL },
  { "sa", "sanskrit", "san", NULL, NULL },
  { "lb", "luxembourgish", "ltz", NULL, NULL },
  { "my", "myanmar", "mya", "bur", NULL },
  { "bo", "tibetan", "bod", "tib", NULL },
  { "tl", "tagalog", "tgl", NULL, NULL },
  { "mg", "malagasy", "mlg", NULL, NULL },
  { "as", "assamese", "asm", NULL, NULL },
  { "tt", "tatar", "tat", NULL, NULL },
  { "haw", "hawaiian", "haw", NULL, NULL },
  { "ln", "lingala", "lin", NULL, NULL },
  { "ha", "hausa", "hau", NULL, NULL },
  { "ba", "bashkir", "bak", NULL, NULL },
  { "jw", "javanese", "jav", NULL, NULL },
  { "su", "sundanese", "sun", NULL, NULL },
  { "yue", "cantonese", NULL, NULL, "yue" },
};

/* Other names -> Whisper's code: OpenAI's TO_LANGUAGE_CODE aliases
 * (tokenizer.py above), then ISO 639-1 codes of languages Whisper names
 * otherwise. */
static const struct { const char *alias, *code; } aliases[] = {
  { "burmese", "my" },
  { "valencian", "ca" },
  { "flemish", "nl" },
  { "haitian", "ht" },
  { "letzeburgesch", "lb" },
  { "pushto", "ps" },
  { "panjabi", "pa" },
  { "moldavian", "ro" },
  { "moldovan", "ro" },
  { "sinhalese", "si" },
  { "castilian", "es" },
  { "mandarin", "zh" },
  { "jv", "jw" },   /* Javanese: ISO 639-1 "jv"; Whisper keeps the withdrawn "jw" */
  { "iw", "he" },   /* withdrawn ISO 639-1 codes (still in Java's Locale, Android) */
  { "in", "id" },
  { "ji", "yi" },
  { "mo", "ro" },
  { "nb", "no" },   /* Norwegian Bokmål (BCP 47 "nb-NO"): written Norwegian */
};

static int
index_of_code (const char *code)
{
  for (int i = 0; i < WHISPER_N_LANGUAGES_MAX; i++)
    if (strcmp (languages[i].code, code) == 0)
      return i;
  return -1;
}

/* The index `key` (lower case) names, or -1. */
static int
lookup (const char *key)
{
  for (int i = 0; i < WHISPER_N_LANGUAGES_MAX; i++) {
    const Language *l = &languages[i];
    if (strcmp (key, l->code) == 0 || strcmp (key, l->name) == 0 ||
        (l->t && strcmp (key, l->t) == 0) || (l->b && strcmp (key, l->b) == 0) ||
        (l->iso3 && strcmp (key, l->iso3) == 0))
      return i;
  }
  for (gsize i = 0; i < G_N_ELEMENTS (aliases); i++)
    if (strcmp (key, aliases[i].alias) == 0)
      return index_of_code (aliases[i].code);
  return -1;
}

static gboolean
is_ascii_alpha (const char *s)
{
  for (; *s; s++)
    if (!g_ascii_isalpha (*s))
      return FALSE;
  return TRUE;
}

gboolean
whisper_language_parse (const char *text, int n_languages, int *index, GError **error)
{
  *index = -1;
  g_autofree char *key = g_ascii_strdown (text ? text : "", -1);
  g_strstrip (key);
  if (key[0] == '\0' || strcmp (key, "auto") == 0)
    return TRUE;

  /* BCP 47 (https://www.rfc-editor.org/rfc/rfc5646): the primary subtag,
   * 2 or 3 letters, decides; "_" as POSIX locales write it */
  const gsize primary_len = strcspn (key, "-_");
  gboolean is_tag = key[primary_len] != '\0';
  if (is_tag)
    key[primary_len] = '\0';
  int i = -1;
  if (!is_tag || ((primary_len == 2 || primary_len == 3) && is_ascii_alpha (key)))
    i = lookup (key);
  if (i < 0) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "'%s' is not a Whisper language: give a code (\"de\", \"de-DE\", \"deu\"), "
                 "an English name (\"German\") or \"auto\"", text);
    return FALSE;
  }
  if (i >= n_languages) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "'%s' is %s (\"%s\"), which the model does not have: its vocabulary has "
                 "the first %d of Whisper's languages",
                 text, languages[i].name, languages[i].code, MAX (n_languages, 0));
    return FALSE;
  }
  *index = i;
  return TRUE;
}

static const Language *
language_at (int index)
{
  return index >= 0 && index < WHISPER_N_LANGUAGES_MAX ? &languages[index] : NULL;
}

const char *
whisper_language_code (int index)
{
  const Language *l = language_at (index);
  return l ? l->code : NULL;
}

const char *
whisper_language_name (int index)
{
  const Language *l = language_at (index);
  return l ? l->name : NULL;
}

const char *
whisper_language_iso639_2 (int index)
{
  const Language *l = language_at (index);
  return l ? l->t : NULL;
}

const char *
whisper_language_iso639_2b (int index)
{
  const Language *l = language_at (index);
  return l ? (l->b ? l->b : l->t) : NULL;
}

const char *
whisper_language_iso639_3 (int index)
{
  const Language *l = language_at (index);
  return l ? (l->iso3 ? l->iso3 : l->t) : NULL;
}
