/* cc-fuzz.c: a GstHarness fuzzer of cea608enc (built with
 * -Dsanitize-tests=true: the element's sources compiled into it with
 * AddressSanitizer and UBSan, registered statically).
 *
 * Each case makes an element with random settings and sends it a random
 * sequence of text buffers (random UTF-8, invalid bytes, control
 * characters, overlapping or backward times, zero durations), GAP events,
 * new segments, flushes, final-transcript events, EOS and state changes.
 * Invariants: every output buffer is one frame with PTS and DURATION,
 * frames follow each other without holes until a DISCONT (after a flush
 * or a state change), every byte has odd parity, s334-1a's field bytes are
 * 0x80/0x00; with 708 caps (cc_data, cdp) each frame has the frame rate's
 * cc_count triplets, 608 in the first two, whole DTVCC packets of services
 * 1 and 2 and padding after them, a CDP's length and checksum right; no
 * GLib warning or critical (fatal here), no leak or memory error under
 * ASan.
 *
 *   cc-fuzz [--iterations N] [--seed S] [--steps N]
 */
#include <gst/gst.h>
#include <gst/check/gstharness.h>
#include <stdlib.h>
#include <string.h>

GST_ELEMENT_REGISTER_DECLARE (cea608enc);

typedef struct {
  gint fps_n, fps_d;
  gboolean have_prev;
  guint64 prev_frame;
  guint64 buffers;
} Check;

typedef enum { OUT_RAW, OUT_S334, OUT_CC_DATA, OUT_CDP } OutKind;

static gboolean
odd (guint8 b)
{
  guint ones = 0;
  for (guint k = 0; k < 8; k++)
    ones += (b >> k) & 1;
  return ones % 2 == 1;
}

/* A 708 frame: cc_data triplets (in a CDP when cdp). */
static void
check_708 (const guint8 *data, gsize size, gboolean cdp, guint cc_count)
{
  const guint8 *cc = data;
  guint count = size / 3;

  if (cdp) {
    guint sum = 0;
    g_assert_cmpuint (size, >=, 13);
    g_assert_cmpuint (data[0], ==, 0x96);
    g_assert_cmpuint (data[1], ==, 0x69);
    g_assert_cmpuint (data[2], ==, size);
    for (gsize i = 0; i < size; i++)
      sum += data[i];
    g_assert_cmpuint (sum & 0xff, ==, 0);
    g_assert_cmpuint (data[7], ==, 0x72);
    count = data[8] & 0x1f;
    cc = data + 9;
    g_assert_cmpuint (9 + 3 * count + 4, ==, size);
    g_assert_cmpuint (cc[3 * count], ==, 0x74);
  } else {
    g_assert_cmpuint (size % 3, ==, 0);
  }
  g_assert_cmpuint (count, ==, cc_count);
  g_assert_cmpuint (cc[0], ==, 0xfc);
  g_assert_true (odd (cc[1]) && odd (cc[2]));
  g_assert_cmpuint (cc[3] & 0xfb, ==, 0xf9);
  for (guint i = 2; i < count; i++) {
    guint8 pkt[128];
    guint len = 0, want, j;
    if (cc[3 * i] != 0xff) {
      g_assert_cmpuint (cc[3 * i], ==, 0xfa);
      continue;
    }
    want = (cc[3 * i + 1] & 0x3f) ? (cc[3 * i + 1] & 0x3f) * 2 : 128;
    for (j = i; j < count && (j == i || cc[3 * j] == 0xfe) && len + 2 <= sizeof (pkt); j++) {
      pkt[len++] = cc[3 * j + 1];
      pkt[len++] = cc[3 * j + 2];
    }
    g_assert_cmpuint (len, ==, want);
    /* service blocks of services 1 and 2, then null padding */
    for (guint k = 1; k < len;) {
      guint service = pkt[k] >> 5, block = pkt[k] & 0x1f;
      if (pkt[k] == 0) {
        g_assert_cmpuint (k, ==, len - 1);
        break;
      }
      g_assert_true (service == 1 || service == 2);
      g_assert_cmpuint (k + 1 + block, <=, len);
      k += 1 + block;
    }
    i = j - 1;
  }
}

static void
check_output (GstHarness *h, Check *c, OutKind kind)
{
  gboolean s334 = kind == OUT_S334;
  GstBuffer *b;

  while ((b = gst_harness_try_pull (h))) {
    GstMapInfo map;
    guint64 frame;

    g_assert_true (GST_BUFFER_PTS_IS_VALID (b));
    g_assert_true (GST_BUFFER_DURATION_IS_VALID (b));
    frame = gst_util_uint64_scale_round (GST_BUFFER_PTS (b), c->fps_n,
        (guint64) c->fps_d * GST_SECOND);
    g_assert_cmpuint (GST_BUFFER_PTS (b), ==,
        gst_util_uint64_scale (frame, (guint64) c->fps_d * GST_SECOND, c->fps_n));
    g_assert_cmpuint (GST_BUFFER_PTS (b) + GST_BUFFER_DURATION (b), ==,
        gst_util_uint64_scale (frame + 1, (guint64) c->fps_d * GST_SECOND, c->fps_n));
    if (c->have_prev && !GST_BUFFER_FLAG_IS_SET (b, GST_BUFFER_FLAG_DISCONT))
      g_assert_cmpuint (frame, ==, c->prev_frame + 1);
    c->prev_frame = frame;
    c->have_prev = TRUE;
    c->buffers++;

    gst_buffer_map (b, &map, GST_MAP_READ);
    if (kind == OUT_CC_DATA || kind == OUT_CDP) {
      check_708 (map.data, map.size, kind == OUT_CDP,
          (guint) ((600 * (guint64) c->fps_d + c->fps_n / 2) / c->fps_n));
      gst_buffer_unmap (b, &map);
      gst_buffer_unref (b);
      continue;
    }
    if (s334) {
      g_assert_true (map.size == 3 || map.size == 6);
      g_assert_cmpuint (map.data[0], ==, 0x80);
      if (map.size == 6)
        g_assert_cmpuint (map.data[3], ==, 0x00);
    } else {
      g_assert_cmpuint (map.size, ==, 2);
    }
    for (gsize i = 0; i < map.size; i++) {
      guint ones = 0;
      if (s334 && i % 3 == 0)
        continue;
      for (guint k = 0; k < 8; k++)
        ones += (map.data[i] >> k) & 1;
      g_assert_cmpuint (ones % 2, ==, 1);
    }
    gst_buffer_unmap (b, &map);
    gst_buffer_unref (b);
  }
}

static const gchar *pieces[] = {
  "hello", "world", "And", "so,", "my", "fellow", "Americans", "Straße", "über", "café",
  "♪", "—", "“quoted”", "中文", "€", "ŁÓDŹ", "Donaudampfschifffahrtsgesellschaftskapitän",
  "", " ", "\n", "\t", "a*b", "{x}", "ñ", "¿qué?", "Ü", "ß", "½", "©", "«»", "\xff\xfe",
  "\xc3", "\x01\x02", "   ", "x", "à", "è",
};

static GstBuffer *
random_text (GRand *r)
{
  GString *s = g_string_new (NULL);
  guint n = g_rand_int_range (r, 0, 40);
  for (guint i = 0; i < n; i++) {
    if (s->len && g_rand_boolean (r))
      g_string_append_c (s, ' ');
    g_string_append (s, pieces[g_rand_int_range (r, 0, G_N_ELEMENTS (pieces))]);
  }
  if (s->len == 0) {
    g_string_free (s, TRUE);
    return gst_buffer_new ();
  } else {
    gsize len = s->len;
    return gst_buffer_new_wrapped (g_string_free (s, FALSE), len);
  }
}

static void
run_case (GRand *r, guint steps)
{
  static const gint rates[][2] = { {30000, 1001}, {30, 1}, {25, 1}, {60000, 1001}, {50, 1} };
  static const gchar *modes[] = { "auto", "pop-on", "roll-up", "paint-on" };
  GstHarness *h = gst_harness_new ("cea608enc");
  guint rate = g_rand_int_range (r, 0, G_N_ELEMENTS (rates));
  static const gchar *formats[] = {
    "closedcaption/x-cea-608, format=raw", "closedcaption/x-cea-608, format=s334-1a",
    "closedcaption/x-cea-708, format=cc_data", "closedcaption/x-cea-708, format=cdp",
  };
  OutKind kind = (OutKind) g_rand_int_range (r, 0, 4);
  gboolean cc3 = kind != OUT_RAW && g_rand_int_range (r, 0, 4) == 0;
  gchar *caps;
  Check c = { rates[rate][0], rates[rate][1], FALSE, 0, 0 };
  GstClockTime t = 0;
  gboolean eos = FALSE;

  gst_util_set_object_arg (G_OBJECT (h->element), "mode",
      modes[g_rand_int_range (r, 0, G_N_ELEMENTS (modes))]);
  if (cc3)
    gst_util_set_object_arg (G_OBJECT (h->element), "channel", "cc3");
  g_object_set (h->element,
      "max-delay", (guint) g_rand_int_range (r, 0, 5000),
      "roll-up-rows", (guint) g_rand_int_range (r, 2, 5),
      "pop-on-rows", (guint) g_rand_int_range (r, 1, 5),
      "roll-up-timeout", (guint) g_rand_int_range (r, 0, 8000),
      "post-messages", g_rand_boolean (r), NULL);
  caps = g_strdup_printf ("%s, framerate=%d/%d", formats[kind], rates[rate][0], rates[rate][1]);
  gst_harness_set_sink_caps_str (h, caps);
  g_free (caps);
  gst_harness_set_src_caps_str (h, "text/x-raw, format=utf8");
  gst_harness_play (h);

  for (guint i = 0; i < steps && !eos; i++) {
    guint op = g_rand_int_range (r, 0, 100);

    if (op < 55) {
      GstBuffer *b = random_text (r);
      /* mostly forward in time, sometimes overlapping or backward */
      guint64 step = g_rand_int_range (r, 0, 4000) * GST_MSECOND;
      if (g_rand_int_range (r, 0, 10) == 0 && t > step)
        t -= step;
      else
        t += step / 4;
      GST_BUFFER_PTS (b) = t;
      GST_BUFFER_DURATION (b) = g_rand_int_range (r, 0, 6000) * GST_MSECOND;
      if (g_rand_int_range (r, 0, 50) == 0)
        GST_BUFFER_DURATION (b) = GST_CLOCK_TIME_NONE;  /* refused with an error */
      gst_harness_push (h, b);
    } else if (op < 70) {
      guint64 d = g_rand_int_range (r, 0, 10000) * GST_MSECOND;
      gst_harness_push_event (h, gst_event_new_gap (t, d));
      t += d;
    } else if (op < 75) {
      gst_harness_push_event (h, gst_event_new_custom (GST_EVENT_CUSTOM_DOWNSTREAM,
              gst_structure_new_empty ("rstranscribe/final-transcript")));
    } else if (op < 80) {
      GstSegment seg;
      gst_segment_init (&seg, GST_FORMAT_TIME);
      seg.start = t;
      seg.time = t;
      seg.base = g_rand_boolean (r) ? 0 : t;
      gst_harness_push_event (h, gst_event_new_segment (&seg));
    } else if (op < 85) {
      GstSegment seg;
      gst_harness_push_event (h, gst_event_new_flush_start ());
      gst_harness_push_event (h, gst_event_new_flush_stop (TRUE));
      gst_segment_init (&seg, GST_FORMAT_TIME);
      gst_harness_push_event (h, gst_event_new_segment (&seg));
      t = 0;
      c.have_prev = FALSE;
    } else if (op < 88) {
      /* a state cycle: the element starts over */
      GstSegment seg;
      gst_element_set_state (h->element, GST_STATE_READY);
      gst_harness_play (h);
      gst_harness_push_event (h, gst_event_new_stream_start ("fuzz"));
      gst_harness_set_src_caps_str (h, "text/x-raw, format=utf8");
      gst_segment_init (&seg, GST_FORMAT_TIME);
      gst_harness_push_event (h, gst_event_new_segment (&seg));
      t = 0;
      c.have_prev = FALSE;
    } else if (op < 90) {
      gst_harness_push_event (h, gst_event_new_eos ());
      eos = TRUE;
    } else {
      /* a burst of words at once */
      guint n = g_rand_int_range (r, 1, 30);
      for (guint k = 0; k < n; k++) {
        GstBuffer *b = gst_buffer_new_memdup ("word", 4);
        GST_BUFFER_PTS (b) = t;
        GST_BUFFER_DURATION (b) = 20 * GST_MSECOND;
        t += 20 * GST_MSECOND;
        gst_harness_push (h, b);
      }
    }
    check_output (h, &c, kind);
  }
  if (!eos)
    gst_harness_push_event (h, gst_event_new_eos ());
  check_output (h, &c, kind);
  gst_harness_teardown (h);
}

int
main (int argc, char **argv)
{
  guint iterations = 200, seed = 1, steps = 60;

  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp (argv[i], "--iterations"))
      iterations = atoi (argv[i + 1]);
    else if (!strcmp (argv[i], "--seed"))
      seed = atoi (argv[i + 1]);
    else if (!strcmp (argv[i], "--steps"))
      steps = atoi (argv[i + 1]);
  }
  gst_init (&argc, &argv);
  g_log_set_always_fatal (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
  g_assert_true (GST_ELEMENT_REGISTER (cea608enc, NULL));
  for (guint it = 0; it < iterations; it++) {
    GRand *r = g_rand_new_with_seed (seed * 100003u + it);
    run_case (r, steps);
    g_rand_free (r);
  }
  g_print ("cc-fuzz: %u cases of up to %u steps, seed %u: invariants held\n", iterations, steps,
      seed);
  gst_deinit ();
  return 0;
}
