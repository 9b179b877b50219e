/* SPDX-License-Identifier: MIT */
/* verbs.c: the table of bgrun's verbs, and running those bgrun-full does. */

#include "verbs.h"
#include "cli.h"
#include "bgrun/util.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef BGRUN_VERBS_FULL
/*
 * In bgrun: bgrun-full does it (it links the store), with the same
 * arguments; returns only on failure.
 */
static int run_full(int argc, char **argv)
{
	char buf[PATH_MAX];
	const char *path = bgrun_helper_path(NULL, "bgrun-full",
					     BGRUN_FULL_PATH, buf, sizeof(buf));
	char **v = calloc((size_t)argc + 2, sizeof(*v));

	if (v == NULL) {
		cli_msg("%s", strerror(ENOMEM));
		return EXIT_CANCELED;
	}
	v[0] = (char *)"bgrun";
	memcpy(&v[1], argv, (size_t)argc * sizeof(*v));
	(void)execv(path, v);
	cli_msg("cannot run %s: %s", cli_printable(path), strerror(errno));
	free(v);
	return EXIT_CANCELED;
}
#define FULL(fn) run_full
#else
#define FULL(fn) fn
#endif

static const struct verb verbs[] = {
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
	(void)fputs("A program of a verb's name is launched with\n"
		    "'bgrun [OPTION]... -- NAME'.\n", f);
}
