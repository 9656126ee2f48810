/* test-element-units.c: whispersink's model-free parts: the window policy
 * and drift-free timestamps (gstwhisperwindow.c), words assembled from
 * token events (gstwhisperwords.c), and the overload ladder's decisions
 * (gstwhisperoverload.c) on given call times. */
#include <gst/check/gstcheck.h>
#include <math.h>
#include <string.h>

#include "io/gstwhisperalign.h"
#include "io/gstwhisperwindow.h"
#include "io/gstwhisperwords.h"
#include "io/gstwhisperdebug.h"
#include "task/gstwhisperoverload.h"

#define RATE 16000

static void
append_zeros (GstWhisperWindow *w, gsize n)
{
  float *z = g_new0 (float, n);
  gst_whisper_window_append (w, z, n);
  g_free (z);
}

/* Appends `n_buffers` buffers of `per_buffer` samples at `rate`, as the
 * element does (the transcribed audio released after each one, so memory
 * stays small), and checks after every buffer that the time of the end of
 * the audio is the resync PTS plus the sample count converted once:
 * timestamps come from the sample index, not from summing buffer
 * durations, so nothing accumulates however many buffers there are. */
static void
check_no_drift (gint rate, gsize per_buffer, guint64 n_buffers, GstClockTime resync)
{
  GstWhisperWindow w;
  float *z = g_new0 (float, per_buffer);
  guint64 i, end = 0;

  gst_whisper_window_init (&w, rate);
  gst_whisper_window_reset (&w, resync);
  for (i = 0; i < n_buffers; i++) {
    gst_whisper_window_append (&w, z, per_buffer);
    end += per_buffer;
    /* plain tests: each check macro costs a write to check's pipe */
    if (gst_whisper_window_end (&w) != end)
      fail ("buffer %" G_GUINT64_FORMAT ": window ends at sample %" G_GUINT64_FORMAT
          ", want %" G_GUINT64_FORMAT, i, gst_whisper_window_end (&w), end);
    if (gst_whisper_window_time_at (&w, end) != resync
        + gst_util_uint64_scale_int_round (end, GST_SECOND, rate))
      fail ("buffer %" G_GUINT64_FORMAT " at %d Hz: end at %" GST_TIME_FORMAT
          ", want %" GST_TIME_FORMAT, i, rate,
          GST_TIME_ARGS (gst_whisper_window_time_at (&w, end)),
          GST_TIME_ARGS (resync + gst_util_uint64_scale_int_round (end, GST_SECOND, rate)));
    /* the engine took it all: the seek point moves, samples are released */
    gst_whisper_window_advance (&w, per_buffer, per_buffer);
  }
  fail_unless_equals_int (w.pcm->len, 0);
  fail_unless_equals_uint64 (w.seek, end);
  gst_whisper_window_clear (&w);
  g_free (z);
}

/* Holes filled, overlaps skipped, jitter ignored, large jumps a new run;
 * sample times stay those of the timestamps after many fills. */
GST_START_TEST (test_align)
{
  const GstClockTime ms = GST_MSECOND, max_gap = 1000 * ms;
  GstWhisperAlign a;
  GstWhisperAlignResult r;
  guint64 i;

  gst_whisper_align_init (&a, 16000, 40 * ms);
  fail_unless_equals_uint64 (gst_whisper_align_next_pts (&a), GST_CLOCK_TIME_NONE);

  /* First buffer: a new run. */
  gst_whisper_align_process (&a, 5000 * ms, 1600, max_gap, &r);
  fail_unless (r.resync && r.fill == 0 && r.skip == 0);
  fail_unless_equals_uint64 (r.pts, 5000 * ms);
  /* Continuous, and jitter within 40 ms either way. */
  gst_whisper_align_process (&a, 5100 * ms, 1600, max_gap, &r);
  fail_unless (!r.resync && r.fill == 0 && r.skip == 0);
  fail_unless_equals_uint64 (r.pts, 5100 * ms);
  gst_whisper_align_process (&a, 5230 * ms, 1600, max_gap, &r);
  fail_unless (!r.resync && r.fill == 0 && r.skip == 0);
  fail_unless_equals_uint64 (r.pts, 5200 * ms);
  gst_whisper_align_process (&a, 5265 * ms, 1600, max_gap, &r);
  fail_unless (!r.resync && r.fill == 0 && r.skip == 0);
  fail_unless_equals_uint64 (gst_whisper_align_next_pts (&a), 5400 * ms);

  /* A lost 100-ms buffer: 1600 zeros before the next one. */
  gst_whisper_align_process (&a, 5500 * ms, 1600, max_gap, &r);
  fail_unless (!r.resync);
  fail_unless_equals_uint64 (r.fill, 1600);
  fail_unless_equals_uint64 (r.skip, 0);
  fail_unless_equals_uint64 (r.pts, 5500 * ms);
  /* Received again: all of it skipped; then half of one. */
  gst_whisper_align_process (&a, 5500 * ms, 1600, max_gap, &r);
  fail_unless (!r.resync && r.fill == 0);
  fail_unless_equals_uint64 (r.skip, 1600);
  gst_whisper_align_process (&a, 5550 * ms, 1600, max_gap, &r);
  fail_unless (!r.resync && r.fill == 0);
  fail_unless_equals_uint64 (r.skip, 800);
  fail_unless_equals_uint64 (r.pts, 5600 * ms);
  fail_unless_equals_uint64 (gst_whisper_align_next_pts (&a), 5650 * ms);

  /* Exactly max-gap is filled, more is a new run; backwards as well. */
  gst_whisper_align_process (&a, 6650 * ms, 1600, max_gap, &r);
  fail_unless (!r.resync);
  fail_unless_equals_uint64 (r.fill, 16000);
  gst_whisper_align_process (&a, 7751 * ms, 1600, max_gap, &r);
  fail_unless (r.resync && r.fill == 0);
  fail_unless_equals_uint64 (r.pts, 7751 * ms);
  gst_whisper_align_process (&a, 6000 * ms, 1600, max_gap, &r);
  fail_unless (r.resync && r.skip == 0);
  fail_unless_equals_uint64 (r.pts, 6000 * ms);

  /* max-gap 0: every hole beyond the jitter is a new run. */
  gst_whisper_align_process (&a, 6150 * ms, 1600, 0, &r);
  fail_unless (r.resync && r.fill == 0);

  /* After a discont, the next buffer starts a run wherever it is. */
  gst_whisper_align_mark_discont (&a);
  gst_whisper_align_process (&a, 6160 * ms, 1600, max_gap, &r);
  fail_unless (r.resync);

  /* 10 000 buffers of 4410 samples at 44.1 kHz with every 7th lost: the
   * fills put each buffer's first sample at its own timestamp. */
  gst_whisper_align_init (&a, 44100, 40 * ms);
  for (i = 0; i < 10000; i++) {
    GstClockTime pts = gst_util_uint64_scale_int_round (i * 4410, GST_SECOND, 44100);
    if (i % 7 == 3)
      continue;
    gst_whisper_align_process (&a, pts, 4410, max_gap, &r);
    fail_unless (r.resync == (i == 0));
    fail_unless_equals_uint64 (r.pts, pts);
  }
  /* 10-ms buffers: a lost one is within the jitter tolerance and is not
   * filled until the lost time exceeds it; sample times never lag the
   * timestamps by more than that. */
  gst_whisper_align_init (&a, 44100, 40 * ms);
  for (i = 0; i < 100000; i++) {
    GstClockTime pts = gst_util_uint64_scale_int_round (i * 441, GST_SECOND, 44100);
    if (i % 7 == 3)
      continue;
    gst_whisper_align_process (&a, pts, 441, max_gap, &r);
    fail_unless (r.resync == (i == 0));
    fail_unless (r.pts <= pts && pts - r.pts <= 40 * ms, "%" GST_TIME_FORMAT " at %"
        GST_TIME_FORMAT, GST_TIME_ARGS (r.pts), GST_TIME_ARGS (pts));
  }
}
GST_END_TEST;

GST_START_TEST (test_window_timestamps_no_drift)
{
  GstWhisperWindow w;
  gsize i;

  /* A million 10-ms buffers at the element's rate (16 kHz: 160 samples,
   * 10,000 s of audio, under a second on the 2-core machine): the last one
   * ends exactly 10,000 s after the resync PTS. */
  check_no_drift (RATE, 160, 1000000, 5 * GST_SECOND);
  /* A rate where a buffer is not a whole number of nanoseconds (147
   * samples at 44.1 kHz = 3.333... ms), so that a sum of rounded buffer
   * or sample durations would drift (by about 0.33 ns per buffer, 0.3 ms
   * after a million): the window must still give the exact time. */
  check_no_drift (44100, 147, 1000000, 5 * GST_SECOND);

  gst_whisper_window_init (&w, RATE);
  gst_whisper_window_reset (&w, 5 * GST_SECOND);
  for (i = 0; i < 1000; i++)
    append_zeros (&w, 160);
  fail_unless_equals_uint64 (gst_whisper_window_time_at (&w, 160000), 15 * GST_SECOND);
  fail_unless_equals_uint64 (gst_whisper_window_time_at (&w, 1), 5 * GST_SECOND + 62500);
  fail_unless_equals_uint64 (gst_whisper_window_time_at (&w, (guint64) 16000 * 3600 * 24),
      5 * GST_SECOND + 24 * 3600 * GST_SECOND);
  gst_whisper_window_advance (&w, 160000, 16000);
  fail_unless_equals_int (gst_whisper_window_pending (&w), 144000);
  fail_unless_equals_uint64 (w.base, 16000);
  fail_unless_equals_int (w.pcm->len, 144000);
  gst_whisper_window_clear (&w);
}
GST_END_TEST;

GST_START_TEST (test_window_policy)
{
  GstWhisperWindow w;
  /* latency=8000: 2-s chunks, an 8-s budget */
  GstWhisperWindowPolicy p = { FALSE, GST_WHISPER_OFFLINE_EXACT, 480000, RATE, 2 * RATE,
    8 * RATE, FALSE };
  GstWhisperRegion r;

  gst_whisper_window_init (&w, RATE);
  gst_whisper_window_reset (&w, 0);
  append_zeros (&w, 40 * RATE);
  /* exact: only when draining, everything */
  fail_if (gst_whisper_window_next_region (&w, &p, FALSE, &r));
  fail_unless (gst_whisper_window_next_region (&w, &p, TRUE, &r));
  fail_unless_equals_int (r.n_samples, 40 * RATE);
  fail_unless_equals_int (r.carry, GST_WHISPER_CARRY_NONE);

  /* windowed: a window plus lookahead, first window only */
  p.offline = GST_WHISPER_OFFLINE_WINDOWED;
  fail_unless (gst_whisper_window_next_region (&w, &p, FALSE, &r));
  fail_unless_equals_int (r.n_samples, 31 * RATE);
  fail_unless_equals_int (r.carry, GST_WHISPER_CARRY_AFTER_WINDOW);
  gst_whisper_window_advance (&w, r.n_samples, 28 * RATE);   /* engine seeked to 28 s */
  fail_if (gst_whisper_window_next_region (&w, &p, FALSE, &r));  /* 12 s left */

  /* live: a chunk of new audio triggers; the last segment may be carried
   * while a call stays within 3 chunks */
  p.live = TRUE;
  gst_whisper_window_reset (&w, 0);
  append_zeros (&w, RATE);
  fail_if (gst_whisper_window_next_region (&w, &p, FALSE, &r));
  append_zeros (&w, RATE);
  fail_unless (gst_whisper_window_next_region (&w, &p, FALSE, &r));
  fail_unless_equals_int (r.n_samples, 2 * RATE);
  fail_unless_equals_int (r.carry, GST_WHISPER_CARRY_LAST_SEGMENT);
  gst_whisper_window_advance (&w, r.n_samples, 0);           /* all carried */
  append_zeros (&w, RATE);
  fail_if (gst_whisper_window_next_region (&w, &p, FALSE, &r));   /* 1 s new */
  append_zeros (&w, RATE);
  fail_unless (gst_whisper_window_next_region (&w, &p, FALSE, &r));
  fail_unless_equals_int (r.n_samples, 4 * RATE);
  fail_unless_equals_int (r.carry, GST_WHISPER_CARRY_LAST_SEGMENT);  /* 4 + 2 <= 6 s */
  gst_whisper_window_advance (&w, r.n_samples, 0);
  append_zeros (&w, 2 * RATE);
  fail_unless (gst_whisper_window_next_region (&w, &p, FALSE, &r));
  fail_unless_equals_int (r.n_samples, 6 * RATE);
  fail_unless_equals_int (r.carry, GST_WHISPER_CARRY_NONE);   /* 6 + 2 > 6 s */

  /* overload: keep one chunk */
  append_zeros (&w, 20 * RATE);
  fail_unless_equals_int (gst_whisper_window_drop_backlog (&w, p.chunk_samples), 24 * RATE);
  fail_unless_equals_int (gst_whisper_window_pending (&w), 2 * RATE);
  fail_unless_equals_uint64 (gst_whisper_window_time_at (&w, w.seek), 24 * GST_SECOND);
  gst_whisper_window_clear (&w);
}
GST_END_TEST;

/* A 440-Hz tone of amplitude `amp`. */
static void
append_tone (GstWhisperWindow *w, gsize n, float amp)
{
  float *x = g_new (float, n);
  for (gsize i = 0; i < n; i++)
    x[i] = amp * (float) sin (2 * G_PI * 440.0 * i / RATE);
  gst_whisper_window_append (w, x, n);
  g_free (x);
}

/* Live without the commit policy (device=remote): a call ends a chunk
 * after the end of the call before, however much more audio arrived while
 * that one ran (up to two chunks behind), so that two runs cut the same
 * audio wherever the answers' timing differs; the call that moves the
 * window on ends at the quietest 20 ms of its last 0.6 s (half a chunk at
 * most). Before, a call took all the audio waiting (2.5 s here) and moved
 * on at its very end. */
GST_START_TEST (test_live_grid)
{
  /* latency=8000: 2-s chunks, an 8-s budget, calls carried up to 6 s */
  GstWhisperWindowPolicy p = { TRUE, GST_WHISPER_OFFLINE_EXACT, 480000, RATE, 2 * RATE,
    8 * RATE, FALSE };
  GstWhisperWindow w;
  GstWhisperRegion r;

  gst_whisper_window_init (&w, RATE);
  gst_whisper_window_reset (&w, 0);
  append_tone (&w, 5 * RATE / 2, 0.5f);
  fail_unless (gst_whisper_window_next_region (&w, &p, FALSE, &r));
  fail_unless_equals_int (r.n_samples, 2 * RATE);
  fail_unless_equals_int (r.carry, GST_WHISPER_CARRY_LAST_SEGMENT);
  gst_whisper_window_advance (&w, r.n_samples, 0);
  append_tone (&w, 16 * RATE / 10, 0.5f);             /* 4.1 s in all */
  fail_unless (gst_whisper_window_next_region (&w, &p, FALSE, &r));
  fail_unless_equals_int (r.n_samples, 4 * RATE);
  fail_unless_equals_int (r.carry, GST_WHISPER_CARRY_LAST_SEGMENT);
  gst_whisper_window_advance (&w, r.n_samples, 0);
  /* to 6.6 s, with a quieter 40 ms at 5.60-5.64 s and a silent 20 ms at
   * 5.30-5.32 s (more than 0.6 s before the end of the call: not looked at) */
  append_tone (&w, 12 * RATE / 10, 0.5f);
  append_zeros (&w, RATE / 50);
  append_tone (&w, 28 * RATE / 100, 0.5f);
  append_tone (&w, 4 * RATE / 100, 0.05f);
  append_tone (&w, 96 * RATE / 100, 0.5f);
  fail_unless (gst_whisper_window_next_region (&w, &p, FALSE, &r));
  fail_unless_equals_int (r.carry, GST_WHISPER_CARRY_NONE);   /* 6 + 2 > 6 s */
  fail_unless (r.n_samples > 56 * RATE / 10 && r.n_samples < 564 * RATE / 100,
      "cut at %" G_GSIZE_FORMAT " samples, not in the quiet 5.60-5.64 s", r.n_samples);
  gst_whisper_window_advance (&w, r.n_samples, r.n_samples);
  /* the rest waits: the next call after 2 s more than the call's end */
  fail_if (gst_whisper_window_next_region (&w, &p, FALSE, &r));
  append_tone (&w, 14 * RATE / 10, 0.5f);             /* 8.0 s in all */
  fail_unless (gst_whisper_window_next_region (&w, &p, FALSE, &r));
  fail_unless_equals_int (r.n_samples, 2 * RATE);
  /* two chunks behind (a slow server): all the whole chunks waiting */
  gst_whisper_window_advance (&w, r.n_samples, 0);
  append_tone (&w, 41 * RATE / 10, 0.5f);
  fail_unless (gst_whisper_window_next_region (&w, &p, FALSE, &r));
  fail_unless (r.n_samples > 54 * RATE / 10 && r.n_samples <= 6 * RATE,
      "%" G_GSIZE_FORMAT " samples, not 6 s ending in a quiet moment", r.n_samples);
  gst_whisper_window_clear (&w);
}
GST_END_TEST;

/* Live audio in 100-ms buffers, inference just keeping up (the audio of
 * almost a chunk arrives while each call runs) and the engine holding back
 * as much as the policy lets it (the whole call while it may carry): the
 * audio waiting never exceeds the backlog limit, so nothing is dropped, at
 * any latency and also with short windows (encoder-context). Before the
 * carry and backlog limits followed the budget, every latency under
 * 2000 ms failed here (3 chunks held against a budget of 1 s or less). */
GST_START_TEST (test_live_policy_keeps_up)
{
  const guint latencies[] = { 300, 500, 1000, 1500, 2000, 3000, 4000, 8000 };
  const gsize windows[] = { 480000, 32000, 8000 };  /* encoder-context 0, 100, 25 */
  const gsize buffer = RATE / 10;
  guint li, wi;

  for (wi = 0; wi < G_N_ELEMENTS (windows); wi++) {
    for (li = 0; li < G_N_ELEMENTS (latencies); li++) {
      GstWhisperWindowPolicy p = { TRUE, GST_WHISPER_OFFLINE_EXACT, windows[wi], RATE, 0,
        latencies[li] * (RATE / 1000), FALSE };
      GstWhisperWindow w;
      GstWhisperRegion r;
      gsize fed = 0, calls = 0, limit, during;

      p.chunk_samples = gst_whisper_window_chunk_for_latency (latencies[li], RATE,
          windows[wi]);
      during = p.chunk_samples > buffer ? p.chunk_samples - buffer : 0;
      limit = gst_whisper_window_backlog_limit (&p);
      gst_whisper_window_init (&w, RATE);
      gst_whisper_window_reset (&w, 0);
      while (fed < 120 * RATE) {
        append_zeros (&w, buffer);
        fed += buffer;
        fail_unless (gst_whisper_window_pending (&w) <= limit,
            "latency %u, window %" G_GSIZE_FORMAT ": %" G_GSIZE_FORMAT " samples waiting, "
            "limit %" G_GSIZE_FORMAT, latencies[li], windows[wi],
            gst_whisper_window_pending (&w), limit);
        while (gst_whisper_window_next_region (&w, &p, FALSE, &r)) {
          calls++;
          gst_whisper_window_advance (&w, r.n_samples,
              r.carry == GST_WHISPER_CARRY_LAST_SEGMENT ? 0 : r.n_samples);
          append_zeros (&w, during);   /* arrived while the call ran */
          fed += during;
          fail_unless (gst_whisper_window_pending (&w) <= limit,
              "latency %u, window %" G_GSIZE_FORMAT ": %" G_GSIZE_FORMAT " samples "
              "waiting after a call, limit %" G_GSIZE_FORMAT, latencies[li], windows[wi],
              gst_whisper_window_pending (&w), limit);
        }
      }
      fail_unless (calls > 0);
      gst_whisper_window_clear (&w);
    }
  }
}
GST_END_TEST;

/* Token stream: <|0.00|> " And" " so" "," <|1.00|> <|1.00|> " my" <|2.00|> EOT */
typedef struct {
  gint32 id;
  const gchar *piece;
  gboolean ts;
  double time;
  int step;
} Tok;

#define EOT 50256
#define TS 50363

static guint
feed_all (GstWhisperWords *w, const Tok *toks, guint n, GstWhisperWord *out, double win)
{
  guint i, k = 0;

  for (i = 0; i < n; i++) {
    WhisperTokenEvent ev = { 0, };
    ev.id = toks[i].id;
    ev.piece = toks[i].piece;
    ev.is_timestamp = toks[i].ts;
    ev.time = toks[i].time;
    ev.window_start = win;
    ev.logprob = -0.5f;
    ev.step = toks[i].step;
    if (gst_whisper_words_feed (w, &ev, &out[k]))
      k++;
  }
  return k;
}

GST_START_TEST (test_words)
{
  const Tok toks[] = {
    {TS, "", TRUE, 0.0, 0}, {100, " And", FALSE, 0.0, 1}, {101, " so", FALSE, 0.0, 2},
    {102, ",", FALSE, 0.0, 3}, {TS + 50, "", TRUE, 1.0, 4}, {TS + 50, "", TRUE, 1.0, 5},
    {103, " my", FALSE, 1.0, 6}, {TS + 100, "", TRUE, 2.0, 7}, {EOT, "", FALSE, 2.0, 8},
  };
  GstWhisperWords w;
  GstWhisperWord out[8];
  guint n, i;

  gst_whisper_words_init (&w, EOT);
  n = feed_all (&w, toks, G_N_ELEMENTS (toks), out, 0.0);
  fail_unless_equals_int (n, 3);
  fail_unless_equals_string (out[0].text, "And");
  fail_unless_equals_string (out[1].text, "so,");
  fail_unless_equals_string (out[2].text, "my");
  /* completed by the next token: " so" completes "And" at step 2 */
  fail_unless_equals_int (out[0].step, 2);
  fail_unless_equals_int (out[1].step, 4);
  /* estimated inside the segment, closed by the closing timestamp */
  fail_unless (out[0].start == 0.0 && out[1].start > out[0].start);
  fail_unless (out[1].end == 1.0);
  fail_unless (out[2].start == 1.0 && out[2].end == 2.0);
  fail_unless (out[2].segment_start == 1.0);
  for (i = 0; i < n; i++)
    gst_whisper_word_clear (&out[i]);

  /* The same window decoded again (fallback): words already out are not
   * repeated. */
  n = feed_all (&w, toks, G_N_ELEMENTS (toks), out, 0.0);
  fail_unless_equals_int (n, 0);
  /* A new window: words again. */
  n = feed_all (&w, toks, G_N_ELEMENTS (toks), out, 30.0);
  fail_unless_equals_int (n, 3);
  for (i = 0; i < n; i++)
    gst_whisper_word_clear (&out[i]);
  gst_whisper_words_clear (&w);
}
GST_END_TEST;

/* The whisper-overload messages on `bus` as "+step" / "-step", joined
 * with spaces; *warned: the warnings with reason=overload. */
static gchar *
pop_overload (GstBus *bus, guint *warned)
{
  GString *out = g_string_new (NULL);
  GstMessage *m;

  *warned = 0;
  while ((m = gst_bus_pop (bus))) {
    const GstStructure *s = gst_message_get_structure (m);
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_WARNING) {
      const GstStructure *d = NULL;
      gst_message_parse_warning_details (m, &d);
      *warned += d && g_strcmp0 (gst_structure_get_string (d, "reason"), "overload") == 0;
    } else if (s && gst_structure_has_name (s, "whisper-overload")) {
      gboolean taken;
      fail_unless (gst_structure_get_boolean (s, "taken", &taken));
      g_string_append_printf (out, "%s%c%s", out->len ? " " : "", taken ? '+' : '-',
          gst_structure_get_string (s, "step"));
    }
    gst_message_unref (m);
  }
  return g_string_free (out, FALSE);
}

/* `n` calls that took `load` times the 0.5 s of audio they covered (more
 * audio waiting after them when the load is above 1), with a 2-s budget
 * (a quarter of it is the 0.5 s: the audio alone sets what a call may
 * take). */
static void
calls (GstWhisperOverload *o, GstElement *e, guint n, double load)
{
  const GstClockTime covered = GST_SECOND / 2;
  for (guint i = 0; i < n; i++)
    gst_whisper_overload_observe (o, e, (GstClockTime) (load * covered), covered,
        2 * GST_SECOND, load > 1.0);
}

static void
assert_overload (GstBus *bus, const gchar *want, guint want_warned)
{
  guint warned;
  gchar *got = pop_overload (bus, &warned);
  fail_unless_equals_string (got, want);
  fail_unless_equals_int (warned, want_warned);
  g_free (got);
}

/* Defaults but beam 5 and full encoder, live-context 3 s, a translate pad:
 * every step applies. */
static void
ladder_settings (GstWhisperSettings *s, gboolean degrade)
{
  memset (s, 0, sizeof *s);
  s->decoding.beam_size = 0;
  s->live.encoder = GST_WHISPER_LIVE_ENCODER_FULL;
  s->live.context_s = 3.0;
  s->live.overload = degrade ? GST_WHISPER_OVERLOAD_DEGRADE : GST_WHISPER_OVERLOAD_DROP;
}

/* An element with its own bus, for the ladder's messages (the bus holds a
 * reference: gst_object_unref (the bus), then the element). */
static GstElement *
ladder_element (void)
{
  GstElement *e = gst_bin_new ("w");
  GstBus *bus = gst_bus_new ();

  gst_whisper_debug_init ();
  gst_element_set_bus (e, bus);
  gst_object_unref (bus);
  return e;
}

/* The deadline's next call: the longest of the last four (one slower
 * call counted as the last one alone made its words late). */
GST_START_TEST (test_call_times)
{
  GstWhisperCallTimes t = { {0}, 0 };
  const GstClockTime ms = GST_MSECOND;

  fail_unless_equals_uint64 (gst_whisper_call_times_add (&t, 200 * ms), 200 * ms);
  fail_unless_equals_uint64 (gst_whisper_call_times_add (&t, 600 * ms), 600 * ms);
  fail_unless_equals_uint64 (gst_whisper_call_times_add (&t, 300 * ms), 600 * ms);
  fail_unless_equals_uint64 (gst_whisper_call_times_add (&t, 200 * ms), 600 * ms);
  fail_unless_equals_uint64 (gst_whisper_call_times_add (&t, 200 * ms), 600 * ms);
  /* four calls after it, the 600-ms call is forgotten */
  fail_unless_equals_uint64 (gst_whisper_call_times_add (&t, 200 * ms), 300 * ms);
  fail_unless_equals_uint64 (gst_whisper_call_times_add (&t, 200 * ms), 200 * ms);
}
GST_END_TEST;

GST_START_TEST (test_overload_ladder)
{
  GstElement *e = ladder_element ();
  GstBus *bus = gst_element_get_bus (e);
  GstWhisperOverload o;
  GstWhisperSettings s;

  gst_whisper_overload_reset (&o);
  ladder_settings (&s, TRUE);
  gst_whisper_overload_apply (&o, &s, TRUE);
  /* slow calls with no audio waiting after them (upstream waits for the
   * element): nothing */
  for (guint i = 0; i < 12; i++)
    gst_whisper_overload_observe (&o, e, GST_SECOND, GST_SECOND / 2, 2 * GST_SECOND, FALSE);
  assert_overload (bus, "", 0);
  /* slow calls: a step per 3 calls (each judged by calls made with it) */
  gst_whisper_overload_reset (&o);
  gst_whisper_overload_apply (&o, &s, TRUE);
  calls (&o, e, 2, 2.0);
  assert_overload (bus, "", 0);
  calls (&o, e, 1, 2.0);
  assert_overload (bus, "+one-window", 1);
  calls (&o, e, 12, 2.0);
  assert_overload (bus, "+greedy +buffered-encoder +short-context +no-translation", 4);
  /* the task's copy of the settings gets them; the translation goes */
  ladder_settings (&s, TRUE);
  gst_whisper_overload_apply (&o, &s, TRUE);
  fail_unless (s.live.one_window);
  fail_unless_equals_int (s.decoding.beam_size, 1);
  fail_unless_equals_int (s.live.encoder, GST_WHISPER_LIVE_ENCODER_BUFFERED);
  fail_unless (s.live.context_s == 1.0);
  fail_unless (gst_whisper_overload_skips_translation (&o));
  /* nothing left to take */
  calls (&o, e, 6, 2.0);
  assert_overload (bus, "", 0);
  /* between the two loads nothing changes (hysteresis) */
  calls (&o, e, 30, 0.6);
  assert_overload (bus, "", 0);
  /* quick: a step undone per 6 calls, the last first */
  calls (&o, e, 5, 0.1);
  assert_overload (bus, "", 0);
  calls (&o, e, 1, 0.1);
  assert_overload (bus, "-no-translation", 0);
  calls (&o, e, 24, 0.1);
  assert_overload (bus, "-short-context -buffered-encoder -greedy -one-window", 0);
  ladder_settings (&s, TRUE);
  gst_whisper_overload_apply (&o, &s, TRUE);
  fail_if (s.live.one_window);
  fail_unless_equals_int (s.decoding.beam_size, 0);
  fail_unless (!gst_whisper_overload_skips_translation (&o));
  /* taken again: no second warning in the run */
  calls (&o, e, 3, 2.0);
  assert_overload (bus, "+one-window", 0);
  /* a step that gives nothing up is passed over (greedy already, no
   * translate pad) */
  gst_whisper_overload_reset (&o);
  ladder_settings (&s, TRUE);
  s.decoding.beam_size = 1;
  gst_whisper_overload_apply (&o, &s, FALSE);
  calls (&o, e, 12, 2.0);
  assert_overload (bus, "+one-window +buffered-encoder +short-context", 3);
  /* overload=drop: nothing is taken */
  gst_whisper_overload_reset (&o);
  ladder_settings (&s, FALSE);
  gst_whisper_overload_apply (&o, &s, TRUE);
  calls (&o, e, 12, 2.0);
  assert_overload (bus, "", 0);
  gst_object_unref (bus);
  gst_object_unref (e);
}
GST_END_TEST;

/* Calls slower than their chunk run back to back, each covering the
 * audio that came while the one before ran: at a load of one against
 * their audio they keep up, and no step is due while a call takes at most
 * a quarter of latency + lateness (its words still agree before their
 * deadline). Longer calls are slow, and a step is undone only when the
 * calls are quick against that quarter too. */
GST_START_TEST (test_overload_budget)
{
  GstElement *e = ladder_element ();
  GstBus *bus = gst_element_get_bus (e);
  GstWhisperOverload o;
  GstWhisperSettings s;
  const GstClockTime ms = GST_MSECOND, budget = 3000 * ms;

  gst_whisper_overload_reset (&o);
  ladder_settings (&s, TRUE);
  gst_whisper_overload_apply (&o, &s, TRUE);
  /* 0.6-s calls, each covering the 0.6 s that came during the one before,
   * latency 3000: a call may take 0.75 s */
  for (guint i = 0; i < 30; i++)
    gst_whisper_overload_observe (&o, e, 600 * ms, 600 * ms, budget, TRUE);
  assert_overload (bus, "", 0);
  /* the same calls with no budget to spare (latency 2000: 0.5 s) */
  for (guint i = 0; i < 3; i++)
    gst_whisper_overload_observe (&o, e, 600 * ms, 600 * ms, 2000 * ms, TRUE);
  assert_overload (bus, "+one-window", 1);
  /* at 3000, calls of 0.8 s are slow */
  for (guint i = 0; i < 3; i++)
    gst_whisper_overload_observe (&o, e, 800 * ms, 800 * ms, budget, TRUE);
  assert_overload (bus, "+greedy", 1);
  /* 0.35-s calls on 0.5-s chunks: 0.7 of their audio, 0.47 of the
   * quarter of the budget: nothing is undone */
  for (guint i = 0; i < 12; i++)
    gst_whisper_overload_observe (&o, e, 350 * ms, 500 * ms, budget, FALSE);
  assert_overload (bus, "", 0);
  /* 0.25-s calls: half their audio, but under 0.4 of the quarter of the
   * budget: quick, a step undone per 6 calls */
  for (guint i = 0; i < 12; i++)
    gst_whisper_overload_observe (&o, e, 250 * ms, 500 * ms, budget, FALSE);
  assert_overload (bus, "-greedy -one-window", 0);
  gst_object_unref (bus);
  gst_object_unref (e);
}
GST_END_TEST;

/* One call longer than latency + lateness, with the next due: every step
 * that spends less at once (late-text is not one); not when upstream
 * waits for the element, nor for a call within the budget. */
GST_START_TEST (test_overload_call_over_budget)
{
  GstElement *e = ladder_element ();
  GstBus *bus = gst_element_get_bus (e);
  GstWhisperOverload o;
  GstWhisperSettings s;
  const GstClockTime ms = GST_MSECOND, budget = 8000 * ms;

  gst_whisper_overload_reset (&o);
  ladder_settings (&s, TRUE);
  gst_whisper_overload_apply (&o, &s, TRUE);
  gst_whisper_overload_observe (&o, e, 7900 * ms, 500 * ms, budget, TRUE);
  gst_whisper_overload_observe (&o, e, 9000 * ms, 500 * ms, budget, FALSE);
  assert_overload (bus, "", 0);
  gst_whisper_overload_observe (&o, e, 9000 * ms, 500 * ms, budget, TRUE);
  assert_overload (bus, "+one-window +greedy +buffered-encoder +short-context +no-translation",
      5);
  gst_whisper_overload_observe (&o, e, 9000 * ms, 9000 * ms, budget, TRUE);
  assert_overload (bus, "", 0);
  /* undone one at a time */
  for (guint i = 0; i < 6; i++)
    gst_whisper_overload_observe (&o, e, 100 * ms, 500 * ms, budget, FALSE);
  assert_overload (bus, "-no-translation", 0);
  gst_object_unref (bus);
  gst_object_unref (e);
}
GST_END_TEST;

/* A drop that is due takes the next step instead, until none is left. */
GST_START_TEST (test_overload_before_drop)
{
  GstElement *e = ladder_element ();
  GstBus *bus = gst_element_get_bus (e);
  GstWhisperOverload o;
  GstWhisperSettings s;

  gst_whisper_overload_reset (&o);
  ladder_settings (&s, TRUE);
  gst_whisper_overload_apply (&o, &s, TRUE);
  for (guint i = 0; i < GST_WHISPER_OVERLOAD_N_STEPS; i++)
    fail_unless (gst_whisper_overload_before_drop (&o, e));
  fail_if (gst_whisper_overload_before_drop (&o, e));
  assert_overload (bus, "+one-window +greedy +buffered-encoder +short-context +no-translation "
      "+late-text", 6);
  gst_whisper_overload_reset (&o);
  ladder_settings (&s, FALSE);
  gst_whisper_overload_apply (&o, &s, TRUE);
  fail_if (gst_whisper_overload_before_drop (&o, e));
  assert_overload (bus, "", 0);
  gst_object_unref (bus);
  gst_object_unref (e);
}
GST_END_TEST;

/* late-text, the last step: taken only where a drop is due (slow calls
 * alone never take it), it lets new audio wait up to
 * GST_WHISPER_OVERLOAD_LATE_S for a call instead of latency + lateness; a
 * budget as long as that gives nothing up, and the step is passed over. */
GST_START_TEST (test_overload_late_text)
{
  GstElement *e = ladder_element ();
  GstBus *bus = gst_element_get_bus (e);
  GstWhisperOverload o;
  GstWhisperSettings s;
  const gsize budget = 3 * 16000, late = GST_WHISPER_OVERLOAD_LATE_S * 16000;

  gst_whisper_overload_reset (&o);
  ladder_settings (&s, TRUE);
  s.live.latency_ms = 3000;
  gst_whisper_overload_apply (&o, &s, TRUE);
  fail_unless_equals_uint64 (gst_whisper_overload_backlog_limit (&o, budget, 16000), budget);
  /* slow calls: the five steps that spend less, not late-text */
  calls (&o, e, 30, 2.0);
  assert_overload (bus, "+one-window +greedy +buffered-encoder +short-context +no-translation",
      5);
  fail_unless_equals_uint64 (gst_whisper_overload_backlog_limit (&o, budget, 16000), budget);
  /* a drop due: late-text instead, once */
  fail_unless (gst_whisper_overload_before_drop (&o, e));
  assert_overload (bus, "+late-text", 1);
  fail_unless_equals_uint64 (gst_whisper_overload_backlog_limit (&o, budget, 16000), late);
  fail_unless_equals_uint64 (gst_whisper_overload_backlog_limit (&o, 2 * late, 16000),
      2 * late);
  fail_if (gst_whisper_overload_before_drop (&o, e));
  /* quick calls: undone first */
  calls (&o, e, 6, 0.1);
  assert_overload (bus, "-late-text", 0);
  fail_unless_equals_uint64 (gst_whisper_overload_backlog_limit (&o, budget, 16000), budget);
  /* latency + lateness of 20 s already: passed over, the audio goes */
  gst_whisper_overload_reset (&o);
  ladder_settings (&s, TRUE);
  s.live.latency_ms = 15000;
  s.live.lateness_ms = 5000;
  gst_whisper_overload_apply (&o, &s, TRUE);
  for (guint i = 0; i < GST_WHISPER_OVERLOAD_N_STEPS - 1; i++)
    fail_unless (gst_whisper_overload_before_drop (&o, e));
  fail_if (gst_whisper_overload_before_drop (&o, e));
  assert_overload (bus, "+one-window +greedy +buffered-encoder +short-context +no-translation",
      5);
  gst_object_unref (bus);
  gst_object_unref (e);
}
GST_END_TEST;

/* The settings are read again for every call: a property change or a
 * translate_src pad that comes or goes must not take or undo a step
 * without its message. The steps in effect are the ones posted, undone
 * last taken first. */
GST_START_TEST (test_overload_settings_change)
{
  GstElement *e = ladder_element ();
  GstBus *bus = gst_element_get_bus (e);
  GstWhisperOverload o;
  GstWhisperSettings s;

  /* greedy passed over (beam-size=1), then beam-size=5 again: the beam
   * stays until calls fall behind once more, and then greedy is the step
   * taken */
  gst_whisper_overload_reset (&o);
  ladder_settings (&s, TRUE);
  s.decoding.beam_size = 1;
  gst_whisper_overload_apply (&o, &s, TRUE);
  calls (&o, e, 3, 2.0);
  assert_overload (bus, "+one-window", 1);
  calls (&o, e, 3, 2.0);
  assert_overload (bus, "+buffered-encoder", 1);
  ladder_settings (&s, TRUE);
  s.decoding.beam_size = 5;
  gst_whisper_overload_apply (&o, &s, TRUE);
  fail_unless_equals_int (s.decoding.beam_size, 5);
  fail_unless_equals_int (s.live.encoder, GST_WHISPER_LIVE_ENCODER_BUFFERED);
  calls (&o, e, 3, 2.0);
  assert_overload (bus, "+greedy", 1);
  fail_unless_equals_int (o.level, 3);
  ladder_settings (&s, TRUE);
  gst_whisper_overload_apply (&o, &s, TRUE);
  fail_unless_equals_int (s.decoding.beam_size, 1);
  /* undone last taken first, and only what was taken */
  calls (&o, e, 12, 0.1);
  assert_overload (bus, "-greedy -buffered-encoder", 0);
  calls (&o, e, 6, 0.1);
  assert_overload (bus, "-one-window", 0);
  calls (&o, e, 12, 0.1);
  assert_overload (bus, "", 0);
  /* every step taken, then the translate_src pad goes: no-translation
   * gives nothing up, stays in effect and is undone in its turn, posted */
  gst_whisper_overload_reset (&o);
  ladder_settings (&s, TRUE);
  gst_whisper_overload_apply (&o, &s, TRUE);
  calls (&o, e, 15, 2.0);
  assert_overload (bus, "+one-window +greedy +buffered-encoder +short-context +no-translation",
      5);
  ladder_settings (&s, TRUE);
  gst_whisper_overload_apply (&o, &s, FALSE);
  fail_if (gst_whisper_overload_skips_translation (&o));
  /* nothing left to take: the pad's step is still in effect */
  calls (&o, e, 3, 2.0);
  assert_overload (bus, "", 0);
  calls (&o, e, 6, 0.1);
  assert_overload (bus, "-no-translation", 0);
  /* live-context lowered below 1 s with short-context in effect: the step
   * does not raise it */
  ladder_settings (&s, TRUE);
  s.live.context_s = 0.5;
  gst_whisper_overload_apply (&o, &s, FALSE);
  fail_unless (s.live.context_s == 0.5);
  calls (&o, e, 24, 0.1);
  assert_overload (bus, "-short-context -buffered-encoder -greedy -one-window", 0);
  fail_unless_equals_int (o.level, 0);
  gst_object_unref (bus);
  gst_object_unref (e);
}
GST_END_TEST;

static Suite *
whispersink_units_suite (void)
{
  Suite *s = suite_create ("whispersink-units");
  TCase *tc = tcase_create ("units");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_align);
  tcase_add_test (tc, test_window_timestamps_no_drift);
  tcase_add_test (tc, test_window_policy);
  tcase_add_test (tc, test_live_grid);
  tcase_add_test (tc, test_live_policy_keeps_up);
  tcase_add_test (tc, test_words);
  tcase_add_test (tc, test_call_times);
  tcase_add_test (tc, test_overload_ladder);
  tcase_add_test (tc, test_overload_budget);
  tcase_add_test (tc, test_overload_before_drop);
  tcase_add_test (tc, test_overload_late_text);
  tcase_add_test (tc, test_overload_call_over_budget);
  tcase_add_test (tc, test_overload_settings_change);
  return s;
}

GST_CHECK_MAIN (whispersink_units);
