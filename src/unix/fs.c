/* SPDX-License-Identifier: MIT */
/* fs.c: directories: mkdir -p (POSIX). */

#include "platform.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/*
 * Each prefix of the path ending before a slash, then the whole path, is
 * made in turn; one that exists already is left as it is (its mode
 * too). Only the last is checked to be a directory: a file in the middle
 * makes the next mkdir fail with ENOTDIR anyway.
 */
int bgrun__mkdir_p(const char *path, unsigned mode)
{
	struct stat st;
	char *copy;
	int r = 0;

	if (path == NULL || path[0] == '\0')
		return -EINVAL;
	copy = strdup(path);
	if (copy == NULL)
		return -ENOMEM;
	for (char *p = copy + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		if (p[-1] == '/') {
			if (c == '\0')
				break;
			continue; /* a doubled or trailing slash */
		}
		*p = '\0';
		if (mkdir(copy, (mode_t)mode) < 0 && errno != EEXIST) {
			r = -errno;
			break;
		}
		*p = c;
		if (c == '\0')
			break;
	}
	if (r == 0 && stat(copy, &st) < 0)
		r = -errno;
	else if (r == 0 && !S_ISDIR(st.st_mode))
		r = -ENOTDIR;
	free(copy);
	return r;
}
