/* whisper/whisper.h: the public API of libwhisper-engine, in one include.
 *
 * The element (gst-plugin/), the command-line tool and any application
 * include this header and nothing else of the engine
 * (pkg-config whisper-engine). */
#pragma once

#include "whisper-engine.h"
#include "whisper-error.h"
#include "whisper-languages.h"
#include "whisper-pcm.h"
#include "whisper-stream.h"
#include "whisper-vad.h"
