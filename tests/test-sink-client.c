/* SPDX-License-Identifier: MIT */
/* test-sink-client.c: the sink client's paths (daemon, embedded, spool), auto-start, SIGTERM and kill -9. */

#include "test-sink.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct bgrun_sink *sink_open_timeout(enum bgrun_sink_mode mode,
					    const char *db, const char *sock,
					    int timeout_ms)
{
	struct bgrun_sink_opts o = BGRUN_SINK_OPTS_INIT;
	struct bgrun_sink *sink;

	o.mode = mode;
	o.db = db;
	o.socket = sock;
	o.timeout_ms = timeout_ms;
	ASSERT_OK(bgrun_sink_new(&sink));
	ASSERT_OK(bgrun_sink_open(sink, &o));
	return sink;
}

static struct bgrun_sink *sink_open(enum bgrun_sink_mode mode, const char *db,
				    const char *sock)
{
	return sink_open_timeout(mode, db, sock, 20000);
}

static int put(struct bgrun_sink *sink, struct bgrun_event *ev, int64_t i)
{
	t_event(ev, i);
	return bgrun_sink_put(sink, ev);
}

void case_client_daemon(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	struct bgrun_event ev, batch[100];
	struct bgrun_sink *sink, *other;
	struct t_daemon d;
	int r;

	t_daemon_start(&d, db, sock, NULL);
	sink = sink_open(BGRUN_SINK_TRY, db, sock);
	ASSERT_EQ(put(sink, &ev, 0), BGRUN_SINK_VIA_DAEMON);
	ASSERT(t_db_has(db, ev.id)); /* acked: committed already */
	ASSERT_STR_EQ_NULL(bgrun_sink_errmsg(sink), "");
	for (int i = 0; i < 100; i++)
		t_event(&batch[i], i);
	ASSERT_EQ(bgrun_sink_put_batch(sink, batch, 100), BGRUN_SINK_VIA_DAEMON);
	ASSERT_EQ(t_db_int(db, "SELECT count(*) FROM events"), 101);
	/* The same event again: one row, as with the store. */
	ASSERT_EQ(bgrun_sink_put(sink, &batch[7]), BGRUN_SINK_VIA_DAEMON);
	ASSERT_EQ(t_db_int(db, "SELECT count(*) FROM events"), 101);

	/* Refused by the store: -EINVAL, never spooled; the others stored. */
	t_event(&batch[0], 0);
	t_event(&batch[1], 1);
	batch[1].options_json = "[not an object";
	t_event(&batch[2], 2);
	r = bgrun_sink_put_batch(sink, batch, 3);
	ASSERT_EQ(r, -EINVAL);
	ASSERT(!bgrun_sink_spooled(sink));
	ASSERT(strstr(bgrun_sink_errmsg(sink), batch[1].id) != NULL);
	ASSERT(t_db_has(db, batch[0].id) && t_db_has(db, batch[2].id));
	ASSERT(!t_db_has(db, batch[1].id));

	/* A daemon for another database is not used. */
	other = sink_open(BGRUN_SINK_TRY, t_path(dir, "other.db"), sock);
	ASSERT_EQ(put(other, &ev, 0), BGRUN_SINK_VIA_STORE);
	ASSERT(!t_db_has(db, ev.id) && t_db_has(t_path(dir, "other.db"), ev.id));
	bgrun_sink_close(other);

	/*
	 * A socket directory others may read (0750) is not the user's alone:
	 * no daemon there is used, just as none would serve there (one rule
	 * for both, bgrun_sink_check_dir).
	 */
	if (chmod(t_path(dir, "s"), 0750) < 0)
		FAIL("chmod: %m");
	ASSERT_EQ(bgrun_sink_check_dir(t_path(dir, "s")), -EPERM);
	other = sink_open(BGRUN_SINK_DAEMON, db, sock);
	t_event(&ev, 1);
	ASSERT_EQ(bgrun_sink_put_daemon(other, &ev), -EPERM);
	ASSERT(strstr(bgrun_sink_errmsg(other), "not yours alone") != NULL);
	ASSERT(!t_db_has(db, ev.id));
	bgrun_sink_close(other);
	if (chmod(t_path(dir, "s"), 0700) < 0)
		FAIL("chmod: %m");
	ASSERT_OK(bgrun_sink_check_dir(t_path(dir, "s")));
	ASSERT_EQ(bgrun_sink_put_daemon(sink, &ev), BGRUN_SINK_VIA_DAEMON);
	ASSERT(t_db_has(db, ev.id));
	other = sink_open(BGRUN_SINK_EMBEDDED, db, sock);
	ASSERT_EQ(bgrun_sink_put_daemon(other, &ev), -ENOTCONN);
	bgrun_sink_close(other);

	/* The daemon restarts under the kept connection: reconnected once. */
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
	t_daemon_start(&d, db, sock, NULL);
	ASSERT_EQ(put(sink, &ev, 0), BGRUN_SINK_VIA_DAEMON);
	ASSERT(t_db_has(db, ev.id));
	bgrun_sink_close(sink);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
	ASSERT_EQ(t_count_files(t_path(dir, "ev.db.spool"), ".ev"), 0);
}

void case_client_connect(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	struct bgrun_sink *sink;
	struct bgrun_event ev;
	struct t_daemon d;

	ASSERT_EQ(bgrun_sink_connect(NULL), -EINVAL);
	/* No daemon: the store is opened (made), nothing is written. */
	sink = sink_open(BGRUN_SINK_TRY, db, sock);
	ASSERT_EQ(bgrun_sink_connect(sink), BGRUN_SINK_VIA_STORE);
	ASSERT_STR_EQ_NULL(bgrun_sink_errmsg(sink), "");
	ASSERT_EQ(t_db_int(db, "SELECT count(*) FROM events"), 0);
	ASSERT_EQ(put(sink, &ev, 0), BGRUN_SINK_VIA_STORE);
	bgrun_sink_close(sink);
	/* Forced daemon, none there: an error, and nothing spooled. */
	sink = sink_open(BGRUN_SINK_DAEMON, db, sock);
	ASSERT(bgrun_sink_connect(sink) < 0);
	ASSERT(!bgrun_sink_spooled(sink));
	ASSERT(bgrun_sink_errmsg(sink)[0] != '\0');
	ASSERT_EQ(t_count_files(t_path(dir, "ev.db.spool"), ".ev"), 0);
	bgrun_sink_close(sink);
	/* A daemon: connected once, the put goes through that connection. */
	t_daemon_start(&d, db, sock, NULL);
	sink = sink_open(BGRUN_SINK_TRY, db, sock);
	ASSERT_EQ(bgrun_sink_connect(sink), BGRUN_SINK_VIA_DAEMON);
	ASSERT_EQ(bgrun_sink_connect(sink), BGRUN_SINK_VIA_DAEMON);
	ASSERT_EQ(put(sink, &ev, 1), BGRUN_SINK_VIA_DAEMON);
	ASSERT(t_db_has(db, ev.id));
	bgrun_sink_close(sink);
	/* Embedded, even with a daemon there. */
	sink = sink_open(BGRUN_SINK_EMBEDDED, db, sock);
	ASSERT_EQ(bgrun_sink_connect(sink), BGRUN_SINK_VIA_STORE);
	bgrun_sink_close(sink);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
	ASSERT_EQ(t_db_int(db, "SELECT count(*) FROM events"), 2);
}

/* What bgrun_sink_settle gave back, for case_client_post. */
struct unsettled {
	struct bgrun_sink *sink; /* non-NULL: each one is put there again */
	int n, error[8], put[8];
	char id[8][BGRUN_EVENT_ID_MAX + 1];
	char why[8][256];
};

static void on_unsettled(void *ctx, const struct bgrun_event *ev, int error,
			 const char *why)
{
	struct unsettled *u = ctx;
	struct bgrun_event again;

	ASSERT(ev != NULL && u->n < 8);
	u->error[u->n] = error;
	(void)snprintf(u->id[u->n], sizeof(u->id[0]), "%s", ev->id);
	(void)snprintf(u->why[u->n], sizeof(u->why[0]), "%s", why);
	if (u->sink != NULL) {
		/* The same sink, from within the settle: it must take it. */
		again = *ev;
		bgrun_event_complete(&again);
		u->put[u->n] = bgrun_sink_put(u->sink, &again);
	}
	u->n++;
}

static void lean_event(struct bgrun_event *ev, int64_t i)
{
	bgrun_event_init_lean(ev, "commandfinish", "test");
	ev->exit_code = i;
	ev->duration_ns = 1000 + i;
}

void case_client_post(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	struct bgrun_event ev, evs[300];
	struct unsettled u = { 0 };
	struct bgrun_sink *sink;
	char sql[256];
	struct t_daemon d;
	int r;

	ASSERT_EQ(bgrun_sink_preconnect(NULL), -EINVAL);
	ASSERT_EQ(bgrun_sink_settle(NULL, NULL, NULL), -EINVAL);
	/* No daemon: said at once, nothing posted. */
	sink = sink_open(BGRUN_SINK_TRY, db, sock);
	r = bgrun_sink_preconnect(sink);
	ASSERT(r == -ENOENT || r == -ECONNREFUSED);
	lean_event(&ev, 0);
	r = bgrun_sink_post(sink, &ev);
	ASSERT(r == -ENOENT || r == -ECONNREFUSED);
	ASSERT_EQ(bgrun_sink_settle(sink, on_unsettled, &u), 0);
	bgrun_sink_close(sink);
	sink = sink_open(BGRUN_SINK_EMBEDDED, db, sock);
	ASSERT_EQ(bgrun_sink_preconnect(sink), -ENOTCONN);
	ASSERT_EQ(bgrun_sink_post(sink, &ev), -ENOTCONN);
	bgrun_sink_close(sink);

	/*
	 * A daemon: greeted ahead, events posted with no wait, all
	 * committed once settled. The lean events' user and boot id come
	 * from the daemon.
	 */
	t_daemon_start(&d, db, sock, NULL);
	sink = sink_open(BGRUN_SINK_DAEMON, db, sock);
	ASSERT_EQ(bgrun_sink_preconnect(sink), BGRUN_SINK_VIA_DAEMON);
	ASSERT_EQ(bgrun_sink_preconnect(sink), BGRUN_SINK_VIA_DAEMON);
	for (int i = 0; i < 300; i++) {
		lean_event(&evs[i], i);
		ASSERT(evs[i].user == NULL && evs[i].boot_id == NULL);
		ASSERT_OK(bgrun_sink_post(sink, &evs[i]));
	}
	ASSERT_EQ(bgrun_sink_settle(sink, on_unsettled, &u), 0);
	ASSERT_EQ(u.n, 0);
	ASSERT_EQ(t_db_int(db, "SELECT count(*) FROM events"), 300);
	bgrun_event_complete(&ev);
	ASSERT(ev.user != NULL && ev.boot_id != NULL);
	(void)snprintf(sql, sizeof(sql),
		       "SELECT count(*) FROM events WHERE user = '%s' AND "
		       "boot_id = '%s'", ev.user, ev.boot_id);
	ASSERT_EQ(t_db_int(db, sql), 300);
	/* Nothing posted: nothing to wait for. */
	ASSERT_EQ(bgrun_sink_settle(sink, on_unsettled, &u), 0);

	/*
	 * One the daemon refuses as invalid comes back as -EINVAL, with the
	 * store's word; the others are committed; puts in between keep
	 * their own acks apart.
	 */
	lean_event(&evs[0], 0);
	lean_event(&evs[1], 1);
	evs[1].options_json = "[not an object";
	lean_event(&evs[2], 2);
	ASSERT_OK(bgrun_sink_post(sink, &evs[0]));
	ASSERT_OK(bgrun_sink_post(sink, &evs[1]));
	ASSERT_EQ(put(sink, &ev, 7), BGRUN_SINK_VIA_DAEMON);
	ASSERT_OK(bgrun_sink_post(sink, &evs[2]));
	ASSERT_EQ(bgrun_sink_settle(sink, on_unsettled, &u), 1);
	ASSERT_EQ(u.n, 1);
	ASSERT_EQ(u.error[0], -EINVAL);
	ASSERT_STR_EQ(u.id[0], evs[1].id);
	ASSERT(strstr(u.why[0], evs[1].id) != NULL);
	ASSERT(t_db_has(db, evs[0].id) && t_db_has(db, evs[2].id));
	ASSERT(t_db_has(db, ev.id) && !t_db_has(db, evs[1].id));
	/*
	 * The daemon restarts under the kept connection (as when it closed
	 * an idle one): the post is made again on a new one.
	 */
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
	t_daemon_start(&d, db, sock, NULL);
	lean_event(&ev, 0);
	ASSERT_OK(bgrun_sink_post(sink, &ev));
	ASSERT_EQ(bgrun_sink_settle(sink, on_unsettled, &u), 0);
	ASSERT_EQ(u.n, 1); /* the refused one above, no other */
	ASSERT(t_db_has(db, ev.id));
	bgrun_sink_close(sink);

	/*
	 * Greeted ahead by a daemon that writes another database: the post
	 * reads the answer and refuses (-EXDEV); nothing reaches either.
	 */
	sink = sink_open(BGRUN_SINK_TRY, t_path(dir, "other.db"), sock);
	ASSERT_EQ(bgrun_sink_preconnect(sink), BGRUN_SINK_VIA_DAEMON);
	lean_event(&ev, 0);
	ASSERT_EQ(bgrun_sink_post(sink, &ev), -EXDEV);
	ASSERT(strstr(bgrun_sink_errmsg(sink), "not ") != NULL);
	ASSERT_EQ(bgrun_sink_settle(sink, on_unsettled, &u), 0);
	ASSERT(!t_db_has(db, ev.id));
	bgrun_sink_close(sink);

	/*
	 * No answer in time: the daemon is stopped after the greeting. The
	 * settle gives the event back (-ETIMEDOUT), and putting it from
	 * within the settle works: here into the spool (mode daemon).
	 */
	sink = sink_open_timeout(BGRUN_SINK_DAEMON, db, sock, 300);
	ASSERT_EQ(bgrun_sink_preconnect(sink), BGRUN_SINK_VIA_DAEMON);
	lean_event(&ev, 0);
	ASSERT_OK(bgrun_sink_post(sink, &ev));  /* the answer to the HELLO came */
	if (kill(d.pid, SIGSTOP) < 0)
		FAIL("kill: %m");
	lean_event(&evs[0], 1);
	ASSERT_OK(bgrun_sink_post(sink, &evs[0]));
	u = (struct unsettled){ .sink = sink };
	r = bgrun_sink_settle(sink, on_unsettled, &u);
	/* The first may have been answered before the stop. */
	ASSERT(r == 1 || r == 2);
	ASSERT_EQ(u.n, r);
	ASSERT_STR_EQ(u.id[r - 1], evs[0].id);
	ASSERT_EQ(u.error[r - 1], -ETIMEDOUT);
	ASSERT(u.put[r - 1] < 0 && bgrun_sink_spooled(sink));
	ASSERT(t_count_files(t_path(dir, "ev.db.spool"), ".ev") >= 1);
	bgrun_sink_close(sink);

	/*
	 * The connection breaks before the answer: the daemon, stopped, is
	 * killed with the frame unread. Given back (-ECONNRESET), and put
	 * into the store from within the settle (mode try).
	 */
	sink = sink_open(BGRUN_SINK_TRY, db, sock);
	if (kill(d.pid, SIGCONT) < 0)
		FAIL("kill: %m");
	ASSERT_EQ(bgrun_sink_preconnect(sink), BGRUN_SINK_VIA_DAEMON);
	lean_event(&ev, 0);
	ASSERT_OK(bgrun_sink_post(sink, &ev));
	ASSERT_EQ(bgrun_sink_settle(sink, NULL, NULL), 0);
	if (kill(d.pid, SIGSTOP) < 0)
		FAIL("kill: %m");
	lean_event(&evs[0], 1);
	ASSERT_OK(bgrun_sink_post(sink, &evs[0]));
	ASSERT_EQ(t_daemon_stop(&d, SIGKILL), 128 + SIGKILL);
	u = (struct unsettled){ .sink = sink };
	ASSERT_EQ(bgrun_sink_settle(sink, on_unsettled, &u), 1);
	ASSERT_EQ(u.error[0], -ECONNRESET);
	ASSERT_STR_EQ(u.id[0], evs[0].id);
	ASSERT_EQ(u.put[0], BGRUN_SINK_VIA_STORE);
	ASSERT(t_db_has(db, evs[0].id));
	bgrun_sink_close(sink);
}

void case_client_fallback(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	const char *spool = t_path(dir, "ev.db.spool");
	struct bgrun_sink *sink;
	struct bgrun_event ev;
	struct t_daemon d;
	int r;

	/* No daemon at all: the embedded store, silently. */
	sink = sink_open(BGRUN_SINK_TRY, db, sock);
	ASSERT_EQ(put(sink, &ev, 0), BGRUN_SINK_VIA_STORE);
	ASSERT(t_db_has(db, ev.id));
	bgrun_sink_close(sink);

	/* Forced daemon, none there: kept in the spool, and it says so. */
	sink = sink_open(BGRUN_SINK_DAEMON, db, sock);
	r = put(sink, &ev, 1);
	ASSERT(r < 0);
	ASSERT(bgrun_sink_spooled(sink));
	ASSERT(strstr(bgrun_sink_errmsg(sink), "spool") != NULL);
	ASSERT(!t_db_has(db, ev.id));
	ASSERT_EQ(t_count_files(spool, ".ev"), 1);
	bgrun_sink_close(sink);

	/* A daemon killed with -9 leaves its socket: refused, so embedded. */
	t_daemon_start(&d, db, sock, NULL);
	sink = sink_open(BGRUN_SINK_EMBEDDED, db, sock);
	ASSERT_EQ(put(sink, &ev, 2), BGRUN_SINK_VIA_STORE); /* forced, even so */
	bgrun_sink_close(sink);
	ASSERT_EQ(t_daemon_stop(&d, SIGKILL), 128 + SIGKILL);
	ASSERT(access(sock, F_OK) == 0);
	sink = sink_open(BGRUN_SINK_TRY, db, sock);
	ASSERT_EQ(put(sink, &ev, 3), BGRUN_SINK_VIA_STORE);
	ASSERT(t_db_has(db, ev.id));
	/* The embedded writer replayed the spool when it opened the store. */
	ASSERT_EQ(t_count_files(spool, ".ev"), 0);
	bgrun_sink_close(sink);
	ASSERT_EQ(t_db_int(db, "SELECT count(*) FROM events"), 4);

	/* $BGRUN_SINK chooses when the caller does not. */
	(void)setenv("BGRUN_SINK", "bogus", 1);
	{
		struct bgrun_sink_opts o = BGRUN_SINK_OPTS_INIT;

		/* The object made first says why the open failed. */
		ASSERT_OK(bgrun_sink_new(&sink));
		ASSERT_EQ(bgrun_sink_open(sink, &o), -EINVAL);
		ASSERT(strstr(bgrun_sink_errmsg(sink), "BGRUN_SINK") != NULL);
		ASSERT_EQ(bgrun_sink_put(sink, &ev), -EINVAL);
		ASSERT(strstr(bgrun_sink_errmsg(sink), "not open") != NULL);
		ASSERT_EQ(bgrun_sink_put_daemon(sink, &ev), -EINVAL);
		bgrun_sink_close(sink);
	}
	(void)setenv("BGRUN_SINK", "embedded", 1);
	sink = sink_open(BGRUN_SINK_ENV, db, sock);
	ASSERT_EQ(put(sink, &ev, 4), BGRUN_SINK_VIA_STORE);
	bgrun_sink_close(sink);
	(void)unsetenv("BGRUN_SINK");
}

/* db made a file that is not a database: no store can take an event. */
static void not_a_database(const char *db)
{
	int fd = open(db, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

	ASSERT(fd >= 0 && write(fd, "not a database, not at all", 26) == 26);
	(void)close(fd);
}

void case_client_spool_replay(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	const char *spool = t_path(dir, "ev.db.spool");
	struct bgrun_event ev[6];
	struct bgrun_sink *sink;
	struct t_daemon d;
	int fd;

	/* The database is not one: nothing works, so the spool. */
	not_a_database(db);
	sink = sink_open(BGRUN_SINK_TRY, db, sock);
	ASSERT(put(sink, &ev[0], 0) < 0);
	ASSERT(bgrun_sink_spooled(sink));
	/* Invalid, but no store could judge it: spooled too, set aside later. */
	t_event(&ev[1], 1);
	ev[1].result = "no such result";
	ASSERT(bgrun_sink_put(sink, &ev[1]) < 0);
	bgrun_sink_close(sink);
	ASSERT_EQ(t_count_files(spool, ".ev"), 2);

	/* Repaired: the next embedded writer stores what was spooled. */
	ASSERT(unlink(db) == 0);
	sink = sink_open(BGRUN_SINK_EMBEDDED, db, sock);
	ASSERT_EQ(put(sink, &ev[2], 2), BGRUN_SINK_VIA_STORE);
	/* With a store at hand, an invalid event is refused, not spooled. */
	ASSERT_EQ(bgrun_sink_put(sink, &ev[1]), -EINVAL);
	ASSERT(!bgrun_sink_spooled(sink));
	bgrun_sink_close(sink);
	ASSERT(t_db_has(db, ev[0].id) && t_db_has(db, ev[2].id));
	ASSERT(!t_db_has(db, ev[1].id));
	ASSERT_EQ(t_count_files(spool, ".ev"), 0);
	ASSERT_EQ(t_count_files(spool, ".ev.bad"), 1);

	/* Spooled while the daemon is away; it stores them when it starts,
	 * and sets a file that is not an event aside. */
	sink = sink_open(BGRUN_SINK_DAEMON, db, sock);
	ASSERT(put(sink, &ev[3], 3) < 0 && bgrun_sink_spooled(sink));
	ASSERT(put(sink, &ev[4], 4) < 0 && bgrun_sink_spooled(sink));
	bgrun_sink_close(sink);
	fd = open(t_path(spool, "0000-junk.ev"), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	ASSERT(fd >= 0 && write(fd, "\x00\x00\x00\x06junk", 8) == 8);
	(void)close(fd);
	/* Replaying one already stored is harmless: still one row. */
	ASSERT_OK(bgrun__test_control(BGRUN__TEST_SPOOL_WRITE, db, &ev[2]));
	ASSERT_EQ(t_count_files(spool, ".ev"), 4);
	t_daemon_start(&d, db, sock, NULL);
	ASSERT_EQ(t_db_wait(db, "SELECT count(*) FROM events", 4, 20000), 4);
	ASSERT(t_db_has(db, ev[3].id) && t_db_has(db, ev[4].id) &&
	       t_db_has(db, ev[2].id));
	/* Files go once their events are committed: a moment later. */
	ASSERT_EQ(t_wait_files(spool, ".ev", 0, 20000), 0);
	ASSERT_EQ(t_count_files(spool, ".ev.bad"), 2);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
}

/*
 * One replay at a time: while another holds the spool (its directory's
 * flock), a replay returns at once and leaves the files to it; then the
 * next one stores them. Every writer of a burst used to replay the same
 * files again, under the store's lock, until more of them timed out.
 */
void case_client_spool_one_replay(void)
{
	const char *dir = t_tmpdir();
	const char *db = t_path(dir, "ev.db"), *spool = t_path(dir, "ev.db.spool");
	struct bgrun_store *store;
	struct bgrun_event ev[2];
	int64_t count = -1;
	struct bgrun_sink *sink;
	int dfd;

	not_a_database(db);
	sink = sink_open(BGRUN_SINK_EMBEDDED, db, t_path(dir, "s/sink.sock"));
	ASSERT(put(sink, &ev[0], 0) < 0 && bgrun_sink_spooled(sink));
	ASSERT(put(sink, &ev[1], 1) < 0 && bgrun_sink_spooled(sink));
	bgrun_sink_close(sink);
	ASSERT(unlink(db) == 0);
	ASSERT_OK(bgrun_store_new(&store));
	ASSERT_OK(bgrun_store_open(store, db, 0));

	dfd = open(spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_SYS(dfd);
	ASSERT_SYS(flock(dfd, LOCK_EX | LOCK_NB));
	ASSERT_EQ(bgrun_sink_replay(store, db, &count), 0);
	ASSERT_EQ(count, 0);
	ASSERT_EQ(t_count_files(spool, ".ev"), 2);
	(void)close(dfd);

	ASSERT_EQ(bgrun_sink_replay(store, db, &count), 0);
	ASSERT_EQ(count, 2);
	ASSERT_EQ(t_count_files(spool, ".ev"), 0);
	bgrun_store_close(store);
	ASSERT(t_db_has(db, ev[0].id) && t_db_has(db, ev[1].id));
}

/* The spool's reason file, its first line, or "" when there is none. */
static const char *spool_reason_of(const char *spool)
{
	static char line[1024];
	FILE *f = fopen(t_path(spool, ".reason"), "re");

	line[0] = '\0';
	if (f != NULL) {
		if (fgets(line, sizeof(line), f) == NULL)
			line[0] = '\0';
		(void)fclose(f);
	}
	return line;
}

static const char *hook_db, *hook_spool;
static struct bgrun_event hook_ev[3];
static int hook_calls;

/* A writer spools while a replay runs: its event... */
static void spool_meanwhile(void)
{
	lean_event(&hook_ev[hook_calls], 10 + hook_calls);
	ASSERT_OK(bgrun__test_control(BGRUN__TEST_SPOOL_WRITE, hook_db,
				      &hook_ev[hook_calls]));
	hook_calls++;
}

/* ...once the replay found the spool empty... */
static void spool_when_emptied(int where)
{
	if (where == 1)
		spool_meanwhile();
}

/* ...and then its own reason, before the replay removes the old one. */
static void spool_and_note_when_emptied(int where)
{
	FILE *f;

	if (where != 1)
		return;
	spool_meanwhile();
	f = fopen(t_path(hook_spool, ".reason"), "we");
	ASSERT(f != NULL);
	ASSERT(fputs("5\t0\t0\t0\tthe newer reason\n", f) >= 0);
	ASSERT(fclose(f) == 0);
}

/* ...or after the replay's first pass, which the next pass stores. */
static void spool_after_first_pass(int where)
{
	static bool once;

	if (where == 0 && !once) {
		once = true;
		spool_meanwhile();
	}
}

/*
 * Writers spool while a replay runs. What came during a pass, the next
 * pass stores. A replay that empties the spool removes its reason, but
 * an event spooled meanwhile keeps one: the old reason when its writer
 * has not noted its own yet, its own when it has. The replay used to
 * unlink the reason after it found the spool empty, so an event that
 * came in between waited with no word of why.
 */
void case_client_spool_replay_meanwhile(void)
{
	const char *dir = t_tmpdir();
	const char *db = t_path(dir, "ev.db"), *spool = t_path(dir, "ev.db.spool");
	struct bgrun_store *store;
	struct bgrun_event ev;
	int64_t count = -1;
	struct bgrun_sink *sink;
	struct dirent *e;
	char *old;
	DIR *dir_p;

	not_a_database(db);
	sink = sink_open(BGRUN_SINK_EMBEDDED, db, t_path(dir, "s/sink.sock"));
	ASSERT(put(sink, &ev, 0) < 0 && bgrun_sink_spooled(sink));
	bgrun_sink_close(sink);
	old = strdup(spool_reason_of(spool));
	ASSERT(old != NULL && old[0] != '\0');
	ASSERT(unlink(db) == 0);
	ASSERT_OK(bgrun_store_new(&store));
	ASSERT_OK(bgrun_store_open(store, db, 0));
	hook_db = db;
	hook_spool = spool;

	/* An event came, its reason not yet: the old one is kept. */
	ASSERT_OK(bgrun__test_control(BGRUN__TEST_REPLAY_HOOK,
				      spool_when_emptied));
	ASSERT_EQ(bgrun_sink_replay(store, db, &count), 0);
	ASSERT_EQ(count, 1);
	ASSERT_EQ(t_count_files(spool, ".ev"), 1);
	ASSERT(strcmp(spool_reason_of(spool), old) == 0);

	/* An event and its writer's reason came: that reason stays. */
	ASSERT_OK(bgrun__test_control(BGRUN__TEST_REPLAY_HOOK,
				      spool_and_note_when_emptied));
	ASSERT_EQ(bgrun_sink_replay(store, db, &count), 0);
	ASSERT_EQ(count, 1);
	ASSERT_EQ(t_count_files(spool, ".ev"), 1);
	ASSERT(strcmp(spool_reason_of(spool),
		      "5\t0\t0\t0\tthe newer reason\n") == 0);

	/*
	 * One came during the first pass: the next pass stores it, and
	 * then nothing came: emptied, the reason gone with the events.
	 * (Each pass used to find the spool empty whatever it held: the
	 * directory was read from where the last reading had ended.)
	 */
	ASSERT_OK(bgrun__test_control(BGRUN__TEST_REPLAY_HOOK,
				      spool_after_first_pass));
	ASSERT_EQ(bgrun_sink_replay(store, db, &count), 0);
	ASSERT_OK(bgrun__test_control(BGRUN__TEST_REPLAY_HOOK,
				      (void (*)(int))NULL));
	ASSERT_EQ(count, 2);
	ASSERT_EQ(t_count_files(spool, ".ev"), 0);
	ASSERT(strcmp(spool_reason_of(spool), "") == 0);
	/* Nothing left aside either: the spool holds no file at all. */
	dir_p = opendir(spool);
	ASSERT(dir_p != NULL);
	while ((e = readdir(dir_p)) != NULL)
		ASSERT(strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0);
	(void)closedir(dir_p);
	bgrun_store_close(store);
	for (int i = 0; i < 3; i++)
		ASSERT(t_db_has(db, hook_ev[i].id));
	ASSERT(t_db_has(db, ev.id));
	free(old);
}

/* path made (empty), written hours_ago hours ago. */
static void make_aged(const char *path, int hours_ago)
{
	struct timespec t[2];
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);

	ASSERT_SYS(fd);
	ASSERT_SYS(clock_gettime(CLOCK_REALTIME, &t[0]));
	t[0].tv_sec -= (time_t)hours_ago * 3600;
	t[1] = t[0];
	ASSERT_SYS(futimens(fd, t));
	(void)close(fd);
}

/*
 * A writer that died between its temporary file and the rename left it
 * behind: a replay removes one over an hour old, never a fresh one (a
 * writer may be at work on it).
 */
void case_client_spool_stale_tmp(void)
{
	const char *db = t_path(t_tmpdir(), "ev.db");
	struct bgrun_store *store;
	struct bgrun_event ev;
	int64_t count = -1;
	char *spool;

	ASSERT_OK(bgrun_sink_spool_dir(db, &spool));
	lean_event(&ev, 0);
	ASSERT_OK(bgrun__test_control(BGRUN__TEST_SPOOL_WRITE, db, &ev));
	make_aged(t_path(spool, ".tmp-1-0-dead"), 2);
	make_aged(t_path(spool, ".tmp-2-0-fresh"), 0);
	ASSERT_OK(bgrun_store_new(&store));
	ASSERT_OK(bgrun_store_open(store, db, 0));
	ASSERT_EQ(bgrun_sink_replay(store, db, &count), 0);
	ASSERT_EQ(count, 1);
	bgrun_store_close(store);
	ASSERT(access(t_path(spool, ".tmp-1-0-dead"), F_OK) < 0 && errno == ENOENT);
	ASSERT_SYS(access(t_path(spool, ".tmp-2-0-fresh"), F_OK));
	free(spool);
}

/*
 * A spool that is a symbolic link is refused when writing, as a replay
 * refuses it (O_NOFOLLOW): what went through it would never be stored.
 */
void case_client_spool_symlink(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *elsewhere = t_path(dir, "elsewhere");
	struct bgrun_event ev;
	struct bgrun_sink *sink;

	/* No store can take it (not a database): the spool is the last resort. */
	not_a_database(db);
	ASSERT_SYS(mkdir(elsewhere, 0700));
	ASSERT_SYS(symlink(elsewhere, t_path(dir, "ev.db.spool")));
	sink = sink_open(BGRUN_SINK_EMBEDDED, db, NULL);
	ASSERT(put(sink, &ev, 0) < 0);
	ASSERT(!bgrun_sink_spooled(sink));
	ASSERT(strstr(bgrun_sink_errmsg(sink), "the spool is a symbolic link") !=
	       NULL);
	bgrun_sink_close(sink);
	ASSERT_EQ(t_count_files(elsewhere, ".ev"), 0);
	ASSERT_EQ(t_count_files(elsewhere, ""), 0);
}

/*
 * A writer stopped while it holds the log's lock (SIGSTOP of `logsink
 * prune`, a debugger): the others wait a bounded time ($BGRUN_LOCK_TIMEOUT),
 * then spool and say so; the next writer after it moved on stores it.
 */
void case_client_stopped_writer(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	struct bgrun_event ev[3];
	struct bgrun_sink *sink;
	int64_t t0;
	pid_t pid;
	int st, fd;

	sink = sink_open(BGRUN_SINK_EMBEDDED, db, sock);
	ASSERT_EQ(put(sink, &ev[0], 0), BGRUN_SINK_VIA_STORE);
	bgrun_sink_close(sink);
	pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		/* As a writer would: the lock file, flock'ed, then stopped. */
		fd = open(t_path(dir, "ev.db-lock"), O_RDWR | O_CLOEXEC);
		if (fd < 0 || flock(fd, LOCK_EX) < 0)
			_exit(1);
		(void)raise(SIGSTOP);
		_exit(0);
	}
	ASSERT_SYS(waitpid(pid, &st, WUNTRACED));
	ASSERT(WIFSTOPPED(st));
	(void)setenv("BGRUN_LOCK_TIMEOUT", "0.2", 1);
	t0 = t_now_ms();
	sink = sink_open(BGRUN_SINK_EMBEDDED, db, sock);
	ASSERT(put(sink, &ev[1], 1) < 0);
	ASSERT(bgrun_sink_spooled(sink));
	ASSERT(strstr(bgrun_sink_errmsg(sink), "held the log's lock") != NULL);
	ASSERT(strstr(bgrun_sink_errmsg(sink), "kept in the spool") != NULL);
	bgrun_sink_close(sink);
	/* Not a timing check: a wait without limit would never get here. */
	ASSERT(t_now_ms() - t0 < 60000);
	ASSERT_EQ(t_count_files(t_path(dir, "ev.db.spool"), ".ev"), 1);
	(void)unsetenv("BGRUN_LOCK_TIMEOUT");
	ASSERT_SYS(kill(pid, SIGKILL));
	ASSERT_SYS(waitpid(pid, &st, 0));
	/* The stopped writer gone, the next one stores what was kept. */
	sink = sink_open(BGRUN_SINK_EMBEDDED, db, sock);
	ASSERT_EQ(put(sink, &ev[2], 2), BGRUN_SINK_VIA_STORE);
	bgrun_sink_close(sink);
	ASSERT(t_db_has(db, ev[1].id) && t_db_has(db, ev[2].id));
	ASSERT_EQ(t_count_files(t_path(dir, "ev.db.spool"), ".ev"), 0);
}

void case_client_auto_start(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "run/sink.sock");
	struct bgrun_sink *sink;
	struct bgrun_event ev;
	char pid[32] = "";
	int64_t deadline;
	ssize_t n;
	int fd;

	(void)setenv("BGRUN_SINK", "auto", 1);
	(void)setenv("BGRUN_LOGSINK", t_logsink, 1);
	sink = sink_open(BGRUN_SINK_ENV, db, sock);
	ASSERT_EQ(put(sink, &ev, 0), BGRUN_SINK_VIA_DAEMON);
	ASSERT(t_db_has(db, ev.id));
	ASSERT_EQ(put(sink, &ev, 1), BGRUN_SINK_VIA_DAEMON);
	bgrun_sink_close(sink);
	(void)unsetenv("BGRUN_SINK");
	(void)unsetenv("BGRUN_LOGSINK");
	/* Stop the daemon it started (its pid is in the lock file). */
	fd = open(t_path(dir, "run/sink.sock.lock"), O_RDONLY | O_CLOEXEC);
	ASSERT(fd >= 0);
	n = read(fd, pid, sizeof(pid) - 1);
	(void)close(fd);
	ASSERT(n > 0 && atoi(pid) > 0);
	t_track(atoi(pid));
	ASSERT(kill(atoi(pid), SIGTERM) == 0);
	deadline = t_now_ms() + 30000;
	while (access(sock, F_OK) == 0 && t_now_ms() < deadline)
		(void)poll(NULL, 0, 10);
	ASSERT(access(sock, F_OK) < 0);
	/* Its socket goes just before it exits: wait for the pid too. */
	while (t_pid_alive(atoi(pid)) && t_now_ms() < deadline)
		(void)poll(NULL, 0, 10);
	t_untrack(atoi(pid));
}

/* ---- floods: SIGTERM and kill -9 in the middle ---- */

#define FLOOD_THREADS 4
#define FLOOD_EVENTS 3000
#define FLOOD_BATCH 50

struct flood {
	const char *db, *sock;
	enum bgrun_sink_mode mode;
	char (*ids)[BGRUN_EVENT_ID_MAX + 1];
	size_t n;                 /* events tried (their ids in ids) */
	int via[3];               /* per result: 0 failed, daemon, store */
	int errors;
	_Atomic bool *stop;
};

/* Acks seen by all flooders; shared memory, so that processes count too. */
static _Atomic long *acked;

static void shared_init(void)
{
	acked = mmap(NULL, sizeof(*acked), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (acked == MAP_FAILED)
		FAIL("mmap: %m");
	*acked = 0;
}

static void *flood_main(void *arg)
{
	struct flood *f = arg;
	struct bgrun_sink *sink = sink_open(f->mode, f->db, f->sock);
	struct bgrun_event evs[FLOOD_BATCH];

	while (f->n + FLOOD_BATCH <= FLOOD_EVENTS && !(f->stop != NULL && *f->stop)) {
		int r;

		for (int i = 0; i < FLOOD_BATCH; i++) {
			t_event(&evs[i], i);
			evs[i].tag = "flood";
			strcpy(f->ids[f->n + (size_t)i], evs[i].id);
		}
		f->n += FLOOD_BATCH;
		r = bgrun_sink_put_batch(sink, evs, FLOOD_BATCH);
		if (r == BGRUN_SINK_VIA_DAEMON)
			*acked += FLOOD_BATCH;
		if (r < 0) {
			f->errors++;
			if (f->errors < 3)
				fprintf(stderr, "flood: %s%s\n", bgrun_sink_errmsg(sink),
					bgrun_sink_spooled(sink) ? " (spooled)" : "");
		}
		f->via[r > 0 ? r : 0]++;
	}
	bgrun_sink_close(sink);
	return NULL;
}

static void wait_acked(long want)
{
	int64_t deadline = t_now_ms() + 60000;

	while (*acked < want && t_now_ms() < deadline)
		(void)poll(NULL, 0, 2);
	ASSERT(*acked >= want);
}

void case_sigterm_drain(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	struct flood *f;
	pid_t pids[FLOOD_THREADS];
	struct t_daemon d;
	size_t total = 0;
	int via_daemon = 0, via_store = 0, status;

	/*
	 * The clients are processes, as bgrun supervisors and hg hooks are:
	 * each falls back to a store of its own when the daemon goes.
	 */
	shared_init();
	f = mmap(NULL, FLOOD_THREADS * (sizeof(*f) + FLOOD_EVENTS * sizeof(*f->ids)),
		 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (f == MAP_FAILED)
		FAIL("mmap: %m");
	t_daemon_start(&d, db, sock, NULL);
	for (int i = 0; i < FLOOD_THREADS; i++) {
		f[i] = (struct flood){ .db = db, .sock = sock, .mode = BGRUN_SINK_TRY };
		f[i].ids = (void *)((char *)(f + FLOOD_THREADS) +
				    (size_t)i * FLOOD_EVENTS * sizeof(*f->ids));
		pids[i] = fork();
		if (pids[i] < 0)
			FAIL("fork: %m");
		if (pids[i] == 0) {
			(void)flood_main(&f[i]);
			_exit(0);
		}
	}
	/* In the middle of the flood: stop, drain, exit 0. */
	wait_acked(1000);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
	for (int i = 0; i < FLOOD_THREADS; i++) {
		if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			FAIL("flooder %d failed", i);
		ASSERT_EQ(f[i].errors, 0);
		via_daemon += f[i].via[BGRUN_SINK_VIA_DAEMON];
		via_store += f[i].via[BGRUN_SINK_VIA_STORE];
		total += t_db_present(db, (const char (*)[BGRUN_EVENT_ID_MAX + 1])f[i].ids,
				      f[i].n);
		ASSERT_EQ(f[i].n, FLOOD_EVENTS);
	}
	/* Nothing lost, nothing twice; the clients went on without it. */
	ASSERT_EQ(total, FLOOD_THREADS * FLOOD_EVENTS);
	ASSERT_EQ(t_db_int(db, "SELECT count(*) FROM events"),
		  FLOOD_THREADS * FLOOD_EVENTS);
	ASSERT(via_daemon > 0 && via_store > 0);
	ASSERT_EQ(t_count_files(t_path(dir, "ev.db.spool"), ".ev"), 0);
	fprintf(stderr, "batches via the daemon: %d, via the store: %d\n",
		via_daemon, via_store);
}

/* A raw pipelining client: the ids it got an ACK for, until EOF. */
struct raw {
	const char *sock;
	char (*acked)[BGRUN_EVENT_ID_MAX + 1];
	size_t n_acked;
};

static void *raw_main(void *arg)
{
	struct raw *w = arg;
	static char sent[1 << 16][BGRUN_EVENT_ID_MAX + 1];
	struct bgrun_wire_buf b = { 0 };
	int fd = t_connect(w->sock);
	uint32_t seq = 1;

	for (;;) {
		struct bgrun_wire_msg m;
		uint32_t first = seq;
		int got = 0;

		b.len = 0;
		for (int i = 0; i < 64 && seq < (1 << 16); i++, seq++) {
			struct bgrun_event ev;

			t_event(&ev, i);
			strcpy(sent[seq], ev.id);
			ASSERT(bgrun_wire_put_event(&b, seq, &ev) > 0);
		}
		if (seq == first || send(fd, b.data, b.len, MSG_NOSIGNAL) < 0)
			break;
		while (got < (int)(seq - first) && t_read_frame(fd, 30000, &m) == 1) {
			if (m.type == BGRUN_WIRE_ACK && m.seq >= first && m.seq < seq)
				strcpy(w->acked[w->n_acked++], sent[m.seq]);
			bgrun_wire_msg_release(&m);
			got++;
			(*acked)++;
		}
		if (got < (int)(seq - first))
			break; /* EOF: the daemon is gone */
	}
	bgrun_wire_buf_free(&b);
	(void)close(fd);
	return NULL;
}

void case_kill9_restart(void)
{
	const char *dir = t_tmpdir(), *db = t_path(dir, "ev.db");
	const char *sock = t_path(dir, "s/sink.sock");
	_Atomic bool stop = false;
	struct flood f[2];
	pthread_t th[3];
	struct raw raw = { sock, NULL, 0 };
	struct t_daemon d;
	size_t tried = 0;

	shared_init();
	raw.acked = calloc(1 << 16, sizeof(*raw.acked));
	ASSERT(raw.acked != NULL);
	t_daemon_start(&d, db, sock, NULL);
	ASSERT(pthread_create(&th[0], NULL, raw_main, &raw) == 0);
	for (int i = 0; i < 2; i++) {
		/* Daemon only: what it cannot take goes to the spool. */
		f[i] = (struct flood){ .db = db, .sock = sock,
				       .mode = BGRUN_SINK_DAEMON, .stop = &stop };
		f[i].ids = calloc(FLOOD_EVENTS, sizeof(*f[i].ids));
		ASSERT(f[i].ids != NULL);
		ASSERT(pthread_create(&th[1 + i], NULL, flood_main, &f[i]) == 0);
	}
	wait_acked(3000);
	ASSERT_EQ(t_daemon_stop(&d, SIGKILL), 128 + SIGKILL);
	(void)pthread_join(th[0], NULL);
	stop = true;
	for (int i = 0; i < 2; i++) {
		(void)pthread_join(th[1 + i], NULL);
		tried += f[i].n;
	}
	ASSERT(raw.n_acked > 0);
	/* Every acked event survived the crash, once. */
	ASSERT_EQ(t_db_present(db, (const char (*)[BGRUN_EVENT_ID_MAX + 1])raw.acked,
			       raw.n_acked), raw.n_acked);
	/* Restarted: the spool comes in; every event the clients had is there. */
	t_daemon_start(&d, db, sock, NULL);
	for (int i = 0; i < 2; i++) {
		int64_t deadline = t_now_ms() + 30000;
		size_t present;

		while ((present = t_db_present(db,
					       (const char (*)[BGRUN_EVENT_ID_MAX + 1])f[i].ids,
					       f[i].n)) < f[i].n &&
		       t_now_ms() < deadline)
			(void)poll(NULL, 0, 20);
		ASSERT_EQ(present, f[i].n);
		free(f[i].ids);
	}
	/* Files go once their events are committed: a moment later. */
	ASSERT_EQ(t_wait_files(t_path(dir, "ev.db.spool"), ".ev", 0, 30000), 0);
	ASSERT_EQ(t_daemon_stop(&d, SIGTERM), 0);
	fprintf(stderr, "acked before kill -9: %zu raw, %zu by the sink clients\n",
		raw.n_acked, tried);
	free(raw.acked);
}
