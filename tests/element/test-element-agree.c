/* test-element-agree.c: server-stream's commit policy without a server
 * (gstwhisperagree.c, LocalAgreement-2 over words without times): the
 * first answer from a window start commits nothing; a word is committed
 * once the answer being read and the previous one agree on it and on
 * every word before it, without case and punctuation; the last word of a
 * partial answer waits; a word that changed blocks the rest; a new window
 * start forgets the last answer; the end of a carry commits the rest and
 * gives its text for the prompt; times are the text's place at the last
 * answer's characters per second.
 *
 * The answers are written by hand; each expected value follows from the
 * rules in gstwhisperagree.h. */
#include <gst/check/gstcheck.h>
#include <string.h>

#include "task/gstwhisperagree.h"

static GArray *
words_new (void)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (GstWhisperAgreedWord));

  g_array_set_clear_func (a, gst_whisper_agreed_word_clear);
  return a;
}

/* The committed words' texts, joined by spaces. */
static gchar *
joined (GArray *out)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < out->len; i++)
    g_string_append_printf (s, "%s%s", i ? " " : "",
        g_array_index (out, GstWhisperAgreedWord, i).text);
  return g_string_free (s, FALSE);
}

GST_START_TEST (test_agreement_while_reading)
{
  GstWhisperAgree a;
  GArray *out = words_new ();
  gchar *t;

  gst_whisper_agree_init (&a);
  gst_whisper_agree_begin (&a, 32000);
  /* nothing to agree with yet */
  fail_unless_equals_int (gst_whisper_agree_update (&a, " And so my fellow", TRUE, 2.0, out),
      0);
  gst_whisper_agree_keep (&a, " And so my fellow", 2.0);
  /* a partial answer: its last word, "fel", may still grow */
  fail_unless_equals_int (gst_whisper_agree_update (&a, " And so my fel", FALSE, 4.0, out), 3);
  /* nor is "fellow" the last word for sure until more comes */
  fail_unless_equals_int (gst_whisper_agree_update (&a, " And so my fellow", FALSE, 4.0, out),
      0);
  /* complete: "fellow" agrees, "Americans" has nothing to agree with */
  fail_unless_equals_int (gst_whisper_agree_update (&a, " And so my fellow Americans,", TRUE,
          4.0, out), 1);
  t = joined (out);
  fail_unless_equals_string (t, "And so my fellow");
  g_free (t);
  g_array_unref (out);
  gst_whisper_agree_clear (&a);
}

GST_END_TEST;

GST_START_TEST (test_changed_word_blocks)
{
  GstWhisperAgree a;
  GArray *out = words_new ();
  gchar *t;

  gst_whisper_agree_init (&a);
  gst_whisper_agree_begin (&a, 16000);
  gst_whisper_agree_keep (&a, " Ask not what you are coming Country,", 3.0);
  /* case and punctuation do not count; "your" against "you" stops it */
  fail_unless_equals_int (gst_whisper_agree_update (&a,
          " ask not, what your country can", TRUE, 4.0, out), 3);
  t = joined (out);
  fail_unless_equals_string (t, "ask not, what");
  g_free (t);
  /* a new window start: nothing to agree with */
  gst_whisper_agree_begin (&a, 48000);
  fail_unless_equals_int (gst_whisper_agree_update (&a, " ask not what you are", TRUE, 4.0,
          out), 0);
  g_array_unref (out);
  gst_whisper_agree_clear (&a);
}

GST_END_TEST;

GST_START_TEST (test_finish_and_times)
{
  GstWhisperAgree a;
  GArray *out = words_new ();
  GString *gone = g_string_new (NULL);
  GstWhisperAgreedWord *w;

  gst_whisper_agree_init (&a);
  gst_whisper_agree_begin (&a, 1);
  /* before any answer: GST_WHISPER_AGREE_CPS; " one two" is 8 bytes */
  gst_whisper_agree_finish (&a, " one two", 10.0, out, gone);
  fail_unless_equals_int (out->len, 2);
  w = &g_array_index (out, GstWhisperAgreedWord, 1);
  fail_unless_equals_string (w->text, "two");
  fail_unless (fabs (w->start - 5 / GST_WHISPER_AGREE_CPS) < 1e-9);
  fail_unless (fabs (w->end - 8 / GST_WHISPER_AGREE_CPS) < 1e-9);
  fail_unless_equals_string (gone->str, " one two");
  g_array_set_size (out, 0);

  /* 20 bytes in 2 s: 10 per second; the rest of the carry is committed */
  gst_whisper_agree_begin (&a, 2);
  gst_whisper_agree_keep (&a, " aaaa bbbb cccc dddd", 2.0);
  fail_unless_equals_int (gst_whisper_agree_update (&a, " aaaa bbbb xx", TRUE, 3.0, out), 2);
  w = &g_array_index (out, GstWhisperAgreedWord, 1);
  fail_unless (fabs (w->start - 0.6) < 1e-9 && fabs (w->end - 1.0) < 1e-9);
  g_string_truncate (gone, 0);
  gst_whisper_agree_finish (&a, " aaaa bbbb xx yy", 3.0, out, gone);
  fail_unless_equals_int (out->len, 4);
  fail_unless_equals_string (g_array_index (out, GstWhisperAgreedWord, 3).text, "yy");
  /* times stay within the audio sent */
  fail_unless (g_array_index (out, GstWhisperAgreedWord, 3).end <= 3.0);
  g_string_free (gone, TRUE);
  g_array_unref (out);
  gst_whisper_agree_clear (&a);
}

GST_END_TEST;

static Suite *
agree_suite (void)
{
  Suite *s = suite_create ("whispersink-agree");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_agreement_while_reading);
  tcase_add_test (tc, test_changed_word_blocks);
  tcase_add_test (tc, test_finish_and_times);
  return s;
}

GST_CHECK_MAIN (agree);
