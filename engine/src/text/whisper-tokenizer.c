/* whisper-tokenizer.c: token ids to UTF-8 text (see whisper-tokenizer.h). */
#include "whisper-tokenizer.h"

#include <string.h>

/* Length of the UTF-8 sequence a lead byte starts, 0 if it cannot start one. */
static int
sequence_length (guint8 b)
{
  if (b < 0x80)
    return 1;
  if (b >= 0xC2 && b <= 0xDF)
    return 2;
  if (b >= 0xE0 && b <= 0xEF)
    return 3;
  if (b >= 0xF0 && b <= 0xF4)
    return 4;
  return 0;
}

/* Is `b` a valid byte at position `pos` (1..3) of a sequence led by `lead`? */
static gboolean
valid_continuation (guint8 lead, int pos, guint8 b)
{
  if (pos == 1) {
    if (lead == 0xE0)
      return b >= 0xA0 && b <= 0xBF;
    if (lead == 0xED)
      return b >= 0x80 && b <= 0x9F;
    if (lead == 0xF0)
      return b >= 0x90 && b <= 0xBF;
    if (lead == 0xF4)
      return b >= 0x80 && b <= 0x8F;
  }
  return b >= 0x80 && b <= 0xBF;
}

gsize
whisper_utf8_decode_append (GString *out, const guint8 *bytes, gsize len, gboolean final)
{
  gsize i = 0;
  while (i < len) {
    const guint8 lead = bytes[i];
    const int need = sequence_length (lead);
    if (need == 1) {
      g_string_append_c (out, (char) lead);
      i++;
      continue;
    }
    if (need == 0) {
      g_string_append (out, "\xEF\xBF\xBD");
      i++;
      continue;
    }
    int have = 1;
    while (have < need && i + have < len && valid_continuation (lead, have, bytes[i + have]))
      have++;
    if (have == need) {
      g_string_append_len (out, (const char *) bytes + i, need);
      i += need;
    } else if (i + have == len && !final) {
      return len - i; /* incomplete so far: keep for the next call */
    } else {
      g_string_append (out, "\xEF\xBF\xBD"); /* maximal invalid subpart */
      i += have;
    }
  }
  return 0;
}

char *
whisper_tokens_to_text (GBytes *const *tokens, int n_tokens, int first_special,
                        const gint32 *ids, gsize n_ids)
{
  g_autoptr (GByteArray) bytes = g_byte_array_new ();
  for (gsize i = 0; i < n_ids; i++) {
    const gint32 id = ids[i];
    if (id < 0 || id >= first_special || id >= n_tokens || !tokens[id])
      continue;
    gsize size;
    const guint8 *data = g_bytes_get_data (tokens[id], &size);
    g_byte_array_append (bytes, data, size);
  }
  GString *out = g_string_sized_new (bytes->len + 1);
  whisper_utf8_decode_append (out, bytes->data, bytes->len, TRUE);
  return g_string_free (out, FALSE);
}

/* At most 3 bytes of an incomplete character wait for the next token; each
 * byte decodes to at most 3 bytes of text (U+FFFD). */
#define MAX_PENDING_BYTES 3
#define MAX_TEXT_PER_BYTE 3

void
whisper_piece_decoder_init (WhisperPieceDecoder *dec, gsize max_token_bytes)
{
  const gsize pending = max_token_bytes + MAX_PENDING_BYTES;
  dec->pending = g_byte_array_sized_new (pending);
  dec->piece = g_string_sized_new (pending * MAX_TEXT_PER_BYTE);
}

void
whisper_piece_decoder_clear (WhisperPieceDecoder *dec)
{
  g_clear_pointer (&dec->pending, g_byte_array_unref);
  if (dec->piece)
    g_string_free (dec->piece, TRUE);
  dec->piece = NULL;
}

void
whisper_piece_decoder_reset (WhisperPieceDecoder *dec)
{
  g_byte_array_set_size (dec->pending, 0);
  g_string_truncate (dec->piece, 0);
}

const char *
whisper_piece_decoder_push (WhisperPieceDecoder *dec, const guint8 *bytes, gsize len)
{
  g_string_truncate (dec->piece, 0);
  g_byte_array_append (dec->pending, bytes, len);
  const gsize kept =
      whisper_utf8_decode_append (dec->piece, dec->pending->data, dec->pending->len, FALSE);
  g_byte_array_remove_range (dec->pending, 0, dec->pending->len - kept);
  return dec->piece->str;
}
