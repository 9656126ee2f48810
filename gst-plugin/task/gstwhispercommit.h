/* gstwhispercommit.h: the live commit policy of whispersink, LocalAgreement
 * over timed words.
 *
 * Live, the engine decodes the whole uncommitted buffer again with every
 * chunk of new audio. A word is committed (sent downstream, never revised)
 * once two consecutive decodes agree on it: the longest common prefix of
 * the previous call's uncommitted words and this call's, compared by their
 * text without case and punctuation and at most a second apart in time.
 * That is LocalAgreement-2 of Macháček, Dabre and Bojar, "Turning Whisper
 * into Real-Time Transcription System" (https://arxiv.org/abs/2307.14743;
 * its code: https://github.com/ufal/whisper_streaming). Words a decode gives
 * again for audio already committed are dropped by time (starting before
 * the committed end less 0.1 s, as that code does, or centred before it)
 * and by text (the first 1 to 5 words when they repeat the last committed
 * ones, as it does too, when the decode's first word starts within a
 * second of the committed end or, after a context splice (`context_end`,
 * gstwhispercontext.h), of the splice: the alignment stretched the
 * context's last word, "them.", over the pause after the splice, past the
 * time rule, and it was committed again before the next speaker's
 * words). The time rule spares a word that ends more than
 * GST_WHISPER_COMMIT_NEW_AFTER_S after the committed end and is not the last
 * committed word again (the same word, or one that starts where that word
 * starts, whatever its text: a re-read word's end moves later with each
 * decode): the alignment gives a word after a pause the pause
 * as well, so that such a word can start before the committed end and
 * would be lost. A word that
 * would miss the latency budget (counted from its end) if it waited for
 * one more decode is committed then (`force_before`): of this decode's
 * reading and the previous decode's reading of the same audio (its last
 * word ending within 0.3 s of this one's, the
 * word after it agreeing) the one with the higher mean word probability
 * (the newer on a tie). A
 * drain commits everything. With `agree_before` 0 agreement commits nothing and
 * every word waits for its deadline (whispersink's live-commit=deadline).
 * An agreed word whose probability in the newer decode is below
 * `min_probability` waits too, and so do the words after it: two decodes
 * that both heard too little of an utterance's first word often agree on
 * the wrong one, with a low probability, while words heard in full come at 0.7 and above (whispersink's
 * live-min-probability). Such a word waits at most until the decoded
 * audio (`decoded_end`) reaches GST_WHISPER_COMMIT_UNSURE_WAIT_S past its
 * end: heard in full, with what follows it, the agreed reading is the one
 * more audio gives too, and a word that stays unsure with no deadline near
 * it would block everything after it. A shorter wait commits readings
 * that the next half second of audio corrects; with a budget of a few
 * seconds the deadline comes first anyway.
 *
 * A decode that reads committed words again and nothing after them does
 * not replace the previous decode's words where the voice activity
 * detector hears speech (`speech`): they stay pending as that decode read
 * them, not agreed with themselves, until a decode reads that audio or
 * their deadline commits them. After a committed sentence and a pause,
 * Whisper often ends its transcript with the committed words; dropped, the
 * next sentence waited for a later decode to read it again, past its
 * deadline.
 *
 * A sentence's first word after a pause (the first word decoded after
 * the committed ones when nothing is committed yet, when the last
 * committed word ends a sentence, or when it starts
 * GST_WHISPER_COMMIT_PAUSE_S or more after the committed end) is
 * committed by agreement only once both agreeing decodes heard
 * `start_hold` of audio after its end, else by its deadline; the words
 * after it wait with it. Two decodes half a second apart that heard
 * little after an utterance's first words agree on a wrong reading with
 * fair probabilities ("How do you marry" at 0.7 to 0.99 for "Had he
 * married", which the decodes read right once the rest of the sentence
 * was heard); agreement between such decodes is not evidence enough.
 *
 * Pure bookkeeping, no GStreamer: times are run sample indices
 * (gstwhisperwindow.h). Used by the inference task only. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  gchar *text;          /* as Whisper writes it: leading space, punctuation merged */
  guint64 start, end;   /* run sample indices */
  double probability;
  guint segment;        /* index of its segment within the call that decoded it */
} GstWhisperTimedWord;

void gst_whisper_timed_word_clear (GstWhisperTimedWord *word);
/* A GArray of GstWhisperTimedWord that clears its elements. */
GArray *gst_whisper_timed_words_new (void);

/* A decode's word that ends this long after the committed end is new
 * speech, wherever it starts, unless it is the last committed word again
 * (gst_whisper_commit_same_word). */
#define GST_WHISPER_COMMIT_NEW_AFTER_S 0.3

/* A word that starts this long after the committed end starts after a
 * pause (start_hold). */
#define GST_WHISPER_COMMIT_PAUSE_S 0.5

/* An agreed word below min_probability waits until the decoded audio
 * reaches this far past its end, then is committed as agreed. */
#define GST_WHISPER_COMMIT_UNSURE_WAIT_S 3.0

/* Last committed words compared with a decode's first ones. */
#define GST_WHISPER_COMMIT_NGRAM 5
/* Committed text kept for the prompt (whisper_streaming keeps 200
 * characters). */
#define GST_WHISPER_COMMIT_PROMPT_CHARS 200

typedef struct {
  gint rate;
  GArray *pending;         /* GstWhisperTimedWord: the last decode's words after the
                              committed ones, not agreed on yet */
  gchar *tail[GST_WHISPER_COMMIT_NGRAM];  /* normalised texts of the last committed
                                             words, oldest first; NULL: none */
  guint64 committed_end;   /* end of the last committed word (run index) */
  gboolean any_committed;  /* since the last reset */
  GArray *in_buffer;       /* GstWhisperTimedWord: committed words whose audio is
                              still in the buffer (decoded again: not in the prompt) */
  GString *text;           /* committed text before the buffer, since the last reset
                              (the prompt's last GST_WHISPER_COMMIT_PROMPT_CHARS and a
                              little more) */
  guint64 n_committed;     /* words, since the last reset */
  guint64 n_forced;        /* of which committed by the deadline or a drain */
  guint64 agree_before;    /* agreed words ending after it wait for the deadline
                              (G_MAXUINT64 after init and reset: none
                              wait; 0: all do) */
  double min_probability;  /* agreed words less probable than this wait for the
                              deadline (0 after init: none wait) */
  guint64 decoded_end;     /* end of the audio the decode given to the next
                              update heard (run index; 0 after init and reset:
                              unsure words wait for their deadline) */
  guint64 context_end;     /* where that decode's context of committed speech
                              ends, its splice (run index; 0: no context) */
  guint context_words;     /* words that decode read in its context (left out
                              of the words given to the update) */
  guint64 start_hold;      /* a sentence's first word after a pause is committed by
                              agreement only when both decodes heard this much
                              audio after it (samples; 0 after init: no hold) */
  guint64 pending_decoded_end;  /* decoded_end of the decode that read `pending` */
  gboolean pending_unread; /* `pending` is a decode's before the last, kept
                              because the last left that speech unread */
  GArray *speech;          /* GstWhisperCommitSpan: the voice activity detector's
                              speech in the audio of the decode given to the next
                              update (run indices, in order; empty: no detector
                              ran or it heard none, and unread words are not
                              kept) */
} GstWhisperCommit;

/* One stretch of audio, [start, end) in run sample indices. */
typedef struct {
  guint64 start, end;
} GstWhisperCommitSpan;

void gst_whisper_commit_init (GstWhisperCommit *c, gint rate);
void gst_whisper_commit_clear (GstWhisperCommit *c);
/* A new run (new segment, GAP, flush): nothing pending, nothing committed. */
void gst_whisper_commit_reset (GstWhisperCommit *c);

/* Feeds one decode's words (`hyp`, in order, emptied: the words are moved
 * out of it) and appends the words committed now to `out` (a
 * gst_whisper_timed_words_new () array), in order, never starting before
 * the previous committed end (moved to it). Words ending before
 * `force_before` are committed without agreement (0: none); `final`
 * commits every word. Returns how many were committed. */
guint gst_whisper_commit_update (GstWhisperCommit *c, GArray *hyp, guint64 force_before,
    gboolean final, GArray *out);
/* Commits what is pending without a new decode (a drain with no new
 * audio, or audio about to be dropped). */
guint gst_whisper_commit_flush (GstWhisperCommit *c, GArray *out);

/* The buffer now starts at run index `buffer_start`: the committed words
 * that end there (or 0.1 s after) join the prompt text. */
void gst_whisper_commit_trim (GstWhisperCommit *c, guint64 buffer_start);

/* The committed text before the buffer, which the next decode is
 * conditioned on: the last GST_WHISPER_COMMIT_PROMPT_CHARS characters,
 * from a word start. (Committed text whose audio the decode sees again
 * would make Whisper skip that audio: it continues after its prompt.) */
const gchar *gst_whisper_commit_prompt (const GstWhisperCommit *c);

/* Whether the last committed word ends a sentence: its text ends in ".",
 * "?" or "!" (or "…"), before any closing quotes or brackets, and is not
 * a title's or an initial's "." ("Mr.", "F."). FALSE when nothing is
 * committed since the last reset. */
gboolean gst_whisper_commit_ends_sentence (const GstWhisperCommit *c);

/* A word may end this much past a detector's onset of speech and still be
 * the noise before it (two steps of the word alignment). */
#define GST_WHISPER_COMMIT_ONSET_SLACK_S 0.04
/* A word that ends this much or more before the onset lies in the
 * detector's pad before it. */
#define GST_WHISPER_COMMIT_ONSET_PAD_S 0.2

/* Leaves out of a decode's words (`hyp`, in order) those read from the
 * noise before a sentence whose onset the voice activity detector put at
 * run index `onset`: of the words that end by the onset (with
 * GST_WHISPER_COMMIT_ONSET_SLACK_S), those after the committed end and
 * less probable than min_probability, up to the last of them that ends a
 * sentence or that ends GST_WHISPER_COMMIT_ONSET_PAD_S or more before the
 * onset; none if none does. The noise came as a sentence of its own
 * ("smoke." before "Had he married"); a sentence's own first word, which
 * base's alignment ended 20 to 40 ms past the onset at probabilities of
 * 0.02 to 0.57 ("He began", "And so"), does not end one. A word that ends
 * in the pad kept before the onset is the pad's noise read as a word
 * ("spell the temperature"): left in, the next call saw it as speech the
 * detector missed and decoded the whole buffer instead, which read "The
 * temperature", and the calls after that switched between the two inputs
 * and readings, so that no two decodes agreed and the deadline committed
 * whichever the last one gave. Appends the
 * words left out to `dropped` (moved out of `hyp`) and returns how many. */
guint gst_whisper_commit_drop_before_onset (const GstWhisperCommit *c, GArray *hyp,
    guint64 onset, GArray *dropped);

/* Lower-cased letters and digits of a word (what agreement compares). */
gchar *gst_whisper_commit_normalise (const gchar *text);

/* Whether two normalised words may be one word decoded twice: equal, one
 * the start of the other ("american", "americans"), or the same first
 * three characters ("dashwood", "dashwoods'"). */
gboolean gst_whisper_commit_same_word (const gchar *a, const gchar *b);

/* Before a decode that ends at run sample `call_end`, `lag_s` seconds
 * after that end now: how many seconds it may take before the oldest
 * pending word (it waits for this decode) is later than `budget_s` after
 * its end, with `margin_s` to spare; 0 when it would be late already, NAN
 * when none is pending. */
double gst_whisper_commit_pending_slack (const GstWhisperCommit *c, guint64 call_end,
    double lag_s, double budget_s, double margin_s);

G_END_DECLS
