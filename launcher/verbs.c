/* SPDX-License-Identifier: MIT */
/* verbs.c: the table of bgrun's verbs, and running the ones another program does. */

#include "verbs.h"
#include "cli.h"
#include "bgrun/util.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Executes program (found as bgrun_helper_path finds it) with argv0,
 * then the verb's arguments; returns only on failure.
 */
static int run_program(const char *name, const char *installed,
		       const char *argv0, const char *verb, int argc,
		       char **argv)
{
	char buf[PATH_MAX];
	const char *path = bgrun_helper_path(NULL, name, installed, buf,
					     sizeof(buf));
	char **v = calloc((size_t)argc + 2, sizeof(*v));

	if (v == NULL) {
		cli_msg("%s", strerror(ENOMEM));
		return EXIT_CANCELED;
	}
	v[0] = (char *)argv0;
	v[1] = (char *)verb;
	memcpy(&v[2], &argv[1], (size_t)(argc - 1) * sizeof(*v));
	(void)execv(path, v);
	cli_msg("cannot run %s: %s", cli_printable(path), strerror(errno));
	free(v);
	return EXIT_CANCELED;
}

#ifndef BGRUN_VERBS_FULL
/* In bgrun: bgrun-full does it, with the same arguments. */
static int run_full(int argc, char **argv)
{
	return run_program("bgrun-full", BGRUN_FULL_PATH, "bgrun", argv[0],
			   argc, argv);
}
#define FULL(fn) run_full
#else
#define FULL(fn) fn
#endif

/*
 * `bgrun show` is `logsink show`: the same program prints it, so that
 * both say the same. logsink-full is installed beside bgrun-full; in a
 * build tree it is in logsink/, beside launcher/.
 */
static int run_show(int argc, char **argv)
{
	return run_program("../logsink/logsink-full", LOGSINK_FULL_PATH,
			   "logsink", "show", argc, argv);
}

static const struct verb verbs[] = {
	{ "ps", FULL(jobs_ps_main), "list the running jobs (id, pid, age, command, tag)" },
	{ "kill", FULL(jobs_kill_main), "signal jobs by id (default SIGTERM), through their supervisor" },
	{ "wait", FULL(jobs_wait_main), "wait for jobs to end; exit with the last one's status" },
	{ "restart", FULL(jobs_restart_main), "launch a job's command again, as it was launched" },
	{ "show", run_show, "everything recorded about one job (logsink show)" },
	{ "logs", FULL(logs_main), "print a job's kept output; -f follows it to the job's end" },
	{ "clone", FULL(clone_main), "apply a Mercurial stream clone bundle (bgrun clone --help)" },
};

const struct verb *verb_find(const char *name)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(name, verbs[i].name) == 0)
			return &verbs[i];
	return NULL;
}

void verbs_help(FILE *f)
{
	(void)fputs("\nVerbs ('bgrun VERB --help' for their options):\n", f);
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		(void)fprintf(f, "  %-9s %s\n", verbs[i].name, verbs[i].help);
	(void)fputs("A verb is a reserved word: a program of that name is launched with\n"
		    "'bgrun [OPTION]... -- NAME'.\n"
		    "ID is a job's event id, or any part of it that no other id contains\n"
		    "(the ID column of 'bgrun ps' and 'logsink query' as shown).\n", f);
}
