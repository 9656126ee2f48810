/* test-element-commit.c: whispersink's live commit policy without a model
 * (gstwhispercommit.c, LocalAgreement-2 over timed words): what two
 * decodes agree on is committed, a changed word blocks the rest, agreement
 * needs the words close in time, words of audio already committed are
 * dropped (by time and by repeating the last committed words), the
 * deadline and a drain commit without agreement, committed times never go
 * back, and the prompt is the committed text that left the buffer, cut at
 * a word and never inside a UTF-8 character; agreed words below the
 * minimum probability wait for their deadline. The live context
 * (gstwhispercontext.c): committed speech joins it as it leaves the
 * buffer, a call's input is the context then the buffer from its first
 * speech, and the first speech not committed yet is found. Unsure words
 * before a sentence's onset after a left-out pause are left out.
 *
 * The decodes are written by hand, in seconds at 16 kHz; each expected
 * value follows from the rules in gstwhispercommit.h. */
#include <gst/check/gstcheck.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "task/gstwhispercommit.h"
#include "task/gstwhispercontext.h"

#define RATE 16000

static guint64
at (double s)
{
  return (guint64) (s * RATE + 0.5);
}

/* Appends a word as Whisper writes it (leading space) to a decode. */
static void
add (GArray *hyp, const gchar *text, double start, double end, double probability,
    guint segment)
{
  GstWhisperTimedWord w = { g_strdup (text), at (start), at (end), probability, segment };

  g_array_append_val (hyp, w);
}

/* A decode of the words "text start end [probability]" separated by '|',
 * e.g. " And 0 0.3| so 0.3 0.5 0.4"; probability 0.9 when not given;
 * segment 0. */
static GArray *
decode (const gchar *spec)
{
  GArray *hyp = gst_whisper_timed_words_new ();
  g_auto (GStrv) words = g_strsplit (spec, "|", -1);

  for (guint i = 0; words[i]; i++) {
    gchar text[64];
    double start, end, probability = 0.9;
    int n = sscanf (words[i], "%63s %lf %lf %lf", text, &start, &end, &probability);
    fail_unless (n == 3 || n == 4, "%s", words[i]);
    g_autofree gchar *spaced = g_strconcat (" ", text, NULL);
    add (hyp, spaced, start, end, probability, 0);
  }
  return hyp;
}

/* The stripped texts of `words` joined with '|' ("" for none). */
static gchar *
texts (const GArray *words)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < words->len; i++) {
    g_autofree gchar *t = g_strstrip (g_strdup (g_array_index (words,
                GstWhisperTimedWord, i).text));
    g_string_append_printf (s, "%s%s", i ? "|" : "", t);
  }
  return g_string_free (s, FALSE);
}

/* Checks that a call returning `n` put `n` words in `counted`, and the
 * texts of `a` and `b` (joined as texts() does). */
static void
expect_texts (guint n, const GArray *counted, const GArray *a, const gchar *want_a,
    const GArray *b, const gchar *want_b)
{
  g_autofree gchar *got_a = texts (a);
  g_autofree gchar *got_b = texts (b);

  fail_unless_equals_int (n, counted->len);
  fail_unless_equals_string (got_a, want_a);
  fail_unless_equals_string (got_b, want_b);
}

/* Feeds the decode `spec` and checks what it committed and what is left
 * pending (texts joined as texts() does). */
static void
update_expect (GstWhisperCommit *c, const gchar *spec, guint64 force_before, gboolean final,
    const gchar *want_committed, const gchar *want_pending)
{
  g_autoptr (GArray) hyp = decode (spec);
  g_autoptr (GArray) out = gst_whisper_timed_words_new ();
  guint n = gst_whisper_commit_update (c, hyp, force_before, final, out);

  fail_unless_equals_int (hyp->len, 0);
  expect_texts (n, out, out, want_committed, c->pending, want_pending);
}

/* Two decodes agree on their common prefix: the first decode commits
 * nothing, the second commits the three words both have, the new one
 * waits. */
GST_START_TEST (test_agree_prefix)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "And 0 0.3|so 0.3 0.5|my 0.5 0.8", 0, FALSE, "", "And|so|my");
  fail_unless (!c.any_committed);
  update_expect (&c, "And 0 0.3|so 0.3 0.5|my 0.5 0.8|fellow 0.8 1.2", 0, FALSE,
      "And|so|my", "fellow");
  fail_unless_equals_uint64 (c.n_committed, 3);
  fail_unless_equals_uint64 (c.n_forced, 0);
  fail_unless_equals_uint64 (c.committed_end, at (0.8));
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* A word the next decode changes stops agreement there: the words after
 * it wait, though they are the same, until a later decode agrees with the
 * changed one. */
GST_START_TEST (test_changed_word_blocks)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "And 0 0.3|so 0.3 0.5|my 0.5 0.8|fellow 0.8 1.2", 0, FALSE, "",
      "And|so|my|fellow");
  update_expect (&c, "And 0 0.3|sew 0.3 0.5|my 0.5 0.8|fellow 0.8 1.2", 0, FALSE, "And",
      "sew|my|fellow");
  /* "And" is committed audio now (it starts before its end less 0.1 s) */
  update_expect (&c, "And 0 0.3|sew 0.3 0.5|my 0.5 0.8|fellow 0.8 1.2|Americans 1.2 1.9", 0,
      FALSE, "sew|my|fellow", "Americans");
  fail_unless_equals_uint64 (c.n_committed, 4);
  fail_unless_equals_uint64 (c.n_forced, 0);
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* The same text agrees only with starts at most 1 s apart: 2 s apart it
 * is another utterance of the word; exactly 1 s apart it agrees, one
 * sample more it does not. */
GST_START_TEST (test_agree_window)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "ask 1.0 1.3", 0, FALSE, "", "ask");
  update_expect (&c, "ask 3.0 3.3", 0, FALSE, "", "ask");
  update_expect (&c, "ask 2.0 2.3", 0, FALSE, "ask", "");
  gst_whisper_commit_clear (&c);

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "ask 1.0 1.3", 0, FALSE, "", "ask");
  {
    g_autoptr (GArray) hyp = gst_whisper_timed_words_new ();
    g_autoptr (GArray) out = gst_whisper_timed_words_new ();
    GstWhisperTimedWord w = { g_strdup (" ask"), at (2.0) + 1, at (2.3), 0.9, 0 };
    g_array_append_val (hyp, w);
    fail_unless_equals_int (gst_whisper_commit_update (&c, hyp, 0, FALSE, out), 0);
    fail_unless_equals_int (c.pending->len, 1);
  }
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* A decode that starts again at audio already committed (the buffer keeps
 * committed audio) repeats those words with about their times: they are
 * dropped, and only the new word is pending and then committed. */
GST_START_TEST (test_dedupe_by_time)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "And 0 0.3|so 0.3 0.5|my 0.5 0.8", 0, FALSE, "", "And|so|my");
  update_expect (&c, "And 0 0.3|so 0.3 0.5|my 0.5 0.8", 0, FALSE, "And|so|my", "");
  /* starts before 0.8 - 0.1 s: committed audio, though decoded
   * differently now (so the n-gram rule would not drop it) */
  update_expect (&c, "And 0.02 0.3|sew 0.3 0.5|my 0.52 0.8|fellow 0.8 1.2", 0, FALSE, "",
      "fellow");
  update_expect (&c, "And 0 0.3|so 0.3 0.5|my 0.5 0.8|fellow 0.8 1.2|Americans 1.2 1.9", 0,
      FALSE, "fellow", "Americans");
  fail_unless_equals_uint64 (c.n_committed, 4);
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* Committed words decoded again with times squeezed onto the committed
 * end (so the time rule keeps them) are dropped when they repeat the last
 * committed words, case and punctuation aside: a decode of only those
 * gives no commit, twice in a row. */
GST_START_TEST (test_dedupe_by_ngram)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "And 0 0.3|so 0.3 0.5|my 0.5 0.8", 0, FALSE, "", "And|so|my");
  update_expect (&c, "And 0 0.3|so 0.3 0.5|my 0.5 0.8", 0, FALSE, "And|so|my", "");
  update_expect (&c, "So 0.7 0.75|my, 0.75 0.8", 0, FALSE, "", "");
  update_expect (&c, "So 0.7 0.75|my, 0.75 0.8", 0, FALSE, "", "");
  /* the repeat followed by new words: only the new ones stay */
  update_expect (&c, "so 0.7 0.75|my 0.75 0.8|fellow 0.8 1.2", 0, FALSE, "", "fellow");
  update_expect (&c, "so 0.7 0.75|my 0.75 0.8|fellow 0.8 1.2", 0, FALSE, "fellow", "");
  fail_unless_equals_uint64 (c.n_committed, 4);
  gst_whisper_commit_clear (&c);

  /* More than 1 s after the committed end the same word is said again:
   * kept. */
  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "country 1.5 2.0", 0, TRUE, "country", "");
  update_expect (&c, "country 3.1 3.6", 0, FALSE, "", "country");
  update_expect (&c, "country 3.1 3.6", 0, FALSE, "country", "");
  gst_whisper_commit_clear (&c);

  /* After a context splice the committed audio ends at the splice: the
   * context's last word, aligned over the pause after it (230.1 s
   * committed, the splice at 231.8 s, "them." at 231.77-232.15 s in the
   * real-time run), is dropped; the same word 1 s or more after the
   * splice is new speech. */
  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "for 229.9 230.0|them. 230.0 230.1", 0, TRUE, "for|them.", "");
  c.context_end = at (231.8);
  update_expect (&c, "them. 231.77 232.15|He 232.43 232.59", 0, FALSE, "", "He");
  update_expect (&c, "them. 231.77 232.15|He 232.43 232.59", 0, FALSE, "He", "");
  c.context_end = 0;
  update_expect (&c, "them 234.0 234.3", 0, TRUE, "them", "");
  c.context_end = at (234.3);
  update_expect (&c, "them 235.4 235.7", 0, TRUE, "them", "");
  gst_whisper_commit_reset (&c);
  fail_unless_equals_uint64 (c.context_end, 0);
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* The deadline commits the words that end before force_before, as they
 * stand, and none from the first that does not (a word ending exactly
 * there waits); after an agreed prefix it forces the next ones. */
GST_START_TEST (test_force_before)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "ask 0 0.3|not 0.3 0.6|what 0.6 1.0", at (0.6), FALSE, "ask",
      "not|what");
  fail_unless_equals_uint64 (c.n_forced, 1);
  /* "not" agreed, "your" forced (ends before 1.5), "country" waits */
  update_expect (&c, "not 0.3 0.6|your 0.6 1.0|country 1.0 1.6", at (1.5), FALSE,
      "not|your", "country");
  fail_unless_equals_uint64 (c.n_committed, 3);
  fail_unless_equals_uint64 (c.n_forced, 2);
  /* 0: no deadline */
  update_expect (&c, "land 1.0 1.6|of 1.6 1.8", 0, FALSE, "", "land|of");
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* The time a decode may take before its oldest pending word is late:
 * budget - lag - (decode end - word end) - margin; 0 when late already,
 * NAN with nothing pending. */
GST_START_TEST (test_pending_slack)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  fail_unless (isnan (gst_whisper_commit_pending_slack (&c, at (2.0), 0.5, 3.0, 0.1)));
  update_expect (&c, "ask 1.0 1.4|not 1.4 1.8", 0, FALSE, "", "ask|not");
  /* "ask" ended 0.6 s before the decode's end, which was 0.5 s ago */
  fail_unless (fabs (gst_whisper_commit_pending_slack (&c, at (2.0), 0.5, 3.0, 0.1) - 1.8)
      < 1e-9);
  fail_unless (fabs (gst_whisper_commit_pending_slack (&c, at (3.0), 0.5, 3.0, 0.1) - 0.8)
      < 1e-9);
  fail_unless_equals_float (gst_whisper_commit_pending_slack (&c, at (3.0), 2.5, 3.0, 0.1),
      0.0);
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* agree_before holds agreed words that end after it until their deadline
 * (live-commit=deadline sets 0: all wait); a word ending exactly there
 * may still be committed by agreement. */
GST_START_TEST (test_agree_before)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  fail_unless_equals_uint64 (c.agree_before, G_MAXUINT64);
  c.agree_before = 0;
  update_expect (&c, "ask 0 0.3|not 0.3 0.6|what 0.6 1.0", 0, FALSE, "", "ask|not|what");
  /* the same decode again: agreed, and still nothing committed */
  update_expect (&c, "ask 0 0.3|not 0.3 0.6|what 0.6 1.0", 0, FALSE, "", "ask|not|what");
  /* the deadline takes the words ending before it, from this decode */
  update_expect (&c, "ask 0 0.3|knot 0.3 0.6|what 0.6 1.0", at (0.7), FALSE, "ask|knot",
      "what");
  fail_unless_equals_uint64 (c.n_committed, 2);
  /* agreement up to 1.0 again: "what" (ends at 1.0) commits, "your" waits */
  c.agree_before = at (1.0);
  update_expect (&c, "what 0.6 1.0|your 1.0 1.3", 0, FALSE, "what", "your");
  update_expect (&c, "your 1.0 1.3|country 1.3 1.8", 0, FALSE, "", "your|country");
  /* a reset lets agreement commit everything again */
  gst_whisper_commit_reset (&c);
  fail_unless_equals_uint64 (c.agree_before, G_MAXUINT64);
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* min_probability: an agreed word below it waits, and the words after it
 * too, until a decode gives it enough or its deadline comes (then as the
 * last decode has it); exactly the minimum is enough. */
GST_START_TEST (test_min_probability)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  fail_unless (c.min_probability == 0.0);
  c.min_probability = 0.65;
  update_expect (&c, "How 0 0.3 0.4|do 0.3 0.5 0.5|you 0.5 0.6|marry 0.6 1.0", 0, FALSE, "",
      "How|do|you|marry");
  /* agreed on all four, but "How" is unsure: nothing is committed */
  update_expect (&c, "How 0 0.3 0.5|do 0.3 0.5 0.5|you 0.5 0.6|marry 0.6 1.0", 0, FALSE, "",
      "How|do|you|marry");
  /* more audio: "Had he married"; "Had" agrees with nothing yet */
  update_expect (&c, "Had 0 0.3 0.8|he 0.3 0.5 0.9|married 0.5 1.0 0.9|her 1.0 1.2", 0,
      FALSE, "", "Had|he|married|her");
  /* exactly the minimum commits; the unsure "her" waits */
  update_expect (&c, "Had 0 0.3 0.65|he 0.3 0.5 0.9|married 0.5 1.0|her 1.0 1.2 0.3", 0,
      FALSE, "Had|he|married", "her");
  /* its deadline commits it as it stands (agreed: not counted as forced) */
  update_expect (&c, "her 1.0 1.2 0.3|then 1.2 1.5", at (1.3), FALSE, "her", "then");
  fail_unless_equals_uint64 (c.n_committed, 4);
  fail_unless_equals_uint64 (c.n_forced, 0);
  /* a reset keeps the setting (and forgets the decoded end) */
  c.decoded_end = at (9.0);
  gst_whisper_commit_reset (&c);
  fail_unless (c.min_probability == 0.65);
  fail_unless_equals_uint64 (c.decoded_end, 0);
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* start_hold: a sentence's first word after a pause is committed by
 * agreement only once both agreeing decodes heard start_hold after it
 * (the decodes of a paced tiny.en run, latency 3000: "How do you marry"
 * for "Had he married", agreed by decodes that heard 0.64 and 1.14 s after
 * "How"); the words after it wait with it; its deadline commits it; a word
 * within a sentence, no pause before it, is not held; 0 holds nothing. */
GST_START_TEST (test_sentence_start_hold)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  fail_unless_equals_uint64 (c.start_hold, 0);
  c.min_probability = 0.65;
  c.start_hold = at (1.0);
  update_expect (&c, "about 71.66 71.90|15 71.90 72.24|minutes. 72.24 72.70", 0, TRUE,
      "about|15|minutes.", "");
  c.decoded_end = at (74.5);
  update_expect (&c, "How 73.76 73.86 0.78|do 73.86 73.96 0.38|you 73.96 74.08 0.99|"
      "marry 74.08 74.28 0.50|them? 74.28 74.46 0.52", 0, FALSE, "",
      "How|do|you|marry|them?");
  /* agreed, sure enough, but the earlier decode heard 0.64 s after "How" */
  c.decoded_end = at (75.0);
  update_expect (&c, "How 73.76 73.86 0.69|do 73.86 73.98 0.67|you 73.98 74.08 0.99|"
      "marry 74.08 74.32 0.85|the 74.32 74.54 0.18|more? 74.54 74.86 0.69", 0, FALSE, "",
      "How|do|you|marry|the|more?");
  /* both heard a second or more after it: committed, and the agreed sure
   * words after it (within the sentence: not held) */
  c.decoded_end = at (75.5);
  update_expect (&c, "How 73.75 73.87 0.75|do 73.87 73.99 0.80|you 73.99 74.11 0.99|"
      "marry 74.11 74.33 0.84|a 74.33 74.57 0.44|more 74.57 74.93 0.98", 0, FALSE,
      "How|do|you|marry", "a|more");
  gst_whisper_commit_clear (&c);

  /* nothing committed yet: held too; the deadline commits it at once */
  gst_whisper_commit_init (&c, RATE);
  c.start_hold = at (1.0);
  c.decoded_end = at (1.0);
  update_expect (&c, "The 0.5 0.7|train 0.7 0.9", 0, FALSE, "", "The|train");
  c.decoded_end = at (1.5);
  update_expect (&c, "The 0.5 0.7|train 0.7 0.9|to 0.9 1.1", 0, FALSE, "", "The|train|to");
  /* (then the agreed words after it: no sentence end, no pause) */
  update_expect (&c, "The 0.5 0.7|train 0.7 0.9|to 0.9 1.1", at (0.8), FALSE, "The|train|to",
      "");
  c.decoded_end = at (2.0);
  update_expect (&c, "Manchester 1.1 1.6", 0, FALSE, "", "Manchester");
  /* a word 0.5 s or more after the committed end starts after a pause */
  c.decoded_end = at (2.5);
  update_expect (&c, "Manchester 1.1 1.6|leaves 2.1 2.4", 0, FALSE, "Manchester", "leaves");
  c.decoded_end = at (3.0);
  update_expect (&c, "leaves 2.1 2.4|platform 2.4 2.9", 0, FALSE, "", "leaves|platform");
  c.decoded_end = at (3.5);
  update_expect (&c, "leaves 2.1 2.4|platform 2.4 2.9", 0, FALSE, "", "leaves|platform");
  c.decoded_end = at (4.0);
  update_expect (&c, "leaves 2.1 2.4|platform 2.4 2.9|four 2.9 3.2", 0, FALSE,
      "leaves|platform", "four");
  gst_whisper_commit_clear (&c);

  /* start_hold 0: agreement alone */
  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "The 0.5 0.7|train 0.7 0.9", 0, FALSE, "", "The|train");
  update_expect (&c, "The 0.5 0.7|train 0.7 0.9|to 0.9 1.1", 0, FALSE, "The|train", "to");
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* With no deadline near, an agreed unsure word waits until the decoded
 * audio reaches GST_WHISPER_COMMIT_UNSURE_WAIT_S (3 s) past its end, then
 * is committed with the agreed words after it (not forced); before that,
 * it and every word after it wait. */
GST_START_TEST (test_unsure_word_heard_in_full)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  c.min_probability = 0.65;
  c.decoded_end = at (2.0);
  update_expect (&c, "ask 0 0.6 0.3|what 0.6 0.9|you 0.9 1.2", 0, FALSE, "", "ask|what|you");
  /* agreed, 2 s after its end (jfk.wav's "am I" came so, "my" half a
   * second later): waits */
  c.decoded_end = at (2.6);
  update_expect (&c, "ask 0 0.6 0.4|what 0.6 0.9|you 0.9 1.2|can 1.2 1.5", 0, FALSE, "",
      "ask|what|you|can");
  /* 2.99 s after it: waits */
  c.decoded_end = at (3.59);
  update_expect (&c, "ask 0 0.6 0.4|what 0.6 0.9|you 0.9 1.2|can 1.2 1.5", 0, FALSE, "",
      "ask|what|you|can");
  /* 3 s after it: committed as agreed, with the agreed words after it */
  c.decoded_end = at (3.6);
  update_expect (&c, "ask 0 0.6 0.35|what 0.6 0.9|you 0.9 1.2|can 1.2 1.5|do 1.5 1.7", 0,
      FALSE, "ask|what|you|can", "do");
  fail_unless_equals_uint64 (c.n_committed, 4);
  fail_unless_equals_uint64 (c.n_forced, 0);
  /* an unsure word the decodes do not agree on still waits */
  c.decoded_end = at (9.0);
  update_expect (&c, "do 1.5 1.7 0.3|for 1.7 2.0 0.2", 0, FALSE, "do", "for");
  update_expect (&c, "four 1.7 2.0 0.2", 0, FALSE, "", "four");
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* The deadline commits words the last decode read otherwise: the surer
 * reading of the two (mean log probability) for the same audio (ends at
 * most 0.3 s apart, the next words agreeing) is committed, with its
 * times; the newer wins a tie; readings of different audio are not
 * compared. */
GST_START_TEST (test_deadline_surer_reading)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "And 0 0.76 0.7|so 0.76 1.04|my 1.04 1.40 0.52|fellow 1.40 1.74 1.0|"
      "Americans 1.74 2.2", 0, FALSE, "", "And|so|my|fellow|Americans");
  /* "am I" is less sure than "my": the last decode's "my fellow" is
   * committed, up to its own end */
  update_expect (&c, "And 0 0.76 0.7|so 0.76 1.04|am 1.04 1.38 0.15|I 1.38 1.44 0.93|"
      "fellow 1.44 1.76 0.93|Americans 1.76 2.28|Ask 3.40 3.74", at (1.8), FALSE,
      "And|so|my|fellow", "Americans|Ask");
  fail_unless_equals_uint64 (c.committed_end, at (1.74));
  fail_unless_equals_uint64 (c.n_forced, 2);
  gst_whisper_commit_clear (&c);

  /* the newer reading is the surer one: it stands */
  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "How 0 0.3 0.4|do 0.3 0.5 0.5|you 0.5 0.6|marry 0.6 1.0|a 1.0 1.1", 0,
      FALSE, "", "How|do|you|marry|a");
  update_expect (&c, "Had 0 0.3 0.8|he 0.3 0.5 0.9|married 0.5 1.0 0.9|a 1.0 1.1", at (1.05),
      FALSE, "Had|he|married", "a");
  gst_whisper_commit_clear (&c);

  /* the last decode's words end far from the committed ones (another
   * stretch of audio): the newer reading stands */
  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "How 0 0.3 0.9|do 0.3 1.5 0.9|a 1.5 1.6", 0, FALSE, "", "How|do|a");
  update_expect (&c, "Had 0 0.3 0.2|he 0.3 0.5 0.3|a 1.5 1.6", at (0.6), FALSE, "Had|he",
      "a");
  gst_whisper_commit_clear (&c);

  /* no word follows in the new decode: the last decode's reading must end
   * there too */
  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "ill 0 0.2 0.9|disposed 0.2 0.8 0.9", 0, FALSE, "", "ill|disposed");
  update_expect (&c, "sposed 0 0.8 0.3", at (1.0), FALSE, "ill|disposed", "");
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* Sets the detector's speech of the next decode: spans "start end|..."
 * in seconds ("" for none heard). */
static void
set_speech (GstWhisperCommit *c, const gchar *spec)
{
  g_auto (GStrv) spans = g_strsplit (spec, "|", -1);

  g_array_set_size (c->speech, 0);
  for (guint i = 0; spans[i] && *spans[i]; i++) {
    double start, end;
    fail_unless (sscanf (spans[i], "%lf %lf", &start, &end) == 2, "%s", spans[i]);
    GstWhisperCommitSpan span = { at (start), at (end) };
    g_array_append_val (c->speech, span);
  }
}

/* A decode that reads committed words again and nothing after them, where
 * the last decode read words in the detector's speech, leaves those words pending
 * as that decode read them: the deadline commits them then, not when a
 * later decode reads them again, late (the decodes of the held-out live
 * set, tiny.en, latency 3000, paced: after "country." and 3 s of noise
 * the decode at 30.0 s read the next sentence, those at 30.5 to 32.5 s
 * only "country." again, and the one at 33.0 s the sentence once more,
 * committed by the deadline 3.0 to 5.0 s after it was spoken). Kept words
 * do not agree with themselves; a word outside the detector's speech, and
 * every word after it, is not kept; without a detector, or after a decode
 * that gave no word at all, nothing is; a decode that read only its
 * context read committed words too. */
GST_START_TEST (test_unread_words_kept)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "your 23.51 23.83|country 23.83 24.08", 0, TRUE, "your|country", "");
  set_speech (&c, "21.00 25.00|27.20 30.00");
  update_expect (&c, "country. 23.81 24.49|Every 27.68 27.98 0.27|one 27.98 28.20 0.53|"
      "in 28.20 28.26 0.84|the 28.26 28.36 0.4|village 28.36 28.60 0.58", at (27.85), FALSE,
      "", "Every|one|in|the|village");
  /* "country" alone: "Every" is due, the rest waits as read at 30.0 s */
  set_speech (&c, "23.78 25.00|27.20 30.50");
  update_expect (&c, "country 23.81 24.10", at (28.0), FALSE, "Every", "one|in|the|village");
  fail_unless_equals_uint64 (c.n_forced, 3);     /* (with the two of the drain) */
  fail_unless (c.pending_unread);
  /* again, nothing due: still pending (not agreed with itself) */
  update_expect (&c, "country. 23.81 24.11", at (28.0), FALSE, "", "one|in|the|village");
  fail_unless_equals_uint64 (c.n_committed, 3);
  /* the next decode that reads them agrees with the kept reading */
  update_expect (&c, "one 27.98 28.20|in 28.20 28.26|the 28.26 28.36|village 28.36 28.60|"
      "knows 28.60 29.02", at (28.1), FALSE, "one|in|the|village", "knows");
  fail_unless_equals_uint64 (c.n_forced, 3);
  fail_unless (!c.pending_unread);
  gst_whisper_commit_clear (&c);

  /* kept up to the first word outside the detector's speech */
  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "country 23.83 24.08", 0, TRUE, "country", "");
  update_expect (&c, "Every 27.68 27.98|one 27.98 28.20|thank 29.0 29.3|you 29.3 29.5", 0,
      FALSE, "", "Every|one|thank|you");
  set_speech (&c, "27.20 28.40|29.40 30.00");
  update_expect (&c, "country. 23.81 24.11", at (28.0), FALSE, "Every", "one");
  /* no detector (or none for this decode): nothing kept */
  g_array_set_size (c.speech, 0);
  update_expect (&c, "country. 23.81 24.11", 0, FALSE, "", "");
  gst_whisper_commit_clear (&c);

  /* a decode that gave no word at all keeps nothing */
  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "country 23.83 24.08", 0, TRUE, "country", "");
  update_expect (&c, "Every 27.68 27.98|one 27.98 28.20", 0, FALSE, "", "Every|one");
  set_speech (&c, "27.20 30.00");
  update_expect (&c, "", at (28.0), FALSE, "", "");
  gst_whisper_commit_clear (&c);

  /* one that read only its context (words left out before the update)
   * read committed words again: kept */
  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "country 23.83 24.08", 0, TRUE, "country", "");
  update_expect (&c, "Every 27.68 27.98|one 27.98 28.20", 0, FALSE, "", "Every|one");
  set_speech (&c, "27.20 30.00");
  c.context_words = 2;
  update_expect (&c, "", at (28.0), FALSE, "Every", "one");
  gst_whisper_commit_reset (&c);
  fail_unless_equals_int (c.context_words, 0);
  fail_unless_equals_int (c.speech->len, 0);
  gst_whisper_commit_clear (&c);

  /* a decode with a word of its own replaces the last one's as before */
  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "country 23.83 24.08", 0, TRUE, "country", "");
  update_expect (&c, "Every 27.68 27.98|one 27.98 28.20", 0, FALSE, "", "Every|one");
  set_speech (&c, "27.20 30.00");
  update_expect (&c, "Ever 27.68 27.90", 0, FALSE, "", "Ever");
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* A decode's word that starts where the last committed word starts reads
 * that word again, whatever its text, even when its end has moved more
 * than 0.3 s past the committed end (the decodes of the dev live set,
 * tiny.en, latency 2000, paced: "1919." committed at 60.60-60.80 s came
 * back as "1990." ending at 60.98 s, then 61.12 s, and was committed again,
 * 2.9 s after its end); not when the alignment squeezed the committed
 * word to less than 0.1 s, and not a word that starts later or well
 * before it (new speech with its start drawn back over the pause, or over
 * a word read in the noise before it). */
GST_START_TEST (test_last_word_read_again)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "repaired 59.64 59.88|in 59.88 60.30|1919. 60.60 60.80", 0, TRUE,
      "repaired|in|1919.", "");
  update_expect (&c, "1990. 60.60 60.98", 0, FALSE, "", "");
  update_expect (&c, "1990. 60.60 61.12", 0, FALSE, "", "");
  update_expect (&c, "1990. 60.64 61.18", at (61.5), FALSE, "", "");
  /* 0.05 s after its start: another word */
  update_expect (&c, "1990. 60.65 61.18", at (61.5), FALSE, "1990.", "");
  gst_whisper_commit_clear (&c);

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "am 14.64 15.02|I 15.02 15.04", 0, TRUE, "am|I", "");
  update_expect (&c, "fellow 14.90 15.36", 0, FALSE, "", "fellow");
  gst_whisper_commit_clear (&c);

  /* a word read in the noise before a sentence, committed: the sentence's
   * first word, its start drawn back to well before that word's, is new
   * speech (the held-out set at latency 2000: "were" at 13.40-13.72 s,
   * then "and" at 13.19-14.29 s) */
  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "were 13.40 13.72", 0, TRUE, "were", "");
  update_expect (&c, "and 13.19 14.29|so 14.29 14.63", 0, FALSE, "", "and|so");
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* Run index r's sample is r (a ramp): which audio went where is readable
 * from the values. */
static float *
ramp (guint64 from, gsize n)
{
  float *pcm = g_new (float, n);

  for (gsize i = 0; i < n; i++)
    pcm[i] = (float) (from + i);
  return pcm;
}

static void
expect_run (const float *pcm, gsize n, guint64 first_index)
{
  for (gsize i = 0; i < n; i++)
    if (pcm[i] != (float) (first_index + i))
      fail ("sample %" G_GSIZE_FORMAT ": %.0f, not %" G_GUINT64_FORMAT, i, pcm[i],
          first_index + i);
}

static GArray *
regions (double start, double end)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (WhisperVadSpeech));
  WhisperVadSpeech r = { (gint64) at (start), (gint64) at (end) };

  if (end > start)
    g_array_append_val (a, r);
  return a;
}

/* Released audio joins the context up to 0.15 s after the committed end,
 * once (what was looked at is not taken again), only after a commit, and
 * the context keeps its newest max_s seconds; max_s 0 empties it. */
GST_START_TEST (test_context_keep)
{
  GstWhisperContext ctx;
  g_autofree float *win = ramp (at (10), at (10));   /* the buffer: 10 s to 20 s */

  gst_whisper_context_init (&ctx, RATE);
  /* nothing committed: nothing kept, but the audio counts as looked at */
  gst_whisper_context_keep (&ctx, win, at (10), at (11), at (12), FALSE, 3.0);
  fail_unless_equals_int (ctx.audio->len, 0);
  fail_unless_equals_uint64 (ctx.through, at (11));
  /* released to 14 s, committed to 12 s: 11 s to 12.15 s is kept */
  gst_whisper_context_keep (&ctx, win, at (10), at (14), at (12), TRUE, 3.0);
  fail_unless_equals_int (ctx.audio->len, at (12.15) - at (11));
  expect_run ((float *) ctx.audio->data, ctx.audio->len, at (11));
  fail_unless_equals_uint64 (ctx.newest_end, at (12.15));
  /* the same release again adds nothing */
  gst_whisper_context_keep (&ctx, win, at (10), at (14), at (13.5), TRUE, 3.0);
  fail_unless_equals_int (ctx.audio->len, at (12.15) - at (11));
  /* released to 18 s, committed to 17.85 s: 14 s to 18 s joins, and only
   * the last 3 s stay */
  gst_whisper_context_keep (&ctx, win, at (10), at (18), at (17.85), TRUE, 3.0);
  fail_unless_equals_int (ctx.audio->len, at (3));
  expect_run ((float *) ctx.audio->data, ctx.audio->len, at (15));
  fail_unless_equals_uint64 (ctx.newest_end, at (18));
  /* live-context 0: emptied */
  gst_whisper_context_keep (&ctx, win, at (10), at (19), at (19), TRUE, 0.0);
  fail_unless_equals_int (ctx.audio->len, 0);
  gst_whisper_context_clear (&ctx);
}
GST_END_TEST;

/* A call's input: the context, then the buffer from its first speech to
 * transcribe less 0.2 s, the words' times counting the context as the
 * audio just before the splice; the buffer alone without context, without
 * such speech, with context older than 30 s, and after a reset. */
GST_START_TEST (test_context_input)
{
  GstWhisperContext ctx;
  GstWhisperLiveInput in;
  g_autofree float *old = ramp (at (2), at (3));     /* committed speech, 2 s to 5 s */
  g_autofree float *win = ramp (at (8), at (4));     /* the buffer: 8 s to 12 s */
  const guint64 speech = at (9.5);

  gst_whisper_context_init (&ctx, RATE);
  gst_whisper_context_input (&ctx, win, at (8), at (4), speech, &in);
  fail_unless (in.pcm == win && in.n == at (4) && in.start == at (8) && in.splice == at (8));
  gst_whisper_context_keep (&ctx, old, at (2), at (5), at (5), TRUE, 3.0);
  fail_unless_equals_int (ctx.audio->len, at (3));

  gst_whisper_context_input (&ctx, win, at (8), at (4), speech, &in);
  fail_unless (in.window == win && in.window_start == at (8) && in.window_n == at (4));
  fail_unless_equals_uint64 (in.splice, at (9.3));
  fail_unless_equals_uint64 (in.start, at (9.3) - at (3));
  fail_unless_equals_int (in.n, at (3) + at (12) - at (9.3));
  expect_run (in.pcm, at (3), at (2));
  expect_run (in.pcm + at (3), in.n - at (3), at (9.3));

  /* speech from the buffer's start: all of the buffer after the context */
  gst_whisper_context_input (&ctx, win, at (8), at (4), at (8.1), &in);
  fail_unless_equals_uint64 (in.splice, at (8));
  fail_unless_equals_int (in.n, at (3) + at (4));
  /* speech starting in the buffer's last 0.2 s: the splice is before it */
  gst_whisper_context_input (&ctx, win, at (8), at (4), at (11.9), &in);
  fail_unless_equals_uint64 (in.splice, at (11.7));
  fail_unless_equals_int (in.n, at (3) + at (0.3));
  /* no speech: the buffer alone */
  gst_whisper_context_input (&ctx, win, at (8), at (4), G_MAXUINT64, &in);
  fail_unless (in.pcm == win && in.n == at (4) && in.start == at (8));
  /* a buffer ending 30 s after the context still has it; one sample more,
   * not */
  {
    g_autofree float *late = ramp (at (31), at (4));
    gst_whisper_context_input (&ctx, late, at (31), at (4), at (32.5), &in);
    fail_unless (in.pcm != late);
    gst_whisper_context_input (&ctx, late, at (31) + 1, at (4), at (32.5), &in);
    fail_unless (in.pcm == late && in.n == at (4));
  }
  gst_whisper_context_reset (&ctx);
  gst_whisper_context_input (&ctx, win, at (8), at (4), speech, &in);
  fail_unless (in.pcm == win && in.n == at (4));
  gst_whisper_context_clear (&ctx);
}
GST_END_TEST;

/* The first speech not committed yet: regions that end within the margin
 * after the committed end are the committed words' own; one reaching past
 * it counts from its start, or from the committed end when it starts
 * before. */
GST_START_TEST (test_speech_from)
{
  g_autoptr (GArray) speech = regions (1.0, 2.0);
  WhisperVadSpeech later = { (gint64) at (4.0), (gint64) at (6.0) };

  g_array_append_val (speech, later);
  /* buffer from 10 s: speech 11-12 s and 14-16 s */
  fail_unless_equals_uint64 (gst_whisper_live_speech_from (speech, at (10), 0, at (0.3)),
      at (11));
  fail_unless_equals_uint64 (gst_whisper_live_speech_from (speech, at (10), at (11.5),
          at (0.3)), at (11.5));
  fail_unless_equals_uint64 (gst_whisper_live_speech_from (speech, at (10), at (11.8),
          at (0.3)), at (14));
  fail_unless_equals_uint64 (gst_whisper_live_speech_from (speech, at (10), at (15),
          at (0.3)), at (15));
  fail_unless_equals_uint64 (gst_whisper_live_speech_from (speech, at (10), at (15.8),
          at (0.3)), G_MAXUINT64);
  fail_unless_equals_uint64 (gst_whisper_live_speech_from (NULL, at (10), 0, at (0.3)),
      G_MAXUINT64);
}
GST_END_TEST;

/* final (a drain) commits every word, without agreement. */
GST_START_TEST (test_final)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "ask 0 0.3|not 0.3 0.6", 0, FALSE, "", "ask|not");
  update_expect (&c, "ask 0 0.3|knot 0.3 0.6|what 0.6 1.0", 0, TRUE, "ask|knot|what", "");
  fail_unless_equals_uint64 (c.n_committed, 3);
  fail_unless_equals_uint64 (c.n_forced, 2);
  fail_unless_equals_uint64 (c.committed_end, at (1.0));
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* A flush commits what is pending, once. */
GST_START_TEST (test_flush)
{
  GstWhisperCommit c;
  g_autoptr (GArray) out = gst_whisper_timed_words_new ();
  g_autofree gchar *got = NULL;

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "ask 0 0.3|not 0.3 0.6", 0, FALSE, "", "ask|not");
  fail_unless_equals_int (gst_whisper_commit_flush (&c, out), 2);
  got = texts (out);
  fail_unless_equals_string (got, "ask|not");
  fail_unless_equals_int (c.pending->len, 0);
  fail_unless_equals_uint64 (c.n_committed, 2);
  fail_unless_equals_uint64 (c.n_forced, 2);
  fail_unless_equals_uint64 (c.committed_end, at (0.6));
  fail_unless_equals_int (gst_whisper_commit_flush (&c, out), 0);
  fail_unless_equals_int (out->len, 2);
  /* the flushed words are committed audio for the next decode */
  update_expect (&c, "ask 0 0.3|not 0.3 0.6|what 0.6 1.0", 0, FALSE, "", "what");
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* A committed word never starts before the previous committed end (the
 * decode's times overlap by up to 0.1 s and still pass the time rule):
 * moved to it. A word whose middle lies before the committed end is audio
 * already committed (a re-decode split "my" into "am I" and squeezed "I"
 * against the end) and is dropped. */
GST_START_TEST (test_starts_never_back)
{
  GstWhisperCommit c;
  g_autoptr (GArray) hyp = gst_whisper_timed_words_new ();
  g_autoptr (GArray) out = gst_whisper_timed_words_new ();

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "ask 0 0.5", 0, TRUE, "ask", "");
  add (hyp, " not", 0.45, 0.48, 0.9, 0);
  add (hyp, " what", 0.47, 0.9, 0.9, 0);
  fail_unless_equals_int (gst_whisper_commit_update (&c, hyp, 0, TRUE, out), 1);
  GstWhisperTimedWord *what = &g_array_index (out, GstWhisperTimedWord, 0);
  fail_unless_equals_string (what->text, " what");
  fail_unless_equals_uint64 (what->start, at (0.5));
  fail_unless_equals_uint64 (what->end, at (0.9));
  fail_unless_equals_uint64 (c.committed_end, at (0.9));
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* New speech after a pause: the alignment draws the word's start back over
 * the pause, before the committed end ("ask" after "fellow Americans,"),
 * but it ends well after it (more than GST_WHISPER_COMMIT_NEW_AFTER_S):
 * kept. The last committed word decoded again with a later end (its text
 * the same, or one the start of the other) is still dropped, and so are
 * committed words that end near the committed end. */
GST_START_TEST (test_new_word_after_pause)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "fellow 1.4 1.76|Americans, 1.76 2.3", 0, TRUE, "fellow|Americans,", "");
  update_expect (&c, "fellow 1.4 1.76|ask 1.9 3.0|not 3.0 3.4", 0, FALSE, "", "ask|not");
  update_expect (&c, "Americans 1.76 2.9|ask 2.9 3.2|not 3.2 3.4", 0, FALSE, "ask|not", "");
  gst_whisper_commit_clear (&c);

  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "fellow 1.4 1.76|Americans, 1.76 2.3", 0, TRUE, "fellow|Americans,", "");
  update_expect (&c, "American 1.8 2.9|ask 2.95 3.4", 0, FALSE, "", "ask");
  /* ends within 0.3 s of the committed end: the time rule drops it */
  update_expect (&c, "fellows 1.4 2.5|ask 2.95 3.4", 0, FALSE, "ask", "");
  gst_whisper_commit_clear (&c);

  fail_unless (gst_whisper_commit_same_word ("americans", "americans"));
  fail_unless (gst_whisper_commit_same_word ("american", "americans"));
  fail_unless (gst_whisper_commit_same_word ("dashwood", "dashwoods"));
  fail_unless (!gst_whisper_commit_same_word ("ask", "americans"));
  fail_unless (!gst_whisper_commit_same_word ("mister", "mr"));
  fail_unless (!gst_whisper_commit_same_word ("", "ask"));
  fail_unless (!gst_whisper_commit_same_word ("ask", NULL));
}
GST_END_TEST;

/* Committed words join the prompt only once the buffer no longer holds
 * their audio (they end at or before its start + 0.1 s); a reset empties
 * it. */
GST_START_TEST (test_trim_prompt)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  fail_unless_equals_string (gst_whisper_commit_prompt (&c), "");
  update_expect (&c, "And 0 0.3|so, 0.3 0.5|my 0.5 0.8", 0, TRUE, "And|so,|my", "");
  fail_unless_equals_string (gst_whisper_commit_prompt (&c), "");
  gst_whisper_commit_trim (&c, 0);
  fail_unless_equals_string (gst_whisper_commit_prompt (&c), "");
  gst_whisper_commit_trim (&c, at (0.35));
  fail_unless_equals_string (gst_whisper_commit_prompt (&c), " And");
  gst_whisper_commit_trim (&c, at (0.4));
  fail_unless_equals_string (gst_whisper_commit_prompt (&c), " And so,");
  gst_whisper_commit_trim (&c, G_MAXUINT64);
  fail_unless_equals_string (gst_whisper_commit_prompt (&c), " And so, my");
  /* trimmed words are not decoded again: no second copy */
  gst_whisper_commit_trim (&c, G_MAXUINT64);
  fail_unless_equals_string (gst_whisper_commit_prompt (&c), " And so, my");

  gst_whisper_commit_reset (&c);
  fail_unless_equals_string (gst_whisper_commit_prompt (&c), "");
  fail_unless (!c.any_committed);
  fail_unless_equals_uint64 (c.committed_end, 0);
  /* after a reset nothing counts as committed audio */
  update_expect (&c, "And 0 0.3", 0, FALSE, "", "And");
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* Whether the last committed word ends a sentence, whether it is still
 * in the buffer or already in the prompt text (distinct words: a repeat
 * would be dropped as decoded twice): marks before closing quotes count,
 * a comma or a bare word does not, and nothing committed (after init and
 * reset) is no sentence end. */
GST_START_TEST (test_ends_sentence)
{
  static const struct {
    const gchar *word;
    gboolean ends;
  } cases[] = {
    { " country.", TRUE }, { " not?", TRUE }, { " now!", TRUE }, { " so\u2026", TRUE },
    { " one.\"", TRUE }, { " two.)", TRUE }, { " three.\u201D", TRUE }, { " four. ", TRUE },
    { " Americans,", FALSE }, { " fellow", FALSE }, { " \"quoted\"", FALSE },
    { " dash-", FALSE }, { "\u00E9t\u00E9", FALSE },
    /* titles and initials: tiny.en's "And Mr. John Dashwood" */
    { " Mr.", FALSE }, { " Mrs.", FALSE }, { " Dr.", FALSE }, { " F.", FALSE },
    { " I.", TRUE }, { " Amr.", TRUE }, { " DR.", TRUE }, { " U.S.", TRUE },
  };
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  fail_if (gst_whisper_commit_ends_sentence (&c));
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autoptr (GArray) hyp = gst_whisper_timed_words_new ();
    g_autoptr (GArray) out = gst_whisper_timed_words_new ();
    add (hyp, cases[i].word, i, i + 0.5, 0.9, 0);
    fail_unless (gst_whisper_commit_update (&c, hyp, 0, TRUE, out) == 1, "%s", cases[i].word);
    /* in the buffer, then in the text before it */
    fail_unless (gst_whisper_commit_ends_sentence (&c) == cases[i].ends, "%s", cases[i].word);
    gst_whisper_commit_trim (&c, G_MAXUINT64);
    fail_unless_equals_int (c.in_buffer->len, 0);
    fail_unless (gst_whisper_commit_ends_sentence (&c) == cases[i].ends, "%s", cases[i].word);
  }
  gst_whisper_commit_reset (&c);
  fail_if (gst_whisper_commit_ends_sentence (&c));
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* Drops the words of the decode `spec` before `onset` (seconds) and
 * checks what was kept and what was left out (texts joined as texts()
 * does). */
static void
drop_expect (const GstWhisperCommit *c, const gchar *spec, double onset,
    const gchar *want_kept, const gchar *want_dropped)
{
  g_autoptr (GArray) hyp = decode (spec);
  g_autoptr (GArray) dropped = gst_whisper_timed_words_new ();
  guint n = gst_whisper_commit_drop_before_onset (c, hyp, at (onset), dropped);

  expect_texts (n, dropped, hyp, want_kept, dropped, want_dropped);
}

/* Words read from the noise kept before a sentence's onset (a decode of
 * a real-time run: "smoke." at 39.07-39.41 s, probability 0.28, before
 * "Had he married" at 39.63, the detector's onset at 39.55): unsure words
 * ending by the onset (or GST_WHISPER_COMMIT_ONSET_SLACK_S after it) and
 * after the committed end, up to the last of them that ends a sentence,
 * are left out; a sure one, one ending later, one ending at the committed
 * end, every word after the first that ends later and unsure words with
 * no sentence end after them stay (base read the sentence's own first
 * word so: "He" at 64.13-64.67 s, 0.02, onset at 64.65), unless they end
 * GST_WHISPER_COMMIT_ONSET_PAD_S or more before the onset. */
GST_START_TEST (test_drop_before_onset)
{
  GstWhisperCommit c;

  gst_whisper_commit_init (&c, RATE);
  c.min_probability = 0.65;
  update_expect (&c, "ill-disposed. 36.78 37.38", 0, TRUE, "ill-disposed.", "");
  drop_expect (&c, "ill-disposed. 36.78 37.38 0.3|smoke. 39.07 39.41 0.28|"
      "Had 39.63 39.71 0.77|he 39.71 39.97 0.97", 39.55, "ill-disposed.|Had|he", "smoke.");
  /* sure, then unsure ending within the slack, then one past it */
  drop_expect (&c, "A 39.05 39.30 0.9|smoke. 39.30 39.58 0.3|uh 39.40 39.60 0.3|"
      "Had 39.61 39.71 0.3", 39.55, "A|uh|Had", "smoke.");
  /* nothing before the onset */
  drop_expect (&c, "Had 39.63 39.71 0.3", 39.55, "Had", "");
  /* a sentence's own first word, unsure and ending within the slack */
  drop_expect (&c, "He 64.13 64.67 0.02|began 64.67 64.95 0.9", 64.65, "He|began", "");
  drop_expect (&c, "uh 64.0 64.5 0.2|He 64.13 64.67 0.02|began 64.67 64.95 0.9", 64.65,
      "uh|He|began", "");
  /* an unsure word that ends in the detector's pad, 0.2 s or more before
   * the onset, goes with no sentence end (tiny.en on a paced run: "spell"
   * at 45.04-45.24 s in the 0.4 s kept before the onset at 45.48, read as
   * "The" at 45.62 by the decodes without the cut); a sure one stays */
  drop_expect (&c, "uh 63.9 64.1 0.2|He 64.13 64.67 0.02|began 64.67 64.95 0.9", 64.65,
      "He|began", "uh");
  drop_expect (&c, "spell 45.04 45.24 0.47|the 45.24 45.68 0.35|temper. 45.68 45.98 0.29",
      45.48, "the|temper.", "spell");
  drop_expect (&c, "spell 45.04 45.30 0.47|the 45.30 45.68 0.35", 45.48, "spell|the", "");
  drop_expect (&c, "So 45.04 45.24 0.9|the 45.24 45.68 0.35", 45.48, "So|the", "");
  /* the unsure words up to the last sentence end go, a sure one between stays */
  drop_expect (&c, "a 39.0 39.1 0.3|the 39.1 39.2 0.9|line. 39.2 39.4 0.4|"
      "uh 39.4 39.5 0.2|And 39.6 39.8 0.9", 39.55, "the|uh|And", "a|line.");
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* Commits the words of `words` (distinct: a repeat of the last committed
 * ones would be dropped) 0.1 s each, and trims after each, as the element
 * does after every call; returns them joined. */
static gchar *
commit_all (GstWhisperCommit *c, gchar **words)
{
  for (guint i = 0; words[i]; i++) {
    g_autoptr (GArray) hyp = gst_whisper_timed_words_new ();
    g_autoptr (GArray) out = gst_whisper_timed_words_new ();
    add (hyp, words[i], 0.1 * i, 0.1 * (i + 1), 0.9, 0);
    fail_unless_equals_int (gst_whisper_commit_update (c, hyp, 0, TRUE, out), 1);
    gst_whisper_commit_trim (c, G_MAXUINT64);
  }
  return g_strjoinv ("", words);
}

/* `n` words printf'd from `fmt` with their index. */
static gchar **
numbered (const gchar *fmt, guint n)
{
  gchar **words = g_new0 (gchar *, n + 1);

  for (guint i = 0; i < n; i++)
    words[i] = g_strdup_printf (fmt, i);
  return words;
}

/* The prompt is the last 200 characters of committed text, from a word
 * start: 40 words of 7 bytes are 280; the cut at 80 falls inside word 11,
 * so the prompt starts at word 12 (byte 84). */
GST_START_TEST (test_prompt_cut_at_word)
{
  GstWhisperCommit c;
  GString *want = g_string_new (NULL);

  g_auto (GStrv) forty = numbered (" word%02u", 40);
  g_auto (GStrv) thousand = numbered (" w%04u", 1000);
  g_autofree gchar *all40 = NULL, *all1000 = NULL;

  gst_whisper_commit_init (&c, RATE);
  all40 = commit_all (&c, forty);
  fail_unless_equals_int (strlen (all40), 280);
  for (guint i = 12; i < 40; i++)
    g_string_append_printf (want, " word%02u", i);
  fail_unless_equals_string (gst_whisper_commit_prompt (&c), want->str);
  fail_unless_equals_int (strlen (gst_whisper_commit_prompt (&c)), 196);

  /* Far more text than the prompt (the element keeps a margin only): the
   * prompt is still the last words. */
  gst_whisper_commit_reset (&c);
  all1000 = commit_all (&c, thousand);
  fail_unless_equals_int (strlen (all1000), 6000);
  g_string_truncate (want, 0);
  /* 6 bytes a word: 200 bytes from the end is 4 bytes into word 966 */
  for (guint i = 967; i < 1000; i++)
    g_string_append_printf (want, " w%04u", i);
  fail_unless_equals_string (gst_whisper_commit_prompt (&c), want->str);
  g_string_free (want, TRUE);
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* Checks that the prompt is valid UTF-8, at most 200 characters, and the
 * last `want_len` bytes of `all` (the whole committed text). */
static void
check_prompt_utf8 (GstWhisperCommit *c, const gchar *all, gsize want_len)
{
  const gchar *p = gst_whisper_commit_prompt (c);
  gsize all_len = strlen (all);

  fail_unless (g_utf8_validate (p, -1, NULL), "prompt not UTF-8");
  fail_unless (g_utf8_strlen (p, -1) <= GST_WHISPER_COMMIT_PROMPT_CHARS);
  fail_unless_equals_int (strlen (p), want_len);
  fail_unless_equals_string (p, all + all_len - want_len);
}

/* Multi-byte text: words of 3-byte characters, and one long word without
 * a space where the cut falls inside a character. */
GST_START_TEST (test_prompt_utf8)
{
  GstWhisperCommit c;
  GString *all = g_string_new (NULL);

  gst_whisper_commit_init (&c, RATE);
  /* " 語X" with X a different CJK ideograph each: 7 bytes, 300 of them
   * (2100 bytes: the kept text is cut several times) */
  g_auto (GStrv) cjk = g_new0 (gchar *, 301);
  for (guint i = 0; i < 300; i++) {
    gchar x[8] = { 0, };
    g_unichar_to_utf8 (0x4e00 + i, x);
    cjk[i] = g_strconcat (" 語", x, NULL);
    fail_unless_equals_int (strlen (cjk[i]), 7);
  }
  g_autofree gchar *all_cjk = commit_all (&c, cjk);
  g_string_assign (all, all_cjk);
  /* 200 bytes from the end is byte 1900, inside word 271 (1897-1903): the
   * prompt starts at word 272, 28 words */
  check_prompt_utf8 (&c, all->str, 28 * 7);
  /* the text kept for the prompt was cut at a character */
  fail_unless (g_utf8_validate (c.text->str, c.text->len, NULL), "kept text not UTF-8");
  fail_unless (g_str_has_suffix (all->str, c.text->str));
  fail_unless (c.text->len >= GST_WHISPER_COMMIT_PROMPT_CHARS
      && c.text->len < all->len, "%" G_GSIZE_FORMAT " bytes kept", c.text->len);

  /* one word " é...é!" (1 + 300 + 1 bytes): 200 bytes from its end is the
   * second byte of an "é"; no space to cut at */
  gst_whisper_commit_reset (&c);
  g_string_assign (all, " ");
  for (guint i = 0; i < 150; i++)
    g_string_append (all, "é");
  g_string_append (all, "!");
  {
    g_autoptr (GArray) hyp = gst_whisper_timed_words_new ();
    g_autoptr (GArray) out = gst_whisper_timed_words_new ();
    add (hyp, all->str, 0, 1, 0.9, 0);
    fail_unless_equals_int (gst_whisper_commit_update (&c, hyp, 0, TRUE, out), 1);
    gst_whisper_commit_trim (&c, G_MAXUINT64);
  }
  /* from the next character: byte 103, 199 bytes */
  check_prompt_utf8 (&c, all->str, 199);
  g_string_free (all, TRUE);
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

/* What agreement compares: lower-cased letters and digits, in any script. */
GST_START_TEST (test_normalise)
{
  const gchar *cases[][2] = {
    {" Hello,", "hello"}, {"hello", "hello"}, {" don't", "dont"}, {" 42%", "42"},
    {" ...", ""}, {" ÉCOLE", "école"}, {" Straße!", "straße"}, {" Ωμέγα.", "ωμέγα"},
    {"", ""},
  };
  GstWhisperCommit c;

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree gchar *n = gst_whisper_commit_normalise (cases[i][0]);
    fail_unless_equals_string (n, cases[i][1]);
  }

  /* "Hello," and "hello" agree; "élan" and "elan" do not, "ÉLAN." and
   * "élan" do */
  gst_whisper_commit_init (&c, RATE);
  update_expect (&c, "Hello, 0 0.4|Élan 0.4 0.9", 0, FALSE, "", "Hello,|Élan");
  update_expect (&c, "hello 0 0.4|elan 0.4 0.9", 0, FALSE, "hello", "elan");
  update_expect (&c, "ÉLAN. 0.4 0.9", 0, FALSE, "", "ÉLAN.");
  update_expect (&c, "élan 0.4 0.9", 0, FALSE, "élan", "");
  gst_whisper_commit_clear (&c);
}
GST_END_TEST;

static Suite *
commit_suite (void)
{
  Suite *s = suite_create ("whispersink-commit");
  TCase *tc = tcase_create ("commit");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_agree_prefix);
  tcase_add_test (tc, test_pending_slack);
  tcase_add_test (tc, test_changed_word_blocks);
  tcase_add_test (tc, test_agree_window);
  tcase_add_test (tc, test_dedupe_by_time);
  tcase_add_test (tc, test_dedupe_by_ngram);
  tcase_add_test (tc, test_force_before);
  tcase_add_test (tc, test_agree_before);
  tcase_add_test (tc, test_final);
  tcase_add_test (tc, test_min_probability);
  tcase_add_test (tc, test_unsure_word_heard_in_full);
  tcase_add_test (tc, test_sentence_start_hold);
  tcase_add_test (tc, test_deadline_surer_reading);
  tcase_add_test (tc, test_unread_words_kept);
  tcase_add_test (tc, test_last_word_read_again);
  tcase_add_test (tc, test_context_keep);
  tcase_add_test (tc, test_context_input);
  tcase_add_test (tc, test_speech_from);
  tcase_add_test (tc, test_flush);
  tcase_add_test (tc, test_starts_never_back);
  tcase_add_test (tc, test_new_word_after_pause);
  tcase_add_test (tc, test_trim_prompt);
  tcase_add_test (tc, test_ends_sentence);
  tcase_add_test (tc, test_drop_before_onset);
  tcase_add_test (tc, test_prompt_cut_at_word);
  tcase_add_test (tc, test_prompt_utf8);
  tcase_add_test (tc, test_normalise);
  return s;
}

GST_CHECK_MAIN (commit);
