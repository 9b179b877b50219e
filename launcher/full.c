/* SPDX-License-Identifier: MIT */
/* full.c: bgrun-full, the roles of bgrun that use the store: the recorder of a supervised launch, the job verbs and `bgrun clone`. */

/*
 * Installed beside bgrun-start, not on PATH: bgrun executes it for
 * its verbs (verbs.h: `bgrun ps`, `bgrun logs`, `bgrun clone`..., with
 * bgrun's arguments), bgrun-start (or launch.c, when
 * COMMAND cannot start) as the recorder, whose own options only
 * supervise.c parses.
 */

#include "cli.h"
#include "verbs.h"

#include <string.h>

int main(int argc, char **argv)
{
	const struct verb *v = argc > 1 ? verb_find(argv[1]) : NULL;

	/* The recorder's own options all begin with --_: never a verb. */
	if (v != NULL)
		return v->fn(argc - 1, argv + 1);
	return supervise_main(argc, argv);
}
