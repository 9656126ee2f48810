/* cea608.c: CEA-608 coding rules (see cea608.h), after 47 CFR 79.101. */
#include "cea608.h"

#include <string.h>

guint8
cea608_parity (guint8 code)
{
  guint8 b = code & 0x7f;
  guint ones = 0;

  for (guint i = 0; i < 7; i++)
    ones += (b >> i) & 1;
  /* 79.101 (a)(1): the eighth bit makes the count of ones odd */
  return (ones & 1) ? b : (b | 0x80);
}

gboolean
cea608_parity_ok (guint8 b)
{
  guint ones = 0;

  for (guint i = 0; i < 8; i++)
    ones += (b >> i) & 1;
  return (ones & 1) == 1;
}

void
cea608_misc_code (Cea608Misc code, guint field, guint8 out[2])
{
  /* 79.101 (j)(1) "Miscellaneous control codes": data channel 1 is 0x14 in
   * field 1 and 0x15 in field 2 */
  out[0] = field ? 0x15 : 0x14;
  out[1] = (guint8) code;
}

gboolean
cea608_pac (guint row, guint indent, guint8 out[2])
{
  /* 79.101 (j)(1) "Preamble address codes": the first byte chooses a pair
   * of rows (row 11 alone), the second byte's 0x20 bit the lower row of
   * the pair; 0x10 | indent / 2 is an indent in steps of 4 columns, white */
  static const guint8 first[CEA608_ROWS + 1] = {
    0, 0x11, 0x11, 0x12, 0x12, 0x15, 0x15, 0x16, 0x16, 0x17, 0x17,
    0x10, 0x13, 0x13, 0x14, 0x14
  };
  static const guint8 lower[CEA608_ROWS + 1] = {
    0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 1
  };

  if (row < 1 || row > CEA608_ROWS || indent > 28 || indent % 4 != 0)
    return FALSE;
  out[0] = first[row];
  out[1] = 0x40 | (lower[row] ? 0x20 : 0) | (indent ? (0x10 | (indent / 4) << 1) : 0);
  return TRUE;
}

/* 79.101 (j)(1) "Character set": the codes 0x20..0x7f that do not show
 * their ASCII character */
static const struct { guint8 code; gunichar c; } basic_diff[] = {
  {0x27, 0x2019},               /* apostrophe */
  {0x2a, 0x00e1},               /* á */
  {0x5c, 0x00e9},               /* é */
  {0x5e, 0x00ed},               /* í */
  {0x5f, 0x00f3},               /* ó */
  {0x60, 0x00fa},               /* ú */
  {0x7b, 0x00e7},               /* ç */
  {0x7c, 0x00f7},               /* ÷ */
  {0x7d, 0x00d1},               /* Ñ */
  {0x7e, 0x00f1},               /* ñ */
  {0x7f, 0x25a0},               /* solid block */
};

/* 79.101 (j)(1) "Special characters": 0x11 0x30..0x3f (0x39 is the
 * transparent space) */
static const gunichar special_chars[16] = {
  0x00ae, 0x00b0, 0x00bd, 0x00bf, 0x2122, 0x00a2, 0x00a3, 0x266a,
  0x00e0, 0x0000, 0x00e8, 0x00e2, 0x00ea, 0x00ee, 0x00f4, 0x00fb
};

/* The extended character set (EIA-608 as incorporated by 79.101): 0x12
 * 0x20..0x3f (Spanish, miscellaneous, French) and 0x13 0x20..0x3f
 * (Portuguese, German, Danish), each with the basic character sent before
 * it for decoders without the set. */
static const struct { gunichar c; guint8 fallback; } extended_chars[2][32] = {
  {
    {0x00c1, 'A'}, {0x00c9, 'E'}, {0x00d3, 'O'}, {0x00da, 'U'},
    {0x00dc, 'U'}, {0x00fc, 'u'}, {0x2018, '\''}, {0x00a1, '!'},
    {'*', '\''}, {0x0027, '\''}, {0x2014, '-'}, {0x00a9, 'c'},
    {0x2120, ' '}, {0x2022, '.'}, {0x201c, '"'}, {0x201d, '"'},
    {0x00c0, 'A'}, {0x00c2, 'A'}, {0x00c7, 'C'}, {0x00c8, 'E'},
    {0x00ca, 'E'}, {0x00cb, 'E'}, {0x00eb, 'e'}, {0x00ce, 'I'},
    {0x00cf, 'I'}, {0x00ef, 'i'}, {0x00d4, 'O'}, {0x00d9, 'U'},
    {0x00f9, 'u'}, {0x00db, 'U'}, {0x00ab, '"'}, {0x00bb, '"'},
  },
  {
    {0x00c3, 'A'}, {0x00e3, 'a'}, {0x00cd, 'I'}, {0x00cc, 'I'},
    {0x00ec, 'i'}, {0x00d2, 'O'}, {0x00f2, 'o'}, {0x00d5, 'O'},
    {0x00f5, 'o'}, {'{', '('}, {'}', ')'}, {'\\', '/'},
    {'^', ' '}, {'_', '-'}, {'|', '!'}, {'~', '-'},
    {0x00c4, 'A'}, {0x00e4, 'a'}, {0x00d6, 'O'}, {0x00f6, 'o'},
    {0x00df, 's'}, {0x00a5, 'Y'}, {0x00a4, 'C'}, {0x00a6, '!'},
    {0x00c5, 'A'}, {0x00e5, 'a'}, {0x00d8, 'O'}, {0x00f8, 'o'},
    {0x250c, '+'}, {0x2510, '+'}, {0x2514, '+'}, {0x2518, '+'},
  },
};

gunichar
cea608_basic_char (guint8 code)
{
  code &= 0x7f;
  if (code < 0x20)
    return 0;
  for (guint i = 0; i < G_N_ELEMENTS (basic_diff); i++)
    if (basic_diff[i].code == code)
      return basic_diff[i].c;
  return code;
}

gunichar
cea608_special_char (guint8 lo)
{
  lo &= 0x7f;
  if (lo < 0x30 || lo > 0x3f)
    return 0;
  return special_chars[lo - 0x30];
}

gunichar
cea608_extended_char (guint8 hi, guint8 lo)
{
  hi &= 0x7f;
  lo &= 0x7f;
  if ((hi != 0x12 && hi != 0x13) || lo < 0x20 || lo > 0x3f)
    return 0;
  return extended_chars[hi - 0x12][lo - 0x20].c;
}

Cea608CharKind
cea608_map_char (gunichar c, guint8 *hi, guint8 *lo, guint8 *fallback)
{
  guint8 h = 0, l = 0, f = 0;
  Cea608CharKind kind = CEA608_CHAR_NONE;

  if (c == 0)
    goto done;
  /* the plain apostrophe is basic 0x27 too */
  if (c == '\'') {
    h = 0x27;
    kind = CEA608_CHAR_BASIC;
    goto done;
  }
  for (guint i = 0; i < G_N_ELEMENTS (basic_diff); i++) {
    if (basic_diff[i].c == c) {
      h = basic_diff[i].code;
      kind = CEA608_CHAR_BASIC;
      goto done;
    }
  }
  if (c >= 0x20 && c < 0x7f && cea608_basic_char ((guint8) c) == c) {
    h = (guint8) c;
    kind = CEA608_CHAR_BASIC;
    goto done;
  }
  for (guint i = 0; i < 16; i++) {
    if (special_chars[i] && special_chars[i] == c) {
      h = 0x11;
      l = 0x30 + i;
      kind = CEA608_CHAR_SPECIAL;
      goto done;
    }
  }
  for (guint s = 0; s < 2; s++) {
    for (guint i = 0; i < 32; i++) {
      if (extended_chars[s][i].c == c) {
        h = 0x12 + s;
        l = 0x20 + i;
        f = extended_chars[s][i].fallback;
        kind = CEA608_CHAR_EXTENDED;
        goto done;
      }
    }
  }

done:
  if (hi)
    *hi = h;
  if (lo)
    *lo = l;
  if (fallback)
    *fallback = f;
  return kind;
}

/* The replacement of a character outside the set, as a string of
 * characters in it, or NULL to try its decomposition. */
static const gchar *
replacement (gunichar c)
{
  switch (c) {
    case 0x2032:               /* prime */
    case 0x201b:
    case 0x00b4:
    case 0x0060:
      return "'";
    case 0x201e:
    case 0x201f:
    case 0x2033:
      return "\"";
    case 0x2010:
    case 0x2011:
    case 0x2012:
    case 0x2013:
    case 0x2212:
      return "-";
    case 0x2015:
      return "\xe2\x80\x94";   /* em dash */
    case 0x2026:
      return "...";
    case 0x2039:
      return "<";
    case 0x203a:
      return ">";
    case 0x00b7:
      return ".";
    case 0x266b:
    case 0x266c:
      return "\xe2\x99\xaa";   /* eighth note */
    case 0x20ac:
      return "EUR";
    case 0x00d7:
      return "x";
    case 0x0141:               /* letters without a decomposition */
      return "L";
    case 0x0142:
      return "l";
    case 0x0110:
      return "D";
    case 0x0111:
      return "d";
    case 0x0131:
      return "i";
    case 0x00c6:
      return "AE";
    case 0x00e6:
      return "ae";
    case 0x0152:
      return "OE";
    case 0x0153:
      return "oe";
    case 0x00de:
      return "Th";
    case 0x00fe:
      return "th";
    default:
      return NULL;
  }
}

gchar *
cea608_normalize (const gchar *utf8, guint *n_replaced, guint *n_dropped)
{
  GString *out = g_string_new (NULL);
  guint replaced = 0, dropped = 0;
  gboolean space = FALSE;

  if (!utf8)
    utf8 = "";
  for (const gchar *p = utf8; *p; ) {
    gunichar c = g_utf8_get_char_validated (p, -1);
    const gchar *next;

    if (c == (gunichar) - 1 || c == (gunichar) - 2) {
      /* invalid UTF-8: one byte dropped */
      dropped++;
      p++;
      continue;
    }
    next = g_utf8_next_char (p);
    p = next;

    if (g_unichar_isspace (c) || c == 0x00a0 || c == 0x202f || c == 0x2007) {
      if (c != ' ' && c != '\n' && c != '\t' && c != '\r')
        replaced++;
      space = TRUE;
      continue;
    }
    if (g_unichar_iscntrl (c) || g_unichar_type (c) == G_UNICODE_FORMAT) {
      dropped++;
      continue;
    }
    {
      const gchar *r = NULL;
      gchar buf[8] = { 0 };
      gunichar d[G_UNICHAR_MAX_DECOMPOSITION_LENGTH];
      gsize n;

      if (cea608_map_char (c, NULL, NULL, NULL) != CEA608_CHAR_NONE) {
        g_unichar_to_utf8 (c, buf);
        r = buf;
      } else if ((r = replacement (c))) {
        replaced++;
      } else {
        /* a letter with a mark the set lacks: the letter without it (the
         * decomposition's first character, when that one is in the set) */
        n = g_unichar_fully_decompose (c, TRUE, d, G_N_ELEMENTS (d));
        if (n >= 1 && d[0] != c && cea608_map_char (d[0], NULL, NULL, NULL) != CEA608_CHAR_NONE) {
          g_unichar_to_utf8 (d[0], buf);
          r = buf;
          replaced++;
        }
      }
      if (r) {
        if (space && out->len > 0)
          g_string_append_c (out, ' ');
        space = FALSE;
        g_string_append (out, r);
        continue;
      }
    }
    dropped++;
  }
  while (out->len > 0 && out->str[out->len - 1] == ' ')
    g_string_truncate (out, out->len - 1);

  if (n_replaced)
    *n_replaced = replaced;
  if (n_dropped)
    *n_dropped = dropped;
  return g_string_free (out, FALSE);
}

GPtrArray *
cea608_break_rows (const gchar *normalized, guint width)
{
  GPtrArray *rows = g_ptr_array_new_with_free_func (g_free);
  gchar **words;
  GString *row = g_string_new (NULL);
  glong row_len = 0;

  if (width == 0 || width > CEA608_COLUMNS)
    width = CEA608_COLUMNS;
  words = g_strsplit (normalized ? normalized : "", " ", -1);
  for (gchar **w = words; *w; w++) {
    const gchar *word = *w;
    glong len = g_utf8_strlen (word, -1);

    if (len == 0)
      continue;
    if (row_len > 0 && row_len + 1 + len <= (glong) width) {
      g_string_append_c (row, ' ');
      g_string_append (row, word);
      row_len += 1 + len;
      continue;
    }
    if (row_len > 0) {
      g_ptr_array_add (rows, g_string_free (row, FALSE));
      row = g_string_new (NULL);
      row_len = 0;
    }
    /* a word longer than a row fills whole rows */
    while (len > (glong) width) {
      const gchar *cut = g_utf8_offset_to_pointer (word, width);
      g_ptr_array_add (rows, g_strndup (word, cut - word));
      word = cut;
      len -= width;
    }
    g_string_append (row, word);
    row_len = len;
  }
  if (row_len > 0)
    g_ptr_array_add (rows, g_string_free (row, FALSE));
  else
    g_string_free (row, TRUE);
  g_strfreev (words);
  return rows;
}

static gboolean
chunk_fits (const gchar *text, guint max_rows)
{
  GPtrArray *rows = cea608_break_rows (text, CEA608_COLUMNS);
  gboolean fits = rows->len <= max_rows;
  g_ptr_array_unref (rows);
  return fits;
}

GPtrArray *
cea608_split_captions (const gchar *normalized, guint max_rows)
{
  GPtrArray *rows = cea608_break_rows (normalized, CEA608_COLUMNS);
  gchar **words = g_strsplit (normalized ? normalized : "", " ", -1);
  guint nwords = g_strv_length (words);
  glong total = g_utf8_strlen (normalized ? normalized : "", -1);
  guint n;
  GPtrArray *out = NULL;

  if (max_rows == 0)
    max_rows = 1;
  n = (rows->len + max_rows - 1) / max_rows;
  g_ptr_array_unref (rows);
  if (n <= 1) {
    out = g_ptr_array_new_with_free_func (g_free);
    if (total > 0)
      g_ptr_array_add (out, g_strdup (normalized));
    g_strfreev (words);
    return out;
  }

  /* n captions with cuts near k * total / n characters; one more caption
   * when a piece needs more rows than max_rows */
  for (; n <= nwords + 1; n++) {
    GString *cur = g_string_new (NULL);
    glong done = 0;
    guint k = 1;
    gboolean fits = TRUE;

    out = g_ptr_array_new_with_free_func (g_free);
    for (guint i = 0; i < nwords; i++) {
      glong len = g_utf8_strlen (words[i], -1);
      if (len == 0)
        continue;
      if (cur->len > 0 && k < n && done + len / 2 > (glong) ((total * k) / n)) {
        g_ptr_array_add (out, g_string_free (cur, FALSE));
        cur = g_string_new (NULL);
        k++;
      }
      if (cur->len > 0)
        g_string_append_c (cur, ' ');
      g_string_append (cur, words[i]);
      done += len + 1;
    }
    if (cur->len > 0)
      g_ptr_array_add (out, g_string_free (cur, FALSE));
    else
      g_string_free (cur, TRUE);
    for (guint i = 0; i < out->len && fits; i++)
      fits = chunk_fits (g_ptr_array_index (out, i), max_rows);
    if (fits)
      break;
    g_ptr_array_unref (out);
    out = NULL;
  }
  g_strfreev (words);
  if (!out) {
    /* cannot happen (one word a caption fits), kept for safety */
    out = g_ptr_array_new_with_free_func (g_free);
    g_ptr_array_add (out, g_strdup (normalized));
  }
  return out;
}

void
cea608_writer_init (Cea608Writer *w)
{
  w->pairs = g_array_new (FALSE, FALSE, sizeof (guint16));
  w->pending = -1;
}

void
cea608_writer_clear (Cea608Writer *w)
{
  if (w->pairs)
    g_array_unref (w->pairs);
  w->pairs = NULL;
  w->pending = -1;
}

static void
append_pair (Cea608Writer *w, guint8 hi, guint8 lo)
{
  guint16 p = (guint16) (hi << 8 | lo);
  g_array_append_val (w->pairs, p);
}

void
cea608_writer_flush (Cea608Writer *w)
{
  if (w->pending >= 0) {
    append_pair (w, (guint8) w->pending, 0x00);
    w->pending = -1;
  }
}

void
cea608_writer_code (Cea608Writer *w, guint8 hi, guint8 lo)
{
  cea608_writer_flush (w);
  /* 79.101 (a)(4): control codes are sent twice, the decoder acts on the
   * first and ignores the repeat */
  append_pair (w, hi, lo);
  append_pair (w, hi, lo);
}

void
cea608_writer_misc (Cea608Writer *w, Cea608Misc code, guint field)
{
  guint8 b[2];
  cea608_misc_code (code, field, b);
  cea608_writer_code (w, b[0], b[1]);
}

void
cea608_writer_pac (Cea608Writer *w, guint row, guint indent)
{
  guint8 b[2];
  if (cea608_pac (row, indent, b))
    cea608_writer_code (w, b[0], b[1]);
}

void
cea608_writer_text (Cea608Writer *w, const gchar *normalized)
{
  for (const gchar *p = normalized; p && *p; p = g_utf8_next_char (p)) {
    gunichar c = g_utf8_get_char (p);
    guint8 hi, lo, fb;

    switch (cea608_map_char (c, &hi, &lo, &fb)) {
      case CEA608_CHAR_BASIC:
        if (w->pending >= 0) {
          append_pair (w, (guint8) w->pending, hi);
          w->pending = -1;
        } else {
          w->pending = hi;
        }
        break;
      case CEA608_CHAR_SPECIAL:
        cea608_writer_code (w, hi, lo);
        break;
      case CEA608_CHAR_EXTENDED:
        /* the fallback character right before the extended code, which
         * backs over it (EIA-608 extended character set) */
        if (w->pending >= 0) {
          append_pair (w, (guint8) w->pending, fb);
          w->pending = -1;
        } else {
          append_pair (w, fb, 0x00);
        }
        cea608_writer_code (w, hi, lo);
        break;
      case CEA608_CHAR_NONE:
        break;
    }
  }
}

guint
cea608_text_pairs (const gchar *normalized)
{
  Cea608Writer w;
  guint n;

  cea608_writer_init (&w);
  cea608_writer_text (&w, normalized);
  cea608_writer_flush (&w);
  n = w.pairs->len;
  cea608_writer_clear (&w);
  return n;
}
