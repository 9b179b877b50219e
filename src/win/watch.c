/* SPDX-License-Identifier: MIT */
/* watch.c: the exit watch on Windows: a thread-pool wait (RegisterWaitForSingleObject) on each adopted child's process handle. */

#include "win.h"

#include <errno.h>

/*
 * The system's wait threads wait on up to 63 handles each and grow as
 * needed, so no thread of ours is needed and no child is polled. Each
 * wait fires once (WT_EXECUTEONLYONCE), when the process has ended:
 * bgrun__reaper_ready then reaps it and removes the watch from within
 * the callback, which is why the removal does not wait for callbacks to
 * finish (that would wait for itself).
 */
static VOID CALLBACK on_exit(PVOID data, BOOLEAN timed_out)
{
	struct bgrun__watch *w = data;

	(void)timed_out;
	bgrun__reaper_ready(w->data);
}

int bgrun__watch_add(struct bgrun__watch *w, const struct bgrun__proc *proc,
		     void *data)
{
	HANDLE wait;

	if (proc->os.p == NULL)
		return -EINVAL;
	w->data = data;
	if (!RegisterWaitForSingleObject(&wait, proc->os.p->process, on_exit, w,
					 INFINITE,
					 WT_EXECUTEONLYONCE | WT_EXECUTEDEFAULT))
		return bgrun__win_errno(GetLastError());
	w->wait = wait;
	return 0;
}

void bgrun__watch_remove(struct bgrun__watch *w)
{
	/*
	 * The wait may not be registered yet in w->wait when its callback
	 * already runs (RegisterWaitForSingleObject returns after the
	 * callback may have started): the reaper's lock, held by add
	 * until w->wait is set and taken by the callback before it
	 * removes, orders the two.
	 */
	(void)UnregisterWaitEx(w->wait, NULL);
}

/* No fork on Windows: never called. */
void bgrun__watch_atfork(enum bgrun__fork_phase phase)
{
	(void)phase;
}
