/* whisper-bpe.h: UTF-8 text to token ids, as OpenAI's Whisper tokenizer
 * (tiktoken) encodes ordinary text.
 *
 * The text is first split into pieces by the GPT-2 pre-tokenizer pattern
 *
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *
 * (implemented by hand with GLib's Unicode tables: \p{L} is the general
 * categories Lu Ll Lt Lm Lo, \p{N} Nd Nl No, \s the White_Space property);
 * then each piece's bytes are merged byte-pair-wise: repeatedly the adjacent
 * pair whose concatenation is a token of the lowest rank, leftmost first,
 * where a token's rank is its id (Whisper's tiktoken files rank tokens by
 * id). See byte_pair_merge in https://github.com/openai/tiktoken/blob/main/src/lib.rs
 * and https://github.com/openai/whisper/blob/main/whisper/tokenizer.py.
 *
 * Only ids below the first special token are ever produced: "<|endoftext|>"
 * in the text is encoded as ordinary characters. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _WhisperBpe WhisperBpe;

/* Builds the bytes -> id lookup from the token table (tokens[id] raw bytes,
 * NULL where the vocabulary has none); only ids below `first_special` are
 * used. Where two ids hold the same bytes the lower one is used. Keeps a
 * reference to every token it uses. Never fails: a vocabulary without a
 * token for some byte fails in whisper_bpe_encode(), for the texts that
 * need it. */
WhisperBpe *whisper_bpe_new (GBytes *const *tokens, int n_tokens, int first_special);
void whisper_bpe_free (WhisperBpe *bpe);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (WhisperBpe, whisper_bpe_free)

/* Token ids of the NUL-terminated UTF-8 `utf8` (free with g_free; never NULL
 * on success, also for ""), their count in *n_ids. Fails (NULL, error
 * WHISPER_ENGINE_ERROR_SETTING) on invalid UTF-8, naming the byte and its
 * offset, and (WHISPER_ENGINE_ERROR_FAILED) when the vocabulary has no
 * token for a byte of the text. Linear-logarithmic in the length of the
 * longest piece; thread-safe (the WhisperBpe is not modified). */
gint32 *whisper_bpe_encode (const WhisperBpe *bpe, const char *utf8, gsize *n_ids,
                            GError **error);

/* The pre-tokenizer alone: the end (byte offset) of the piece that starts at
 * `pos` of the valid UTF-8 text[0..len) (pos < len). */
gsize whisper_bpe_piece_end (const char *text, gsize len, gsize pos);

G_END_DECLS
