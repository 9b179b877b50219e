/* SPDX-License-Identifier: MIT */
/* watch.c: the exit watch on POSIX: one thread waits on the pidfds of the reaper's children in an epoll set, and polls those without one. */

#include "platform.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

/*
 * A pidfd becomes readable when its process ends, so one epoll_wait
 * covers every child that has one. A child without a pidfd is reported
 * every POLL_MS instead (the reaper then tries a WNOHANG reap); the
 * eventfd wakes the thread when the first such child arrives, so that
 * epoll_wait stops waiting forever.
 */
#define POLL_MS 20

static struct {
	pthread_mutex_t lock;
	struct bgrun__watch *polled; /* the watches without a pidfd */
	int npolled;
	int epfd, wakefd;
	bool started;
} W = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.epfd = -1,
	.wakefd = -1,
};

/*
 * Reports every polled watch. Only bgrun__reaper_ready, called here, may
 * remove a watch, and only the one reported; adds go to the head. So the
 * next watch, read under the lock before the report, is still listed.
 */
static void report_polled(void)
{
	struct bgrun__watch *w, *next;

	pthread_mutex_lock(&W.lock);
	for (w = W.polled; w != NULL; w = next) {
		next = w->next;
		pthread_mutex_unlock(&W.lock);
		bgrun__reaper_ready(w->data);
		pthread_mutex_lock(&W.lock);
	}
	pthread_mutex_unlock(&W.lock);
}

static void *watcher_main(void *arg)
{
	struct epoll_event ev[64];

	(void)arg;
	for (;;) {
		int timeout, n;

		pthread_mutex_lock(&W.lock);
		timeout = W.npolled > 0 ? POLL_MS : -1;
		pthread_mutex_unlock(&W.lock);

		n = epoll_wait(W.epfd, ev, 64, timeout);
		for (int i = 0; i < n; i++) {
			struct bgrun__watch *w = ev[i].data.ptr;

			if (w == NULL) {
				uint64_t v;

				(void)!read(W.wakefd, &v, sizeof(v));
				continue;
			}
			bgrun__reaper_ready(w->data);
		}
		report_polled();
	}
	return NULL;
}

/* With W.lock held. */
static int start(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	pthread_t t;
	int fd, r;

	fd = epoll_create1(EPOLL_CLOEXEC);
	W.epfd = fd < 0 ? -errno : bgrun__fd_high(fd, 3);
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	W.wakefd = fd < 0 ? -errno : bgrun__fd_high(fd, 3);
	r = W.epfd < 0 ? W.epfd : W.wakefd < 0 ? W.wakefd : 0;
	if (r == 0 && epoll_ctl(W.epfd, EPOLL_CTL_ADD, W.wakefd, &ev) < 0)
		r = -errno;
	if (r == 0)
		r = bgrun__thread_start(&t, watcher_main, NULL);
	if (r == 0) {
		W.started = true;
		return 0;
	}
	if (W.wakefd >= 0)
		(void)close(W.wakefd);
	if (W.epfd >= 0)
		(void)close(W.epfd);
	W.epfd = W.wakefd = -1;
	return r;
}

int bgrun__watch_add(struct bgrun__watch *w, const struct bgrun__proc *proc,
		     void *data)
{
	uint64_t one = 1;
	int r = 0;

	pthread_mutex_lock(&W.lock);
	if (!W.started)
		r = start();
	if (r < 0) {
		pthread_mutex_unlock(&W.lock);
		return r;
	}
	w->data = data;
	w->fd = proc->os.pidfd;
	if (w->fd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = w };

		if (epoll_ctl(W.epfd, EPOLL_CTL_ADD, w->fd, &ev) < 0)
			w->fd = -1; /* e.g. ENOSPC (max_user_watches): poll it */
	}
	if (w->fd < 0) {
		w->next = W.polled;
		w->prevp = &W.polled;
		if (W.polled != NULL)
			W.polled->prevp = &w->next;
		W.polled = w;
		/* Wake the thread so that it starts polling. */
		if (W.npolled++ == 0)
			(void)!write(W.wakefd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&W.lock);
	return 0;
}

void bgrun__watch_remove(struct bgrun__watch *w)
{
	pthread_mutex_lock(&W.lock);
	if (w->fd >= 0) {
		/*
		 * Leave the epoll set explicitly: closing the pidfd alone
		 * would not, while a concurrent spawn's child holds a copy of
		 * the descriptor between its clone and its exec, and the set
		 * would report a freed watch.
		 */
		(void)epoll_ctl(W.epfd, EPOLL_CTL_DEL, w->fd, NULL);
	} else {
		*w->prevp = w->next;
		if (w->next != NULL)
			w->next->prevp = w->prevp;
		W.npolled--;
	}
	pthread_mutex_unlock(&W.lock);
}

void bgrun__watch_atfork(enum bgrun__fork_phase phase)
{
	if (phase == BGRUN__FORK_PREPARE) {
		pthread_mutex_lock(&W.lock);
		return;
	}
	if (phase == BGRUN__FORK_CHILD) {
		/* The watcher thread does not exist here: start afresh. */
		if (W.epfd >= 0)
			(void)close(W.epfd);
		if (W.wakefd >= 0)
			(void)close(W.wakefd);
		W.epfd = W.wakefd = -1;
		W.polled = NULL;
		W.npolled = 0;
		W.started = false;
	}
	pthread_mutex_unlock(&W.lock);
}
