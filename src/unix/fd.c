/* SPDX-License-Identifier: MIT */
/* fd.c: the library's own descriptors kept clear of 0, 1 and 2 (POSIX). */

#include "platform.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/* Moves a descriptor of ours (consumed) to `low` or above. */
int bgrun__fd_high(int fd, int low)
{
	int h;

	if (fd >= low)
		return fd;
	h = fcntl(fd, F_DUPFD_CLOEXEC, low);
	if (h < 0)
		h = -errno;
	(void)close(fd);
	return h;
}
