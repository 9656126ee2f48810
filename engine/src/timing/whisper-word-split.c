/* whisper-word-split.c: tokens into words and punctuation merging, as
 * faster-whisper does them (split_tokens_on_unicode(),
 * split_tokens_on_spaces() in faster_whisper/tokenizer.py,
 * merge_punctuations() in faster_whisper/transcribe.py,
 * https://github.com/SYSTRAN/faster-whisper). See whisper-words.h. */
#include "whisper-words.h"
#include "whisper-tokenizer.h"

#include <string.h>

/* Python's string.punctuation */
static const char ascii_punctuation[] = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

void
whisper_align_word_free (WhisperAlignWord *w)
{
  if (!w)
    return;
  g_string_free (w->text, TRUE);
  g_free (w);
}

gboolean
whisper_words_split_on_unicode (const char *language)
{
  static const char *const langs[] = { "zh", "ja", "th", "lo", "my", "yue" };
  for (gsize i = 0; language && i < G_N_ELEMENTS (langs); i++)
    if (strcmp (language, langs[i]) == 0)
      return TRUE;
  return FALSE;
}

/* Python's `needle in haystack` for strings (the empty string is in every
 * string). */
static gboolean
py_in (const char *needle, const char *haystack)
{
  return strstr (haystack, needle) != NULL;
}

static char *
py_strip (const char *s)
{
  return g_strstrip (g_strdup (s));
}

static WhisperAlignWord *
word_new (const char *text, int tok_start, int n_tok)
{
  WhisperAlignWord *w = g_new0 (WhisperAlignWord, 1);
  w->text = g_string_new (text);
  w->tok_start = tok_start;
  w->n_tok = n_tok;
  return w;
}

/* Characters of UTF-8 text (decoded as the tokenizer decodes, invalid
 * sequences as U+FFFD). */
static gunichar *
to_chars (const char *text, glong *n)
{
  return g_utf8_to_ucs4_fast (text, -1, n);
}

static GPtrArray *
split_on_unicode (const WhisperTimingModel *tm, const gint32 *tokens, int n)
{
  GPtrArray *words = g_ptr_array_new_with_free_func ((GDestroyNotify) whisper_align_word_free);
  const int eot = tm->info->token_eot;
  g_autofree char *full_text = whisper_tokens_to_text (tm->tokens, tm->n_tokens, eot, tokens, n);
  glong n_full;
  g_autofree gunichar *full = to_chars (full_text, &n_full);
  glong offset = 0;
  int first = 0;
  for (int i = 0; i < n; i++) {
    g_autofree char *decoded = whisper_tokens_to_text (tm->tokens, tm->n_tokens, eot,
                                                       tokens + first, i + 1 - first);
    glong n_dec;
    g_autofree gunichar *chars = to_chars (decoded, &n_dec);
    glong bad = -1;
    for (glong c = 0; c < n_dec; c++)
      if (chars[c] == 0xFFFD) {
        bad = c + offset;
        break;
      }
    if (bad < 0 || (bad < n_full && full[bad] == 0xFFFD)) {
      g_ptr_array_add (words, word_new (decoded, first, i + 1 - first));
      first = i + 1;
      offset += n_dec;
    }
  }
  return words;
}

GPtrArray *
whisper_words_split (const WhisperTimingModel *tm, const gint32 *tokens, int n, gboolean on_unicode)
{
  GPtrArray *sub = split_on_unicode (tm, tokens, n);
  if (on_unicode)
    return sub;
  GPtrArray *words = g_ptr_array_new_with_free_func ((GDestroyNotify) whisper_align_word_free);
  for (guint i = 0; i < sub->len; i++) {
    WhisperAlignWord *s = g_ptr_array_index (sub, i);
    const gboolean special = tokens[s->tok_start] >= tm->info->token_eot;
    const gboolean with_space = s->text->str[0] == ' ';
    g_autofree char *stripped = py_strip (s->text->str);
    const gboolean punctuation = py_in (stripped, ascii_punctuation);
    if (special || with_space || punctuation || words->len == 0) {
      g_ptr_array_add (words, word_new (s->text->str, s->tok_start, s->n_tok));
    } else {
      WhisperAlignWord *last = g_ptr_array_index (words, words->len - 1);
      g_string_append (last->text, s->text->str);
      last->n_tok += s->n_tok;
    }
  }
  g_ptr_array_unref (sub);
  return words;
}

void
whisper_words_merge_punctuations (GPtrArray *words, const char *prepended, const char *appended)
{
  const int n = words->len;
  /* prepended punctuation joins the following word */
  for (int i = n - 2, j = n - 1; i >= 0; i--) {
    WhisperAlignWord *previous = g_ptr_array_index (words, i);
    WhisperAlignWord *following = g_ptr_array_index (words, j);
    g_autofree char *stripped = py_strip (previous->text->str);
    if (previous->text->str[0] == ' ' && py_in (stripped, prepended)) {
      g_string_prepend (following->text, previous->text->str);
      if (previous->n_tok > 0)
        following->tok_start = previous->tok_start;
      following->n_tok += previous->n_tok;
      g_string_truncate (previous->text, 0);
      previous->n_tok = 0;
    } else {
      j = i;
    }
  }
  /* appended punctuation joins the previous word */
  for (int i = 0, j = 1; j < n; j++) {
    WhisperAlignWord *previous = g_ptr_array_index (words, i);
    WhisperAlignWord *following = g_ptr_array_index (words, j);
    const gsize len = previous->text->len;
    const gboolean ends_with_space = len > 0 && previous->text->str[len - 1] == ' ';
    if (!ends_with_space && py_in (following->text->str, appended)) {
      g_string_append (previous->text, following->text->str);
      if (previous->n_tok == 0)
        previous->tok_start = following->tok_start;
      previous->n_tok += following->n_tok;
      g_string_truncate (following->text, 0);
      following->n_tok = 0;
    } else {
      i = j;
    }
  }
}
