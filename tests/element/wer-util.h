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

/* Whether `lang` (a language code such as whispersink's language-code,
 * case-insensitive: "en", "en-GB", "en_US" or "english") is English, the
 * one language whose numbers wer_words_lang () reads. */
gboolean wer_lang_is_english (const gchar *lang);

/* wer_words () for a text in `lang`. English: every number, written in
 * digits or in words, in one form, digits, as Whisper's own evaluations
 * write them (EnglishNumberNormalizer of
 * https://github.com/openai/whisper/blob/main/whisper/normalizers/english.py;
 * this is a smaller rule set, written here):
 *  - cardinals: "three hundred and twenty", "three hundred twenty" and
 *    "320" are "320"; "fifty-two" and "fifty two" are "52"; "40,000",
 *    "forty thousand" and "40 thousand" are "40000"; "a hundred" is "100";
 *    the "and" after "hundred", "thousand", ... only before more of the
 *    number; "zero" is "0". A number does not go on over a sentence or
 *    clause mark (. , ; : ! ?), except ":" and "." between digits.
 *  - "one" and "1" alone are "one" (the pronoun "the old one" stays a
 *    word; "twenty one" is "21", "one hundred" "100").
 *  - two numbers in a row, the first of 1 to 99, the second of 10 to 99,
 *    are one: years and times ("nineteen nineteen", "one thousand nine
 *    hundred and nineteen" and "1919" are "1919"; "ten thirty" and "10:30"
 *    are "1030"; "seven forty five", "7:45", "7.45" and "745" are "745");
 *    so are a number of 1 to 99 and "oh" and a digit, or a two-digit word
 *    starting with 0 ("nineteen oh five", "1905"; "10:05", "ten oh five":
 *    "1005"). The price: "3.50" is "350" (decimals are not read).
 *  - ordinals in digits with their suffix: "first" and "1st" are "1st",
 *    "twenty second" "22nd", "hundredth" "100th"; the decades: "sixties"
 *    "60s", "nineteen sixties", "'60s"... "1960s".
 *  - "%" and "per cent" are "percent"; "-5" is "minus 5"; "$5", "£5",
 *    "€5" are "5 dollars", "5 pounds", "5 euros" ("$1": "one dollar").
 * Not read: decimals ("three point five" stays "3 point 5", "3.5" is
 * "3 5"), fractions, "half past", "a dozen", "hundreds" and "thousands"
 * alone. Texts without numbers get the words of wer_words ().
 * Other languages (and NULL): exactly wer_words (). */
gchar **wer_words_lang (const gchar *text, const gchar *lang);

/* wer_percent () over wer_words_lang () (`lang` NULL: wer_percent ()). */
double wer_percent_lang (const gchar *lang, const gchar *reference,
    const gchar *hypothesis, guint *errors, guint *ref_words);

G_END_DECLS
