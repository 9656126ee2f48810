/* cea608enc-output.c: cea608enc's output formats (cea608enc-output.h). */
#include "cea608enc-output.h"
#include "cea608.h"

#include <string.h>

GST_DEBUG_CATEGORY_STATIC (cea608enc_output_debug);
#define GST_CAT_DEFAULT cea608enc_output_debug

#define DEFAULT_FPS_N 30000
#define DEFAULT_FPS_D 1001

static const struct {
  const gchar *media, *format;
  Cea608EncFormat id;
} formats[] = {
  {"closedcaption/x-cea-608", "raw", CEA608ENC_FORMAT_RAW},
  {"closedcaption/x-cea-608", "s334-1a", CEA608ENC_FORMAT_S334},
  {"closedcaption/x-cea-708", "cc_data", CEA608ENC_FORMAT_CC_DATA},
  {"closedcaption/x-cea-708", "cdp", CEA608ENC_FORMAT_CDP},
};

void
cea608enc_output_init (Cea608EncOutput *o)
{
  static gsize debug_once = 0;
  if (g_once_init_enter (&debug_once)) {
    GST_DEBUG_CATEGORY_INIT (cea608enc_output_debug, "cea608enc-output", 0,
        "cea608enc output formats");
    g_once_init_leave (&debug_once, 1);
  }
  memset (o, 0, sizeof (*o));
  cc708_service_init (&o->service[0], 1, 0);
  cc708_service_init (&o->service[1], 2, 1);
}

void
cea608enc_output_clear (Cea608EncOutput *o)
{
  cc708_service_clear (&o->service[0]);
  cc708_service_clear (&o->service[1]);
}

void
cea608enc_output_restart (Cea608EncOutput *o)
{
  cc708_service_reset (&o->service[0]);
  cc708_service_reset (&o->service[1]);
  o->seq = 0;
  o->cdp_counter = 0;
}

/* The first format of formats[] that peer takes; -1 for none. */
static gint
pick_format (GstCaps *peer, gboolean two_fields)
{
  for (guint i = 0; i < G_N_ELEMENTS (formats); i++) {
    GstCaps *want;
    gboolean ok;
    /* raw carries field 1 only */
    if (formats[i].id == CEA608ENC_FORMAT_RAW && two_fields)
      continue;
    want = gst_caps_new_simple (formats[i].media, "format", G_TYPE_STRING, formats[i].format, NULL);
    ok = gst_caps_can_intersect (want, peer);
    gst_caps_unref (want);
    if (ok)
      return (gint) i;
  }
  return -1;
}

/* The fixed caps of formats[i] at fps_n/fps_d, or downstream's rate. */
static GstCaps *
fixate (GstCaps *peer, guint i, gint fps_n, gint fps_d)
{
  GstCaps *caps = gst_caps_new_simple (formats[i].media, "format", G_TYPE_STRING,
      formats[i].format, NULL);
  GstCaps *tmp;
  GstStructure *s;

  if (fps_n > 0) {
    gst_caps_set_simple (caps, "framerate", GST_TYPE_FRACTION, fps_n, fps_d, NULL);
    return caps;
  }
  tmp = gst_caps_intersect (peer, caps);
  gst_caps_unref (caps);
  caps = gst_caps_truncate (tmp);
  if (gst_caps_is_empty (caps)) {
    gst_caps_unref (caps);
    return NULL;
  }
  caps = gst_caps_make_writable (caps);
  s = gst_caps_get_structure (caps, 0);
  if (!gst_structure_has_field (s, "framerate"))
    gst_structure_set (s, "framerate", GST_TYPE_FRACTION, DEFAULT_FPS_N, DEFAULT_FPS_D, NULL);
  else
    gst_structure_fixate_field_nearest_fraction (s, "framerate", DEFAULT_FPS_N, DEFAULT_FPS_D);
  gst_structure_set (s, "format", G_TYPE_STRING, formats[i].format, NULL);
  return gst_caps_fixate (caps);
}

/* The error for a peer none of the formats fits. */
static void
no_format (GstElement *element, GstCaps *peer, gboolean two_fields)
{
  GstCaps *raw = gst_caps_new_simple ("closedcaption/x-cea-608", "format", G_TYPE_STRING, "raw",
      NULL);
  if (two_fields && gst_caps_can_intersect (raw, peer)) {
    GST_ELEMENT_ERROR (element, CORE, NEGOTIATION, (NULL),
        ("downstream takes only format=raw (field 1), but a CC3 channel (channel=cc3 or "
            "the sink_cc3 pad) needs format=s334-1a to carry field 2 (or 708 cc_data/cdp)"));
  } else {
    GST_ELEMENT_ERROR (element, CORE, NEGOTIATION, (NULL),
        ("downstream takes no closedcaption/x-cea-608 caps (format=raw or s334-1a) and no "
            "closedcaption/x-cea-708 caps (format=cc_data or cdp)"));
  }
  gst_caps_unref (raw);
}

gboolean
cea608enc_output_negotiate (Cea608EncOutput *o, GstElement *element, GstPad *srcpad,
    gint fps_n, gint fps_d, gboolean two_fields, guint main_field)
{
  GstCaps *templ, *peer, *caps;
  GstStructure *s;
  gint i;
  gboolean ok;

  templ = gst_pad_get_pad_template_caps (srcpad);
  peer = gst_pad_peer_query_caps (srcpad, templ);
  gst_caps_unref (templ);
  i = pick_format (peer, two_fields);
  if (i < 0) {
    no_format (element, peer, two_fields);
    gst_caps_unref (peer);
    return FALSE;
  }
  caps = fixate (peer, (guint) i, fps_n, fps_d);
  gst_caps_unref (peer);
  if (!caps) {
    GST_ELEMENT_ERROR (element, CORE, NEGOTIATION, (NULL),
        ("no caps for %s, format=%s downstream", formats[i].media, formats[i].format));
    return FALSE;
  }
  s = gst_caps_get_structure (caps, 0);
  if (!gst_structure_get_fraction (s, "framerate", &fps_n, &fps_d) || fps_n <= 0 || fps_d <= 0) {
    gst_caps_unref (caps);
    GST_ELEMENT_ERROR (element, CORE, NEGOTIATION, (NULL),
        ("no usable framerate: set the framerate property or a framerate downstream"));
    return FALSE;
  }
  if (formats[i].id == CEA608ENC_FORMAT_CDP && cc708_cdp_frame_rate (fps_n, fps_d) == 0) {
    gst_caps_unref (caps);
    GST_ELEMENT_ERROR (element, CORE, NEGOTIATION, (NULL),
        ("closedcaption/x-cea-708, format=cdp needs a frame rate SMPTE 334-2 codes (24000/1001, "
            "24, 25, 30000/1001, 30, 50, 60000/1001, 60), not %d/%d: set the framerate "
            "property or a framerate downstream", fps_n, fps_d));
    return FALSE;
  }
  GST_INFO_OBJECT (element, "output caps %" GST_PTR_FORMAT, caps);
  ok = gst_pad_push_event (srcpad, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  if (!ok) {
    GST_ELEMENT_ERROR (element, CORE, NEGOTIATION, (NULL),
        ("downstream refused %s, format=%s, framerate=%d/%d (the framerate property or the "
            "caps after cea608enc)", formats[i].media, formats[i].format, fps_n, fps_d));
    return FALSE;
  }
  o->format = formats[i].id;
  o->fps_n = fps_n;
  o->fps_d = fps_d;
  o->main_field = main_field;
  o->cc_count = cc708_cc_count (fps_n, fps_d);
  o->cdp_rate = cc708_cdp_frame_rate (fps_n, fps_d);
  cea608enc_output_restart (o);
  return TRUE;
}

static GstBuffer *
wrap (GByteArray *bytes)
{
  gsize size = bytes->len;
  return gst_buffer_new_wrapped (g_byte_array_free (bytes, FALSE), size);
}

/* The DTVCC packet of this frame: each service's commands after its 608
 * pair, within the triplets the frame has for 708 data. */
static void
dtvcc_packet (Cea608EncOutput *o, const guint16 pairs[2], const gboolean have[2],
    GByteArray *packet)
{
  /* the 608 triplets and the one that ends the packet are not 708 data */
  guint budget = 2 * (o->cc_count - 3);
  guint8 blocks[128], data[31];
  guint len = 0;

  for (guint k = 0; k < 2; k++) {
    guint field = k == 0 ? o->main_field : 1 - o->main_field;
    Cc708Service *svc = &o->service[k];
    guint room, n;

    if (!have[field] || (k == 1 && !(have[0] && have[1])))
      continue;
    svc->field = field;
    cc708_service_feed (svc, pairs[field]);
    cc708_service_end_frame (svc);
    /* the packet header, the blocks so far, this block's header */
    if (budget < len + 2)
      continue;
    room = MIN (budget - len - 2, 31);
    n = cc708_service_take (svc, room, data);
    if (n == 0)
      continue;
    blocks[len++] = (guint8) (svc->service << 5 | n);
    memcpy (blocks + len, data, n);
    len += n;
  }
  if (len > 0) {
    cc708_packet (packet, o->seq, blocks, len);
    o->seq = (o->seq + 1) & 3;
  }
}

static GstBuffer *
frame_708 (Cea608EncOutput *o, const guint16 pairs[2], const gboolean have[2])
{
  GByteArray *packet = g_byte_array_new (), *cc = g_byte_array_new (), *cdp;
  guint8 f1[2] = { cea608_parity (pairs[0] >> 8), cea608_parity (pairs[0] & 0xff) };
  guint8 f2[2] = { cea608_parity (pairs[1] >> 8), cea608_parity (pairs[1] & 0xff) };

  dtvcc_packet (o, pairs, have, packet);
  cc708_cc_data (cc, o->cc_count, f1, have[1] ? f2 : NULL, packet->data, packet->len);
  g_byte_array_unref (packet);
  if (o->format == CEA608ENC_FORMAT_CC_DATA)
    return wrap (cc);
  cdp = g_byte_array_new ();
  cc708_cdp (cdp, o->cdp_rate, o->cdp_counter++, cc->data, o->cc_count);
  g_byte_array_unref (cc);
  return wrap (cdp);
}

GstBuffer *
cea608enc_output_frame (Cea608EncOutput *o, const guint16 pairs[2], const gboolean have[2])
{
  GByteArray *b;

  if (o->format == CEA608ENC_FORMAT_CC_DATA || o->format == CEA608ENC_FORMAT_CDP)
    return frame_708 (o, pairs, have);
  b = g_byte_array_new ();
  if (o->format == CEA608ENC_FORMAT_RAW) {
    guint8 d[2] = { cea608_parity (pairs[0] >> 8), cea608_parity (pairs[0] & 0xff) };
    g_byte_array_append (b, d, 2);
  } else {
    /* SMPTE 334-1 annex A: per field a byte whose bit 7 is set for field 1
     * (the line offset left 0), then the pair; field 1 always, field 2
     * when a CC3 channel exists */
    guint8 d[6] = { 0x80, cea608_parity (pairs[0] >> 8), cea608_parity (pairs[0] & 0xff),
      0x00, cea608_parity (pairs[1] >> 8), cea608_parity (pairs[1] & 0xff) };
    g_byte_array_append (b, d, have[1] ? 6 : 3);
  }
  return wrap (b);
}
