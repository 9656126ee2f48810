/* test-decode-steps.c: the seed property, checked where it can fail.
 *
 * Real transcriptions of jfk.wav, with the backend's operation table
 * wrapped (step-probe.h: what one decode step is) and the libc and GLib
 * calls that are not arithmetic counted (call-counter.h). For every decode
 * step:
 * - every cross-attention call reads exactly the engine's cached maximum
 *   encoder length of keys, as the public API reports it (1500 by default,
 *   500 with max_encoder_length 500);
 * - the self-attention calls read position + 1 keys, one more than in the
 *   step before;
 * - nothing but arithmetic runs: no model hyper-parameter lookup, no
 *   environment read, no hashing, no allocation (libc, GLib, the backend's
 *   alloc and free ops, device memory on the CUDA emulator), no thread
 *   created or joined.
 *
 * Paths: /decode-steps/cpu/{1500,500} (the CPU backend) and
 * /decode-steps/cuda-emu/{1500,500} (the CUDA backend on the CPU emulator
 * of tests/gpu/emu/, module given by $WHISPER_CUDA_MODULE; skipped when the
 * module is not the emulator). */
#include "call-counter.h"
#include "step-probe.h"
#include "whisper-engine-test-api.h"

#include <dlfcn.h>
#include <string.h>

#define JFK_TEXT                                                                                 \
  " And so my fellow Americans ask not what your country can do for you ask what you can do " \
  "for your country"

typedef struct {
  StepProbe *probe;
  int n_tokens;
  int stop_after;  /* tokens; 0: never stop */
  GString *text;   /* the pieces, as an application collects them */
} TokenSink;

/* The application's callback (which allocates, as the element's does): not
 * the engine's work, so not counted. */
static gboolean
on_token (const WhisperTokenEvent *event, gpointer user_data)
{
  TokenSink *sink = user_data;
  step_probe_pause (sink->probe, TRUE);
  sink->n_tokens++;
  g_string_append (sink->text, event->piece);
  step_probe_pause (sink->probe, FALSE);
  return sink->stop_after == 0 || sink->n_tokens < sink->stop_after;
}

static float *
load_jfk (gsize *n)
{
  const char *dir = g_getenv ("WHISPER_SHARED_DATA");
  if (!dir)
    g_error ("WHISPER_SHARED_DATA is not set (run the tests with meson test)");
  g_autofree char *path = g_build_filename (dir, "jfk.wav", NULL);
  g_autoptr (GError) error = NULL;
  float *pcm = whisper_audio_load_file (path, -1, n, &error);
  g_assert_no_error (error);
  return pcm;
}

/* The function holding `offset` in `object`, from its symbol table (a
 * static function has no dynamic symbol) by addr2line, or NULL. */
static char *
function_at (const char *object, guintptr offset)
{
  g_autofree char *where = g_strdup_printf ("0x%" G_GINTPTR_MODIFIER "x", offset);
  const char *argv[] = { "addr2line", "-f", "-e", object, where, NULL };
  g_autofree char *out = NULL;
  int status = 0;
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL,
                     NULL, NULL, &out, NULL, &status, NULL) ||
      !g_spawn_check_wait_status (status, NULL) || !out)
    return NULL;
  char *newline = strchr (out, '\n');
  if (newline)
    *newline = '\0';
  return out[0] && strcmp (out, "??") != 0 ? g_strdup (out) : NULL;
}

/* "decode_step in libwhisper-engine.so+0x1c395" for a return address. */
static char *
describe_address (gpointer address)
{
  Dl_info info;
  if (!address || !dladdr (address, &info) || !info.dli_fname)
    return g_strdup_printf ("%p", address);
  g_autofree char *name = g_path_get_basename (info.dli_fname);
  const guintptr offset = (guintptr) address - (guintptr) info.dli_fbase;
  g_autofree char *function = function_at (info.dli_fname, offset - 1);
  if (!function)
    return g_strdup_printf ("%s+0x%" G_GINTPTR_MODIFIER "x", name, offset);
  return g_strdup_printf ("%s in %s+0x%" G_GINTPTR_MODIFIER "x", function, name, offset);
}

/* The module that holds the backend's code, when it is the CUDA emulator. */
static gpointer
open_emulator (WhisperBackend *be)
{
  Dl_info info;
  if (!dladdr ((void *) be->ops->linear, &info) || !info.dli_fname)
    return NULL;
  gpointer module = dlopen (info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (module && !call_counter_attach_emulator (module)) {
    dlclose (module);
    return NULL;
  }
  return module;
}

/* The key counts of every attention call, step by step; FALSE (and the
 * test failed with what was wrong) at the first wrong one. */
static gboolean
check_key_counts (StepProbe *probe, const WhisperEngineInfo *info, const char *label)
{
  const int n = step_probe_n_steps (probe), layers = info->n_text_layer;
  for (int i = 0; i < n; i++) {
    const ProbeStep *s = step_probe_step (probe, i);
    if (s->n_embed != 1 || s->n_cross != layers || s->n_self != layers) {
      g_test_fail_printf ("%s: step %d (window %d, position %d) issued %d single-token embeds, "
                          "%d self-attention and %d cross-attention calls; a step of this "
                          "%d-layer decoder issues 1, %d and %d",
                          label, i, s->window, s->position, s->n_embed, s->n_self, s->n_cross,
                          layers, layers, layers);
      return FALSE;
    }
    for (int l = 0; l < layers; l++)
      if (s->cross_keys[l] != info->max_encoder_length) {
        g_test_fail_printf ("%s: step %d (window %d, position %d), layer %d: cross-attention "
                            "read %d keys; the engine's max_encoder_length is %d",
                            label, i, s->window, s->position, l, s->cross_keys[l],
                            info->max_encoder_length);
        return FALSE;
      }
    for (int l = 0; l < layers; l++)
      if (s->self_keys[l] != s->position + 1) {
        g_test_fail_printf ("%s: step %d (window %d, position %d), layer %d: self-attention "
                            "read %d keys, expected position + 1 = %d",
                            label, i, s->window, s->position, l, s->self_keys[l],
                            s->position + 1);
        return FALSE;
      }
    const ProbeStep *prev = i > 0 ? step_probe_step (probe, i - 1) : NULL;
    if (prev && prev->window == s->window && s->self_keys[0] != prev->self_keys[0] + 1) {
      g_test_fail_printf ("%s: step %d (window %d): self-attention read %d keys after %d in "
                          "the step before; they grow by one per step",
                          label, i, s->window, s->self_keys[0], prev->self_keys[0]);
      return FALSE;
    }
  }
  return TRUE;
}

/* The CUDA backend's own per-step work that another branch removes: the
 * lookup of the step's graph by key in graph_end (graph_for_key() in
 * kernels/host/backend-cuda-graph.c), a g_hash_table_lookup that hashes
 * with g_int64_hash. TRUE when that is everything counted. */
static gboolean
only_cuda_graph_lookup (const guint64 *totals)
{
  for (int slot = 0; slot < CALL_N_SLOTS; slot++)
    if (totals[slot] && slot != CALL_SLOT_G_HASH_TABLE_LOOKUP && slot != CALL_SLOT_G_INT64_HASH)
      return FALSE;
  return totals[CALL_SLOT_G_HASH_TABLE_LOOKUP] > 0;
}

/* Zero calls of every kind in every step; else a report per kind: how
 * many calls, in how many steps, from where, by function. */
static void
check_only_arithmetic (StepProbe *probe, const char *label, gboolean emulated_cuda)
{
  const int n = step_probe_n_steps (probe);
  guint64 totals[CALL_N_SLOTS] = { 0 };
  int steps_with[CALL_N_KINDS] = { 0 }, first_step[CALL_N_KINDS];
  gpointer first_caller[CALL_N_SLOTS] = { NULL };
  for (int k = 0; k < CALL_N_KINDS; k++)
    first_step[k] = -1;

  for (int i = 0; i < n; i++) {
    const ProbeStep *s = step_probe_step (probe, i);
    gboolean kind_seen[CALL_N_KINDS] = { FALSE };
    for (int slot = 0; slot < CALL_N_SLOTS; slot++) {
      if (!s->calls[slot])
        continue;
      const CallKind kind = call_counter_slot_kind (slot);
      totals[slot] += s->calls[slot];
      kind_seen[kind] = TRUE;
      if (!first_caller[slot])
        first_caller[slot] = s->callers[slot];
    }
    for (int k = 0; k < CALL_N_KINDS; k++)
      if (kind_seen[k]) {
        steps_with[k]++;
        if (first_step[k] < 0)
          first_step[k] = i;
      }
  }

  g_autoptr (GString) report = g_string_new (NULL);
  for (int k = 0; k < CALL_N_KINDS; k++) {
    if (!steps_with[k])
      continue;
    const ProbeStep *first = step_probe_step (probe, first_step[k]);
    g_string_append_printf (report, "\n  %s in %d of %d steps (first: step %d, window %d, "
                            "position %d):",
                            call_counter_kind_name (k), steps_with[k], n, first_step[k],
                            first->window, first->position);
    for (int slot = 0; slot < CALL_N_SLOTS; slot++) {
      if (!totals[slot] || call_counter_slot_kind (slot) != (CallKind) k)
        continue;
      g_autofree char *caller = slot >= CALL_SLOT_EMU_FIRST
                                    ? NULL : describe_address (first_caller[slot]);
      g_autofree char *from = caller ? g_strdup_printf ("one from %s", caller)
                                     : g_strdup ("counted by the emulated runtime");
      g_string_append_printf (report, "\n    %s: %" G_GUINT64_FORMAT " calls (%s)",
                              call_counter_slot_name (slot), totals[slot], from);
    }
  }
  if (report->len == 0)
    return;
  if (emulated_cuda && only_cuda_graph_lookup (totals))
    g_string_append (report,
                     "\n  This is exactly the CUDA backend's known per-step work: graph_end "
                     "looks the step's graph up by key (g_hash_table_lookup in graph_for_key(), "
                     "kernels/host/backend-cuda-graph.c), removed in another branch. (Its "
                     "per-step hash of the suppress list, config_signature() in "
                     "kernels/host/backend-cuda-logits.c, is host arithmetic that no counter "
                     "sees.)");
  g_test_fail_printf ("%s: per-step work that is not arithmetic:%s", label, report->str);
}

/* Transcribes jfk.wav on a new engine and checks its steps. stop_after > 0:
 * the token callback stops the transcription at that many tokens (the
 * emulator runs a step in about two seconds, and with 500 encoder frames
 * the first window repeats itself up to the maximum length, 224 tokens). */
static void
check_transcription (WhisperDevice device, int max_encoder_length, int expected_length,
                     int stop_after)
{
  const gboolean cuda = device == WHISPER_DEVICE_CUDA;
  WhisperEngineOptions options;
  whisper_engine_options_init (&options);
  options.device = device;
  options.max_encoder_length = max_encoder_length;
  g_autoptr (GError) error = NULL;
  g_autoptr (WhisperEngine) engine = whisper_engine_new (&options, &error);
  if (!engine && cuda) {
    g_test_skip_printf ("no CUDA backend: %s", error->message);
    return;
  }
  g_assert_no_error (error);
  const WhisperEngineInfo *info = whisper_engine_get_info (engine);
  /* the public API reports the cached value the test expects */
  g_assert_cmpint (info->max_encoder_length, ==, expected_length);
  g_assert_cmpint (info->n_text_layer, <=, PROBE_MAX_LAYERS);

  WhisperBackend *be = whisper_engine_get_backend (engine);
  gpointer emulator = NULL;
  if (cuda && !(emulator = open_emulator (be))) {
    g_test_skip ("the CUDA module is not the emulator (tests/gpu/emu/): the CUDA runtime's own "
                 "allocations cannot be told from the module's");
    return;
  }
  g_autofree char *label = g_strdup_printf ("%s backend, max_encoder_length %d",
                                            cuda ? "emulated CUDA" : "CPU",
                                            info->max_encoder_length);
  gsize n_samples;
  g_autofree float *pcm = load_jfk (&n_samples);
  g_autoptr (WhisperStream) stream = whisper_stream_new (engine, &error);
  g_assert_no_error (error);

  StepProbe *probe = step_probe_attach (be);
  g_autoptr (GString) pieces = g_string_new (NULL);
  TokenSink sink = { probe, 0, stop_after, pieces };
  whisper_stream_set_token_callback (stream, on_token, &sink);
  g_autoptr (GPtrArray) segments = NULL;
  step_probe_arm (probe, TRUE);
  const gboolean ok = whisper_stream_transcribe (stream, pcm, n_samples, NULL, NULL, &segments,
                                                 &error);
  step_probe_arm (probe, FALSE);
  const gboolean stopped = stop_after > 0 && sink.n_tokens == stop_after;
  if (stopped) {
    g_assert_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_CANCELLED);
    g_assert_false (ok);
  } else {
    g_assert_no_error (error);
    g_assert_true (ok);
  }

  WhisperStreamStats stats;
  whisper_stream_get_stats (stream, &stats);
  g_autoptr (GString) text = g_string_new (NULL);
  for (guint i = 0; segments && i < segments->len; i++)
    g_string_append (text, ((WhisperSegment *) g_ptr_array_index (segments, i))->text);
  g_test_message ("%s: %d steps in %d windows%s: \"%s\"", label, step_probe_n_steps (probe),
                  step_probe_n_windows (probe),
                  stopped ? " (stopped by the token callback)" : "", text->str);
  if (expected_length == 1500) {
    g_assert_cmpstr (text->str, ==, JFK_TEXT);
    g_assert_cmpstr (pieces->str, ==, JFK_TEXT);
  } else if (!stopped) {
    g_assert_cmpuint (segments->len, >, 0);
  }

  /* the probe saw every window and every step the engine ran (the engine
   * counts each window's prompt pass as a step) */
  g_assert_false (step_probe_overflowed (probe));
  g_assert_cmpuint (step_probe_n_windows (probe), ==, stats.windows);
  g_assert_cmpuint (step_probe_n_steps (probe), ==, stats.decode_steps - stats.windows);
  /* each token but a window's last (after which the window may end at the
   * maximum length) is fed back by a step */
  g_assert_cmpint (sink.n_tokens, <=, step_probe_n_steps (probe) + (int) stats.windows);
  g_assert_cmpint (step_probe_n_steps (probe), >, 0);
  if (expected_length == 500 && !stopped)
    g_assert_cmpuint (stats.windows, >=, 2);

  check_key_counts (probe, info, label);
  check_only_arithmetic (probe, label, cuda);

  step_probe_detach (probe);
  if (emulator) {
    call_counter_detach_emulator ();
    dlclose (emulator);
  }
}

static void
test_cpu_default (void)
{
  check_transcription (WHISPER_DEVICE_CPU, 0, 1500, 0);
}

static void
test_cpu_500 (void)
{
  check_transcription (WHISPER_DEVICE_CPU, 500, 500, 0);
}

static void
test_cuda_emu_default (void)
{
  check_transcription (WHISPER_DEVICE_CUDA, 0, 1500, 0);
}

/* the first 48 tokens of the first window */
static void
test_cuda_emu_500 (void)
{
  check_transcription (WHISPER_DEVICE_CUDA, 500, 500, 48);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/decode-steps/cpu/1500", test_cpu_default);
  g_test_add_func ("/decode-steps/cpu/500", test_cpu_500);
  g_test_add_func ("/decode-steps/cuda-emu/1500", test_cuda_emu_default);
  g_test_add_func ("/decode-steps/cuda-emu/500", test_cuda_emu_500);
  return g_test_run ();
}
