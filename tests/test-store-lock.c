/* SPDX-License-Identifier: MIT */
/* test-store-lock.c: the store's write lock (src/unix/filelock.c): a waiter that gives up leaves no hole in the queue, and a queue that moves is waited out. */

#include "test-store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * The queue's page, as every process that locks the log maps it (the
 * lock file's first page: src/unix/filelock.c's struct page).
 */
struct counters {
	_Atomic uint32_t next;
	_Atomic uint32_t serving;
	_Atomic uint32_t counter;
	_Atomic uint32_t room;
	_Atomic uint32_t gated; /* how many wait for a place in the queue */
	uint32_t reserved[11];
	_Atomic uint32_t slot[64];
	_Atomic uint32_t gone[64];
	_Atomic uint64_t owner[64]; /* (ticket + 1) << 32 | pid */
};
_Static_assert(sizeof(struct counters) == 64 + 4 * 64 * 2 + 8 * 64,
	       "the page's layout");

struct waiter {
	pthread_t thread;
	void *lock;
	int fd, how;
	int64_t timeout_ns, held_ms, waited_ms;
	int r;
	bool joined;
};

static int64_t now_ms(void)
{
	return bgrun_clock_ns(BGRUN_CLOCK_MONOTONIC) / 1000000;
}

static int lock_op(int how, void **lockp, int fd, int64_t timeout_ns)
{
	return bgrun__test_control(BGRUN__TEST_FILELOCK_OP, how, lockp, fd,
				   timeout_ns);
}

/* The lock file's path (malloc'd), its descriptor and its page. */
static char *lock_file(int *ret_fd, struct counters **ret_page)
{
	char *path = t_path(t_tmpdir(), "ev.db-lock");
	void *map;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ASSERT_SYS(fd);
	ASSERT_SYS(ftruncate(fd, 4096));
	map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT(map != MAP_FAILED);
	*ret_fd = fd;
	*ret_page = map;
	return path;
}

/* A waiter of its own: its own open file (flock excludes by open file). */
static void *wait_for_lock(void *arg)
{
	struct waiter *w = arg;
	int64_t t0 = now_ms();

	w->r = lock_op(w->how, &w->lock, -1, w->timeout_ns);
	w->waited_ms = now_ms() - t0;
	if (w->r == 0 && w->held_ms > 0) {
		/* Holding it (what is held, not a wait for another thread). */
		(void)usleep((useconds_t)w->held_ms * 1000);
		(void)lock_op(BGRUN__TEST_LOCK_RELEASE, &w->lock, -1, 0);
	}
	return NULL;
}

/*
 * How long the queue must stand still before a waiter of start() takes
 * the lock over (the library's default is 25 ms). A takeover passes over
 * the waiters before the one taking over, and they queue again at the
 * end. The cases here test the queue's order, so no waiter of theirs
 * takes over: on a loaded machine one behind could find the flock free
 * in the moment between a holder's unlock and its hand-over, or while
 * the next in turn waits for a CPU, and reorder the queue under the
 * case (lock_queue_moving timed out so in a CI run: a holder passed
 * over queued again behind `still`, which keeps the lock, and waited out
 * its whole bound).
 */
static const int64_t waiter_stall_ms = 600000;

/* stall_ms: waiter_stall_ms, or 0 for the library's own. */
static void start_stall(struct waiter *w, const char *path, int how,
			int64_t timeout_ms, int64_t held_ms, int64_t stall_ms)
{
	*w = (struct waiter){ .how = how, .timeout_ns = timeout_ms * 1000000,
			      .held_ms = held_ms, .r = 1 };
	w->fd = open(path, O_RDWR | O_CLOEXEC);
	ASSERT_SYS(w->fd);
	ASSERT_EQ(lock_op(BGRUN__TEST_LOCK_NEW, &w->lock, w->fd, 0), 0);
	ASSERT_EQ(lock_op(BGRUN__TEST_LOCK_STALL, &w->lock, -1,
			  stall_ms * 1000000),
		  0);
	ASSERT_EQ(pthread_create(&w->thread, NULL, wait_for_lock, w), 0);
}

static void start(struct waiter *w, const char *path, int how,
		  int64_t timeout_ms, int64_t held_ms)
{
	start_stall(w, path, how, timeout_ms, held_ms, waiter_stall_ms);
}

static void join(struct waiter *w)
{
	if (!w->joined)
		ASSERT_EQ(pthread_join(w->thread, NULL), 0);
	w->joined = true;
}

/* Joined, its lock released if it holds it, freed. */
static void finish(struct waiter *w)
{
	join(w);
	ASSERT_EQ(lock_op(BGRUN__TEST_LOCK_FREE, &w->lock, -1, 0), 0);
	(void)close(w->fd);
}

static uint32_t serving(struct counters *c)
{
	return atomic_load(&c->serving);
}

static uint32_t next(struct counters *c)
{
	return atomic_load(&c->next);
}

/*
 * Until the queue has handed out n tickets (bounded, and well within the
 * test's own timeout: a hang fails, saying what it saw).
 */
static void until_next(struct counters *c, uint32_t n)
{
	int64_t end = now_ms() + 20000;

	while (next(c) != n) {
		if (now_ms() >= end)
			FAIL("the queue handed out %u tickets, not %u", next(c),
			     n);
		(void)usleep(1000);
	}
}

/* A process that flocks the file and keeps it until we close the pipe. */
static pid_t raw_holder(const char *path, int *ret_pipe)
{
	int go[2], done[2];
	char c;
	pid_t pid;

	ASSERT_SYS(pipe(go));
	ASSERT_SYS(pipe(done));
	pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		int fd = open(path, O_RDWR | O_CLOEXEC);

		(void)close(go[0]);
		(void)close(done[1]);
		if (fd < 0 || flock(fd, LOCK_EX) < 0)
			_exit(1);
		if (write(go[1], "x", 1) != 1)
			_exit(1);
		(void)read(done[0], &c, 1);
		_exit(0);
	}
	(void)close(go[1]);
	(void)close(done[0]);
	ASSERT_EQ(read(go[0], &c, 1), 1);
	(void)close(go[0]);
	*ret_pipe = done[1];
	return pid;
}

static void end_raw_holder(pid_t pid, int pipe_fd)
{
	int st;

	(void)close(pipe_fd);
	ASSERT_SYS(waitpid(pid, &st, 0));
	ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/*
 * A waiter that gives up, in the middle of the queue or at its head,
 * leaves no hole: the hand-over goes past its ticket at once, where the
 * queue used to stand still STALL_NS (25 ms) at each given-up ticket
 * before somebody took over (every closing store's checkpoint waits
 * 200 ms, so a deep queue gave up tickets by the hundred).
 */
void case_lock_given_up(void)
{
	struct waiter head, quitter, last;
	struct counters *c;
	int fd, hold;
	char *path = lock_file(&fd, &c);
	pid_t holder = raw_holder(path, &hold);

	/* head: ticket 0, its turn, polling the flock the holder has. */
	start(&head, path, BGRUN__TEST_LOCK_STILL, 60000, 0);
	until_next(c, 1);
	/* quitter: ticket 1, gives up behind it after 50 ms. */
	start(&quitter, path, BGRUN__TEST_LOCK_TOTAL, 50, 0);
	finish(&quitter);
	ASSERT_EQ(quitter.r, -ETIMEDOUT);
	ASSERT_EQ(serving(c), 0);
	/* last: ticket 2. */
	start(&last, path, BGRUN__TEST_LOCK_STILL, 60000, 0);
	until_next(c, 3);
	end_raw_holder(holder, hold);
	join(&head);
	ASSERT_EQ(head.r, 0);
	/* head's release goes past ticket 1 to ticket 2 as it returns. */
	ASSERT_EQ(lock_op(BGRUN__TEST_LOCK_RELEASE, &head.lock, -1, 0), 0);
	ASSERT_EQ(serving(c), 2);
	join(&last);
	ASSERT_EQ(last.r, 0);
	ASSERT_EQ(lock_op(BGRUN__TEST_LOCK_RELEASE, &last.lock, -1, 0), 0);
	ASSERT_EQ(serving(c), 3);
	finish(&head);
	finish(&last);

	/* Giving up at the head moves serving on too: nothing stands. */
	holder = raw_holder(path, &hold);
	start(&quitter, path, BGRUN__TEST_LOCK_TOTAL, 50, 0);
	finish(&quitter);
	ASSERT_EQ(quitter.r, -ETIMEDOUT);
	ASSERT_EQ(next(c), 4);
	ASSERT_EQ(serving(c), 4);
	end_raw_holder(holder, hold);
	(void)munmap(c, 4096);
	(void)close(fd);
	free(path);
}

/*
 * The write lock's bound (BGRUN_LOCK_TIMEOUT) is for a holder that is
 * stopped, not for a queue that moves: behind eight holders of 300 ms
 * each, a waiter whose bound is 1.5 s gets the lock (it waited longer
 * than its bound, the lock changing hands all along), where the whole
 * wait bounded gives up. A holder that does not move still ends the wait.
 * (The holds are long against the bound's slack, for a loaded machine.)
 */
void case_lock_queue_moving(void)
{
	struct waiter h[8], still, total;
	struct counters *c;
	int fd, hold;
	char *path = lock_file(&fd, &c);
	pid_t holder;

	for (int i = 0; i < 8; i++) {
		start(&h[i], path, BGRUN__TEST_LOCK_STILL, 60000, 300);
		until_next(c, (uint32_t)i + 1);
	}
	start(&total, path, BGRUN__TEST_LOCK_TOTAL, 1500, 0);
	until_next(c, 9);
	start(&still, path, BGRUN__TEST_LOCK_STILL, 1500, 0);
	for (int i = 0; i < 8; i++) {
		finish(&h[i]);
		ASSERT_EQ(h[i].r, 0);
	}
	finish(&total);
	ASSERT_EQ(total.r, -ETIMEDOUT);
	finish(&still);
	ASSERT_EQ(still.r, 0);
	/* Longer than its bound: the holders' turns (sleeps: at least). */
	ASSERT(still.waited_ms > 1500);

	/* A holder that never lets go: the same bound ends the wait. */
	holder = raw_holder(path, &hold);
	start(&still, path, BGRUN__TEST_LOCK_STILL, 200, 0);
	finish(&still);
	ASSERT_EQ(still.r, -ETIMEDOUT);
	end_raw_holder(holder, hold);
	(void)munmap(c, 4096);
	(void)close(fd);
	free(path);
}

/*
 * Garbage in the page (serving far ahead of next: another program, a torn
 * file) passes every ticket over: a waiter takes a ticket again a few
 * times only, then goes for the flock, which is free, and gets it.
 */
void case_lock_garbage_page(void)
{
	struct waiter w;
	struct counters *c;
	int fd;
	char *path = lock_file(&fd, &c);

	atomic_store(&c->serving, atomic_load(&c->next) + 0x7fffffffu);
	start(&w, path, BGRUN__TEST_LOCK_STILL, 60000, 0);
	finish(&w);
	ASSERT_EQ(w.r, 0);
	(void)munmap(c, 4096);
	(void)close(fd);
	free(path);
}

/*
 * The mailboxes after the queue's page (src/unix/filelock.c): one of
 * MAILBOX bytes per ticket modulo 64, its first word naming its ticket
 * + 1 (high half) and its state (low byte).
 */
#define PAGE 4096
#define MAILBOX 8192
#define MAIL_AREA (64 * MAILBOX)
enum { MAIL_READY = 2, MAIL_RETRY = 5 };
#define MAIL(t, st) (((uint64_t)((t) + 1) << 32) | (st))

struct box {
	_Atomic uint64_t word;
	uint32_t len;
	int32_t result;
	uint32_t reserved[12];
	unsigned char data[MAILBOX - 64];
};

static struct box *box_of(void *map, uint32_t t)
{
	return (struct box *)((char *)map + PAGE + (t % 64) * MAILBOX);
}

/* A store at DIR/name, and its lock file mapped, mailboxes and all. */
static char *group_store(const char *name, struct bgrun_store **ret_store,
			 void **ret_map)
{
	char *db = t_path(t_tmpdir(), name), *lock = t_printf("%s-lock", db);
	void *map;
	int fd;

	ASSERT_OK(t_open(db, 0, ret_store));
	fd = open(lock, O_RDWR | O_CLOEXEC);
	ASSERT_SYS(fd);
	map = mmap(NULL, PAGE + MAIL_AREA, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	ASSERT(map != MAP_FAILED);
	(void)close(fd);
	free(lock);
	*ret_map = map;
	return db;
}

/* `store-tests put DB ID`, its store open, waiting for go(). */
struct putter {
	struct bgrun_child *child;
	int go;
};

static void start_put(struct putter *p, const char *db, const char *id)
{
	const char *argv[] = { t_self(), "put", db, id, NULL };
	struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;
	int in[2], out[2];
	char c;

	ASSERT_SYS(pipe2(in, O_CLOEXEC));
	ASSERT_SYS(pipe2(out, O_CLOEXEC));
	opts.argv = argv;
	opts.in.kind = BGRUN_STDIO_FD;
	opts.in.fd = in[0];
	opts.out.kind = BGRUN_STDIO_FD;
	opts.out.fd = out[1];
	opts.err.kind = BGRUN_STDIO_INHERIT;
	ASSERT_OK(bgrun_spawn(&opts, &p->child));
	ASSERT_SYS(close(in[0]));
	ASSERT_SYS(close(out[1]));
	ASSERT_EQ(read(out[0], &c, 1), 1); /* its store is open */
	ASSERT_SYS(close(out[0]));
	p->go = in[1];
}

/* Its put starts. */
static void go(struct putter *p)
{
	ASSERT_SYS(close(p->go));
}

static void put_succeeded(struct putter *p, const char *what)
{
	struct bgrun_status st;

	ASSERT_OK(bgrun_child_wait(p->child, 60000, &st));
	if (!st.exited || st.exit_code != 0)
		FAIL("%s: exit %d signal %d", what, st.exit_code, st.signal);
	bgrun_child_free(p->child);
}

/* Until t's mailbox holds word w (bounded: a hang fails). */
static void until_box(void *map, uint32_t t, uint64_t w)
{
	int64_t end = now_ms() + 60000;

	while (atomic_load(&box_of(map, t)->word) != w) {
		ASSERT(now_ms() < end);
		(void)usleep(1000);
	}
}

/*
 * The queue that both group-commit cases start from: h holds the lock,
 * first's put waits behind it, and w waits behind that put (a waiter of
 * the test's, which leaves no mail). Returns h's ticket.
 */
static uint32_t hold_put_wait(const char *lock, struct counters *c,
			      struct waiter *h, struct putter *first,
			      struct waiter *w)
{
	uint32_t base = next(c);

	start(h, lock, BGRUN__TEST_LOCK_TOTAL, 60000, 0);
	join(h);
	ASSERT_EQ(h->r, 0);
	go(first);
	until_next(c, base + 2);
	start(w, lock, BGRUN__TEST_LOCK_STILL, 60000, 0);
	until_next(c, base + 3);
	return base;
}

/*
 * Group commit: a put waiting behind the holder of the lock leaves its
 * event in its mailbox, and the next writer to hold the lock commits it
 * with its own; the waiting put then returns without the lock. Here it
 * returns while the lock is held by a waiter queued before it, who never
 * lets go until the end: without group commit it could only return
 * after that one.
 */
void case_lock_group_commit(void)
{
	struct bgrun_store *s;
	struct putter first, behind;
	struct waiter h, x;
	struct t_rows rows = { 0 };
	void *map;
	char *db = group_store("g.db", &s, &map);
	char *lock = t_printf("%s-lock", db);
	struct counters *c = map;
	uint32_t base;

	start_put(&first, db, "group-first");
	start_put(&behind, db, "group-behind");
	/* The holder, then a put, a waiter that will hold, a put. */
	base = hold_put_wait(lock, c, &h, &first, &x);
	go(&behind);
	until_next(c, base + 4);
	until_box(map, base + 3, MAIL(base + 3, MAIL_READY));

	/* The first put's turn: it writes the event behind x's turn too. */
	ASSERT_EQ(lock_op(BGRUN__TEST_LOCK_RELEASE, &h.lock, -1, 0), 0);
	put_succeeded(&first, "the first put");
	put_succeeded(&behind, "the put behind the holding waiter");
	join(&x);
	ASSERT_EQ(x.r, 0); /* x holds the lock, and still does */
	t_get(s, "group-first", &rows);
	t_get(s, "group-behind", &rows);
	ASSERT_EQ(rows.ev[0].supervisor_pid != 0, true);
	/* Its box is free again for the next waiter of its slot. */
	ASSERT_EQ(atomic_load(&box_of(map, base + 3)->word), 0);
	t_rows_free(&rows);
	finish(&x);
	finish(&h);
	bgrun_store_close(s);
	(void)munmap(map, PAGE + MAIL_AREA);
	free(lock);
	free(db);
}

/*
 * A mailbox holding what is not an event's frame (another program, a
 * torn file) is given back to its ticket, and the holder's own write is
 * not harmed.
 */
void case_lock_group_garbage(void)
{
	static const char junk[] = "\0\0\0\x0cnot a frame";
	struct bgrun_store *s;
	struct putter first;
	struct waiter h, y;
	struct t_rows rows = { 0 };
	struct box *b;
	void *map;
	char *db = group_store("j.db", &s, &map);
	char *lock = t_printf("%s-lock", db);
	struct counters *c = map;
	uint32_t base;

	start_put(&first, db, "garbage-first");
	base = hold_put_wait(lock, c, &h, &first, &y);
	b = box_of(map, base + 2);
	memcpy(b->data, junk, sizeof(junk));
	b->len = sizeof(junk);
	atomic_store(&b->word, MAIL(base + 2, MAIL_READY));

	ASSERT_EQ(lock_op(BGRUN__TEST_LOCK_RELEASE, &h.lock, -1, 0), 0);
	put_succeeded(&first, "the put ahead of the garbage");
	join(&y);
	ASSERT_EQ(y.r, 0);
	ASSERT_EQ(atomic_load(&b->word), MAIL(base + 2, MAIL_RETRY));
	t_get(s, "garbage-first", &rows);
	t_rows_free(&rows);
	finish(&y);
	finish(&h);
	bgrun_store_close(s);
	(void)munmap(map, PAGE + MAIL_AREA);
	free(lock);
	free(db);
}

/*
 * At most 63 tickets are out (one per slot of the page): a burst of
 * writers waits for a place, asleep, and takes a ticket as one frees.
 * With the queue laps deep, slots were shared, the marks of given-up
 * tickets were overwritten, and hand-overs stood until a takeover: 1,600
 * recorders at once took minutes and timed out into the spool.
 */
void case_lock_queue_bounded(void)
{
	enum { N = 70, QUEUE_MAX = 63 };
	static struct waiter w[N];
	struct counters *c;
	int fd, hold;
	char *path = lock_file(&fd, &c);
	pid_t holder = raw_holder(path, &hold);
	int64_t end = now_ms() + 20000;

	for (int i = 0; i < N; i++)
		start(&w[i], path, BGRUN__TEST_LOCK_STILL, 60000, 1);
	while (atomic_load(&c->gated) != N - QUEUE_MAX) {
		if (now_ms() >= end)
			FAIL("%u wait for a place, not %d (tickets out: %u)",
			     atomic_load(&c->gated), N - QUEUE_MAX,
			     next(c) - serving(c));
		(void)usleep(1000);
	}
	ASSERT_EQ(next(c), QUEUE_MAX);
	end_raw_holder(holder, hold);
	for (int i = 0; i < N; i++) {
		finish(&w[i]);
		ASSERT_EQ(w[i].r, 0);
	}
	ASSERT_EQ(next(c), N);
	ASSERT_EQ(serving(c), N);
	ASSERT_EQ(atomic_load(&c->gated), 0);
	(void)munmap(c, 4096);
	(void)close(fd);
	free(path);
}

/* Ticket t, as if the process pid had taken it and not yet its turn. */
static void fake_ticket(struct counters *c, uint32_t t, pid_t pid)
{
	ASSERT_EQ(next(c), t);
	ASSERT_EQ(serving(c), t);
	atomic_store(&c->owner[t % 64], (uint64_t)(t + 1) << 32 |
						(uint32_t)pid);
	atomic_store(&c->next, t + 1);
}

/*
 * The head of the queue whose process runs is waited for (2 s), not
 * taken over after the 25 ms a dead one gets: on a loaded machine the
 * next in turn can wait that long for a CPU, and a takeover passed it
 * and everyone between over. A head stopped or gone is taken over at
 * once (well within a bound of 1.5 s the queue does not move in).
 */
void case_lock_live_head(void)
{
	struct waiter w;
	struct counters *c;
	int fd, go[2];
	char *path = lock_file(&fd, &c);
	pid_t pid;
	char ch;

	ASSERT_SYS(pipe(go));
	pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		(void)close(go[1]);
		(void)read(go[0], &ch, 1);
		_exit(0);
	}
	(void)close(go[0]);

	fake_ticket(c, 0, pid);
	start_stall(&w, path, BGRUN__TEST_LOCK_STILL, 60000, 0, 0);
	join(&w);
	ASSERT_EQ(w.r, 0);
	ASSERT(w.waited_ms >= 2000);
	ASSERT_EQ(serving(c), 1);
	finish(&w);
	ASSERT_EQ(serving(c), 2);

	ASSERT_SYS(kill(pid, SIGSTOP));
	fake_ticket(c, 2, pid);
	start_stall(&w, path, BGRUN__TEST_LOCK_STILL, 1500, 0, 0);
	finish(&w);
	ASSERT_EQ(w.r, 0);
	ASSERT_EQ(serving(c), 4);

	ASSERT_SYS(kill(pid, SIGKILL));
	ASSERT_SYS(waitpid(pid, NULL, 0));
	(void)close(go[1]);
	fake_ticket(c, 4, pid);
	start_stall(&w, path, BGRUN__TEST_LOCK_STILL, 1500, 0, 0);
	finish(&w);
	ASSERT_EQ(w.r, 0);
	ASSERT_EQ(serving(c), 6);
	(void)munmap(c, 4096);
	(void)close(fd);
	free(path);
}
