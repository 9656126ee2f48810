/* cea608enc-output.h: cea608enc's output formats, chosen by caps
 * negotiation, and the packing of a frame's 608 pairs into each:
 * closedcaption/x-cea-608 format=raw (field 1's pair) or s334-1a (a
 * triplet per field), closedcaption/x-cea-708 format=cc_data (the 608
 * pairs and a native 708 service per channel, cc708.h) or cdp (the same
 * cc_data in a SMPTE 334-2 CDP).
 */
#ifndef __CEA608ENC_OUTPUT_H__
#define __CEA608ENC_OUTPUT_H__

#include <gst/gst.h>
#include "cc708.h"

G_BEGIN_DECLS

typedef enum {
  CEA608ENC_FORMAT_NONE,
  CEA608ENC_FORMAT_RAW,
  CEA608ENC_FORMAT_S334,
  CEA608ENC_FORMAT_CC_DATA,
  CEA608ENC_FORMAT_CDP,
} Cea608EncFormat;

typedef struct {
  Cea608EncFormat format;
  gint fps_n, fps_d;
  guint main_field;             /* the field of the sink pad's channel (service 1) */
  Cc708Service service[2];      /* 708 services 1 (the sink pad) and 2 (sink_cc3) */
  guint seq;                    /* the next DTVCC packet's sequence number */
  guint16 cdp_counter;
  guint cc_count;               /* cc_data triplets per frame */
  guint cdp_rate;               /* the CDP frame rate code */
} Cea608EncOutput;

void cea608enc_output_init (Cea608EncOutput *o);
void cea608enc_output_clear (Cea608EncOutput *o);
/* The 708 services back to their start (a flush); the format stays. */
void cea608enc_output_restart (Cea608EncOutput *o);

/* Picks the format and frame rate with srcpad's peer and sends the caps:
 * 608 raw (one field only), s334-1a, 708 cc_data, cdp, in that order of
 * preference; the framerate of fps_n/fps_d when fps_n > 0, else
 * downstream's, else 30000/1001. Posts an error on element naming the
 * reason and returns FALSE when none fits. */
gboolean cea608enc_output_negotiate (Cea608EncOutput *o, GstElement *element, GstPad *srcpad,
    gint fps_n, gint fps_d, gboolean two_fields, guint main_field);

/* The payload of one frame from its 608 pairs (without parity); have[i]:
 * a channel writes field i + 1. */
GstBuffer *cea608enc_output_frame (Cea608EncOutput *o, const guint16 pairs[2],
    const gboolean have[2]);

G_END_DECLS

#endif /* __CEA608ENC_OUTPUT_H__ */
