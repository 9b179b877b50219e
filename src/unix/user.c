/* SPDX-License-Identifier: MIT */
/* user.c: a user's name from its uid on POSIX (getpwuid_r), for the dynamically linked programs and the shared library. */

/*
 * Not in the statically linked fronts (bgrun, logsink): there glibc's
 * getpwuid_r would load NSS modules at run time from whatever glibc is
 * installed, not the one linked. They link user-static.c instead.
 */

#include "platform.h"

#include <errno.h>
#include <pthread.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* User names, per uid, kept for the life of the process (few uids). */
struct user_name {
	struct user_name *next;
	uid_t uid;
	char *name; /* NULL: the uid has no name */
};
static pthread_mutex_t users_lock = PTHREAD_MUTEX_INITIALIZER;
static struct user_name *users;

static char *lookup_user(uid_t uid)
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

const char *bgrun__user_name(int64_t uid)
{
	struct user_name *u;
	const char *name = NULL;

	(void)pthread_mutex_lock(&users_lock);
	for (u = users; u != NULL; u = u->next)
		if (u->uid == uid)
			break;
	if (u == NULL) {
		/*
		 * Looked up under the lock: rare (once per uid), and it keeps
		 * the list free of duplicates.
		 */
		u = calloc(1, sizeof(*u));
		if (u != NULL) {
			u->uid = uid;
			u->name = lookup_user(uid);
			u->next = users;
			users = u;
		}
	}
	if (u != NULL)
		name = u->name;
	(void)pthread_mutex_unlock(&users_lock);
	return name;
}
