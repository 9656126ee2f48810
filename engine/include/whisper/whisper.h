/* whisper/whisper.h: the public API of libwhisper-engine, in one include.
 *
 * The element (gst-plugin/), the command-line tool and any application
 * include this header and nothing else of the engine. */
#pragma once

#include "whisper-engine.h"
#include "whisper-languages.h"
#include "whisper-vad.h"
