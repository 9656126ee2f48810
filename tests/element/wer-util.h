/* wer-util.h: word error rate of a transcript, for the live measurement
 * programs (live-wer.c, live-commit.c). GLib only, no gst-check: those
 * programs are not tests and do not link the test helpers. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The words of `text` (UTF-8) for scoring: lower-cased, every character
 * other than a letter or digit (any script) or an ASCII apostrophe a
 * separator, empty words dropped.
 * NULL-terminated; free with g_strfreev (). */
gchar **wer_words (const gchar *text);

/* Word-level edit distance (substitutions + deletions + insertions) from
 * `ref` to `hyp`, both as wer_words () makes them. */
guint wer_errors (gchar **ref, gchar **hyp);

/* The word error rate of `hypothesis` against `reference` in percent
 * (errors over the reference's words; 0 for two empty texts, 100 per
 * inserted word for an empty reference); the counts in `errors` and
 * `ref_words` when not NULL. */
double wer_percent (const gchar *reference, const gchar *hypothesis, guint *errors,
    guint *ref_words);

G_END_DECLS
