/* whisper-vocab.h: vocabulary encodings shared by the model loaders, the
 * tokenizer and the tests (internal to the engine).
 *
 * GPT-2 byte-level strings: HF and CTranslate2 vocabularies write each raw
 * byte of a token as one Unicode code point (bytes_to_unicode() in
 * https://github.com/openai/gpt-2/blob/master/src/encoder.py). Bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF stand for themselves;
 * the 68 others, in ascending order, become U+0100 + n.
 *
 * Special-token names: whisper.cpp ggml files do not store the names of
 * <|endoftext|> and the tokens after it; they follow from n_vocab
 * (the order of the special tokens in
 * https://github.com/openai/whisper/blob/main/whisper/tokenizer.py). whisper_vocab_special_name() gives the
 * names a CTranslate2 vocabulary of the same model has.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The code point that stands for a raw byte in a byte-level string. */
gunichar whisper_vocab_byte_to_unichar (guint8 byte);

/* The raw byte a code point stands for, or -1 if the code point is not one
 * of the 256 in the mapping. */
int whisper_vocab_unichar_to_byte (gunichar c);

/* Raw bytes -> byte-level UTF-8 string (NUL-terminated, g_free it). */
char *whisper_vocab_bytes_to_byte_level (const guint8 *data, gsize len);

/* Byte-level UTF-8 string (len bytes, not necessarily NUL-terminated) ->
 * raw bytes. Returns NULL when the text is not valid UTF-8 or holds a code
 * point outside the mapping; *bad_char (if not NULL) is then that code
 * point, or (gunichar) -1 for invalid UTF-8. */
GBytes *whisper_vocab_bytes_from_byte_level (const char *text, gsize len,
                                             gunichar *bad_char);

/* TRUE when text (len bytes) has the form "<|...|>": a special token name,
 * kept as ASCII rather than byte-mapped. */
gboolean whisper_vocab_is_special_name (const char *text, gsize len);

/* Number of language tokens and the id of <|endoftext|> for a model with
 * n_vocab logits (51864: .en, 51865: multilingual, 51866: 100 languages).
 * They return -1 when n_vocab is too small to hold the special tokens. */
int whisper_vocab_num_languages (int n_vocab);
int whisper_vocab_eot_id (int n_vocab);

/* Language code of the index-th language token ("en", "zh", ...; OpenAI's
 * codes, so "he" for Hebrew), or NULL when index is out of range (0..99). */
const char *whisper_vocab_language_code (int index);

/* The name of special token id (eot <= id < n_vocab) exactly as a
 * CTranslate2 vocabulary has it: "<|endoftext|>", "<|startoftranscript|>",
 * "<|en|>"..., "<|translate|>", "<|transcribe|>", "<|startoflm|>",
 * "<|startofprev|>", "<|nocaptions|>" (English-only models) or
 * "<|nospeech|>", "<|notimestamps|>", "<|0.00|>"... "<|30.00|>".
 * English-only vocabularies name Hebrew "<|iw|>" (the legacy code their
 * Hugging Face tokenizer has), multilingual ones "<|he|>".
 * Returns NULL for ids outside [eot, n_vocab). g_free the result. */
char *whisper_vocab_special_name (int n_vocab, int id);

G_END_DECLS
