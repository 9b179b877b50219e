/* SPDX-License-Identifier: MIT */
/* os.h: the Windows platform's private types, which shared code holds but never looks inside (included by platform.h only). */

#ifndef BGRUN_WIN_OS_H
#define BGRUN_WIN_OS_H

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

/* One child in the exit watch (watch.c): a thread-pool wait on its process. */
struct bgrun__watch {
	void *wait; /* the RegisterWaitForSingleObject handle */
	void *data;
};

/* The space the file a struct stat describes takes: its size (the C runtime counts no blocks). */
#define BGRUN__STAT_SPACE(sb) ((int64_t)(sb)->st_size)

/* The characters that separate a path's components. */
#define BGRUN__PATH_SEPS "/\\"

#endif /* BGRUN_WIN_OS_H */
