/* SPDX-License-Identifier: MIT */
/* test-control.c: bgrun__test_control in the Windows build: the operations of the modules it has (include/bgrun/test-control.h). */

/*
 * src/test-control.c reaches into the clone pipeline and other parts
 * that the Windows tests do not link: this one answers what it can (the
 * spool's write among it) and -ENOSYS for the rest, so that a test can
 * tell.
 */
#include "bgrun/test-control.h"
#include "sink/sink-internal.h"
#include "spawn/spawn-internal.h"
#include "win.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

/* Kept until the process ends (never destroyed: the case wants it held). */
static int hold_lock(int fd, int64_t timeout_ns)
{
	struct bgrun__filelock *l = malloc(sizeof(*l));

	if (l == NULL)
		return -ENOMEM;
	bgrun__filelock_init(l, fd);
	return bgrun__filelock_acquire(l, timeout_ns, BGRUN__FILELOCK_TOTAL);
}

int bgrun__test_control(int op, ...)
{
	switch (op) {
	case BGRUN__TEST_FILELOCK: {
		va_list ap;
		int fd, r;
		int64_t timeout_ns;

		va_start(ap, op);
		fd = va_arg(ap, int);
		timeout_ns = va_arg(ap, int64_t);
		va_end(ap);
		r = hold_lock(fd, timeout_ns);
		return r;
	}
	case BGRUN__TEST_REAPER_PENDING:
		return bgrun__reaper_pending();
	case BGRUN__TEST_WIN_LAST_UNMAPPED:
		return (int)bgrun__win_last_unmapped;
	case BGRUN__TEST_SPOOL_WRITE: {
		const struct bgrun_event *ev;
		const char *db;
		va_list ap;

		va_start(ap, op);
		db = va_arg(ap, const char *);
		ev = va_arg(ap, const struct bgrun_event *);
		va_end(ap);
		return bgrun__spool_write(db, ev);
	}
	case BGRUN__TEST_REPLAY_HOOK: {
		va_list ap;

		va_start(ap, op);
		bgrun__replay_set_hook(va_arg(ap, void (*)(int)));
		va_end(ap);
		return 0;
	}
	case BGRUN__TEST_CLONE_CLOSE_FN:
	case BGRUN__TEST_STORE_PATH:
	case BGRUN__TEST_SHA1:
	case BGRUN__TEST_CLOSER:
	case BGRUN__TEST_BUNDLE_LIST:
	case BGRUN__TEST_EVENT_FIELD:
		return -ENOSYS;
	}
	return -EINVAL;
}
