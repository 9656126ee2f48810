/* whisper-languages.h: Whisper's languages, in token order.
 *
 * Language i (0-based) is token sot + 1 + i of a vocabulary: the LANGUAGES
 * table of https://github.com/openai/whisper/blob/main/whisper/tokenizer.py
 * (99 languages; "yue", Cantonese, is the 100th, in large-v3 vocabularies
 * only), with OpenAI's English names (lower case, as OpenAI writes them) and
 * the ISO 639-2 (https://www.loc.gov/standards/iso639-2/php/code_list.php)
 * and ISO 639-3 (https://iso639-3.sil.org/) three-letter codes. */
#pragma once

#include <glib.h>

#include "whisper-export.h"

G_BEGIN_DECLS

/* Languages in the table (the most a vocabulary has). */
#define WHISPER_N_LANGUAGES_MAX 100

/* The index of the language `text` names, for a model with `n_languages`
 * language tokens. Accepted, case-insensitive, surrounding spaces ignored:
 * Whisper's code ("de", "haw", "yue"), a BCP 47 tag whose primary subtag is
 * one ("de-DE", "de_DE", "de-Latn-DE"; the primary subtag alone decides), an
 * ISO 639-2/T, 639-2/B or 639-3 code ("deu", "ger"), OpenAI's English name
 * ("German", "haitian creole") and OpenAI's aliases ("castilian",
 * "mandarin", ...; TO_LANGUAGE_CODE of tokenizer.py), and the ISO 639-1
 * codes of languages Whisper names otherwise ("jv" Javanese, Whisper's "jw";
 * the withdrawn "iw", "in", "ji", "mo"; "nb", Norwegian Bokmål, as Whisper's
 * "no"). NULL, "" and "auto" give -1: detect the language. Fails (error
 * WHISPER_ENGINE_ERROR_SETTING, naming the input) when it is not a Whisper
 * language, or when it is one the model has no token for (index >=
 * n_languages). */
WHISPER_API gboolean whisper_language_parse (const char *text, int n_languages, int *index,
                                             GError **error);

/* 0 <= index < WHISPER_N_LANGUAGES_MAX, else NULL: */
/* Whisper's code: "en", "de", "haw", "jw", "yue" (its token is <|code|>). */
WHISPER_API const char *whisper_language_code (int index);
/* OpenAI's English name: "english", "haitian creole". */
WHISPER_API const char *whisper_language_name (int index);
/* ISO 639-2/T (terminology) code, as GStreamer's language tags take it
 * ("deu"); NULL for Cantonese, which ISO 639-2 has no code for (use
 * whisper_language_iso639_3() or the Whisper code there). */
WHISPER_API const char *whisper_language_iso639_2 (int index);
/* ISO 639-2/B (bibliographic) code: "ger"; the /T code where they are the
 * same; NULL for Cantonese. */
WHISPER_API const char *whisper_language_iso639_2b (int index);
/* ISO 639-3 code: the 639-2/T code, and "yue" for Cantonese. */
WHISPER_API const char *whisper_language_iso639_3 (int index);

G_END_DECLS
