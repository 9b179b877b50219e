/* SPDX-License-Identifier: MIT */
/* reap.c: the library's reaper thread for children nobody else waits for. */

#include "spawn-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

/*
 * A detached child is still our child until it exits: someone must wait
 * for it or it stays a zombie for as long as the caller lives. The library
 * cannot touch the process-wide SIGCHLD disposition, nor reap with
 * waitpid(-1) (that would steal the caller's own children), so one thread
 * watches the pidfd of each adopted child in an epoll set and reaps exactly
 * that pid when it becomes readable. Children without a pidfd (no
 * pidfd_open, or it failed, e.g. EMFILE) are polled with WNOHANG at
 * POLL_MS intervals instead.
 */
#define POLL_MS 20

struct entry {
	struct entry *next, **prevp;
	struct bgrun__proc proc;
};

static struct {
	pthread_mutex_t lock;
	struct entry *list;   /* every adopted child not yet reaped */
	int npolled;          /* of which without pidfd */
	int pending;
	int epfd, wakefd;
	bool started;
} R = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.epfd = -1,
	.wakefd = -1,
};

/* With R.lock held. */
static void drop(struct entry *e)
{
	*e->prevp = e->next;
	if (e->next != NULL)
		e->next->prevp = e->prevp;
	if (e->proc.pidfd < 0)
		R.npolled--;
	R.pending--;
	/*
	 * Leave the epoll set explicitly: close() alone would not, while a
	 * concurrent spawn's child holds a copy of the descriptor between
	 * its clone and its exec, and the set would report a freed entry.
	 */
	if (e->proc.pidfd >= 0)
		(void)epoll_ctl(R.epfd, EPOLL_CTL_DEL, e->proc.pidfd, NULL);
	bgrun__platform_close(&e->proc);
	free(e);
}

/* Reaps e if it has ended, or if its status is gone (ECHILD). */
static void try_reap(struct entry *e)
{
	struct bgrun_status st;

	if (bgrun__platform_reap(&e->proc, true, &st) != 0)
		drop(e);
}

static void *reaper_main(void *arg)
{
	struct epoll_event ev[64];

	(void)arg;
	for (;;) {
		int timeout, n;

		pthread_mutex_lock(&R.lock);
		timeout = R.npolled > 0 ? POLL_MS : -1;
		pthread_mutex_unlock(&R.lock);

		n = epoll_wait(R.epfd, ev, 64, timeout);
		pthread_mutex_lock(&R.lock);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == NULL) {
				uint64_t v;

				(void)!read(R.wakefd, &v, sizeof(v));
				continue;
			}
			try_reap(ev[i].data.ptr);
		}
		if (R.npolled > 0) {
			struct entry *e = R.list, *next;

			for (; e != NULL; e = next) {
				next = e->next;
				if (e->proc.pidfd < 0)
					try_reap(e);
			}
		}
		pthread_mutex_unlock(&R.lock);
	}
	return NULL;
}

/* With R.lock held. */
static int start(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	pthread_t t;
	int fd, r;

	fd = epoll_create1(EPOLL_CLOEXEC);
	R.epfd = fd < 0 ? -errno : bgrun__fd_high(fd, 3);
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	R.wakefd = fd < 0 ? -errno : bgrun__fd_high(fd, 3);
	r = R.epfd < 0 ? R.epfd : R.wakefd < 0 ? R.wakefd : 0;
	if (r == 0 && epoll_ctl(R.epfd, EPOLL_CTL_ADD, R.wakefd, &ev) < 0)
		r = -errno;
	if (r == 0)
		r = bgrun__thread_start(&t, reaper_main, NULL);
	if (r == 0) {
		R.started = true;
		return 0;
	}
	if (R.wakefd >= 0)
		(void)close(R.wakefd);
	if (R.epfd >= 0)
		(void)close(R.epfd);
	R.epfd = R.wakefd = -1;
	return r;
}

void bgrun__reaper_adopt(struct bgrun__proc *proc)
{
	struct bgrun_status st;
	struct entry *e;
	uint64_t one = 1;

	/* Already over? Then there is nothing to watch. */
	if (bgrun__platform_reap(proc, true, &st) != 0) {
		bgrun__platform_close(proc);
		return;
	}
	e = malloc(sizeof(*e));
	pthread_mutex_lock(&R.lock);
	if (e == NULL || (!R.started && start() < 0)) {
		/*
		 * Out of memory or threads: the only way left to avoid a
		 * zombie without blocking is to let it go; its exit status
		 * stays for a later adopt or for the caller's own waitpid.
		 */
		pthread_mutex_unlock(&R.lock);
		free(e);
		bgrun__platform_close(proc);
		return;
	}
	e->proc = *proc;
	e->next = R.list;
	e->prevp = &R.list;
	if (R.list != NULL)
		R.list->prevp = &e->next;
	R.list = e;
	R.pending++;
	if (e->proc.pidfd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = e };

		if (epoll_ctl(R.epfd, EPOLL_CTL_ADD, e->proc.pidfd, &ev) < 0)
			bgrun__platform_close(&e->proc);
	}
	if (e->proc.pidfd < 0) {
		R.npolled++;
		/* Wake the thread so that it starts polling. */
		(void)!write(R.wakefd, &one, sizeof(one));
	}
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
		return;
	}
	pthread_mutex_unlock(&R.lock);
	if (phase == BGRUN__FORK_PARENT)
		return;
	/*
	 * The children of the parent are not ours in a forked child, and the
	 * reaper thread is gone: forget both (their memory is left).
	 */
	R.list = NULL;
	R.npolled = R.pending = 0;
	if (R.epfd >= 0)
		(void)close(R.epfd);
	if (R.wakefd >= 0)
		(void)close(R.wakefd);
	R.epfd = R.wakefd = -1;
	R.started = false;
}
