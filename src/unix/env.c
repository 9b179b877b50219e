/* SPDX-License-Identifier: MIT */
/* env.c: what a launch request takes from the POSIX platform: the caller's environment, how variable names compare, the shell. */

#include "platform.h"

#include <string.h>

extern char **environ;

const char *const *bgrun__os_environ(void)
{
	return (const char *const *)environ;
}

/* Names are bytes, compared as they are: PATH and Path are two variables. */
bool bgrun__os_env_name_eq(const char *a, const char *b, size_t len)
{
	return strncmp(a, b, len) == 0;
}

const char *const *bgrun__os_shell_argv(void)
{
	static const char *const sh[] = { "/bin/sh", "-c", NULL };

	return sh;
}
