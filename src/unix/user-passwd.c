/* SPDX-License-Identifier: MIT */
/* user-passwd.c: a user's name from /etc/passwd alone (fgetpwent_r), for the statically linked programs. */

/*
 * A static glibc program that calls getpwuid_r loads NSS modules at run
 * time from whatever glibc is installed, which need not be the one it was
 * linked with (the linker warns). fgetpwent_r only parses the file: no
 * module is ever loaded. A user that only a directory service knows has
 * no name here; the programs that record one (bgrun-record, the logsink
 * front's embedded `send`) then hand the work to their dynamically linked
 * twin, which asks NSS (launcher/record.c, logsink/front.c).
 */

#include "user.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *bgrun__user_lookup(uid_t uid)
{
	struct passwd pw, *found = NULL;
	char buf[4096], *name = NULL;
	FILE *f = fopen("/etc/passwd", "re");

	if (f == NULL)
		return NULL;
	for (;;) {
		/*
		 * A line too long for buf (ERANGE) ends the search too: glibc
		 * puts the stream back at its start, so reading on would read
		 * it again forever. The user then has no name here, and the
		 * caller hands the work to the program that asks NSS.
		 */
		if (fgetpwent_r(f, &pw, buf, sizeof(buf), &found) != 0)
			break;
		if (found->pw_uid == uid) {
			name = strdup(found->pw_name);
			break;
		}
	}
	(void)fclose(f);
	return name;
}
