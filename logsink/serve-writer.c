/* SPDX-License-Identifier: MIT */
/* serve-writer.c: the daemon's writer thread: owns the store, commits events in groups, hands them back. */

#include "serve.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void lsink_item_free(struct lsink_item *item)
{
	if (item == NULL)
		return;
	bgrun_store_prepared_free(item->prep);
	item->prep = NULL;
	bgrun_wire_msg_release(&item->msg);
	free(item->why);
	free(item);
}

void lsink_item_fail(struct lsink_item *item, int error, const char *why)
{
	item->status = error;
	free(item->why);
	item->why = why != NULL && why[0] != '\0' ? strdup(why) : NULL;
}

/*
 * Writes one batch in one transaction, leaving out the items the loop
 * refused. The store's batches are all or none, so when one fails each
 * event is retried alone: an event the store refuses (-EINVAL) must not
 * take the others down with it.
 */
static void write_batch(struct lsink_writer *w, struct lsink_item *batch)
{
	struct lsink_item *it;
	size_t n = 0;
	int r;

	for (it = batch; it != NULL; it = it->next)
		if (!it->refused)
			w->batch[n++] = it->prep;
	if (n == 0)
		return;
	r = bgrun_store_put_prepared(w->store, w->batch, n);
	if (r >= 0) {
		for (it = batch; it != NULL; it = it->next)
			if (!it->refused)
				it->status = 0;
		w->n_commits++;
		lsink_forward_kick(w->forward);
		return;
	}
	for (it = batch; it != NULL; it = it->next) {
		struct bgrun_store_prepared *one = it->prep;

		if (it->refused)
			continue;
		if (n > 1 && r == -EINVAL) {
			int r1 = bgrun_store_put_prepared(w->store, &one, 1);

			if (r1 >= 0) {
				it->status = 0;
				w->n_commits++;
				lsink_forward_kick(w->forward);
				continue;
			}
			lsink_item_fail(it, r1, bgrun_store_errmsg(w->store));
		} else {
			lsink_item_fail(it, r, bgrun_store_errmsg(w->store));
		}
	}
}

static void replay(struct lsink_writer *w)
{
	int64_t count = 0;
	int r;

	r = bgrun_sink_replay(w->store, w->db, &count);
	if (r < 0)
		lsink_msg("replaying the spool of %s: %s",
			  lsink_printable(w->db), bgrun_strerror(r));
	else if (count > 0)
		lsink_msg("stored %lld events from the spool of %s",
			  (long long)count, lsink_printable(w->db));
	if (count > 0)
		lsink_forward_kick(w->forward);
}

static void wait_until(struct lsink_writer *w, int64_t deadline_ns)
{
	struct timespec ts = { deadline_ns / 1000000000,
			       deadline_ns % 1000000000 };

	(void)pthread_cond_timedwait(&w->cond, &w->lock, &ts);
}

static void *writer_main(void *arg)
{
	struct lsink_writer *w = arg;

	(void)pthread_mutex_lock(&w->lock);
	for (;;) {
		struct lsink_item *batch, **tail;
		size_t n = 0;

		while (w->todo == NULL && !w->stop && !w->replay)
			(void)pthread_cond_wait(&w->cond, &w->lock);
		if (w->replay) {
			w->replay = false;
			(void)pthread_mutex_unlock(&w->lock);
			replay(w);
			(void)pthread_mutex_lock(&w->lock);
			continue;
		}
		if (w->todo == NULL)
			break; /* stopping, and nothing left */
		/*
		 * Group commit: a batch is what queued up while the last one
		 * was written, up to batch_max; with a delay it may also wait
		 * that long for more.
		 */
		if (w->delay_ns > 0 && !w->stop) {
			int64_t deadline;
			struct timespec now;

			(void)clock_gettime(CLOCK_REALTIME, &now);
			deadline = (int64_t)now.tv_sec * 1000000000 +
				   now.tv_nsec + w->delay_ns;
			while (w->n_todo < w->batch_max && !w->stop) {
				wait_until(w, deadline);
				(void)clock_gettime(CLOCK_REALTIME, &now);
				if ((int64_t)now.tv_sec * 1000000000 +
					    now.tv_nsec >=
				    deadline)
					break;
			}
		}
		batch = w->todo;
		tail = &w->todo;
		while (*tail != NULL && n < w->batch_max) {
			tail = &(*tail)->next;
			n++;
		}
		w->todo = *tail;
		*tail = NULL;
		if (w->todo == NULL)
			w->todo_tail = &w->todo;
		w->n_todo -= n;
		(void)pthread_mutex_unlock(&w->lock);

		write_batch(w, batch);

		(void)pthread_mutex_lock(&w->lock);
		*w->done_tail = batch;
		w->done_tail = tail;
		/* uv_async_send is the one libuv call safe from any thread. */
		(void)uv_async_send(w->wake);
	}
	(void)pthread_mutex_unlock(&w->lock);
	return NULL;
}

int lsink_writer_start(struct lsink_writer *w)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	int r;

	w->todo = w->done = NULL;
	w->todo_tail = &w->todo;
	w->done_tail = &w->done;
	w->n_todo = 0;
	w->stop = false;
	w->replay =
		true; /* first of all, what was spooled while we were away */
	w->batch = calloc(w->batch_max, sizeof(*w->batch));
	if (w->batch == NULL)
		return -ENOMEM;
	r = pthread_mutex_init(&w->lock, NULL);
	if (r != 0)
		goto fail_batch;
	(void)pthread_condattr_init(&ca);
	(void)pthread_condattr_setclock(&ca, CLOCK_REALTIME);
	r = pthread_cond_init(&w->cond, &ca);
	(void)pthread_condattr_destroy(&ca);
	if (r != 0)
		goto fail_lock;
	/* Signals are the loop's business (uv_signal): none for the writer. */
	(void)sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&w->thread, NULL, writer_main, w);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	(void)old; /* winpthreads' pthread_sigmask is a macro that reads neither */
	if (r != 0)
		goto fail_cond;
	w->started = true;
	return 0;
fail_cond:
	(void)pthread_cond_destroy(&w->cond);
fail_lock:
	(void)pthread_mutex_destroy(&w->lock);
fail_batch:
	free(w->batch);
	w->batch = NULL;
	return -r;
}

void lsink_writer_push(struct lsink_writer *w, struct lsink_item *head,
		       struct lsink_item **tail, size_t n)
{
	(void)pthread_mutex_lock(&w->lock);
	*w->todo_tail = head;
	w->todo_tail = tail;
	w->n_todo += n;
	(void)pthread_cond_signal(&w->cond);
	(void)pthread_mutex_unlock(&w->lock);
}

struct lsink_item *lsink_writer_take(struct lsink_writer *w)
{
	struct lsink_item *done;

	(void)pthread_mutex_lock(&w->lock);
	done = w->done;
	w->done = NULL;
	w->done_tail = &w->done;
	(void)pthread_mutex_unlock(&w->lock);
	return done;
}

void lsink_writer_replay(struct lsink_writer *w)
{
	(void)pthread_mutex_lock(&w->lock);
	w->replay = true;
	(void)pthread_cond_signal(&w->cond);
	(void)pthread_mutex_unlock(&w->lock);
}

void lsink_writer_stop(struct lsink_writer *w)
{
	if (!w->started)
		return;
	(void)pthread_mutex_lock(&w->lock);
	w->stop = true;
	(void)pthread_cond_signal(&w->cond);
	(void)pthread_mutex_unlock(&w->lock);
	(void)pthread_join(w->thread, NULL);
	(void)pthread_cond_destroy(&w->cond);
	(void)pthread_mutex_destroy(&w->lock);
	free(w->batch);
	w->batch = NULL;
	w->started = false;
}
