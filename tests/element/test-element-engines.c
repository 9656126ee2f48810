/* test-element-engines.c: elements share engines (engine-group,
 * gst-plugin/shared/gstwhisperregistries.c): elements with the same model, device,
 * threads and group use one engine, whatever the spelling of the model's
 * path; other settings or groups get their own; the engine outlives an
 * element that leaves while another still uses it; the voice activity
 * detector's weights are shared by every element (gst-plugin/shared/gstwhisperregistries.c); and
 * elements that
 * transcribe at the same time on one engine give each the text of the
 * engine alone. */
#include <gst/check/gstcheck.h>
#include <glib/gstdio.h>
#include <unistd.h>

#include "wt-util.h"

/* A guint field of the element's stats. */
static guint
stats_users (GstHarness *h, const gchar *field)
{
  GstStructure *s = NULL;
  guint users = 0;

  g_object_get (h->element, "stats", &s, NULL);
  fail_unless (s != NULL);
  fail_unless (gst_structure_get_uint (s, field, &users), "stats has no %s", field);
  gst_structure_free (s);
  return users;
}

#define engine_users(h) stats_users ((h), "engine-users")
#define vad_users(h) stats_users ((h), "vad-users")

static GstHarness *
started (const gchar *props)
{
  GstHarness *h = wt_harness_new (FALSE, props);
  gst_harness_play (h);
  return h;
}

GST_START_TEST (test_shared_by_default)
{
  GstHarness *a = started ("device=cpu"), *b = started ("device=cpu");

  fail_unless_equals_int (engine_users (a), 2);
  fail_unless_equals_int (engine_users (b), 2);
  /* and one voice activity detector (vad-gate, on by default) */
  fail_unless_equals_int (vad_users (a), 2);
  gst_harness_teardown (b);
  /* a keeps it */
  fail_unless_equals_int (engine_users (a), 1);
  fail_unless_equals_int (vad_users (a), 1);
  b = started ("device=cpu");
  fail_unless_equals_int (engine_users (a), 2);
  gst_harness_teardown (b);
  gst_harness_teardown (a);
}
GST_END_TEST;

GST_START_TEST (test_groups_and_settings)
{
  GstHarness *a = started ("device=cpu engine-group=one"),
      *b = started ("device=cpu engine-group=two"),
      *c = started ("device=cpu engine-group=one"),
      *d = started ("device=cpu"),
      *e = started ("device=cpu threads=1");
  gchar *group = NULL;

  fail_unless_equals_int (engine_users (a), 2);
  fail_unless_equals_int (engine_users (c), 2);
  fail_unless_equals_int (engine_users (b), 1);
  /* the shared group is not a named one, and threads makes an engine */
  fail_unless_equals_int (engine_users (d), 1);
  fail_unless_equals_int (engine_users (e), 1);
  /* the detector is shared across groups and settings */
  fail_unless_equals_int (vad_users (a), 5);
  g_object_get (a->element, "engine-group", &group, NULL);
  fail_unless_equals_string (group, "one");
  g_free (group);
  g_object_get (d->element, "engine-group", &group, NULL);
  fail_unless (group == NULL);
  gst_harness_teardown (e);
  gst_harness_teardown (d);
  gst_harness_teardown (c);
  gst_harness_teardown (b);
  gst_harness_teardown (a);
}
GST_END_TEST;

/* Two spellings of one model directory (its path, and a symbolic link to
 * it) load one engine. */
GST_START_TEST (test_same_model_other_path)
{
  g_autofree gchar *model = whisper_engine_default_model_path ();
  g_autofree gchar *dir = g_dir_make_tmp ("wt-engines-XXXXXX", NULL);
  g_autofree gchar *link = g_build_filename (dir, "model", NULL);
  g_autofree gchar *props = NULL;
  GstHarness *a, *b;

  fail_unless (dir != NULL);
  fail_unless (symlink (model, link) == 0, "symlink %s -> %s", link, model);
  props = g_strdup_printf ("device=cpu model=%s", link);
  a = started ("device=cpu");
  b = started (props);
  fail_unless_equals_int (engine_users (a), 2);
  gst_harness_teardown (b);
  gst_harness_teardown (a);
  g_unlink (link);
  g_rmdir (dir);
}
GST_END_TEST;

/* A changed model while in READY: the element leaves the shared engine
 * and takes the other one; the first element keeps its own. */
GST_START_TEST (test_reload_leaves_the_group)
{
  GstHarness *a = started ("device=cpu"), *b = started ("device=cpu");

  fail_unless_equals_int (engine_users (a), 2);
  gst_element_set_state (b->element, GST_STATE_READY);
  g_object_set (b->element, "engine-group", "apart", NULL);
  gst_harness_play (b);
  fail_unless_equals_int (engine_users (a), 1);
  fail_unless_equals_int (engine_users (b), 1);
  gst_harness_teardown (b);
  gst_harness_teardown (a);
}
GST_END_TEST;

typedef struct {
  GstHarness *h;
  gchar *text;
} Pull;

static gpointer
pull_text (gpointer data)
{
  Pull *p = data;
  p->text = wt_pull_joined_text (p->h);
  return NULL;
}

/* Three elements transcribe jfk.wav at the same time on one engine (their
 * decode steps interleave on it); each gives the text of the engine
 * alone. */
GST_START_TEST (test_concurrent_streams_alone_text)
{
  gsize jfk_n;
  g_autofree float *jfk = wt_load_jfk (&jfk_n);
  GArray *segs = wt_engine_segments (jfk, jfk_n);
  g_autofree gchar *alone = wt_join_segments (segs);
  Pull pulls[3];
  GThread *threads[3];
  guint i;

  for (i = 0; i < 3; i++) {
    pulls[i].h = started ("device=cpu");
    pulls[i].text = NULL;
  }
  fail_unless_equals_int (engine_users (pulls[0].h), 3);
  for (i = 0; i < 3; i++) {
    fail_unless_equals_int (wt_push_pcm (pulls[i].h, jfk, jfk_n, 0, 1600, FALSE), GST_FLOW_OK);
    fail_unless (gst_harness_push_event (pulls[i].h, gst_event_new_eos ()));
  }
  for (i = 0; i < 3; i++)
    threads[i] = g_thread_new ("pull", pull_text, &pulls[i]);
  for (i = 0; i < 3; i++) {
    g_thread_join (threads[i]);
    fail_unless_equals_string (pulls[i].text, alone);
    g_free (pulls[i].text);
    gst_harness_teardown (pulls[i].h);
  }
  wt_segments_free (segs);
}
GST_END_TEST;

static Suite *
whispersink_engines_suite (void)
{
  Suite *s = suite_create ("whispersink-engines");
  TCase *tc = tcase_create ("engines");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_shared_by_default);
  tcase_add_test (tc, test_groups_and_settings);
  tcase_add_test (tc, test_same_model_other_path);
  tcase_add_test (tc, test_reload_leaves_the_group);
  tcase_add_test (tc, test_concurrent_streams_alone_text);
  return s;
}

int
main (int argc, char **argv)
{
  return wt_run_suite_with_model (argc, argv, whispersink_engines_suite, "whispersink-engines",
      __FILE__);
}
