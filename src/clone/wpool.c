/* SPDX-License-Identifier: MIT */
/* wpool.c: writer threads: the store's files created, written and closed on a few threads, each directory's in bundle order on one of them. */

/*
 * Why: applying a stream bundle of many small files is almost all kernel
 * time creating them (an openat, a write and a close each: on tmpfs
 * 0.19 s of system time for 23,000 files, the reading and parsing a
 * tenth of it). One thread does that one file after another; a few do
 * it on as many CPUs. The reader stays on the calling thread (the
 * bundle is one stream: its parsing, the names, the fncache, the
 * directories are done there, in order), and hands each file's bytes
 * over, copied into the ring of the writer that owns the file's
 * directory.
 *
 * Ordering. Each directory belongs to one writer (a hash of its store
 * path), whose ring is a FIFO: the files of one directory are created in
 * bundle order, so two entries for one store file fail on the later one
 * with O_EXCL, as on one thread. The directories are made by the reader
 * before it hands over a file in them; a file that stands where a later
 * entry needs a directory can only be one whose name has a revlog
 * ending (every store file name has one), so before it makes a directory
 * with such a component the reader waits for the rings to drain
 * (bgrun__wpool_fence): rare, and the error is then the one-thread one.
 * Errors keep the bundle's order too: every record has the sequence
 * number of its entry, the pool keeps the failure of the lowest one,
 * and after a failure the writers still carry out the records before it
 * (any of which could have failed first on one thread) and drop those
 * after. The reader's own errors concern later entries than anything
 * handed over, so a writer's failure is the one reported.
 *
 * A ring holds records: a header, the entry's name and store path, then
 * up to a piece of its bytes; a file larger than a piece is several
 * records, the first creating the file, the last closing it. A record
 * never wraps: a SKIP marker sends the writer back to the start.
 *
 * Waking costs more than the work handed over when it is done per file
 * (a futex wait and wake, two context switches, for 8 us of file
 * making), so neither side takes a lock on its way: the positions are
 * atomic, and a side sleeps only when it cannot go on (the writer on an
 * empty ring, the reader on a full one), having said so, and is woken by
 * the other only then. The reader, once asleep, sleeps until a quarter
 * of the ring is free again, so that it then hands over a run of files.
 *
 * THREAD SAFETY: put, fence and finish are called by one thread (the
 * reader). The bytes of a record belong to the reader until published
 * (wpos, with release) and to the writer until consumed (rpos, with
 * release). The sleeping flags and the positions are seq_cst, so that a
 * side announcing its sleep and then looking at the other's position
 * cannot miss a move the other made before looking at the flag; the
 * sleep itself is under the ring's mutex. The pool's error is under
 * err_mu; failed is read without it as a hint to stop early.
 */

#include "clone-internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { REC_FILE = 1, REC_SKIP = 2 };

struct rec {
	uint32_t kind;
	uint32_t flags;      /* BGRUN__WPOOL_FIRST, BGRUN__WPOOL_LAST */
	uint64_t seq, offset;
	struct bgrun__wdir *dir; /* a reference, dropped by the writer */
	uint64_t len;        /* data bytes */
	uint32_t name_len;   /* the entry's name, for messages */
	uint32_t path_len;   /* its store path, relative to the store */
	uint32_t base_off;   /* where its last component starts in the path */
	uint32_t pad;
	/* name NUL, path NUL, data; the whole padded to 8 bytes */
};

struct ring {
	pthread_mutex_t mu;
	pthread_cond_t not_empty, not_full;
	unsigned char *buf;
	size_t cap;
	_Atomic uint64_t wpos, rpos; /* bytes published, bytes consumed */
	atomic_bool done;       /* no more records (set under mu) */
	atomic_bool reader_sleeps, writer_sleeps;
	_Atomic uint64_t reader_wants; /* the rpos the sleeping reader waits for */
	pthread_t thread;
	bool started;
	struct bgrun__wpool *pool;
	/* The writer's own: the file being written across records. */
	bgrun_os_fd_t fd;
	uint64_t fd_seq;
	bool skipping;          /* the current file's records are dropped */
};

struct bgrun__wpool {
	unsigned int n;
	struct bgrun__closer *closer;  /* borrowed, or NULL */
	int (*close_fn)(bgrun_os_fd_t fd);
	atomic_bool failed;
	pthread_mutex_t err_mu;
	uint64_t err_seq;       /* UINT64_MAX: none */
	int err;
	bool err_at_offset;
	uint64_t err_offset;
	char errmsg[512];
	struct ring rings[];
};

#define ALIGN8(n) (((n) + 7) & ~(size_t)7)

struct bgrun__wdir *bgrun__wdir_new(const struct bgrun__dir *d, bool borrowed)
{
	struct bgrun__wdir *w = malloc(sizeof(*w));

	if (w == NULL)
		return NULL;
	w->dir = *d;
	w->borrowed = borrowed;
	atomic_init(&w->refs, 1);
	return w;
}

struct bgrun__wdir *bgrun__wdir_ref(struct bgrun__wdir *w)
{
	atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed);
	return w;
}

void bgrun__wdir_unref(struct bgrun__wdir *w)
{
	if (w == NULL ||
	    atomic_fetch_sub_explicit(&w->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (!w->borrowed)
		bgrun__dir_close(&w->dir);
	free(w);
}

/* Keeps the failure of record seq if it is the earliest so far. */
BGRUN__PRINTF(6, 7)
static void pool_fail(struct bgrun__wpool *p, uint64_t seq, int error,
		      bool at_offset, uint64_t offset, const char *fmt, ...)
{
	va_list ap;

	(void)pthread_mutex_lock(&p->err_mu);
	if (seq < p->err_seq) {
		p->err_seq = seq;
		p->err = error;
		p->err_at_offset = at_offset;
		p->err_offset = offset;
		va_start(ap, fmt);
		(void)vsnprintf(p->errmsg, sizeof(p->errmsg), fmt, ap);
		va_end(ap);
		atomic_store_explicit(&p->failed, true, memory_order_release);
	}
	(void)pthread_mutex_unlock(&p->err_mu);
}

/* Whether a record of entry seq is to be dropped: an earlier one failed. */
static bool dropped(struct bgrun__wpool *p, uint64_t seq)
{
	bool r;

	if (!atomic_load_explicit(&p->failed, memory_order_acquire))
		return false;
	(void)pthread_mutex_lock(&p->err_mu);
	r = seq > p->err_seq;
	(void)pthread_mutex_unlock(&p->err_mu);
	return r;
}

/* Closes the writer's current file, in the closer pool or here. */
static void close_file(struct ring *q, const struct rec *h, const char *name)
{
	struct bgrun__wpool *p = q->pool;
	char qn[256];
	int r;

	if (p->closer != NULL) {
		r = bgrun__closer_submit(p->closer, q->fd);
		if (r < 0)
			pool_fail(p, h->seq, r, false, 0,
				  "cannot close a file written: %s", strerror(-r));
	} else {
		r = bgrun__closer_close(p->close_fn, q->fd);
		if (r < 0) {
			bgrun__quote(qn, sizeof(qn), name, h->name_len);
			pool_fail(p, h->seq, r, true, h->offset,
				  "cannot close %s: %s", qn, strerror(-r));
		}
	}
	q->fd = BGRUN_OS_FD_NONE;
}

/* Carries out one record. */
static void do_record(struct ring *q, const struct rec *h)
{
	struct bgrun__wpool *p = q->pool;
	const char *name = (const char *)(h + 1);
	const char *path = name + h->name_len + 1;
	const unsigned char *data = (const unsigned char *)path + h->path_len + 1;
	char qn[256], qp[256];
	int r;

	if (h->flags & BGRUN__WPOOL_FIRST) {
		if (!bgrun__os_fd_bad(q->fd))
			(void)bgrun__file_close(q->fd); /* never: a file cut short */
		q->fd = BGRUN_OS_FD_NONE;
		q->skipping = dropped(p, h->seq);
		q->fd_seq = h->seq;
		if (!q->skipping) {
			r = bgrun__dir_create(&h->dir->dir, path + h->base_off,
					      &q->fd);
			if (r < 0) {
				bgrun__quote(qn, sizeof(qn), name, h->name_len);
				bgrun__quote(qp, sizeof(qp), path, h->path_len);
				if (r == -EEXIST)
					pool_fail(p, h->seq, -EBADMSG, true,
						  h->offset,
						  "entry %s collides with an earlier entry (store file %s)",
						  qn, qp);
				else
					pool_fail(p, h->seq, r, true, h->offset,
						  "cannot create %s: %s", qp,
						  strerror(-r));
				q->skipping = true;
			}
		}
	}
	if (q->skipping || q->fd_seq != h->seq)
		return;
	if (h->len > 0) {
		r = bgrun__fd_write_all(q->fd, data, (size_t)h->len);
		if (r < 0) {
			bgrun__quote(qn, sizeof(qn), name, h->name_len);
			pool_fail(p, h->seq, r, true, h->offset,
				  "cannot write %s: %s", qn, strerror(-r));
			(void)bgrun__file_close(q->fd);
			q->fd = BGRUN_OS_FD_NONE;
			q->skipping = true;
			return;
		}
	}
	if (h->flags & BGRUN__WPOOL_LAST)
		close_file(q, h, name);
}

/* The size of the record at h, at ring offset at. */
static size_t rec_size(const struct ring *q, const struct rec *h, size_t at)
{
	if (h->kind == REC_SKIP)
		return q->cap - at;
	return ALIGN8(sizeof(*h) + h->name_len + 1 + h->path_len + 1 +
		      (size_t)h->len);
}

/* The writer: waits until wpos moves past rpos or done; false when done. */
static bool writer_wait(struct ring *q, uint64_t rpos)
{
	bool more;

	(void)pthread_mutex_lock(&q->mu);
	atomic_store(&q->writer_sleeps, true);
	while (atomic_load(&q->wpos) == rpos && !atomic_load(&q->done))
		(void)pthread_cond_wait(&q->not_empty, &q->mu);
	atomic_store(&q->writer_sleeps, false);
	more = atomic_load(&q->wpos) != rpos;
	(void)pthread_mutex_unlock(&q->mu);
	return more;
}

/* The reader: waits until rpos reaches want (or a writer failed). */
static void reader_wait(struct ring *q, uint64_t want)
{
	struct bgrun__wpool *p = q->pool;

	(void)pthread_mutex_lock(&q->mu);
	atomic_store(&q->reader_wants, want);
	atomic_store(&q->reader_sleeps, true);
	while (atomic_load(&q->rpos) < want &&
	       !atomic_load_explicit(&p->failed, memory_order_acquire))
		(void)pthread_cond_wait(&q->not_full, &q->mu);
	atomic_store(&q->reader_sleeps, false);
	(void)pthread_mutex_unlock(&q->mu);
}

static void wake(struct ring *q, pthread_cond_t *c)
{
	(void)pthread_mutex_lock(&q->mu);
	(void)pthread_cond_signal(c);
	(void)pthread_mutex_unlock(&q->mu);
}

static void *writer_main(void *arg)
{
	struct ring *q = arg;
	uint64_t rpos = atomic_load(&q->rpos);

	for (;;) {
		uint64_t wpos = atomic_load_explicit(&q->wpos, memory_order_acquire);

		if (wpos == rpos) {
			if (!writer_wait(q, rpos))
				break;
			continue;
		}
		while (rpos != wpos) {
			size_t at = (size_t)(rpos % q->cap);
			struct rec *h = (struct rec *)(q->buf + at);
			size_t size = rec_size(q, h, at);

			if (h->kind != REC_SKIP) {
				do_record(q, h);
				bgrun__wdir_unref(h->dir);
			}
			rpos += size;
			atomic_store(&q->rpos, rpos);
			if (atomic_load(&q->reader_sleeps) &&
			    rpos >= atomic_load(&q->reader_wants))
				wake(q, &q->not_full);
		}
	}
	/* A file cut short (the reader failed in the middle of it). */
	if (!bgrun__os_fd_bad(q->fd))
		(void)bgrun__file_close(q->fd);
	q->fd = BGRUN_OS_FD_NONE;
	return NULL;
}

int bgrun__wpool_start(unsigned int threads, size_t ring,
		       struct bgrun__closer *closer,
		       int (*close_fn)(bgrun_os_fd_t fd),
		       struct bgrun__wpool **ret_pool)
{
	struct bgrun__wpool *p;
	int r = 0;

	if (threads == 0 || ring < BGRUN__WPOOL_RING_MIN)
		return -EINVAL;
	p = calloc(1, sizeof(*p) + threads * sizeof(p->rings[0]));
	if (p == NULL)
		return -ENOMEM;
	p->closer = closer;
	p->close_fn = close_fn;
	p->err_seq = UINT64_MAX;
	atomic_init(&p->failed, false);
	(void)pthread_mutex_init(&p->err_mu, NULL);
	for (unsigned int i = 0; i < threads; i++) {
		struct ring *q = &p->rings[i];

		q->pool = p;
		q->fd = BGRUN_OS_FD_NONE;
		atomic_init(&q->wpos, 0);
		atomic_init(&q->rpos, 0);
		atomic_init(&q->done, false);
		atomic_init(&q->reader_sleeps, false);
		atomic_init(&q->writer_sleeps, false);
		atomic_init(&q->reader_wants, 0);
		q->cap = ALIGN8(ring);
		(void)pthread_mutex_init(&q->mu, NULL);
		(void)pthread_cond_init(&q->not_empty, NULL);
		(void)pthread_cond_init(&q->not_full, NULL);
		p->n++;
		q->buf = malloc(q->cap);
		if (q->buf == NULL) {
			r = -ENOMEM;
			break;
		}
		r = -pthread_create(&q->thread, NULL, writer_main, q);
		if (r < 0)
			break;
		q->started = true;
	}
	if (r < 0) {
		(void)bgrun__wpool_finish(p, NULL);
		return r;
	}
	*ret_pool = p;
	return 0;
}

unsigned int bgrun__wpool_threads(const struct bgrun__wpool *p)
{
	return p->n;
}

size_t bgrun__wpool_piece(const struct bgrun__wpool *p)
{
	/*
	 * A quarter of a ring: with a name and a store path (at most
	 * BGRUN__WPOOL_NAMES_MAX bytes) a record of a whole piece stays
	 * within half of it, which put accepts.
	 */
	return p->rings[0].cap / 4;
}

int bgrun__wpool_put(struct bgrun__wpool *p, unsigned int which,
		     const struct bgrun__wpool_file *f, unsigned int flags,
		     const void *data, size_t len)
{
	struct ring *q = &p->rings[which % p->n];
	size_t size = ALIGN8(sizeof(struct rec) + f->name_len + 1 + f->path_len +
			     1 + len);
	uint64_t wpos = atomic_load_explicit(&q->wpos, memory_order_relaxed);
	size_t at = (size_t)(wpos % q->cap);
	size_t skip = q->cap - at < size ? q->cap - at : 0;
	uint64_t end = wpos + skip + size, want;
	struct rec *h;
	char *s;

	if (size > q->cap / 2)
		return -EINVAL; /* a piece larger than bgrun__wpool_piece */
	/*
	 * Room for it once rpos reaches end - cap (skip + size < cap, so
	 * that is before wpos); asleep, wait for a quarter of the ring more,
	 * at most all that is published.
	 */
	while (end > atomic_load_explicit(&q->rpos, memory_order_acquire) + q->cap) {
		if (atomic_load_explicit(&p->failed, memory_order_acquire))
			break;
		want = end - q->cap + q->cap / 4;
		reader_wait(q, want < wpos ? want : wpos);
	}
	if (atomic_load_explicit(&p->failed, memory_order_acquire))
		return -ECANCELED; /* bgrun__wpool_finish says why */

	/* Space [wpos, wpos + skip + size) is ours until published. */
	if (skip > 0) {
		((struct rec *)(q->buf + at))->kind = REC_SKIP;
		at = 0;
	}
	h = (struct rec *)(q->buf + at);
	*h = (struct rec){
		.kind = REC_FILE,
		.flags = flags,
		.seq = f->seq,
		.offset = f->offset,
		.dir = bgrun__wdir_ref(f->dir),
		.len = len,
		.name_len = (uint32_t)f->name_len,
		.path_len = (uint32_t)f->path_len,
		.base_off = (uint32_t)f->base_off,
	};
	s = (char *)(h + 1);
	memcpy(s, f->name, f->name_len);
	s[f->name_len] = '\0';
	s += f->name_len + 1;
	memcpy(s, f->path, f->path_len);
	s[f->path_len] = '\0';
	s += f->path_len + 1;
	if (len > 0)
		memcpy(s, data, len);

	atomic_store(&q->wpos, end);
	if (atomic_load(&q->writer_sleeps))
		wake(q, &q->not_empty);
	return 0;
}

int bgrun__wpool_fence(struct bgrun__wpool *p)
{
	for (unsigned int i = 0; i < p->n; i++) {
		struct ring *q = &p->rings[i];
		uint64_t wpos = atomic_load(&q->wpos);

		while (atomic_load(&q->rpos) < wpos &&
		       !atomic_load_explicit(&p->failed, memory_order_acquire))
			reader_wait(q, wpos);
	}
	return atomic_load_explicit(&p->failed, memory_order_acquire) ? -ECANCELED
									: 0;
}

int bgrun__wpool_finish(struct bgrun__wpool *p,
			struct bgrun__wpool_error *ret_error)
{
	int r;

	if (p == NULL)
		return 0;
	for (unsigned int i = 0; i < p->n; i++) {
		struct ring *q = &p->rings[i];

		(void)pthread_mutex_lock(&q->mu);
		atomic_store(&q->done, true);
		(void)pthread_cond_signal(&q->not_empty);
		(void)pthread_mutex_unlock(&q->mu);
	}
	for (unsigned int i = 0; i < p->n; i++) {
		struct ring *q = &p->rings[i];

		if (q->started)
			(void)pthread_join(q->thread, NULL);
		/* Records never carried out (no thread): their references. */
		for (uint64_t pos = atomic_load(&q->rpos);
		     pos != atomic_load(&q->wpos);) {
			size_t at = (size_t)(pos % q->cap);
			struct rec *h = (struct rec *)(q->buf + at);

			if (h->kind != REC_SKIP)
				bgrun__wdir_unref(h->dir);
			pos += rec_size(q, h, at);
		}
		(void)pthread_cond_destroy(&q->not_full);
		(void)pthread_cond_destroy(&q->not_empty);
		(void)pthread_mutex_destroy(&q->mu);
		free(q->buf);
	}
	r = p->err_seq != UINT64_MAX ? p->err : 0;
	if (r < 0 && ret_error != NULL) {
		ret_error->at_offset = p->err_at_offset;
		ret_error->offset = p->err_offset;
		(void)snprintf(ret_error->msg, sizeof(ret_error->msg), "%s",
			       p->errmsg);
	}
	(void)pthread_mutex_destroy(&p->err_mu);
	free(p);
	return r;
}
