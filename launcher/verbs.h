/* SPDX-License-Identifier: MIT */
/* verbs.h: bgrun's verbs (`bgrun ps`, `bgrun kill ID`...): the one table, read by bgrun and by bgrun-full. */

#ifndef BGRUN_VERBS_H
#define BGRUN_VERBS_H

#include <stdbool.h>
#include <stdio.h>

/*
 * A verb: `bgrun NAME ARGS...`. fn gets the verb's arguments (argv[0] is
 * its name) and returns the exit code. A verb is a reserved word: as
 * bgrun's first argument it is the verb, and as COMMAND after options it
 * is a usage error (cli.c), so that `bgrun kill ID` can never launch
 * kill(1); a program of that name runs with `bgrun -- NAME ...`.
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

/* The "Commands:" section of `bgrun --help`, every verb in it. */
void verbs_help(FILE *f);

/* jobs.c (bgrun-full): the job verbs. */
int jobs_ps_main(int argc, char **argv);
int jobs_kill_main(int argc, char **argv);
int jobs_wait_main(int argc, char **argv);
int jobs_restart_main(int argc, char **argv);

/* logs.c (bgrun-full): `bgrun logs [-f] ID`. */
int logs_main(int argc, char **argv);

#endif /* BGRUN_VERBS_H */
