/* SPDX-License-Identifier: MIT */
/* user.h: how a user's name is found (user-nss.c or user-passwd.c), for user.c, which keeps the names. */

#ifndef BGRUN_UNIX_USER_H
#define BGRUN_UNIX_USER_H

#include <sys/types.h>

/* The name of uid, malloc'd, or NULL (no name, or out of memory). */
char *bgrun__user_lookup(uid_t uid);

#endif
