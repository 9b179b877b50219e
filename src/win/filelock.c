/* SPDX-License-Identifier: MIT */
/* filelock.c: the store's write lock on Windows: LockFileEx on one byte of the lock file, every wait bounded. */

/*
 * The same private interface as src/unix/filelock.c (src/platform.h),
 * not the same mechanism. LockFileEx is the Windows lock that the system
 * drops when its holder's process ends, like flock. A blocking
 * LockFileEx cannot be given a timeout on a handle that was not opened
 * for overlapped I/O (the C runtime's are not), so the lock is tried
 * (LOCKFILE_FAIL_IMMEDIATELY) and retried with a growing pause, up to
 * the bound: a stopped holder (a debugger) makes a writer fail with
 * -ETIMEDOUT, never wait without limit.
 *
 * There is no ticket queue: the POSIX queue lives in a shared page
 * woken through futexes, which have no cross-process Windows twin short
 * of named kernel objects per ticket. Waiters are therefore served in no
 * particular order (README, Windows, says so); each wait stays bounded.
 *
 * The locked byte is far past the end of the file: a locked range is
 * mandatory on Windows (reads and writes of it by other handles fail),
 * and nobody ever reads or writes there (SQLite's own locks are on the
 * database file, not this one, and use the same trick).
 */

#include "win.h"

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdlib.h>

#define LOCK_OFFSET_HIGH 0x7fffffffu
/* The pause between tries grows to this. */
#define POLL_MAX_NS (2 * INT64_C(1000000))

void bgrun__filelock_init(struct bgrun__filelock *l, int fd)
{
	*l = (struct bgrun__filelock){ .fd = fd };
}

void bgrun__filelock_destroy(struct bgrun__filelock *l)
{
	if (l->held)
		bgrun__filelock_release(l);
}

_Atomic uint32_t *bgrun__filelock_counter(struct bgrun__filelock *l)
{
	(void)l;
	return NULL;
}

int bgrun__filelock_open_sync(const char *path)
{
	WCHAR *w;
	int fd, r;

	r = bgrun__win_utf16(path, &w);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	/* Shared with SQLite's own handle, which shares read and write. */
	fd = _wopen(w, _O_RDWR | _O_BINARY | _O_NOINHERIT);
	free(w);
	return fd;
}

/* 1: ours; 0: held by someone else; -errno. */
static int try_lock(HANDLE h)
{
	OVERLAPPED o = { .Offset = 0, .OffsetHigh = LOCK_OFFSET_HIGH };

	if (LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY,
		       0, 1, 0, &o))
		return 1;
	if (GetLastError() == ERROR_LOCK_VIOLATION ||
	    GetLastError() == ERROR_IO_PENDING)
		return 0;
	return bgrun__win_errno(GetLastError());
}

int bgrun__filelock_acquire(struct bgrun__filelock *l, int64_t timeout_ns,
			    enum bgrun__filelock_bound bound)
{
	int64_t deadline = bgrun__now_ns(CLOCK_MONOTONIC) + timeout_ns, now;
	int64_t pause = 50000;
	HANDLE h;
	int r;

	(void)bound; /* no queue to watch move: the whole wait */
	if (l->held)
		return 0;
	h = (HANDLE)_get_osfhandle(l->fd);
	if (h == INVALID_HANDLE_VALUE)
		return -EBADF;
	for (;;) {
		r = try_lock(h);
		if (r < 0)
			return r;
		if (r > 0)
			break;
		now = bgrun__now_ns(CLOCK_MONOTONIC);
		if (now >= deadline)
			return -ETIMEDOUT;
		if (pause > deadline - now)
			pause = deadline - now;
		/*
		 * Sleep's unit is the millisecond (rounded to the timer's
		 * tick): below that, give the CPU away and try again.
		 */
		if (pause < 1000000)
			(void)SwitchToThread();
		else
			Sleep((DWORD)(pause / 1000000));
		pause = pause * 2 < POLL_MAX_NS ? pause * 2 : POLL_MAX_NS;
	}
	l->held = true;
	return 0;
}

void bgrun__filelock_release(struct bgrun__filelock *l)
{
	OVERLAPPED o = { .Offset = 0, .OffsetHigh = LOCK_OFFSET_HIGH };
	HANDLE h;

	if (!l->held)
		return;
	h = (HANDLE)_get_osfhandle(l->fd);
	if (h != INVALID_HANDLE_VALUE)
		(void)UnlockFileEx(h, 0, 1, 0, &o);
	l->held = false;
}

/* No mailboxes without the queue (above): each writer does its own work. */
int bgrun__filelock_acquire_mail(struct bgrun__filelock *l, int64_t timeout_ns,
				 enum bgrun__filelock_bound bound,
				 struct bgrun__filelock_mail *mail)
{
	(void)mail;
	return bgrun__filelock_acquire(l, timeout_ns, bound);
}

size_t bgrun__filelock_take(struct bgrun__filelock *l,
			    struct bgrun__filelock_taken *taken, size_t max)
{
	(void)l;
	(void)taken;
	(void)max;
	return 0;
}

void bgrun__filelock_settle(struct bgrun__filelock *l,
			    const struct bgrun__filelock_taken *taken,
			    const int32_t *results, size_t n)
{
	(void)l;
	(void)taken;
	(void)results;
	(void)n;
}
