/* SPDX-License-Identifier: MIT */
/* full.c: bgrun-full, the roles of bgrun that use the store: the recorder of a supervised launch, and `bgrun clone`. */

/*
 * Installed beside bgrun-start, not on PATH: bgrun executes it for
 * `bgrun clone` (with bgrun's arguments), bgrun-start (or launch.c, when
 * COMMAND cannot start) as the recorder, whose own options only
 * supervise.c parses.
 */

#include "cli.h"

#include <string.h>

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "clone") == 0)
		return clone_main(argc - 1, argv + 1);
	return supervise_main(argc, argv);
}
