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
 * 0x80/0x00, no GLib warning or critical (fatal here), no leak or memory
 * error under ASan.
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

static void
check_output (GstHarness *h, Check *c, gboolean s334)
{
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
  gboolean s334 = g_rand_boolean (r);
  gboolean cc3 = s334 && g_rand_int_range (r, 0, 4) == 0;
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
  caps = g_strdup_printf ("closedcaption/x-cea-608, format=%s, framerate=%d/%d",
      s334 ? "s334-1a" : "raw", rates[rate][0], rates[rate][1]);
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
    check_output (h, &c, s334);
  }
  if (!eos)
    gst_harness_push_event (h, gst_event_new_eos ());
  check_output (h, &c, s334);
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
