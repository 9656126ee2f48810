/* cc708.c: native CEA-708 (DTVCC) caption data (cc708.h). */
#include "cc708.h"
#include "cea608.h"

#include <string.h>

/* The pop-on windows (0 and 1, one shown, one loaded) and the roll-up
 * window; four rows of 32 columns over the bottom of the picture, as the
 * 608 caption rows 12 to 15 they stand for. */
#define POPON_ROWS 4
#define ROLLUP_WINDOW 2
#define WINDOW_COLUMNS 32
#define ANCHOR_V 90
#define ANCHOR_H 50
#define WINDOW_STYLE 1
#define PEN_STYLE 1

enum { MODE_NONE, MODE_POPON, MODE_ROLLUP, MODE_PAINTON };

guint
cc708_define_window (guint8 out[7], guint id, gboolean visible, guint anchor_v, guint anchor_h,
    guint anchor_point, guint rows, guint columns, guint window_style, guint pen_style)
{
  /* CTA-708-E coding layer (section 7), DefineWindow: DFx, then
   *   0 0 v rl cl p2 p1 p0         visible, row lock, column lock, priority
   *   rp av6..av0                  relative position, anchor vertical
   *   ah7..ah0                     anchor horizontal
   *   ap3..ap0 rc3..rc0            anchor point, row count - 1
   *   0 0 cc5..cc0                 column count - 1
   *   0 0 ws2..ws0 ps2..ps0        window style, pen style */
  out[0] = CC708_DF0 + (id & 7);
  out[1] = (visible ? 0x20 : 0) | 0x10 | 0x08;
  out[2] = 0x80 | (MIN (anchor_v, 99) & 0x7f);
  out[3] = MIN (anchor_h, 99);
  out[4] = (anchor_point & 0x0f) << 4 | ((CLAMP (rows, 1, 15) - 1) & 0x0f);
  out[5] = (CLAMP (columns, 1, 42) - 1) & 0x3f;
  out[6] = (window_style & 7) << 3 | (pen_style & 7);
  return 7;
}

/* G2 (CTA-708-E coding layer, after EXT1): the characters the 608 set
 * shares with it */
static const struct { gunichar c; guint8 code; } g2_chars[] = {
  {0x2026, 0x25}, {0x0160, 0x2a}, {0x0152, 0x2c}, {0x2588, 0x30}, {0x25a0, 0x30},
  {0x2018, 0x31}, {0x2019, 0x32}, {0x201c, 0x33}, {0x201d, 0x34}, {0x2022, 0x35},
  {0x2122, 0x39}, {0x0161, 0x3a}, {0x0153, 0x3c}, {0x2120, 0x3d}, {0x0178, 0x3f},
  {0x2502, 0x7a}, {0x2510, 0x7b}, {0x2514, 0x7c}, {0x2500, 0x7d}, {0x2518, 0x7e},
  {0x250c, 0x7f},
};

guint
cc708_char (gunichar c, guint8 out[2])
{
  if (c == 0x266a) {
    /* G0 0x7f is the music note */
    out[0] = 0x7f;
    return 1;
  }
  if (c >= 0x20 && c < 0x7f) {
    out[0] = (guint8) c;
    return 1;
  }
  if (c >= 0xa0 && c <= 0xff) {
    out[0] = (guint8) c;
    return 1;
  }
  if (c == 0x2014 || c == 0x2013) {
    out[0] = '-';
    return 1;
  }
  for (guint i = 0; i < G_N_ELEMENTS (g2_chars); i++) {
    if (g2_chars[i].c == c) {
      out[0] = CC708_EXT1;
      out[1] = g2_chars[i].code;
      return 2;
    }
  }
  return 0;
}

void
cc708_service_block (GByteArray *out, guint service, const guint8 *data, guint len)
{
  /* CTA-708-E service layer (section 6), the service block header:
   * service_number (3 bits), block_size (5 bits) */
  guint8 header = (guint8) ((service & 7) << 5 | (MIN (len, 31) & 0x1f));
  g_byte_array_append (out, &header, 1);
  g_byte_array_append (out, data, MIN (len, 31));
}

gboolean
cc708_packet (GByteArray *out, guint seq, const guint8 *blocks, guint len)
{
  /* CTA-708-E packet layer (section 5): sequence_number (2 bits),
   * packet_size_code (6 bits); the
   * packet is packet_size_code * 2 bytes with its header, 128 for code 0 */
  guint size = len + 1;
  guint8 header, zero = 0;

  if (size > 128)
    return FALSE;
  if (size % 2)
    size++;
  header = (guint8) ((seq & 3) << 6 | ((size / 2) & 0x3f));
  g_byte_array_append (out, &header, 1);
  g_byte_array_append (out, blocks, len);
  if (len + 1 < size)
    g_byte_array_append (out, &zero, 1);
  return TRUE;
}

static void
triplet (GByteArray *out, gboolean valid, guint type, guint8 b1, guint8 b2)
{
  /* marker bits 11111, cc_valid, cc_type (2 bits) */
  guint8 t[3] = { (guint8) (0xf8 | (valid ? 0x04 : 0) | (type & 3)), b1, b2 };
  g_byte_array_append (out, t, 3);
}

gboolean
cc708_cc_data (GByteArray *out, guint cc_count, const guint8 f1[2], const guint8 *f2,
    const guint8 *packet, guint packet_len)
{
  guint used = 2;

  if (packet_len % 2 || (packet_len > 0 && 2 + packet_len / 2 + 1 > cc_count) || cc_count < 2)
    return FALSE;
  triplet (out, TRUE, 0, f1[0], f1[1]);
  if (f2)
    triplet (out, TRUE, 1, f2[0], f2[1]);
  else
    triplet (out, FALSE, 1, 0x80, 0x80);
  for (guint i = 0; i < packet_len; i += 2) {
    triplet (out, TRUE, i == 0 ? 3 : 2, packet[i], packet[i + 1]);
    used++;
  }
  /* a DTVCC triplet with cc_valid 0 ends the packet (and pads) */
  for (; used < cc_count; used++)
    triplet (out, FALSE, 2, 0, 0);
  return TRUE;
}

guint
cc708_cc_count (gint fps_n, gint fps_d)
{
  guint n;
  if (fps_n <= 0 || fps_d <= 0)
    return 20;
  n = (guint) ((600 * (guint64) fps_d + fps_n / 2) / fps_n);
  return CLAMP (n, 3, 31);
}

guint
cc708_cdp_frame_rate (gint fps_n, gint fps_d)
{
  static const struct { gint n, d; guint code; } rates[] = {
    {24000, 1001, 1}, {24, 1, 2}, {25, 1, 3}, {30000, 1001, 4}, {30, 1, 5},
    {50, 1, 6}, {60000, 1001, 7}, {60, 1, 8},
  };
  for (guint i = 0; i < G_N_ELEMENTS (rates); i++)
    if ((gint64) rates[i].n * fps_d == (gint64) fps_n * rates[i].d)
      return rates[i].code;
  return 0;
}

void
cc708_cdp (GByteArray *out, guint frame_rate_code, guint16 counter, const guint8 *cc_data,
    guint count)
{
  guint start = out->len, length = 7 + 2 + 3 * count + 4;
  guint8 head[9] = {
    0x96, 0x69, (guint8) length, (guint8) ((frame_rate_code & 0x0f) << 4 | 0x0f),
    /* ccdata_present, caption_service_active, reserved (1) */
    0x43, (guint8) (counter >> 8), (guint8) (counter & 0xff),
    0x72, (guint8) (0xe0 | (count & 0x1f)),
  };
  guint8 foot[4] = { 0x74, (guint8) (counter >> 8), (guint8) (counter & 0xff), 0 };
  guint sum = 0;

  g_byte_array_append (out, head, sizeof (head));
  g_byte_array_append (out, cc_data, 3 * count);
  g_byte_array_append (out, foot, 3);
  for (guint i = start; i < out->len; i++)
    sum += out->data[i];
  /* the checksum makes the sum of the packet's bytes 0 modulo 256 */
  foot[3] = (guint8) ((256 - (sum & 0xff)) & 0xff);
  g_byte_array_append (out, foot + 3, 1);
}

/* ---------------------------------------------------------------------- */
/* 608 to a 708 service */

void
cc708_service_init (Cc708Service *s, guint service, guint field)
{
  memset (s, 0, sizeof (*s));
  s->service = service;
  s->field = field;
  s->pending = g_byte_array_new ();
  s->cuts = g_array_new (FALSE, FALSE, sizeof (guint));
  cc708_service_reset (s);
}

void
cc708_service_clear (Cc708Service *s)
{
  g_clear_pointer (&s->pending, g_byte_array_unref);
  g_clear_pointer (&s->cuts, g_array_unref);
}

void
cc708_service_reset (Cc708Service *s)
{
  g_byte_array_set_size (s->pending, 0);
  g_array_set_size (s->cuts, 0);
  s->last = 0;
  s->mode = MODE_NONE;
  s->shown = 0;
  s->current = 8;
  s->rollup_rows = 0;
  s->painted = FALSE;
}

/* Appends one command or character: a place where the data may be cut. */
static void
emit (Cc708Service *s, const guint8 *b, guint len)
{
  guint cut;
  g_byte_array_append (s->pending, b, len);
  cut = s->pending->len;
  g_array_append_val (s->cuts, cut);
}

static void
emit1 (Cc708Service *s, guint8 code)
{
  emit (s, &code, 1);
}

static void
emit_map (Cc708Service *s, guint8 command, guint map)
{
  guint8 b[2] = { command, (guint8) map };
  emit (s, b, 2);
}

static void
define (Cc708Service *s, guint id, gboolean visible, guint rows)
{
  guint8 b[7];
  cc708_define_window (b, id, visible, ANCHOR_V, ANCHOR_H, CC708_ANCHOR_BOTTOM_CENTER, rows,
      WINDOW_COLUMNS, WINDOW_STYLE, PEN_STYLE);
  emit (s, b, 7);
  /* DefineWindow also makes the window current (CTA-708-E
   * interpretation layer, section 8) */
  s->current = id;
}

static void
select_window (Cc708Service *s, guint id)
{
  if (s->current != id) {
    emit1 (s, CC708_CW0 + id);
    s->current = id;
  }
}

static void
pen_location (Cc708Service *s, guint row, guint column)
{
  guint8 b[3] = { CC708_SPL, (guint8) (row & 0x0f), (guint8) (column & 0x3f) };
  emit (s, b, 3);
}

/* The shown window empty and visible, the other hidden: the state a
 * ToggleWindows of both needs. */
static void
ensure_popon_windows (Cc708Service *s)
{
  if (s->mode == MODE_POPON || s->mode == MODE_PAINTON)
    return;
  s->shown = 0;
  define (s, 1, FALSE, POPON_ROWS);
  define (s, 0, TRUE, POPON_ROWS);
}

/* Erases a window's text and leaves it defined and visible (its
 * DisplayWindows also has renderers redraw without it). */
static void
erase_window (Cc708Service *s, guint id, guint rows)
{
  emit_map (s, CC708_DLW, 1u << id);
  define (s, id, TRUE, rows);
  emit_map (s, CC708_DSW, 1u << id);
}

static void
misc (Cc708Service *s, guint8 code)
{
  switch (code) {
    case CEA608_RCL:
      ensure_popon_windows (s);
      s->mode = MODE_POPON;
      break;
    case CEA608_ENM:
      if (s->mode == MODE_POPON) {
        /* a new hidden window to load */
        emit_map (s, CC708_DLW, 1u << (1 - s->shown));
        define (s, 1 - s->shown, FALSE, POPON_ROWS);
      }
      break;
    case CEA608_EOC:
      if (s->mode == MODE_POPON) {
        emit_map (s, CC708_TGW, 0x03);
        s->shown = 1 - s->shown;
      }
      break;
    case CEA608_EDM:
      if (s->mode == MODE_ROLLUP) {
        erase_window (s, ROLLUP_WINDOW, s->rollup_rows);
        pen_location (s, s->rollup_rows - 1, 0);
      } else if (s->mode == MODE_POPON || s->mode == MODE_PAINTON) {
        erase_window (s, s->shown, POPON_ROWS);
      }
      s->painted = FALSE;
      break;
    case CEA608_RU2:
    case CEA608_RU3:
    case CEA608_RU4:{
      guint rows = 2 + code - CEA608_RU2;
      if (s->mode != MODE_ROLLUP || s->rollup_rows != rows)
        define (s, ROLLUP_WINDOW, TRUE, rows);
      s->rollup_rows = rows;
      s->mode = MODE_ROLLUP;
      select_window (s, ROLLUP_WINDOW);
      break;
    }
    case CEA608_CR:
      if (s->mode == MODE_ROLLUP) {
        select_window (s, ROLLUP_WINDOW);
        emit1 (s, CC708_CR);
        s->painted = TRUE;
      }
      break;
    case CEA608_RDC:
      ensure_popon_windows (s);
      s->mode = MODE_PAINTON;
      select_window (s, s->shown);
      break;
    case CEA608_BS:
      emit1 (s, CC708_BS);
      break;
    default:
      break;
  }
}

static void
preamble (Cc708Service *s, guint8 hi, guint8 lo)
{
  guint row = 0, column = 0;
  guint8 b[2];

  for (guint r = 1; r <= CEA608_ROWS; r++) {
    if (cea608_pac (r, 0, b) && b[0] == hi && (b[1] & 0x60) == (lo & 0x60)) {
      row = r;
      break;
    }
  }
  if (row == 0)
    return;
  if (lo & 0x10)
    column = ((lo & 0x0e) >> 1) * 4;
  if (s->mode == MODE_ROLLUP)
    pen_location (s, s->rollup_rows - 1, column);
  else if (s->mode == MODE_POPON || s->mode == MODE_PAINTON)
    pen_location (s, row + POPON_ROWS > CEA608_ROWS ? row + POPON_ROWS - CEA608_ROWS - 1 : 0,
        column);
}

static void
put_char (Cc708Service *s, gunichar c)
{
  guint8 b[2];
  guint n = cc708_char (c, b);

  if (n == 0) {
    b[0] = '_';
    n = 1;
  }
  emit (s, b, n);
  if (s->mode == MODE_ROLLUP || s->mode == MODE_PAINTON)
    s->painted = TRUE;
}

static void
control (Cc708Service *s, guint8 hi, guint8 lo)
{
  guint8 misc_hi = s->field ? 0x15 : 0x14;

  if (hi == misc_hi && lo >= 0x20 && lo <= 0x2f) {
    misc (s, lo);
  } else if (lo >= 0x40 && lo <= 0x7f) {
    preamble (s, hi, lo);
  } else if (hi == 0x11 && lo >= 0x30 && lo <= 0x3f) {
    put_char (s, cea608_special_char (lo));
  } else if ((hi == 0x12 || hi == 0x13) && lo >= 0x20 && lo <= 0x3f) {
    /* the extended character replaces the fallback sent before it */
    emit1 (s, CC708_BS);
    put_char (s, cea608_extended_char (hi, lo));
  } else if (hi == 0x11 && lo >= 0x20 && lo <= 0x2f) {
    /* a mid-row code shows as a space */
    put_char (s, ' ');
  }
}

void
cc708_service_feed (Cc708Service *s, guint16 pair)
{
  guint8 hi = pair >> 8 & 0x7f, lo = pair & 0x7f;

  if (pair == 0) {
    s->last = 0;
    return;
  }
  if (hi >= 0x10 && hi <= 0x1f) {
    /* 79.101 (a)(4): a control code sent twice acts once */
    if (pair == s->last) {
      s->last = 0;
      return;
    }
    s->last = pair;
    control (s, hi, lo);
    return;
  }
  s->last = 0;
  if (hi >= 0x20)
    put_char (s, cea608_basic_char (hi));
  if (lo >= 0x20)
    put_char (s, cea608_basic_char (lo));
}

void
cc708_service_end_frame (Cc708Service *s)
{
  if (s->painted) {
    /* the end of a text segment: shown windows are drawn now */
    emit1 (s, CC708_ETX);
    s->painted = FALSE;
  }
}

guint
cc708_service_take (Cc708Service *s, guint max, guint8 *out)
{
  guint n = 0, k = 0;

  while (k < s->cuts->len && g_array_index (s->cuts, guint, k) <= max) {
    n = g_array_index (s->cuts, guint, k);
    k++;
  }
  if (n == 0)
    return 0;
  memcpy (out, s->pending->data, n);
  g_byte_array_remove_range (s->pending, 0, n);
  g_array_remove_range (s->cuts, 0, k);
  for (guint i = 0; i < s->cuts->len; i++)
    g_array_index (s->cuts, guint, i) -= n;
  return n;
}
