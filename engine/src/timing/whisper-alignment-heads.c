/* whisper-alignment-heads.c: which cross-attention heads time the words
 * (whisper-alignment.h). */
#include "whisper-alignment.h"
#include "whisper-model.h"

#include <stdlib.h>
#include <string.h>

/* The head sets OpenAI publishes (_ALIGNMENT_HEADS in
 * https://github.com/openai/whisper/blob/main/whisper/__init__.py), as
 * CTranslate2's converter lists them decoded (_WHISPER_ALIGNMENT_HEADS in
 * python/ctranslate2/converters/transformers.py of
 * https://github.com/OpenNMT/CTranslate2), "layer,head;...". A ggml file
 * names no model, so the set is chosen by the dimensions: decoder layers,
 * width, mel bins and vocabulary (51864 tokens: English-only). large-v1 and
 * large-v2 have the same dimensions; the large-v2 set is taken. */
typedef struct {
  const char *name;
  int n_text_layer, n_text_state, n_mels;
  gboolean english_only;
  const char *heads;
} KnownHeads;

static const KnownHeads known_heads[] = {
  { "tiny.en", 4, 384, 80, TRUE, "1,0;2,0;2,5;3,0;3,1;3,2;3,3;3,4" },
  { "tiny", 4, 384, 80, FALSE, "2,2;3,0;3,2;3,3;3,4;3,5" },
  { "base.en", 6, 512, 80, TRUE, "3,3;4,7;5,1;5,5;5,7" },
  { "base", 6, 512, 80, FALSE, "3,1;4,2;4,3;4,7;5,1;5,2;5,4;5,6" },
  { "small.en", 12, 768, 80, TRUE,
    "6,6;7,0;7,3;7,8;8,2;8,5;8,7;9,0;9,4;9,8;9,10;10,0;10,1;10,2;10,3;10,6;10,11;11,2;11,4" },
  { "small", 12, 768, 80, FALSE, "5,3;5,9;8,0;8,4;8,7;8,8;9,0;9,7;9,9;10,5" },
  { "medium.en", 24, 1024, 80, TRUE,
    "11,4;14,1;14,12;14,14;15,4;16,0;16,4;16,9;17,12;17,14;18,7;18,10;18,15;20,0;20,3;20,9;"
    "20,14;21,12" },
  { "medium", 24, 1024, 80, FALSE, "13,15;15,4;15,15;16,1;20,0;23,4" },
  { "large-v2", 32, 1280, 80, FALSE,
    "10,12;13,17;16,11;16,12;16,13;17,15;17,16;18,4;18,11;18,19;19,11;21,2;21,3;22,3;22,9;"
    "22,12;23,5;23,7;23,13;25,5;26,1;26,12;27,15" },
  { "large-v3", 32, 1280, 128, FALSE, "7,0;10,17;12,18;13,12;16,1;17,14;19,11;21,4;24,1;25,6" },
  /* large-v3-turbo: 4 decoder layers of width 1280 (not in CTranslate2's
   * table; the same set as g_aheads_large_v3_turbo in src/whisper.cpp of
   * https://github.com/ggml-org/whisper.cpp) */
  { "turbo", 4, 1280, 128, FALSE, "2,4;2,11;3,3;3,6;3,11;3,14" },
};

#define ENGLISH_ONLY_VOCAB 51864

void
whisper_alignment_heads_clear (WhisperAlignmentHeads *h)
{
  g_clear_pointer (&h->layer, g_free);
  g_clear_pointer (&h->head, g_free);
  g_clear_pointer (&h->source, g_free);
  h->n = 0;
}

gboolean
whisper_alignment_heads_parse (const char *text, int n_layer, int n_head, const char *what,
                               int **pairs_out, int *n_out, GError **error)
{
  g_auto (GStrv) items = g_strsplit (text, ";", -1);
  GArray *pairs = g_array_new (FALSE, FALSE, sizeof (int));
  for (int i = 0; items[i]; i++) {
    g_strstrip (items[i]);
    if (!items[i][0])
      continue;
    char *end = NULL;
    long layer = strtol (items[i], &end, 10);
    gboolean ok = end != items[i];
    long head = -1;
    if (ok) {
      while (*end == ' ')
        end++;
      ok = *end == ',';
    }
    if (ok) {
      const char *h = end + 1;
      head = strtol (h, &end, 10);
      ok = end != h;
      while (ok && *end == ' ')
        end++;
      ok = ok && *end == '\0';
    }
    if (!ok || layer < 0 || layer >= n_layer || head < 0 || head >= n_head) {
      g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                   "%s: '%s' is not a pair 'layer,head' with layer in 0..%d and head in 0..%d "
                   "(pairs are separated by ';', e.g. \"3,1;4,2\")",
                   what, items[i], n_layer - 1, n_head - 1);
      g_array_unref (pairs);
      return FALSE;
    }
    int v[2] = { (int) layer, (int) head };
    g_array_append_vals (pairs, v, 2);
  }
  if (pairs->len == 0) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "%s: no 'layer,head' pair in \"%s\"", what, text);
    g_array_unref (pairs);
    return FALSE;
  }
  *n_out = pairs->len / 2;
  *pairs_out = (int *) g_array_free (pairs, FALSE);
  return TRUE;
}

static int
compare_pairs (const void *a, const void *b)
{
  const int *x = a, *y = b;
  return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

gboolean
whisper_alignment_heads_resolve (WhisperAlignmentHeads *out, const WhisperModel *model,
                                 const WhisperEngineInfo *info, const char *option,
                                 GError **error)
{
  const int n_layer = info->n_text_layer, n_head = info->n_text_head;
  g_autofree int *pairs = NULL;
  int n = 0;
  g_autofree char *source = NULL;

  if (option && option[0]) {
    if (!whisper_alignment_heads_parse (option, n_layer, n_head,
                                        "the alignment-heads option", &pairs, &n, error))
      return FALSE;
    source = g_strdup ("the alignment-heads option");
  } else if (model->alignment_heads) {
    source = g_strdup_printf ("%s/config.json (alignment_heads)", model->path);
    for (int i = 0; i < model->n_alignment_heads; i++) {
      const int l = model->alignment_heads[2 * i], h = model->alignment_heads[2 * i + 1];
      if (l >= n_layer || h >= n_head) {
        g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                     "%s: head [%d, %d] is out of range: the decoder has %d layers of %d "
                     "heads", source, l, h, n_layer, n_head);
        return FALSE;
      }
    }
    n = model->n_alignment_heads;
    pairs = g_memdup2 (model->alignment_heads, (gsize) n * 2 * sizeof (int));
  } else {
    const gboolean english_only = info->n_vocab == ENGLISH_ONLY_VOCAB;
    const KnownHeads *k = NULL;
    if (model->format == WHISPER_MODEL_FORMAT_GGML)
      for (gsize i = 0; i < G_N_ELEMENTS (known_heads) && !k; i++)
        if (known_heads[i].n_text_layer == n_layer &&
            known_heads[i].n_text_state == info->n_text_state &&
            known_heads[i].n_mels == info->n_mels && known_heads[i].english_only == english_only)
          k = &known_heads[i];
    if (k) {
      if (!whisper_alignment_heads_parse (k->heads, n_layer, n_head, k->name, &pairs, &n,
                                          error))
        return FALSE;
      source = g_strdup_printf ("OpenAI's set for %s (chosen by the model's dimensions)",
                                k->name);
    } else {
      /* every head of the last half of the layers, as CTranslate2's
       * converter does without a known set */
      const int first = n_layer / 2;
      n = (n_layer - first) * n_head;
      pairs = g_new (int, 2 * MAX (n, 1));
      for (int l = first, i = 0; l < n_layer; l++)
        for (int h = 0; h < n_head; h++, i++) {
          pairs[2 * i] = l;
          pairs[2 * i + 1] = h;
        }
      source = g_strdup_printf ("the default (every head of decoder layers %d..%d: %s has no "
                                "alignment_heads in config.json and no known set)",
                                first, n_layer - 1, model->path);
    }
  }
  whisper_alignment_heads_clear (out);
  if (n <= 0) {
    /* an empty list: the engine works, word timestamps fail when asked for
     * (whisper_alignment_heads_check) */
    out->source = g_steal_pointer (&source);
    return TRUE;
  }
  qsort (pairs, n, 2 * sizeof (int), compare_pairs);
  out->n = n;
  out->layer = g_new (int, n);
  out->head = g_new (int, n);
  for (int i = 0; i < n; i++) {
    out->layer[i] = pairs[2 * i];
    out->head[i] = pairs[2 * i + 1];
  }
  out->source = g_steal_pointer (&source);
  return TRUE;
}

gboolean
whisper_alignment_heads_check (const WhisperAlignmentHeads *heads, const char *model_path,
                               GError **error)
{
  if (heads->n > 0)
    return TRUE;
  g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
               "word timestamps need the decoder's alignment heads, and the model has none: "
               "%s lists no head (looked for: the alignment-heads option, the model's "
               "config.json alignment_heads, OpenAI's sets for ggml files); give them with "
               "the alignment-heads option, e.g. \"3,1;4,2\"",
               heads->source ? heads->source : model_path);
  return FALSE;
}
