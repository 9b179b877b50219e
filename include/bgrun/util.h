/* SPDX-License-Identifier: MIT */
/* bgrun/util.h: conveniences for command-line programs (bgrun's own and others'), not part of the primitive (libbgrun). */

#ifndef BGRUN_UTIL_H
#define BGRUN_UTIL_H

#include "bgrun/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Parses a duration: a decimal number with an optional unit, ns, us, ms,
 * s (the default), m, h or d ("1.5s", "250ms", "10m", "3d"). -EINVAL for
 * anything else, including negative values; -ERANGE past about 292 years.
 * A command-line convenience (bgrun's --timeout and --kill-after,
 * logsink's --since and --older-than), not part of the primitive: no
 * other call of the library takes such text.
 */
BGRUN_EXTERN int bgrun_parse_duration(const char *text, int64_t *ret_ns);

/* Which clock bgrun_clock_ns reads. */
enum bgrun_clock {
	BGRUN_CLOCK_REALTIME = 0, /* ns since the epoch (events' times) */
	BGRUN_CLOCK_MONOTONIC,    /* ns since an arbitrary point (durations) */
};

/* The clock's time in nanoseconds. */
BGRUN_EXTERN int64_t bgrun_clock_ns(enum bgrun_clock clock);

/*
 * Writes all len bytes of buf to fd (borrowed), again after a short
 * write or EINTR: 0, or -errno (-EIO if a write takes nothing).
 */
BGRUN_EXTERN int bgrun_write_all(bgrun_os_fd_t fd, const void *buf,
				 size_t len);

/*
 * mkdir -p: makes the directory path (borrowed) and its missing parents,
 * each new one with mode (less the umask); existing ones are left as
 * they are. 0 when path is a directory at the end; else -errno, -ENOTDIR
 * when path or a parent is something else.
 */
BGRUN_EXTERN int bgrun_mkdir_p(const char *path, unsigned mode);

/*
 * A helper program: NAME beside the program self (NULL: the running
 * program's own path, as the platform tells it) when one is there, as in
 * a build tree; else installed. The path is written into buf (size
 * bytes) when it is the one beside self; the return value is buf or
 * installed (borrowed).
 */
BGRUN_EXTERN const char *bgrun_helper_path(const char *self, const char *name,
					   const char *installed, char *buf,
					   size_t size);

#ifdef __cplusplus
}
#endif

#endif /* BGRUN_UTIL_H */
