/* element-fuzz.c: drives whispersink through GstHarness with random
 * sequences of buffers, events, state changes and property changes drawn
 * from a seed, and checks invariants as it goes (the project's issue 9).
 *
 * One case (an "iteration") is: the element (reused from the previous case
 * or new), the harness pads reset, 1..N random actions, optionally EOS and
 * the wait for it, then READY or NULL. Cases are deterministic functions of
 * (seed, case number); a case reuses the element of the cases before it up
 * to its chain's first case (a new element at least every CHAIN_MAX cases),
 * so `--seed S --case K` replays that chain and prints each action of K.
 * Threads make the timing differ between runs; the actions do not.
 *
 * Invariants (a violation prints the case, its actions and how to replay
 * it, then aborts):
 *  - no GLib/GStreamer WARNING or CRITICAL (a log writer aborts on them; the
 *    only ones let through are GStreamer's own complaints about data or
 *    sticky events out of order from upstream, which a case sometimes sends
 *    deliberately: on the harness's pads or the element's sink pad);
 *  - every text buffer has a valid PTS and a non-zero DURATION whose end
 *    does not overflow, PTS never goes back within a segment (after the
 *    end of the previous buffer or GAP), the text is non-empty valid UTF-8,
 *    and buffers come after CAPS and SEGMENT and not after EOS;
 *  - EOS accepted upstream while the element runs gives an EOS downstream
 *    (unless an error was posted or a flush or a state change intervened);
 *    a serialized barrier event comes out the same way;
 *  - no action takes longer than WATCHDOG_S (a hang);
 *  - sanitizer reports (the element and engine are compiled with
 *    -fsanitize=address,undefined into this program) and leaks (LeakSanitizer
 *    at exit, after every element is gone and gst_deinit ()).
 *
 * Usage: element-fuzz [--iterations N | --seconds S] [--seed S] [--case K]
 *                     [--model DIR] [--real-model DIR] [--real-share P] [--verbose]
 * Without --model a tiny random model (tools/make-random-model.py: d_model
 * 64, one layer, 150 encoder positions (3-s windows), 16 decoder positions)
 * is written into $WHISPER_BUILD_ROOT/tests/fuzz: a window costs a few ms,
 * so that 100,000 cases fit in an hour or two on two cores.
 */
#include <gst/gst.h>
#include <gst/audio/audio.h>
#include <gst/check/gstharness.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef SOURCE_ROOT
#define SOURCE_ROOT "."
#endif

GST_PLUGIN_STATIC_DECLARE (whisper);

#define CHAIN_MAX 32
#define MAX_ACTIONS 24
#define WATCHDOG_S 180
#define SR 16000

/* ------------------------------------------------------------------------ */
/* Actions */

typedef enum {
  ACT_STATE,
  ACT_PROPERTY,
  ACT_STREAM_START,
  ACT_CAPS,
  ACT_SEGMENT,
  ACT_BUFFER,
  ACT_GAP,
  ACT_FLUSH_START,
  ACT_FLUSH_STOP,
  ACT_EOS,
  ACT_CUSTOM,
  ACT_UPSTREAM,
  ACT_QUERY,
  ACT_BARRIER,
} ActionKind;

typedef enum {
  FILL_SILENCE, FILL_NOISE, FILL_SINE, FILL_LOUD, FILL_NAN, FILL_INF, FILL_HUGE,
  FILL_DENORMAL, FILL_MIXED, FILL_COUNT
} Fill;

static const char *const fill_names[FILL_COUNT] = {
  "silence", "noise", "sine", "loud", "nan", "inf", "huge", "denormal", "mixed"
};

typedef struct {
  ActionKind kind;
  gint i0, i1, i2, i3;
  guint64 t0, t1, t2;
  gdouble f0, f1;
  guint32 seed;
  const char *s0;
} Action;

/* Caps the fuzzer sends: index into this table. */
static const struct {
  const char *caps;
  gboolean s16;
  gint channels;
  gboolean valid;
} caps_table[] = {
  { "audio/x-raw, format=F32LE, rate=16000, channels=1, layout=interleaved", FALSE, 1, TRUE },
  { "audio/x-raw, format=S16LE, rate=16000, channels=1, layout=interleaved", TRUE, 1, TRUE },
  { "audio/x-raw, format=F32LE, rate=16000, channels=2, layout=interleaved", FALSE, 2, TRUE },
  { "audio/x-raw, format=S16LE, rate=16000, channels=2, layout=interleaved", TRUE, 2, TRUE },
  { "audio/x-raw, format=F32LE, rate=16000, channels=3, layout=interleaved, "
    "channel-mask=(bitmask)0x0", FALSE, 3, TRUE },
  { "audio/x-raw, format=S16LE, rate=16000, channels=64, layout=interleaved, "
    "channel-mask=(bitmask)0x0", TRUE, 64, TRUE },
  /* refused */
  { "audio/x-raw, format=F32LE, rate=44100, channels=1, layout=interleaved", FALSE, 1, FALSE },
  { "audio/x-raw, format=S24LE, rate=16000, channels=1, layout=interleaved", TRUE, 1, FALSE },
  { "audio/x-raw, format=F32LE, rate=16000, channels=65, layout=interleaved", FALSE, 65, FALSE },
  { "audio/x-raw, format=F32LE, rate=16000, channels=1, layout=non-interleaved", FALSE, 1, FALSE },
  { "text/x-raw, format=utf8", FALSE, 1, FALSE },
};
#define N_CAPS_VALID 6

static const struct {
  const char *name;
  const char *const values[8];
} property_table[] = {
  { "latency", { "2000", "3000", "4000", "8000", "30000", NULL } },
  { "lateness", { "0", "200", "5000", NULL } },
  { "output", { "segments", "words", NULL } },
  { "offline-mode", { "exact", "windowed", NULL } },
  { "no-speech-threshold", { "0.6", "-1", "0", "1", "0.3", NULL } },
  { "condition-on-previous-text", { "true", "false", NULL } },
  { "channel", { "-1", "0", "1", "2", "63", NULL } },
  { "language-code", { "en", "en-US", "english", "", "de", NULL } },
  { "silence-threshold", { "-60", "-150", "0", "-20", NULL } },
  { "strict-no-speech", { "true", "false", NULL } },
  { "vad-threshold", { "0.5", "0", "1", "0.9", NULL } },
  { "max-gap", { "0", "40", "1000", "60000", NULL } },
  /* engine properties last (gen_property) */
  { "vad-gate", { "true", "false", NULL } },
  { "encoder-context", { "0", "1", "25", "150", "1500", NULL } },
  { "threads", { "1", "2", NULL } },
  { "model", { NULL } },        /* the case's model, or a missing one */
};

/* ------------------------------------------------------------------------ */
/* Global run state */

typedef struct {
  guint32 seed;
  guint64 case_no;
  const char *model;          /* this chain's model */
  gboolean live;
  Action actions[MAX_ACTIONS + 2];
  guint n_actions;
  gint current;               /* action being run, -1 before, n after */
} Case;

static struct {
  guint32 seed;
  const char *model;
  const char *real_model;
  guint real_share;           /* 1 chain in real_share uses real_model (0: never) */
  gboolean verbose;
  Case cur;
  GString *report;            /* the current case's actions, ready to print */
  volatile gint64 action_started;   /* monotonic us, 0 when idle (read by the watchdog) */
  guint allowed_warnings;
  guint model_loads;          /* "load-model" progress messages (START) */
  gint64 time_in[ACT_BARRIER + 3];   /* us per action kind, then prepare and the end */
  gint upstream_misordered;   /* this case: upstream sent data or events out of order */
} fz;

static void describe_action (const Action *a, GString *out);

static void
print_case (void)
{
  if (!fz.report) {
    /* a leak found at exit: after the last case */
    fputs ("after the last case, at exit\n", stderr);
    fflush (stderr);
    return;
  }
  g_string_truncate (fz.report, 0);
  g_string_append_printf (fz.report, "seed %u case %" G_GUINT64_FORMAT " (model %s, %s)\n",
      fz.cur.seed, fz.cur.case_no, fz.cur.model, fz.cur.live ? "live" : "non-live");
  for (guint i = 0; i < fz.cur.n_actions; i++) {
    g_string_append_printf (fz.report, "  %s%2u ", (gint) i == fz.cur.current ? "->" : "  ", i);
    describe_action (&fz.cur.actions[i], fz.report);
    g_string_append_c (fz.report, '\n');
  }
  g_string_append_printf (fz.report, "replay: element-fuzz --seed %u --case %" G_GUINT64_FORMAT
      "%s%s\n", fz.cur.seed, fz.cur.case_no, fz.model ? " --model " : "",
      fz.model ? fz.model : "");
  fputs (fz.report->str, stderr);
  fflush (stderr);
}

static volatile gint printed;

static void G_GNUC_PRINTF (1, 2) G_GNUC_NORETURN
fuzz_fail (const char *format, ...)
{
  va_list args;
  gchar *msg;

  va_start (args, format);
  msg = g_strdup_vprintf (format, args);
  va_end (args);
  fprintf (stderr, "\nFUZZ FAILURE: %s\n", msg);
  if (g_atomic_int_compare_and_exchange (&printed, 0, 1))
    print_case ();
  abort ();
}

/* Called by the sanitizers before they exit with a report. */
void __sanitizer_set_death_callback (void (*callback) (void));


static void
on_sanitizer_death (void)
{
  if (g_atomic_int_compare_and_exchange (&printed, 0, 1)) {
    fprintf (stderr, "\nFUZZ FAILURE: sanitizer report or signal above\n");
    print_case ();
  }
}

/* abort () from anywhere else (g_error, a failed g_assert, UBSan with
 * abort_on_error): the case too. */
static void
on_fatal_signal (int sig)
{
  on_sanitizer_death ();
  signal (sig, SIG_DFL);
  raise (sig);
}

/* Aborts on every WARNING and CRITICAL, except GStreamer's complaints about
 * the order of what upstream (the fuzzer) sends, on the harness's pads or
 * the element's sink pad; the same on the element's src pad is the
 * element's fault. */
static GLogWriterOutput
log_writer (GLogLevelFlags level, const GLogField *fields, gsize n_fields, gpointer user_data)
{
  const char *domain = NULL, *message = NULL;

  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING)) {
    for (gsize i = 0; i < n_fields; i++) {
      if (g_str_equal (fields[i].key, "GLIB_DOMAIN"))
        domain = fields[i].value;
      else if (g_str_equal (fields[i].key, "MESSAGE"))
        message = fields[i].value;
    }
    if (!(level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL)) && domain && message
        && g_str_equal (domain, "GStreamer")
        && (strstr (message, "Sticky event misordering")
            || strstr (message, "Got data flow before"))) {
      gboolean on_src = strstr (message, "<whispersink") && strstr (message, ":src>");
      /* Passed on from upstream: only after upstream did it in this case. */
      if (!on_src || g_atomic_int_get (&fz.upstream_misordered)) {
        g_atomic_int_set (&fz.upstream_misordered, TRUE);
        g_atomic_int_inc (&fz.allowed_warnings);
        return G_LOG_WRITER_HANDLED;
      }
    }
    g_log_writer_default (level, fields, n_fields, user_data);
    fuzz_fail ("%s-%s: %s", domain ? domain : "?",
        (level & G_LOG_LEVEL_WARNING) ? "WARNING" : "CRITICAL", message ? message : "?");
  }
  return g_log_writer_default (level, fields, n_fields, user_data);
}

static gpointer
watchdog_thread (gpointer data)
{
  (void) data;
  for (;;) {
    gint64 started = fz.action_started;
    g_usleep (G_USEC_PER_SEC);
    if (started && fz.action_started == started
        && g_get_monotonic_time () - started > (gint64) WATCHDOG_S * G_USEC_PER_SEC)
      fuzz_fail ("an action has not returned after %d s (hang)", WATCHDOG_S);
  }
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Downstream observer: a probe on the harness's sink pad (the element's
 * src pad task thread, or the streaming thread for FLUSH events). */

typedef struct {
  GMutex lock;
  GCond cond;
  gboolean have_caps, have_segment, after_eos;
  GstClockTime pos;           /* end of the last buffer or GAP in this segment */
  guint eos_out;
  guint barriers_out;
  guint64 buffers_out, gaps_out;
  guint errors;               /* ERROR messages posted */
} Observer;

static Observer obs;

static void
check_text_buffer (GstBuffer *buf)
{
  GstClockTime pts = GST_BUFFER_PTS (buf), dur = GST_BUFFER_DURATION (buf);
  GstMapInfo map;

  if ((!obs.have_caps || !obs.have_segment) && !g_atomic_int_get (&fz.upstream_misordered))
    fuzz_fail ("text buffer before %s", obs.have_caps ? "SEGMENT" : "CAPS");
  if (obs.after_eos)
    fuzz_fail ("text buffer after EOS");
  if (!GST_CLOCK_TIME_IS_VALID (pts) || !GST_CLOCK_TIME_IS_VALID (dur) || dur == 0)
    fuzz_fail ("text buffer PTS %" GST_TIME_FORMAT " DURATION %" GST_TIME_FORMAT,
        GST_TIME_ARGS (pts), GST_TIME_ARGS (dur));
  if (pts > G_MAXUINT64 - 1 - dur)
    fuzz_fail ("text buffer end overflows: PTS %" G_GUINT64_FORMAT " + DURATION %"
        G_GUINT64_FORMAT, pts, dur);
  if (GST_CLOCK_TIME_IS_VALID (obs.pos) && pts < obs.pos)
    fuzz_fail ("text buffer PTS %" GST_TIME_FORMAT " before the end of the previous "
        "output %" GST_TIME_FORMAT, GST_TIME_ARGS (pts), GST_TIME_ARGS (obs.pos));
  obs.pos = pts + dur;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    fuzz_fail ("cannot map a text buffer");
  if (map.size == 0 || !g_utf8_validate ((const gchar *) map.data, map.size, NULL)
      || memchr (map.data, '\0', map.size))
    fuzz_fail ("text buffer of %" G_GSIZE_FORMAT " bytes is not non-empty UTF-8 without NUL",
        map.size);
  gst_buffer_unmap (buf, &map);
  obs.buffers_out++;
}

static void
check_event (GstEvent *ev)
{
  switch (GST_EVENT_TYPE (ev)) {
    case GST_EVENT_STREAM_START:
      obs.after_eos = FALSE;
      break;
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gst_event_parse_caps (ev, &caps);
      if (!gst_caps_is_fixed (caps))
        fuzz_fail ("src caps not fixed");
      obs.have_caps = TRUE;
      break;
    }
    case GST_EVENT_SEGMENT:{
      const GstSegment *seg;
      gst_event_parse_segment (ev, &seg);
      if (seg->format != GST_FORMAT_TIME)
        fuzz_fail ("output segment in %s", gst_format_get_name (seg->format));
      if (obs.after_eos)
        fuzz_fail ("SEGMENT after EOS without STREAM_START or FLUSH_STOP");
      obs.have_segment = TRUE;
      obs.pos = GST_CLOCK_TIME_NONE;
      break;
    }
    case GST_EVENT_GAP:{
      GstClockTime ts, dur;
      gst_event_parse_gap (ev, &ts, &dur);
      if (obs.after_eos)
        fuzz_fail ("GAP after EOS");
      if (GST_CLOCK_TIME_IS_VALID (dur) && dur > 0) {
        if (ts > G_MAXUINT64 - 1 - dur)
          fuzz_fail ("GAP end overflows: %" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT, ts, dur);
        if (GST_CLOCK_TIME_IS_VALID (obs.pos) && ts < obs.pos)
          fuzz_fail ("GAP at %" GST_TIME_FORMAT " before the end of the previous output %"
              GST_TIME_FORMAT, GST_TIME_ARGS (ts), GST_TIME_ARGS (obs.pos));
        obs.pos = ts + dur;
      }
      obs.gaps_out++;
      break;
    }
    case GST_EVENT_FLUSH_STOP:
      obs.after_eos = FALSE;
      obs.have_segment = FALSE;   /* FLUSH_STOP removes the sticky SEGMENT */
      obs.pos = GST_CLOCK_TIME_NONE;
      break;
    case GST_EVENT_EOS:
      obs.after_eos = TRUE;
      obs.eos_out++;
      break;
    case GST_EVENT_CUSTOM_DOWNSTREAM:
      if (gst_event_has_name (ev, "fuzz-barrier"))
        obs.barriers_out++;
      break;
    default:
      break;
  }
}

static GstPadProbeReturn
observe (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  (void) pad;
  (void) user_data;
  g_mutex_lock (&obs.lock);
  if (info->type & GST_PAD_PROBE_TYPE_BUFFER)
    check_text_buffer (GST_PAD_PROBE_INFO_BUFFER (info));
  else if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST)
    fuzz_fail ("buffer list downstream");
  else if (info->type & GST_PAD_PROBE_TYPE_EVENT_BOTH)
    check_event (GST_PAD_PROBE_INFO_EVENT (info));
  g_cond_broadcast (&obs.cond);
  g_mutex_unlock (&obs.lock);
  return GST_PAD_PROBE_OK;
}

static void
observer_reset (void)
{
  g_mutex_lock (&obs.lock);
  obs.have_caps = obs.have_segment = obs.after_eos = FALSE;
  obs.pos = GST_CLOCK_TIME_NONE;
  obs.eos_out = obs.barriers_out = 0;
  obs.errors = 0;
  g_mutex_unlock (&obs.lock);
}

static GstBusSyncReply
on_bus_message (GstBus *bus, GstMessage *msg, gpointer user_data)
{
  (void) bus;
  (void) user_data;
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_PROGRESS) {
    GstProgressType type;
    gst_message_parse_progress (msg, &type, NULL, NULL);
    if (type == GST_PROGRESS_TYPE_START)
      g_atomic_int_inc (&fz.model_loads);
  } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    g_mutex_lock (&obs.lock);
    obs.errors++;
    g_mutex_unlock (&obs.lock);
  } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT
      && gst_message_has_name (msg, "whisper-text")) {
    const GstStructure *s = gst_message_get_structure (msg);
    const gchar *text = gst_structure_get_string (s, "text");
    if (text == NULL || !g_utf8_validate (text, -1, NULL))
      fuzz_fail ("whisper-text message without valid UTF-8 text");
  }
  return GST_BUS_DROP;
}

/* Waits until `*counter` reaches `target`; FALSE if an error was posted
 * meanwhile (the element pauses its tasks then). */
static gboolean
wait_for (guint *counter, guint target, guint errors_before, const char *what)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) (WATCHDOG_S - 10) * G_USEC_PER_SEC;
  gboolean ok = TRUE;

  g_mutex_lock (&obs.lock);
  while (*counter < target) {
    if (obs.errors != errors_before) {
      ok = FALSE;
      break;
    }
    if (!g_cond_wait_until (&obs.cond, &obs.lock, deadline)) {
      g_mutex_unlock (&obs.lock);
      fuzz_fail ("%s did not come out within %d s", what, WATCHDOG_S - 10);
    }
  }
  g_mutex_unlock (&obs.lock);
  return ok;
}

/* ------------------------------------------------------------------------ */
/* Generation */

static gint
rnd (GRand *r, gint lo, gint hi)
{
  return g_rand_int_range (r, lo, hi + 1);
}

static gboolean
chance (GRand *r, double p)
{
  return g_rand_double (r) < p;
}

/* What the generator believes upstream has sent. */
typedef struct {
  gboolean stream_started, caps_valid, segment, eos, flushing;
  gint caps;
  GstClockTime next_pts;
  GstState state;
} UpstreamModel;

static GstClockTime
random_time (GRand *r, GstClockTime near)
{
  switch (rnd (r, 0, 9)) {
    case 0:
      return 0;
    case 1:
      return (GstClockTime) rnd (r, 0, 3600) * GST_SECOND;
    case 2:
      return G_MAXINT64 - (GstClockTime) rnd (r, 0, 1000) * GST_SECOND;
    case 3:
      return G_MAXUINT64 - 1 - (GstClockTime) rnd (r, 0, 100) * GST_SECOND;
    case 4:
      return near > GST_SECOND ? near - (GstClockTime) rnd (r, 1, 1000) * GST_MSECOND : 0;
    default:
      return near + (GstClockTime) rnd (r, 0, 5000) * GST_MSECOND;
  }
}

static void
gen_buffer (GRand *r, UpstreamModel *m, Action *a)
{
  gint caps = m->caps;
  static const gint sizes[] = { 0, 1, 7, 160, 1023, 1600, 4000, 8000, 16000, 32000, 48000 };
  GstClockTime dur;

  a->kind = ACT_BUFFER;
  if (chance (r, 0.05))
    caps = rnd (r, 0, N_CAPS_VALID - 1);   /* data that does not match the caps */
  a->i0 = caps;
  /* Mostly short buffers (as capture and decoders give), some of seconds. */
  if (chance (r, 0.6))
    a->i1 = sizes[rnd (r, 0, 6)];
  else
    a->i1 = chance (r, 0.5) ? rnd (r, 0, 48000) : sizes[rnd (r, 0, G_N_ELEMENTS (sizes) - 1)];
  if (caps_table[caps].channels > 2)
    a->i1 /= caps_table[caps].channels;   /* frames: keep the bytes bounded */
  a->i2 = chance (r, 0.1) ? rnd (r, 1, 3) : 0;        /* extra odd bytes */
  a->i3 = (chance (r, 0.1) ? 1 : 0) | (chance (r, 0.1) ? 2 : 0);   /* DISCONT, unaligned */
  a->f0 = rnd (r, 0, FILL_COUNT - 1);
  if (chance (r, 0.5))
    a->f0 = chance (r, 0.6) ? FILL_NOISE : FILL_SINE;
  a->seed = g_rand_int (r);
  dur = gst_util_uint64_scale_int (a->i1, GST_SECOND, SR);

  switch (rnd (r, 0, 15)) {
    case 0:
      a->t0 = GST_CLOCK_TIME_NONE;
      break;
    case 1:
      a->t0 = m->next_pts + (GstClockTime) rnd (r, 1, 60000) * GST_MSECOND;   /* jump */
      break;
    case 2:
      a->t0 = m->next_pts > GST_SECOND ? m->next_pts - GST_SECOND : 0;       /* back */
      break;
    case 3:
      a->t0 = m->next_pts > 0 ? m->next_pts - rnd (r, 1, 30) * GST_MSECOND / 10 : 0;
      break;
    case 4:
      a->t0 = random_time (r, m->next_pts);
      break;
    default:
      a->t0 = GST_CLOCK_TIME_IS_VALID (m->next_pts) ? m->next_pts : 0;
      break;
  }
  a->t1 = chance (r, 0.8) ? dur : chance (r, 0.5) ? GST_CLOCK_TIME_NONE
      : (GstClockTime) rnd (r, 0, 10) * GST_SECOND;
  if (GST_CLOCK_TIME_IS_VALID (a->t0) && a->t0 <= G_MAXUINT64 - 1 - dur)
    m->next_pts = a->t0 + dur;
}

static void
gen_segment (GRand *r, UpstreamModel *m, Action *a)
{
  static const gdouble rates[] = { 1.0, 1.0, 1.0, 1.0, 2.0, 0.5, -1.0, 1e-3 };

  a->kind = ACT_SEGMENT;
  a->i0 = chance (r, 0.05) ? rnd (r, 1, 3) : 0;   /* 0 TIME, else BYTES/DEFAULT/BUFFERS */
  a->t0 = chance (r, 0.6) ? 0 : random_time (r, m->next_pts);     /* start */
  if (a->t0 >= G_MAXUINT64 - 1)
    a->t0 = G_MAXUINT64 - 2;
  a->t1 = chance (r, 0.7) ? GST_CLOCK_TIME_NONE
      : a->t0 + MIN ((GstClockTime) rnd (r, 0, 120) * GST_SECOND, G_MAXUINT64 - 2 - a->t0);
  a->t2 = chance (r, 0.8) ? 0 : (GstClockTime) rnd (r, 0, 100) * GST_SECOND;   /* base */
  a->f0 = rates[rnd (r, 0, G_N_ELEMENTS (rates) - 1)];
  a->f1 = chance (r, 0.9) ? 1.0 : 2.0;          /* applied rate */
  if (a->i0 == 0 && chance (r, 0.8))
    m->next_pts = a->t0;
}

static void
gen_property (GRand *r, Action *a)
{
  /* The engine properties (vad-gate, encoder-context, threads, model: the
   * last four) reload the model when changed in READY: one draw in six. */
  const guint n_engine = 4, n_all = G_N_ELEMENTS (property_table);
  guint p = chance (r, 1.0 / 6) ? rnd (r, n_all - n_engine, n_all - 1)
      : rnd (r, 0, n_all - n_engine - 1);
  guint n = 0;

  a->kind = ACT_PROPERTY;
  a->i0 = p;
  if (p == G_N_ELEMENTS (property_table) - 1) {       /* model */
    a->i1 = chance (r, 0.9) ? 0 : 1;
    return;
  }
  while (property_table[p].values[n])
    n++;
  a->i1 = rnd (r, 0, n - 1);
  /* rare: the unsupported language (fails the next NULL->READY) */
  if (g_str_equal (property_table[p].name, "language-code") && a->i1 == 4 && chance (r, 0.7))
    a->i1 = 0;
}

static GstState
gen_state (GRand *r)
{
  gint x = rnd (r, 0, 99);

  if (x < 40)
    return GST_STATE_PLAYING;
  if (x < 70)
    return GST_STATE_PAUSED;
  if (x < 95)
    return GST_STATE_READY;
  return GST_STATE_NULL;
}

/* A well-behaved start: PLAYING, stream-start, caps, segment. */
static void
gen_case (Case *c, GRand *r)
{
  UpstreamModel m = { 0, };
  guint n = rnd (r, 1, MAX_ACTIONS);
  gboolean orderly = chance (r, 0.9);
  Action *a;

  memset (c->actions, 0, sizeof c->actions);
  c->n_actions = 0;
  c->live = chance (r, 0.3);
  m.state = GST_STATE_READY;
  m.caps = 0;

  if (chance (r, 0.9)) {
    a = &c->actions[c->n_actions++];
    a->kind = ACT_STATE;
    a->i0 = chance (r, 0.8) ? GST_STATE_PLAYING : GST_STATE_PAUSED;
    m.state = a->i0;
    if (orderly) {
      a = &c->actions[c->n_actions++];
      a->kind = ACT_STREAM_START;
      a = &c->actions[c->n_actions++];
      a->kind = ACT_CAPS;
      a->i0 = chance (r, 0.7) ? 0 : rnd (r, 0, N_CAPS_VALID - 1);
      m.caps = a->i0;
      gen_segment (r, &m, &c->actions[c->n_actions++]);
      c->actions[c->n_actions - 1].i0 = 0;
    }
  }

  while (c->n_actions < n) {
    gint x = rnd (r, 0, 99);
    a = &c->actions[c->n_actions++];
    if (x < 45) {
      gen_buffer (r, &m, a);
    } else if (x < 52) {
      a->kind = ACT_STATE;
      a->i0 = gen_state (r);
    } else if (x < 60) {
      gen_property (r, a);
    } else if (x < 64) {
      a->kind = ACT_STREAM_START;
    } else if (x < 68) {
      a->kind = ACT_CAPS;
      a->i0 = chance (r, 0.75) ? rnd (r, 0, N_CAPS_VALID - 1)
          : rnd (r, N_CAPS_VALID, G_N_ELEMENTS (caps_table) - 1);
      if (a->i0 < N_CAPS_VALID)
        m.caps = a->i0;
    } else if (x < 73) {
      gen_segment (r, &m, a);
    } else if (x < 77) {
      a->kind = ACT_GAP;
      a->t0 = random_time (r, m.next_pts);
      if (a->t0 == GST_CLOCK_TIME_NONE)
        a->t0 = 0;
      a->t1 = chance (r, 0.2) ? GST_CLOCK_TIME_NONE : (GstClockTime) rnd (r, 0, 5000) * GST_MSECOND;
    } else if (x < 81) {
      a->kind = ACT_FLUSH_START;
      if (chance (r, 0.8) && c->n_actions < MAX_ACTIONS) {
        a = &c->actions[c->n_actions++];
        a->kind = ACT_FLUSH_STOP;
        a->i0 = chance (r, 0.5);
      }
    } else if (x < 83) {
      a->kind = ACT_FLUSH_STOP;
      a->i0 = chance (r, 0.5);
    } else if (x < 87) {
      a->kind = ACT_EOS;
    } else if (x < 91) {
      a->kind = ACT_CUSTOM;
      a->i0 = rnd (r, 0, 3);
    } else if (x < 93) {
      a->kind = ACT_UPSTREAM;
      a->i0 = rnd (r, 0, 2);
    } else if (x < 96) {
      a->kind = ACT_QUERY;
      a->i0 = rnd (r, 0, 3);
    } else {
      a->kind = ACT_BARRIER;
    }
  }

  /* The end: EOS and the wait for it, most of the time. */
  if (chance (r, 0.6)) {
    a = &c->actions[c->n_actions++];
    a->kind = ACT_EOS;
    a->i0 = 1;                  /* the closing one */
  }
}

static void
describe_action (const Action *a, GString *out)
{
  switch (a->kind) {
    case ACT_STATE:
      g_string_append_printf (out, "state %s", gst_element_state_get_name (a->i0));
      break;
    case ACT_PROPERTY:
      if (g_str_equal (property_table[a->i0].name, "model"))
        g_string_append_printf (out, "set model=%s", a->i1 ? "/nonexistent" : "(the case's)");
      else
        g_string_append_printf (out, "set %s=%s", property_table[a->i0].name,
            property_table[a->i0].values[a->i1]);
      break;
    case ACT_STREAM_START:
      g_string_append (out, "stream-start");
      break;
    case ACT_CAPS:
      g_string_append_printf (out, "caps %s", caps_table[a->i0].caps);
      break;
    case ACT_SEGMENT:
      g_string_append_printf (out, "segment %s start %" G_GUINT64_FORMAT " stop %"
          G_GUINT64_FORMAT " base %" G_GUINT64_FORMAT " rate %g applied %g",
          a->i0 == 0 ? "time" : a->i0 == 1 ? "bytes" : a->i0 == 2 ? "default" : "buffers",
          a->t0, a->t1, a->t2, a->f0, a->f1);
      break;
    case ACT_BUFFER:
      g_string_append_printf (out, "buffer %s x%d %d frames +%d bytes %s pts %"
          G_GUINT64_FORMAT " dur %" G_GUINT64_FORMAT "%s%s seed %u",
          caps_table[a->i0].s16 ? "S16" : "F32", caps_table[a->i0].channels, a->i1, a->i2,
          fill_names[(gint) a->f0], a->t0, a->t1, (a->i3 & 1) ? " DISCONT" : "",
          (a->i3 & 2) ? " unaligned" : "", a->seed);
      break;
    case ACT_GAP:
      g_string_append_printf (out, "gap %" G_GUINT64_FORMAT " dur %" G_GUINT64_FORMAT,
          a->t0, a->t1);
      break;
    case ACT_FLUSH_START:
      g_string_append (out, "flush-start");
      break;
    case ACT_FLUSH_STOP:
      g_string_append_printf (out, "flush-stop reset-time=%d", a->i0);
      break;
    case ACT_EOS:
      g_string_append (out, a->i0 ? "eos (closing: wait for it)" : "eos");
      break;
    case ACT_CUSTOM:
      g_string_append_printf (out, "custom event %s", (const char *[]) {
            "downstream", "downstream-oob", "downstream-sticky", "tag" }[a->i0]);
      break;
    case ACT_UPSTREAM:
      g_string_append_printf (out, "upstream event %s", (const char *[]) {
            "reconfigure", "seek", "latency" }[a->i0]);
      break;
    case ACT_QUERY:
      g_string_append_printf (out, "query %s", (const char *[]) {
            "latency", "position", "caps", "stats property" }[a->i0]);
      break;
    case ACT_BARRIER:
      g_string_append (out, "barrier (serialized event; wait for it)");
      break;
  }
}

/* ------------------------------------------------------------------------ */
/* Execution */

static float
fill_value (Fill fill, GRand *r, gsize i)
{
  switch (fill) {
    case FILL_SILENCE:
      return 0.0f;
    case FILL_NOISE:
      return (float) g_rand_double_range (r, -0.5, 0.5);
    case FILL_SINE:
      return 0.5f * sinf (2.0f * (float) G_PI * 440.0f * (float) i / SR);
    case FILL_LOUD:
      return (float) g_rand_double_range (r, -1000.0, 1000.0);
    case FILL_NAN:
      return g_rand_int_range (r, 0, 50) == 0 ? NAN : (float) g_rand_double_range (r, -0.5, 0.5);
    case FILL_INF:
      return g_rand_boolean (r) ? INFINITY : -INFINITY;
    case FILL_HUGE:
      return g_rand_boolean (r) ? 3.0e38f : -3.0e38f;
    case FILL_DENORMAL:
      return (float) g_rand_double_range (r, -1.0, 1.0) * 1e-40f;
    case FILL_MIXED:
    default:
      return fill_value ((Fill) g_rand_int_range (r, 0, FILL_MIXED), r, i);
  }
}

static GstBuffer *
make_buffer (const Action *a)
{
  const gboolean s16 = caps_table[a->i0].s16;
  const gint ch = caps_table[a->i0].channels;
  const gsize n = (gsize) a->i1 * ch;
  const gsize bytes = n * (s16 ? 2 : 4) + a->i2;
  const gsize offset = (a->i3 & 2) ? 1 : 0;
  GRand *r = g_rand_new_with_seed (a->seed);
  GstBuffer *buf = gst_buffer_new_allocate (NULL, bytes + offset, NULL);
  GstMapInfo map;

  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (gsize i = 0; i < n; i++) {
    float v = fill_value ((Fill) a->f0, r, i / ch);
    if (s16) {
      gint16 x = (gint16) CLAMP (isfinite (v) ? v * 32767.0f : 0.0f, -32768.0f, 32767.0f);
      if ((Fill) a->f0 == FILL_HUGE || (Fill) a->f0 == FILL_INF)
        x = g_rand_boolean (r) ? G_MAXINT16 : G_MININT16;
      x = GINT16_TO_LE (x);
      memcpy (map.data + offset + 2 * i, &x, 2);   /* may be unaligned */
    } else {
      guint32 bits;
      memcpy (&bits, &v, 4);
      bits = GUINT32_TO_LE (bits);
      memcpy (map.data + offset + 4 * i, &bits, 4);
    }
  }
  for (gsize i = 0; i < (gsize) a->i2; i++)
    map.data[offset + n * (s16 ? 2 : 4) + i] = (guint8) g_rand_int (r);
  gst_buffer_unmap (buf, &map);
  if (offset)
    gst_buffer_resize (buf, offset, bytes);
  g_rand_free (r);

  GST_BUFFER_PTS (buf) = a->t0;
  GST_BUFFER_DURATION (buf) = a->t1;
  if (a->i3 & 1)
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
  return buf;
}

typedef struct {
  GstHarness *h;
  GstBus *bus;
  gboolean model_failed;    /* the last NULL->READY failed */
} Element;

/* Whether the element runs: its pads are active and its tasks started. */
static gboolean
element_running (Element *e)
{
  return GST_STATE (e->h->element) >= GST_STATE_PAUSED;
}

/* Flush or state change: what the element still owes downstream is void. */
typedef struct {
  guint eos_in;           /* closing EOS accepted since the last reset */
  guint eos_base;         /* obs.eos_out when counting started */
  guint errors_base;
  /* the element accepted a SEGMENT since its pads were last activated or
   * flushed: without one, downstream refuses serialized events (the
   * barrier, EOS) as misordered, whatever the element does; the same
   * without accepted CAPS (its text caps follow the audio caps) */
  gboolean segment_in, caps_in;
} Expect;

static void
expect_reset (Expect *x)
{
  g_mutex_lock (&obs.lock);
  x->eos_in = 0;
  x->eos_base = obs.eos_out;
  x->errors_base = obs.errors;
  g_mutex_unlock (&obs.lock);
}

static void
run_action (Case *c, Element *e, const Action *a, Expect *x, guint *barrier_seq)
{
  GstHarness *h = e->h;
  GstElement *el = h->element;

  switch (a->kind) {
    case ACT_STATE:{
      GstStateChangeReturn ret = gst_element_set_state (el, a->i0);
      if (ret == GST_STATE_CHANGE_ASYNC)
        fuzz_fail ("state change to %s returned ASYNC", gst_element_state_get_name (a->i0));
      if (ret == GST_STATE_CHANGE_FAILURE && GST_STATE (el) < GST_STATE_READY && a->i0 > GST_STATE_NULL)
        e->model_failed = TRUE;
      if (ret == GST_STATE_CHANGE_FAILURE)
        gst_element_set_state (el, GST_STATE_NULL);   /* as an application would */
      /* READY and NULL deactivate the pads: their sticky events are gone. */
      if (GST_STATE (el) <= GST_STATE_READY) {
        observer_reset ();
        x->segment_in = x->caps_in = FALSE;
      }
      expect_reset (x);
      break;
    }
    case ACT_PROPERTY:{
      const char *name = property_table[a->i0].name;
      if (g_str_equal (name, "model"))
        g_object_set (el, "model", a->i1 ? "/nonexistent/model" : c->model, NULL);
      else
        gst_util_set_object_arg (G_OBJECT (el), name, property_table[a->i0].values[a->i1]);
      break;
    }
    case ACT_STREAM_START:{
      gchar *id = g_strdup_printf ("fuzz-%u-%" G_GUINT64_FORMAT, c->seed, c->case_no);
      gst_harness_push_event (h, gst_event_new_stream_start (id));
      g_free (id);
      break;
    }
    case ACT_CAPS:{
      GstCaps *caps = gst_caps_from_string (caps_table[a->i0].caps);
      if (gst_harness_push_event (h, gst_event_new_caps (caps)))
        x->caps_in = TRUE;
      gst_caps_unref (caps);
      break;
    }
    case ACT_SEGMENT:{
      GstSegment seg;
      static const GstFormat formats[] = { GST_FORMAT_TIME, GST_FORMAT_BYTES,
        GST_FORMAT_DEFAULT, GST_FORMAT_BUFFERS };
      gst_segment_init (&seg, formats[a->i0]);
      seg.start = a->t0;
      seg.stop = a->t1;
      seg.time = a->t0;
      seg.position = a->t0;
      seg.base = a->t2;
      seg.rate = a->f0;
      seg.applied_rate = a->f1;
      x->segment_in = gst_harness_push_event (h, gst_event_new_segment (&seg));
      break;
    }
    case ACT_BUFFER:
      gst_harness_push (h, make_buffer (a));
      break;
    case ACT_GAP:
      gst_harness_push_event (h, gst_event_new_gap (a->t0, a->t1));
      break;
    case ACT_FLUSH_START:
      gst_harness_push_event (h, gst_event_new_flush_start ());
      expect_reset (x);
      break;
    case ACT_FLUSH_STOP:
      gst_harness_push_event (h, gst_event_new_flush_stop (a->i0));
      x->segment_in = FALSE;
      expect_reset (x);
      break;
    case ACT_EOS:{
      gboolean running = element_running (e);
      gboolean accepted = gst_harness_push_event (h, gst_event_new_eos ());
      if (accepted && running && x->segment_in && x->caps_in) {
        x->eos_in++;
        if (a->i0 && !wait_for (&obs.eos_out, x->eos_base + x->eos_in, x->errors_base, "EOS"))
          expect_reset (x);
      }
      break;
    }
    case ACT_CUSTOM:{
      static const GstEventType types[] = { GST_EVENT_CUSTOM_DOWNSTREAM,
        GST_EVENT_CUSTOM_DOWNSTREAM_OOB, GST_EVENT_CUSTOM_DOWNSTREAM_STICKY };
      if (a->i0 < 3) {
        gst_harness_push_event (h, gst_event_new_custom (types[a->i0],
                gst_structure_new ("fuzz-custom", "n", G_TYPE_INT, a->i0, NULL)));
      } else {
        GstTagList *tags = gst_tag_list_new (GST_TAG_TITLE, "fuzz", NULL);
        gst_harness_push_event (h, gst_event_new_tag (tags));
      }
      break;
    }
    case ACT_UPSTREAM:{
      GstEvent *ev;
      if (a->i0 == 0)
        ev = gst_event_new_reconfigure ();
      else if (a->i0 == 1)
        ev = gst_event_new_seek (1.0, GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH, GST_SEEK_TYPE_SET,
            0, GST_SEEK_TYPE_NONE, GST_CLOCK_TIME_NONE);
      else
        ev = gst_event_new_latency (GST_SECOND);
      gst_harness_push_upstream_event (h, ev);
      break;
    }
    case ACT_QUERY:
      if (a->i0 == 0) {
        (void) gst_harness_query_latency (h);
      } else if (a->i0 == 1) {
        gint64 pos;
        (void) gst_element_query_position (el, GST_FORMAT_TIME, &pos);
      } else if (a->i0 == 2) {
        GstCaps *caps = gst_pad_peer_query_caps (h->srcpad, NULL);
        gst_caps_unref (caps);
      } else {
        GstStructure *s = NULL;
        guint delay;
        gint frames;
        g_object_get (el, "stats", &s, "max-observed-delay", &delay,
            "max-encoder-length", &frames, NULL);
        if (s == NULL || !gst_structure_has_field (s, "audio-received"))
          fuzz_fail ("stats property without audio-received");
        gst_structure_free (s);
      }
      break;
    case ACT_BARRIER:{
      gboolean running = element_running (e);
      guint target;
      g_mutex_lock (&obs.lock);
      target = obs.barriers_out + 1;
      g_mutex_unlock (&obs.lock);
      (*barrier_seq)++;
      if (gst_harness_push_event (h, gst_event_new_custom (GST_EVENT_CUSTOM_DOWNSTREAM,
                  gst_structure_new ("fuzz-barrier", "seq", G_TYPE_UINT, *barrier_seq,
                      NULL))) && running && x->segment_in && x->caps_in)
        wait_for (&obs.barriers_out, target, x->errors_base, "a barrier event");
      break;
    }
  }
}

static Element *
element_new (const char *model)
{
  Element *e = g_new0 (Element, 1);
  GstElement *el = gst_element_factory_make ("whispersink", NULL);

  if (el == NULL)
    fuzz_fail ("no whispersink element (static plugin not registered?)");
  g_object_set (el, "model", model, "device", 1 /* cpu */, "threads", 1, NULL);
  e->bus = gst_bus_new ();
  gst_bus_set_sync_handler (e->bus, on_bus_message, NULL, NULL);
  gst_element_set_bus (el, e->bus);
  e->h = gst_harness_new_with_element (el, "sink", "src");
  gst_object_unref (el);
  gst_harness_set_drop_buffers (e->h, TRUE);
  gst_pad_add_probe (e->h->sinkpad, GST_PAD_PROBE_TYPE_DATA_DOWNSTREAM
      | GST_PAD_PROBE_TYPE_EVENT_FLUSH, observe, NULL, NULL);
  /* The harness plays the element; a case starts in READY. */
  gst_element_set_state (el, GST_STATE_READY);
  return e;
}

static void
element_free (Element *e)
{
  gst_harness_teardown (e->h);
  gst_object_unref (e->bus);
  g_free (e);
}

static void
drain_harness (GstHarness *h)
{
  GstEvent *ev;
  GstBuffer *buf;

  while ((buf = gst_harness_try_pull (h)))
    gst_buffer_unref (buf);
  while ((ev = gst_harness_try_pull_event (h)))
    gst_event_unref (ev);
  while ((ev = gst_harness_try_pull_upstream_event (h)))
    gst_event_unref (ev);
}

/* Properties back to the defaults a new element has, the engine ones only
 * where they differ (setting one marks the engine for a reload). */
static void
element_prepare (Element *e, const char *model, gboolean live)
{
  GstElement *el = e->h->element;
  gchar *cur_model = NULL;
  gint threads, ctx;

  if (GST_STATE (el) > GST_STATE_READY)
    gst_element_set_state (el, GST_STATE_READY);
  g_object_set (el, "latency", 8000, "lateness", 0, "no-speech-threshold", 0.6,
      "condition-on-previous-text", TRUE, "channel", -1, "language-code", "en-US", NULL);
  gst_util_set_object_arg (G_OBJECT (el), "output", "segments");
  gst_util_set_object_arg (G_OBJECT (el), "offline-mode", "exact");
  g_object_get (el, "model", &cur_model, "threads", &threads, "encoder-context", &ctx, NULL);
  if (g_strcmp0 (cur_model, model) != 0)
    g_object_set (el, "model", model, NULL);
  if (threads != 1)
    g_object_set (el, "threads", 1, NULL);
  if (ctx != 0)
    g_object_set (el, "encoder-context", 0, NULL);
  g_free (cur_model);
  if (GST_STATE (el) == GST_STATE_NULL
      && gst_element_set_state (el, GST_STATE_READY) == GST_STATE_CHANGE_FAILURE)
    fuzz_fail ("the model %s does not load", model);

  /* Pads: no sticky events, no EOS or flushing flag left from before. */
  gst_pad_set_active (e->h->srcpad, FALSE);
  gst_pad_set_active (e->h->srcpad, TRUE);
  gst_pad_set_active (e->h->sinkpad, FALSE);
  gst_pad_set_active (e->h->sinkpad, TRUE);
  drain_harness (e->h);
  gst_harness_set_live (e->h, live);
  observer_reset ();
  g_atomic_int_set (&fz.upstream_misordered, FALSE);
}

/* The chain a case belongs to starts at the last case that wants a new
 * element. */
static gboolean
case_is_fresh (guint32 seed, guint64 k)
{
  guint32 key[3] = { seed, (guint32) k, (guint32) (k >> 32) ^ 0x5eed };
  GRand *r;
  gboolean fresh;

  if (k % CHAIN_MAX == 0)
    return TRUE;
  r = g_rand_new_with_seed_array (key, 3);
  fresh = g_rand_double (r) < 0.05;
  g_rand_free (r);
  return fresh;
}

/* One chain in real_share, drawn from (seed, first case), runs on the real
 * model. */
static const char *
chain_model (guint64 chain_start)
{
  guint32 key[3] = { fz.seed, (guint32) chain_start, (guint32) (chain_start >> 32) ^ 0x30de1 };
  GRand *r;
  gboolean real;

  if (fz.real_model == NULL || fz.real_share == 0)
    return fz.model;
  r = g_rand_new_with_seed_array (key, 3);
  real = g_rand_int_range (r, 0, fz.real_share) == 0;
  g_rand_free (r);
  return real ? fz.real_model : fz.model;
}

static void
run_case (Element **ep, guint64 k, const char *model, gboolean verbose)
{
  guint32 key[3] = { fz.seed, (guint32) k, (guint32) (k >> 32) };
  GRand *r = g_rand_new_with_seed_array (key, 3);
  Case *c = &fz.cur;
  Expect x = { 0, };
  guint barrier_seq = 0;

  c->seed = fz.seed;
  c->case_no = k;
  c->model = model;
  c->current = -1;
  gen_case (c, r);
  g_rand_free (r);

  fz.action_started = g_get_monotonic_time ();
  if (*ep == NULL)
    *ep = element_new (model);
  element_prepare (*ep, model, c->live);
  fz.time_in[ACT_BARRIER + 1] += g_get_monotonic_time () - fz.action_started;
  expect_reset (&x);
  if (verbose)
    print_case ();

  for (guint i = 0; i < c->n_actions; i++) {
    c->current = i;
    fz.action_started = g_get_monotonic_time ();
    if (verbose) {
      GString *s = g_string_new (NULL);
      describe_action (&c->actions[i], s);
      fprintf (stderr, "  run %2u %s\n", i, s->str);
      g_string_free (s, TRUE);
    }
    run_action (c, *ep, &c->actions[i], &x, &barrier_seq);
    fz.time_in[c->actions[i].kind] += g_get_monotonic_time () - fz.action_started;
  }
  c->current = c->n_actions;
  fz.action_started = g_get_monotonic_time ();
  /* READY, and the harness queues emptied. */
  gst_element_set_state ((*ep)->h->element, GST_STATE_READY);
  drain_harness ((*ep)->h);
  fz.time_in[ACT_BARRIER + 2] += g_get_monotonic_time () - fz.action_started;
  fz.action_started = 0;
}

/* Writes the default fuzz model (if missing) and returns its directory. */
static gchar *
default_model (void)
{
  const char *build = g_getenv ("WHISPER_BUILD_ROOT");
  gchar *dir = g_build_filename (build && *build ? build : ".", "tests", "fuzz",
      "random-model-d64-ctx150", NULL);
  gchar *bin = g_build_filename (dir, "model.bin", NULL);
  gchar *tool = g_build_filename (SOURCE_ROOT, "tools", "make-random-model.py", NULL);
  gchar *out = NULL, *err = NULL;
  gint status = 0;

  if (!g_file_test (bin, G_FILE_TEST_EXISTS)) {
    const gchar *argv[] = { "python3", tool, dir, "--d-model", "64", "--layers", "1",
      "--heads", "2", "--audio-ctx", "150", "--text-ctx", "16", "--seed", "9", NULL };
    GError *error = NULL;
    if (!g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out,
            &err, &status, &error) || !g_spawn_check_wait_status (status, NULL)) {
      fprintf (stderr, "SKIP: cannot write the fuzz model with %s: %s%s\n", tool,
          error ? error->message : "", err ? err : "");
      exit (77);
    }
  }
  g_free (out);
  g_free (err);
  g_free (bin);
  g_free (tool);
  return dir;
}

int
main (int argc, char **argv)
{
  gint64 iterations = -1, seconds = -1, only_case = -1, seed = -1;
  gchar *model = NULL, *real_model = NULL;
  gint real_share = 50;
  gboolean verbose = FALSE;
  GOptionEntry entries[] = {
    { "iterations", 'n', 0, G_OPTION_ARG_INT64, &iterations, "Run N cases", "N" },
    { "seconds", 's', 0, G_OPTION_ARG_INT64, &seconds, "Run cases for S seconds", "S" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &seed, "Seed (default 1)", "S" },
    { "case", 0, 0, G_OPTION_ARG_INT64, &only_case, "Replay case K (and its chain)", "K" },
    { "model", 0, 0, G_OPTION_ARG_FILENAME, &model, "Model of most cases", "DIR" },
    { "real-model", 0, 0, G_OPTION_ARG_FILENAME, &real_model,
      "Model of one chain in --real-share (default: the installed tiny.en)", "DIR" },
    { "real-share", 0, 0, G_OPTION_ARG_INT, &real_share,
      "One chain in P uses the real model (0: none; default 50)", "P" },
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "Print every action", NULL },
    { NULL }
  };
  GOptionContext *ctx = g_option_context_new ("- whispersink fuzzer");
  GError *error = NULL;
  Element *e = NULL;
  gint64 start;
  guint64 k, first, done = 0;

  g_log_set_writer_func (log_writer, NULL, NULL);
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    fprintf (stderr, "element-fuzz: %s\n", error->message);
    return 2;
  }
  g_option_context_free (ctx);
  __sanitizer_set_death_callback (on_sanitizer_death);
  signal (SIGABRT, on_fatal_signal);
  signal (SIGSEGV, on_fatal_signal);

  gst_init (&argc, &argv);
  GST_PLUGIN_STATIC_REGISTER (whisper);

  fz.report = g_string_new (NULL);
  fz.seed = seed >= 0 ? (guint32) seed : 1;
  fz.model = model ? model : default_model ();
  if (real_model == NULL) {
    const char *data = g_get_user_data_dir ();
    gchar *tiny = g_build_filename (data, "gst-whisper", "models", "tiny.en", NULL);
    if (g_file_test (tiny, G_FILE_TEST_IS_DIR))
      real_model = tiny;
    else
      g_free (tiny);
  }
  fz.real_model = real_model;
  fz.real_share = real_share > 0 ? real_share : 0;
  fz.verbose = verbose;
  g_mutex_init (&obs.lock);
  g_cond_init (&obs.cond);
  g_thread_unref (g_thread_new ("fuzz-watchdog", watchdog_thread, NULL));

  if (iterations < 0 && seconds < 0)
    iterations = 100;
  start = g_get_monotonic_time ();
  first = 0;
  if (only_case >= 0) {
    first = only_case;
    while (!case_is_fresh (fz.seed, first))
      first--;
    iterations = only_case - first + 1;
    seconds = -1;
  }

  for (k = first;; k++) {
    gboolean fresh = case_is_fresh (fz.seed, k);
    static const char *chain_model_dir;
    if (iterations >= 0 && done >= (guint64) iterations)
      break;
    if (seconds >= 0 && g_get_monotonic_time () - start >= seconds * G_USEC_PER_SEC && !fresh)
      break;
    if (fresh) {
      g_clear_pointer (&e, element_free);
      chain_model_dir = chain_model (k);
    }
    run_case (&e, k, chain_model_dir, verbose && (only_case < 0 || (gint64) k == only_case));
    done++;
    if (done % 1000 == 0 && only_case < 0)
      fprintf (stderr, "element-fuzz: %" G_GUINT64_FORMAT " cases, %.0f s\n", done,
          (g_get_monotonic_time () - start) / 1e6);
  }
  g_clear_pointer (&e, element_free);

  printf ("element-fuzz: seed %u, %" G_GUINT64_FORMAT " cases (%" G_GUINT64_FORMAT " .. %"
      G_GUINT64_FORMAT ") in %.1f s: %" G_GUINT64_FORMAT " text buffers, %" G_GUINT64_FORMAT
      " GAP events out; %u GStreamer warnings about the harness pads let through\n",
      fz.seed, done, first, k ? k - 1 : 0, (g_get_monotonic_time () - start) / 1e6,
      obs.buffers_out, obs.gaps_out, fz.allowed_warnings);
  {
    static const char *const names[] = { "state", "property", "stream-start", "caps",
      "segment", "buffer", "gap", "flush-start", "flush-stop", "eos", "custom", "upstream",
      "query", "barrier", "prepare", "end" };
    printf ("element-fuzz: %u model loads; wall time by action (s):", fz.model_loads);
    for (guint i = 0; i < G_N_ELEMENTS (names); i++)
      printf (" %s %.1f", names[i], fz.time_in[i] / 1e6);
    printf ("\n");
  }
  g_string_free (g_steal_pointer (&fz.report), TRUE);
  g_free (model);
  g_free (real_model);
  gst_deinit ();
  return 0;
}
