/* SPDX-License-Identifier: MIT */
/* serve-forward.c: the daemon's forwarder thread: ships the store's changes to PostgreSQL, in order, once each. */

#include "serve-forward.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <time.h>

/*
 * FORWARDING
 *
 * The forwarder has its own connection to the store and follows it by
 * change number (bgrun_store_changes): whatever reached the store, from
 * this daemon's writer, an embedded writer or the spool, and every later
 * change of a row (a running row that finished, a row marked lost) comes
 * after the cursor. A batch is sent in one PostgreSQL transaction: COPY
 * (typed columns, binary format) straight into the fleet table (DIRECT
 * COPY in serve-forward-pg.c), or, when a row is there already, COPY
 * into a temporary table and one INSERT ... ON CONFLICT into the fleet
 * table, whose rule
 * is the local store's (a running row takes any new state, a lost one a
 * final state, a final one nothing). Only after that COMMIT is the
 * cursor moved, in the store. A crash between the two sends the batch
 * again, which changes nothing at the table: delivery is at least once,
 * the table holds each event once.
 *
 * The writer never waits for any of it: it only signals that it
 * committed. Every failure (no server, a dropped connection, an error of
 * the server) ends the connection; the forwarder says what went wrong
 * once, waits (doubling, up to BACKOFF_MAX_MS) and starts again from the
 * cursor with a new connection, schema check included.
 *
 * The files: this one is the thread (its loop, the pipeline, yielding to
 * the writer, start and stop); serve-forward-batch.c reads the store's
 * changes into batches of COPY data and makes the statements;
 * serve-forward-pg.c holds the connections and sends a batch on one.
 */

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
/* How often the store is looked at without a signal (embedded writers). */
#define POLL_MS 1000
/* The forwarder thread's nice value. */
#define FORWARD_NICE 10
/* The writer is busy if it committed in the last IDLE_MS (see YIELDING). */
#define IDLE_MS 50

/* Says what is wrong, once until it changes or forwarding works again. */
void lsink_fwd_problem(struct lsink_forward *f, const char *what,
		       const char *why)
{
	char line[sizeof(f->said)];

	(void)snprintf(line, sizeof(line), "%s: %s", what, why);
	if (strcmp(line, f->said) == 0)
		return;
	memcpy(f->said, line, sizeof(line));
	lsink_msg("forwarding to %s: %s (events are kept here; retrying)",
		  lsink_printable(f->shown), lsink_printable(line));
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CLOCK_MONOTONIC's time ms from now, for pthread_cond_timedwait. */
static struct timespec deadline(int ms)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* Waits up to ms for a kick (or stop). Under lock. */
static void wait_kick(struct lsink_forward *f, int ms)
{
	struct timespec ts = deadline(ms);

	f->waiting = true;
	while (!f->kicked && !f->stop)
		if (pthread_cond_timedwait(&f->cond, &f->lock, &ts) != 0)
			break;
	f->waiting = false;
	f->kicked = false;
}

/* After a failure: wait, longer each time. */
static void back_off(struct lsink_forward *f)
{
	(void)pthread_mutex_lock(&f->lock);
	if (!f->stop) {
		struct timespec ts = deadline(f->backoff_ms);

		/* Kicks do not cut it short: only stopping does. */
		while (!f->stop &&
		       pthread_cond_timedwait(&f->cond, &f->lock, &ts) == 0)
			;
	}
	(void)pthread_mutex_unlock(&f->lock);
	f->backoff_ms = f->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
							   : f->backoff_ms * 2;
}

static struct fbatch *ring(struct lsink_forward *f, size_t i);

static bool stopping(struct lsink_forward *f)
{
	bool stop;

	(void)pthread_mutex_lock(&f->lock);
	stop = f->stop;
	(void)pthread_mutex_unlock(&f->lock);
	return stop;
}

static void set_busy(struct lsink_forward *f, bool busy)
{
	(void)pthread_mutex_lock(&f->lock);
	f->busy = busy;
	(void)pthread_mutex_unlock(&f->lock);
}

/*
 * YIELDING. Forwarding takes CPU from this machine: the thread's reading
 * and COPY data (some 1.5 us an event), and, with the server here, far
 * more of the server's (some 7 us an event: docs/fleet.md). Where the
 * CPUs are short, that is taken from the loop and the writer, whose acks
 * the clients wait for. So while the writer is busy (it committed in
 * the last IDLE_MS: the writer's kicks say when), no batch is started,
 * nor read: forwarding waits for a pause, and what came meanwhile goes
 * then, in full batches. It waits o.yield_ms at most, counted from the
 * first commit after it last caught up (first_commit_ns); past that, it
 * sends, busy writer or not, until a read finds less than a batch: a
 * flood that never pauses is forwarded all the same, as a backlog, the
 * CPUs shared. A burst shorter than yield_ms is thus stored at the speed
 * it would have without forwarding, and forwarded after it. A backlog
 * of unknown age (a whole batch read with no commit seen since the last
 * catch-up: there at the start, or written by others) counts as old. Embedded writers do not kick, so are never waited for.
 */

/*
 * Whether to wait now; if so, *ret_until is when to look again (the
 * writer idle if it commits nothing more, or yield_ms up).
 */
static bool holding(struct lsink_forward *f, int64_t *ret_until)
{
	int64_t now, idle_at, due;
	bool hold;

	if (f->o.yield_ms == 0)
		return false;
	now = mono_ns();
	(void)pthread_mutex_lock(&f->lock);
	idle_at = f->last_commit_ns + (int64_t)IDLE_MS * 1000000;
	due = f->first_commit_ns + (int64_t)f->o.yield_ms * 1000000;
	hold = f->first_commit_ns != 0 && now < idle_at && now < due;
	(void)pthread_mutex_unlock(&f->lock);
	if (hold)
		*ret_until = idle_at < due ? idle_at : due;
	return hold;
}

/* Waits until (CLOCK_MONOTONIC) or stop: kicks do not end it. */
static void hold_until(struct lsink_forward *f, int64_t until)
{
	struct timespec ts = { until / 1000000000, until % 1000000000 };
	int64_t t0 = mono_ns();

	(void)pthread_mutex_lock(&f->lock);
	while (!f->stop &&
	       pthread_cond_timedwait(&f->cond, &f->lock, &ts) == 0)
		;
	(void)pthread_mutex_unlock(&f->lock);
	f->held_ns += mono_ns() - t0;
}

/*
 * Reads the batch after those in flight: its size, or -1 said. A read
 * that finds a whole batch has not caught up, and the oldest change not
 * sent is as old as before it (or old, if that was not known).
 */
static int read_ahead(struct lsink_forward *f)
{
	struct fbatch *b = ring(f, f->n_flight);
	int64_t first;
	int n;

	(void)pthread_mutex_lock(&f->lock);
	first = f->first_commit_ns;
	f->first_commit_ns = 0;
	(void)pthread_mutex_unlock(&f->lock);
	n = lsink_fwd_read(f, b, f->n_flight > 0 ? ring(f, f->n_flight - 1)->seq
						 : f->cursor);
	if (n < 0 || (size_t)n >= f->o.batch_max) {
		(void)pthread_mutex_lock(&f->lock);
		f->first_commit_ns = first != 0 ? first : 1;
		(void)pthread_mutex_unlock(&f->lock);
	}
	return n;
}

/*
 * PIPELINE: while the server inserts one batch and commits it, the next
 * is read from the store (after the ones in flight, not the cursor), and
 * once the oldest committed, the next is sent before the cursor is saved
 * here: the store and the server do not take turns. What was read ahead
 * or sent after a batch that fails is dropped with it, and reading
 * starts again at the cursor, which moved only after a COMMIT.
 *
 * SEVERAL CONNECTIONS (--forward-connections, o.connections): a batch is
 * sent on each, so that the server takes them in parallel (one process
 * of the server per connection). ORDER: only the oldest batch in flight
 * has its COMMIT in its string; the younger ones are sent without it
 * (b->open), their rows inserted meanwhile, and each is committed once
 * it is the oldest, after the one before it. So batches are committed in
 * the store's order, as with one connection: whoever sees an event in
 * the table sees every event stored before it, and the cursor moves over
 * each batch in turn. A failure ends them all (the open ones roll back)
 * and sends again everything after the cursor: exactly once holds (a
 * row sent again is a conflict, taken the safe way). Since a younger
 * batch's transaction waits for the forwarder, it must never hold what
 * an older one needs: two transactions in flight never write the same
 * row (a row changed again after it was read: shares_rows), and
 * partitions are made only with nothing in flight.
 */

/* The batch i places after the oldest in flight. */
static struct fbatch *ring(struct lsink_forward *f, size_t i)
{
	return &f->batches[(f->head + i) % (f->n_conns + 1)];
}

/* Whether a row of b is in a batch in flight (by its id's key). */
static bool shares_rows(struct lsink_forward *f, const struct fbatch *b)
{
	for (size_t j = 0; j < f->n_flight; j++) {
		if (lsink_fwd_shares_rows(b, ring(f, j)))
			return true;
	}
	return false;
}

/*
 * Sends the batch read ahead, if a connection is free for it: 1 sent, 0
 * not now, -1 failed (said).
 */
static int send_pending(struct lsink_forward *f)
{
	struct fbatch *b = ring(f, f->n_flight);
	struct fconn *c = NULL;
	int64_t until;
	int r;

	/*
	 * Not beside batches in flight: one that writes a row of theirs, or
	 * one that makes a partition (the younger ones' transactions, open
	 * until the older ones commit, would hold it up).
	 */
	if (!f->pending || f->n_flight == f->n_conns ||
	    (f->n_flight > 0 &&
	     (lsink_fwd_new_months(f, b) || shares_rows(f, b))))
		return 0;
	/* The writer first (YIELDING). */
	if (holding(f, &until))
		return 0;
	for (size_t i = 0; i < f->n_conns && c == NULL; i++) {
		c = &f->conns[i];
		for (size_t j = 0; j < f->n_flight && c != NULL; j++)
			if (ring(f, j)->conn == c)
				c = NULL;
	}
	set_busy(f, true);
	r = lsink_fwd_start_batch(f, c, b);
	set_busy(f, false);
	if (r < 0)
		return -1;
	f->n_flight++;
	f->pending = false;
	return 1;
}

static void *forward_main(void *arg)
{
	struct lsink_forward *f = arg;
	struct fbatch *b;
	int64_t until;
	int n, r, sent;

	/*
	 * The writer's acks come first: where CPUs are short (the server on
	 * the same machine, or a busy one) the forwarder yields to it and
	 * catches up later. On Linux a nice value is per thread.
	 */
	(void)setpriority(PRIO_PROCESS, (id_t)gettid(), FORWARD_NICE);

	while (!stopping(f)) {
		if (!f->connected && lsink_fwd_connect(f) < 0) {
			back_off(f);
			continue;
		}
		/* Nothing in flight, and the writer busy: not now. */
		if (f->n_flight == 0 && holding(f, &until)) {
			hold_until(f, until);
			continue;
		}
		/* One read ahead, after those in flight. */
		if (!f->pending) {
			n = read_ahead(f);
			if (n < 0)
				goto failed;
			f->pending = n > 0;
		}
		sent = send_pending(f);
		if (sent < 0)
			goto failed;
		if (sent > 0)
			continue;
		if (f->n_flight == 0) {
			/* Held (send_pending): the loop's start waits. */
			if (f->pending)
				continue;
			/* Nothing to send: until the store changes. */
			(void)pthread_mutex_lock(&f->lock);
			wait_kick(f, POLL_MS);
			(void)pthread_mutex_unlock(&f->lock);
			continue;
		}
		/* The oldest in flight: its end, then the cursor. */
		b = ring(f, 0);
		set_busy(f, true);
		r = lsink_fwd_end_batch(f, b);
		set_busy(f, false);
		if (r < 0)
			goto failed;
		f->head = (f->head + 1) % (f->n_conns + 1);
		f->n_flight--;
		/* Committed there: the next goes while the cursor is saved. */
		sent = send_pending(f);
		if (bgrun_store_cursor_set(f->store, f->target, b->seq) < 0)
			lsink_fwd_problem(f, "saving the cursor",
				bgrun_store_errmsg(f->store));
		f->cursor = b->seq;
		f->n_sent += b->n;
		f->n_batches++;
		f->backoff_ms = BACKOFF_MIN_MS;
		if (sent < 0)
			goto failed;
		if (f->said[0] != '\0') {
			lsink_msg("forwarding to %s: working again",
				  lsink_printable(f->shown));
			f->said[0] = '\0';
		}
		continue;
failed:
		lsink_fwd_disconnect(f);
		back_off(f);
	}
	lsink_fwd_disconnect(f);
	return NULL;
}

static void forward_free(struct lsink_forward *f)
{
	if (f == NULL)
		return;
	bgrun_store_close(f->store);
	free(f->copy_sql);
	free(f->direct_sql);
	free(f->direct_open_sql);
	free(f->insert_sql);
	for (size_t i = 0; i < LSINK_FORWARD_CONNS_MAX; i++) {
		free(f->conns[i].safe_sql);
		free(f->conns[i].safe_open_sql);
	}
	for (size_t i = 0; i <= LSINK_FORWARD_CONNS_MAX; i++) {
		free(f->batches[i].buf);
		free(f->batches[i].keys);
	}
	free(f);
}

int lsink_forward_start(const struct lsink_forward_opts *o,
			struct lsink_forward **ret_forward, char *err,
			size_t size)
{
	struct lsink_forward *f = calloc(1, sizeof(*f));
	PQconninfoOption *parsed;
	pthread_condattr_t ca;
	char *perr = NULL;
	sigset_t all, old;
	struct utsname u;
	int r;

	if (f == NULL)
		return -ENOMEM;
	f->o = *o;
	f->n_conns = o->connections < 1 ? 1
		     : o->connections > LSINK_FORWARD_CONNS_MAX
			     ? LSINK_FORWARD_CONNS_MAX
			     : o->connections;
	f->made_lo = 1;
	f->backoff_ms = BACKOFF_MIN_MS;
	/* A string libpq cannot read is a usage error, now, not a retry loop. */
	parsed = PQconninfoParse(o->conninfo, &perr);
	if (parsed == NULL) {
		(void)snprintf(err, size, "--forward: %s",
			       perr != NULL ? strtok(perr, "\n")
					    : "out of memory");
		PQfreemem(perr);
		forward_free(f);
		return -EINVAL;
	}
	PQconninfoFree(parsed);
	lsink_fwd_describe(o->conninfo, f->shown, sizeof(f->shown));
	(void)snprintf(f->node, sizeof(f->node), "%s",
		       uname(&u) == 0 ? u.nodename : "unknown");
	for (size_t i = 0; i <= LSINK_FORWARD_CONNS_MAX; i++) {
		f->batches[i].forced = f->o.host;
		f->batches[i].node = f->node;
		f->batches[i].want_keys = f->n_conns > 1;
	}
	f->copy_sql = lsink_fwd_copy_sql("fleet_batch", "");
	f->direct_sql = lsink_fwd_copy_sql("fleet_events", "; COMMIT");
	f->direct_open_sql = lsink_fwd_copy_sql("fleet_events", "");
	f->insert_sql = lsink_fwd_insert_sql();
	if (f->copy_sql == NULL || f->direct_sql == NULL ||
	    f->direct_open_sql == NULL ||
	    f->insert_sql == NULL) {
		forward_free(f);
		return -ENOMEM;
	}
	r = bgrun_store_new(&f->store);
	if (r >= 0)
		r = bgrun_store_open(f->store, o->db, 0);
	if (r < 0) {
		(void)snprintf(err, size, "forwarding: %s",
			       f->store != NULL &&
					       bgrun_store_errmsg(f->store)[0]
				       ? bgrun_store_errmsg(f->store)
				       : bgrun_strerror(r));
		forward_free(f);
		return r;
	}
	r = pthread_mutex_init(&f->lock, NULL);
	if (r != 0) {
		forward_free(f);
		return -r;
	}
	(void)pthread_condattr_init(&ca);
	(void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	r = pthread_cond_init(&f->cond, &ca);
	(void)pthread_condattr_destroy(&ca);
	if (r != 0)
		goto fail_lock;
	(void)sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&f->thread, NULL, forward_main, f);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0)
		goto fail_cond;
	lsink_msg("forwarding to %s", lsink_printable(f->shown));
	*ret_forward = f;
	return 0;
fail_cond:
	(void)pthread_cond_destroy(&f->cond);
fail_lock:
	(void)pthread_mutex_destroy(&f->lock);
	forward_free(f);
	(void)snprintf(err, size, "cannot start the forwarder: %s",
		       strerror(r));
	return -r;
}

void lsink_forward_kick(struct lsink_forward *f)
{
	int64_t now;

	if (f == NULL)
		return;
	now = mono_ns();
	(void)pthread_mutex_lock(&f->lock);
	f->kicked = true;
	f->last_commit_ns = now;
	if (f->first_commit_ns == 0)
		f->first_commit_ns = now;
	/* Only a forwarder waiting for changes wants waking (YIELDING). */
	if (f->waiting)
		(void)pthread_cond_signal(&f->cond);
	(void)pthread_mutex_unlock(&f->lock);
}

void lsink_forward_stop(struct lsink_forward *f)
{
	char ignored[256];

	if (f == NULL)
		return;
	(void)pthread_mutex_lock(&f->lock);
	f->stop = true;
	/*
	 * A batch waiting on a slow server ends now, failed (and is sent
	 * again by the next start). Only then: a cancel request is a
	 * connection of its own, which a server that is not there makes wait.
	 */
	for (size_t i = 0; f->busy && i < f->n_conns; i++)
		if (f->conns[i].cancel != NULL)
			(void)PQcancel(f->conns[i].cancel, ignored,
				       (int)sizeof(ignored));
	(void)pthread_cond_signal(&f->cond);
	(void)pthread_mutex_unlock(&f->lock);
	(void)pthread_join(f->thread, NULL);
	(void)pthread_cond_destroy(&f->cond);
	(void)pthread_mutex_destroy(&f->lock);
	lsink_msg("forwarded %llu events in %llu transactions (%llu by "
		  "direct COPY), %.1f s of waiting for the writer",
		  (unsigned long long)f->n_sent,
		  (unsigned long long)f->n_batches,
		  (unsigned long long)f->n_direct, (double)f->held_ns / 1e9);
	forward_free(f);
}
