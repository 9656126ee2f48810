/* cea608sched.c: cea608enc's scheduler and pacer (cea608sched.h).
 *
 * Each channel keeps a queue of units, byte pairs with the first frame
 * they may go in. Pop-on captions are loaded off screen from the frames
 * before their start (RCL, ENM, PACs, text) and shown by EOC at their
 * start frame, erased by EDM at their end frame (or replaced by the next
 * EOC); a pop-on caption that cannot be loaded before its start on an
 * idle channel is painted instead (RDC, EDM in its start frame, PACs,
 * text), and the pop-on caption after it erases it with RDC, EDM, RCL
 * before its EOC; roll-up and paint-on text is sent from its start frame.
 * A text that would be later than max-delay is shortened by its last
 * words.
 */
#include "cea608sched.h"
#include "cea608.h"

#include <string.h>

/* ---------------------------------------------------------------------- */
/* frames */

GstClockTime
cea608_sched_frame_time (const Cea608Sched *s, gint64 n)
{
  if (n <= 0)
    return 0;
  return gst_util_uint64_scale ((guint64) n, (guint64) s->fps_d * GST_SECOND, s->fps_n);
}

gint64
cea608_sched_frame_floor (const Cea608Sched *s, GstClockTime t)
{
  return (gint64) gst_util_uint64_scale (t, s->fps_n, (guint64) s->fps_d * GST_SECOND);
}

static gint64
frame_round (const Cea608Sched *s, GstClockTime t)
{
  return (gint64) gst_util_uint64_scale_round (t, s->fps_n, (guint64) s->fps_d * GST_SECOND);
}

gint64
cea608_sched_ms_frames (const Cea608Sched *s, guint ms)
{
  return (gint64) gst_util_uint64_scale_round (ms, s->fps_n, (guint64) s->fps_d * 1000);
}

static void
unit_free (Cea608Unit *u)
{
  if (u->pairs)
    g_array_unref (u->pairs);
  if (u->exit)
    g_array_unref (u->exit);
  g_free (u->text);
  g_free (u);
}

static Cea608Unit *
unit_new (GArray *pairs, gint64 not_before)
{
  Cea608Unit *u = g_new0 (Cea608Unit, 1);
  u->pairs = pairs;
  u->not_before = not_before;
  u->start = u->end = -1;
  u->pts = GST_CLOCK_TIME_NONE;
  u->paint_mark = -1;
  return u;
}

void
cea608_chan_reset (Cea608Chan *c)
{
  g_queue_clear_full (&c->units, (GDestroyNotify) unit_free);
  c->mode = GST_CEA608_ENC_MODE_AUTO;
  gst_segment_init (&c->segment, GST_FORMAT_TIME);
  c->have_segment = FALSE;
  c->known = 0;
  c->eos = FALSE;
  c->n_burst = 0;
  c->erase_frame = -1;
  c->painting = FALSE;
  c->paint_end = -1;
  c->paint_erase = -1;
  c->tail = 0;
  c->last_end = -1;
  c->rollup_on = FALSE;
  c->col = 0;
  c->painted = FALSE;
}

gboolean
cea608_chan_active (const Cea608Chan *c)
{
  return c->pad != NULL;
}

static void
note_shown (Cea608Sched *s, Cea608Chan *c, Cea608Unit *u, gint64 f)
{
  gint64 late = f > u->not_before && u->popon ? f - u->start : -1;

  if (!GST_CLOCK_TIME_IS_VALID (u->pts) || !u->text)
    return;
  s->hooks->shown (s->user, c, u->text, u->pts, cea608_sched_frame_time (s, f), late);
}

static guint16
misc_pair (Cea608Chan *c, Cea608Misc code)
{
  guint8 b[2];
  cea608_misc_code (code, c->field, b);
  return (guint16) (b[0] << 8 | b[1]);
}

static void
burst2 (Cea608Chan *c, guint16 p)
{
  c->burst[0] = c->burst[1] = p;
  c->n_burst = 2;
}

/* The pair (without parity) channel c sends in frame f; 0 for padding. */
static guint16
chan_emit (Cea608Sched *s, Cea608Chan *c, gint64 f)
{
  Cea608Unit *u;

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
    if (c->paint_erase >= 0 && f >= c->paint_erase) {
      /* a painted caption's end, no pop-on caption loaded after it */
      c->paint_erase = -1;
      c->painting = FALSE;
      burst2 (c, misc_pair (c, CEA608_EDM));
      continue;
    }
    if (!u || f < u->not_before)
      return 0;
    if (u->pos < u->pairs->len) {
      guint16 p = g_array_index (u->pairs, guint16, u->pos);
      if ((gint) u->pos == u->paint_mark)
        note_shown (s, c, u, f);
      u->pos++;
      if (u->pos == u->pairs->len && !u->popon) {
        if (u->paint_mark >= 0) {
          /* erased at its end, unless a pop-on caption's exit does it */
          if (c->painting)
            c->paint_erase = MAX (u->end, f + 1);
        } else {
          note_shown (s, c, u, f);
        }
        unit_free (g_queue_pop_head (&c->units));
      }
      return p;
    }
    if (!u->popon) {
      /* an empty unit */
      unit_free (g_queue_pop_head (&c->units));
      continue;
    }
    if (u->exit && u->exit_pos < u->exit->len) {
      /* RDC, EDM, RCL: the painted caption erased in paint-on mode */
      if (f < u->exit_at)
        return 0;
      return g_array_index (u->exit, guint16, u->exit_pos++);
    }
    if (f < u->start)
      return 0;
    /* 79.101 (j)(2) pop-on: EOC flips the loaded caption on screen */
    burst2 (c, misc_pair (c, CEA608_EOC));
    c->erase_frame = MAX (u->end, f + 2);
    note_shown (s, c, u, f);
    unit_free (g_queue_pop_head (&c->units));
  }
}

void
cea608_sched_frame (Cea608Sched *s, gint64 f, guint16 pairs[2], gboolean have[2])
{
  pairs[0] = pairs[1] = 0;
  have[0] = have[1] = FALSE;
  for (guint i = 0; i < 2; i++) {
    Cea608Chan *c = &s->chan[i];
    if (!cea608_chan_active (c))
      continue;
    pairs[c->field] = chan_emit (s, c, f);
    have[c->field] = TRUE;
  }
}

/* ---------------------------------------------------------------------- */
/* text to units */

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

/* Tells the owner that words [keep, n) of words were left out. */
static void
tell_shortened (Cea608Sched *s, Cea608Chan *c, GstClockTime pts, const gchar *text,
    gchar **words, guint keep, guint n, gint64 delay_frames)
{
  gchar *sent = join_words (words, keep);
  gchar *left = g_strjoinv (" ", words + keep);

  s->hooks->shortened (s->user, c, pts, text, sent, left, n - keep,
      cea608_sched_frame_time (s, delay_frames));
  g_free (sent);
  g_free (left);
}

/* The pairs of a pop-on caption of rows: RCL, ENM, then a PAC and the text
 * of each row, bottom aligned (79.101 (j)(2) pop-on). */
static GArray *
popon_pairs (Cea608Chan *c, GPtrArray *rows)
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

/* RDC, EDM, RCL: the exit from a painted caption before the next pop-on
 * caption's EOC (its pairs). */
#define EXIT_PAIRS 6

/* A pop-on caption that cannot be loaded before its start, on an idle
 * channel: painted instead (RDC, EDM, a PAC and the text of each row, on
 * the displayed memory), its EDM in its start frame. FALSE (nothing
 * queued) when the channel is not idle or the text would be later than
 * max-delay. */
static gboolean
try_paint (Cea608Chan *c, GPtrArray *rows, const gchar *text, GstClockTime pts,
    gint64 begin, gint64 start, gint64 end, gint64 max_delay)
{
  Cea608Writer w;
  gint64 from, done;
  guint first = CEA608_ROWS - rows->len + 1;
  Cea608Unit *u;

  if (c->painting || c->erase_frame >= 0 || !g_queue_is_empty (&c->units) || begin > start)
    return FALSE;
  cea608_writer_init (&w);
  cea608_writer_misc (&w, CEA608_RDC, c->field);
  cea608_writer_misc (&w, CEA608_EDM, c->field);
  for (guint i = 0; i < rows->len; i++) {
    cea608_writer_pac (&w, first + i, 0);
    cea608_writer_text (&w, g_ptr_array_index (rows, i));
    cea608_writer_flush (&w);
  }
  from = MAX (begin, start - 2);
  done = from + (gint64) w.pairs->len;
  if (done - MAX (end, start) > max_delay) {
    g_array_unref (w.pairs);
    return FALSE;
  }
  u = unit_new (w.pairs, from);
  /* the EDM after RDC (sent twice) starts the caption */
  u->paint_mark = 2;
  u->start = start;
  u->end = end;
  u->pts = pts;
  u->text = g_strdup (text);
  g_queue_push_tail (&c->units, u);
  c->painting = TRUE;
  c->paint_end = end;
  c->paint_erase = -1;
  c->tail = done;
  return TRUE;
}

/* The caption u loads while a painted caption is on screen: RDC, EDM (the
 * painted caption's end, or earlier so that its EOC is on time), RCL, after
 * its load and before its EOC. A decoder that captures the displayed
 * memory only on EDM and EOC (FFmpeg's) sees the painted caption so. */
static void
add_exit (Cea608Chan *c, Cea608Unit *u)
{
  Cea608Writer w;

  cea608_writer_init (&w);
  cea608_writer_misc (&w, CEA608_RDC, c->field);
  cea608_writer_misc (&w, CEA608_EDM, c->field);
  cea608_writer_misc (&w, CEA608_RCL, c->field);
  u->exit = w.pairs;
  u->exit_at = MIN (c->paint_end, u->start - 4) - 2;
  c->painting = FALSE;
  c->paint_erase = -1;
}

static void
enqueue_popon (Cea608Sched *s, Cea608Chan *c, const gchar *text, GstClockTime pts,
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
    begin = MAX (s->next_frame, c->tail);
    eoc = MAX (start, begin + (gint64) pairs->len + (c->erase_frame >= 0 || c->tail > 0 ? 2 : 0)
        + (c->painting ? EXIT_PAIRS : 0));
    if (eoc - start <= max_delay || keep == 0)
      break;
    g_array_unref (pairs);
    g_ptr_array_unref (rows);
    keep--;
  }

  if (keep == n && eoc - start > 2 && try_paint (c, rows, text, pts, begin, start, end, max_delay)) {
    g_array_unref (pairs);
    g_ptr_array_unref (rows);
    g_strfreev (words);
    return;
  }
  if (keep < n)
    tell_shortened (s, c, pts, text, words, keep, n, eoc - start);
  if (keep > 0) {
    Cea608Unit *u = unit_new (pairs, 0);
    u->popon = TRUE;
    u->start = eoc > start ? eoc : start;
    u->end = MAX (end, u->start + 2);
    u->pts = pts;
    u->text = join_words (words, keep);
    if (c->painting)
      add_exit (c, u);
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
rollup_pairs (Cea608Chan *c, gchar **words, guint n, guint rows, guint *col, gboolean *on)
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
enqueue_erase (Cea608Chan *c, gint64 at)
{
  Cea608Writer w;
  cea608_writer_init (&w);
  cea608_writer_misc (&w, CEA608_EDM, c->field);
  g_queue_push_tail (&c->units, unit_new (w.pairs, at));
  c->tail = MAX (c->tail, at) + 2;
}

static void
enqueue_direct (Cea608Sched *s, Cea608Chan *c, const gchar *text, GstClockTime pts,
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
    begin = MAX (MAX (s->next_frame, c->tail), start);
    done = begin + (gint64) pairs->len;
    if (done - MAX (end, start) <= max_delay || keep == 0)
      break;
    g_array_unref (pairs);
    keep--;
  }

  if (keep < n)
    tell_shortened (s, c, pts, text, words, keep, n, done - MAX (end, start));
  if (keep > 0) {
    Cea608Unit *u = unit_new (pairs, start);
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

void
cea608_sched_finish (Cea608Sched *s, Cea608Chan *c, guint roll_up_timeout_ms)
{
  gint64 timeout = cea608_sched_ms_frames (s, roll_up_timeout_ms);

  if (c->mode == GST_CEA608_ENC_MODE_ROLL_UP && c->rollup_on && c->last_end >= 0) {
    enqueue_erase (c, c->last_end + timeout);
    c->rollup_on = FALSE;
  } else if (c->mode == GST_CEA608_ENC_MODE_PAINT_ON && c->painted && c->last_end >= 0) {
    enqueue_erase (c, c->last_end);
    c->painted = FALSE;
  }
}

void
cea608_sched_covered (Cea608Sched *s, Cea608Chan *c, GstClockTime running_end,
    guint roll_up_timeout_ms)
{
  if (GST_CLOCK_TIME_IS_VALID (running_end))
    c->known = MAX (c->known, cea608_sched_frame_floor (s, running_end));
  /* no text for roll-up-timeout (roll-up) or the end of the painted
   * caption (paint-on): erase it */
  if (c->mode == GST_CEA608_ENC_MODE_ROLL_UP && c->rollup_on && c->last_end >= 0) {
    gint64 timeout = cea608_sched_ms_frames (s, roll_up_timeout_ms);
    if (c->known >= c->last_end + timeout) {
      enqueue_erase (c, c->last_end + timeout);
      c->rollup_on = FALSE;
    }
  } else if (c->mode == GST_CEA608_ENC_MODE_PAINT_ON && c->painted && c->last_end >= 0 &&
      c->known > c->last_end) {
    enqueue_erase (c, c->last_end);
    c->painted = FALSE;
  }
}

void
cea608_sched_new_row (Cea608Sched *s G_GNUC_UNUSED, Cea608Chan *c)
{
  Cea608Writer w;
  gint64 at;

  if (c->mode != GST_CEA608_ENC_MODE_ROLL_UP || !c->rollup_on || c->col == 0)
    return;
  at = MAX (c->known, c->tail);
  cea608_writer_init (&w);
  cea608_writer_misc (&w, CEA608_CR, c->field);
  g_queue_push_tail (&c->units, unit_new (w.pairs, at));
  c->tail = at + 2;
  c->col = 0;
}

void
cea608_sched_text (Cea608Sched *s, Cea608Chan *c, const gchar *text, GstClockTime rs,
    GstClockTime re, const Cea608SchedLimits *lim)
{
  gint64 start = frame_round (s, rs), end = frame_round (s, re);
  gint64 max_delay = cea608_sched_ms_frames (s, lim->max_delay_ms);
  GPtrArray *chunks;
  guint total = 0, done = 0;

  if (end <= start)
    end = start + 1;
  if (c->mode != GST_CEA608_ENC_MODE_POP_ON) {
    enqueue_direct (s, c, text, rs, start, end, max_delay, lim->roll_up_rows,
        cea608_sched_ms_frames (s, lim->roll_up_timeout_ms));
    return;
  }
  /* more rows than a caption holds: consecutive captions of about equal
   * length, the time shared by their characters */
  chunks = cea608_split_captions (text, lim->pop_on_rows);
  for (guint i = 0; i < chunks->len; i++)
    total += g_utf8_strlen (g_ptr_array_index (chunks, i), -1);
  for (guint i = 0; i < chunks->len; i++) {
    const gchar *chunk = g_ptr_array_index (chunks, i);
    guint chars = g_utf8_strlen (chunk, -1);
    gint64 cs, ce;
    cs = start + (end - start) * done / MAX (total, 1);
    done += chars;
    ce = start + (end - start) * done / MAX (total, 1);
    enqueue_popon (s, c, chunk, rs + gst_util_uint64_scale (re - rs, done - chars, MAX (total, 1)),
        cs, MAX (ce, cs + 1), max_delay, lim->pop_on_rows);
  }
  g_ptr_array_unref (chunks);
}

gint64
cea608_sched_last_frame (const Cea608Sched *s)
{
  gint64 last = 0;

  for (guint i = 0; i < 2; i++) {
    const Cea608Chan *o = &s->chan[i];
    if (!cea608_chan_active (o))
      continue;
    last = MAX (last, o->tail);
    last = MAX (last, o->known);
    if (o->erase_frame >= 0)
      last = MAX (last, o->erase_frame + 2);
    if (o->paint_erase >= 0)
      last = MAX (last, o->paint_erase + 2);
    for (GList *l = o->units.head; l; l = l->next) {
      Cea608Unit *u = l->data;
      last = MAX (last, u->not_before + (gint64) u->pairs->len + 2);
      if (u->popon || u->paint_mark >= 0)
        last = MAX (last, MAX (u->start, u->end) + 4);
    }
  }
  return last;
}

void
cea608_sched_init (Cea608Sched *s, const Cea608SchedHooks *hooks, gpointer user)
{
  memset (s, 0, sizeof (*s));
  s->hooks = hooks;
  s->user = user;
  s->fps_n = 30000;
  s->fps_d = 1001;
  for (guint i = 0; i < 2; i++) {
    g_queue_init (&s->chan[i].units);
    cea608_chan_reset (&s->chan[i]);
  }
}

void
cea608_sched_clear (Cea608Sched *s)
{
  for (guint i = 0; i < 2; i++)
    g_queue_clear_full (&s->chan[i].units, (GDestroyNotify) unit_free);
}
