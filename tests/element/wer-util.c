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
  /* no language: wer_words () as it is */
  return wer_percent_lang (NULL, reference, hypothesis, errors, ref_words);
}

/* ---------------------------------------------------------------------- */
/* English numbers (see wer-util.h for the rules). */

/* What a number word contributes. */
typedef enum {
  NUM_NONE,       /* not a number word */
  NUM_ZERO,       /* "zero": a number of its own, never part of another */
  NUM_ONES,       /* one .. nine */
  NUM_TEENS,      /* ten .. nineteen */
  NUM_TENS,       /* twenty .. ninety */
  NUM_HUNDRED,
  NUM_SCALE,      /* thousand, million, billion, trillion */
  NUM_DIGITS,     /* a number written in digits (only in a group) */
  NUM_A,          /* "a" before "hundred", "thousand", ... (only in a group) */
} NumKind;

typedef enum {
  SUFFIX_NONE,
  SUFFIX_ORDINAL, /* 1st, 2nd, 3rd, 4th, ... */
  SUFFIX_PLURAL,  /* the 1960s */
} Suffix;

typedef struct {
  const gchar *word;
  NumKind kind;
  guint64 value;
  Suffix suffix;
} NumWord;

static const NumWord num_words[] = {
  {"zero", NUM_ZERO, 0, SUFFIX_NONE},
  {"one", NUM_ONES, 1, SUFFIX_NONE}, {"two", NUM_ONES, 2, SUFFIX_NONE},
  {"three", NUM_ONES, 3, SUFFIX_NONE}, {"four", NUM_ONES, 4, SUFFIX_NONE},
  {"five", NUM_ONES, 5, SUFFIX_NONE}, {"six", NUM_ONES, 6, SUFFIX_NONE},
  {"seven", NUM_ONES, 7, SUFFIX_NONE}, {"eight", NUM_ONES, 8, SUFFIX_NONE},
  {"nine", NUM_ONES, 9, SUFFIX_NONE},
  {"ten", NUM_TEENS, 10, SUFFIX_NONE}, {"eleven", NUM_TEENS, 11, SUFFIX_NONE},
  {"twelve", NUM_TEENS, 12, SUFFIX_NONE}, {"thirteen", NUM_TEENS, 13, SUFFIX_NONE},
  {"fourteen", NUM_TEENS, 14, SUFFIX_NONE}, {"fifteen", NUM_TEENS, 15, SUFFIX_NONE},
  {"sixteen", NUM_TEENS, 16, SUFFIX_NONE}, {"seventeen", NUM_TEENS, 17, SUFFIX_NONE},
  {"eighteen", NUM_TEENS, 18, SUFFIX_NONE}, {"nineteen", NUM_TEENS, 19, SUFFIX_NONE},
  {"twenty", NUM_TENS, 20, SUFFIX_NONE}, {"thirty", NUM_TENS, 30, SUFFIX_NONE},
  {"forty", NUM_TENS, 40, SUFFIX_NONE}, {"fifty", NUM_TENS, 50, SUFFIX_NONE},
  {"sixty", NUM_TENS, 60, SUFFIX_NONE}, {"seventy", NUM_TENS, 70, SUFFIX_NONE},
  {"eighty", NUM_TENS, 80, SUFFIX_NONE}, {"ninety", NUM_TENS, 90, SUFFIX_NONE},
  {"hundred", NUM_HUNDRED, 100, SUFFIX_NONE},
  {"thousand", NUM_SCALE, G_GUINT64_CONSTANT (1000), SUFFIX_NONE},
  {"million", NUM_SCALE, G_GUINT64_CONSTANT (1000000), SUFFIX_NONE},
  {"billion", NUM_SCALE, G_GUINT64_CONSTANT (1000000000), SUFFIX_NONE},
  {"trillion", NUM_SCALE, G_GUINT64_CONSTANT (1000000000000), SUFFIX_NONE},
  {"first", NUM_ONES, 1, SUFFIX_ORDINAL}, {"second", NUM_ONES, 2, SUFFIX_ORDINAL},
  {"third", NUM_ONES, 3, SUFFIX_ORDINAL}, {"fourth", NUM_ONES, 4, SUFFIX_ORDINAL},
  {"fifth", NUM_ONES, 5, SUFFIX_ORDINAL}, {"sixth", NUM_ONES, 6, SUFFIX_ORDINAL},
  {"seventh", NUM_ONES, 7, SUFFIX_ORDINAL}, {"eighth", NUM_ONES, 8, SUFFIX_ORDINAL},
  {"ninth", NUM_ONES, 9, SUFFIX_ORDINAL},
  {"tenth", NUM_TEENS, 10, SUFFIX_ORDINAL}, {"eleventh", NUM_TEENS, 11, SUFFIX_ORDINAL},
  {"twelfth", NUM_TEENS, 12, SUFFIX_ORDINAL},
  {"thirteenth", NUM_TEENS, 13, SUFFIX_ORDINAL},
  {"fourteenth", NUM_TEENS, 14, SUFFIX_ORDINAL},
  {"fifteenth", NUM_TEENS, 15, SUFFIX_ORDINAL},
  {"sixteenth", NUM_TEENS, 16, SUFFIX_ORDINAL},
  {"seventeenth", NUM_TEENS, 17, SUFFIX_ORDINAL},
  {"eighteenth", NUM_TEENS, 18, SUFFIX_ORDINAL},
  {"nineteenth", NUM_TEENS, 19, SUFFIX_ORDINAL},
  {"twentieth", NUM_TENS, 20, SUFFIX_ORDINAL}, {"thirtieth", NUM_TENS, 30, SUFFIX_ORDINAL},
  {"fortieth", NUM_TENS, 40, SUFFIX_ORDINAL}, {"fiftieth", NUM_TENS, 50, SUFFIX_ORDINAL},
  {"sixtieth", NUM_TENS, 60, SUFFIX_ORDINAL},
  {"seventieth", NUM_TENS, 70, SUFFIX_ORDINAL},
  {"eightieth", NUM_TENS, 80, SUFFIX_ORDINAL},
  {"ninetieth", NUM_TENS, 90, SUFFIX_ORDINAL},
  {"hundredth", NUM_HUNDRED, 100, SUFFIX_ORDINAL},
  {"thousandth", NUM_SCALE, G_GUINT64_CONSTANT (1000), SUFFIX_ORDINAL},
  {"millionth", NUM_SCALE, G_GUINT64_CONSTANT (1000000), SUFFIX_ORDINAL},
  {"billionth", NUM_SCALE, G_GUINT64_CONSTANT (1000000000), SUFFIX_ORDINAL},
  {"trillionth", NUM_SCALE, G_GUINT64_CONSTANT (1000000000000), SUFFIX_ORDINAL},
  {"twenties", NUM_TENS, 20, SUFFIX_PLURAL}, {"thirties", NUM_TENS, 30, SUFFIX_PLURAL},
  {"forties", NUM_TENS, 40, SUFFIX_PLURAL}, {"fifties", NUM_TENS, 50, SUFFIX_PLURAL},
  {"sixties", NUM_TENS, 60, SUFFIX_PLURAL}, {"seventies", NUM_TENS, 70, SUFFIX_PLURAL},
  {"eighties", NUM_TENS, 80, SUFFIX_PLURAL}, {"nineties", NUM_TENS, 90, SUFFIX_PLURAL},
};

/* Digits longer than this stay as written (no sums over 64 bits). */
#define MAX_DIGITS 15

/* One word of the text before the numbers are read: `brk` when a
 * sentence or clause mark (. , ; : ! ?) came between it and the word
 * before (a number does not go on over one); `unit` the currency word a
 * symbol before it stood for ("$5": "dollar"). */
typedef struct {
  gchar *word;
  gboolean brk;
  const gchar *unit;
} Token;

/* One word of the result: a plain word, or a number. */
typedef struct {
  gchar *word;          /* NULL for a number */
  guint64 value;
  Suffix suffix;
  gboolean oh_digit;    /* "oh five" or "05": a digit after a zero */
  gboolean brk;
} Out;

gboolean
wer_lang_is_english (const gchar *lang)
{
  return lang && (g_ascii_strcasecmp (lang, "en") == 0
      || g_ascii_strncasecmp (lang, "en-", 3) == 0
      || g_ascii_strncasecmp (lang, "en_", 3) == 0
      || g_ascii_strcasecmp (lang, "english") == 0);
}

static const NumWord *
num_word (const gchar *w)
{
  guint i;

  if (!w)
    return NULL;
  for (i = 0; i < G_N_ELEMENTS (num_words); i++)
    if (strcmp (num_words[i].word, w) == 0)
      return &num_words[i];
  return NULL;
}

static gboolean
all_digits (const gchar *w)
{
  if (!*w)
    return FALSE;
  for (; *w; w++)
    if (!g_ascii_isdigit (*w))
      return FALSE;
  return TRUE;
}

/* The currency a symbol stands for, NULL for other characters. */
static const gchar *
currency_unit (gunichar ch)
{
  switch (ch) {
    case '$': return "dollar";
    case 0xa3: return "pound";    /* £ */
    case 0x20ac: return "euro";   /* € */
    default: return NULL;
  }
}

static void
token_end (GArray *tokens, GString *word, gboolean *brk, const gchar **unit)
{
  Token t;

  if (word->len == 0)
    return;
  t.word = g_strdup (word->str);
  t.brk = *brk;
  t.unit = *unit;
  g_array_append_val (tokens, t);
  g_string_truncate (word, 0);
  *brk = FALSE;
  *unit = NULL;
}

static void
token_add (GArray *tokens, const gchar *w, gboolean *brk)
{
  Token t = { g_strdup (w), *brk, NULL };

  g_array_append_val (tokens, t);
  *brk = FALSE;
}

static gboolean
is_digit_at (const gunichar *u, glong n, glong i)
{
  return i >= 0 && i < n && u[i] < 128 && g_ascii_isdigit (u[i]);
}

/* The words of lower-cased `lower` as wer_words () splits them, but: a
 * comma between digits followed by exactly three digits is dropped
 * ("40,000" is one word), a colon or full stop between digits splits
 * without a break ("7:45", "7.45"), "%" is the word "percent", "-" or
 * U+2212 right before a digit at the start of a word is "minus", and a
 * currency symbol right before a digit marks that word's number. */
static GArray *
english_tokens (const gchar *lower)
{
  GArray *tokens = g_array_new (FALSE, FALSE, sizeof (Token));
  GString *word = g_string_new (NULL);
  glong n, i;
  gunichar *u = g_utf8_to_ucs4_fast (lower, -1, &n);
  gboolean brk = FALSE;
  const gchar *unit = NULL;

  for (i = 0; i < n; i++) {
    gunichar ch = u[i];
    gboolean after_digit = word->len > 0 && g_ascii_isdigit (word->str[word->len - 1]);

    if (g_unichar_isalnum (ch) || ch == '\'') {
      g_string_append_unichar (word, ch);
    } else if (ch == ',' && after_digit && all_digits (word->str)
        && is_digit_at (u, n, i + 1) && is_digit_at (u, n, i + 2)
        && is_digit_at (u, n, i + 3) && !is_digit_at (u, n, i + 4)) {
      /* a thousands separator: the word goes on */
    } else if ((ch == ':' || ch == '.') && after_digit && is_digit_at (u, n, i + 1)) {
      token_end (tokens, word, &brk, &unit);
    } else if (ch == '%') {
      token_end (tokens, word, &brk, &unit);
      token_add (tokens, "percent", &brk);
    } else if ((ch == '-' || ch == 0x2212) && word->len == 0 && is_digit_at (u, n, i + 1)) {
      token_add (tokens, "minus", &brk);
    } else if (currency_unit (ch) && word->len == 0 && is_digit_at (u, n, i + 1)) {
      unit = currency_unit (ch);
    } else {
      token_end (tokens, word, &brk, &unit);
      if (ch == '.' || ch == ',' || ch == ';' || ch == ':' || ch == '!' || ch == '?')
        brk = TRUE;
    }
  }
  token_end (tokens, word, &brk, &unit);
  g_string_free (word, TRUE);
  g_free (u);
  return tokens;
}

/* A number being read: `total` the part in thousands and above, `cur`
 * the part below the last scale word, `last` the kind of the last word
 * taken. */
typedef struct {
  gboolean active;
  guint64 total, cur, last_scale;
  NumKind last;
  gboolean brk;
  const gchar *unit;
} Group;

static void
out_word (GArray *out, const gchar *w, gboolean brk)
{
  Out o = { g_strdup (w), 0, SUFFIX_NONE, FALSE, brk };

  g_array_append_val (out, o);
}

static void
out_number (GArray *out, guint64 value, Suffix suffix, gboolean oh_digit, gboolean brk)
{
  Out o = { NULL, value, suffix, oh_digit, brk };

  g_array_append_val (out, o);
}

static void
group_flush (Group *g, GArray *out, Suffix suffix)
{
  guint64 v = g->total + g->cur;

  if (!g->active)
    return;
  out_number (out, v, suffix, FALSE, g->brk);
  if (g->unit) {
    g_autofree gchar *unit = g_strconcat (g->unit, v == 1 ? "" : "s", NULL);
    out_word (out, unit, FALSE);
  }
  memset (g, 0, sizeof (*g));
}

/* Whether a word of kind `k` and value `v` goes on with the number `g`. */
static gboolean
group_takes (const Group *g, NumKind k, guint64 v)
{
  NumKind l = g->last;

  switch (k) {
    case NUM_ONES:
      return l == NUM_HUNDRED || l == NUM_SCALE || l == NUM_TENS;
    case NUM_TEENS:
    case NUM_TENS:
      return l == NUM_HUNDRED || l == NUM_SCALE;
    case NUM_HUNDRED:
      return (l == NUM_ONES || l == NUM_TEENS || l == NUM_TENS || l == NUM_A
          || l == NUM_DIGITS) && g->cur >= 1 && g->cur <= 99;
    case NUM_SCALE:
      return l != NUM_SCALE && g->cur >= 1 && g->cur <= 999
          && (g->last_scale == 0 || v < g->last_scale);
    default:
      return FALSE;
  }
}

static void
group_add (Group *g, NumKind k, guint64 v)
{
  switch (k) {
    case NUM_HUNDRED:
      g->cur = g->cur ? g->cur * 100 : 100;
      break;
    case NUM_SCALE:
      g->total += (g->active ? g->cur : 1) * v;
      g->cur = 0;
      g->last_scale = v;
      break;
    default:
      g->cur += v;
      break;
  }
  g->active = TRUE;
  g->last = k;
}

/* Whether the output item `o` is a number the year and time rule may put
 * a second number after. */
static gboolean
plain_number (const Out *o)
{
  return !o->word && o->suffix == SUFFIX_NONE && !o->oh_digit;
}

/* Reads the numbers of `tokens` (see wer-util.h). */
static GArray *
english_numbers (GArray *tokens)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (Out));
  Group g = { 0, };
  guint i;

  for (i = 0; i < tokens->len; i++) {
    const Token *t = &g_array_index (tokens, Token, i);
    const Token *next = i + 1 < tokens->len ? &g_array_index (tokens, Token, i + 1) : NULL;
    const NumWord *nw = num_word (t->word);
    const NumWord *nx = next && !next->brk ? num_word (next->word) : NULL;
    const gchar *w = t->word;

    if (g.active && t->brk)
      group_flush (&g, out, SUFFIX_NONE);

    if (nw) {
      if (g.active && !group_takes (&g, nw->kind, nw->value))
        group_flush (&g, out, SUFFIX_NONE);
      if (nw->kind == NUM_ZERO) {
        out_number (out, 0, SUFFIX_NONE, FALSE, t->brk);
        continue;
      }
      if (!g.active) {
        g.brk = t->brk;
        g.unit = t->unit;
      }
      group_add (&g, nw->kind, nw->value);
      if (nw->suffix != SUFFIX_NONE)
        group_flush (&g, out, nw->suffix);
      continue;
    }

    if (w[0] == '\'' && g_ascii_isdigit (w[1]))
      w++;        /* '60s: 60s */
    if (all_digits (w)) {
      gsize len = strlen (w);
      group_flush (&g, out, SUFFIX_NONE);
      if (len == 2 && w[0] == '0' && w[1] != '0') {
        out_number (out, w[1] - '0', SUFFIX_NONE, TRUE, t->brk);
      } else if ((w[0] == '0' && len > 1) || len > MAX_DIGITS) {
        out_word (out, w, t->brk);
      } else {
        g.brk = t->brk;
        g.unit = t->unit;
        g.cur = g_ascii_strtoull (w, NULL, 10);
        g.active = TRUE;
        g.last = NUM_DIGITS;
      }
      continue;
    }

    if (strcmp (w, "and") == 0 && g.active && !t->brk
        && (g.last == NUM_HUNDRED || g.last == NUM_SCALE) && nx
        && (nx->kind == NUM_ONES || nx->kind == NUM_TEENS || nx->kind == NUM_TENS))
      continue;   /* "three hundred and twenty" */

    if (strcmp (w, "a") == 0 && nx && nx->suffix == SUFFIX_NONE
        && (nx->kind == NUM_HUNDRED || nx->kind == NUM_SCALE)) {
      group_flush (&g, out, SUFFIX_NONE);
      g.brk = t->brk;
      g.cur = 1;
      g.active = TRUE;
      g.last = NUM_A;
      continue;   /* "a hundred" */
    }

    if ((strcmp (w, "oh") == 0 || strcmp (w, "o") == 0) && !t->brk && nx
        && nx->kind == NUM_ONES && nx->suffix == SUFFIX_NONE) {
      gboolean after_number;
      if (g.active)
        group_flush (&g, out, SUFFIX_NONE);
      after_number = out->len > 0 && plain_number (&g_array_index (out, Out, out->len - 1));
      if (after_number) {
        out_number (out, nx->value, SUFFIX_NONE, TRUE, FALSE);
        i++;
        continue; /* "nineteen oh five" */
      }
    }

    if (strcmp (w, "per") == 0 && next && !next->brk && strcmp (next->word, "cent") == 0) {
      group_flush (&g, out, SUFFIX_NONE);
      out_word (out, "percent", t->brk);
      i++;
      continue;
    }

    group_flush (&g, out, SUFFIX_NONE);
    out_word (out, w, t->brk);
  }
  group_flush (&g, out, SUFFIX_NONE);
  return out;
}

/* Two numbers in a row, the first of 1 to 99 and the second of 10 to 99
 * (plain or plural), are one: "nineteen nineteen", "10:30", "seven forty
 * five", "the nineteen sixties"; so are a number of 1 to 99 and a digit
 * after a zero ("nineteen oh five", "10:05"). */
static void
english_pairs (GArray *out)
{
  guint i, j;

  for (i = 0, j = 0; i < out->len; i++, j++) {
    Out a = g_array_index (out, Out, i);
    if (i + 1 < out->len && plain_number (&a)) {
      const Out *b = &g_array_index (out, Out, i + 1);
      gboolean pair = FALSE;
      if (!b->word && !b->brk && b->oh_digit && a.value >= 1 && a.value <= 99)
        pair = TRUE;
      else if (!b->word && !b->brk && !b->oh_digit && b->suffix != SUFFIX_ORDINAL
          && a.value >= 1 && a.value <= 99 && b->value >= 10 && b->value <= 99)
        pair = TRUE;
      if (pair) {
        a.value = a.value * 100 + b->value;
        a.suffix = b->suffix;
        i++;
      }
    }
    g_array_index (out, Out, j) = a;
  }
  g_array_set_size (out, j);
}

static const gchar *
ordinal_suffix (guint64 v)
{
  if (v % 100 >= 11 && v % 100 <= 13)
    return "th";
  switch (v % 10) {
    case 1: return "st";
    case 2: return "nd";
    case 3: return "rd";
    default: return "th";
  }
}

static gchar **
english_words (const gchar *lower)
{
  GArray *tokens = english_tokens (lower);
  GArray *out = english_numbers (tokens);
  GPtrArray *words = g_ptr_array_new ();
  guint i;

  english_pairs (out);
  for (i = 0; i < out->len; i++) {
    Out *o = &g_array_index (out, Out, i);
    if (o->word)
      g_ptr_array_add (words, o->word);
    else if (o->oh_digit)
      g_ptr_array_add (words, g_strdup_printf ("0%" G_GUINT64_FORMAT, o->value));
    else if (o->value == 1 && o->suffix == SUFFIX_NONE)
      g_ptr_array_add (words, g_strdup ("one"));
    else
      g_ptr_array_add (words, g_strdup_printf ("%" G_GUINT64_FORMAT "%s", o->value,
          o->suffix == SUFFIX_ORDINAL ? ordinal_suffix (o->value)
          : o->suffix == SUFFIX_PLURAL ? "s" : ""));
  }
  g_ptr_array_add (words, NULL);
  for (i = 0; i < tokens->len; i++)
    g_free (g_array_index (tokens, Token, i).word);
  g_array_free (tokens, TRUE);
  g_array_free (out, TRUE);
  return (gchar **) g_ptr_array_free (words, FALSE);
}

gchar **
wer_words_lang (const gchar *text, const gchar *lang)
{
  g_autofree gchar *lower = NULL;

  if (!wer_lang_is_english (lang))
    return wer_words (text);
  lower = g_utf8_strdown (text, -1);
  return english_words (lower);
}

double
wer_percent_lang (const gchar *lang, const gchar *reference, const gchar *hypothesis,
    guint *errors, guint *ref_words)
{
  gchar **ref = wer_words_lang (reference, lang), **hyp = wer_words_lang (hypothesis, lang);
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
