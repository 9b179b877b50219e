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
 * Who waits for a takeover: the waiter right behind the head of the
 * queue looks after STALL_NS, the one d places behind after d times
 * that, so that a standing queue costs one look per STALL_NS, not one
 * per waiter. The page names the process that took each ticket (`owner`):
 * a head whose process is alive and not stopped is waited for up to
 * LIVE_NS, since on a loaded machine the next in turn can wait that long
 * for a CPU (or a holder be between its unlock and its hand-over), and a
 * takeover then passed it and everyone between over.
 *
 * At most QUEUE_MAX tickets are out, one per slot: every word of a
 * ticket is its own. More writers wait for a place (take_ticket), asleep
 * on the page's `room` word, which every move of `serving` bumps when
 * somebody waits there. With 1,600 recorders at once the queue used to
 * be laps deep: slots were shared, the `gone` marks of given-up tickets
 * overwritten, hand-overs stood until a takeover, and recorders timed
 * out into the spool.
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
 * Group commit: after the page come SLOTS mailboxes, one per ticket
 * modulo SLOTS. A waiter that has to wait leaves its work there (for the
 * store, one event's frame); the holder takes what waits behind it, does
 * it in its own transaction, and gives each its result; its waiter then
 * leaves the queue (as one that gave up) without ever holding the lock.
 * A box's word holds its ticket and its state, changed only by
 * compare-and-swap: WRITING (its waiter fills it) -> READY -> TAKEN (by
 * the holder, who alone takes, from the tickets after `serving`) -> DONE
 * or RETRY (given back: its waiter does it in its turn), then free. Its
 * waiter withdraws a READY box before it takes the lock itself, gives up
 * or queues again; a TAKEN one it waits for, the holder being at work
 * (a holder that died with it is found out as any dead head of the
 * queue is: the flock free after STALL_NS). A box left behind (its
 * waiter gone) is taken by the next waiter of its slot once its ticket
 * is passed; while WRITING, only if its writer's process is gone.
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
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
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
/* How long a head of the queue that is alive and not stopped is waited for. */
#define LIVE_NS (2 * INT64_C(1000000000))
/* How many tickets may be out at once: one per slot, so none shares one. */
#define QUEUE_MAX (SLOTS - 1)
/* How often a writer waiting for a place looks again unwoken. */
#define ROOM_LOOK_NS (250 * INT64_C(1000000))
/* How long the next in turn watches for the hand-over before sleeping. */
#define SPIN_NS (200 * INT64_C(1000))
/* The flock itself, when taken out of turn: polled, backing off to this. */
#define POLL_MAX_NS (2 * INT64_C(1000000))
/* How many times a waiter passed over takes a ticket again. */
#define REQUEUE_MAX 8

struct page {
	_Atomic uint32_t next;
	_Atomic uint32_t serving;
	_Atomic uint32_t counter; /* bgrun__filelock_counter's */
	_Atomic uint32_t room;  /* moves when a place in the queue frees */
	_Atomic uint32_t gated; /* how many wait for a place */
	uint32_t reserved[11];
	_Atomic uint32_t slot[SLOTS];
	/* ticket + 1: that ticket's waiter gave up (exact, never t % SLOTS). */
	_Atomic uint32_t gone[SLOTS];
	/* (ticket + 1) << 32 | the pid that took it; 0 in older pages. */
	_Atomic uint64_t owner[SLOTS];
};
_Static_assert(sizeof(struct page) <= PAGE, "the queue fits a page");

#define MAILBOX 8192
#define MAIL_AREA ((size_t)SLOTS * MAILBOX)

enum { MAIL_WRITING = 1, MAIL_READY, MAIL_TAKEN, MAIL_DONE, MAIL_RETRY };
/* A box's word: its ticket + 1, and its state; 0 is a free box. */
#define MAIL(t, st) (((uint64_t)(uint32_t)((t) + 1) << 32) | (uint64_t)(st))
#define MAIL_TICKET(w) ((uint32_t)((w) >> 32) - 1)
#define MAIL_STATE(w) ((uint32_t)(w) & 0xff)
/* WRITING also names its writer's pid (Linux's are below 2^22). */
#define MAIL_PID(w) ((pid_t)(((uint32_t)(w) >> 8) & 0xffffff))
#define MAIL_WRITER(t, pid) \
	(MAIL(t, MAIL_WRITING) | ((uint64_t)((uint32_t)(pid) & 0xffffff) << 8))

struct mailbox {
	_Atomic uint64_t word;
	uint32_t len;
	int32_t result;  /* the holder's, with DONE */
	uint32_t reserved[12];
	unsigned char data[MAILBOX - 64];
};
_Static_assert(sizeof(struct mailbox) == MAILBOX, "a mailbox is MAILBOX bytes");

static struct mailbox *box_at(const struct bgrun__filelock *l, uint32_t t)
{
	return (struct mailbox *)((char *)l->boxes + (size_t)(t % SLOTS) * MAILBOX);
}

static bool allocated(const struct stat *st, off_t size)
{
	return st->st_size >= size && (off_t)st->st_blocks * 512 >= size;
}

void bgrun__filelock_init(struct bgrun__filelock *l, int fd)
{
	struct stat st;
	void *map;
	bool boxes;

	*l = (struct bgrun__filelock){ .fd = fd };
	/*
	 * Without the page (a file system that cannot map it, or has no
	 * room for it): flock only. The page is allocated, not just made
	 * part of the file: touching a hole of a full file system (a tmpfs)
	 * is SIGBUS. fallocate keeps what another process wrote there.
	 */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	if (!allocated(&st, PAGE) && fallocate(fd, 0, 0, PAGE) < 0)
		return;
	/* Without room for the mailboxes: the queue alone. */
	boxes = allocated(&st, PAGE + (off_t)MAIL_AREA) ||
		fallocate(fd, 0, PAGE, (off_t)MAIL_AREA) == 0;
	map = mmap(NULL, boxes ? PAGE + MAIL_AREA : PAGE,
		   PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return;
	l->map = map;
	if (boxes)
		l->boxes = (char *)map + PAGE;
}

void bgrun__filelock_destroy(struct bgrun__filelock *l)
{
	if (l->held)
		bgrun__filelock_release(l);
	if (l->map != NULL)
		(void)munmap(l->map, l->boxes != NULL ? PAGE + MAIL_AREA : PAGE);
	l->map = NULL;
	l->boxes = NULL;
}

_Atomic uint32_t *bgrun__filelock_counter(struct bgrun__filelock *l)
{
	struct page *p = l->map;

	return p != NULL ? &p->counter : NULL;
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

/*
 * serving moved on by n: as many writers waiting for a place in the
 * queue are woken, if any wait (they count themselves in `gated` before
 * they look at the queue, so one of us sees the other).
 */
static void open_room(struct page *p, uint32_t n)
{
	if (atomic_load(&p->gated) == 0)
		return;
	atomic_fetch_add(&p->room, 1);
	(void)syscall(SYS_futex, &p->room, FUTEX_WAKE,
		      n < INT_MAX ? (int)n : INT_MAX, NULL, NULL, 0);
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
	uint32_t steps = 1;

	for (;;) {
		uint32_t expect = t;

		if (atomic_load(&p->gone[t % SLOTS]) != t + 1) {
			wake_ticket(p, t);
			break;
		}
		if (!atomic_compare_exchange_strong(&p->serving, &expect, t + 1))
			break;
		t++;
		steps++;
	}
	open_room(p, steps);
}

/* Our ticket given up: off the queue, serving moved on if it is at us. */
static void give_up(struct page *p, uint32_t my)
{
	uint32_t expect = my;
	uint64_t o = atomic_load(&p->owner[my % SLOTS]);

	/* Not a head to wait for any more (its process may live on). */
	if ((uint32_t)(o >> 32) == my + 1)
		(void)atomic_compare_exchange_strong(&p->owner[my % SLOTS], &o,
						     0);
	atomic_store(&p->gone[my % SLOTS], my + 1);
	if (atomic_compare_exchange_strong(&p->serving, &expect, my + 1))
		hand_over(p, my + 1);
}

/* LIVE_NS, or the stall when a test made that longer. */
static int64_t live_ns(const struct bgrun__filelock *l)
{
	return l->stall_ns > LIVE_NS ? l->stall_ns : LIVE_NS;
}

/*
 * Whether ticket t's waiter is a process that runs: alive, and neither
 * stopped nor traced to a stop. false when the page does not say who
 * took t (an older bgrun's ticket, or the moment between taking it and
 * saying so), when the process is gone, or stopped.
 */
static bool head_runs(struct page *p, uint32_t t)
{
	uint64_t o = atomic_load(&p->owner[t % SLOTS]);
	pid_t pid = (pid_t)(uint32_t)o;
	char path[64], buf[512], *paren;
	ssize_t n;
	int fd;

	if ((uint32_t)(o >> 32) != t + 1 || pid <= 0)
		return false;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return false;
	(void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return true; /* no /proc: alive is all we know */
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	/* "PID (COMM) S ...": COMM may hold parentheses; the last one ends it. */
	paren = strrchr(buf, ')');
	if (paren == NULL || paren[1] != ' ')
		return true;
	return paren[2] == '\0' || strchr("TtZX", paren[2]) == NULL;
}

/*
 * When the waiter of ticket my looks at a head s that stands still since
 * moved: d places back, after d stalls (at most SLOTS), and not before
 * look, its next look once it has looked.
 */
static int64_t look_at(int64_t moved, int64_t stall, uint32_t my, uint32_t s,
		       int64_t look)
{
	int64_t at = moved + stall * (int64_t)(my - s < SLOTS ? my - s : SLOTS);

	return at > look ? at : look;
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
 * Leaves mail's work in my's box, if the box is free, or left behind: a
 * box of a ticket already passed, not being written, or being written by
 * a process that is gone. The box (its state READY), or NULL: no box, or
 * make() left no work.
 */
static struct mailbox *post(struct bgrun__filelock *l, struct page *p,
			    uint32_t my, struct bgrun__filelock_mail *mail)
{
	struct mailbox *b = box_at(l, my);
	uint64_t w = atomic_load(&b->word), mine = MAIL_WRITER(my, getpid());
	size_t len;

	if (w != 0) {
		if ((int32_t)(atomic_load(&p->serving) - MAIL_TICKET(w)) <= 0)
			return NULL; /* a waiter still queued, a lap ahead */
		if (MAIL_STATE(w) == MAIL_WRITING &&
		    (kill(MAIL_PID(w), 0) == 0 || errno != ESRCH))
			return NULL;
	}
	if (!atomic_compare_exchange_strong(&b->word, &w, mine))
		return NULL;
	len = mail->make(mail->ctx, b->data, sizeof(b->data));
	if (len > 0 && len <= sizeof(b->data)) {
		b->len = (uint32_t)len;
		if (atomic_compare_exchange_strong(&b->word, &mine,
						   MAIL(my, MAIL_READY)))
			return b;
		return NULL; /* taken from us meanwhile: not ours any more */
	}
	(void)atomic_compare_exchange_strong(&b->word, &mine, 0);
	return NULL;
}

/* Takes a READY box back: false if the holder has it or has answered. */
static bool withdraw(struct mailbox *b, uint32_t my)
{
	uint64_t w = MAIL(my, MAIL_READY);

	return atomic_compare_exchange_strong(&b->word, &w, 0);
}

/* Frees a box of ours in any state (we hold the flock: no holder has it). */
static void clear_box(struct mailbox *b, uint32_t my)
{
	uint64_t w = atomic_load(&b->word);

	if (w != 0 && MAIL_TICKET(w) == my)
		(void)atomic_compare_exchange_strong(&b->word, &w, 0);
}

/*
 * Our turn came (0), we took it over: the flock is ours (1), a takeover
 * passed us (2: we take a new ticket), or the holder did our mail's work
 * (3: we are off the queue). Gives the ticket up on -ETIMEDOUT and
 * errors. start: when the wait began, or when the lock last moved for a
 * waiter passed over (BGRUN__FILELOCK_STILL). The mail is left only once
 * it is clear that we wait, and is never outstanding when this returns
 * but for -ETIMEDOUT while the holder has it (see the caller).
 */
static int wait_turn(struct bgrun__filelock *l, struct page *p, uint32_t my,
		     int64_t timeout_ns, bool still, int64_t start,
		     struct bgrun__filelock_mail *mail)
{
	uint32_t seen = atomic_load(&p->serving);
	int64_t moved = start, progress = start, now, until, spun = 0, deadline;
	int64_t stall = l->stall_ns > 0 ? l->stall_ns : STALL_NS;
	int64_t live = live_ns(l), look = 0, at; /* the next look at the head, after moved */
	struct mailbox *box = NULL;
	bool posted = mail == NULL || l->boxes == NULL;
	int r;

	for (;;) {
		_Atomic uint32_t *word = &p->slot[my % SLOTS];
		uint32_t v = atomic_load(word);
		uint32_t s = atomic_load(&p->serving);
		bool busy = false; /* the holder has our mail */

		if (box != NULL) {
			uint64_t w = atomic_load(&box->word);

			if (w == MAIL(my, MAIL_DONE)) {
				mail->result = box->result;
				(void)atomic_compare_exchange_strong(&box->word,
								     &w, 0);
				give_up(p, my);
				return 3;
			}
			if (w == MAIL(my, MAIL_TAKEN))
				busy = true;
			else if (w != MAIL(my, MAIL_READY)) {
				/* Given back (RETRY), or reclaimed: ours to do. */
				if (w == MAIL(my, MAIL_RETRY))
					(void)atomic_compare_exchange_strong(
						&box->word, &w, 0);
				box = NULL;
			}
		}
		if (!busy && (s == my || (int32_t)(my - s) < 0)) {
			if (box != NULL && !withdraw(box, my))
				continue; /* answered meanwhile: look again */
			return s == my ? 0 : 2;
		}
		now = bgrun__now_ns(CLOCK_MONOTONIC);
		if (s != seen) {
			seen = s;
			moved = progress = now;
		}
		deadline = (still ? progress : start) + timeout_ns;
		/* A holder at work on our mail: its transaction's time more. */
		if (busy)
			deadline += timeout_ns;
		if (now >= deadline) {
			if (box != NULL && !busy && !withdraw(box, my))
				continue;
			give_up(p, my);
			return -ETIMEDOUT;
		}
		/*
		 * The queue stands still: the one right behind its head looks
		 * first, the ones further back later (one look per waiter and
		 * stall, not hundreds). A head that runs is waited for up to
		 * LIVE_NS: on a loaded machine the next in turn can wait that
		 * long for a CPU, and taking over from it would pass it and
		 * everyone between over. A head gone or stopped is taken over.
		 */
		at = look_at(moved, stall, my, s, look);
		if (now >= at && now - moved < live && head_runs(p, s)) {
			look = now + stall;
		} else if (now >= at) {
			look = now + stall;
			r = try_flock(l);
			if (r < 0) {
				if (box != NULL && !busy && !withdraw(box, my))
					continue;
				give_up(p, my);
				return r;
			}
			if (r > 0) {
				/* Nobody holds it: the queue's head is gone. */
				uint32_t from = s;

				if (box != NULL)
					clear_box(box, my);
				while ((int32_t)(my - s) > 0 &&
				       !atomic_compare_exchange_weak(&p->serving,
								     &s, my))
					;
				open_room(p, my - from);
				/* The ones passed over queue again. */
				for (uint32_t t = from; (int32_t)(my - t) > 0 &&
						       t - from < SLOTS; t++)
					wake_ticket(p, t);
				return 1;
			}
			/* held: by the head, stopped or busy */
		}
		if (!posted) {
			posted = true;
			box = post(l, p, my, mail);
			continue;
		}
		/*
		 * Next in turn: the holder woke us as it took the lock, and
		 * it holds it for tens of microseconds, so we watch for the
		 * hand-over on our CPU a little while rather than pay for
		 * being woken and scheduled again after it.
		 */
		if (!busy && my - s == 1 && now - spun < SPIN_NS) {
			spun = spun == 0 ? now : spun;
			for (int i = 0; i < 64; i++)
				cpu_relax();
			continue;
		}
		at = look_at(moved, stall, my, s, look);
		until = at < deadline ? at : deadline;
		futex_wait(word, v, until - now);
		spun = 0;
	}
}

/*
 * A ticket, once the queue has a place for it: at most QUEUE_MAX are
 * out, so that each has its own slot (its wait word, its `gone` and
 * `owner` words, its mailbox, all exact), and a burst of a thousand
 * writers waits here, asleep, instead of sharing slots: with the queue
 * many laps deep, marks of given-up tickets were overwritten and every
 * hand-over onto one stood until a takeover. When the queue has not
 * moved for LIVE_NS (a stopped holder, a page of garbage), the ticket is
 * taken anyway, as before there was a limit. *ret_ticket, and in
 * *ret_moved when the queue last moved as far as we saw (or our wait
 * began), or -ETIMEDOUT with the bound of the caller's wait.
 */
static int take_ticket(struct page *p, int64_t timeout_ns, bool still,
		       int64_t start, int64_t live, uint32_t *ret_ticket,
		       int64_t *ret_moved)
{
	uint32_t s = atomic_load(&p->serving), seen = s, n, v;
	int64_t moved = bgrun__now_ns(CLOCK_MONOTONIC), now, until;
	bool gated = false;
	int r = 0;

	for (;;) {
		n = atomic_load(&p->next);
		s = atomic_load(&p->serving);
		if ((int32_t)(n - s) < QUEUE_MAX) {
			if (atomic_compare_exchange_weak(&p->next, &n, n + 1)) {
				*ret_ticket = n;
				break;
			}
			continue;
		}
		now = bgrun__now_ns(CLOCK_MONOTONIC);
		if (s != seen) {
			seen = s;
			moved = now;
		}
		if (now - moved >= live) {
			*ret_ticket = atomic_fetch_add(&p->next, 1);
			break;
		}
		until = (still ? moved : start) + timeout_ns;
		if (now >= until) {
			r = -ETIMEDOUT;
			break;
		}
		if (!gated) {
			gated = true;
			atomic_fetch_add(&p->gated, 1);
			continue; /* counted: look again before sleeping */
		}
		v = atomic_load(&p->room);
		if ((int32_t)(atomic_load(&p->next) - atomic_load(&p->serving)) <
		    QUEUE_MAX)
			continue;
		if (until > moved + live)
			until = moved + live;
		if (until > now + ROOM_LOOK_NS)
			until = now + ROOM_LOOK_NS;
		futex_wait(&p->room, v, until - now);
	}
	if (gated)
		atomic_fetch_sub(&p->gated, 1);
	*ret_moved = moved;
	return r;
}

int bgrun__filelock_acquire_mail(struct bgrun__filelock *l, int64_t timeout_ns,
				 enum bgrun__filelock_bound bound,
				 struct bgrun__filelock_mail *mail)
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
		uint32_t pid = (uint32_t)getpid();

		for (int queued = 1;; queued++) {
			int64_t moved;

			r = take_ticket(p, timeout_ns, still, start,
					live_ns(l), &l->ticket, &moved);
			if (r < 0)
				return r;
			/* STILL's bound: from when the lock last moved. */
			if (still)
				start = moved;
			atomic_store(&p->owner[l->ticket % SLOTS],
				     (uint64_t)(l->ticket + 1) << 32 | pid);
			r = wait_turn(l, p, l->ticket, timeout_ns, still, start,
				      mail);
			if (r == 3)
				return 1;
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

int bgrun__filelock_acquire(struct bgrun__filelock *l, int64_t timeout_ns,
			    enum bgrun__filelock_bound bound)
{
	return bgrun__filelock_acquire_mail(l, timeout_ns, bound, NULL);
}

/* Answers ticket t's box: done with result (>= 0), or given back. */
static void answer(struct bgrun__filelock *l, uint32_t t, int32_t result)
{
	struct mailbox *b = box_at(l, t);

	if (result >= 0)
		b->result = result;
	atomic_store(&b->word, MAIL(t, result >= 0 ? MAIL_DONE : MAIL_RETRY));
	wake_ticket(l->map, t);
}

/*
 * From the ticket after `serving` (whose waiter, in its turn, takes the
 * lock after us and withdraws its own), at most a lap: every box READY
 * for the ticket it names.
 */
size_t bgrun__filelock_take(struct bgrun__filelock *l,
			    struct bgrun__filelock_taken *taken, size_t max)
{
	struct page *p = l->map;
	uint32_t from, next;
	size_t n = 0;

	if (!l->held || p == NULL || l->boxes == NULL)
		return 0;
	from = atomic_load(&p->serving) + 1;
	next = atomic_load(&p->next);
	for (uint32_t t = from; t != next && t - from < SLOTS - 1 && n < max;
	     t++) {
		struct mailbox *b = box_at(l, t);
		uint64_t w = MAIL(t, MAIL_READY);

		if (!atomic_compare_exchange_strong(&b->word, &w,
						    MAIL(t, MAIL_TAKEN)))
			continue;
		if (b->len == 0 || b->len > sizeof(b->data)) {
			/* Not a length it could have written: its own to do. */
			answer(l, t, -1);
			continue;
		}
		taken[n++] = (struct bgrun__filelock_taken){
			.ticket = t, .data = b->data, .len = b->len
		};
	}
	return n;
}

void bgrun__filelock_settle(struct bgrun__filelock *l,
			    const struct bgrun__filelock_taken *taken,
			    const int32_t *results, size_t n)
{
	for (size_t i = 0; i < n; i++)
		answer(l, taken[i].ticket, results[i]);
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
