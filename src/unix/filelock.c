/* SPDX-License-Identifier: MIT */
/* filelock.c: a write lock shared by processes through a file: flock(2) excludes, a ticket queue in the file hands it over in turn, every wait bounded. */

/*
 * flock(2) alone has no order and no timeout: an unlock wakes every
 * waiter, the one that runs first wins (often the process that just
 * unlocked, wanting it again), and a waiter can lose any number of times
 * in a row; a holder that is stopped (SIGSTOP, a debugger) makes everyone
 * wait without limit. Measured with bench/sink-bench (32 writers, one
 * event per transaction): p50 30 us but p99 92 ms and max 933 ms.
 *
 * So the first page of the lock file holds a ticket queue (next, serving)
 * and 64 wait words, shared by every process that maps it: a writer takes
 * the next ticket and sleeps on its wait word (a futex, with a timeout)
 * until `serving` reaches it, then takes the flock, which is normally free
 * by then. Unlocking releases the flock first, then moves `serving` on
 * and wakes the next ticket's word only.
 *
 * flock stays what excludes: the kernel drops it when its holder dies,
 * and programs that only flock the file (older bgruns) still exclude and
 * are excluded. The queue only orders, and a broken queue costs time, not
 * safety: a ticket whose owner died or is stuck leaves the queue
 * standing; after STALL_NS without movement a waiter that finds the flock
 * free takes over (serving jumps to its ticket and the skipped ones are
 * woken: they see themselves passed and take a ticket again, and after
 * REQUEUE_MAX times go for the flock directly). Garbage in the page
 * (another program, a torn file) does the same.
 *
 * A waiter that gives up (its bound passed) says so in its ticket's
 * `gone` word, and whoever moves `serving` onto a ticket given up moves
 * it on past it: a deep queue of waiters with short bounds (the close's
 * checkpoint waits 200 ms) would otherwise stand STALL_NS at each. The
 * waiter that gives up and the one handing over each write, then read
 * the other's word (sequentially consistent), so at least one of them
 * sees the other and moves `serving` on, with a compare-and-swap that
 * only one of them wins.
 *
 * Two bounds: BGRUN__FILELOCK_TOTAL counts the whole wait;
 * BGRUN__FILELOCK_STILL only the time since the lock last changed hands,
 * which is what a stopped holder shows (a long queue that moves is not
 * one: the store's writes wait while it moves).
 */

#include "platform.h"
#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 64
#define PAGE 4096
/* How long the queue may stand still before a waiter takes over. */
#define STALL_NS (25 * INT64_C(1000000))
/* How long the next in turn watches for the hand-over before sleeping. */
#define SPIN_NS (200 * INT64_C(1000))
/* The flock itself, when taken out of turn: polled, backing off to this. */
#define POLL_MAX_NS (2 * INT64_C(1000000))
/* How many times a waiter passed over takes a ticket again. */
#define REQUEUE_MAX 8

struct page {
	_Atomic uint32_t next;
	_Atomic uint32_t serving;
	uint32_t reserved[14];
	_Atomic uint32_t slot[SLOTS];
	/* ticket + 1: that ticket's waiter gave up (exact, never t % SLOTS). */
	_Atomic uint32_t gone[SLOTS];
};
_Static_assert(sizeof(struct page) <= PAGE, "the queue fits a page");

void bgrun__filelock_init(struct bgrun__filelock *l, int fd)
{
	struct stat st;
	void *map;

	*l = (struct bgrun__filelock){ .fd = fd };
	/*
	 * Without the page (a file system that cannot map it, or has no
	 * room for it): flock only. The page is allocated, not just made
	 * part of the file: touching a hole of a full file system (a tmpfs)
	 * is SIGBUS. fallocate keeps what another process wrote there.
	 */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	if ((st.st_size < PAGE || st.st_blocks * 512 < PAGE) &&
	    fallocate(fd, 0, 0, PAGE) < 0)
		return;
	map = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map != MAP_FAILED)
		l->map = map;
}

void bgrun__filelock_destroy(struct bgrun__filelock *l)
{
	if (l->held)
		bgrun__filelock_release(l);
	if (l->map != NULL)
		(void)munmap(l->map, PAGE);
	l->map = NULL;
}

int bgrun__filelock_open_sync(const char *path)
{
	return open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
}

/* Shared, not private: the word is in a file mapped by other processes. */
static void futex_wait(_Atomic uint32_t *word, uint32_t value, int64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000,
			       .tv_nsec = ns % 1000000000 };

	(void)syscall(SYS_futex, word, FUTEX_WAIT, value, &ts, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word)
{
	(void)syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Wakes whoever waits with ticket t (its word changes first). */
static void wake_ticket(struct page *p, uint32_t t)
{
	atomic_fetch_add(&p->slot[t % SLOTS], 1);
	futex_wake(&p->slot[t % SLOTS]);
}

/*
 * serving is at t: moves it past every ticket from t whose waiter gave
 * up, and wakes the first one that did not. A failed swap means another
 * (the waiter giving up, or a takeover) moved it: theirs to go on.
 */
static void hand_over(struct page *p, uint32_t t)
{
	for (;;) {
		uint32_t expect = t;

		if (atomic_load(&p->gone[t % SLOTS]) != t + 1) {
			wake_ticket(p, t);
			return;
		}
		if (!atomic_compare_exchange_strong(&p->serving, &expect, t + 1))
			return;
		t++;
	}
}

/* Our ticket given up: off the queue, serving moved on if it is at us. */
static void give_up(struct page *p, uint32_t my)
{
	uint32_t expect = my;

	atomic_store(&p->gone[my % SLOTS], my + 1);
	if (atomic_compare_exchange_strong(&p->serving, &expect, my + 1))
		hand_over(p, my + 1);
}

static int try_flock(struct bgrun__filelock *l)
{
	while (flock(l->fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
	return 1;
}

/* The flock out of turn (no queue, or passed over): polled. */
static int poll_flock(struct bgrun__filelock *l, int64_t deadline)
{
	int64_t pause = 50000, now;
	int r;

	for (;;) {
		r = try_flock(l);
		if (r != 0)
			return r;
		now = bgrun__now_ns(CLOCK_MONOTONIC);
		if (now >= deadline)
			return -ETIMEDOUT;
		if (pause > deadline - now)
			pause = deadline - now;
		(void)nanosleep(&(struct timespec){ .tv_nsec = (long)pause },
				NULL);
		pause = pause * 2 < POLL_MAX_NS ? pause * 2 : POLL_MAX_NS;
	}
}

/*
 * Our turn came (0), we took it over: the flock is ours (1), or a
 * takeover passed us (2: we take a new ticket). Gives the ticket up on
 * -ETIMEDOUT and errors. start: when the wait began, or when the lock
 * last moved for a waiter passed over (BGRUN__FILELOCK_STILL).
 */
static int wait_turn(struct bgrun__filelock *l, struct page *p, uint32_t my,
		     int64_t timeout_ns, bool still, int64_t start)
{
	uint32_t seen = atomic_load(&p->serving);
	int64_t moved = start, progress = start, now, until, spun = 0, deadline;
	int r;

	for (;;) {
		_Atomic uint32_t *word = &p->slot[my % SLOTS];
		uint32_t v = atomic_load(word);
		uint32_t s = atomic_load(&p->serving);

		if (s == my)
			return 0;
		if ((int32_t)(my - s) < 0)
			return 2;
		now = bgrun__now_ns(CLOCK_MONOTONIC);
		if (s != seen) {
			seen = s;
			moved = progress = now;
		}
		deadline = (still ? progress : start) + timeout_ns;
		if (now >= deadline) {
			give_up(p, my);
			return -ETIMEDOUT;
		}
		if (now - moved >= STALL_NS) {
			r = try_flock(l);
			if (r < 0) {
				give_up(p, my);
				return r;
			}
			if (r > 0) {
				/* Nobody holds it: the queue's head is gone. */
				uint32_t from = s;

				while ((int32_t)(my - s) > 0 &&
				       !atomic_compare_exchange_weak(&p->serving,
								     &s, my))
					;
				/* The ones passed over queue again. */
				for (uint32_t t = from; (int32_t)(my - t) > 0 &&
						       t - from < SLOTS; t++)
					wake_ticket(p, t);
				return 1;
			}
			moved = now; /* held: by the head, stopped or busy */
		}
		/*
		 * Next in turn: the holder woke us as it took the lock, and
		 * it holds it for tens of microseconds, so we watch for the
		 * hand-over on our CPU a little while rather than pay for
		 * being woken and scheduled again after it.
		 */
		if (my - s == 1 && now - spun < SPIN_NS) {
			spun = spun == 0 ? now : spun;
			for (int i = 0; i < 64; i++)
				cpu_relax();
			continue;
		}
		until = moved + STALL_NS < deadline ? moved + STALL_NS : deadline;
		futex_wait(word, v, until - now);
		spun = 0;
	}
}

int bgrun__filelock_acquire(struct bgrun__filelock *l, int64_t timeout_ns,
			    enum bgrun__filelock_bound bound)
{
	int64_t start = bgrun__now_ns(CLOCK_MONOTONIC);
	bool still = bound == BGRUN__FILELOCK_STILL;
	struct page *p = l->map;
	int r;

	if (l->held)
		return 0;
	if (p == NULL) {
		/* No queue to watch: the whole wait is what is bounded. */
		r = poll_flock(l, start + timeout_ns);
	} else {
		for (int queued = 1;; queued++) {
			l->ticket = atomic_fetch_add(&p->next, 1);
			r = wait_turn(l, p, l->ticket, timeout_ns, still, start);
			if (r != 2)
				break;
			/*
			 * Passed over (a takeover jumped past us): back in the
			 * queue, at its end, rather than polling the flock with
			 * every other one passed over (hundreds of pollers kept
			 * the CPUs busy with flock() under 1,600 recorders).
			 * Only a few times: a page of garbage, serving far
			 * ahead of next, would pass us over for ever; then the
			 * flock, polled. The lock moved: the bound starts again.
			 */
			if (still)
				start = bgrun__now_ns(CLOCK_MONOTONIC);
			if (queued >= REQUEUE_MAX) {
				r = 0;
				break;
			}
		}
		if (r == 0) {
			/* Our turn (the lock moved to us), or passed over too often. */
			r = poll_flock(l, (still ? bgrun__now_ns(CLOCK_MONOTONIC)
						 : start) + timeout_ns);
			if (r < 0)
				give_up(p, l->ticket);
		}
	}
	if (r < 0)
		return r;
	l->held = true;
	/* The next in turn gets ready to take over (see wait_turn). */
	if (p != NULL && atomic_load(&p->next) - l->ticket > 1)
		wake_ticket(p, l->ticket + 1);
	return 0;
}

void bgrun__filelock_release(struct bgrun__filelock *l)
{
	struct page *p = l->map;
	uint32_t my = l->ticket;

	if (!l->held)
		return;
	(void)flock(l->fd, LOCK_UN);
	l->held = false;
	/* Passed over, or no queue: nobody waits for us to move it. */
	if (p == NULL || !atomic_compare_exchange_strong(&p->serving, &my,
							 l->ticket + 1))
		return;
	hand_over(p, l->ticket + 1);
}
