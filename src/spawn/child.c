/* SPDX-License-Identifier: MIT */
/* child.c: the caller's handle on a launched child: start outcome, wait, kill. */

#include "spawn-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

enum child_state {
	CHILD_QUEUED,  /* ensurestart off: not launched yet */
	CHILD_RUNNING, /* launched, not reaped */
	CHILD_FAILED,  /* the launch failed: error, failure */
	CHILD_DONE,    /* reaped: status; or its status was lost: error */
};

/*
 * THREAD SAFETY: lock guards state, proc, error, released and disowned,
 * because the spawner thread completes a queued launch while the caller
 * may be waiting on the handle or freeing it. refs counts the caller's
 * handle plus a queued launch that still points at the child.
 */
struct bgrun_child {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int refs;
	enum child_state state;
	bool released;
	bool disowned; /* released without handing the child to the reaper */
	struct bgrun__proc proc;
	int error;
	struct bgrun_failure failure;
	struct bgrun_status status;
};

struct bgrun_child *bgrun__child_new(void)
{
	struct bgrun_child *c = calloc(1, sizeof(*c));
	pthread_condattr_t ca;

	if (c == NULL)
		return NULL;
	(void)pthread_condattr_init(&ca);
	(void)pthread_condattr_setclock(&ca, BGRUN__COND_CLOCK);
	(void)pthread_mutex_init(&c->lock, NULL);
	(void)pthread_cond_init(&c->cond, &ca);
	(void)pthread_condattr_destroy(&ca);
	c->refs = 1;
	c->state = CHILD_QUEUED;
	c->proc = (struct bgrun__proc)BGRUN__PROC_INIT;
	return c;
}

void bgrun__child_ref(struct bgrun_child *c)
{
	pthread_mutex_lock(&c->lock);
	c->refs++;
	pthread_mutex_unlock(&c->lock);
}

void bgrun__child_unref(struct bgrun_child *c)
{
	bool last;

	pthread_mutex_lock(&c->lock);
	last = --c->refs == 0;
	pthread_mutex_unlock(&c->lock);
	if (!last)
		return;
	(void)pthread_mutex_destroy(&c->lock);
	(void)pthread_cond_destroy(&c->cond);
	free(c);
}

/* Takes the handle's reference to proc; hands it to the reaper if freed. */
void bgrun__child_set_started(struct bgrun_child *c,
			      const struct bgrun__proc *proc)
{
	struct bgrun__proc orphan = *proc;
	bool released, disowned;

	pthread_mutex_lock(&c->lock);
	released = c->released;
	disowned = c->disowned;
	if (!released)
		c->proc = *proc;
	c->state = CHILD_RUNNING;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (disowned)
		bgrun__platform_close(&orphan);
	else if (released)
		bgrun__reaper_adopt(&orphan);
}

void bgrun__child_set_failed(struct bgrun_child *c, int error,
			     const struct bgrun_failure *failure)
{
	pthread_mutex_lock(&c->lock);
	c->state = CHILD_FAILED;
	c->error = error;
	c->failure = *failure;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

/* Waits, with c->lock held, while the launch is queued. */
static int wait_launched(struct bgrun_child *c, int timeout_ms)
{
	struct timespec deadline;

	if (timeout_ms >= 0) {
		int64_t ns = bgrun__now_ns(BGRUN__COND_CLOCK) +
			     (int64_t)timeout_ms * 1000000;

		deadline.tv_sec = ns / 1000000000;
		deadline.tv_nsec = ns % 1000000000;
	}
	while (c->state == CHILD_QUEUED) {
		if (timeout_ms < 0)
			pthread_cond_wait(&c->cond, &c->lock);
		else if (pthread_cond_timedwait(&c->cond, &c->lock,
						&deadline) == ETIMEDOUT)
			return -ETIMEDOUT;
	}
	return 0;
}

bgrun_pid_t bgrun_child_started(struct bgrun_child *c,
				struct bgrun_failure *ret_failure)
{
	bgrun_pid_t r;

	pthread_mutex_lock(&c->lock);
	(void)wait_launched(c, -1);
	if (c->state == CHILD_FAILED) {
		r = c->error;
		if (ret_failure != NULL)
			*ret_failure = c->failure;
	} else {
		r = c->proc.pid;
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

bgrun_pid_t bgrun_child_pid(const struct bgrun_child *c)
{
	struct bgrun_child *m = (struct bgrun_child *)c;
	bgrun_pid_t pid;

	pthread_mutex_lock(&m->lock);
	pid = m->state == CHILD_FAILED ? 0 : m->proc.pid;
	pthread_mutex_unlock(&m->lock);
	return pid;
}

int bgrun_child_wait(struct bgrun_child *c, int timeout_ms,
		     struct bgrun_status *ret_status)
{
	struct bgrun_status st;
	int64_t start = bgrun__now_ns(CLOCK_MONOTONIC);
	int r;

	pthread_mutex_lock(&c->lock);
	r = wait_launched(c, timeout_ms);
	if (r == 0 && c->state == CHILD_FAILED)
		r = c->error;
	if (r == 0 && c->state == CHILD_DONE) {
		r = c->error;
		if (r == 0)
			*ret_status = c->status;
	}
	if (r < 0 || c->state == CHILD_DONE) {
		pthread_mutex_unlock(&c->lock);
		return r;
	}
	pthread_mutex_unlock(&c->lock);

	/* Running: only the thread holding the handle reaps it. */
	if (timeout_ms > 0) {
		timeout_ms -= (int)((bgrun__now_ns(CLOCK_MONOTONIC) - start) /
				    1000000);
		if (timeout_ms < 0)
			timeout_ms = 0;
	}
	r = bgrun__platform_wait_ready(&c->proc, timeout_ms);
	if (r == 0)
		return -ETIMEDOUT;
	if (r > 0)
		r = bgrun__platform_reap(&c->proc, false, &st);
	if (r < 0 && r != -ECHILD)
		return r;
	pthread_mutex_lock(&c->lock);
	c->state = CHILD_DONE;
	c->error = r < 0 ? r : 0;
	if (r > 0)
		c->status = st;
	bgrun__platform_close(&c->proc);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	*ret_status = st;
	return 0;
}

int bgrun_child_kill(struct bgrun_child *c, int sig)
{
	int r;

	pthread_mutex_lock(&c->lock);
	(void)wait_launched(c, -1);
	if (c->state == CHILD_RUNNING)
		r = bgrun__platform_kill(&c->proc, sig);
	else if (c->state == CHILD_FAILED)
		r = c->error;
	else
		r = -ESRCH;
	pthread_mutex_unlock(&c->lock);
	return r;
}

static void release(struct bgrun_child *c, bool disown)
{
	struct bgrun__proc orphan = BGRUN__PROC_INIT;
	bool running;

	if (c == NULL)
		return;
	pthread_mutex_lock(&c->lock);
	c->released = true;
	c->disowned = disown;
	running = c->state == CHILD_RUNNING;
	if (running)
		orphan = c->proc;
	pthread_mutex_unlock(&c->lock);
	if (running && disown)
		bgrun__platform_close(&orphan);
	else if (running)
		bgrun__reaper_adopt(&orphan);
	bgrun__child_unref(c);
}

void bgrun_child_free(struct bgrun_child *c)
{
	release(c, false);
}

void bgrun_child_disown(struct bgrun_child *c)
{
	release(c, true);
}
