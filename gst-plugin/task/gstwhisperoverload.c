/* gstwhisperoverload.c: whispersink's overload ladder (overload=degrade).
 *
 * Live input: a call that takes longer than the new audio it covers puts
 * the next call further behind, and once more audio waits than latency +
 * lateness the oldest is dropped (gstwhispertask.c). Before that, calls
 * spend less, one step at a time, cheapest loss first:
 *   1. one window a call: where a decode's text stops before its audio
 *      does, no second window from the last word's end (the engine's
 *      last_window_once); those words come with the next call;
 *   2. greedy search in place of the beam (beam-size);
 *   3. the buffered encoder window (live-encoder=buffered);
 *   4. a 1-s live context (live-context, when longer);
 *   5. no translate_src decode (their pads get GAPs);
 *   6. late text: where audio would still be dropped, new audio may wait
 *      up to GST_WHISPER_OVERLOAD_LATE_S for a call (text comes later than
 *      latency + lateness, excessive-delay warnings), and is dropped only
 *      beyond that. Taken only where a drop is due, never for a load: it
 *      spends nothing less, it lets the calls run on the longer
 *      backlog a round of many streams on one engine makes (their calls
 *      wait for each other's encoder), which with the other steps in
 *      effect they can transcribe.
 * A step that gives nothing up with the settings (beam-size=1 already, no
 * translate_src pad, ...) is passed over. The steps in effect are the ones
 * taken and posted, kept in the order taken: the settings are read again
 * for every call (a property may change, a translate_src pad come or go),
 * so a step passed over may apply later, and one taken may give nothing up
 * any more. Such changes never take or undo a step unposted: a step that
 * applies now and was passed over is taken only when calls fall behind
 * again (the next one in the ladder's order that applies and is not in
 * effect), and a step in effect that gives nothing up now stays in effect
 * (it changes no setting then) until it is undone in its turn, posted,
 * last taken first. The load is measured as the time
 * the last GST_WHISPER_OVERLOAD_CALLS calls took over what each may take:
 * the new audio it covered, or BUDGET_SHARE of latency + lateness when
 * that is more. A call slower than its chunk is followed at once by the
 * next, which covers as much new audio as the call took: the calls then
 * run back to back at a longer interval, which costs nothing while a word
 * still meets its deadline by agreement (it waits up to one call for the
 * call that first hears it, and that call and the next agree on it: three
 * calls, and a margin). So a call may take up to BUDGET_SHARE of the
 * budget before a step is due, even at a load of one against its audio.
 * A call longer than the whole budget (latency + lateness) takes every
 * step that spends less at once: the words the deadline committed for it
 * are late already, and many streams on one engine, started together,
 * make the first calls of each that long (they wait for each other's
 * encoder): a step per three such calls left text late for half a minute.
 * Above SLOW_LOAD, when the call ends with the next one due
 * already (upstream that waits for the element, as a paced test does, is
 * not behind), the next step is taken (and the measure starts again, so
 * that a step is judged by calls that ran with it); a drop that is due
 * takes the next step at once instead. After QUICK_CALLS calls in a
 * row below QUICK_LOAD the last step taken is undone (the gap between the two
 * loads is the hysteresis: undoing a step that halved the work keeps the
 * load below SLOW_LOAD). Each change is posted (element message
 * whisper-overload) and the first time a step is taken in a run, a
 * warning (reason=overload). The steps change the task's copy of the
 * settings only: the properties keep the user's values. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "task/gstwhisperoverload.h"
#include "io/gstwhisperdebug.h"

#include <string.h>

#define GST_CAT_DEFAULT gst_whisper_sink_debug

#define SLOW_LOAD 0.9
/* What of latency + lateness a call may take (see above). */
#define BUDGET_SHARE 0.25
#define QUICK_LOAD 0.4
#define QUICK_CALLS 6
/* live-context while the short-context step is in effect */
#define SHORT_CONTEXT_S 1.0

static const struct {
  const gchar *name;
  const gchar *gave_up;       /* what the step gives up, for messages */
} steps[GST_WHISPER_OVERLOAD_N_STEPS] = {
  {"one-window", "a second window after a decode's text: its words come with the next call"},
  {"greedy", "beam search (beam-size): greedy decoding"},
  {"buffered-encoder", "the full 30-s encoder window: live-encoder=buffered"},
  {"short-context", "live-context beyond 1 s"},
  {"no-translation", "the translate_src pads' text: GAPs in its place"},
  {"late-text", "text within latency + lateness: new audio waits up to "
        G_STRINGIFY (GST_WHISPER_OVERLOAD_LATE_S) " s for a call before any is dropped"},
};

const gchar *
gst_whisper_overload_step_name (GstWhisperOverloadStep step)
{
  return step < GST_WHISPER_OVERLOAD_N_STEPS ? steps[step].name : "none";
}

void
gst_whisper_overload_reset (GstWhisperOverload *o)
{
  memset (o, 0, sizeof *o);
}

/* Whether `step` is one of the steps taken and not undone. */
static gboolean
is_taken (const GstWhisperOverload *o, guint step)
{
  for (guint i = 0; i < o->level; i++)
    if (o->taken[i] == step)
      return TRUE;
  return FALSE;
}

gboolean
gst_whisper_overload_in_effect (const GstWhisperOverload *o, GstWhisperOverloadStep step)
{
  return o->enabled && (guint) step < GST_WHISPER_OVERLOAD_N_STEPS
      && (o->can & (1u << step)) && is_taken (o, step);
}

/* The steps that give something up with the settings `s`. */
static guint
steps_that_apply (const GstWhisperSettings *s, gboolean translating)
{
  guint can = 1u << GST_WHISPER_OVERLOAD_STEP_ONE_WINDOW;

  if (s->decoding.beam_size != 1)     /* 0: beam 5 */
    can |= 1u << GST_WHISPER_OVERLOAD_STEP_GREEDY;
  if (s->live.encoder == GST_WHISPER_LIVE_ENCODER_FULL)
    can |= 1u << GST_WHISPER_OVERLOAD_STEP_BUFFERED;
  if (s->live.context_s > SHORT_CONTEXT_S)
    can |= 1u << GST_WHISPER_OVERLOAD_STEP_SHORT_CONTEXT;
  if (translating)
    can |= 1u << GST_WHISPER_OVERLOAD_STEP_NO_TRANSLATION;
  if ((guint64) s->live.latency_ms + s->live.lateness_ms < GST_WHISPER_OVERLOAD_LATE_S * 1000)
    can |= 1u << GST_WHISPER_OVERLOAD_STEP_LATE_TEXT;
  return can;
}

void
gst_whisper_overload_apply (GstWhisperOverload *o, GstWhisperSettings *s, gboolean translating)
{
  o->enabled = s->live.overload == GST_WHISPER_OVERLOAD_DEGRADE;
  o->can = steps_that_apply (s, translating);
  if (gst_whisper_overload_in_effect (o, GST_WHISPER_OVERLOAD_STEP_ONE_WINDOW))
    s->live.one_window = TRUE;
  if (gst_whisper_overload_in_effect (o, GST_WHISPER_OVERLOAD_STEP_GREEDY))
    s->decoding.beam_size = 1;
  if (gst_whisper_overload_in_effect (o, GST_WHISPER_OVERLOAD_STEP_BUFFERED))
    s->live.encoder = GST_WHISPER_LIVE_ENCODER_BUFFERED;
  if (gst_whisper_overload_in_effect (o, GST_WHISPER_OVERLOAD_STEP_SHORT_CONTEXT))
    s->live.context_s = SHORT_CONTEXT_S;
}

gboolean
gst_whisper_overload_skips_translation (const GstWhisperOverload *o)
{
  return gst_whisper_overload_in_effect (o, GST_WHISPER_OVERLOAD_STEP_NO_TRANSLATION);
}

static void
post_change (GstWhisperOverload *o, GstElement *element, guint step, gboolean taken, double load)
{
  GstStructure *st = gst_structure_new ("whisper-overload",
      "step", G_TYPE_STRING, steps[step].name,
      "taken", G_TYPE_BOOLEAN, taken,
      "level", G_TYPE_UINT, o->level,
      "gave-up", G_TYPE_STRING, steps[step].gave_up,
      "load", G_TYPE_DOUBLE, load, NULL);

  GST_INFO_OBJECT (element, "overload: %s %s (load %.2f)", taken ? "took" : "undid",
      steps[step].name, load);
  gst_element_post_message (element, gst_message_new_element (GST_OBJECT (element), st));
  if (!taken || (o->warned & (1u << step)))
    return;
  o->warned |= 1u << step;
  GST_ELEMENT_WARNING_WITH_DETAILS (element, STREAM, FAILED,
      ("Inference is slower than real time: live calls give up %s", steps[step].gave_up),
      ("overload=degrade: the step is undone when calls are quick again; set "
          "overload=drop to drop audio instead"),
      ("reason", G_TYPE_STRING, "overload", "step", G_TYPE_STRING, steps[step].name, NULL));
}

static void
forget_calls (GstWhisperOverload *o)
{
  o->n_calls = 0;
  o->quick = 0;
}

/* The first step in the ladder's order that applies and is not in effect,
 * taken; FALSE when none is left. late-text only where a drop is due. */
static gboolean
step_up (GstWhisperOverload *o, GstElement *element, double load, gboolean drop_due)
{
  for (guint step = 0; step < GST_WHISPER_OVERLOAD_N_STEPS; step++) {
    if (!(o->can & (1u << step)) || is_taken (o, step))
      continue;
    if (step == GST_WHISPER_OVERLOAD_STEP_LATE_TEXT && !drop_due)
      continue;
    o->taken[o->level++] = step;
    forget_calls (o);
    post_change (o, element, step, TRUE, load);
    return TRUE;
  }
  return FALSE;
}

/* The last step taken, undone (whether or not it gives anything up with
 * the settings now: its undo is posted as its taking was). */
static void
step_down (GstWhisperOverload *o, GstElement *element, double load)
{
  GstWhisperOverloadStep step;

  forget_calls (o);
  if (o->level == 0)
    return;
  step = o->taken[--o->level];
  post_change (o, element, step, FALSE, load);
}

void
gst_whisper_overload_observe (GstWhisperOverload *o, GstElement *element,
    GstClockTime spent, GstClockTime covered, GstClockTime budget, gboolean behind)
{
  GstClockTime all_spent = 0, all_allowed = 0, allowed;
  double load;

  if (!o->enabled || covered == 0)
    return;
  allowed = covered;
  if (GST_CLOCK_TIME_IS_VALID (budget))
    allowed = MAX (allowed, (GstClockTime) (BUDGET_SHARE * budget));
  o->spent[o->n_calls % GST_WHISPER_OVERLOAD_CALLS] = spent;
  o->allowed[o->n_calls % GST_WHISPER_OVERLOAD_CALLS] = allowed;
  o->n_calls++;
  o->quick = spent < QUICK_LOAD * allowed ? o->quick + 1 : 0;
  /* One call longer than the whole budget: words committed for its
   * deadline are late already, no time to measure: every step that spends
   * less, at once (each posted; undone one at a time as ever). */
  if (behind && GST_CLOCK_TIME_IS_VALID (budget) && spent > budget) {
    gboolean took = FALSE;
    while (step_up (o, element, spent / (double) allowed, FALSE))
      took = TRUE;
    if (took)
      return;
  }
  if (o->n_calls >= GST_WHISPER_OVERLOAD_CALLS) {
    for (guint i = 0; i < GST_WHISPER_OVERLOAD_CALLS; i++) {
      all_spent += o->spent[i];
      all_allowed += o->allowed[i];
    }
    load = all_spent / (double) all_allowed;
    GST_LOG_OBJECT (element, "load %.2f over the last %d calls", load,
        GST_WHISPER_OVERLOAD_CALLS);
    if (load > SLOW_LOAD && behind && step_up (o, element, load, FALSE))
      return;
  }
  if (o->quick >= QUICK_CALLS && o->level > 0)
    step_down (o, element, spent / (double) allowed);
}

gboolean
gst_whisper_overload_before_drop (GstWhisperOverload *o, GstElement *element)
{
  return o->enabled && step_up (o, element, -1.0, TRUE);
}

gsize
gst_whisper_overload_backlog_limit (const GstWhisperOverload *o, gsize budget_samples,
    guint rate)
{
  if (!gst_whisper_overload_in_effect (o, GST_WHISPER_OVERLOAD_STEP_LATE_TEXT))
    return budget_samples;
  return MAX (budget_samples, (gsize) GST_WHISPER_OVERLOAD_LATE_S * rate);
}
