/* SPDX-License-Identifier: MIT */
/* fd.c: handles: duplicates for queued launches, whole writes (Windows). */

#include "win.h"

#include <errno.h>

int bgrun__os_fd_dup(bgrun_os_fd_t fd, bgrun_os_fd_t *ret)
{
	HANDLE h;

	/* Not inheritable: only a launch's handle list passes handles on. */
	if (!DuplicateHandle(GetCurrentProcess(), fd, GetCurrentProcess(), &h,
			     0, FALSE, DUPLICATE_SAME_ACCESS))
		return bgrun__win_errno(GetLastError());
	*ret = h;
	return 0;
}

void bgrun__os_fd_close(bgrun_os_fd_t fd)
{
	(void)CloseHandle(fd);
}

bool bgrun__os_fd_bad(bgrun_os_fd_t fd)
{
	return fd == NULL || fd == INVALID_HANDLE_VALUE;
}

int bgrun__os_std_fd(int i, bgrun_os_fd_t *ret)
{
	static const DWORD std[3] = { STD_INPUT_HANDLE, STD_OUTPUT_HANDLE,
				      STD_ERROR_HANDLE };
	HANDLE h = GetStdHandle(std[i]);

	if (h == NULL || h == INVALID_HANDLE_VALUE)
		return -EBADF;
	*ret = h;
	return 0;
}

int bgrun__fd_write_all(bgrun_os_fd_t fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		DWORD chunk = len > 0x40000000 ? 0x40000000 : (DWORD)len, n;

		if (!WriteFile(fd, p, chunk, &n, NULL))
			return bgrun__win_errno(GetLastError());
		if (n == 0)
			return -EIO;
		p += n;
		len -= n;
	}
	return 0;
}
