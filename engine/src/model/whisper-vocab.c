/* whisper-vocab.c: GPT-2 byte-level mapping and special-token names.
 * See whisper-vocab.h. */
#include "whisper-vocab.h"

#include <string.h>

/* n_vocab of an English-only model; multilingual models have one more
 * (the empty token at 50256) and large-v3 one more again (a 100th
 * language). */
#define N_VOCAB_ENGLISH_ONLY 51864
#define N_VOCAB_BASE_FOR_LANGUAGES 51765
#define N_TEXT_TOKENS_ENGLISH_ONLY 50256
#define N_SPECIALS_AFTER_LANGUAGES 6 /* translate .. notimestamps */

static const char *const language_codes[] = {
  "en", "zh", "de", "es", "ru", "ko", "fr", "ja", "pt", "tr", "pl", "ca", "nl",
  "ar", "sv", "it", "id", "hi", "fi", "vi", "he", "uk", "el", "ms", "cs", "ro",
  "da", "hu", "ta", "no", "th", "ur", "hr", "bg", "lt", "la", "mi", "ml", "cy",
  "sk", "te", "fa", "lv", "bn", "sr", "az", "sl", "kn", "et", "mk", "br", "eu",
  "is", "hy", "ne", "mn", "bs", "kk", "sq", "sw", "gl", "mr", "pa", "si", "km",
  "sn", "yo", "so", "af", "oc", "ka", "be", "tg", "sd", "gu", "am", "yi", "lo",
  "uz", "fo", "ht", "ps", "tk", "nn", "mt", "sa", "lb", "my", "bo", "tl", "mg",
  "as", "tt", "haw", "ln", "ha", "ba", "jw", "su", "yue",
};

/* A byte stands for itself when it is a printable Latin-1 character other
 * than the soft hyphen. */
static gboolean
byte_is_printable (guint8 byte)
{
  return (byte >= 0x21 && byte <= 0x7e) || (byte >= 0xa1 && byte <= 0xac) ||
         byte >= 0xae;
}

gunichar
whisper_vocab_byte_to_unichar (guint8 byte)
{
  if (byte_is_printable (byte))
    return byte;

  /* Rank of this byte among the non-printable ones, in ascending order:
   * 0x00-0x20 (33 bytes), 0x7f-0xa0 (34 bytes), 0xad (1 byte). */
  guint rank;
  if (byte <= 0x20)
    rank = byte;
  else if (byte <= 0xa0)
    rank = 33 + (byte - 0x7f);
  else
    rank = 33 + 34;
  return 0x100 + rank;
}

int
whisper_vocab_unichar_to_byte (gunichar c)
{
  if (c < 0x100)
    return byte_is_printable ((guint8) c) ? (int) c : -1;
  if (c >= 0x100 + 68)
    return -1;

  guint rank = c - 0x100;
  if (rank < 33)
    return (int) rank;
  if (rank < 33 + 34)
    return (int) (0x7f + rank - 33);
  return 0xad;
}

char *
whisper_vocab_bytes_to_byte_level (const guint8 *data, gsize len)
{
  GString *out = g_string_sized_new (len * 2 + 1);
  for (gsize i = 0; i < len; i++)
    g_string_append_unichar (out, whisper_vocab_byte_to_unichar (data[i]));
  return g_string_free (out, FALSE);
}

GBytes *
whisper_vocab_bytes_from_byte_level (const char *text, gsize len,
                                     gunichar *bad_char)
{
  GByteArray *out = g_byte_array_sized_new (len);
  const char *p = text;
  const char *end = text + len;

  while (p < end) {
    gunichar c = g_utf8_get_char_validated (p, end - p);
    if (c == (gunichar) -1 || c == (gunichar) -2) {
      if (bad_char)
        *bad_char = (gunichar) -1;
      g_byte_array_unref (out);
      return NULL;
    }
    int byte = whisper_vocab_unichar_to_byte (c);
    if (byte < 0) {
      if (bad_char)
        *bad_char = c;
      g_byte_array_unref (out);
      return NULL;
    }
    guint8 b = (guint8) byte;
    g_byte_array_append (out, &b, 1);
    p = g_utf8_next_char (p);
  }
  return g_byte_array_free_to_bytes (out);
}

gboolean
whisper_vocab_is_special_name (const char *text, gsize len)
{
  return len >= 4 && memcmp (text, "<|", 2) == 0 &&
         memcmp (text + len - 2, "|>", 2) == 0;
}

int
whisper_vocab_num_languages (int n_vocab)
{
  if (n_vocab < N_VOCAB_ENGLISH_ONLY)
    return -1;
  gboolean multilingual = n_vocab > N_VOCAB_ENGLISH_ONLY;
  int n = n_vocab - N_VOCAB_BASE_FOR_LANGUAGES - (multilingual ? 1 : 0);
  if (n > (int) G_N_ELEMENTS (language_codes))
    return -1;
  return n;
}

int
whisper_vocab_eot_id (int n_vocab)
{
  if (whisper_vocab_num_languages (n_vocab) < 0)
    return -1;
  return n_vocab > N_VOCAB_ENGLISH_ONLY ? N_TEXT_TOKENS_ENGLISH_ONLY + 1
                                        : N_TEXT_TOKENS_ENGLISH_ONLY;
}

const char *
whisper_vocab_language_code (int index)
{
  if (index < 0 || index >= (int) G_N_ELEMENTS (language_codes))
    return NULL;
  return language_codes[index];
}

char *
whisper_vocab_special_name (int n_vocab, int id)
{
  int n_languages = whisper_vocab_num_languages (n_vocab);
  int eot = whisper_vocab_eot_id (n_vocab);
  if (n_languages < 0 || id < eot || id >= n_vocab)
    return NULL;

  int sot = eot + 1;
  int after_languages = sot + 1 + n_languages;
  static const char *const names_after_languages[N_SPECIALS_AFTER_LANGUAGES] = {
    "translate", "transcribe", "startoflm", "startofprev", NULL /* no speech */,
    "notimestamps",
  };

  if (id == eot)
    return g_strdup ("<|endoftext|>");
  if (id == sot)
    return g_strdup ("<|startoftranscript|>");
  /* The English-only Hugging Face vocabularies (and so the CTranslate2
   * ones converted from them) keep two legacy names: "iw" for Hebrew and
   * "nocaptions" for no-speech. */
  gboolean legacy_names = n_vocab == N_VOCAB_ENGLISH_ONLY;
  if (id < after_languages) {
    const char *code = language_codes[id - sot - 1];
    if (legacy_names && strcmp (code, "he") == 0)
      code = "iw";
    return g_strdup_printf ("<|%s|>", code);
  }
  if (id < after_languages + N_SPECIALS_AFTER_LANGUAGES) {
    const char *name = names_after_languages[id - after_languages];
    if (name == NULL)
      name = legacy_names ? "nocaptions" : "nospeech";
    return g_strdup_printf ("<|%s|>", name);
  }

  int timestamp_index = id - (after_languages + N_SPECIALS_AFTER_LANGUAGES);
  char seconds[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd (seconds, sizeof seconds, "%.2f", timestamp_index * 0.02);
  return g_strdup_printf ("<|%s|>", seconds);
}
