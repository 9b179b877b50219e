/* SPDX-License-Identifier: MIT */
/* os.h: the POSIX platform's private types, which shared code holds but never looks inside (included by platform.h only). */

#ifndef BGRUN_UNIX_OS_H
#define BGRUN_UNIX_OS_H

#include <stdbool.h>
#include <sys/uio.h> /* struct iovec, for bgrun__file_readv */

/* The clock the library's condition variables time out on (spawn/child.c). */
#define BGRUN__COND_CLOCK CLOCK_MONOTONIC

/* A launched child, as the platform knows it (struct bgrun__proc.os). */
struct bgrun__os_proc {
	int pidfd; /* -1 when pidfds are unavailable */
};
#define BGRUN__OS_PROC_INIT { .pidfd = -1 }

/* A directory files are named relative to (dir.c): a descriptor. */
struct bgrun__dir {
	int fd; /* -1 when closed */
};
#define BGRUN__DIR_INIT { .fd = -1 }

/* A connection to the sink daemon (sinkconn.c): a Unix stream socket. */
struct bgrun__sinkconn {
	int fd; /* -1 when closed */
};
#define BGRUN__SINKCONN_INIT { .fd = -1 }

/*
 * One child in the exit watch (watch.c). With a pidfd it is in the
 * watcher's epoll set; without one (no pidfd_open, or it failed, e.g.
 * EMFILE) it is on the list the watcher polls.
 */
struct bgrun__watch {
	struct bgrun__watch *next, **prevp; /* the polled list */
	int fd;                             /* in the epoll set; -1: polled */
	void *data;
};

/* The space the file a struct stat describes takes: its blocks (a hole takes none). */
#define BGRUN__STAT_SPACE(sb) ((int64_t)(sb)->st_blocks * 512)

/* The characters that separate a path's components. */
#define BGRUN__PATH_SEPS "/"

/*
 * The clone's closer threads by default when writer threads write the
 * files (src/clone/wpool.c): none, closing is cheap on a local file
 * system here and the writers close their own files (a hand-over per
 * file to closers costs more than the close).
 */
#define BGRUN__CLOSERS_BEHIND_WRITERS 0

#endif /* BGRUN_UNIX_OS_H */
