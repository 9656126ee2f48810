/* cea608.h: the CEA-608 (line 21) coding rules cea608enc uses, without
 * GStreamer: odd parity, the character tables, the control codes and the
 * breaking of text into caption rows.
 *
 * The rules are those of 47 CFR 79.101 ("Closed caption decoder
 * requirements for analog television receivers"), which restates
 * EIA/CEA-608: (a)(1)-(a)(4) and (j)(1) for the codes, the character
 * tables in (j)(1)'s "Character set" and the extended character tables,
 * (i) and (j)(2) for roll-up, pop-on and paint-on.
 *
 * Only data channel 1 of each field is written: CC1 (field 1) and CC3
 * (field 2). Their preamble address, mid-row and character codes are the
 * same; the miscellaneous control codes start with 0x14 in field 1 and
 * 0x15 in field 2.
 */
#ifndef __CEA608_H__
#define __CEA608_H__

#include <glib.h>

G_BEGIN_DECLS

/* Columns of a caption row, and rows on the screen. */
#define CEA608_COLUMNS 32
#define CEA608_ROWS 15

/* Odd parity in bit 7 of a 7-bit code. */
guint8 cea608_parity (guint8 code);
/* TRUE when b has an odd number of set bits. */
gboolean cea608_parity_ok (guint8 b);

/* Miscellaneous control codes: the second byte. */
typedef enum {
  CEA608_RCL = 0x20,            /* resume caption loading (pop-on) */
  CEA608_BS = 0x21,             /* backspace */
  CEA608_AOF = 0x22,
  CEA608_AON = 0x23,
  CEA608_DER = 0x24,            /* delete to end of row */
  CEA608_RU2 = 0x25,            /* roll-up, 2 rows */
  CEA608_RU3 = 0x26,
  CEA608_RU4 = 0x27,
  CEA608_FON = 0x28,            /* flash on */
  CEA608_RDC = 0x29,            /* resume direct captioning (paint-on) */
  CEA608_TR = 0x2a,
  CEA608_RTD = 0x2b,
  CEA608_EDM = 0x2c,            /* erase displayed memory */
  CEA608_CR = 0x2d,             /* carriage return */
  CEA608_ENM = 0x2e,            /* erase non-displayed memory */
  CEA608_EOC = 0x2f,            /* end of caption (flip memories) */
} Cea608Misc;

/* The two bytes (without parity) of a miscellaneous control code in data
 * channel 1 of field (0: field 1 / CC1, 1: field 2 / CC3). */
void cea608_misc_code (Cea608Misc code, guint field, guint8 out[2]);

/* The preamble address code (without parity) that puts the cursor at row
 * (1..15) and column indent (0, 4, ... 28), white, not underlined. FALSE
 * for a row or indent out of range. */
gboolean cea608_pac (guint row, guint indent, guint8 out[2]);

typedef enum {
  CEA608_CHAR_NONE,             /* not in the character set */
  CEA608_CHAR_BASIC,            /* one byte, hi */
  CEA608_CHAR_SPECIAL,          /* two bytes hi lo, 0x11 0x30..0x3f */
  CEA608_CHAR_EXTENDED,         /* fallback byte, then hi lo (0x12/0x13) */
} Cea608CharKind;

/* How c is coded in the 608 character set; fallback is the basic
 * character an extended one is sent after (decoders that know the
 * extended set back over it). */
Cea608CharKind cea608_map_char (gunichar c, guint8 *hi, guint8 *lo, guint8 *fallback);

/* The character a 608 code shows (the inverse of cea608_map_char), 0 for
 * none; for tests and the decoder of the unit tests. */
gunichar cea608_basic_char (guint8 code);
gunichar cea608_special_char (guint8 lo);
gunichar cea608_extended_char (guint8 hi, guint8 lo);

/* Text with only characters of the 608 set: each other character is
 * replaced by the rule of docs/captions.md (typographic quotes, dashes,
 * ellipsis and spaces by their basic forms; letters with marks the set
 * lacks by the letter without them; anything else dropped). Runs of white
 * space become one space and the ends are trimmed. n_replaced and
 * n_dropped (may be NULL) count the characters replaced and dropped. */
gchar *cea608_normalize (const gchar *utf8, guint *n_replaced, guint *n_dropped);

/* The rows (each at most width characters, width <= 32) of normalized
 * text: broken at spaces, a word longer than a row broken inside it. */
GPtrArray *cea608_break_rows (const gchar *normalized, guint width);

/* Normalized text as consecutive captions of at most max_rows rows each
 * (rows of 32 columns): as few captions as hold the text, the words shared
 * so that their lengths are about equal (no short last caption). */
GPtrArray *cea608_split_captions (const gchar *normalized, guint max_rows);

/* A sequence of byte pairs (hi << 8 | lo, without parity). Basic
 * characters go two to a pair; a control code, special or extended
 * character ends the pair before it (a lone character is padded with a
 * null) and is sent twice, in consecutive pairs, as 79.101 (a)(4) asks of
 * control codes (decoders ignore the repeat). */
typedef struct {
  GArray *pairs;                /* guint16 */
  gint pending;                 /* a basic character waiting for its pair, or -1 */
} Cea608Writer;

void cea608_writer_init (Cea608Writer *w);
void cea608_writer_clear (Cea608Writer *w);
void cea608_writer_code (Cea608Writer *w, guint8 hi, guint8 lo);
void cea608_writer_misc (Cea608Writer *w, Cea608Misc code, guint field);
void cea608_writer_pac (Cea608Writer *w, guint row, guint indent);
/* Appends normalized text (characters outside the set are skipped). */
void cea608_writer_text (Cea608Writer *w, const gchar *normalized);
/* Completes a pending character's pair. */
void cea608_writer_flush (Cea608Writer *w);

/* Pairs the normalized text takes (flushed), from an empty writer. */
guint cea608_text_pairs (const gchar *normalized);

G_END_DECLS

#endif /* __CEA608_H__ */
