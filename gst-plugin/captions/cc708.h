/* cc708.h: native CEA-708 (DTVCC) caption data, without GStreamer.
 *
 * The structure is that of CTA-708-E (and 47 CFR 79.102, which restates
 * it): caption channel packets (section 5: a header byte of a 2-bit
 * sequence number and a 6-bit size code, the size in byte pairs, 0 for
 * 64 pairs), service blocks inside them (section 6: a header byte of a
 * 3-bit service number and a 5-bit block size, up to 31 bytes), and in a
 * service block the commands and characters of the code space (section
 * 7: C0 controls such as ETX 0x03, BS 0x08, CR 0x0D and EXT1 0x10; G0
 * ASCII 0x20-0x7F, 0x7F a music note; C1 window commands 0x80-0x9F; G1
 * Latin-1 0xA0-0xFF; G2 after EXT1). The packets go into cc_data
 * triplets (cc_data() of ATSC A/53 part 4: a byte of marker bits,
 * cc_valid and cc_type, then two data bytes; cc_type 0 and 1 carry the
 * 608 pairs of fields 1 and 2, 3 starts a DTVCC packet and 2 continues
 * it), and the triplets of a frame may be wrapped in a SMPTE 334-2
 * caption distribution packet (CDP).
 *
 * Cc708Service turns the 608 byte pairs of one caption channel, as they
 * are sent frame after frame, into the commands of one 708 service that
 * show the same captions at the same frames: pop-on as two windows, one
 * shown and one loaded hidden, swapped by ToggleWindows at the 608 EOC;
 * roll-up as a window of 2 to 4 rows with CR; paint-on in the shown
 * window. An erase deletes the window and defines it again, visible and
 * empty, then displays it; text in a visible window ends with ETX. So a
 * renderer that redraws only on DisplayWindows, ToggleWindows and ETX
 * (GStreamer's cc708overlay) draws every change, and no ETX goes to a
 * hidden window (cc708overlay shows a window on ETX).
 */
#ifndef __CC708_H__
#define __CC708_H__

#include <glib.h>

G_BEGIN_DECLS

/* C0 and C1 codes (CTA-708-E coding layer, section 7) */
enum {
  CC708_ETX = 0x03,
  CC708_BS = 0x08,
  CC708_CR = 0x0d,
  CC708_EXT1 = 0x10,
  CC708_CW0 = 0x80,             /* SetCurrentWindow 0..7: 0x80..0x87 */
  CC708_CLW = 0x88,             /* ClearWindows (window map) */
  CC708_DSW = 0x89,             /* DisplayWindows (window map) */
  CC708_HDW = 0x8a,             /* HideWindows (window map) */
  CC708_TGW = 0x8b,             /* ToggleWindows (window map) */
  CC708_DLW = 0x8c,             /* DeleteWindows (window map) */
  CC708_SPA = 0x90,             /* SetPenAttributes (2 bytes) */
  CC708_SPC = 0x91,             /* SetPenColor (3 bytes) */
  CC708_SPL = 0x92,             /* SetPenLocation (row, column) */
  CC708_DF0 = 0x98,             /* DefineWindow 0..7: 0x98..0x9f (6 bytes) */
};

/* An anchor point of DefineWindow (0 top left ... 8 bottom right) */
#define CC708_ANCHOR_BOTTOM_CENTER 7

/* A DefineWindow command (7 bytes) of window id (0..7): anchor position
 * relative (percent of the screen: anchor_v 0..99, anchor_h 0..99), rows
 * 1..15, columns 1..42, row and column lock set, priority 0, the
 * predefined window and pen styles (1..7). Returns the bytes written. */
guint cc708_define_window (guint8 out[7], guint id, gboolean visible, guint anchor_v,
    guint anchor_h, guint anchor_point, guint rows, guint columns, guint window_style,
    guint pen_style);

/* The code of a character in the 708 code space (G0, G1, or EXT1 + G2):
 * 1 or 2 bytes, 0 when it has none. */
guint cc708_char (gunichar c, guint8 out[2]);

/* Appends a service block (header and data, len <= 31) of service 1..6. */
void cc708_service_block (GByteArray *out, guint service, const guint8 *data, guint len);

/* Appends a caption channel packet: the header of sequence number seq
 * (0..3) and the service blocks, padded with a zero byte (a null service
 * block header) to an even size. Returns FALSE for blocks over 127 bytes. */
gboolean cc708_packet (GByteArray *out, guint seq, const guint8 *blocks, guint len);

/* The cc_data triplets of one frame (cc_count of them, 3 bytes each):
 * field 1's pair (cc_type 0), field 2's pair (cc_type 1, marked invalid
 * when f2 is NULL), the DTVCC packet (cc_type 3, then 2), then a padding
 * triplet with cc_valid 0 and cc_type 2 that ends the packet, and padding
 * up to cc_count. The 608 bytes are given with their parity. Returns FALSE
 * when the packet does not fit. */
gboolean cc708_cc_data (GByteArray *out, guint cc_count, const guint8 f1[2], const guint8 *f2,
    const guint8 *packet, guint packet_len);

/* The cc_data triplets a frame carries at fps_n/fps_d: 600 / fps rounded,
 * 20 at 30000/1001 (9600 bit/s of cc_data, ATSC A/53 part 4), 3 to 31. */
guint cc708_cc_count (gint fps_n, gint fps_d);

/* The SMPTE 334-2 frame rate code of a CDP, 0 for a rate it has none. */
guint cc708_cdp_frame_rate (gint fps_n, gint fps_d);

/* Appends a CDP (SMPTE 334-2: header 0x9669, length, frame rate, flags,
 * sequence counter; ccdata section 0x72 with the triplets; footer 0x74
 * with the counter and the checksum) around cc_data (count triplets). */
void cc708_cdp (GByteArray *out, guint frame_rate_code, guint16 counter, const guint8 *cc_data,
    guint count);

/* One 708 service fed with the 608 pairs of one channel. */
typedef struct {
  guint service;                /* 1..6 */
  guint field;                  /* the 608 field: 0 or 1 (its misc codes) */
  GByteArray *pending;          /* service data not sent yet */
  GArray *cuts;                 /* guint: offsets in pending where a command may be cut */
  guint16 last;                 /* the previous pair, for the control code repeat */
  gint mode;                    /* 0 none, 1 pop-on, 2 roll-up, 3 paint-on */
  guint shown;                  /* pop-on and paint-on: the window displayed (0 or 1) */
  guint current;                /* the current window, or 8: none */
  guint rollup_rows;            /* rows of the roll-up window, 0: not defined */
  gboolean painted;             /* text written to a visible window since the last ETX */
} Cc708Service;

void cc708_service_init (Cc708Service *s, guint service, guint field);
void cc708_service_clear (Cc708Service *s);
/* Back to the start: no windows, nothing pending. */
void cc708_service_reset (Cc708Service *s);
/* One 608 pair (without parity, 0 for padding) of the service's channel. */
void cc708_service_feed (Cc708Service *s, guint16 pair);
/* Ends the service data of a frame (an ETX after text in a visible window). */
void cc708_service_end_frame (Cc708Service *s);
/* Moves up to max bytes of whole commands from pending to out; returns
 * how many. */
guint cc708_service_take (Cc708Service *s, guint max, guint8 *out);

G_END_DECLS

#endif /* __CC708_H__ */
