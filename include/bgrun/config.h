/* SPDX-License-Identifier: MIT */
/* bgrun/config.h: configuration files in Mercurial's syntax (the user's bgrun config, clone hooks), for command-line programs; not part of the primitive. */

#ifndef BGRUN_CONFIG_H
#define BGRUN_CONFIG_H

#include "bgrun/common.h"

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The syntax is Mercurial's (mercurial/config.py): "[section]" lines,
 * "name = value" items, indented continuation lines (joined with a
 * newline), ';' and '#' comments, "%include FILE" (relative to the
 * including file, "~/" to $HOME; a missing file is skipped; nested 10
 * deep at most) and "%unset NAME". A UTF-8 byte order mark is skipped.
 * Setting an item again moves it to the end of its section, as
 * Mercurial orders hooks; %unset removes it.
 *
 * A parse error names the file and the line, never the line's text: a
 * program asked to read a file that is not its own (a secret, say) must
 * not print it.
 *
 * The user's bgrun configuration (bgrun_config_default_path) is read by
 * bgrun and logsink. Its keys are documented in the README ("The
 * configuration file"); a program ignores the sections it has no use for.
 * [log] and [sink] become the environment (bgrun_config_read_user);
 * [serve] is logsink serve's; [hooks] bgrun clone's; [on-exit] (NAME =
 * CMD) the commands a job's recorder starts when the job ends
 * (launcher/onexit.c).
 */
struct bgrun_config;

/* An empty configuration. -ENOMEM. */
BGRUN_EXTERN int bgrun_config_new(struct bgrun_config **ret_config);

/*
 * Reads the file at path (borrowed) into config, on top of what is there.
 * Returns 0, or -ENOENT when the file does not exist (config unchanged),
 * or -EINVAL (a parse error, an unreadable included file) or another
 * -errno: then bgrun_config_errmsg says "PATH:LINE: ..." and the items
 * read before the error stay.
 */
BGRUN_EXTERN int bgrun_config_read(struct bgrun_config *config,
				   const char *path);

/* The last failure's one-line message ("" if none); valid until the next call. */
BGRUN_EXTERN const char *bgrun_config_errmsg(const struct bgrun_config *config);

/*
 * The value of [section] name, or NULL. Valid until config changes. With
 * ret_where not NULL, *ret_where is "PATH:LINE" of its definition (or
 * "" for an item set by bgrun_config_set), for messages about the value.
 */
BGRUN_EXTERN const char *bgrun_config_get(const struct bgrun_config *config,
					  const char *section,
					  const char *name,
					  const char **ret_where);

/*
 * [section] name as a boolean: 1/yes/true/on or 0/no/false/off, any
 * case (Mercurial's words). 0 with *ret_value set; -ENOENT when unset
 * (*ret_value untouched); -EINVAL when it is something else (then
 * bgrun_config_errmsg says "PATH:LINE: [section] name: not a boolean").
 */
BGRUN_EXTERN int bgrun_config_get_bool(struct bgrun_config *config,
				       const char *section, const char *name,
				       bool *ret_value);

/*
 * The items of section in order: call with *iter 0, then again while it
 * returns true; *ret_name and *ret_value are valid until config changes.
 */
BGRUN_EXTERN bool bgrun_config_next(const struct bgrun_config *config,
				    const char *section, size_t *iter,
				    const char **ret_name,
				    const char **ret_value);

/* Sets [section] name (strings copied), moving it to the end. -ENOMEM. */
BGRUN_EXTERN int bgrun_config_set(struct bgrun_config *config,
				  const char *section, const char *name,
				  const char *value);

/* Accepts NULL. */
BGRUN_EXTERN void bgrun_config_free(struct bgrun_config *config);

/*
 * The user's bgrun configuration file, malloc'd into *ret_path:
 * $BGRUN_CONFIG when set (empty: none at all, -ENOENT), else
 * $XDG_CONFIG_HOME/bgrun/config (an absolute XDG_CONFIG_HOME), else
 * $HOME/.config/bgrun/config; -ENOENT when there is no such place,
 * -ENOMEM.
 */
BGRUN_EXTERN int bgrun_config_default_path(char **ret_path);

/*
 * Reads the user's bgrun configuration (bgrun_config_default_path; a
 * missing file is no error) into config, then makes its [log] db,
 * [log] strict, [sink] mode and [sink] socket the environment's BGRUN_DB,
 * BGRUN_STRICT_LOG, BGRUN_SINK and BGRUN_SOCKET, and its [output] capture,
 * max-size and dir BGRUN_OUTPUT, BGRUN_MAX_OUTPUT and BGRUN_OUTPUT_DIR,
 * where those are not set (an option on the command
 * line comes first, then the environment, then this file; a leading "~/"
 * in those paths is $HOME): the library
 * reads those, and so does every program of a supervised launch's chain
 * and any bgrun the command runs, all seeing the same settings. It
 * changes the environment: call it at a program's start, before any
 * thread exists. 0, or -errno with bgrun_config_errmsg saying why (the
 * file's path and line).
 */
BGRUN_EXTERN int bgrun_config_read_user(struct bgrun_config *config);

#ifdef __cplusplus
}
#endif

#endif /* BGRUN_CONFIG_H */
