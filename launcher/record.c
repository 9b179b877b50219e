/* SPDX-License-Identifier: MIT */
/* record.c: bgrun-record, the recorder of a supervised launch (supervise.c), alone in a program of its own. */

/*
 * Why not bgrun-full: every logged launch starts a recorder, and on a
 * 2-CPU machine its start-up is taken from whatever runs next.
 * bgrun-full is dynamic, with every verb and the clone pipeline; this
 * program links only the store, statically where the fronts are
 * (meson.build): no dynamic loader at all, and only the pages it
 * touches. docs/benchmarks.md, "The recorder linked statically,
 * again": a third less CPU in the recorder, 17% less per logged launch.
 *
 * A statically linked glibc program names users from /etc/passwd only
 * (src/unix/user-passwd.c). When the user is not there (a directory
 * service), this program executes bgrun-full with the same arguments and
 * descriptors, which asks NSS: the row names the user either way.
 */

#include "cli.h"
#include "bgrun/event.h"
#include "bgrun/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
#ifdef BGRUN_RECORD_STATIC
	if (bgrun_user_name((int64_t)getuid()) == NULL) {
		char path[PATH_MAX];
		const char *full = bgrun_helper_path(NULL, "bgrun-full",
						     BGRUN_FULL_PATH, path,
						     sizeof(path));

		(void)execv(full, argv);
		/* Then record here, without the user's name. */
		(void)fprintf(stderr, "bgrun-record: cannot run %s: %s\n",
			      full, strerror(errno));
	}
#endif
	return supervise_main(argc, argv);
}
