/* SPDX-License-Identifier: MIT */
/* bgrun/common.h: what every part of the interface shares: the export macro, the platform's types, BGRUN_NULL, error messages. */

#ifndef BGRUN_COMMON_H
#define BGRUN_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bgrun/version.h"

#if defined(_WIN32)
#include "bgrun/win.h"
#else
#include "bgrun/unix.h"
#endif

/*
 * BGRUN_EXTERN marks what the libraries export; everything else in them
 * is built with hidden visibility and cannot be linked against.
 */
#if defined(_WIN32) && defined(BGRUN_BUILDING_SHARED)
#define BGRUN_EXTERN __declspec(dllexport)
#elif defined(_WIN32) && defined(BGRUN_USING_SHARED)
#define BGRUN_EXTERN __declspec(dllimport)
#elif defined(__GNUC__)
#define BGRUN_EXTERN __attribute__((visibility("default")))
#else
#define BGRUN_EXTERN
#endif

/*
 * BGRUN__PRINTF(fmt, first) marks the project's own printf-like
 * functions (not part of the interface). MinGW's gcc checks a plain
 * format(printf) against Microsoft's printf, which has no %zu; the
 * project's Windows objects are built with __USE_MINGW_ANSI_STDIO, whose
 * printf is C99's: gcc's gnu_printf.
 */
#if defined(__MINGW32__) && defined(__GNUC__) && \
	defined(__USE_MINGW_ANSI_STDIO) && __USE_MINGW_ANSI_STDIO
#define BGRUN__PRINTF(fmt, first) \
	__attribute__((format(gnu_printf, fmt, first)))
#elif defined(__GNUC__)
#define BGRUN__PRINTF(fmt, first) __attribute__((format(printf, fmt, first)))
#else
#define BGRUN__PRINTF(fmt, first)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * An unknown integer, in events and resource use: stored as SQL NULL,
 * never as a sentinel value. Unknown strings are NULL.
 */
#define BGRUN_NULL INT64_MIN

/* A message for a -errno value from this library (never NULL). */
BGRUN_EXTERN const char *bgrun_strerror(int error);

#ifdef __cplusplus
}
#endif

#endif /* BGRUN_COMMON_H */
