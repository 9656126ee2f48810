/* test-cc708.c: the native CEA-708 data of gst-plugin/captions/cc708.c
 * against bytes worked out by hand from CTA-708-E (47 CFR 79.102 restates
 * it): the DefineWindow command (coding layer, section 7: DFx and six
 * parameter bytes), the service block header (service layer, section 6),
 * the caption channel packet header and its even size (packet layer,
 * section 5), the cc_data triplets of a frame (ATSC A/53 part 4 cc_data():
 * marker bits, cc_valid, cc_type), a SMPTE 334-2 CDP, and the 608 to 708
 * translation of a pop-on and a roll-up caption. GLib only. */
#include <glib.h>
#include <string.h>

#include "cc708.h"
#include "cea608.h"

static void
assert_bytes (const guint8 *got, guint got_len, const guint8 *want, guint want_len)
{
  if (got_len != want_len || memcmp (got, want, want_len) != 0) {
    GString *s = g_string_new ("got");
    for (guint i = 0; i < got_len; i++)
      g_string_append_printf (s, " %02x", got[i]);
    g_string_append (s, ", want");
    for (guint i = 0; i < want_len; i++)
      g_string_append_printf (s, " %02x", want[i]);
    g_error ("%s", s->str);
  }
}

/* DefineWindow 0: DF0 = 0x98; 0 0 v rl cl p = 0 0 1 1 1 000 = 0x38;
 * rp av = 1 1011010 (90) = 0xda; ah = 50 = 0x32; ap rc = 0111 (bottom
 * center, 7) 0011 (4 rows) = 0x73; cc = 31 (32 columns) = 0x1f; ws ps =
 * 00 001 001 = 0x09. */
static void
test_define_window (void)
{
  guint8 b[7];
  static const guint8 want0[] = { 0x98, 0x38, 0xda, 0x32, 0x73, 0x1f, 0x09 };
  static const guint8 want5[] = { 0x9d, 0x18, 0x80, 0x00, 0x00, 0x00, 0x3f };

  g_assert_cmpuint (cc708_define_window (b, 0, TRUE, 90, 50, CC708_ANCHOR_BOTTOM_CENTER, 4, 32, 1,
          1), ==, 7);
  assert_bytes (b, 7, want0, sizeof (want0));
  /* window 5, hidden, top left, 1 row, 1 column, styles 7 and 7 */
  cc708_define_window (b, 5, FALSE, 0, 0, 0, 1, 1, 7, 7);
  assert_bytes (b, 7, want5, sizeof (want5));
}

/* Service block header: service number in bits 7-5, block size in 4-0;
 * packet header: sequence number in bits 7-6, size code (byte pairs of
 * the whole packet) in 5-0, the packet padded to an even size. */
static void
test_packet (void)
{
  GByteArray *blk = g_byte_array_new (), *pkt = g_byte_array_new ();
  static const guint8 hi[] = { 'H', 'i' };
  static const guint8 want_blk[] = { 0x22, 'H', 'i' };
  static const guint8 want_pkt[] = { 0x82, 0x22, 'H', 'i' };
  static const guint8 want_odd[] = { 0x02, 0x21, 'A', 0x00 };
  guint8 big[128] = { 0 };

  cc708_service_block (blk, 1, hi, 2);
  assert_bytes (blk->data, blk->len, want_blk, sizeof (want_blk));
  g_assert_true (cc708_packet (pkt, 2, blk->data, blk->len));
  assert_bytes (pkt->data, pkt->len, want_pkt, sizeof (want_pkt));
  g_byte_array_set_size (pkt, 0);
  g_byte_array_set_size (blk, 0);
  cc708_service_block (blk, 1, (const guint8 *) "A", 1);
  cc708_packet (pkt, 0, blk->data, blk->len);
  assert_bytes (pkt->data, pkt->len, want_odd, sizeof (want_odd));
  /* 127 bytes of blocks: 128 with the header, size code 0 */
  g_byte_array_set_size (pkt, 0);
  g_assert_true (cc708_packet (pkt, 3, big, 127));
  g_assert_cmphex (pkt->data[0], ==, 0xc0);
  g_assert_cmpuint (pkt->len, ==, 128);
  g_assert_false (cc708_packet (pkt, 0, big, 128));
  g_byte_array_unref (blk);
  g_byte_array_unref (pkt);
}

/* cc_data of a 29.97 frame: 20 triplets; field 1's EDM (0x94 0x2c with
 * parity) valid with cc_type 0 (0xfc), field 2 invalid (0xf9), the packet
 * in cc_type 3 then 2 (0xff, 0xfe), the rest cc_valid 0 cc_type 2 (0xfa). */
static void
test_cc_data (void)
{
  GByteArray *cc = g_byte_array_new (), *cdp = g_byte_array_new ();
  static const guint8 f1[] = { 0x94, 0x2c };
  static const guint8 pkt[] = { 0x82, 0x22, 'H', 'i' };
  guint8 want[60] = {
    0xfc, 0x94, 0x2c, 0xf9, 0x80, 0x80, 0xff, 0x82, 0x22, 0xfe, 'H', 'i',
  };
  guint sum = 0;

  for (guint i = 12; i < 60; i += 3)
    want[i] = 0xfa;
  g_assert_cmpuint (cc708_cc_count (30000, 1001), ==, 20);
  g_assert_cmpuint (cc708_cc_count (25, 1), ==, 24);
  g_assert_cmpuint (cc708_cc_count (60000, 1001), ==, 10);
  g_assert_true (cc708_cc_data (cc, 20, f1, NULL, pkt, sizeof (pkt)));
  assert_bytes (cc->data, cc->len, want, sizeof (want));
  /* the packet and the triplet that ends it must fit */
  g_byte_array_set_size (cc, 0);
  g_assert_false (cc708_cc_data (cc, 4, f1, NULL, pkt, sizeof (pkt)));

  /* CDP: 0x9669, length 7 + 2 + 60 + 4 = 73, frame rate 4 (29.97) and
   * 0xf, flags 0x43, counter; 0x72, 0xe0 | 20; the triplets; 0x74, the
   * counter, the checksum that makes the sum 0 */
  g_assert_cmpuint (cc708_cdp_frame_rate (30000, 1001), ==, 4);
  g_assert_cmpuint (cc708_cdp_frame_rate (25, 1), ==, 3);
  g_assert_cmpuint (cc708_cdp_frame_rate (15, 1), ==, 0);
  cc708_cdp (cdp, 4, 0x0105, want, 20);
  {
    static const guint8 head[] = { 0x96, 0x69, 0x49, 0x4f, 0x43, 0x01, 0x05, 0x72, 0xf4 };
    assert_bytes (cdp->data, 9, head, sizeof (head));
  }
  g_assert_cmpuint (cdp->len, ==, 73);
  assert_bytes (cdp->data + 9, 60, want, 60);
  g_assert_cmphex (cdp->data[69], ==, 0x74);
  g_assert_cmphex (cdp->data[70], ==, 0x01);
  g_assert_cmphex (cdp->data[71], ==, 0x05);
  for (guint i = 0; i < cdp->len; i++)
    sum += cdp->data[i];
  g_assert_cmpuint (sum & 0xff, ==, 0);
  g_byte_array_unref (cc);
  g_byte_array_unref (cdp);
}

/* G0 ASCII, 0x7f the music note, G1 Latin-1, G2 after EXT1 (0x10). */
static void
test_characters (void)
{
  guint8 b[2];
  g_assert_cmpuint (cc708_char ('A', b), ==, 1);
  g_assert_cmphex (b[0], ==, 0x41);
  g_assert_cmpuint (cc708_char (0x266a, b), ==, 1);
  g_assert_cmphex (b[0], ==, 0x7f);
  g_assert_cmpuint (cc708_char (0xe9, b), ==, 1);
  g_assert_cmphex (b[0], ==, 0xe9);
  g_assert_cmpuint (cc708_char (0x2122, b), ==, 2);
  g_assert_cmphex (b[0], ==, 0x10);
  g_assert_cmphex (b[1], ==, 0x39);
  g_assert_cmpuint (cc708_char (0x250c, b), ==, 2);
  g_assert_cmphex (b[1], ==, 0x7f);
  g_assert_cmpuint (cc708_char (0x4e2d, b), ==, 0);
  /* every character of the 608 sets has a 708 code */
  for (guint c = 0x20; c < 0x80; c++)
    if (cea608_basic_char (c))
      g_assert_cmpuint (cc708_char (cea608_basic_char (c), b), >, 0);
  for (guint lo = 0x30; lo < 0x40; lo++)
    if (cea608_special_char (lo) && cea608_special_char (lo) != ' ')
      g_assert_cmpuint (cc708_char (cea608_special_char (lo), b), >, 0);
  for (guint hi = 0x12; hi < 0x14; hi++)
    for (guint lo = 0x20; lo < 0x40; lo++)
      g_assert_cmpuint (cc708_char (cea608_extended_char (hi, lo), b), >, 0);
}

static guint
take_all (Cc708Service *s, guint8 *out)
{
  return cc708_service_take (s, 1024, out);
}

static void
feed2 (Cc708Service *s, guint16 pair)
{
  /* 79.101 (a)(4): control codes come twice */
  cc708_service_feed (s, pair);
  cc708_service_feed (s, pair);
}

/* A pop-on caption "Hi" on CC1: RCL, ENM, PAC row 15, "Hi", EOC, EDM. */
static void
test_translate_popon (void)
{
  Cc708Service s;
  guint8 out[1024];
  guint n;
  guint8 pac[2];
  static const guint8 want[] = {
    /* RCL: window 1 hidden, window 0 shown (visible, empty) */
    0x99, 0x18, 0xda, 0x32, 0x73, 0x1f, 0x09,
    0x98, 0x38, 0xda, 0x32, 0x73, 0x1f, 0x09,
    /* ENM: DeleteWindows (window 1), DefineWindow 1 hidden */
    0x8c, 0x02, 0x99, 0x18, 0xda, 0x32, 0x73, 0x1f, 0x09,
    /* PAC row 15: SetPenLocation row 3, column 0 */
    0x92, 0x03, 0x00,
    'H', 'i',
    /* EOC: ToggleWindows 0 and 1 */
    0x8b, 0x03,
    /* EDM: window 1 deleted, defined visible and empty, displayed */
    0x8c, 0x02, 0x99, 0x38, 0xda, 0x32, 0x73, 0x1f, 0x09, 0x89, 0x02,
  };

  cc708_service_init (&s, 1, 0);
  feed2 (&s, 0x1420);
  feed2 (&s, 0x142e);
  cea608_pac (15, 0, pac);
  feed2 (&s, (guint16) (pac[0] << 8 | pac[1]));
  cc708_service_feed (&s, 0x4869);
  cc708_service_end_frame (&s);
  /* nothing but whole commands: the first DefineWindow does not fit in 6 */
  g_assert_cmpuint (cc708_service_take (&s, 6, out), ==, 0);
  g_assert_cmpuint (cc708_service_take (&s, 7, out), ==, 7);
  feed2 (&s, 0x142f);
  feed2 (&s, 0x142c);
  n = take_all (&s, out + 7);
  assert_bytes (out, 7 + n, want, sizeof (want));
  cc708_service_clear (&s);
}

/* Roll-up on CC3 (field 2: misc codes 0x15): RU2, PAC row 15, "ab", CR. */
static void
test_translate_rollup (void)
{
  Cc708Service s;
  guint8 out[64];
  guint n;
  static const guint8 want[] = {
    /* RU2: DefineWindow 2 visible, 2 rows */
    0x9a, 0x38, 0xda, 0x32, 0x71, 0x1f, 0x09,
    /* PAC row 15: the base row, 1 */
    0x92, 0x01, 0x00,
    'a', 'b', 0x03,
    /* CR, then ETX at the end of the frame */
    0x0d, 0x03,
  };

  cc708_service_init (&s, 2, 1);
  feed2 (&s, 0x1525);
  feed2 (&s, 0x1470);
  cc708_service_feed (&s, 0x6162);
  cc708_service_end_frame (&s);
  feed2 (&s, 0x152d);
  cc708_service_end_frame (&s);
  n = take_all (&s, out);
  assert_bytes (out, n, want, sizeof (want));
  cc708_service_clear (&s);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cc708/define-window", test_define_window);
  g_test_add_func ("/cc708/packet", test_packet);
  g_test_add_func ("/cc708/cc-data", test_cc_data);
  g_test_add_func ("/cc708/characters", test_characters);
  g_test_add_func ("/cc708/translate-pop-on", test_translate_popon);
  g_test_add_func ("/cc708/translate-roll-up", test_translate_rollup);
  return g_test_run ();
}
