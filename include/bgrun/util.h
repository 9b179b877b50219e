/* SPDX-License-Identifier: MIT */
/* bgrun/util.h: conveniences for command-line programs (bgrun's own and others'), not part of the primitive (libbgrun). */

#ifndef BGRUN_UTIL_H
#define BGRUN_UTIL_H

#include "bgrun/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Parses a duration: one or more terms, each a decimal number and a unit
 * (spaces between them allowed): ns, us, ms, s, m (minutes), h, d, w,
 * or their words (sec, second(s), min, minute(s), hour(s), day(s),
 * week(s)...): "1.5s", "250ms", "1h30m", "2 hours", "1w". A lone number
 * without a unit is seconds ("10"). -EINVAL for anything else, including
 * negative values; -ERANGE past about 292 years. A command-line
 * convenience (bgrun's --timeout and --kill-after, logsink's times and
 * ages), not part of the primitive: no other call of the library takes
 * such text.
 */
BGRUN_EXTERN int bgrun_parse_duration(const char *text, int64_t *ret_ns);

/* bgrun_parse_duration_flags(): a lone number ("10") is refused, -EDOM. */
#define BGRUN_DURATION_UNIT 0x1u

/* bgrun_parse_duration() with flags (0 or BGRUN_DURATION_UNIT). */
BGRUN_EXTERN int bgrun_parse_duration_flags(const char *text, unsigned flags,
					    int64_t *ret_ns);

/*
 * The wording of a bad duration, the same in every program:
 * "invalid duration '%s' for --%s: " BGRUN_DURATION_EXPECTED.
 */
#define BGRUN_DURATION_EXPECTED "expected a number and a unit (90s, 10m, 1h30m, 2d)"

/*
 * Parses a point in time as people type it (journalctl, atuin), into ns
 * since the epoch; now_ns is "now". Local time (TZ) unless an offset is
 * given. Accepted:
 *   now, today, yesterday, tomorrow   (the day words: local midnight,
 *                                      or with a time: "yesterday 18:00")
 *   10:00, 10:00:30                   a time of today
 *   a duration ago: 10m, 1h30m, 1w, "2 hours ago", -2h; +1h is ahead
 *   @1764583200, @1764583200.5        seconds since the epoch (UTC)
 *   2026-12-01, 20261201              a local day's start
 *   2026-12-01 10:00, 2026-12-01T10:00:00, 20261201T10:00:00.5,
 *   2026-12-01T10:00Z, ...+01:00      with a time of day (and an offset)
 * A number without a unit is never seconds: eight digits are a date
 * (YYYYMMDD), other numbers are -EDOM. -EINVAL for anything else (an
 * impossible date included), -ERANGE out of range.
 */
BGRUN_EXTERN int bgrun_parse_time(const char *text, int64_t now_ns,
				  int64_t *ret_ns);

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
 * Where a logged launch keeps its command's output (a file per event):
 * $BGRUN_OUTPUT_DIR, else $XDG_STATE_HOME/bgrun/output, else
 * $HOME/.local/state/bgrun/output, as bgrun_store_default_path() finds
 * the database. *ret_path is malloc'd; -ENOENT when neither
 * XDG_STATE_HOME nor HOME is set.
 */
BGRUN_EXTERN int bgrun_output_default_dir(char **ret_path);

/*
 * The files bgrun keeps for a logged launch in that directory: one rule
 * for their names, ID.SUFFIX (ID the event's id), which the launcher
 * makes them by, `bgrun logs` and `bgrun restart` find them by and
 * `logsink prune` removes them by, so that no row, whatever it says, has
 * a file removed that bgrun did not make for its event.
 */
enum bgrun_output_file {
	BGRUN_OUTPUT_LOG = 0, /* ID.log: stdout and stderr merged */
	BGRUN_OUTPUT_OUT,     /* ID.out: stdout, kept apart */
	BGRUN_OUTPUT_ERR,     /* ID.err: stderr, kept apart */
	BGRUN_OUTPUT_ENV,     /* ID.env: the command's environment */
};

/*
 * DIR/ID.SUFFIX for file which of event id (dir and id borrowed; dir
 * NULL: the name alone), *ret_path malloc'd. 0; -EINVAL when id is empty
 * or holds other than letters, digits and '-', or which is none of the
 * above; -ENOMEM.
 */
BGRUN_EXTERN int bgrun_output_path(const char *dir, const char *id,
				   enum bgrun_output_file which,
				   char **ret_path);

/*
 * Which of event id's files path (borrowed) names, by its last
 * component: an enum bgrun_output_file value, or -1 for any other name.
 */
BGRUN_EXTERN int bgrun_output_file_of(const char *path, const char *id);

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
