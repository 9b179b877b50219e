/* SPDX-License-Identifier: MIT */
/* store-checkpoint.c: the store's checkpoints: the WAL's flush, the checkpointer thread, the in-line bound, fork safety. */


#include "store-internal.h"

#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * fdatasync of the WAL, with no lock held: what a checkpoint's own sync
 * of the WAL then finds to write is what came since, so that the part of
 * the checkpoint that everyone waits for is short. (Only a flush: it
 * changes nothing, and SQLite holds no POSIX lock on the -wal file that
 * closing our descriptor could drop.)
 */
void bgrun__store_flush_wal(struct bgrun_store *store)
{
	char *wal = NULL;
	int fd;

	if (asprintf(&wal, "%s-wal", store->path) < 0)
		return;
	fd = bgrun__filelock_open_sync(wal);
	free(wal);
	if (fd < 0)
		return;
	(void)fdatasync(fd);
	(void)close(fd);
}

/*
 * Fork safety. The checkpointer's thread (below) is one the caller does
 * not know of: a program that forks and has the child open the log, as a
 * single-threaded program may, could fork while that thread is inside
 * SQLite, and the child would inherit SQLite's record of the thread's
 * locks (its unix VFS keeps each file's locks per process) and its
 * mutexes: its own connection to the log would then wait on locks no
 * process holds, with our write lock taken (python/sink.c met it with
 * its own threads). So a fork waits until no checkpointer is between its
 * lock and its release, which is bounded: the wait for the lock by
 * BGRUN__STORE_CHECKPOINT_WAIT_MS, the checkpoint by its copy of at most
 * a few thousand pages. A checkpointer never waits for the lock holding
 * SQLite's state, so no lock is taken in the other order.
 */
static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;
static void (*_Atomic checkpoint_hook)(void);

static void fork_prepare(void)
{
	pthread_mutex_lock(&fork_lock);
}

static void fork_release(void)
{
	pthread_mutex_unlock(&fork_lock);
}

static void fork_guard_install(void)
{
	(void)bgrun__fork_hooks(fork_prepare, fork_release, fork_release);
}

void bgrun__store_set_checkpoint_hook(void (*fn)(void))
{
	atomic_store(&checkpoint_hook, fn);
}

static void checkpoint_locked(struct bgrun_store *store, uint32_t seen);

/*
 * Our checkpoints, not SQLite's automatic one (which runs inside the
 * COMMIT of whichever writer crosses the threshold, under the lock, with
 * its two fdatasyncs of up to 16 MiB: every other writer waited for it,
 * up to 168 ms at 8 writers in bench/sink-bench). The writer that crossed
 * it has committed and released the lock; it flushes the WAL with no lock
 * held, then takes the lock again for a PASSIVE checkpoint, which copies
 * the pages and syncs what little is left. A checkpoint that cannot have
 * the lock or fails is left for the next writer: nothing is lost, the WAL
 * is only longer. seen: the lock's counter at the commit that asked, read
 * while that commit held the lock; if it has moved, a checkpoint ran
 * since and took that commit's pages.
 */
void bgrun__store_checkpoint(struct bgrun_store *store, uint32_t seen)
{
	void (*hook)(void);

	bgrun__store_flush_wal(store);
	if (!store->ckpt_own) {
		checkpoint_locked(store, seen);
		return;
	}
	/* The thread's checkpoint: a fork waits for it ("Fork safety"). */
	pthread_mutex_lock(&fork_lock);
	checkpoint_locked(store, seen);
	hook = atomic_load(&checkpoint_hook);
	if (hook != NULL)
		hook();
	pthread_mutex_unlock(&fork_lock);
}

/* The lock, the checkpoint and the release (seen: the count at our commit). */
static void checkpoint_locked(struct bgrun_store *store, uint32_t seen)
{
	_Atomic uint32_t *count = bgrun__filelock_counter(&store->lock);
	int log = 0, done = 0, rc;

	/*
	 * Not worth a long wait: the write is done, and the next writer
	 * will try again.
	 */
	if (bgrun__filelock_acquire(&store->lock,
				    BGRUN__STORE_CHECKPOINT_WAIT_MS *
					    INT64_C(1000000),
				    BGRUN__FILELOCK_TOTAL) < 0)
		return;
	/*
	 * Another writer checkpointed since our commit (each that crossed
	 * the threshold before the first one's checkpoint ended would
	 * otherwise take one more, on a WAL just begun again): ours is done.
	 */
	if (count != NULL && atomic_load(count) != seen) {
		store->wal_frames = 0;
		bgrun__store_unlock(store);
		return;
	}
	rc = sqlite3_wal_checkpoint_v2(store->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
				       &log, &done);
	if (rc == SQLITE_OK && log < 0) {
		/*
		 * A connection that has read nothing yet (the checkpointer's
		 * own) has not opened the WAL: SQLite then checkpoints nothing
		 * and says -1, and the WAL of a long-lived writer (the daemon)
		 * grew without end. One read opens it.
		 */
		(void)sqlite3_exec(store->db, "PRAGMA schema_version", NULL, NULL, NULL);
		rc = sqlite3_wal_checkpoint_v2(store->db, NULL,
					       SQLITE_CHECKPOINT_PASSIVE, &log, &done);
	}
	if (rc == SQLITE_OK && log >= 0) {
		store->wal_frames = log > done ? log - done : 0;
		if (count != NULL)
			atomic_fetch_add(count, 1);
	}
	bgrun__store_unlock(store);
}

/*
 * The checkpointer: a thread of the store's, started by the first
 * commit that takes the WAL past the threshold, with a connection and a
 * lock-file descriptor of its own (a flock does not exclude another
 * holder of the same open file). The writer whose commit crossed the
 * threshold used to checkpoint before its put returned: the WAL's flush
 * and the checkpoint, 4 to 5 ms here, on about one put in a hundred,
 * which was the p99 of every writer (bench/sink-bench, README). Now it
 * asks the thread and returns; the checkpoint still holds the lock while
 * it copies, as every writer's transaction does. A store that cannot
 * start it (no thread, no connection) checkpoints in line, as before.
 */
struct bgrun__checkpointer {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	bool pending, stop;
	uint32_t seen; /* the lock's counter at the last commit that asked */
	pid_t pid; /* the process whose thread it is */
	struct bgrun_store store;
};

static void *checkpointer_main(void *arg)
{
	struct bgrun__checkpointer *c = arg;
	uint32_t seen;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (!c->pending && !c->stop)
			pthread_cond_wait(&c->cv, &c->mu);
		if (c->stop)
			break;
		c->pending = false;
		seen = c->seen;
		pthread_mutex_unlock(&c->mu);
		bgrun__store_checkpoint(&c->store, seen);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static struct bgrun__checkpointer *checkpointer_start(struct bgrun_store *store)
{
	static pthread_once_t fork_guard_once = PTHREAD_ONCE_INIT;
	struct bgrun__checkpointer *c = calloc(1, sizeof(*c));
	struct bgrun_store *s;
	char *lock_path = NULL;

	if (c == NULL)
		return NULL;
	(void)pthread_once(&fork_guard_once, fork_guard_install);
	s = &c->store;
	*s = (struct bgrun_store){ .lock_fd = -1, .lock = { .fd = -1 },
				   .checkpoint_frames = INT_MAX,
				   .ckpt_own = true,
				   .lock_timeout_ns = store->lock_timeout_ns };
	s->path = strdup(store->path);
	if (s->path == NULL || asprintf(&lock_path, "%s-lock", s->path) < 0)
		goto fail;
	s->lock_fd = open(lock_path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	free(lock_path);
	if (s->lock_fd < 0)
		goto fail;
	bgrun__filelock_init(&s->lock, s->lock_fd);
	if (bgrun__store_open_db(s, NULL, SQLITE_OPEN_READWRITE |
					 SQLITE_OPEN_NOFOLLOW) < 0)
		goto fail;
	c->pid = getpid();
	if (pthread_mutex_init(&c->mu, NULL) != 0)
		goto fail;
	if (pthread_cond_init(&c->cv, NULL) != 0) {
		pthread_mutex_destroy(&c->mu);
		goto fail;
	}
	if (bgrun__thread_start_joinable(&c->thread, checkpointer_main, c) < 0) {
		pthread_cond_destroy(&c->cv);
		pthread_mutex_destroy(&c->mu);
		goto fail;
	}
	return c;
fail:
	bgrun__store_release(s);
	free(c);
	return NULL;
}

void bgrun__store_checkpointer_stop(struct bgrun_store *store)
{
	struct bgrun__checkpointer *c = store->ckpt;

	if (c == NULL || c->pid != getpid())
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	(void)pthread_join(c->thread, NULL);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	bgrun__store_release(&c->store);
	free(c);
}

/*
 * A WAL this far past the threshold means the thread has fallen behind
 * (it waits for a CPU, or its flush for a disk that other programs keep
 * busy, while the writer goes on filling the page cache): the writer
 * then checkpoints in line, as SQLite's own automatic checkpoint would,
 * so that the WAL stays bounded however late the thread is. Under a
 * disk kept busy by `dd conv=fdatasync` and four busy loops, the WAL of
 * tests/test-store.c's long writer reached 16 MiB, four thousand pages,
 * in 18 runs of 40 without it.
 */
void bgrun__store_checkpoint_soon(struct bgrun_store *store, uint32_t seen)
{
	struct bgrun__checkpointer *c = store->ckpt;

	if (c == NULL && !store->ckpt_failed && !store->ckpt_own) {
		c = store->ckpt = checkpointer_start(store);
		store->ckpt_failed = c == NULL;
	}
	/* A forked child has no thread: the parent's is the parent's. */
	if (c == NULL || c->pid != getpid() ||
	    store->wal_frames >= BGRUN__STORE_CHECKPOINT_INLINE_PAGES) {
		bgrun__store_checkpoint(store, seen);
		return;
	}
	pthread_mutex_lock(&c->mu);
	c->seen = seen;
	c->pending = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

int bgrun__store_wal_hook(void *data, sqlite3 *db, const char *name,
			  int frames)
{
	struct bgrun_store *store = data;

	(void)db;
	(void)name;
	store->wal_frames = frames;
	return SQLITE_OK;
}
