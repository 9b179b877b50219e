/* SPDX-License-Identifier: MIT */
/* bgrun/test-control.h: the one private entry point for tests and benches (not installed, not exported by the shared libraries). */

#ifndef BGRUN_TEST_CONTROL_H
#define BGRUN_TEST_CONTROL_H

/*
 * As sqlite3_test_control: one call, an operation and its arguments, so
 * that the tests need no private header and the libraries export nothing
 * for them. It is in the static archives only (tests and benches link
 * those); an outside program cannot call it. Unknown operations return
 * -EINVAL.
 */

#include "bgrun/common.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum bgrun__test_op {
	/* (): the number of children the library's reaper still has. */
	BGRUN__TEST_REAPER_PENDING = 1,
	/* (const char *db, const struct bgrun_event *ev): writes ev into
	 * db's spool as a failed put would. */
	BGRUN__TEST_SPOOL_WRITE,
	/* (int (*fn)(int fd)): replaces close(2) for the files the clone
	 * pipeline writes, process-wide; NULL restores close(2). */
	BGRUN__TEST_CLONE_CLOSE_FN,
	/* (int how, const char *path, size_t len, char **ret, size_t
	 * *ret_len): Mercurial's store path encodings; how is one of
	 * BGRUN__TEST_PATH_*; *ret is malloc'd. */
	BGRUN__TEST_STORE_PATH,
	/* (const void *data, size_t len, unsigned char out[20]): SHA-1. */
	BGRUN__TEST_SHA1,
	/* (unsigned threads, size_t queue, int (*close_fn)(int), const int
	 * *fds, size_t n, int *ret_first_refused): submits fds to a closer
	 * pool; returns what finishing it returned; *ret_first_refused is
	 * the index of the first submit that reported an error, or -1. */
	BGRUN__TEST_CLOSER,
	/* (const void *data, size_t len, FILE *out): reads a bundle from
	 * memory, printing its header, each entry (offset, quoted name,
	 * size) and the error with its offset; returns the reader's
	 * result. */
	BGRUN__TEST_BUNDLE_LIST,
	/* (size_t i, const char **ret_name, const char **ret_column, const
	 * char **ret_sql): field i of the event-field table (src/event-
	 * fields.h): its member, its column and the column's declaration;
	 * -ENOENT past the last. */
	BGRUN__TEST_EVENT_FIELD,
	/* (): Windows only: the last Windows error code the library met
	 * that has no errno of its own (reported as EIO), or 0. */
	BGRUN__TEST_WIN_LAST_UNMAPPED,
	/* (int fd, int64_t timeout_ns): Windows only: takes the store's
	 * write lock (bgrun__filelock, src/platform.h) on the open lock file
	 * fd, as a writer would, and keeps it until the process ends;
	 * returns what acquiring it returned. */
	BGRUN__TEST_FILELOCK,
	/* (int how, void **lock, int fd, int64_t timeout_ns): POSIX: the
	 * store's write lock (bgrun__filelock, src/platform.h) by hand, one
	 * object per waiter: BGRUN__TEST_LOCK_NEW makes *lock on the open
	 * lock file fd; _TOTAL and _STILL acquire it with that bound and
	 * return what acquire returned; _STALL sets how long the queue must
	 * stand still before this waiter takes the lock over (timeout_ns;
	 * 0: the default); _RELEASE; _FREE destroys it. */
	BGRUN__TEST_FILELOCK_OP,
	/* (void (*fn)(void)): POSIX: fn, or NULL for none, is called by
	 * every store's checkpointer thread inside the part of its
	 * checkpoint that a fork() waits for, process-wide. */
	BGRUN__TEST_STORE_CHECKPOINT_HOOK,
	/* (void (*fn)(int where)): POSIX: fn, or NULL for none, is called
	 * by bgrun_sink_replay after each pass over the spool (where 0)
	 * and, once it found the spool empty, before it removes the
	 * spool's reason (where 1); process-wide. */
	BGRUN__TEST_REPLAY_HOOK,
};

enum {
	BGRUN__TEST_LOCK_NEW = 0,
	BGRUN__TEST_LOCK_TOTAL,
	BGRUN__TEST_LOCK_STILL,
	BGRUN__TEST_LOCK_RELEASE,
	BGRUN__TEST_LOCK_FREE,
	BGRUN__TEST_LOCK_STALL,
};

enum {
	BGRUN__TEST_PATH_ENCODEDIR = 0,
	BGRUN__TEST_PATH_DECODEDIR,
	BGRUN__TEST_PATH_HYBRID,         /* with dotencode */
	BGRUN__TEST_PATH_HYBRID_NODOT,   /* without */
};

int bgrun__test_control(int op, ...);

#ifdef __cplusplus
}
#endif

#endif /* BGRUN_TEST_CONTROL_H */
