/* SPDX-License-Identifier: MIT */
/* closer.c: background file closing: a few threads and a bounded queue of descriptors (Mercurial's backgroundfilecloser). */

/*
 * Why: closing a file just written is not free everywhere (seed 000:
 * CloseHandle on NTFS takes 1-10 ms; on Linux, NFS flushes at close, FUSE
 * sends a FLUSH, ext4 forces out delayed allocation of a truncated file),
 * and a clone closes one file per store file. The writer queues each
 * descriptor and goes on; the queue is bounded so that a slow close
 * cannot make the process hold tens of thousands of descriptors (and
 * run into RLIMIT_NOFILE): the writer waits when it is full.
 *
 * THREAD SAFETY: everything below is under c->mu, except close_fn itself.
 */

#include "clone-internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct bgrun__closer {
	pthread_mutex_t mu;
	pthread_cond_t not_empty, not_full;
	bgrun_os_fd_t *queue;
	size_t cap, head, count;
	size_t batch;          /* wake a closer every batch descriptors */
	bool done;
	int error;             /* the first close error, -errno */
	int (*close_fn)(bgrun_os_fd_t fd); /* NULL: bgrun__file_close */
	unsigned int nthreads; /* started */
	pthread_t threads[];
};

static void *closer_main(void *arg)
{
	struct bgrun__closer *c = arg;

	(void)pthread_mutex_lock(&c->mu);
	for (;;) {
		bgrun_os_fd_t fd;
		int r;

		while (c->count == 0 && !c->done)
			(void)pthread_cond_wait(&c->not_empty, &c->mu);
		if (c->count == 0)
			break;
		fd = c->queue[c->head];
		c->head = (c->head + 1) % c->cap;
		c->count--;
		(void)pthread_cond_signal(&c->not_full);
		(void)pthread_mutex_unlock(&c->mu);

		/*
		 * close(2) on Linux releases the descriptor even when it
		 * reports an error, so EINTR is not retried (that could
		 * close a descriptor another thread just opened).
		 */
		r = bgrun__closer_close(c->close_fn, fd);

		(void)pthread_mutex_lock(&c->mu);
		if (r < 0 && c->error == 0)
			c->error = r;
	}
	(void)pthread_mutex_unlock(&c->mu);
	return NULL;
}

int bgrun__closer_start(unsigned int threads, size_t queue,
			int (*close_fn)(bgrun_os_fd_t fd),
			struct bgrun__closer **ret_closer)
{
	struct bgrun__closer *c;
	int r;

	if (threads == 0 || queue == 0)
		return -EINVAL;
	c = calloc(1, sizeof(*c) + threads * sizeof(c->threads[0]));
	if (c == NULL)
		return -ENOMEM;
	c->queue = calloc(queue, sizeof(*c->queue));
	if (c->queue == NULL) {
		free(c);
		return -ENOMEM;
	}
	c->cap = queue;
	c->batch = queue >= 64 ? 16 : 1;
	c->close_fn = close_fn;
	(void)pthread_mutex_init(&c->mu, NULL);
	(void)pthread_cond_init(&c->not_empty, NULL);
	(void)pthread_cond_init(&c->not_full, NULL);
	for (unsigned int i = 0; i < threads; i++) {
		r = pthread_create(&c->threads[i], NULL, closer_main, c);
		if (r != 0) {
			/* Fewer threads still work; none does not. */
			if (i == 0) {
				(void)bgrun__closer_finish(c);
				return -r;
			}
			break;
		}
		c->nthreads++;
	}
	*ret_closer = c;
	return 0;
}

int bgrun__closer_submit(struct bgrun__closer *c, bgrun_os_fd_t fd)
{
	int r;

	(void)pthread_mutex_lock(&c->mu);
	while (c->count == c->cap)
		(void)pthread_cond_wait(&c->not_full, &c->mu);
	c->queue[(c->head + c->count) % c->cap] = fd;
	c->count++;
	r = c->error;
	/*
	 * Wake a closer once a batch is waiting, not for every descriptor:
	 * a wake-up per file costs more than the close it hands over where
	 * closing is cheap (a local Linux file system), and the closers then
	 * drain the queue in runs.
	 */
	if (c->count % c->batch == 0)
		(void)pthread_cond_signal(&c->not_empty);
	(void)pthread_mutex_unlock(&c->mu);
	return r;
}

int bgrun__closer_finish(struct bgrun__closer *c)
{
	int r;

	if (c == NULL)
		return 0;
	(void)pthread_mutex_lock(&c->mu);
	c->done = true;
	(void)pthread_cond_broadcast(&c->not_empty);
	(void)pthread_mutex_unlock(&c->mu);
	for (unsigned int i = 0; i < c->nthreads; i++)
		(void)pthread_join(c->threads[i], NULL);
	/* Without threads (a failed start) nothing is queued. */
	r = c->error;
	(void)pthread_cond_destroy(&c->not_full);
	(void)pthread_cond_destroy(&c->not_empty);
	(void)pthread_mutex_destroy(&c->mu);
	free(c->queue);
	free(c);
	return r;
}

int bgrun__closer_close(int (*close_fn)(bgrun_os_fd_t fd), bgrun_os_fd_t fd)
{
	if (close_fn == NULL)
		return bgrun__file_close(fd);
	return close_fn(fd) < 0 && errno != EINTR ? -errno : 0;
}
