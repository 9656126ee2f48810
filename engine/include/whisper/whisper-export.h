/* whisper-export.h: WHISPER_API marks the declarations libwhisper-engine
 * exports. The library is built with hidden symbols
 * (gnu_symbol_visibility: 'hidden'): what is not marked stays inside it. */
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define WHISPER_API __attribute__ ((visibility ("default")))
#else
#define WHISPER_API
#endif
