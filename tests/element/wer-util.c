/* wer-util.c: word error rate of a transcript (see wer-util.h). Moved out
 * of live-wer.c so that live-commit.c scores its transcripts the same way. */
#include "wer-util.h"

#include <string.h>

gchar **
wer_words (const gchar *text)
{
  GString *s = g_string_new (NULL);
  g_autofree gchar *lower = g_utf8_strdown (text, -1);
  gchar **raw;
  GPtrArray *out = g_ptr_array_new ();
  const gchar *p;
  guint i;

  /* letters of any script ("fährt" is one word), not only ASCII */
  for (p = lower; *p; p = g_utf8_next_char (p)) {
    gunichar ch = g_utf8_get_char (p);
    if (g_unichar_isalnum (ch) || ch == '\'')
      g_string_append_unichar (s, ch);
    else
      g_string_append_c (s, ' ');
  }
  raw = g_strsplit (s->str, " ", -1);
  for (i = 0; raw[i]; i++)
    if (*raw[i] != '\0')
      g_ptr_array_add (out, g_strdup (raw[i]));
  g_ptr_array_add (out, NULL);
  g_strfreev (raw);
  g_string_free (s, TRUE);
  return (gchar **) g_ptr_array_free (out, FALSE);
}

/* Two rows of the Levenshtein table over words. */
guint
wer_errors (gchar **ref, gchar **hyp)
{
  guint n = g_strv_length (ref), m = g_strv_length (hyp), i, j;
  guint *prev = g_new (guint, m + 1), *cur = g_new (guint, m + 1), *tmp, d;

  for (j = 0; j <= m; j++)
    prev[j] = j;
  for (i = 1; i <= n; i++) {
    cur[0] = i;
    for (j = 1; j <= m; j++) {
      guint sub = prev[j - 1] + (strcmp (ref[i - 1], hyp[j - 1]) != 0);
      cur[j] = MIN (sub, MIN (prev[j] + 1, cur[j - 1] + 1));
    }
    tmp = prev;
    prev = cur;
    cur = tmp;
  }
  d = prev[m];
  g_free (prev);
  g_free (cur);
  return d;
}

double
wer_percent (const gchar *reference, const gchar *hypothesis, guint *errors,
    guint *ref_words)
{
  gchar **ref = wer_words (reference), **hyp = wer_words (hypothesis);
  guint e = wer_errors (ref, hyp), n = g_strv_length (ref);
  double pct = n ? 100.0 * e / n : 100.0 * e;

  if (errors)
    *errors = e;
  if (ref_words)
    *ref_words = n;
  g_strfreev (ref);
  g_strfreev (hyp);
  return pct;
}
