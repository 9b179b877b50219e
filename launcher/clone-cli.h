/* SPDX-License-Identifier: MIT */
/* clone-cli.h: what `bgrun clone` shares between its command line (clone.c) and its hooks (clone-hooks.c). */

#ifndef BGRUN_CLONE_CLI_H
#define BGRUN_CLONE_CLI_H

#include "cli.h"

#include <stdbool.h>
#include <stddef.h>

/* One hook (borrowed from struct hooks). */
struct hook {
	const char *name;
	const char *cmd;
};

/* The [hooks] items, in definition order (priority.NAME ones included). */
struct hooks {
	struct bgrun_config *config; /* NULL until the first one */
};

/* Sets name to cmd, moving it to the end (Mercurial's order). -ENOMEM. */
int hooks_set(struct hooks *h, const char *name, const char *cmd);

/*
 * Adds the [hooks] of a Mercurial-syntax file (bgrun/config.h). A missing
 * file is skipped when missing_ok. Sets *errmsg (not a ret_* parameter: it
 * is for failures): NULL, or on failure a malloc'd one-line message
 * ("FILE:LINE: parse error", never the line's text).
 */
int hooks_load(struct hooks *h, const char *path, bool missing_ok,
	       char **errmsg);
void hooks_free(struct hooks *h);

/* How to run the hooks of one type. */
struct hook_run {
	const char *type;        /* "post-clone" or "fail-clone" */
	const char *cwd;         /* where they run; NULL: here */
	const char *const *env;  /* NAME=VALUE describing the clone */
	const char *db;          /* --db, passed to their supervisors */
	bool log;                /* through a recording supervisor */
	bool verbose;
	bool wait;               /* --wait: until they have finished */
};

/*
 * Launches, detached and with ensurestart, every hook of run->type, with
 * HG_HOOKTYPE and HG_HOOKNAME added to run->env. Returns how many could
 * not be started (each reported on stderr); with run->wait, it then
 * waits for the others and counts those that failed too (each said).
 */
int hooks_run(const struct hooks *h, const struct hook_run *run);

#endif /* BGRUN_CLONE_CLI_H */
