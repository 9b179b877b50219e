/* SPDX-License-Identifier: MIT */
/* reap.c: the library's reaper for children nobody else waits for: what it has adopted, and reaping them when the platform's exit watch says so. */

#include "spawn-internal.h"

#include <errno.h>
#include <stdlib.h>

/*
 * A detached child is still our child until it exits: someone must wait
 * for it or it stays a zombie for as long as the caller lives. The library
 * cannot touch the process-wide SIGCHLD disposition, nor reap with
 * waitpid(-1) (that would steal the caller's own children), so each
 * adopted child is put in the platform's exit watch (platform.h), which
 * calls bgrun__reaper_ready when that child may have ended; exactly that
 * child is then reaped.
 */
struct entry {
	struct entry *next, **prevp;
	struct bgrun__proc proc;
	struct bgrun__watch watch;
};

static struct {
	pthread_mutex_t lock;
	struct entry *list;   /* every adopted child not yet reaped */
	int pending;
} R = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

/* With R.lock held, from bgrun__reaper_ready only (platform.h says why). */
static void drop(struct entry *e)
{
	*e->prevp = e->next;
	if (e->next != NULL)
		e->next->prevp = e->prevp;
	R.pending--;
	bgrun__watch_remove(&e->watch);
	bgrun__platform_close(&e->proc);
	free(e);
}

void bgrun__reaper_ready(void *data)
{
	struct entry *e = data;
	struct bgrun_status st;

	pthread_mutex_lock(&R.lock);
	/* Reaped now, or its status is gone (ECHILD): either way, done. */
	if (bgrun__platform_reap(&e->proc, true, &st) != 0)
		drop(e);
	pthread_mutex_unlock(&R.lock);
}

void bgrun__reaper_adopt(struct bgrun__proc *proc)
{
	struct entry *e;

	/*
	 * Not reaped here even if it is already over: the watch reports a
	 * child that has ended as soon as it is added (platform.h), and a
	 * launch adopts its child on the caller's clock.
	 */
	e = malloc(sizeof(*e));
	if (e != NULL)
		e->proc = *proc;
	pthread_mutex_lock(&R.lock);
	if (e == NULL || bgrun__watch_add(&e->watch, &e->proc, e) < 0) {
		/*
		 * Out of memory or threads: the only way left to avoid a
		 * zombie without blocking is to let it go; its exit status
		 * stays for a later adopt or for the caller's own waitpid.
		 */
		pthread_mutex_unlock(&R.lock);
		bgrun__platform_close(e != NULL ? &e->proc : proc);
		free(e);
		return;
	}
	/* The watch may report it at once: it waits for R.lock. */
	e->next = R.list;
	e->prevp = &R.list;
	if (R.list != NULL)
		R.list->prevp = &e->next;
	R.list = e;
	R.pending++;
	pthread_mutex_unlock(&R.lock);
}

int bgrun__reaper_pending(void)
{
	int n;

	pthread_mutex_lock(&R.lock);
	n = R.pending;
	pthread_mutex_unlock(&R.lock);
	return n;
}

void bgrun__reaper_atfork(enum bgrun__fork_phase phase)
{
	if (phase == BGRUN__FORK_PREPARE) {
		pthread_mutex_lock(&R.lock);
		bgrun__watch_atfork(phase);
		return;
	}
	bgrun__watch_atfork(phase);
	if (phase == BGRUN__FORK_CHILD) {
		/*
		 * The children of the parent are not ours in a forked child,
		 * and the watcher is gone: forget them (their memory is left).
		 */
		R.list = NULL;
		R.pending = 0;
	}
	pthread_mutex_unlock(&R.lock);
}
