/* SPDX-License-Identifier: MIT */
/* user-nss.c: a user's name through NSS (getpwuid_r), for the dynamically linked programs and the shared libraries. */

/*
 * Not in the statically linked programs: there glibc's getpwuid_r would
 * load NSS modules at run time from whatever glibc is installed, not the
 * one linked. They link user-passwd.c instead.
 */

#include "user.h"

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

char *bgrun__user_lookup(uid_t uid)
{
	struct passwd pw, *found = NULL;
	size_t size = 4096;
	char *buf = NULL, *name = NULL, *grown;
	int r;

	for (;;) {
		grown = realloc(buf, size);
		if (grown == NULL)
			goto cleanup;
		buf = grown;
		r = getpwuid_r(uid, &pw, buf, size, &found);
		if (r == ERANGE && size < 1024 * 1024) {
			size *= 2;
			continue;
		}
		if (r == EINTR)
			continue;
		break;
	}
	if (r == 0 && found != NULL)
		name = strdup(found->pw_name);
cleanup:
	free(buf);
	return name;
}
