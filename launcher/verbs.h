/* SPDX-License-Identifier: MIT */
/* verbs.h: bgrun's verbs (`bgrun logs ID`, `bgrun clone`...): the one table, read by bgrun and by bgrun-full. */

#ifndef BGRUN_VERBS_H
#define BGRUN_VERBS_H

#include <stdio.h>

/*
 * A verb: `bgrun NAME ARGS...`, as bgrun's first argument. fn gets the
 * verb's arguments (argv[0] is its name) and returns the exit code. A
 * program of that name runs with `bgrun -- NAME ...`.
 *
 * The table is verbs.c's, compiled into both programs. In bgrun (which
 * links no SQLite) the verbs that read the log execute bgrun-full with
 * the same arguments; in bgrun-full (-DBGRUN_VERBS_FULL) they run.
 */
struct verb {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help; /* one line for `bgrun --help` */
};

/* The verb called name, or NULL. */
const struct verb *verb_find(const char *name);

/* The verbs' section of `bgrun --help`. */
void verbs_help(FILE *f);

/* logs.c (bgrun-full): `bgrun logs [-f] ID`. */
int logs_main(int argc, char **argv);

#endif /* BGRUN_VERBS_H */
