/* SPDX-License-Identifier: MIT */
/* user.c: a user's name from its uid on POSIX, looked up once per uid (user-nss.c, or user-passwd.c in the static programs). */

#include "platform.h"
#include "user.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/types.h>

/* User names, per uid, kept for the life of the process (few uids). */
struct user_name {
	struct user_name *next;
	uid_t uid;
	char *name; /* NULL: the uid has no name */
};
static pthread_mutex_t users_lock = PTHREAD_MUTEX_INITIALIZER;
static struct user_name *users;

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
			u->name = bgrun__user_lookup((uid_t)uid);
			u->next = users;
			users = u;
		}
	}
	if (u != NULL)
		name = u->name;
	(void)pthread_mutex_unlock(&users_lock);
	return name;
}
