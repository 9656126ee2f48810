/* whisper-bpe.c: UTF-8 text to token ids (see whisper-bpe.h). */
#include "whisper-bpe.h"

#include "whisper-error.h"

#include <string.h>

/* ---------------------------------------------------------------------- */
/* bytes -> id: open addressing over borrowed token bytes */

typedef struct {
  const guint8 *data;  /* NULL: empty slot */
  guint32 len;
  gint32 id;
} BpeSlot;

struct _WhisperBpe {
  BpeSlot *slots;
  guint32 mask;          /* capacity - 1, capacity a power of two */
  gint32 byte_id[256];   /* single-byte tokens, -1 where there is none */
  GPtrArray *refs;       /* the GBytes the slots point into */
};

/* FNV-1a, 32 bits (http://www.isthe.com/chongo/tech/comp/fnv/). */
static guint32
hash_bytes (const guint8 *p, gsize len)
{
  guint32 h = 2166136261u;
  for (gsize i = 0; i < len; i++) {
    h ^= p[i];
    h *= 16777619u;
  }
  return h;
}

static gint32
lookup (const WhisperBpe *bpe, const guint8 *p, gsize len)
{
  if (len == 1)
    return bpe->byte_id[p[0]];
  for (guint32 i = hash_bytes (p, len) & bpe->mask;; i = (i + 1) & bpe->mask) {
    const BpeSlot *s = &bpe->slots[i];
    if (!s->data)
      return -1;
    if (s->len == len && memcmp (s->data, p, len) == 0)
      return s->id;
  }
}

WhisperBpe *
whisper_bpe_new (GBytes *const *tokens, int n_tokens, int first_special)
{
  WhisperBpe *bpe = g_new0 (WhisperBpe, 1);
  const int n = MAX (0, MIN (n_tokens, first_special));
  guint32 capacity = 16;
  while (capacity < 2u * (guint32) n)
    capacity *= 2;
  bpe->slots = g_new0 (BpeSlot, capacity);
  bpe->mask = capacity - 1;
  bpe->refs = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  for (int b = 0; b < 256; b++)
    bpe->byte_id[b] = -1;

  for (int id = 0; id < n; id++) {
    if (!tokens[id])
      continue;
    gsize len;
    const guint8 *data = g_bytes_get_data (tokens[id], &len);
    if (len == 0 || len > G_MAXUINT32)
      continue;
    if (len == 1) {
      if (bpe->byte_id[data[0]] < 0)
        bpe->byte_id[data[0]] = id;
      continue;
    }
    guint32 i = hash_bytes (data, len) & bpe->mask;
    gboolean duplicate = FALSE;
    while (bpe->slots[i].data) {
      if (bpe->slots[i].len == len && memcmp (bpe->slots[i].data, data, len) == 0) {
        duplicate = TRUE; /* keep the lower id */
        break;
      }
      i = (i + 1) & bpe->mask;
    }
    if (duplicate)
      continue;
    bpe->slots[i] = (BpeSlot) { data, (guint32) len, id };
    g_ptr_array_add (bpe->refs, g_bytes_ref (tokens[id]));
  }
  return bpe;
}

void
whisper_bpe_free (WhisperBpe *bpe)
{
  if (!bpe)
    return;
  g_free (bpe->slots);
  g_ptr_array_unref (bpe->refs);
  g_free (bpe);
}

/* ---------------------------------------------------------------------- */
/* The pre-tokenizer */

typedef enum { CLASS_LETTER, CLASS_NUMBER, CLASS_SPACE, CLASS_OTHER } CharClass;

/* The White_Space property of
 * https://www.unicode.org/Public/UCD/latest/ucd/PropList.txt (what \s
 * matches in Unicode regular expressions); g_unichar_isspace() differs
 * (no U+000B, no U+0085). */
static gboolean
is_white_space (gunichar c)
{
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

static CharClass
char_class (gunichar c)
{
  if (is_white_space (c))
    return CLASS_SPACE;
  switch (g_unichar_type (c)) {
  case G_UNICODE_UPPERCASE_LETTER:
  case G_UNICODE_LOWERCASE_LETTER:
  case G_UNICODE_TITLECASE_LETTER:
  case G_UNICODE_MODIFIER_LETTER:
  case G_UNICODE_OTHER_LETTER:
    return CLASS_LETTER;
  case G_UNICODE_DECIMAL_NUMBER:
  case G_UNICODE_LETTER_NUMBER:
  case G_UNICODE_OTHER_NUMBER:
    return CLASS_NUMBER;
  default:
    return CLASS_OTHER;
  }
}

static CharClass
class_at (const char *text, gsize pos)
{
  return char_class (g_utf8_get_char (text + pos));
}

/* End of the run of characters of class `cls` starting at `pos`. */
static gsize
run_end (const char *text, gsize len, gsize pos, CharClass cls)
{
  while (pos < len && class_at (text, pos) == cls)
    pos = (gsize) (g_utf8_next_char (text + pos) - text);
  return pos;
}

gsize
whisper_bpe_piece_end (const char *text, gsize len, gsize pos)
{
  const char *p = text + pos;
  const gsize left = len - pos;

  /* 's 't 're 've 'm 'll 'd (ASCII, case-sensitive) */
  if (p[0] == '\'' && left >= 2) {
    if (p[1] != '\0' && strchr ("stmd", p[1]))
      return pos + 2;
    if (left >= 3 && ((p[1] == 'r' && p[2] == 'e') || (p[1] == 'v' && p[2] == 'e') ||
                      (p[1] == 'l' && p[2] == 'l')))
      return pos + 3;
  }

  const CharClass cls = class_at (text, pos);
  /* ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: the classes are disjoint,
   * so at most one of them matches here */
  if (cls != CLASS_SPACE)
    return run_end (text, len, pos, cls);
  if (p[0] == ' ' && left >= 2) {
    const CharClass next = class_at (text, pos + 1);
    if (next != CLASS_SPACE)
      return run_end (text, len, pos + 1, next);
  }

  /* `\s+(?!\S)`: the whole run at the end of the text, else the run but its
   * last character (which then starts the next piece); `\s+`: a single
   * whitespace character before a non-space */
  const gsize end = run_end (text, len, pos, CLASS_SPACE);
  if (end == len)
    return end;
  const gsize last = (gsize) (g_utf8_prev_char (text + end) - text);
  return last > pos ? last : end;
}

/* ---------------------------------------------------------------------- */
/* Byte-pair merges of one piece */

/* A candidate merge: the pair of parts starting at byte `start` covering
 * `len` bytes, whose concatenation is token `rank`. Stale entries (a part
 * merged since) are skipped when popped: a pair starting at a live part is
 * identified by its length, as parts only grow. */
typedef struct {
  gint32 rank;
  guint32 start;
  guint32 len;
} Candidate;

static gboolean
candidate_less (const Candidate *a, const Candidate *b)
{
  return a->rank < b->rank || (a->rank == b->rank && a->start < b->start);
}

typedef struct {
  Candidate *heap;
  gsize n_heap;
  guint32 *next;   /* per byte offset: start of the next part (piece length at the end) */
  guint32 *prev;   /* per byte offset: start of the previous part (G_MAXUINT32 at the start) */
  guint8 *alive;   /* per byte offset: a part starts here */
} MergeWork;

static void
heap_push (MergeWork *w, Candidate c)
{
  gsize i = w->n_heap++;
  while (i > 0) {
    const gsize parent = (i - 1) / 2;
    if (!candidate_less (&c, &w->heap[parent]))
      break;
    w->heap[i] = w->heap[parent];
    i = parent;
  }
  w->heap[i] = c;
}

static Candidate
heap_pop (MergeWork *w)
{
  const Candidate top = w->heap[0];
  const Candidate last = w->heap[--w->n_heap];
  gsize i = 0;
  for (;;) {
    gsize child = 2 * i + 1;
    if (child >= w->n_heap)
      break;
    if (child + 1 < w->n_heap && candidate_less (&w->heap[child + 1], &w->heap[child]))
      child++;
    if (!candidate_less (&w->heap[child], &last))
      break;
    w->heap[i] = w->heap[child];
    i = child;
  }
  if (w->n_heap > 0)
    w->heap[i] = last;
  return top;
}

/* Pushes the pair of the part at `start` and the one after it, if their
 * bytes are a token. */
static void
push_pair (const WhisperBpe *bpe, MergeWork *w, const guint8 *piece, guint32 piece_len,
           guint32 start)
{
  const guint32 second = w->next[start];
  if (second >= piece_len)
    return;
  const guint32 end = w->next[second];
  const gint32 rank = lookup (bpe, piece + start, end - start);
  if (rank >= 0)
    heap_push (w, (Candidate) { rank, start, end - start });
}

/* Appends the ids of one piece; FALSE (error set) when a byte has no token. */
static gboolean
encode_piece (const WhisperBpe *bpe, MergeWork *w, const guint8 *piece, guint32 len,
              GArray *out, GError **error)
{
  /* as tiktoken: a piece that is a token is that token */
  gint32 whole = lookup (bpe, piece, len);
  if (whole >= 0) {
    g_array_append_val (out, whole);
    return TRUE;
  }

  w->n_heap = 0;
  for (guint32 i = 0; i < len; i++) {
    w->next[i] = i + 1;
    w->prev[i] = i == 0 ? G_MAXUINT32 : i - 1;
    w->alive[i] = 1;
  }
  for (guint32 i = 0; i + 1 < len; i++)
    push_pair (bpe, w, piece, len, i);

  while (w->n_heap > 0) {
    const Candidate c = heap_pop (w);
    if (!w->alive[c.start] || w->next[c.start] >= len ||
        w->next[w->next[c.start]] - c.start != c.len)
      continue; /* stale */
    const guint32 second = w->next[c.start];
    const guint32 after = w->next[second];
    w->alive[second] = 0;
    w->next[c.start] = after;
    if (after < len)
      w->prev[after] = c.start;
    if (w->prev[c.start] != G_MAXUINT32)
      push_pair (bpe, w, piece, len, w->prev[c.start]);
    push_pair (bpe, w, piece, len, c.start);
  }

  for (guint32 i = 0; i < len; i = w->next[i]) {
    const guint32 part_len = w->next[i] - i;
    const gint32 id = lookup (bpe, piece + i, part_len);
    if (id < 0) {
      /* only a single byte can lack a token: longer parts are merges */
      g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_FAILED,
                   "cannot encode the text: the vocabulary has no token for byte 0x%02x",
                   piece[i]);
      return FALSE;
    }
    g_array_append_val (out, id);
  }
  return TRUE;
}

gint32 *
whisper_bpe_encode (const WhisperBpe *bpe, const char *utf8, gsize *n_ids, GError **error)
{
  *n_ids = 0;
  const char *bad = NULL;
  if (!g_utf8_validate (utf8, -1, &bad)) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "text is not valid UTF-8: byte 0x%02x at offset %" G_GSIZE_FORMAT
                 " does not start or continue a character", (guint8) bad[0],
                 (gsize) (bad - utf8));
    return NULL;
  }
  const gsize len = strlen (utf8);
  if (len > G_MAXUINT32 / 4) {
    g_set_error (error, WHISPER_ENGINE_ERROR, WHISPER_ENGINE_ERROR_SETTING,
                 "text of %" G_GSIZE_FORMAT " bytes is too long to encode", len);
    return NULL;
  }

  /* Work arrays for the longest piece, sized once: at most len - 1 pairs
   * at first and two more per merge (len - 1 merges at most). */
  gsize longest = 0;
  for (gsize pos = 0; pos < len;) {
    const gsize end = whisper_bpe_piece_end (utf8, len, pos);
    longest = MAX (longest, end - pos);
    pos = end;
  }
  MergeWork w = {
    .heap = g_new (Candidate, 3 * longest + 1),
    .next = g_new (guint32, longest + 1),
    .prev = g_new (guint32, longest + 1),
    .alive = g_new (guint8, longest + 1),
  };
  GArray *out = g_array_sized_new (FALSE, FALSE, sizeof (gint32), len / 3 + 1);
  gboolean ok = TRUE;
  for (gsize pos = 0; pos < len && ok;) {
    const gsize end = whisper_bpe_piece_end (utf8, len, pos);
    ok = encode_piece (bpe, &w, (const guint8 *) utf8 + pos, (guint32) (end - pos), out, error);
    pos = end;
  }
  g_free (w.heap);
  g_free (w.next);
  g_free (w.prev);
  g_free (w.alive);
  if (!ok) {
    g_array_free (out, TRUE);
    return NULL;
  }
  *n_ids = out->len;
  /* an empty GArray's data may be NULL: keep "never NULL on success" */
  if (out->len == 0) {
    g_array_free (out, TRUE);
    return g_new0 (gint32, 1);
  }
  return (gint32 *) g_array_free (out, FALSE);
}
