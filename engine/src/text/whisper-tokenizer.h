/* whisper-tokenizer.h: token ids to UTF-8 text. Token bytes are joined
 * before UTF-8 decoding (a token may hold part of a character); invalid
 * sequences become U+FFFD, one per maximal invalid subpart, as Python's
 * bytes.decode("utf-8", errors="replace") does. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Decodes bytes[0..len) lossily and appends to `out`. With `final` FALSE, an
 * incomplete but so far valid sequence at the end is not decoded: its length
 * is returned (the caller keeps those bytes for later); otherwise returns 0. */
gsize whisper_utf8_decode_append (GString *out, const guint8 *bytes, gsize len, gboolean final);

/* Text of the ids below `first_special` (ids >= it are skipped), from the
 * token table (tokens[id] raw bytes; ids without an entry are skipped). */
char *whisper_tokens_to_text (GBytes *const *tokens, int n_tokens, int first_special,
                              const gint32 *ids, gsize n_ids);

/* Incremental decoder for the per-step callback: feed one token's bytes,
 * get the text it completes. */
typedef struct {
  GByteArray *pending;
  GString *piece;
} WhisperPieceDecoder;

/* Sized for tokens of up to `max_token_bytes` bytes, so that pushing such a
 * token never allocates (a decode step does it). */
void whisper_piece_decoder_init (WhisperPieceDecoder *dec, gsize max_token_bytes);
void whisper_piece_decoder_clear (WhisperPieceDecoder *dec);
void whisper_piece_decoder_reset (WhisperPieceDecoder *dec);
/* Returns the text completed by these bytes (valid until the next call). */
const char *whisper_piece_decoder_push (WhisperPieceDecoder *dec, const guint8 *bytes, gsize len);

G_END_DECLS
