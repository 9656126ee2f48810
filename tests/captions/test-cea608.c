/* test-cea608.c: the CEA-608 coding rules of gst-plugin/captions/cea608.c
 * against the tables of 47 CFR 79.101 (which restates EIA-608): parity,
 * the basic, special and extended character sets, preamble address codes,
 * miscellaneous control codes, the doubling of codes, row breaking and the
 * replacement rule of docs/captions.md. GLib only, no GStreamer. */
#include <glib.h>
#include <string.h>

#include "cea608.h"

/* 79.101 (a)(1): odd parity in bit 7 */
static void
test_parity (void)
{
  g_assert_cmphex (cea608_parity (0x00), ==, 0x80);     /* null: 0x80 */
  g_assert_cmphex (cea608_parity (0x14), ==, 0x94);     /* control code byte */
  g_assert_cmphex (cea608_parity (0x2c), ==, 0x2c);
  g_assert_cmphex (cea608_parity (0x20), ==, 0x20);
  g_assert_cmphex (cea608_parity (0x41), ==, 0xc1);     /* 'A' */
  for (guint b = 0; b < 128; b++) {
    guint8 p = cea608_parity (b);
    g_assert_true (cea608_parity_ok (p));
    g_assert_cmphex (p & 0x7f, ==, b);
  }
  g_assert_false (cea608_parity_ok (0x00));
  g_assert_false (cea608_parity_ok (0x14));
}

/* 79.101 (j)(1) "Miscellaneous control codes": 0x14 (field 1) or 0x15
 * (field 2), then 0x20 (RCL) ... 0x2f (EOC) */
static void
test_misc_codes (void)
{
  guint8 b[2];
  static const struct { Cea608Misc code; guint8 lo; } table[] = {
    {CEA608_RCL, 0x20}, {CEA608_BS, 0x21}, {CEA608_AOF, 0x22}, {CEA608_AON, 0x23},
    {CEA608_DER, 0x24}, {CEA608_RU2, 0x25}, {CEA608_RU3, 0x26}, {CEA608_RU4, 0x27},
    {CEA608_FON, 0x28}, {CEA608_RDC, 0x29}, {CEA608_TR, 0x2a}, {CEA608_RTD, 0x2b},
    {CEA608_EDM, 0x2c}, {CEA608_CR, 0x2d}, {CEA608_ENM, 0x2e}, {CEA608_EOC, 0x2f},
  };
  for (guint i = 0; i < G_N_ELEMENTS (table); i++) {
    cea608_misc_code (table[i].code, 0, b);
    g_assert_cmphex (b[0], ==, 0x14);
    g_assert_cmphex (b[1], ==, table[i].lo);
    cea608_misc_code (table[i].code, 1, b);
    g_assert_cmphex (b[0], ==, 0x15);
    g_assert_cmphex (b[1], ==, table[i].lo);
  }
  /* EOC with parity, as it goes on the wire: 0x94 0x2f */
  cea608_misc_code (CEA608_EOC, 0, b);
  g_assert_cmphex (cea608_parity (b[0]), ==, 0x94);
  g_assert_cmphex (cea608_parity (b[1]), ==, 0x2f);
}

/* 79.101 (j)(1) "Preamble address codes" (table of row assignments) */
static void
test_pac (void)
{
  static const guint8 hi[16] = { 0, 0x11, 0x11, 0x12, 0x12, 0x15, 0x15, 0x16, 0x16,
    0x17, 0x17, 0x10, 0x13, 0x13, 0x14, 0x14 };
  static const guint8 lo[16] = { 0, 0x40, 0x60, 0x40, 0x60, 0x40, 0x60, 0x40, 0x60,
    0x40, 0x60, 0x40, 0x40, 0x60, 0x40, 0x60 };
  guint8 b[2];

  for (guint row = 1; row <= 15; row++) {
    g_assert_true (cea608_pac (row, 0, b));
    g_assert_cmphex (b[0], ==, hi[row]);
    g_assert_cmphex (b[1], ==, lo[row]);
    /* indent 4: 0x52 / 0x72; indent 28: 0x5e / 0x7e */
    g_assert_true (cea608_pac (row, 4, b));
    g_assert_cmphex (b[1], ==, lo[row] | 0x12);
    g_assert_true (cea608_pac (row, 28, b));
    g_assert_cmphex (b[1], ==, lo[row] | 0x1e);
  }
  g_assert_false (cea608_pac (0, 0, b));
  g_assert_false (cea608_pac (16, 0, b));
  g_assert_false (cea608_pac (15, 3, b));
  g_assert_false (cea608_pac (15, 32, b));
}

static Cea608CharKind
map (const gchar *utf8, guint8 *hi, guint8 *lo, guint8 *fb)
{
  return cea608_map_char (g_utf8_get_char (utf8), hi, lo, fb);
}

/* 79.101 (j)(1) "Character set" and the special and extended characters */
static void
test_characters (void)
{
  guint8 hi, lo, fb;

  /* basic: ASCII where the table agrees, and its exceptions */
  g_assert_cmpint (map ("A", &hi, NULL, NULL), ==, CEA608_CHAR_BASIC);
  g_assert_cmphex (hi, ==, 0x41);
  g_assert_cmpint (map ("\xc3\xa1", &hi, NULL, NULL), ==, CEA608_CHAR_BASIC);   /* á */
  g_assert_cmphex (hi, ==, 0x2a);
  g_assert_cmpint (map ("\xc3\xa9", &hi, NULL, NULL), ==, CEA608_CHAR_BASIC);   /* é */
  g_assert_cmphex (hi, ==, 0x5c);
  g_assert_cmpint (map ("\xc3\xad", &hi, NULL, NULL), ==, CEA608_CHAR_BASIC);   /* í */
  g_assert_cmphex (hi, ==, 0x5e);
  g_assert_cmpint (map ("\xc3\xb3", &hi, NULL, NULL), ==, CEA608_CHAR_BASIC);   /* ó */
  g_assert_cmphex (hi, ==, 0x5f);
  g_assert_cmpint (map ("\xc3\xba", &hi, NULL, NULL), ==, CEA608_CHAR_BASIC);   /* ú */
  g_assert_cmphex (hi, ==, 0x60);
  g_assert_cmpint (map ("\xc3\xa7", &hi, NULL, NULL), ==, CEA608_CHAR_BASIC);   /* ç */
  g_assert_cmphex (hi, ==, 0x7b);
  g_assert_cmpint (map ("\xc3\xb7", &hi, NULL, NULL), ==, CEA608_CHAR_BASIC);   /* ÷ */
  g_assert_cmphex (hi, ==, 0x7c);
  g_assert_cmpint (map ("\xc3\x91", &hi, NULL, NULL), ==, CEA608_CHAR_BASIC);   /* Ñ */
  g_assert_cmphex (hi, ==, 0x7d);
  g_assert_cmpint (map ("\xc3\xb1", &hi, NULL, NULL), ==, CEA608_CHAR_BASIC);   /* ñ */
  g_assert_cmphex (hi, ==, 0x7e);
  g_assert_cmpint (map ("'", &hi, NULL, NULL), ==, CEA608_CHAR_BASIC);
  g_assert_cmphex (hi, ==, 0x27);
  g_assert_cmpint (map ("\xe2\x80\x99", &hi, NULL, NULL), ==, CEA608_CHAR_BASIC);       /* ’ */
  g_assert_cmphex (hi, ==, 0x27);
  /* the ASCII characters whose codes the table gives to others are
   * extended characters */
  g_assert_cmpint (map ("*", &hi, &lo, &fb), ==, CEA608_CHAR_EXTENDED);
  g_assert_cmphex (hi, ==, 0x12);
  g_assert_cmphex (lo, ==, 0x28);
  g_assert_cmpint (map ("\\", &hi, &lo, NULL), ==, CEA608_CHAR_EXTENDED);
  g_assert_cmphex (hi, ==, 0x13);
  g_assert_cmphex (lo, ==, 0x2b);
  g_assert_cmpint (map ("_", &hi, &lo, NULL), ==, CEA608_CHAR_EXTENDED);
  g_assert_cmphex (lo, ==, 0x2d);
  g_assert_cmpint (map ("{", &hi, &lo, NULL), ==, CEA608_CHAR_EXTENDED);
  g_assert_cmphex (lo, ==, 0x29);

  /* special characters: 0x11 0x30..0x3f */
  g_assert_cmpint (map ("\xc2\xae", &hi, &lo, NULL), ==, CEA608_CHAR_SPECIAL);  /* ® */
  g_assert_cmphex (hi, ==, 0x11);
  g_assert_cmphex (lo, ==, 0x30);
  g_assert_cmpint (map ("\xe2\x99\xaa", &hi, &lo, NULL), ==, CEA608_CHAR_SPECIAL);      /* ♪ */
  g_assert_cmphex (lo, ==, 0x37);
  g_assert_cmpint (map ("\xc3\xa0", &hi, &lo, NULL), ==, CEA608_CHAR_SPECIAL);  /* à */
  g_assert_cmphex (lo, ==, 0x38);
  g_assert_cmpint (map ("\xc3\xbb", &hi, &lo, NULL), ==, CEA608_CHAR_SPECIAL);  /* û */
  g_assert_cmphex (lo, ==, 0x3f);

  /* extended: Spanish/French (0x12) and Portuguese/German/Danish (0x13),
   * each after its fallback */
  g_assert_cmpint (map ("\xc3\x9c", &hi, &lo, &fb), ==, CEA608_CHAR_EXTENDED);  /* Ü */
  g_assert_cmphex (hi, ==, 0x12);
  g_assert_cmphex (lo, ==, 0x24);
  g_assert_cmphex (fb, ==, 'U');
  g_assert_cmpint (map ("\xc2\xa1", &hi, &lo, &fb), ==, CEA608_CHAR_EXTENDED);  /* ¡ */
  g_assert_cmphex (lo, ==, 0x27);
  g_assert_cmphex (fb, ==, '!');
  g_assert_cmpint (map ("\xc3\x87", &hi, &lo, &fb), ==, CEA608_CHAR_EXTENDED);  /* Ç */
  g_assert_cmphex (lo, ==, 0x32);
  g_assert_cmpint (map ("\xc3\xab", &hi, &lo, &fb), ==, CEA608_CHAR_EXTENDED);  /* ë */
  g_assert_cmphex (lo, ==, 0x36);
  g_assert_cmphex (fb, ==, 'e');
  g_assert_cmpint (map ("\xc2\xbb", &hi, &lo, &fb), ==, CEA608_CHAR_EXTENDED);  /* » */
  g_assert_cmphex (lo, ==, 0x3f);
  g_assert_cmpint (map ("\xc3\xa3", &hi, &lo, &fb), ==, CEA608_CHAR_EXTENDED);  /* ã */
  g_assert_cmphex (hi, ==, 0x13);
  g_assert_cmphex (lo, ==, 0x21);
  g_assert_cmpint (map ("\xc3\xa4", &hi, &lo, &fb), ==, CEA608_CHAR_EXTENDED);  /* ä */
  g_assert_cmphex (lo, ==, 0x31);
  g_assert_cmphex (fb, ==, 'a');
  g_assert_cmpint (map ("\xc3\xb6", &hi, &lo, &fb), ==, CEA608_CHAR_EXTENDED);  /* ö */
  g_assert_cmphex (lo, ==, 0x33);
  g_assert_cmpint (map ("\xc3\x9f", &hi, &lo, &fb), ==, CEA608_CHAR_EXTENDED);  /* ß */
  g_assert_cmphex (lo, ==, 0x34);
  g_assert_cmphex (fb, ==, 's');
  g_assert_cmpint (map ("\xc3\xb8", &hi, &lo, &fb), ==, CEA608_CHAR_EXTENDED);  /* ø */
  g_assert_cmphex (lo, ==, 0x3b);
  g_assert_cmpint (map ("\xe2\x94\x98", &hi, &lo, &fb), ==, CEA608_CHAR_EXTENDED);      /* ┘ */
  g_assert_cmphex (lo, ==, 0x3f);

  /* outside the set */
  g_assert_cmpint (map ("\xe2\x82\xac", NULL, NULL, NULL), ==, CEA608_CHAR_NONE);       /* € */
  g_assert_cmpint (map ("\xe4\xb8\xad", NULL, NULL, NULL), ==, CEA608_CHAR_NONE);       /* 中 */

  /* every code maps back to its character */
  for (guint b = 0x20; b < 0x80; b++) {
    gunichar c = cea608_basic_char (b);
    g_assert_cmpint (cea608_map_char (c, &hi, NULL, NULL), ==, CEA608_CHAR_BASIC);
    g_assert_cmphex (hi, ==, b);
  }
  for (guint l = 0x30; l < 0x40; l++) {
    gunichar c = cea608_special_char (l);
    if (l == 0x39)
      continue;                 /* transparent space */
    g_assert_cmpint (cea608_map_char (c, &hi, &lo, NULL), ==, CEA608_CHAR_SPECIAL);
    g_assert_cmphex (lo, ==, l);
  }
  for (guint h = 0x12; h <= 0x13; h++) {
    for (guint l = 0x20; l < 0x40; l++) {
      gunichar c = cea608_extended_char (h, l);
      if (h == 0x12 && l == 0x29)
        continue;               /* the plain apostrophe is basic 0x27 */
      g_assert_cmpint (cea608_map_char (c, &hi, &lo, &fb), ==, CEA608_CHAR_EXTENDED);
      g_assert_cmphex (hi, ==, h);
      g_assert_cmphex (lo, ==, l);
      g_assert_cmpint (cea608_map_char (fb, NULL, NULL, NULL), ==, CEA608_CHAR_BASIC);
    }
  }
}

/* The replacement rule of docs/captions.md */
static void
test_normalize (void)
{
  guint rep, drop;
  gchar *s;

  s = cea608_normalize ("  Hello,\n  world!  ", &rep, &drop);
  g_assert_cmpstr (s, ==, "Hello, world!");
  g_assert_cmpuint (rep, ==, 0);
  g_assert_cmpuint (drop, ==, 0);
  g_free (s);

  /* kept: German, Spanish, French, Portuguese letters of the set */
  s = cea608_normalize ("Straße über Ärger ¿qué? ñandú garçon à bientôt não", &rep, &drop);
  g_assert_cmpstr (s, ==, "Straße über Ärger ¿qué? ñandú garçon à bientôt não");
  g_assert_cmpuint (rep + drop, ==, 0);
  g_free (s);

  /* replaced: dashes, ellipsis, low quotes, letters with other marks */
  s = cea608_normalize ("a\xe2\x80\x93" "b\xe2\x80\xa6 \xe2\x80\x9eq\xe2\x80\x9c \xc5\x81\xc3\xb3" "d\xc5\xba \xc4\x8d", &rep, &drop);
  g_assert_cmpstr (s, ==, "a-b... \"q\xe2\x80\x9c L\xc3\xb3" "dz c");
  g_assert_cmpuint (rep, ==, 6);
  g_assert_cmpuint (drop, ==, 0);
  g_free (s);

  /* dropped: what has no near basic character, and invalid UTF-8 */
  s = cea608_normalize ("x \xe4\xb8\xad\xe6\x96\x87 y \xff z", &rep, &drop);
  g_assert_cmpstr (s, ==, "x y z");
  g_assert_cmpuint (drop, ==, 3);
  g_free (s);
}

static void
test_rows (void)
{
  GPtrArray *rows;

  rows = cea608_break_rows ("And so my fellow Americans, ask not what your country can do for you",
      32);
  g_assert_cmpuint (rows->len, ==, 3);
  g_assert_cmpstr (g_ptr_array_index (rows, 0), ==, "And so my fellow Americans, ask");
  g_assert_cmpstr (g_ptr_array_index (rows, 1), ==, "not what your country can do for");
  g_assert_cmpstr (g_ptr_array_index (rows, 2), ==, "you");
  for (guint i = 0; i < rows->len; i++)
    g_assert_cmpint (g_utf8_strlen (g_ptr_array_index (rows, i), -1), <=, 32);
  g_ptr_array_unref (rows);

  /* 32 characters fit, 33 do not; a character with a mark is one column */
  rows = cea608_break_rows ("üüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüü x", 32);
  g_assert_cmpuint (rows->len, ==, 2);
  g_assert_cmpint (g_utf8_strlen (g_ptr_array_index (rows, 0), -1), ==, 32);
  g_ptr_array_unref (rows);

  /* a word longer than a row fills whole rows */
  rows = cea608_break_rows ("Donaudampfschifffahrtsgesellschaftskapitän ja", 32);
  g_assert_cmpuint (rows->len, ==, 2);
  g_assert_cmpstr (g_ptr_array_index (rows, 0), ==, "Donaudampfschifffahrtsgesellscha");
  g_assert_cmpstr (g_ptr_array_index (rows, 1), ==, "ftskapitän ja");
  g_ptr_array_unref (rows);

  rows = cea608_break_rows ("", 32);
  g_assert_cmpuint (rows->len, ==, 0);
  g_ptr_array_unref (rows);
}

static void
test_split_captions (void)
{
  GPtrArray *c;
  const gchar *text = "And so my fellow Americans, ask not what your country can do for you, "
      "ask what you can do for your country.";
  GString *joined = g_string_new (NULL);

  c = cea608_split_captions (text, 2);
  g_assert_cmpuint (c->len, ==, 2);
  for (guint i = 0; i < c->len; i++) {
    GPtrArray *rows = cea608_break_rows (g_ptr_array_index (c, i), 32);
    g_assert_cmpuint (rows->len, <=, 2);
    g_ptr_array_unref (rows);
    if (joined->len)
      g_string_append_c (joined, ' ');
    g_string_append (joined, g_ptr_array_index (c, i));
  }
  /* nothing lost or reordered, lengths about equal */
  g_assert_cmpstr (joined->str, ==, text);
  g_assert_cmpint (ABS ((gint) strlen (g_ptr_array_index (c, 0)) -
          (gint) strlen (g_ptr_array_index (c, 1))), <, 16);
  g_string_free (joined, TRUE);
  g_ptr_array_unref (c);

  c = cea608_split_captions ("short", 2);
  g_assert_cmpuint (c->len, ==, 1);
  g_ptr_array_unref (c);
  c = cea608_split_captions ("", 2);
  g_assert_cmpuint (c->len, ==, 0);
  g_ptr_array_unref (c);
}

static guint16
pair_at (Cea608Writer *w, guint i)
{
  return g_array_index (w->pairs, guint16, i);
}

/* 79.101 (a)(4): control codes twice; characters two to a pair; an
 * extended character after its fallback */
static void
test_writer (void)
{
  Cea608Writer w;

  cea608_writer_init (&w);
  cea608_writer_misc (&w, CEA608_RCL, 0);
  cea608_writer_pac (&w, 15, 0);
  cea608_writer_text (&w, "Hi!");
  cea608_writer_flush (&w);
  g_assert_cmpuint (w.pairs->len, ==, 6);
  g_assert_cmphex (pair_at (&w, 0), ==, 0x1420);
  g_assert_cmphex (pair_at (&w, 1), ==, 0x1420);
  g_assert_cmphex (pair_at (&w, 2), ==, 0x1460);
  g_assert_cmphex (pair_at (&w, 3), ==, 0x1460);
  g_assert_cmphex (pair_at (&w, 4), ==, ('H' << 8) | 'i');
  g_assert_cmphex (pair_at (&w, 5), ==, ('!' << 8) | 0x00);
  cea608_writer_clear (&w);

  /* "aß": the pending 'a' pairs with the fallback 's', then 0x13 0x34 twice */
  cea608_writer_init (&w);
  cea608_writer_text (&w, "a\xc3\x9f");
  cea608_writer_flush (&w);
  g_assert_cmpuint (w.pairs->len, ==, 3);
  g_assert_cmphex (pair_at (&w, 0), ==, ('a' << 8) | 's');
  g_assert_cmphex (pair_at (&w, 1), ==, 0x1334);
  g_assert_cmphex (pair_at (&w, 2), ==, 0x1334);
  cea608_writer_clear (&w);

  /* "♪x": special twice, then x with a null */
  cea608_writer_init (&w);
  cea608_writer_text (&w, "\xe2\x99\xaax");
  cea608_writer_flush (&w);
  g_assert_cmpuint (w.pairs->len, ==, 3);
  g_assert_cmphex (pair_at (&w, 0), ==, 0x1137);
  g_assert_cmphex (pair_at (&w, 1), ==, 0x1137);
  g_assert_cmphex (pair_at (&w, 2), ==, ('x' << 8));
  cea608_writer_clear (&w);

  /* field 2 (CC3) control codes */
  cea608_writer_init (&w);
  cea608_writer_misc (&w, CEA608_EOC, 1);
  g_assert_cmphex (pair_at (&w, 0), ==, 0x152f);
  cea608_writer_clear (&w);

  g_assert_cmpuint (cea608_text_pairs ("abcd"), ==, 2);
  g_assert_cmpuint (cea608_text_pairs ("abc"), ==, 2);
  g_assert_cmpuint (cea608_text_pairs ("\xc3\xbc"), ==, 3);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cea608/parity", test_parity);
  g_test_add_func ("/cea608/misc-codes", test_misc_codes);
  g_test_add_func ("/cea608/pac", test_pac);
  g_test_add_func ("/cea608/characters", test_characters);
  g_test_add_func ("/cea608/normalize", test_normalize);
  g_test_add_func ("/cea608/rows", test_rows);
  g_test_add_func ("/cea608/split-captions", test_split_captions);
  g_test_add_func ("/cea608/writer", test_writer);
  return g_test_run ();
}
