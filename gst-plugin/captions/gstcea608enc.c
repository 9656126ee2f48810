/* gstcea608enc.c: cea608enc, timed UTF-8 text to CEA-608 closed captions.
 *
 * The sink pad takes text/x-raw, format=utf8 buffers with PTS and
 * DURATION (whispersink's src and translate_src_%u pads, or any timed text
 * source); the src pad gives, by caps negotiation, closedcaption/x-cea-608
 * (format=raw: the field 1 byte pair of each frame, or format=s334-1a: one
 * triplet per field) or closedcaption/x-cea-708 (format=cc_data or cdp:
 * the 608 pairs and a native 708 service per channel, cea608enc-output.c)
 * at a frame rate, one buffer per video frame, frame after frame without
 * holes, so that ccconverter, cccombiner, qtmux, line21encoder and
 * cc708overlay can take it.
 *
 * Modes (47 CFR 79.101 (i), (j)(2)): pop-on (each caption loaded off
 * screen with RCL, ENM, PACs and text, shown with EOC at its start frame
 * and erased with EDM at its end frame; the output runs max-delay behind
 * the input so that a caption is loaded before it is due; one that cannot
 * be, as at the stream's start, is painted), roll-up (2 to 4
 * rows, words shown as they are sent from their start frame, CR when a
 * row is full or the live transcript is final, EDM after roll-up-timeout
 * without text) and paint-on (RDC, PAC and text from the start frame, EDM
 * at the end).
 *
 * Channels: the always pad "sink" writes the channel of the `channel`
 * property (CC1, field 1, or CC3, field 2); the request pad "sink_cc3"
 * adds CC3 beside a CC1 "sink" (format=s334-1a then carries both fields,
 * field 1 first; in 708 CC3 is service 2). Both inputs advance the output together: a frame goes
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
#include "cea608enc-settings.h"
#include "cea608sched.h"
#include "cea608enc-output.h"

#include <string.h>

GST_DEBUG_CATEGORY_STATIC (cea608enc_debug);
#define GST_CAT_DEFAULT cea608enc_debug

#define FINAL_TRANSCRIPT_EVENT "rstranscribe/final-transcript"

struct _GstCea608Enc {
  GstElement parent;

  GstPad *srcpad;

  /* object lock: the settings, the counters and fps_n/fps_d (for stats) */
  Cea608EncSettings settings;
  guint64 frames, captions, shortened, words_left_out, chars_replaced, chars_dropped;
  guint64 max_delay_frames_seen;
  gint fps_n, fps_d;

  /* runtime, self->lock */
  GMutex lock;
  Cea608Sched sched;            /* the channels ([0]: "sink", [1]: "sink_cc3") */
  gboolean started;
  Cea608EncOutput out;          /* the format (NONE before caps) and its packing */
  gboolean need_segment;
  gboolean discont;
  gboolean eos_sent;
  gboolean flushing;
  GstFlowReturn last_flow;
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
        "framerate = (fraction) [ 1/1, 120/1 ]; "
        "closedcaption/x-cea-708, format = (string) { cc_data, cdp }, "
        "framerate = (fraction) [ 1/1, 120/1 ]"));

#define gst_cea608_enc_parent_class parent_class
G_DEFINE_TYPE (GstCea608Enc, gst_cea608_enc, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (cea608enc, "cea608enc", GST_RANK_NONE, GST_TYPE_CEA608_ENC);
static GstBuffer *
make_frame (GstCea608Enc *self, gint64 f)
{
  guint16 p[2];
  gboolean have[2];
  GstBuffer *buf;
  GstClockTime t0, t1;

  cea608_sched_frame (&self->sched, f, p, have);
  buf = cea608enc_output_frame (&self->out, p, have);
  t0 = cea608_sched_frame_time (&self->sched, f);
  t1 = cea608_sched_frame_time (&self->sched, f + 1);
  GST_BUFFER_PTS (buf) = t0;
  GST_BUFFER_DURATION (buf) = t1 - t0;
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
  gint fps_n, fps_d;
  gboolean two_fields = cea608_chan_active (&self->sched.chan[1]) || self->sched.chan[0].field == 1;

  GST_OBJECT_LOCK (self);
  fps_n = self->settings.fps_n;
  fps_d = self->settings.fps_d;
  GST_OBJECT_UNLOCK (self);
  if (!cea608enc_output_negotiate (&self->out, GST_ELEMENT (self), self->srcpad, fps_n, fps_d,
          two_fields, self->sched.chan[0].field))
    return FALSE;
  GST_OBJECT_LOCK (self);
  self->fps_n = self->out.fps_n;
  self->fps_d = self->out.fps_d;
  GST_OBJECT_UNLOCK (self);
  self->sched.fps_n = self->out.fps_n;
  self->sched.fps_d = self->out.fps_d;
  return TRUE;
}

/* Takes self->lock; negotiates and sends the segment once. */
static gboolean
ensure_started (GstCea608Enc *self)
{
  if (self->out.format == CEA608ENC_FORMAT_NONE) {
    GST_OBJECT_LOCK (self);
    self->sched.chan[0].field = self->settings.channel == GST_CEA608_ENC_CHANNEL_CC3 ? 1 : 0;
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

  while (self->sched.next_frame < target && !self->flushing) {
    GstBuffer *buf = make_frame (self, self->sched.next_frame);
    self->sched.next_frame++;
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
chan_lookahead (GstCea608Enc *self, Cea608Chan *c)
{
  guint ms;
  if (c->mode != GST_CEA608_ENC_MODE_POP_ON)
    return 0;
  GST_OBJECT_LOCK (self);
  ms = self->settings.max_delay_ms;
  GST_OBJECT_UNLOCK (self);
  return cea608_sched_ms_frames (&self->sched, ms);
}

/* The frames every input covers: frames before it may go out. */
static GstFlowReturn
advance (GstCea608Enc *self)
{
  gint64 target = G_MAXINT64;
  gboolean all_eos = TRUE;

  if (!self->started || self->out.format == CEA608ENC_FORMAT_NONE)
    return GST_FLOW_OK;
  for (guint i = 0; i < 2; i++) {
    Cea608Chan *c = &self->sched.chan[i];
    if (!cea608_chan_active (c))
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

/* Called with self->lock; c's known frontier moved: push what is due. */
static GstFlowReturn
covered (GstCea608Enc *self, Cea608Chan *c, GstClockTime running_end)
{
  guint timeout_ms;

  GST_OBJECT_LOCK (self);
  timeout_ms = self->settings.roll_up_timeout_ms;
  GST_OBJECT_UNLOCK (self);
  cea608_sched_covered (&self->sched, c, running_end, timeout_ms);
  return advance (self);
}

/* ---------------------------------------------------------------------- */
/* the scheduler's hooks */

static void
on_shown (gpointer user, const Cea608Chan *c, const gchar *text, GstClockTime pts,
    GstClockTime at, gint64 late)
{
  GstCea608Enc *self = user;
  gboolean post;

  GST_OBJECT_LOCK (self);
  self->captions++;
  if (late > (gint64) self->max_delay_frames_seen)
    self->max_delay_frames_seen = late;
  post = self->settings.post_messages;
  GST_OBJECT_UNLOCK (self);
  if (post) {
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_element (GST_OBJECT (self),
            gst_structure_new ("cea608enc-caption",
                "channel", G_TYPE_INT, c->field ? 3 : 1,
                "text", G_TYPE_STRING, text,
                "pts", G_TYPE_UINT64, (guint64) pts,
                "shown", G_TYPE_UINT64, (guint64) at, NULL)));
  }
}

static void
on_shortened (gpointer user, const Cea608Chan *c, GstClockTime pts, const gchar *text,
    const gchar *sent, const gchar *left_out, guint n_left_out, GstClockTime delay)
{
  GstCea608Enc *self = user;

  GST_OBJECT_LOCK (self);
  self->shortened++;
  self->words_left_out += n_left_out;
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
              "delay", G_TYPE_UINT64, (guint64) delay, NULL)));
}

static const Cea608SchedHooks sched_hooks = { on_shown, on_shortened };

/* ---------------------------------------------------------------------- */
/* pads */

static Cea608Chan *
pad_chan (GstCea608Enc *self, GstPad *pad)
{
  return self->sched.chan[1].pad == pad ? &self->sched.chan[1] : &self->sched.chan[0];
}

static void
start_at (GstCea608Enc *self, Cea608Chan *c)
{
  if (!self->started && c->have_segment) {
    GstClockTime rt = gst_segment_to_running_time (&c->segment, GST_FORMAT_TIME, c->segment.start);
    self->sched.next_frame =
        GST_CLOCK_TIME_IS_VALID (rt) ? cea608_sched_frame_floor (&self->sched, rt) : 0;
    self->started = TRUE;
    for (guint i = 0; i < 2; i++)
      self->sched.chan[i].known = MAX (self->sched.chan[i].known, self->sched.next_frame);
  }
}

static void
resolve_mode (GstCea608Enc *self, Cea608Chan *c)
{
  GstCea608EncMode mode;
  GstQuery *q;
  gboolean live = FALSE;

  if (c->mode != GST_CEA608_ENC_MODE_AUTO)
    return;
  GST_OBJECT_LOCK (self);
  mode = self->settings.mode;
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

static GstFlowReturn
gst_cea608_enc_chain (GstPad *pad, GstObject *parent, GstBuffer *buf)
{
  GstCea608Enc *self = GST_CEA608_ENC (parent);
  Cea608Chan *c;
  GstClockTime pts = GST_BUFFER_PTS (buf), dur = GST_BUFFER_DURATION (buf);
  guint64 cstart, cstop;
  GstClockTime rs, re;
  GstMapInfo map;
  gchar *raw, *text;
  guint replaced = 0, dropped = 0;
  Cea608SchedLimits lim;
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
  lim.max_delay_ms = self->settings.max_delay_ms;
  lim.pop_on_rows = self->settings.pop_on_rows;
  lim.roll_up_rows = self->settings.roll_up_rows;
  lim.roll_up_timeout_ms = self->settings.roll_up_timeout_ms;
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

  if (*text)
    cea608_sched_text (&self->sched, c, text, rs, re, &lim);
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
    if (cea608_chan_active (&self->sched.chan[i]) && !self->sched.chan[i].eos)
      return FALSE;
  return TRUE;
}

static void
reset_runtime (GstCea608Enc *self)
{
  for (guint i = 0; i < 2; i++) {
    GstPad *pad = self->sched.chan[i].pad;
    guint field = self->sched.chan[i].field;
    cea608_chan_reset (&self->sched.chan[i]);
    self->sched.chan[i].pad = pad;
    self->sched.chan[i].field = field;
  }
  self->started = FALSE;
  self->sched.next_frame = 0;
  self->need_segment = TRUE;
  self->discont = TRUE;
  self->eos_sent = FALSE;
  self->last_flow = GST_FLOW_OK;
  cea608enc_output_restart (&self->out);
}

/* GAP on a sink pad: its input covers the gap's time. */
static gboolean
sink_gap (GstCea608Enc *self, GstPad *pad, GstEvent *event)
{
  GstClockTime ts, dur, end;
  GstFlowReturn ret = GST_FLOW_OK;
  Cea608Chan *c;

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
        ret = covered (self, c, gst_segment_to_running_time (&c->segment, GST_FORMAT_TIME, end));
    }
  }
  g_mutex_unlock (&self->lock);
  return ret == GST_FLOW_OK || ret == GST_FLOW_FLUSHING;
}

/* EOS on a sink pad: the channel's final erase; when every input has
 * ended, the frames up to the last queued byte, then EOS. */
static gboolean
sink_eos (GstCea608Enc *self, GstPad *pad, GstEvent *event)
{
  gboolean running = self->started && self->out.format != CEA608ENC_FORMAT_NONE;
  Cea608Chan *c = pad_chan (self, pad);
  guint timeout_ms;

  if (c->eos) {
    g_mutex_unlock (&self->lock);
    gst_event_unref (event);
    return TRUE;
  }
  GST_OBJECT_LOCK (self);
  timeout_ms = self->settings.roll_up_timeout_ms;
  GST_OBJECT_UNLOCK (self);
  if (running)
    cea608_sched_finish (&self->sched, c, timeout_ms);
  c->eos = TRUE;
  if (!self->eos_sent && all_eos (self)) {
    if (running)
      push_until (self, cea608_sched_last_frame (&self->sched));
    if (!self->eos_sent) {
      self->eos_sent = TRUE;
      g_mutex_unlock (&self->lock);
      return gst_pad_push_event (self->srcpad, event);
    }
    /* push_until sent it on downstream's EOS */
  } else if (!self->eos_sent && running) {
    advance (self);
  }
  g_mutex_unlock (&self->lock);
  gst_event_unref (event);
  return TRUE;
}

/* An event the src pad gets from the "sink" pad only. */
static gboolean
forward_main (GstCea608Enc *self, GstPad *pad, GstEvent *event)
{
  if (pad == self->sched.chan[0].pad)
    return gst_pad_push_event (self->srcpad, event);
  gst_event_unref (event);
  return TRUE;
}

static gboolean
gst_cea608_enc_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstCea608Enc *self = GST_CEA608_ENC (parent);
  const GstStructure *s;
  const GstSegment *seg;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_STREAM_START:
      return forward_main (self, pad, event);
    case GST_EVENT_CAPS:
    case GST_EVENT_TAG:
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_SEGMENT:
      gst_event_parse_segment (event, &seg);
      if (seg->format != GST_FORMAT_TIME) {
        GST_ELEMENT_ERROR (self, STREAM, FORMAT, (NULL),
            ("%s:%s got a %s segment: cea608enc needs TIME segments", GST_DEBUG_PAD_NAME (pad),
                gst_format_get_name (seg->format)));
        gst_event_unref (event);
        return FALSE;
      }
      g_mutex_lock (&self->lock);
      gst_segment_copy_into (seg, &pad_chan (self, pad)->segment);
      pad_chan (self, pad)->have_segment = TRUE;
      g_mutex_unlock (&self->lock);
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_GAP:
      return sink_gap (self, pad, event);
    case GST_EVENT_CUSTOM_DOWNSTREAM:
      s = gst_event_get_structure (event);
      if (s && gst_structure_has_name (s, FINAL_TRANSCRIPT_EVENT)) {
        /* the live transcript is final: a new row for what follows */
        g_mutex_lock (&self->lock);
        cea608_sched_new_row (&self->sched, pad_chan (self, pad));
        g_mutex_unlock (&self->lock);
        gst_event_unref (event);
        return TRUE;
      }
      break;
    case GST_EVENT_EOS:
      g_mutex_lock (&self->lock);
      return sink_eos (self, pad, event);
    case GST_EVENT_FLUSH_START:
      g_mutex_lock (&self->lock);
      self->flushing = TRUE;
      g_mutex_unlock (&self->lock);
      return forward_main (self, pad, event);
    case GST_EVENT_FLUSH_STOP:
      /* the other pad's stream may still be pushing: reset under the lock */
      g_mutex_lock (&self->lock);
      reset_runtime (self);
      self->flushing = FALSE;
      g_mutex_unlock (&self->lock);
      return forward_main (self, pad, event);
    default:
      break;
  }
  if (pad == self->sched.chan[0].pad)
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

    if (!gst_pad_peer_query (self->sched.chan[0].pad, query))
      return FALSE;
    gst_query_parse_latency (query, &live, &min, &max);
    if (self->sched.chan[1].pad) {
      q = gst_query_new_latency ();
      if (gst_pad_peer_query (self->sched.chan[1].pad, q)) {
        gst_query_parse_latency (q, &live2, &min2, &max2);
        live = live || live2;
        min = MAX (min, min2);
        if (GST_CLOCK_TIME_IS_VALID (max2))
          max = GST_CLOCK_TIME_IS_VALID (max) ? MIN (max, max2) : max2;
      }
      gst_query_unref (q);
    }
    GST_OBJECT_LOCK (self);
    mode = self->settings.mode;
    delay_ms = self->settings.max_delay_ms;
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
  channel = self->settings.channel;
  GST_OBJECT_UNLOCK (self);

  g_mutex_lock (&self->lock);
  if (self->sched.chan[1].pad) {
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
  cea608_chan_reset (&self->sched.chan[1]);
  self->sched.chan[1].pad = pad;
  self->sched.chan[1].field = 1;
  g_mutex_unlock (&self->lock);
  gst_element_add_pad (element, pad);
  return pad;
}

static void
gst_cea608_enc_release_pad (GstElement *element, GstPad *pad)
{
  GstCea608Enc *self = GST_CEA608_ENC (element);

  g_mutex_lock (&self->lock);
  if (self->sched.chan[1].pad == pad) {
    cea608_chan_reset (&self->sched.chan[1]);
    self->sched.chan[1].pad = NULL;
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
    self->sched.chan[0].field = self->settings.channel == GST_CEA608_ENC_CHANNEL_CC3 ? 1 : 0;
    self->frames = self->captions = self->shortened = self->words_left_out = 0;
    self->chars_replaced = self->chars_dropped = self->max_delay_frames_seen = 0;
    GST_OBJECT_UNLOCK (self);
    reset_runtime (self);
    self->out.format = CEA608ENC_FORMAT_NONE;
    self->flushing = FALSE;
    g_mutex_unlock (&self->lock);
  }
  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    g_mutex_lock (&self->lock);
    reset_runtime (self);
    self->out.format = CEA608ENC_FORMAT_NONE;
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
  gboolean known;

  GST_OBJECT_LOCK (self);
  known = cea608enc_settings_set (&self->settings, prop_id, value);
  GST_OBJECT_UNLOCK (self);
  if (!known)
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

static void
gst_cea608_enc_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstCea608Enc *self = GST_CEA608_ENC (object);
  gboolean known;

  if (prop_id == CEA608ENC_PROP_STATS) {
    g_value_take_boxed (value, make_stats (self));
    return;
  }
  GST_OBJECT_LOCK (self);
  known = cea608enc_settings_get (&self->settings, prop_id, value);
  GST_OBJECT_UNLOCK (self);
  if (!known)
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

static void
gst_cea608_enc_finalize (GObject *object)
{
  GstCea608Enc *self = GST_CEA608_ENC (object);
  cea608_sched_clear (&self->sched);
  cea608enc_output_clear (&self->out);
  g_mutex_clear (&self->lock);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_cea608_enc_class_init (GstCea608EncClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (cea608enc_debug, "cea608enc", 0, "timed text to CEA-608");

  gobject_class->set_property = gst_cea608_enc_set_property;
  gobject_class->get_property = gst_cea608_enc_get_property;
  gobject_class->finalize = gst_cea608_enc_finalize;

  cea608enc_settings_install (gobject_class);
  g_object_class_install_property (gobject_class, CEA608ENC_PROP_STATS,
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
  cea608enc_settings_init (&self->settings);
  cea608_sched_init (&self->sched, &sched_hooks, self);
  cea608enc_output_init (&self->out);

  self->sched.chan[0].pad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sched.chan[0].pad, GST_DEBUG_FUNCPTR (gst_cea608_enc_chain));
  gst_pad_set_event_function (self->sched.chan[0].pad,
      GST_DEBUG_FUNCPTR (gst_cea608_enc_sink_event));
  gst_element_add_pad (GST_ELEMENT (self), self->sched.chan[0].pad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_set_query_function (self->srcpad, GST_DEBUG_FUNCPTR (gst_cea608_enc_src_query));
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);
  self->sched.chan[1].pad = NULL;
  reset_runtime (self);
  self->out.format = CEA608ENC_FORMAT_NONE;
}
