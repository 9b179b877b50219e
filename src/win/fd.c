/* SPDX-License-Identifier: MIT */
/* fd.c: handles: duplicates for queued launches, whole writes, a lock on a file (Windows). */

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

/*
 * One byte far past any data the file will hold: Windows' byte-range
 * locks are mandatory, and one on the data would stop anyone but the
 * holder from reading the file (a clone's owner file while its clone
 * runs, src/clone/stale.c). Released when the handle is closed (or its
 * process ends). Here rather than in dir.c, which only the clone's
 * archive has: the spool's replay (sink.c) locks too.
 */
int bgrun__file_trylock(bgrun_os_fd_t fd)
{
	OVERLAPPED ov = { .Offset = 0, .OffsetHigh = 0x40000000 };

	if (LockFileEx(fd, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY,
		       0, 1, 0, &ov))
		return 0;
	if (GetLastError() == ERROR_LOCK_VIOLATION ||
	    GetLastError() == ERROR_IO_PENDING)
		return -EWOULDBLOCK;
	if (GetLastError() == ERROR_NOT_SUPPORTED ||
	    GetLastError() == ERROR_INVALID_FUNCTION)
		return -ENOLCK;
	return bgrun__win_errno(GetLastError());
}
