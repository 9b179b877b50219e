/* SPDX-License-Identifier: MIT */
/* user-static.c: the user's name in the statically linked fronts (bgrun, logsink): unknown. */

/*
 * A static glibc program that calls getpwuid_r loads NSS modules at run
 * time from whatever glibc is installed, which need not be the one it was
 * linked with (the linker warns). So the fronts name no user: bgrun never
 * records an event itself (its recorder is bgrun-full), and the logsink
 * front's `send` goes to the daemon, which names the user from the
 * kernel's word on who connected (logsink/serve-conn.c).
 */

#include "platform.h"

const char *bgrun__user_name(int64_t uid)
{
	(void)uid;
	return NULL;
}
