/* tokenizer-fixture.h: what test-bpe.c and test-languages.c share: the
 * fixture tests/engine/fixtures/tokenizer-reference.json (made by
 * tests/reference/make-tokenizer-reference.py) and engines of the installed
 * models. Every failure aborts the test program with a message. */
#pragma once

#include <json-glib/json-glib.h>

#include "whisper.h"

G_BEGIN_DECLS

/* The fixture's top-level object (the parser is kept for the program's life). */
JsonObject *tf_fixture (void);
/* Member accessors that abort naming the member when it is missing or has
 * the wrong type. */
JsonArray *tf_array (JsonObject *obj, const char *member);
JsonObject *tf_object (JsonObject *obj, const char *member);
/* A JSON array of integers (g_free). */
gint32 *tf_int32_array (JsonArray *array, gsize *n_out);

/* An engine (device cpu) on the installed model `name` ("tiny.en", "base")
 * of $XDG_DATA_HOME/gst-whisper/models, created once and kept. */
WhisperEngine *tf_engine (const char *name);

/* "[1, 2, 3]" (g_free), for messages. */
char *tf_ids_string (const gint32 *ids, gsize n);

G_END_DECLS
