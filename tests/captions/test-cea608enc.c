/* test-cea608enc.c: cea608enc through GstHarness: one buffer per frame with
 * PTS and DURATION and no holes, odd parity, padding on GAP, the control
 * code sequences of pop-on, roll-up and paint-on (47 CFR 79.101 (j)(2)),
 * codes twice in consecutive frames, the erase before EOS, the frame
 * rates, CC3 in field 2, the bandwidth rule, the error messages and the
 * 708 outputs (cc_data, cdp: the same 608 pairs and a native service). */
#include <gst/gst.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <string.h>

#define FPS_N 30000
#define FPS_D 1001

static GstHarness *
make (const gchar *props, const gchar *caps)
{
  GstHarness *h = gst_harness_new ("cea608enc");
  gchar **kv = g_strsplit (props ? props : "", " ", -1);
  for (gchar **p = kv; *p; p++) {
    gchar **pair = g_strsplit (*p, "=", 2);
    if (pair[0] && pair[1])
      gst_util_set_object_arg (G_OBJECT (h->element), pair[0], pair[1]);
    g_strfreev (pair);
  }
  g_strfreev (kv);
  gst_harness_set_src_caps_str (h, "text/x-raw, format=utf8");
  gst_harness_set_sink_caps_str (h, caps ? caps :
      "closedcaption/x-cea-608, format=raw, framerate=30000/1001");
  return h;
}

static void
push_text (GstHarness *h, const gchar *text, guint64 pts_ms, guint64 dur_ms)
{
  GstBuffer *b = gst_buffer_new_memdup (text, strlen (text));
  GST_BUFFER_PTS (b) = pts_ms * GST_MSECOND;
  GST_BUFFER_DURATION (b) = dur_ms * GST_MSECOND;
  fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
}

typedef struct {
  GArray *pairs;                /* guint16 per frame, field 1, parity stripped */
  GArray *pairs2;               /* field 2 (s334-1a with two fields) */
  guint64 first_pts;
} Out;

/* Pulls every buffer, checking continuity, one frame each, and parity. */
static Out
drain (GstHarness *h, gint fps_n, gint fps_d, gboolean s334)
{
  Out o = { g_array_new (FALSE, FALSE, sizeof (guint16)),
    g_array_new (FALSE, FALSE, sizeof (guint16)), GST_CLOCK_TIME_NONE };
  GstBuffer *b;
  guint64 n = 0;

  while ((b = gst_harness_try_pull (h))) {
    GstMapInfo map;
    guint64 frame;
    gst_buffer_map (b, &map, GST_MAP_READ);
    fail_unless (GST_BUFFER_PTS_IS_VALID (b));
    fail_unless (GST_BUFFER_DURATION_IS_VALID (b));
    if (o.first_pts == GST_CLOCK_TIME_NONE)
      o.first_pts = GST_BUFFER_PTS (b);
    frame = gst_util_uint64_scale_round (GST_BUFFER_PTS (b), fps_n, (guint64) fps_d * GST_SECOND);
    if (n == 0)
      n = frame;
    /* no hole, no overlap */
    fail_unless_equals_uint64 (frame, n);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b) + GST_BUFFER_DURATION (b),
        gst_util_uint64_scale (frame + 1, (guint64) fps_d * GST_SECOND, fps_n));
    n++;
    if (s334) {
      fail_unless (map.size == 3 || map.size == 6);
      fail_unless_equals_int (map.data[0], 0x80);
      for (guint i = 0; i < map.size; i += 3) {
        guint16 p;
        p = (guint16) ((map.data[i + 1] & 0x7f) << 8 | (map.data[i + 2] & 0x7f));
        g_array_append_val (i == 0 ? o.pairs : o.pairs2, p);
      }
    } else {
      guint16 p;
      fail_unless_equals_int (map.size, 2);
      p = (guint16) ((map.data[0] & 0x7f) << 8 | (map.data[1] & 0x7f));
      g_array_append_val (o.pairs, p);
    }
    for (guint i = 0; i < map.size; i++) {
      guint ones = 0;
      if (s334 && i % 3 == 0)
        continue;
      for (guint k = 0; k < 8; k++)
        ones += (map.data[i] >> k) & 1;
      fail_unless (ones % 2 == 1, "byte %u of frame %" G_GUINT64_FORMAT " (0x%02x) has even parity",
          i, frame, map.data[i]);
    }
    gst_buffer_unmap (b, &map);
    gst_buffer_unref (b);
  }
  return o;
}

static void
out_clear (Out *o)
{
  g_array_unref (o->pairs);
  g_array_unref (o->pairs2);
}

/* Index of the first frame at or after from with pair p, or -1. */
static gint
find (GArray *a, guint from, guint16 p)
{
  for (guint i = from; i < a->len; i++)
    if (g_array_index (a, guint16, i) == p)
      return (gint) i;
  return -1;
}

/* Decodes field 1 text of a pair stream loosely: basic characters only. */
static gchar *
basic_text (GArray *a)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < a->len; i++) {
    guint16 p = g_array_index (a, guint16, i);
    guint8 hi = p >> 8, lo = p & 0xff;
    if (hi >= 0x20)
      g_string_append_c (s, hi);
    if (hi >= 0x20 && lo >= 0x20)
      g_string_append_c (s, lo);
  }
  return g_string_free (s, FALSE);
}

GST_START_TEST (test_popon_sequence)
{
  GstHarness *h = make ("mode=pop-on", NULL);
  Out o;
  gint rcl, enm, pac, eoc, edm;
  gchar *txt;

  gst_harness_play (h);
  push_text (h, "Hello", 2000, 1000);
  gst_harness_push_event (h, gst_event_new_eos ());
  o = drain (h, FPS_N, FPS_D, FALSE);
  fail_unless_equals_uint64 (o.first_pts, 0);

  /* RCL ENM PAC text, then EOC at the start frame and EDM at the end frame,
   * each code twice in consecutive frames */
  rcl = find (o.pairs, 0, 0x1420);
  fail_unless (rcl >= 0);
  fail_unless_equals_int (g_array_index (o.pairs, guint16, rcl + 1), 0x1420);
  enm = find (o.pairs, rcl, 0x142e);
  fail_unless_equals_int (enm, rcl + 2);
  fail_unless_equals_int (g_array_index (o.pairs, guint16, enm + 1), 0x142e);
  pac = find (o.pairs, enm, 0x1460);  /* row 15 */
  fail_unless_equals_int (pac, enm + 2);
  eoc = find (o.pairs, pac, 0x142f);
  fail_unless_equals_int (g_array_index (o.pairs, guint16, eoc + 1), 0x142f);
  /* 2.000 s at 29.97 fps: frame 60 */
  fail_unless_equals_int (eoc, 60);
  edm = find (o.pairs, eoc, 0x142c);
  fail_unless_equals_int (edm, 90);
  fail_unless_equals_int (g_array_index (o.pairs, guint16, edm + 1), 0x142c);
  /* EOS after the erase */
  fail_unless ((gint) o.pairs->len >= edm + 2);
  txt = basic_text (o.pairs);
  fail_unless_equals_string (txt, "Hello");
  g_free (txt);
  /* padding everywhere else */
  for (guint i = 0; i < o.pairs->len; i++) {
    guint16 p = g_array_index (o.pairs, guint16, i);
    if ((gint) i < rcl || ((gint) i > pac + 4 && (gint) i < eoc) || (gint) i > edm + 1)
      fail_unless_equals_int (p, 0);
  }
  out_clear (&o);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_gap_padding)
{
  GstHarness *h = make ("mode=roll-up", NULL);
  Out o;

  gst_harness_play (h);
  push_text (h, "x", 0, 100);
  gst_harness_push_event (h, gst_event_new_gap (100 * GST_MSECOND, 10 * GST_SECOND));
  o = drain (h, FPS_N, FPS_D, FALSE);
  /* frames up to 10.1 s out before EOS, the roll-up erase (5 s after the
   * text) among them */
  fail_unless (o.pairs->len >= 300);
  fail_unless (find (o.pairs, 0, 0x1425) == 0);  /* RU2 */
  fail_unless (find (o.pairs, 0, 0x142c) >= 150);       /* EDM after the timeout */
  out_clear (&o);
  gst_harness_push_event (h, gst_event_new_eos ());
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_rollup_rows)
{
  GstHarness *h = make ("mode=roll-up roll-up-rows=3", NULL);
  Out o;
  gchar *txt;
  gint cr;

  gst_harness_play (h);
  push_text (h, "one two three four five six seven eight nine ten eleven", 0, 3000);
  /* the transcript is final: a carriage return */
  gst_harness_push_event (h, gst_event_new_custom (GST_EVENT_CUSTOM_DOWNSTREAM,
          gst_structure_new_empty ("rstranscribe/final-transcript")));
  push_text (h, "next", 4000, 500);
  gst_harness_push_event (h, gst_event_new_eos ());
  o = drain (h, FPS_N, FPS_D, FALSE);
  fail_unless_equals_int (find (o.pairs, 0, 0x1426), 0);        /* RU3 */
  fail_unless_equals_int (find (o.pairs, 0, 0x1460), 2);        /* PAC row 15 */
  /* the row breaks before "seven" (33 columns with it) with CR twice */
  cr = find (o.pairs, 0, 0x142d);
  fail_unless (cr > 0);
  fail_unless_equals_int (g_array_index (o.pairs, guint16, cr + 1), 0x142d);
  /* and again for the final-transcript event */
  fail_unless (find (o.pairs, cr + 2, 0x142d) > cr);
  txt = basic_text (o.pairs);
  fail_unless_equals_string (txt,
      "one two three four five sixseven eight nine ten elevennext");
  g_free (txt);
  out_clear (&o);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_painton)
{
  GstHarness *h = make ("mode=paint-on", NULL);
  Out o;
  gint rdc, edm;

  gst_harness_play (h);
  push_text (h, "paint", 1000, 1000);
  gst_harness_push_event (h, gst_event_new_eos ());
  o = drain (h, FPS_N, FPS_D, FALSE);
  rdc = find (o.pairs, 0, 0x1429);
  fail_unless_equals_int (rdc, 30);
  edm = find (o.pairs, 0, 0x142c);
  fail_unless_equals_int (edm, 60);
  out_clear (&o);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_framerates)
{
  static const gint rates[][2] = { {30000, 1001}, {30, 1}, {25, 1}, {60000, 1001}, {50, 1} };

  for (guint i = 0; i < G_N_ELEMENTS (rates); i++) {
    gchar *caps = g_strdup_printf ("closedcaption/x-cea-608, format=s334-1a, framerate=%d/%d",
        rates[i][0], rates[i][1]);
    GstHarness *h = make ("mode=pop-on", caps);
    Out o;
    gint eoc;
    gint64 want = gst_util_uint64_scale_round (3 * GST_SECOND, rates[i][0],
        (guint64) rates[i][1] * GST_SECOND);

    gst_harness_play (h);
    push_text (h, "rate", 3000, 2000);
    gst_harness_push_event (h, gst_event_new_eos ());
    o = drain (h, rates[i][0], rates[i][1], TRUE);
    eoc = find (o.pairs, 0, 0x142f);
    fail_unless_equals_int (eoc, want);
    out_clear (&o);
    gst_harness_teardown (h);
    g_free (caps);
  }
}
GST_END_TEST;

GST_START_TEST (test_framerate_property)
{
  GstHarness *h = make ("mode=pop-on framerate=25/1",
      "closedcaption/x-cea-608, format=raw, framerate=[1/1, 100/1]");
  Out o;

  gst_harness_play (h);
  push_text (h, "x", 1000, 1000);
  gst_harness_push_event (h, gst_event_new_eos ());
  o = drain (h, 25, 1, FALSE);
  fail_unless_equals_int (find (o.pairs, 0, 0x142f), 25);
  out_clear (&o);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_cc3)
{
  GstHarness *h = make ("mode=pop-on channel=cc3",
      "closedcaption/x-cea-608, format=s334-1a, framerate=30000/1001");
  Out o;

  gst_harness_play (h);
  push_text (h, "drei", 1000, 1000);
  gst_harness_push_event (h, gst_event_new_eos ());
  o = drain (h, FPS_N, FPS_D, TRUE);
  /* field 1 padding only, field 2 with 0x15 control codes */
  fail_unless_equals_int (o.pairs->len, o.pairs2->len);
  for (guint i = 0; i < o.pairs->len; i++)
    fail_unless_equals_int (g_array_index (o.pairs, guint16, i), 0);
  fail_unless_equals_int (find (o.pairs2, 0, 0x152f), 30);
  fail_unless (find (o.pairs2, 0, 0x1520) >= 0);
  out_clear (&o);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_two_channels)
{
  GstHarness *h = gst_harness_new_with_padnames ("cea608enc", NULL, "src");
  GstHarness *h1, *h3;
  GstElement *enc = h->element;
  Out o;
  gchar *t1, *t3;

  g_object_set (enc, "mode", 1, NULL);
  gst_harness_set_sink_caps_str (h,
      "closedcaption/x-cea-608, format=s334-1a, framerate=30000/1001");
  h1 = gst_harness_new_with_element (enc, "sink", NULL);
  h3 = gst_harness_new_with_element (enc, "sink_cc3", NULL);
  gst_harness_set_src_caps_str (h1, "text/x-raw, format=utf8");
  gst_harness_set_src_caps_str (h3, "text/x-raw, format=utf8");
  gst_harness_play (h);
  push_text (h1, "one", 1000, 1000);
  /* field 1 alone cannot advance the output past the CC3 input */
  fail_unless (gst_harness_buffers_received (h) == 0);
  push_text (h3, "drei", 1000, 1000);
  gst_harness_push_event (h1, gst_event_new_eos ());
  gst_harness_push_event (h3, gst_event_new_eos ());
  o = drain (h, FPS_N, FPS_D, TRUE);
  fail_unless_equals_int (find (o.pairs, 0, 0x142f), 30);
  fail_unless_equals_int (find (o.pairs2, 0, 0x152f), 30);
  t1 = basic_text (o.pairs);
  t3 = basic_text (o.pairs2);
  fail_unless_equals_string (t1, "one");
  fail_unless_equals_string (t3, "drei");
  g_free (t1);
  g_free (t3);
  out_clear (&o);
  gst_harness_teardown (h1);
  gst_harness_teardown (h3);
  gst_harness_teardown (h);
}
GST_END_TEST;

static GstBusSyncReply
collect_shortened (GstBus *bus, GstMessage *msg, gpointer data)
{
  GPtrArray *a = data;
  (void) bus;
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT &&
      gst_structure_has_name (gst_message_get_structure (msg), "cea608enc-shortened"))
    g_ptr_array_add (a, gst_structure_copy (gst_message_get_structure (msg)));
  return GST_BUS_PASS;
}

GST_START_TEST (test_bandwidth_rule)
{
  GstHarness *h = make ("mode=roll-up max-delay=500", NULL);
  GstBus *bus = gst_bus_new ();
  GPtrArray *msgs = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_structure_free);
  Out o;
  gchar *txt;
  GString *sent = g_string_new (NULL);

  gst_element_set_bus (h->element, bus);
  gst_bus_set_sync_handler (bus, collect_shortened, msgs, NULL);
  gst_harness_play (h);
  /* 40 words in one second: far more than one pair a frame carries */
  for (guint i = 0; i < 40; i++) {
    gchar *w = g_strdup_printf ("word%02u", i);
    push_text (h, w, 1000 + i * 25, 25);
    g_free (w);
  }
  gst_harness_push_event (h, gst_event_new_eos ());
  o = drain (h, FPS_N, FPS_D, FALSE);
  txt = basic_text (o.pairs);
  fail_unless (msgs->len > 0, "nothing announced as shortened");
  /* what is sent is in order: word numbers increase */
  {
    gint last = -1;
    for (const gchar *p = strstr (txt, "word"); p; p = strstr (p + 4, "word")) {
      gint n = atoi (p + 4);
      fail_unless (n > last, "word%02d after word%02d", n, last);
      last = n;
      g_string_append_printf (sent, "word%02d ", n);
    }
  }
  /* each word was either sent or announced as left out */
  for (guint i = 0; i < 40; i++) {
    gchar *w = g_strdup_printf ("word%02u", i);
    gboolean announced = FALSE;
    for (guint k = 0; k < msgs->len; k++) {
      const gchar *left = gst_structure_get_string (g_ptr_array_index (msgs, k), "left-out");
      if (left && strstr (left, w))
        announced = TRUE;
    }
    fail_unless (announced != (strstr (sent->str, w) != NULL), "%s neither sent nor announced", w);
    g_free (w);
  }
  g_free (txt);
  g_string_free (sent, TRUE);
  g_ptr_array_unref (msgs);
  out_clear (&o);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

static gchar *
error_of (GstHarness *h, GstBus *bus)
{
  GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  GError *err = NULL;
  gchar *dbg = NULL, *s;
  (void) h;
  if (!m)
    return NULL;
  gst_message_parse_error (m, &err, &dbg);
  s = g_strdup_printf ("%s | %s", err->message, dbg);
  g_error_free (err);
  g_free (dbg);
  gst_message_unref (m);
  return s;
}

GST_START_TEST (test_errors)
{
  GstHarness *h;
  GstBus *bus;
  GstBuffer *b;
  gchar *e;

  /* a text buffer without PTS */
  h = make (NULL, NULL);
  bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  gst_harness_play (h);
  b = gst_buffer_new_memdup ("x", 1);
  GST_BUFFER_DURATION (b) = GST_SECOND;
  fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_ERROR);
  e = error_of (h, bus);
  fail_unless (e && strstr (e, "without PTS") && strstr (e, "sink"), "%s", e);
  g_free (e);
  /* without DURATION */
  b = gst_buffer_new_memdup ("x", 1);
  GST_BUFFER_PTS (b) = GST_SECOND;
  fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_ERROR);
  e = error_of (h, bus);
  fail_unless (e && strstr (e, "without DURATION"), "%s", e);
  g_free (e);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);

  /* CC3 where downstream takes only raw */
  h = make ("channel=cc3", "closedcaption/x-cea-608, format=raw, framerate=30000/1001");
  bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  gst_harness_play (h);
  b = gst_buffer_new_memdup ("x", 1);
  GST_BUFFER_PTS (b) = 0;
  GST_BUFFER_DURATION (b) = GST_SECOND;
  fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_NOT_NEGOTIATED);
  e = error_of (h, bus);
  fail_unless (e && strstr (e, "s334-1a") && strstr (e, "cc3"), "%s", e);
  g_free (e);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);

  /* CDP at a frame rate SMPTE 334-2 has no code for */
  h = make (NULL, "closedcaption/x-cea-708, format=cdp, framerate=15/1");
  bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  gst_harness_play (h);
  b = gst_buffer_new_memdup ("x", 1);
  GST_BUFFER_PTS (b) = 0;
  GST_BUFFER_DURATION (b) = GST_SECOND;
  fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_NOT_NEGOTIATED);
  e = error_of (h, bus);
  fail_unless (e && strstr (e, "format=cdp") && strstr (e, "15/1"), "%s", e);
  g_free (e);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);

  /* a segment not in TIME */
  h = make (NULL, NULL);
  bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  gst_harness_play (h);
  {
    GstSegment seg;
    gst_segment_init (&seg, GST_FORMAT_BYTES);
    gst_harness_push_event (h, gst_event_new_segment (&seg));
  }
  e = error_of (h, bus);
  fail_unless (e && strstr (e, "TIME segments"), "%s", e);
  g_free (e);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_characters_out)
{
  GstHarness *h = make ("mode=pop-on", NULL);
  GstStructure *stats;
  Out o;
  guint64 dropped = 0, replaced = 0;

  gst_harness_play (h);
  push_text (h, "Grüße \xe2\x80\x93 \xe4\xb8\xad", 1000, 2000);
  gst_harness_push_event (h, gst_event_new_eos ());
  o = drain (h, FPS_N, FPS_D, FALSE);
  /* ü: fallback u, then 0x12 0x25 twice; ß: s, then 0x13 0x34 twice */
  fail_unless (find (o.pairs, 0, 0x1225) >= 0);
  fail_unless_equals_int (g_array_index (o.pairs, guint16, find (o.pairs, 0, 0x1225) + 1), 0x1225);
  fail_unless (find (o.pairs, 0, 0x1334) >= 0);
  g_object_get (h->element, "stats", &stats, NULL);
  gst_structure_get_uint64 (stats, "chars-dropped", &dropped);
  gst_structure_get_uint64 (stats, "chars-replaced", &replaced);
  fail_unless_equals_uint64 (dropped, 1);
  fail_unless_equals_uint64 (replaced, 1);
  gst_structure_free (stats);
  out_clear (&o);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* Pulls every buffer of a 708 output (cc_data, or cdp when cdp): the 608
 * pairs of cc_type 0 (field 1) and the DTVCC packets' bytes (their
 * triplets, cc_type 3 then 2, each packet ended by cc_valid 0). */
static void
drain_708 (GstHarness *h, gboolean cdp, GArray *pairs, GByteArray *dtvcc, guint *packets)
{
  GstBuffer *b;

  while ((b = gst_harness_try_pull (h))) {
    GstMapInfo map;
    const guint8 *cc;
    guint count;
    gst_buffer_map (b, &map, GST_MAP_READ);
    cc = map.data;
    count = map.size / 3;
    if (cdp) {
      guint sum = 0;
      fail_unless (map.size >= 13 && map.data[0] == 0x96 && map.data[1] == 0x69);
      fail_unless_equals_int (map.data[2], map.size);
      for (guint i = 0; i < map.size; i++)
        sum += map.data[i];
      fail_unless_equals_int (sum & 0xff, 0);
      fail_unless_equals_int (map.data[7], 0x72);
      count = map.data[8] & 0x1f;
      cc = map.data + 9;
    } else {
      fail_unless_equals_int (map.size % 3, 0);
    }
    /* 20 triplets a frame at 29.97, 608 in the first two */
    fail_unless_equals_int (count, 20);
    fail_unless_equals_int (cc[0], 0xfc);
    {
      guint16 p = (guint16) ((cc[1] & 0x7f) << 8 | (cc[2] & 0x7f));
      g_array_append_val (pairs, p);
    }
    fail_unless_equals_int (cc[3] & 0xfb, 0xf9);
    for (guint i = 2; i < count; i++) {
      guint8 t = cc[3 * i];
      if (t == 0xff) {
        /* a packet: header (sequence, size code), then service blocks
         * (service number, size); service 1's data is kept */
        guint size = (cc[3 * i + 1] & 0x3f) * 2, j;
        GByteArray *pkt = g_byte_array_new ();
        (*packets)++;
        for (j = i; j < count && (j == i || cc[3 * j] == 0xfe); j++)
          g_byte_array_append (pkt, cc + 3 * j + 1, 2);
        fail_unless_equals_int (pkt->len, size);
        fail_unless (j == count || cc[3 * j] == 0xfa);
        for (guint k = 1; k < size && pkt->data[k] != 0;) {
          guint service = pkt->data[k] >> 5, len = pkt->data[k] & 0x1f;
          fail_unless (k + 1 + len <= size);
          if (service == 1)
            g_byte_array_append (dtvcc, pkt->data + k + 1, len);
          k += 1 + len;
        }
        g_byte_array_unref (pkt);
        i = j - 1;
      } else {
        fail_unless_equals_int (t, 0xfa);
      }
    }
    gst_buffer_unmap (b, &map);
    gst_buffer_unref (b);
  }
}

/* Pop-on, the first caption at 0 s: it cannot be loaded before it, so it
 * is painted (RDC, EDM in frame 2, PAC, text); the next caption is loaded
 * after it and, before its EOC at its start frame, RDC, EDM (the painted
 * caption's end) and RCL. */
GST_START_TEST (test_popon_first_painted)
{
  GstHarness *h = make ("mode=pop-on", NULL);
  Out o;
  gint rcl, rdc, eoc;
  gchar *txt;

  gst_harness_play (h);
  push_text (h, "First", 0, 2000);
  push_text (h, "Second", 2000, 1000);
  gst_harness_push_event (h, gst_event_new_eos ());
  o = drain (h, FPS_N, FPS_D, FALSE);
  fail_unless_equals_uint64 (o.first_pts, 0);
  fail_unless_equals_int (g_array_index (o.pairs, guint16, 0), 0x1429);
  fail_unless_equals_int (g_array_index (o.pairs, guint16, 1), 0x1429);
  fail_unless_equals_int (g_array_index (o.pairs, guint16, 2), 0x142c);
  fail_unless_equals_int (g_array_index (o.pairs, guint16, 3), 0x142c);
  fail_unless_equals_int (g_array_index (o.pairs, guint16, 4), 0x1460);
  fail_unless_equals_int (g_array_index (o.pairs, guint16, 6), ('F' << 8) | 'i');
  rcl = find (o.pairs, 0, 0x1420);
  fail_unless (rcl > 6);
  rdc = find (o.pairs, rcl, 0x1429);
  eoc = find (o.pairs, rcl, 0x142f);
  /* 2 s is frame 60 at 29.97 */
  fail_unless_equals_int (eoc, 60);
  fail_unless_equals_int (rdc, 54);
  fail_unless_equals_int (g_array_index (o.pairs, guint16, 56), 0x142c);
  fail_unless_equals_int (g_array_index (o.pairs, guint16, 58), 0x1420);
  txt = basic_text (o.pairs);
  fail_unless (strstr (txt, "First") && strstr (txt, "Second"), "%s", txt);
  g_free (txt);
  out_clear (&o);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* TRUE when the bytes of text are in a. */
static gboolean
has_bytes (GByteArray *a, const gchar *text)
{
  gsize n = strlen (text);
  for (gsize i = 0; i + n <= a->len; i++)
    if (memcmp (a->data + i, text, n) == 0)
      return TRUE;
  return FALSE;
}

/* Output by caps: closedcaption/x-cea-708 cc_data and cdp carry the same
 * 608 pairs as format=raw, and a 708 service 1 with the caption's text,
 * its windows defined and toggled. */
GST_START_TEST (test_cea708_output)
{
  const gchar *caps[] = {
    "closedcaption/x-cea-708, format=cc_data, framerate=30000/1001",
    "closedcaption/x-cea-708, format=cdp, framerate=30000/1001",
  };
  GstHarness *h = make ("mode=pop-on", NULL);
  Out raw;

  gst_harness_play (h);
  push_text (h, "Hello there", 1000, 2000);
  gst_harness_push_event (h, gst_event_new_eos ());
  raw = drain (h, FPS_N, FPS_D, FALSE);
  gst_harness_teardown (h);

  for (guint k = 0; k < G_N_ELEMENTS (caps); k++) {
    GArray *pairs = g_array_new (FALSE, FALSE, sizeof (guint16));
    GByteArray *dtvcc = g_byte_array_new ();
    guint packets = 0;
    h = make ("mode=pop-on", caps[k]);
    gst_harness_play (h);
    push_text (h, "Hello there", 1000, 2000);
    gst_harness_push_event (h, gst_event_new_eos ());
    drain_708 (h, k == 1, pairs, dtvcc, &packets);
    fail_unless_equals_int (pairs->len, raw.pairs->len);
    fail_unless (memcmp (pairs->data, raw.pairs->data, 2 * pairs->len) == 0,
        "the 608 pairs in %s differ from format=raw", caps[k]);
    fail_unless (packets > 0);
    /* DefineWindow 0 and 1, the text, ToggleWindows 0 and 1 */
    fail_unless (has_bytes (dtvcc, "Hello there"));
    fail_unless (memchr (dtvcc->data, 0x98, dtvcc->len) && memchr (dtvcc->data, 0x99, dtvcc->len));
    fail_unless (memchr (dtvcc->data, 0x8b, dtvcc->len) != NULL);
    g_array_unref (pairs);
    g_byte_array_unref (dtvcc);
    gst_harness_teardown (h);
  }
  out_clear (&raw);
}
GST_END_TEST;

static Suite *
cea608enc_suite (void)
{
  Suite *s = suite_create ("cea608enc");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_popon_sequence);
  tcase_add_test (tc, test_gap_padding);
  tcase_add_test (tc, test_rollup_rows);
  tcase_add_test (tc, test_painton);
  tcase_add_test (tc, test_framerates);
  tcase_add_test (tc, test_framerate_property);
  tcase_add_test (tc, test_cc3);
  tcase_add_test (tc, test_two_channels);
  tcase_add_test (tc, test_bandwidth_rule);
  tcase_add_test (tc, test_errors);
  tcase_add_test (tc, test_characters_out);
  tcase_add_test (tc, test_cea708_output);
  tcase_add_test (tc, test_popon_first_painted);
  return s;
}

GST_CHECK_MAIN (cea608enc);
