/* SPDX-License-Identifier: MIT */
/* fd.c: descriptors: the library's own kept clear of 0, 1 and 2, duplicates for queued launches, whole writes (POSIX). */

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

/* Close-on-exec and above 2, as every descriptor of the library's. */
int bgrun__os_fd_dup(int fd, int *ret)
{
	int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	if (d < 0)
		return -errno;
	*ret = d;
	return 0;
}

void bgrun__os_fd_close(int fd)
{
	(void)close(fd);
}

bool bgrun__os_fd_bad(int fd)
{
	return fd < 0;
}

int bgrun__os_std_fd(int i, int *ret)
{
	if (fcntl(i, F_GETFD) < 0)
		return -EBADF;
	*ret = i;
	return 0;
}

int bgrun__fd_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
