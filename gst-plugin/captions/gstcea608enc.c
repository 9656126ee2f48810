/* gstcea608enc.c: cea608enc, timed UTF-8 text to CEA-608 closed captions.
 *
 * The sink pad takes text/x-raw, format=utf8 buffers with PTS and
 * DURATION (whispersink's src and translate_src_%u pads, or any timed text
 * source); the src pad gives closedcaption/x-cea-608 (format=raw: the
 * field 1 byte pair of each frame, or format=s334-1a: one triplet per
 * field) at a frame rate, one buffer per video frame, frame after frame
 * without holes, so that ccconverter, cccombiner, qtmux and line21encoder
 * can take it.
 *
 * Modes (47 CFR 79.101 (i), (j)(2)): pop-on (each caption loaded off
 * screen with RCL, ENM, PACs and text, shown with EOC at its start frame
 * and erased with EDM at its end frame; the output runs max-delay behind
 * the input so that a caption is loaded before it is due), roll-up (2 to 4
 * rows, words shown as they are sent from their start frame, CR when a
 * row is full or the live transcript is final, EDM after roll-up-timeout
 * without text) and paint-on (RDC, PAC and text from the start frame, EDM
 * at the end).
 *
 * Channels: the always pad "sink" writes the channel of the `channel`
 * property (CC1, field 1, or CC3, field 2); the request pad "sink_cc3"
 * adds CC3 beside a CC1 "sink" (format=s334-1a then carries both fields,
 * field 1 first). Both inputs advance the output together: a frame goes
 * out when every input has reached its time.
 *
 * Bandwidth: one byte pair per field per frame. Text that cannot be sent
 * within max-delay of its time (pop-on: its start; roll-up and paint-on:
 * its end) is shortened: its last words are left out until the rest fits
 * (the whole text when not even its first word fits), and an element
 * message "cea608enc-shortened" names what was left out. Text is never
 * reordered.
 *
 * The element's structure imitates GStreamer's queue and audiobuffersplit:
 * settings and counters under the object lock, the runtime state under the stream
 * lock (self->lock), which the chain and event functions of both sink pads
 * take; buffers are pushed with it held.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstcea608enc.h"
#include "cea608.h"

#include <string.h>

GST_DEBUG_CATEGORY_STATIC (cea608enc_debug);
#define GST_CAT_DEFAULT cea608enc_debug

#define FINAL_TRANSCRIPT_EVENT "rstranscribe/final-transcript"

#define DEFAULT_MODE GST_CEA608_ENC_MODE_AUTO
#define DEFAULT_CHANNEL GST_CEA608_ENC_CHANNEL_CC1
#define DEFAULT_ROLL_UP_ROWS 2
#define DEFAULT_POP_ON_ROWS 2
#define DEFAULT_MAX_DELAY_MS 3000
#define DEFAULT_ROLL_UP_TIMEOUT_MS 5000
#define DEFAULT_FPS_N 30000
#define DEFAULT_FPS_D 1001

enum {
  PROP_0,
  PROP_MODE,
  PROP_CHANNEL,
  PROP_ROLL_UP_ROWS,
  PROP_POP_ON_ROWS,
  PROP_MAX_DELAY,
  PROP_ROLL_UP_TIMEOUT,
  PROP_FRAMERATE,
  PROP_POST_MESSAGES,
  PROP_STATS,
};

typedef enum { FORMAT_NONE, FORMAT_RAW, FORMAT_S334 } OutFormat;

/* A queued unit of bytes: a caption's load (pop-on), or text, a carriage
 * return or an erase (roll-up, paint-on). */
typedef struct {
  GArray *pairs;                /* guint16, without parity */
  guint pos;
  gint64 not_before;            /* first frame it may be sent in */
  gint64 start, end;            /* pop-on: EOC frame, EDM frame */
  gboolean popon;
  GstClockTime pts;             /* running time of its text, or NONE */
  gchar *text;
} Unit;

typedef struct {
  GstPad *pad;
  guint field;                  /* 0: field 1 (CC1), 1: field 2 (CC3) */
  GstCea608EncMode mode;        /* resolved at the first text */
  GstSegment segment;
  gboolean have_segment;
  gint64 known;                 /* frames before it are covered by input */
  gboolean eos;
  GQueue units;
  guint16 burst[2];
  guint n_burst;
  gint64 erase_frame;           /* pop-on: EDM due, or -1 */
  /* enqueue-time bookkeeping */
  gint64 tail;                  /* pop-on: estimated EOC of the last queued caption
                                 * (+2); roll-up/paint-on: frame its bytes end */
  gint64 last_end;              /* end frame of the last text, -1 none */
  gboolean rollup_on;           /* roll-up preamble sent and not erased */
  guint col;
  gboolean painted;             /* paint-on: a caption on screen */
} Chan;

struct _GstCea608Enc {
  GstElement parent;

  GstPad *srcpad;
  Chan chan[2];                 /* [0]: "sink", [1]: "sink_cc3" (pad NULL when absent) */

  /* settings, object lock */
  GstCea608EncMode mode;
  GstCea608EncChannel channel;
  guint roll_up_rows;
  guint pop_on_rows;
  guint max_delay_ms;
  guint roll_up_timeout_ms;
  gint fps_n_prop, fps_d_prop;
  gboolean post_messages;

  /* runtime, self->lock */
  GMutex lock;
  gboolean started;
  gint fps_n, fps_d;
  OutFormat format;
  gint64 next_frame;
  gboolean need_segment;
  gboolean discont;
  gboolean eos_sent;
  gboolean flushing;
  GstFlowReturn last_flow;
  /* counters, for the stats property */
  guint64 frames, captions, shortened, words_left_out, chars_replaced, chars_dropped;
  guint64 max_delay_frames_seen;
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("text/x-raw, format = (string) utf8"));

static GstStaticPadTemplate sink_cc3_template = GST_STATIC_PAD_TEMPLATE ("sink_cc3",
    GST_PAD_SINK, GST_PAD_REQUEST,
    GST_STATIC_CAPS ("text/x-raw, format = (string) utf8"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("closedcaption/x-cea-608, format = (string) raw, "
        "framerate = (fraction) [ 1/1, 120/1 ]; "
        "closedcaption/x-cea-608, format = (string) s334-1a, "
        "framerate = (fraction) [ 1/1, 120/1 ]"));

#define gst_cea608_enc_parent_class parent_class
G_DEFINE_TYPE (GstCea608Enc, gst_cea608_enc, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (cea608enc, "cea608enc", GST_RANK_NONE, GST_TYPE_CEA608_ENC);

GType
gst_cea608_enc_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_CEA608_ENC_MODE_AUTO, "Roll-up for live input, pop-on otherwise", "auto"},
    {GST_CEA608_ENC_MODE_POP_ON, "Pop-on: each caption shown whole at its start", "pop-on"},
    {GST_CEA608_ENC_MODE_ROLL_UP, "Roll-up: words shown as they come, rows scroll", "roll-up"},
    {GST_CEA608_ENC_MODE_PAINT_ON, "Paint-on: each caption painted from its start", "paint-on"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstCea608EncMode", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_cea608_enc_channel_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_CEA608_ENC_CHANNEL_CC1, "CC1 (field 1, data channel 1)", "cc1"},
    {GST_CEA608_ENC_CHANNEL_CC3, "CC3 (field 2, data channel 1)", "cc3"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstCea608EncChannel", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* ---------------------------------------------------------------------- */
/* frames */

static GstClockTime
frame_time (GstCea608Enc *self, gint64 n)
{
  if (n <= 0)
    return 0;
  return gst_util_uint64_scale ((guint64) n, (guint64) self->fps_d * GST_SECOND, self->fps_n);
}

static gint64
frame_floor (GstCea608Enc *self, GstClockTime t)
{
  return (gint64) gst_util_uint64_scale (t, self->fps_n, (guint64) self->fps_d * GST_SECOND);
}

static gint64
frame_round (GstCea608Enc *self, GstClockTime t)
{
  return (gint64) gst_util_uint64_scale_round (t, self->fps_n, (guint64) self->fps_d * GST_SECOND);
}

static gint64
ms_frames (GstCea608Enc *self, guint ms)
{
  return (gint64) gst_util_uint64_scale_round (ms, self->fps_n, (guint64) self->fps_d * 1000);
}

/* ---------------------------------------------------------------------- */
/* units */

static void
unit_free (Unit *u)
{
  if (u->pairs)
    g_array_unref (u->pairs);
  g_free (u->text);
  g_free (u);
}

static Unit *
unit_new (GArray *pairs, gint64 not_before)
{
  Unit *u = g_new0 (Unit, 1);
  u->pairs = pairs;
  u->not_before = not_before;
  u->start = u->end = -1;
  u->pts = GST_CLOCK_TIME_NONE;
  return u;
}

static void
chan_reset (Chan *c)
{
  g_queue_clear_full (&c->units, (GDestroyNotify) unit_free);
  c->mode = GST_CEA608_ENC_MODE_AUTO;
  gst_segment_init (&c->segment, GST_FORMAT_TIME);
  c->have_segment = FALSE;
  c->known = 0;
  c->eos = FALSE;
  c->n_burst = 0;
  c->erase_frame = -1;
  c->tail = 0;
  c->last_end = -1;
  c->rollup_on = FALSE;
  c->col = 0;
  c->painted = FALSE;
}

static gboolean
chan_active (Chan *c)
{
  return c->pad != NULL;
}

/* ---------------------------------------------------------------------- */
/* byte emission, one pair per frame per field */

static void
note_shown (GstCea608Enc *self, Chan *c, Unit *u, gint64 f)
{
  gboolean post;
  GstClockTime shown = frame_time (self, f);

  if (!GST_CLOCK_TIME_IS_VALID (u->pts) || !u->text)
    return;
  GST_OBJECT_LOCK (self);
  self->captions++;
  if (f > u->not_before && u->popon && f - u->start > (gint64) self->max_delay_frames_seen)
    self->max_delay_frames_seen = f - u->start;
  post = self->post_messages;
  GST_OBJECT_UNLOCK (self);
  if (post) {
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_element (GST_OBJECT (self),
            gst_structure_new ("cea608enc-caption",
                "channel", G_TYPE_INT, c->field ? 3 : 1,
                "text", G_TYPE_STRING, u->text,
                "pts", G_TYPE_UINT64, (guint64) u->pts,
                "shown", G_TYPE_UINT64, (guint64) shown, NULL)));
  }
}

static guint16
misc_pair (Chan *c, Cea608Misc code)
{
  guint8 b[2];
  cea608_misc_code (code, c->field, b);
  return (guint16) (b[0] << 8 | b[1]);
}

static void
burst2 (Chan *c, guint16 p)
{
  c->burst[0] = c->burst[1] = p;
  c->n_burst = 2;
}

/* The pair (without parity) channel c sends in frame f; 0 for padding. */
static guint16
chan_emit (GstCea608Enc *self, Chan *c, gint64 f)
{
  Unit *u;

  for (;;) {
    if (c->n_burst > 0) {
      guint16 p = c->burst[0];
      c->burst[0] = c->burst[1];
      c->n_burst--;
      return p;
    }
    u = g_queue_peek_head (&c->units);
    if (c->erase_frame >= 0 && f >= c->erase_frame) {
      gboolean eoc_now = u && u->popon && u->pos == u->pairs->len && f >= u->start;
      c->erase_frame = -1;
      if (!eoc_now) {
        /* 79.101 (j)(2) pop-on: EDM erases the displayed caption */
        burst2 (c, misc_pair (c, CEA608_EDM));
        continue;
      }
      /* the next caption's EOC replaces the shown one in this frame */
    }
    if (!u || f < u->not_before)
      return 0;
    if (u->pos < u->pairs->len) {
      guint16 p = g_array_index (u->pairs, guint16, u->pos);
      u->pos++;
      if (u->pos == u->pairs->len && !u->popon) {
        note_shown (self, c, u, f);
        unit_free (g_queue_pop_head (&c->units));
      }
      return p;
    }
    if (!u->popon) {
      /* an empty unit */
      unit_free (g_queue_pop_head (&c->units));
      continue;
    }
    if (f < u->start)
      return 0;
    /* 79.101 (j)(2) pop-on: EOC flips the loaded caption on screen */
    burst2 (c, misc_pair (c, CEA608_EOC));
    c->erase_frame = MAX (u->end, f + 2);
    note_shown (self, c, u, f);
    unit_free (g_queue_pop_head (&c->units));
  }
}

static GstBuffer *
make_frame (GstCea608Enc *self, gint64 f)
{
  guint16 p[2] = { 0, 0 };
  gboolean have[2] = { FALSE, FALSE };
  GstBuffer *buf;
  GstMapInfo map;
  guint size;

  for (guint i = 0; i < 2; i++) {
    Chan *c = &self->chan[i];
    if (!chan_active (c))
      continue;
    p[c->field] = chan_emit (self, c, f);
    have[c->field] = TRUE;
  }

  if (self->format == FORMAT_RAW) {
    size = 2;
    buf = gst_buffer_new_allocate (NULL, size, NULL);
    gst_buffer_map (buf, &map, GST_MAP_WRITE);
    map.data[0] = cea608_parity (p[0] >> 8);
    map.data[1] = cea608_parity (p[0] & 0xff);
  } else {
    /* SMPTE 334-1 annex A: per field a byte whose bit 7 is set for field 1
     * (the line offset left 0), then the pair; field 1 always, field 2
     * when a CC3 channel exists */
    size = have[1] ? 6 : 3;
    buf = gst_buffer_new_allocate (NULL, size, NULL);
    gst_buffer_map (buf, &map, GST_MAP_WRITE);
    map.data[0] = 0x80;
    map.data[1] = cea608_parity (p[0] >> 8);
    map.data[2] = cea608_parity (p[0] & 0xff);
    if (have[1]) {
      map.data[3] = 0x00;
      map.data[4] = cea608_parity (p[1] >> 8);
      map.data[5] = cea608_parity (p[1] & 0xff);
    }
  }
  gst_buffer_unmap (buf, &map);

  GST_BUFFER_PTS (buf) = frame_time (self, f);
  GST_BUFFER_DURATION (buf) = frame_time (self, f + 1) - frame_time (self, f);
  if (self->discont) {
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
    self->discont = FALSE;
  }
  return buf;
}

/* ---------------------------------------------------------------------- */
/* negotiation */

static gboolean
negotiate (GstCea608Enc *self)
{
  GstCaps *templ, *peer, *caps;
  gint fps_n, fps_d;
  gboolean two_fields = chan_active (&self->chan[1]) || self->chan[0].field == 1;
  const gchar *fmt = NULL;
  GstStructure *s;
  gboolean ok;

  GST_OBJECT_LOCK (self);
  fps_n = self->fps_n_prop;
  fps_d = self->fps_d_prop;
  GST_OBJECT_UNLOCK (self);

  templ = gst_pad_get_pad_template_caps (self->srcpad);
  peer = gst_pad_peer_query_caps (self->srcpad, templ);
  gst_caps_unref (templ);
  if (gst_caps_is_empty (peer)) {
    gst_caps_unref (peer);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("downstream takes no closedcaption/x-cea-608 caps (format=raw or s334-1a)"));
    return FALSE;
  }
  /* raw (field 1 only) when it can carry the channels, else s334-1a */
  {
    GstCaps *want;
    if (!two_fields) {
      want = gst_caps_new_simple ("closedcaption/x-cea-608", "format", G_TYPE_STRING, "raw", NULL);
      if (gst_caps_can_intersect (want, peer))
        fmt = "raw";
      gst_caps_unref (want);
    }
    if (!fmt) {
      want = gst_caps_new_simple ("closedcaption/x-cea-608",
          "format", G_TYPE_STRING, "s334-1a", NULL);
      if (gst_caps_can_intersect (want, peer))
        fmt = "s334-1a";
      gst_caps_unref (want);
    }
  }
  if (!fmt) {
    gst_caps_unref (peer);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("downstream takes only format=raw (field 1), but a CC3 channel (channel=cc3 or "
            "the sink_cc3 pad) needs format=s334-1a to carry field 2"));
    return FALSE;
  }

  caps = gst_caps_new_simple ("closedcaption/x-cea-608", "format", G_TYPE_STRING, fmt, NULL);
  if (fps_n > 0) {
    gst_caps_set_simple (caps, "framerate", GST_TYPE_FRACTION, fps_n, fps_d, NULL);
  } else {
    GstCaps *tmp = gst_caps_intersect (peer, caps);
    gst_caps_unref (caps);
    caps = gst_caps_truncate (tmp);
    if (gst_caps_is_empty (caps)) {
      gst_caps_unref (caps);
      gst_caps_unref (peer);
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL), ("no caps for format=%s downstream", fmt));
      return FALSE;
    }
    caps = gst_caps_make_writable (caps);
    s = gst_caps_get_structure (caps, 0);
    if (!gst_structure_has_field (s, "framerate"))
      gst_structure_set (s, "framerate", GST_TYPE_FRACTION, DEFAULT_FPS_N, DEFAULT_FPS_D, NULL);
    else
      gst_structure_fixate_field_nearest_fraction (s, "framerate", DEFAULT_FPS_N, DEFAULT_FPS_D);
    gst_structure_set (s, "format", G_TYPE_STRING, fmt, NULL);
    caps = gst_caps_fixate (caps);
  }
  gst_caps_unref (peer);

  s = gst_caps_get_structure (caps, 0);
  if (!gst_structure_get_fraction (s, "framerate", &fps_n, &fps_d) || fps_n <= 0 || fps_d <= 0) {
    gst_caps_unref (caps);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("no usable framerate: set the framerate property or a framerate downstream"));
    return FALSE;
  }
  GST_INFO_OBJECT (self, "output caps %" GST_PTR_FORMAT, caps);
  ok = gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  if (!ok) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("downstream refused closedcaption/x-cea-608, format=%s, framerate=%d/%d "
            "(the framerate property or the caps after cea608enc)", fmt, fps_n, fps_d));
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  self->fps_n = fps_n;
  self->fps_d = fps_d;
  GST_OBJECT_UNLOCK (self);
  self->format = g_str_equal (fmt, "raw") ? FORMAT_RAW : FORMAT_S334;
  return TRUE;
}

/* Takes self->lock; negotiates and sends the segment once. */
static gboolean
ensure_started (GstCea608Enc *self)
{
  if (self->format == FORMAT_NONE) {
    GST_OBJECT_LOCK (self);
    self->chan[0].field = self->channel == GST_CEA608_ENC_CHANNEL_CC3 ? 1 : 0;
    GST_OBJECT_UNLOCK (self);
    if (!negotiate (self))
      return FALSE;
  }
  if (self->need_segment) {
    GstSegment seg;
    gst_segment_init (&seg, GST_FORMAT_TIME);
    gst_pad_push_event (self->srcpad, gst_event_new_segment (&seg));
    self->need_segment = FALSE;
  }
  return TRUE;
}

/* Pushes the frames before target. */
static GstFlowReturn
push_until (GstCea608Enc *self, gint64 target)
{
  GstFlowReturn ret = GST_FLOW_OK;

  while (self->next_frame < target && !self->flushing) {
    GstBuffer *buf = make_frame (self, self->next_frame);
    self->next_frame++;
    GST_OBJECT_LOCK (self);
    self->frames++;
    GST_OBJECT_UNLOCK (self);
    ret = gst_pad_push (self->srcpad, buf);
    if (ret != GST_FLOW_OK)
      break;
  }
  if (ret == GST_FLOW_EOS && !self->eos_sent) {
    /* downstream wants no more (cccombiner after its video ended): end the
     * caption stream now, upstream may not send EOS on this flow return */
    GST_INFO_OBJECT (self, "downstream returned EOS: sending EOS");
    self->eos_sent = TRUE;
    gst_pad_push_event (self->srcpad, gst_event_new_eos ());
  }
  self->last_flow = ret;
  return ret;
}

static gint64
chan_lookahead (GstCea608Enc *self, Chan *c)
{
  guint ms;
  if (c->mode != GST_CEA608_ENC_MODE_POP_ON)
    return 0;
  GST_OBJECT_LOCK (self);
  ms = self->max_delay_ms;
  GST_OBJECT_UNLOCK (self);
  return ms_frames (self, ms);
}

/* The frames every input covers: frames before it may go out. */
static GstFlowReturn
advance (GstCea608Enc *self)
{
  gint64 target = G_MAXINT64;
  gboolean all_eos = TRUE;

  if (!self->started || self->format == FORMAT_NONE)
    return GST_FLOW_OK;
  for (guint i = 0; i < 2; i++) {
    Chan *c = &self->chan[i];
    if (!chan_active (c))
      continue;
    if (!c->eos) {
      all_eos = FALSE;
      target = MIN (target, c->known - chan_lookahead (self, c));
    }
  }
  if (all_eos)
    return GST_FLOW_OK;
  return push_until (self, target);
}

/* ---------------------------------------------------------------------- */
/* text to units */

static void
post_shortened (GstCea608Enc *self, Chan *c, GstClockTime pts, const gchar *text,
    const gchar *sent, const gchar *left_out, gint64 delay_frames)
{
  GST_OBJECT_LOCK (self);
  self->shortened++;
  GST_OBJECT_UNLOCK (self);
  GST_WARNING_OBJECT (self, "CC%d: text at %" GST_TIME_FORMAT " shortened to fit the "
      "channel within max-delay: left out \"%s\"", c->field ? 3 : 1, GST_TIME_ARGS (pts), left_out);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self),
          gst_structure_new ("cea608enc-shortened",
              "channel", G_TYPE_INT, c->field ? 3 : 1,
              "pts", G_TYPE_UINT64, (guint64) pts,
              "text", G_TYPE_STRING, text,
              "sent", G_TYPE_STRING, sent,
              "left-out", G_TYPE_STRING, left_out,
              "delay", G_TYPE_UINT64, (guint64) frame_time (self, delay_frames), NULL)));
}

/* The pairs of a pop-on caption of rows: RCL, ENM, then a PAC and the text
 * of each row, bottom aligned (79.101 (j)(2) pop-on). */
static GArray *
popon_pairs (Chan *c, GPtrArray *rows)
{
  Cea608Writer w;
  guint first = CEA608_ROWS - rows->len + 1;

  cea608_writer_init (&w);
  cea608_writer_misc (&w, CEA608_RCL, c->field);
  cea608_writer_misc (&w, CEA608_ENM, c->field);
  for (guint i = 0; i < rows->len; i++) {
    cea608_writer_pac (&w, first + i, 0);
    cea608_writer_text (&w, g_ptr_array_index (rows, i));
    cea608_writer_flush (&w);
  }
  return w.pairs;
}

/* Words [0, n) of words joined by spaces. */
static gchar *
join_words (gchar **words, guint n)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < n && words[i]; i++) {
    if (s->len)
      g_string_append_c (s, ' ');
    g_string_append (s, words[i]);
  }
  return g_string_free (s, FALSE);
}

static void
enqueue_popon (GstCea608Enc *self, Chan *c, const gchar *text, GstClockTime pts,
    gint64 start, gint64 end, gint64 max_delay, guint max_rows)
{
  gchar **words = g_strsplit (text, " ", -1);
  guint n = g_strv_length (words);
  guint keep = n;
  GArray *pairs = NULL;
  GPtrArray *rows = NULL;
  gint64 eoc = start, begin;

  for (;;) {
    gchar *t = join_words (words, keep);
    rows = cea608_break_rows (t, CEA608_COLUMNS);
    g_free (t);
    if (rows->len > max_rows)
      g_ptr_array_set_size (rows, max_rows);
    pairs = popon_pairs (c, rows);
    /* loading starts after the previous caption's EOC and after the frames
     * already out; an EDM of the shown caption may take two frames */
    begin = MAX (self->next_frame, c->tail);
    eoc = MAX (start, begin + (gint64) pairs->len + (c->erase_frame >= 0 || c->tail > 0 ? 2 : 0));
    if (eoc - start <= max_delay || keep == 0)
      break;
    g_array_unref (pairs);
    g_ptr_array_unref (rows);
    keep--;
  }

  if (keep < n) {
    gchar *sent = join_words (words, keep);
    gchar *left = g_strjoinv (" ", words + keep);
    post_shortened (self, c, pts, text, sent, left, eoc - start);
    GST_OBJECT_LOCK (self);
    self->words_left_out += n - keep;
    GST_OBJECT_UNLOCK (self);
    g_free (sent);
    g_free (left);
  }
  if (keep > 0) {
    Unit *u = unit_new (pairs, 0);
    u->popon = TRUE;
    u->start = eoc > start ? eoc : start;
    u->end = MAX (end, u->start + 2);
    u->pts = pts;
    u->text = join_words (words, keep);
    g_queue_push_tail (&c->units, u);
    c->tail = u->start + 2;
  } else {
    g_array_unref (pairs);
  }
  g_ptr_array_unref (rows);
  g_strfreev (words);
}

/* Roll-up text: words after the cursor, CR when the row is full
 * (79.101 (j)(2) roll-up). Returns the pairs; updates col and rollup_on. */
static GArray *
rollup_pairs (Chan *c, gchar **words, guint n, guint rows, guint *col, gboolean *on)
{
  Cea608Writer w;

  cea608_writer_init (&w);
  if (!*on) {
    static const Cea608Misc ru[] = { CEA608_RU2, CEA608_RU3, CEA608_RU4 };
    cea608_writer_misc (&w, ru[CLAMP (rows, 2, 4) - 2], c->field);
    /* the base row: the bottom one */
    cea608_writer_pac (&w, CEA608_ROWS, 0);
    *on = TRUE;
    *col = 0;
  }
  for (guint i = 0; i < n; i++) {
    const gchar *word = words[i];
    glong len = g_utf8_strlen (word, -1);

    if (len == 0)
      continue;
    if (*col > 0 && *col + 1 + len <= CEA608_COLUMNS) {
      cea608_writer_text (&w, " ");
      *col += 1;
    } else if (*col > 0) {
      cea608_writer_misc (&w, CEA608_CR, c->field);
      *col = 0;
    }
    while (len > CEA608_COLUMNS - (glong) * col) {
      glong room = CEA608_COLUMNS - *col;
      const gchar *cut = g_utf8_offset_to_pointer (word, room);
      gchar *part = g_strndup (word, cut - word);
      cea608_writer_text (&w, part);
      g_free (part);
      cea608_writer_misc (&w, CEA608_CR, c->field);
      *col = 0;
      word = cut;
      len -= room;
    }
    cea608_writer_text (&w, word);
    *col += len;
  }
  cea608_writer_flush (&w);
  return w.pairs;
}

/* An erase unit (EDM twice) at frame at. */
static void
enqueue_erase (Chan *c, gint64 at)
{
  Cea608Writer w;
  cea608_writer_init (&w);
  cea608_writer_misc (&w, CEA608_EDM, c->field);
  g_queue_push_tail (&c->units, unit_new (w.pairs, at));
  c->tail = MAX (c->tail, at) + 2;
}

static void
enqueue_direct (GstCea608Enc *self, Chan *c, const gchar *text, GstClockTime pts,
    gint64 start, gint64 end, gint64 max_delay, guint rollup_rows, gint64 timeout)
{
  gchar **words = g_strsplit (text, " ", -1);
  guint n = g_strv_length (words);
  guint keep = n, col = 0;
  gboolean on = FALSE;
  GArray *pairs = NULL;
  gint64 done = start, begin;
  gboolean rollup = c->mode == GST_CEA608_ENC_MODE_ROLL_UP;

  /* what was on screen is gone before this text */
  if (rollup && c->rollup_on && c->last_end >= 0 && start >= c->last_end + timeout) {
    enqueue_erase (c, c->last_end + timeout);
    c->rollup_on = FALSE;
  }
  if (!rollup && c->painted && c->last_end >= 0 && start > c->last_end) {
    enqueue_erase (c, c->last_end);
    c->painted = FALSE;
  }

  for (;;) {
    col = c->col;
    on = c->rollup_on;
    if (rollup) {
      pairs = rollup_pairs (c, words, keep, rollup_rows, &col, &on);
    } else {
      Cea608Writer w;
      gchar *t = join_words (words, keep);
      GPtrArray *rows = cea608_break_rows (t, CEA608_COLUMNS);
      guint first;
      g_free (t);
      if (rows->len > 4)
        g_ptr_array_set_size (rows, 4);
      first = CEA608_ROWS - rows->len + 1;
      cea608_writer_init (&w);
      cea608_writer_misc (&w, CEA608_RDC, c->field);
      if (c->painted)
        cea608_writer_misc (&w, CEA608_EDM, c->field);
      for (guint i = 0; i < rows->len; i++) {
        cea608_writer_pac (&w, first + i, 0);
        cea608_writer_text (&w, g_ptr_array_index (rows, i));
        cea608_writer_flush (&w);
      }
      g_ptr_array_unref (rows);
      pairs = w.pairs;
    }
    begin = MAX (MAX (self->next_frame, c->tail), start);
    done = begin + (gint64) pairs->len;
    if (done - MAX (end, start) <= max_delay || keep == 0)
      break;
    g_array_unref (pairs);
    keep--;
  }

  if (keep < n) {
    gchar *sent = join_words (words, keep);
    gchar *left = g_strjoinv (" ", words + keep);
    post_shortened (self, c, pts, text, sent, left, done - MAX (end, start));
    GST_OBJECT_LOCK (self);
    self->words_left_out += n - keep;
    GST_OBJECT_UNLOCK (self);
    g_free (sent);
    g_free (left);
  }
  if (keep > 0) {
    Unit *u = unit_new (pairs, start);
    u->pts = pts;
    u->start = start;
    u->end = end;
    u->text = join_words (words, keep);
    g_queue_push_tail (&c->units, u);
    c->tail = done;
    c->col = col;
    c->rollup_on = on;
    if (!rollup)
      c->painted = TRUE;
    c->last_end = MAX (end, done);
  } else {
    g_array_unref (pairs);
  }
  g_strfreev (words);
}

/* The final erase of channel c (EOS): the frame after which it is done. */
static gint64
chan_finish (GstCea608Enc *self, Chan *c)
{
  gint64 timeout;
  GST_OBJECT_LOCK (self);
  timeout = ms_frames (self, self->roll_up_timeout_ms);
  GST_OBJECT_UNLOCK (self);

  if (c->mode == GST_CEA608_ENC_MODE_ROLL_UP && c->rollup_on && c->last_end >= 0) {
    enqueue_erase (c, c->last_end + timeout);
    c->rollup_on = FALSE;
  } else if (c->mode == GST_CEA608_ENC_MODE_PAINT_ON && c->painted && c->last_end >= 0) {
    enqueue_erase (c, c->last_end);
    c->painted = FALSE;
  }
  return c->tail;
}

/* ---------------------------------------------------------------------- */
/* pads */

static Chan *
pad_chan (GstCea608Enc *self, GstPad *pad)
{
  return self->chan[1].pad == pad ? &self->chan[1] : &self->chan[0];
}

static void
start_at (GstCea608Enc *self, Chan *c)
{
  if (!self->started && c->have_segment) {
    GstClockTime rt = gst_segment_to_running_time (&c->segment, GST_FORMAT_TIME, c->segment.start);
    self->next_frame = GST_CLOCK_TIME_IS_VALID (rt) ? frame_floor (self, rt) : 0;
    self->started = TRUE;
    for (guint i = 0; i < 2; i++)
      self->chan[i].known = MAX (self->chan[i].known, self->next_frame);
  }
}

static void
resolve_mode (GstCea608Enc *self, Chan *c)
{
  GstCea608EncMode mode;
  GstQuery *q;
  gboolean live = FALSE;

  if (c->mode != GST_CEA608_ENC_MODE_AUTO)
    return;
  GST_OBJECT_LOCK (self);
  mode = self->mode;
  GST_OBJECT_UNLOCK (self);
  if (mode == GST_CEA608_ENC_MODE_AUTO) {
    q = gst_query_new_latency ();
    if (gst_pad_peer_query (c->pad, q))
      gst_query_parse_latency (q, &live, NULL, NULL);
    gst_query_unref (q);
    mode = live ? GST_CEA608_ENC_MODE_ROLL_UP : GST_CEA608_ENC_MODE_POP_ON;
    GST_INFO_OBJECT (c->pad, "mode auto: %s upstream, %s", live ? "live" : "not live",
        live ? "roll-up" : "pop-on");
  }
  c->mode = mode;
}

/* Called with self->lock; c's known frontier moved: push what is due. */
static GstFlowReturn
covered (GstCea608Enc *self, Chan *c, GstClockTime running_end)
{
  if (GST_CLOCK_TIME_IS_VALID (running_end))
    c->known = MAX (c->known, frame_floor (self, running_end));
  /* no text for roll-up-timeout (roll-up) or the end of the painted
   * caption (paint-on): erase it */
  if (c->mode == GST_CEA608_ENC_MODE_ROLL_UP && c->rollup_on && c->last_end >= 0) {
    gint64 timeout;
    GST_OBJECT_LOCK (self);
    timeout = ms_frames (self, self->roll_up_timeout_ms);
    GST_OBJECT_UNLOCK (self);
    if (c->known >= c->last_end + timeout) {
      enqueue_erase (c, c->last_end + timeout);
      c->rollup_on = FALSE;
    }
  } else if (c->mode == GST_CEA608_ENC_MODE_PAINT_ON && c->painted && c->last_end >= 0 &&
      c->known > c->last_end) {
    enqueue_erase (c, c->last_end);
    c->painted = FALSE;
  }
  return advance (self);
}

static GstFlowReturn
gst_cea608_enc_chain (GstPad *pad, GstObject *parent, GstBuffer *buf)
{
  GstCea608Enc *self = GST_CEA608_ENC (parent);
  Chan *c;
  GstClockTime pts = GST_BUFFER_PTS (buf), dur = GST_BUFFER_DURATION (buf);
  guint64 cstart, cstop;
  GstClockTime rs, re;
  GstMapInfo map;
  gchar *raw, *text;
  guint replaced = 0, dropped = 0;
  guint max_delay_ms, pop_rows, ru_rows, timeout_ms;
  GstFlowReturn ret;

  if (!GST_CLOCK_TIME_IS_VALID (pts) || !GST_CLOCK_TIME_IS_VALID (dur)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, (NULL),
        ("text buffer on %s:%s without %s: cea608enc needs the PTS and DURATION of each "
            "text buffer to time its captions", GST_DEBUG_PAD_NAME (pad),
            !GST_CLOCK_TIME_IS_VALID (pts) ? "PTS" : "DURATION"));
    gst_buffer_unref (buf);
    return GST_FLOW_ERROR;
  }

  g_mutex_lock (&self->lock);
  c = pad_chan (self, pad);
  if (!c->have_segment) {
    g_mutex_unlock (&self->lock);
    GST_ELEMENT_ERROR (self, STREAM, FAILED, (NULL),
        ("text buffer on %s:%s before a TIME segment", GST_DEBUG_PAD_NAME (pad)));
    gst_buffer_unref (buf);
    return GST_FLOW_ERROR;
  }
  if (c->eos || self->eos_sent) {
    g_mutex_unlock (&self->lock);
    gst_buffer_unref (buf);
    return GST_FLOW_EOS;
  }
  if (!gst_segment_clip (&c->segment, GST_FORMAT_TIME, pts, pts + dur, &cstart, &cstop)) {
    g_mutex_unlock (&self->lock);
    GST_DEBUG_OBJECT (pad, "text outside the segment, dropped");
    gst_buffer_unref (buf);
    return GST_FLOW_OK;
  }
  if (!ensure_started (self)) {
    g_mutex_unlock (&self->lock);
    gst_buffer_unref (buf);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  start_at (self, c);
  resolve_mode (self, c);
  rs = gst_segment_to_running_time (&c->segment, GST_FORMAT_TIME, cstart);
  re = gst_segment_to_running_time (&c->segment, GST_FORMAT_TIME, cstop);

  GST_OBJECT_LOCK (self);
  max_delay_ms = self->max_delay_ms;
  pop_rows = self->pop_on_rows;
  ru_rows = self->roll_up_rows;
  timeout_ms = self->roll_up_timeout_ms;
  GST_OBJECT_UNLOCK (self);

  gst_buffer_map (buf, &map, GST_MAP_READ);
  raw = g_strndup ((const gchar *) map.data, map.size);
  gst_buffer_unmap (buf, &map);
  text = cea608_normalize (raw, &replaced, &dropped);
  GST_OBJECT_LOCK (self);
  self->chars_replaced += replaced;
  self->chars_dropped += dropped;
  GST_OBJECT_UNLOCK (self);
  if (dropped)
    GST_INFO_OBJECT (pad, "%u characters outside the 608 set dropped from \"%s\"", dropped, raw);
  g_free (raw);

  if (*text) {
    gint64 start = frame_round (self, rs), end = frame_round (self, re);
    gint64 max_delay = ms_frames (self, max_delay_ms);

    if (end <= start)
      end = start + 1;
    if (c->mode == GST_CEA608_ENC_MODE_POP_ON) {
      /* more rows than a caption holds: consecutive captions of about
       * equal length, the time shared by their characters */
      GPtrArray *chunks = cea608_split_captions (text, pop_rows);
      guint total = 0, done = 0;
      for (guint i = 0; i < chunks->len; i++)
        total += g_utf8_strlen (g_ptr_array_index (chunks, i), -1);
      for (guint i = 0; i < chunks->len; i++) {
        const gchar *chunk = g_ptr_array_index (chunks, i);
        guint chars = g_utf8_strlen (chunk, -1);
        gint64 s, e;
        s = start + (end - start) * done / MAX (total, 1);
        done += chars;
        e = start + (end - start) * done / MAX (total, 1);
        enqueue_popon (self, c, chunk,
            rs + gst_util_uint64_scale (re - rs, done - chars, MAX (total, 1)),
            s, MAX (e, s + 1), max_delay, pop_rows);
      }
      g_ptr_array_unref (chunks);
    } else {
      enqueue_direct (self, c, text, rs, start, end, max_delay, ru_rows,
          ms_frames (self, timeout_ms));
    }
  }
  g_free (text);
  gst_buffer_unref (buf);

  ret = covered (self, c, re);
  g_mutex_unlock (&self->lock);
  return ret;
}

static gboolean
all_eos (GstCea608Enc *self)
{
  for (guint i = 0; i < 2; i++)
    if (chan_active (&self->chan[i]) && !self->chan[i].eos)
      return FALSE;
  return TRUE;
}

static void
reset_runtime (GstCea608Enc *self)
{
  for (guint i = 0; i < 2; i++) {
    GstPad *pad = self->chan[i].pad;
    guint field = self->chan[i].field;
    chan_reset (&self->chan[i]);
    self->chan[i].pad = pad;
    self->chan[i].field = field;
  }
  self->started = FALSE;
  self->next_frame = 0;
  self->need_segment = TRUE;
  self->discont = TRUE;
  self->eos_sent = FALSE;
  self->last_flow = GST_FLOW_OK;
}

static gboolean
gst_cea608_enc_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstCea608Enc *self = GST_CEA608_ENC (parent);
  Chan *c;
  gboolean main_pad = pad == self->chan[0].pad;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_STREAM_START:
      if (main_pad)
        return gst_pad_push_event (self->srcpad, event);
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_CAPS:
    case GST_EVENT_TAG:
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_SEGMENT: {
      const GstSegment *seg;
      gst_event_parse_segment (event, &seg);
      if (seg->format != GST_FORMAT_TIME) {
        GST_ELEMENT_ERROR (self, STREAM, FORMAT, (NULL),
            ("%s:%s got a %s segment: cea608enc needs TIME segments", GST_DEBUG_PAD_NAME (pad),
                gst_format_get_name (seg->format)));
        gst_event_unref (event);
        return FALSE;
      }
      g_mutex_lock (&self->lock);
      c = pad_chan (self, pad);
      gst_segment_copy_into (seg, &c->segment);
      c->have_segment = TRUE;
      g_mutex_unlock (&self->lock);
      gst_event_unref (event);
      return TRUE;
    }
    case GST_EVENT_GAP: {
      GstClockTime ts, dur, end;
      GstFlowReturn ret = GST_FLOW_OK;
      gst_event_parse_gap (event, &ts, &dur);
      gst_event_unref (event);
      g_mutex_lock (&self->lock);
      c = pad_chan (self, pad);
      if (c->have_segment && GST_CLOCK_TIME_IS_VALID (ts) && !c->eos) {
        end = GST_CLOCK_TIME_IS_VALID (dur) ? ts + dur : ts;
        if (end > c->segment.stop && GST_CLOCK_TIME_IS_VALID (c->segment.stop))
          end = c->segment.stop;
        if (ensure_started (self)) {
          start_at (self, c);
          resolve_mode (self, c);
          if (end >= c->segment.start)
            ret = covered (self, c,
                gst_segment_to_running_time (&c->segment, GST_FORMAT_TIME, end));
        }
      }
      g_mutex_unlock (&self->lock);
      return ret == GST_FLOW_OK || ret == GST_FLOW_FLUSHING;
    }
    case GST_EVENT_CUSTOM_DOWNSTREAM: {
      const GstStructure *s = gst_event_get_structure (event);
      if (s && gst_structure_has_name (s, FINAL_TRANSCRIPT_EVENT)) {
        g_mutex_lock (&self->lock);
        c = pad_chan (self, pad);
        if (c->mode == GST_CEA608_ENC_MODE_ROLL_UP && c->rollup_on && c->col > 0) {
          /* the live transcript is final: a new row for what follows */
          Cea608Writer w;
          gint64 at = MAX (c->known, c->tail);
          cea608_writer_init (&w);
          cea608_writer_misc (&w, CEA608_CR, c->field);
          g_queue_push_tail (&c->units, unit_new (w.pairs, at));
          c->tail = at + 2;
          c->col = 0;
        }
        g_mutex_unlock (&self->lock);
        gst_event_unref (event);
        return TRUE;
      }
      break;
    }
    case GST_EVENT_EOS: {
      gint64 last = 0;
      gboolean ok = TRUE;
      g_mutex_lock (&self->lock);
      c = pad_chan (self, pad);
      if (c->eos) {
        g_mutex_unlock (&self->lock);
        gst_event_unref (event);
        return TRUE;
      }
      if (self->started && self->format != FORMAT_NONE)
        chan_finish (self, c);
      c->eos = TRUE;
      if (self->eos_sent) {
        g_mutex_unlock (&self->lock);
        gst_event_unref (event);
        return TRUE;
      }
      if (all_eos (self)) {
        if (self->started && self->format != FORMAT_NONE) {
          for (guint i = 0; i < 2; i++) {
            Chan *o = &self->chan[i];
            if (!chan_active (o))
              continue;
            last = MAX (last, o->tail);
            last = MAX (last, o->known);
            if (o->erase_frame >= 0)
              last = MAX (last, o->erase_frame + 2);
            for (GList *l = o->units.head; l; l = l->next) {
              Unit *u = l->data;
              last = MAX (last, u->not_before + (gint64) u->pairs->len + 2);
              if (u->popon)
                last = MAX (last, MAX (u->start, u->end) + 4);
            }
          }
          push_until (self, last);
        }
        if (self->eos_sent) {
          /* push_until sent it on downstream's EOS */
          g_mutex_unlock (&self->lock);
          gst_event_unref (event);
          return TRUE;
        }
        self->eos_sent = TRUE;
        g_mutex_unlock (&self->lock);
        return gst_pad_push_event (self->srcpad, event);
      } else if (!all_eos (self) && self->started && self->format != FORMAT_NONE) {
        advance (self);
      }
      g_mutex_unlock (&self->lock);
      gst_event_unref (event);
      return ok;
    }
    case GST_EVENT_FLUSH_START:
      g_mutex_lock (&self->lock);
      self->flushing = TRUE;
      g_mutex_unlock (&self->lock);
      if (main_pad)
        return gst_pad_push_event (self->srcpad, event);
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_FLUSH_STOP:
      /* the other pad's stream may still be pushing: reset under the lock */
      g_mutex_lock (&self->lock);
      reset_runtime (self);
      self->flushing = FALSE;
      g_mutex_unlock (&self->lock);
      if (main_pad)
        return gst_pad_push_event (self->srcpad, event);
      gst_event_unref (event);
      return TRUE;
    default:
      break;
  }
  if (main_pad)
    return gst_pad_event_default (pad, parent, event);
  gst_event_unref (event);
  return TRUE;
}

static gboolean
gst_cea608_enc_src_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstCea608Enc *self = GST_CEA608_ENC (parent);

  if (GST_QUERY_TYPE (query) == GST_QUERY_LATENCY) {
    gboolean live = FALSE, live2 = FALSE;
    GstClockTime min = 0, max = GST_CLOCK_TIME_NONE;
    GstClockTime min2 = 0, max2 = GST_CLOCK_TIME_NONE;
    GstCea608EncMode mode;
    guint delay_ms;
    GstQuery *q;

    if (!gst_pad_peer_query (self->chan[0].pad, query))
      return FALSE;
    gst_query_parse_latency (query, &live, &min, &max);
    if (self->chan[1].pad) {
      q = gst_query_new_latency ();
      if (gst_pad_peer_query (self->chan[1].pad, q)) {
        gst_query_parse_latency (q, &live2, &min2, &max2);
        live = live || live2;
        min = MAX (min, min2);
        if (GST_CLOCK_TIME_IS_VALID (max2))
          max = GST_CLOCK_TIME_IS_VALID (max) ? MIN (max, max2) : max2;
      }
      gst_query_unref (q);
    }
    GST_OBJECT_LOCK (self);
    mode = self->mode;
    delay_ms = self->max_delay_ms;
    GST_OBJECT_UNLOCK (self);
    /* pop-on holds the output max-delay behind the input */
    if (mode == GST_CEA608_ENC_MODE_POP_ON || (mode == GST_CEA608_ENC_MODE_AUTO && !live)) {
      min += delay_ms * GST_MSECOND;
      if (GST_CLOCK_TIME_IS_VALID (max))
        max += delay_ms * GST_MSECOND;
    }
    gst_query_set_latency (query, live, min, max);
    return TRUE;
  }
  return gst_pad_query_default (pad, parent, query);
}

static GstPad *
gst_cea608_enc_request_new_pad (GstElement *element, GstPadTemplate *templ,
    const gchar *name G_GNUC_UNUSED, const GstCaps *caps G_GNUC_UNUSED)
{
  GstCea608Enc *self = GST_CEA608_ENC (element);
  GstPad *pad;
  GstCea608EncChannel channel;

  GST_OBJECT_LOCK (self);
  channel = self->channel;
  GST_OBJECT_UNLOCK (self);

  g_mutex_lock (&self->lock);
  if (self->chan[1].pad) {
    g_mutex_unlock (&self->lock);
    GST_ELEMENT_ERROR (self, CORE, PAD, (NULL), ("sink_cc3 requested twice: there is one CC3 channel"));
    return NULL;
  }
  if (channel == GST_CEA608_ENC_CHANNEL_CC3) {
    g_mutex_unlock (&self->lock);
    GST_ELEMENT_ERROR (self, CORE, PAD, (NULL),
        ("sink_cc3 requested while channel=cc3: the sink pad already writes CC3; "
            "set channel=cc1 to have both"));
    return NULL;
  }
  if (self->started) {
    g_mutex_unlock (&self->lock);
    GST_ELEMENT_ERROR (self, CORE, PAD, (NULL), ("sink_cc3 requested after the output started"));
    return NULL;
  }
  pad = gst_pad_new_from_template (templ, "sink_cc3");
  gst_pad_set_chain_function (pad, GST_DEBUG_FUNCPTR (gst_cea608_enc_chain));
  gst_pad_set_event_function (pad, GST_DEBUG_FUNCPTR (gst_cea608_enc_sink_event));
  chan_reset (&self->chan[1]);
  self->chan[1].pad = pad;
  self->chan[1].field = 1;
  g_mutex_unlock (&self->lock);
  gst_element_add_pad (element, pad);
  return pad;
}

static void
gst_cea608_enc_release_pad (GstElement *element, GstPad *pad)
{
  GstCea608Enc *self = GST_CEA608_ENC (element);

  g_mutex_lock (&self->lock);
  if (self->chan[1].pad == pad) {
    chan_reset (&self->chan[1]);
    self->chan[1].pad = NULL;
  }
  g_mutex_unlock (&self->lock);
  gst_element_remove_pad (element, pad);
  g_mutex_lock (&self->lock);
  advance (self);
  g_mutex_unlock (&self->lock);
}

static GstStateChangeReturn
gst_cea608_enc_change_state (GstElement *element, GstStateChange transition)
{
  GstCea608Enc *self = GST_CEA608_ENC (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    g_mutex_lock (&self->lock);
    GST_OBJECT_LOCK (self);
    self->chan[0].field = self->channel == GST_CEA608_ENC_CHANNEL_CC3 ? 1 : 0;
    self->frames = self->captions = self->shortened = self->words_left_out = 0;
    self->chars_replaced = self->chars_dropped = self->max_delay_frames_seen = 0;
    GST_OBJECT_UNLOCK (self);
    reset_runtime (self);
    self->format = FORMAT_NONE;
    self->flushing = FALSE;
    g_mutex_unlock (&self->lock);
  }
  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    g_mutex_lock (&self->lock);
    reset_runtime (self);
    self->format = FORMAT_NONE;
    g_mutex_unlock (&self->lock);
  }
  return ret;
}

static GstStructure *
make_stats (GstCea608Enc *self)
{
  GstStructure *s;
  /* the counters are under the object lock (not the stream lock), so that a
   * bus sync handler can read them while the element posts a message */
  GST_OBJECT_LOCK (self);
  s = gst_structure_new ("cea608enc-stats",
      "frames", G_TYPE_UINT64, self->frames,
      "captions", G_TYPE_UINT64, self->captions,
      "shortened", G_TYPE_UINT64, self->shortened,
      "words-left-out", G_TYPE_UINT64, self->words_left_out,
      "chars-replaced", G_TYPE_UINT64, self->chars_replaced,
      "chars-dropped", G_TYPE_UINT64, self->chars_dropped,
      "fps-n", G_TYPE_INT, self->fps_n, "fps-d", G_TYPE_INT, self->fps_d, NULL);
  GST_OBJECT_UNLOCK (self);
  return s;
}

static void
gst_cea608_enc_set_property (GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GstCea608Enc *self = GST_CEA608_ENC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODE:
      self->mode = g_value_get_enum (value);
      break;
    case PROP_CHANNEL:
      self->channel = g_value_get_enum (value);
      break;
    case PROP_ROLL_UP_ROWS:
      self->roll_up_rows = g_value_get_uint (value);
      break;
    case PROP_POP_ON_ROWS:
      self->pop_on_rows = g_value_get_uint (value);
      break;
    case PROP_MAX_DELAY:
      self->max_delay_ms = g_value_get_uint (value);
      break;
    case PROP_ROLL_UP_TIMEOUT:
      self->roll_up_timeout_ms = g_value_get_uint (value);
      break;
    case PROP_FRAMERATE:
      self->fps_n_prop = gst_value_get_fraction_numerator (value);
      self->fps_d_prop = gst_value_get_fraction_denominator (value);
      break;
    case PROP_POST_MESSAGES:
      self->post_messages = g_value_get_boolean (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_cea608_enc_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstCea608Enc *self = GST_CEA608_ENC (object);

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, make_stats (self));
    return;
  }
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODE:
      g_value_set_enum (value, self->mode);
      break;
    case PROP_CHANNEL:
      g_value_set_enum (value, self->channel);
      break;
    case PROP_ROLL_UP_ROWS:
      g_value_set_uint (value, self->roll_up_rows);
      break;
    case PROP_POP_ON_ROWS:
      g_value_set_uint (value, self->pop_on_rows);
      break;
    case PROP_MAX_DELAY:
      g_value_set_uint (value, self->max_delay_ms);
      break;
    case PROP_ROLL_UP_TIMEOUT:
      g_value_set_uint (value, self->roll_up_timeout_ms);
      break;
    case PROP_FRAMERATE:
      gst_value_set_fraction (value, self->fps_n_prop, self->fps_d_prop);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean (value, self->post_messages);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_cea608_enc_finalize (GObject *object)
{
  GstCea608Enc *self = GST_CEA608_ENC (object);
  for (guint i = 0; i < 2; i++)
    g_queue_clear_full (&self->chan[i].units, (GDestroyNotify) unit_free);
  g_mutex_clear (&self->lock);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_cea608_enc_class_init (GstCea608EncClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;

  GST_DEBUG_CATEGORY_INIT (cea608enc_debug, "cea608enc", 0, "timed text to CEA-608");

  gobject_class->set_property = gst_cea608_enc_set_property;
  gobject_class->get_property = gst_cea608_enc_get_property;
  gobject_class->finalize = gst_cea608_enc_finalize;

  g_object_class_install_property (gobject_class, PROP_MODE,
      g_param_spec_enum ("mode", "Mode",
          "Caption style: auto picks roll-up for live upstream (LATENCY query) and pop-on "
          "otherwise", gst_cea608_enc_mode_get_type (), DEFAULT_MODE, rw));
  g_object_class_install_property (gobject_class, PROP_CHANNEL,
      g_param_spec_enum ("channel", "Channel",
          "Caption channel of the sink pad: cc1 (field 1) or cc3 (field 2, needs format=s334-1a); "
          "the sink_cc3 request pad adds CC3 beside CC1",
          gst_cea608_enc_channel_get_type (), DEFAULT_CHANNEL, rw));
  g_object_class_install_property (gobject_class, PROP_ROLL_UP_ROWS,
      g_param_spec_uint ("roll-up-rows", "Roll-up rows", "Rows of the roll-up window (RU2, RU3, RU4)",
          2, 4, DEFAULT_ROLL_UP_ROWS, rw));
  g_object_class_install_property (gobject_class, PROP_POP_ON_ROWS,
      g_param_spec_uint ("pop-on-rows", "Pop-on rows",
          "Rows of one pop-on caption; longer text becomes consecutive captions sharing its time",
          1, 4, DEFAULT_POP_ON_ROWS, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_DELAY,
      g_param_spec_uint ("max-delay", "Max delay",
          "Milliseconds text may be late for lack of channel bandwidth before its last words are "
          "left out (announced by a cea608enc-shortened element message); pop-on holds the "
          "output this much behind the input", 0, 60000, DEFAULT_MAX_DELAY_MS, rw));
  g_object_class_install_property (gobject_class, PROP_ROLL_UP_TIMEOUT,
      g_param_spec_uint ("roll-up-timeout", "Roll-up timeout",
          "Milliseconds after the last roll-up text at which the rows are erased (EDM)",
          0, 600000, DEFAULT_ROLL_UP_TIMEOUT_MS, rw));
  g_object_class_install_property (gobject_class, PROP_FRAMERATE,
      gst_param_spec_fraction ("framerate", "Frame rate",
          "Output frame rate (one byte pair per field per frame); 0/1: the one downstream "
          "wants, else 30000/1001", 0, 1, 120, 1, 0, 1, rw));
  g_object_class_install_property (gobject_class, PROP_POST_MESSAGES,
      g_param_spec_boolean ("post-messages", "Post messages",
          "Post a cea608enc-caption element message when each text is on screen (pts, shown)",
          FALSE, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "frames, captions, shortened, words-left-out, chars-replaced, chars-dropped",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &sink_cc3_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "CEA-608 caption encoder",
      "Encoder/ClosedCaption", "Timed UTF-8 text to CEA-608 closed captions (pop-on, "
      "roll-up, paint-on; CC1 and CC3)", "gst-whisper");

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_cea608_enc_change_state);
  element_class->request_new_pad = GST_DEBUG_FUNCPTR (gst_cea608_enc_request_new_pad);
  element_class->release_pad = GST_DEBUG_FUNCPTR (gst_cea608_enc_release_pad);

  gst_type_mark_as_plugin_api (gst_cea608_enc_mode_get_type (), 0);
  gst_type_mark_as_plugin_api (gst_cea608_enc_channel_get_type (), 0);
}

static void
gst_cea608_enc_init (GstCea608Enc *self)
{
  g_mutex_init (&self->lock);
  self->mode = DEFAULT_MODE;
  self->channel = DEFAULT_CHANNEL;
  self->roll_up_rows = DEFAULT_ROLL_UP_ROWS;
  self->pop_on_rows = DEFAULT_POP_ON_ROWS;
  self->max_delay_ms = DEFAULT_MAX_DELAY_MS;
  self->roll_up_timeout_ms = DEFAULT_ROLL_UP_TIMEOUT_MS;
  self->fps_n_prop = 0;
  self->fps_d_prop = 1;

  for (guint i = 0; i < 2; i++) {
    g_queue_init (&self->chan[i].units);
    chan_reset (&self->chan[i]);
  }
  self->chan[0].pad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->chan[0].pad, GST_DEBUG_FUNCPTR (gst_cea608_enc_chain));
  gst_pad_set_event_function (self->chan[0].pad, GST_DEBUG_FUNCPTR (gst_cea608_enc_sink_event));
  gst_element_add_pad (GST_ELEMENT (self), self->chan[0].pad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_set_query_function (self->srcpad, GST_DEBUG_FUNCPTR (gst_cea608_enc_src_query));
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);
  self->chan[1].pad = NULL;
  reset_runtime (self);
  self->format = FORMAT_NONE;
}
