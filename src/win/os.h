/* SPDX-License-Identifier: MIT */
/* os.h: the Windows platform's private types, which shared code holds but never looks inside (included by platform.h only). */

#ifndef BGRUN_WIN_OS_H
#define BGRUN_WIN_OS_H

#include <stddef.h>

/*
 * Kept free of <windows.h>: the shared code that includes platform.h
 * must not see the Windows API (tests/layout.sh). Handles are void *.
 */

/*
 * The clock the library's condition variables time out on (spawn/child.c):
 * winpthreads' pthread_cond_timedwait reads its deadline on the system
 * time, whatever pthread_condattr_setclock was told.
 */
#define BGRUN__COND_CLOCK CLOCK_REALTIME

struct bgrun__win_proc; /* spawn.c: the process and job handles, kill state */

/* A launched child, as the platform knows it (struct bgrun__proc.os). */
struct bgrun__os_proc {
	struct bgrun__win_proc *p; /* NULL when never launched or closed */
};
#define BGRUN__OS_PROC_INIT { .p = 0 }

/*
 * A directory files are named relative to (dir.c): its full path in
 * UTF-16 with the \\?\ prefix (malloc'd), which names are appended to.
 * Windows has no openat: a path is what the system can be given, and a
 * directory held by path, not by handle, can still be renamed (a
 * directory with an open handle inside it cannot).
 */
struct bgrun__dir {
	wchar_t *path; /* NULL when closed */
	size_t len;    /* its length in characters */
};
#define BGRUN__DIR_INIT { .path = 0, .len = 0 }

/*
 * A connection to the sink daemon (sinkconn.c): a named pipe client
 * and its overlapped reads and writes.
 */
struct bgrun__win_sinkconn;
struct bgrun__sinkconn {
	struct bgrun__win_sinkconn *p; /* NULL when closed */
};
#define BGRUN__SINKCONN_INIT { .p = 0 }

/* The C runtime has no <sys/uio.h>: the POSIX buffer list, for bgrun__file_readv. */
struct iovec {
	void *iov_base;
	size_t iov_len;
};

/* GNU C library calls the shared code uses that mingw's runtime lacks (gnu-string.c). */
void *memrchr(const void *s, int c, size_t n);
void *memmem(const void *hay, size_t hay_len, const void *needle,
	     size_t needle_len);
char *strndup(const char *s, size_t n);

/* One child in the exit watch (watch.c): a thread-pool wait on its process. */
struct bgrun__watch {
	void *wait; /* the RegisterWaitForSingleObject handle */
	void *data;
};

/* The space the file a struct stat describes takes: its size (the C runtime counts no blocks). */
#define BGRUN__STAT_SPACE(sb) ((int64_t)(sb)->st_size)

/* The characters that separate a path's components. */
#define BGRUN__PATH_SEPS "/\\"

/*
 * The clone's closer threads by default when writer threads write the
 * files (src/clone/wpool.c): the usual 4, CloseHandle being the slow
 * call on NTFS (seed 000).
 */
#define BGRUN__CLOSERS_BEHIND_WRITERS 4

#endif /* BGRUN_WIN_OS_H */
