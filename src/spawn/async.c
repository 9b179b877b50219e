/* SPDX-License-Identifier: MIT */
/* async.c: the spawner thread that performs launches queued with ensurestart off. */

#include "spawn-internal.h"

#include <errno.h>
#include <stdlib.h>

/*
 * With ensurestart off the caller only pays for copying its request and
 * waking this thread; posix_spawn (which suspends its calling thread until
 * the child has exec'd) then runs here. One thread keeps launches in
 * submission order; the outcome goes to the child handle and/or the
 * callback, so an error always has somewhere to go.
 */
struct bgrun__job {
	struct bgrun__job *next;
	struct bgrun__req req;
	struct bgrun_child *child; /* a reference, or NULL */
	bgrun_start_cb cb;
	void *cb_data;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;  /* a job was queued */
	pthread_cond_t idle;  /* pending dropped to 0 */
	struct bgrun__job *head, **tail;
	unsigned pending;     /* queued or being performed */
	bool started;
} Q = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.idle = PTHREAD_COND_INITIALIZER,
	.tail = &Q.head,
};

static void perform(struct bgrun__job *job)
{
	struct bgrun_failure failure = { BGRUN_STAGE_NONE, 0 };
	struct bgrun__proc proc;
	int r;

	r = bgrun__platform_spawn(&job->req, &proc, &failure);
	bgrun__req_release(&job->req);
	if (job->child != NULL) {
		if (r < 0)
			bgrun__child_set_failed(job->child, r, &failure);
		else
			bgrun__child_set_started(job->child, &proc);
		bgrun__child_unref(job->child);
	} else if (r == 0) {
		bgrun__reaper_adopt(&proc);
	}
	if (job->cb != NULL)
		job->cb(job->cb_data, r < 0 ? r : proc.pid, &failure);
}

static void *spawner_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct bgrun__job *job;

		pthread_mutex_lock(&Q.lock);
		while (Q.head == NULL)
			pthread_cond_wait(&Q.wake, &Q.lock);
		job = Q.head;
		Q.head = job->next;
		if (Q.head == NULL)
			Q.tail = &Q.head;
		pthread_mutex_unlock(&Q.lock);

		perform(job);
		free(job);

		pthread_mutex_lock(&Q.lock);
		if (--Q.pending == 0)
			pthread_cond_broadcast(&Q.idle);
		pthread_mutex_unlock(&Q.lock);
	}
	return NULL;
}

int bgrun__async_submit(const struct bgrun_spawn_opts *opts,
			struct bgrun_child *child)
{
	struct bgrun__job *job;
	int r;

	job = calloc(1, sizeof(*job));
	if (job == NULL)
		return -ENOMEM;
	r = bgrun__req_build(opts, true, &job->req);
	if (r < 0) {
		free(job);
		return r;
	}
	job->cb = opts->on_start;
	job->cb_data = opts->on_start_data;
	job->child = child;

	pthread_mutex_lock(&Q.lock);
	if (!Q.started) {
		pthread_t t;

		r = bgrun__thread_start(&t, spawner_main, NULL);
		if (r < 0) {
			pthread_mutex_unlock(&Q.lock);
			bgrun__req_release(&job->req);
			free(job);
			return r;
		}
		Q.started = true;
	}
	/* The job holds its own reference; the caller keeps the handle's. */
	if (child != NULL)
		bgrun__child_ref(child);
	*Q.tail = job;
	Q.tail = &job->next;
	Q.pending++;
	pthread_cond_signal(&Q.wake);
	pthread_mutex_unlock(&Q.lock);
	return 0;
}

void bgrun_spawn_flush(void)
{
	pthread_mutex_lock(&Q.lock);
	while (Q.pending > 0)
		pthread_cond_wait(&Q.idle, &Q.lock);
	pthread_mutex_unlock(&Q.lock);
}

void bgrun__async_atfork(enum bgrun__fork_phase phase)
{
	if (phase == BGRUN__FORK_PREPARE) {
		pthread_mutex_lock(&Q.lock);
		return;
	}
	pthread_mutex_unlock(&Q.lock);
	if (phase == BGRUN__FORK_PARENT)
		return;
	/*
	 * The spawner thread does not exist in a forked child, and the queued
	 * launches were the parent's: start afresh (their memory is left).
	 */
	pthread_cond_init(&Q.wake, NULL);
	pthread_cond_init(&Q.idle, NULL);
	Q.head = NULL;
	Q.tail = &Q.head;
	Q.pending = 0;
	Q.started = false;
}
