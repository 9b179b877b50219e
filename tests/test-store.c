/* SPDX-License-Identifier: MIT */
/* test-store.c: store-tests' main, and the cases for events and opening stores. */

#include "test-store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void case_event_init(void)
{
	struct bgrun_event a, b;
	struct utsname u;
	struct timespec t0, t1;
	char *boot, hex[13];
	uint64_t ms;

	ASSERT_OK(clock_gettime(CLOCK_REALTIME, &t0) < 0 ? -errno : 0);
	bgrun_event_init(&a, "command", "hg");
	bgrun_event_init(&b, "command", "hg");
	ASSERT_OK(clock_gettime(CLOCK_REALTIME, &t1) < 0 ? -errno : 0);
	/* UUID v7: its first 48 bits are the time in milliseconds. */
	memcpy(hex, a.id, 8);
	memcpy(hex + 8, a.id + 9, 4);
	hex[12] = '\0';
	ms = strtoull(hex, NULL, 16);
	ASSERT((int64_t)ms >= (int64_t)t0.tv_sec * 1000 + t0.tv_nsec / 1000000);
	ASSERT((int64_t)ms <= (int64_t)t1.tv_sec * 1000 + t1.tv_nsec / 1000000);
	ASSERT(strcmp(a.id, b.id) <= 0 || strncmp(a.id, b.id, 13) == 0);
	ASSERT_EQ(strlen(a.id), 36);
	ASSERT(strcmp(a.id, b.id) != 0);
	ASSERT(a.id[8] == '-' && a.id[13] == '-' && a.id[18] == '-' &&
	       a.id[23] == '-');
	ASSERT(a.id[14] == '7');
	ASSERT(strchr("89ab", a.id[19]) != NULL);
	ASSERT_STR_EQ(a.event, "command");
	ASSERT_STR_EQ(a.source, "hg");
	ASSERT_OK(uname(&u) == 0 ? 0 : -errno);
	ASSERT_STR_EQ(a.host, u.nodename);
	ASSERT_EQ(a.uid, getuid());
	ASSERT(a.user != NULL);
	boot = t_read_file("/proc/sys/kernel/random/boot_id");
	boot[strcspn(boot, "\n")] = '\0';
	ASSERT_STR_EQ(a.boot_id, boot);
	free(boot);
	ASSERT_EQ(a.pid, BGRUN_NULL);
	ASSERT_EQ(a.start_ns, BGRUN_NULL);
	ASSERT_EQ(a.invol_ctxsw, BGRUN_NULL);
	ASSERT(a.argv == NULL && a.result == NULL && a.options_json == NULL);

	struct bgrun_status st = { .pid = 99, .exited = true, .exit_code = 255,
				   .start_realtime_ns = 5, .end_realtime_ns = 9,
				   .duration_ns = 4 };
	st.rusage.user_cpu_ns = INT64_C(2000005000);
	st.rusage.max_rss_kb = 1234;
	st.rusage.invol_ctxsw = 7;
	bgrun_event_set_status(&a, &st);
	ASSERT_EQ(a.pid, 99);
	ASSERT_EQ(a.exit_code, 255);
	ASSERT_EQ(a.signal, BGRUN_NULL);
	ASSERT_EQ(a.core_dumped, 0);
	ASSERT_STR_EQ(a.result, "failed");
	ASSERT_EQ(a.user_cpu_ns, INT64_C(2000005000));
	ASSERT_EQ(a.max_rss_kb, 1234);
	ASSERT_EQ(a.invol_ctxsw, 7);
	ASSERT_EQ(a.duration_ns, 4);
	st.exited = false;
	st.signaled = true;
	st.signal = 9;
	st.core_dumped = true;
	bgrun_event_set_status(&a, &st);
	ASSERT_EQ(a.exit_code, BGRUN_NULL);
	ASSERT_EQ(a.signal, 9);
	ASSERT_EQ(a.core_dumped, 1);
	ASSERT_STR_EQ(a.result, "signaled");
	st.signaled = false;
	st.exited = true;
	st.exit_code = 0;
	bgrun_event_set_status(&a, &st);
	ASSERT_STR_EQ(a.result, "success");
	ASSERT_EQ(a.signal, BGRUN_NULL);
}

void case_proc_starttime(void)
{
	struct bgrun_status st;
	int64_t own = bgrun_proc_starttime(getpid()), dead;
	pid_t pid;

	ASSERT(own != BGRUN_NULL && own > 0);
	ASSERT_EQ(bgrun_proc_starttime(0), BGRUN_NULL);
	t_spawn_exited(&pid, &dead, &st);
	ASSERT(dead != BGRUN_NULL && dead >= own);
	ASSERT_EQ(bgrun_proc_starttime(pid), BGRUN_NULL);
}

void case_display(void)
{
	static const struct {
		const char *argv[6];
		const char *display;
	} cases[] = {
		{ { "hg", "pull", "-u", NULL }, "hg pull -u" },
		{ { "echo", "a b", "", NULL }, "echo 'a b' ''" },
		{ { "sh", "-c", "it's", NULL }, "sh -c 'it'\\''s'" },
		{ { "x", "a\nb", "\t", NULL }, "x 'a\\x0ab' '\\x09'" },
		{ { "x", "\xff", "a\x80z", "\xc3\xa9", NULL },
		  "x '\\xff' 'a\\x80z' '\xc3\xa9'" },
		{ { "x", "\xc2\x85", "\x7f", "a=b", "/p/q.r+s-t_u", NULL },
		  "x '\\xc2\\x85' '\\x7f' 'a=b' /p/q.r+s-t_u" },
		{ { NULL }, "" },
	};
	char *d;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ASSERT_OK(bgrun_argv_display(cases[i].argv, &d));
		ASSERT_STR_EQ(d, cases[i].display);
		free(d);
	}
	ASSERT_EQ(bgrun_argv_display(NULL, &d), -EINVAL);
}

void case_default_path(void)
{
	char *p;

	ASSERT_SYS(setenv("BGRUN_DB", "/x/my.db", 1));
	ASSERT_OK(bgrun_store_default_path(&p));
	ASSERT_STR_EQ(p, "/x/my.db");
	free(p);
	ASSERT_SYS(unsetenv("BGRUN_DB"));
	ASSERT_SYS(setenv("XDG_STATE_HOME", "/state", 1));
	ASSERT_SYS(setenv("HOME", "/home/u", 1));
	ASSERT_OK(bgrun_store_default_path(&p));
	ASSERT_STR_EQ(p, "/state/bgrun/events.db");
	free(p);
	ASSERT_SYS(setenv("XDG_STATE_HOME", "relative", 1));
	ASSERT_OK(bgrun_store_default_path(&p));
	ASSERT_STR_EQ(p, "/home/u/.local/state/bgrun/events.db");
	free(p);
	ASSERT_SYS(unsetenv("XDG_STATE_HOME"));
	ASSERT_SYS(unsetenv("HOME"));
	p = NULL;
	ASSERT_EQ(bgrun_store_default_path(&p), -ENOENT);
	ASSERT(p == NULL);
}

/* bgrun_mkdir_p, behind the store's parents and the spool (util.h). */
void case_mkdir_p(void)
{
	char *dir = t_tmpdir(), *deep = t_printf("%s/x//y/z/", dir);
	char *file = t_path(dir, "file"), *under = t_path(dir, "file/sub");
	char *z = t_printf("%s/x/y/z", dir), *x = t_path(dir, "x");
	struct stat st;

	ASSERT_OK(bgrun_mkdir_p(deep, 0700));
	ASSERT_SYS(stat(z, &st));
	ASSERT(S_ISDIR(st.st_mode));
	ASSERT_EQ(st.st_mode & 07777, 0700 & ~t_umask());
	/* An existing directory is fine, and keeps its mode. */
	ASSERT_SYS(chmod(x, 0750));
	ASSERT_OK(bgrun_mkdir_p(z, 0700));
	ASSERT_SYS(stat(x, &st));
	ASSERT_EQ(st.st_mode & 07777, 0750);
	ASSERT_OK(bgrun_mkdir_p("/", 0700));
	/* Something else in the way. */
	t_write_file(file, "", 0);
	ASSERT_EQ(bgrun_mkdir_p(file, 0700), -ENOTDIR);
	ASSERT_EQ(bgrun_mkdir_p(under, 0700), -ENOTDIR);
	ASSERT_EQ(bgrun_mkdir_p("", 0700), -EINVAL);
	free(deep);
	free(file);
	free(under);
	free(z);
	free(x);
}

void case_open_creates(void)
{
	char *dir = t_tmpdir(), *sub = t_path(dir, "a"), *db, *lock;
	struct bgrun_store *s;
	struct stat st;
	sqlite3 *raw;

	db = t_printf("%s/a/b/c/events.db", dir);
	lock = t_printf("%s-lock", db);
	ASSERT_OK(t_open(db, 0, &s));
	bgrun_store_close(s);
	ASSERT_SYS(stat(sub, &st));
	ASSERT(S_ISDIR(st.st_mode));
	ASSERT_EQ(st.st_mode & 07777, 0700 & ~t_umask());
	free(sub);
	sub = t_printf("%s/a/b/c", dir);
	ASSERT_SYS(stat(sub, &st));
	ASSERT_EQ(st.st_mode & 07777, 0700 & ~t_umask());
	ASSERT_SYS(stat(db, &st));
	ASSERT(S_ISREG(st.st_mode));
	ASSERT_EQ(st.st_mode & 07777, 0600);
	ASSERT_SYS(stat(lock, &st));
	ASSERT_EQ(st.st_mode & 07777, 0600);

	raw = t_sql_open(db);
	ASSERT_EQ(t_sql_int(raw, "PRAGMA application_id", NULL), 0x62677275);
	ASSERT_EQ(t_sql_int(raw, "PRAGMA user_version", NULL), 3);
	ASSERT_STR_EQ(t_sql_text(raw, "PRAGMA journal_mode"), "wal");
	ASSERT_EQ(t_sql_int(raw, "SELECT count(*) FROM sqlite_schema WHERE "
				 "type = 'index' AND name LIKE 'events_%'",
			    NULL), 6);
	sqlite3_close(raw);

	/* Opening again (read-write and read-only) changes nothing. */
	ASSERT_OK(t_open(db, 0, &s));
	bgrun_store_close(s);
	ASSERT_OK(t_open(db, BGRUN_STORE_READONLY, &s));
	ASSERT_STR_EQ(bgrun_store_errmsg(s), "");
	bgrun_store_close(s);
	bgrun_store_close(NULL);
	free(db);
	free(lock);
	free(sub);
}

void case_open_readonly_missing(void)
{
	char *dir = t_tmpdir(), *db = t_path(dir, "events.db");
	char *nested = t_printf("%s/x/y/events.db", dir), *msg;
	struct bgrun_store *s = NULL;
	struct bgrun_event ev;

	ASSERT_EQ(t_open(db, BGRUN_STORE_READONLY, &s), -ENOENT);
	ASSERT(s == NULL);
	msg = t_open_error(db, BGRUN_STORE_READONLY, -ENOENT);
	ASSERT(strstr(msg, db) != NULL);
	free(msg);
	free(t_open_error(nested, BGRUN_STORE_READONLY, -ENOENT));
	ASSERT_EQ(t_count_entries(dir), 0);

	/* An empty file is not a store yet, and stays untouched. */
	t_write_file(db, "", 0);
	free(t_open_error(db, BGRUN_STORE_READONLY, -ENOENT));
	ASSERT_EQ(t_count_entries(dir), 1);

	/* A read-only store refuses writes. */
	ASSERT_OK(t_open(db, 0, &s));
	bgrun_store_close(s);
	ASSERT_OK(t_open(db, BGRUN_STORE_READONLY, &s));
	bgrun_event_init(&ev, "x", "test");
	ASSERT_EQ(bgrun_store_put(s, &ev), -EROFS);
	ASSERT(strlen(bgrun_store_errmsg(s)) > 0);
	ASSERT_EQ(bgrun_store_mark_lost(s, NULL), -EROFS);
	bgrun_store_close(s);
	free(db);
	free(nested);
}

static int count_rows(void *data, const struct bgrun_event_row *row)
{
	(*(int *)data)++;
	return 0;
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* Puts n events in a store of its own, closed after. */
static void put_events(const char *db, int n)
{
	struct bgrun_event ev;
	struct bgrun_store *s;

	ASSERT_OK(t_open(db, 0, &s));
	for (int i = 0; i < n; i++) {
		bgrun_event_init(&ev, "commandfinish", "bgrun");
		ASSERT_EQ(bgrun_store_put(s, &ev), 1);
	}
	bgrun_store_close(s);
}

/* The rows db holds, read by a store of its own. */
static int rows_in(const char *db)
{
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct bgrun_store *s;
	int rows = 0;

	ASSERT_OK(t_open(db, BGRUN_STORE_READONLY, &s));
	ASSERT_OK(bgrun_store_query(s, &q, count_rows, &rows));
	bgrun_store_close(s);
	return rows;
}

/* Checkpoints db's WAL into it, which leaves it empty (a prune, of
 * nothing, does). */
static void empty_wal(const char *db)
{
	struct bgrun_store *s;
	char *wal = t_printf("%s-wal", db);

	ASSERT_OK(t_open(db, 0, &s));
	ASSERT_OK(bgrun_store_prune(s, 1, NULL));
	bgrun_store_close(s);
	ASSERT_EQ(file_size(wal), 0);
	free(wal);
}

/*
 * The rows a child reads from db, read-only, as nobody when we are root:
 * the count, or -1 with the store's message in msg, or -77 when it could
 * not become nobody.
 */
static int rows_as_reader(const char *db, char *msg, size_t size)
{
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct bgrun_store *s;
	int status, rows = 0, fds[2];
	ssize_t n;
	pid_t pid;

	ASSERT_SYS(pipe(fds));
	pid = fork();
	ASSERT_SYS(pid);
	if (pid == 0) {
		(void)close(fds[0]);
		if (getuid() == 0 && (setgroups(0, NULL) < 0 ||
				      setgid(65534) < 0 || setuid(65534) < 0))
			_exit(77);
		if (bgrun_store_new(&s) < 0)
			_exit(1);
		if (bgrun_store_open(s, db, BGRUN_STORE_READONLY) < 0 ||
		    bgrun_store_query(s, &q, count_rows, &rows) < 0) {
			const char *m = bgrun_store_errmsg(s);

			(void)!write(fds[1], m, strlen(m));
			_exit(1);
		}
		bgrun_store_close(s);
		_exit(rows < 64 ? rows + 2 : 66);
	}
	(void)close(fds[1]);
	n = read(fds[0], msg, size - 1);
	msg[n > 0 ? n : 0] = '\0';
	(void)close(fds[0]);
	ASSERT_SYS(waitpid(pid, &status, 0));
	ASSERT(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		return -77;
	if (WEXITSTATUS(status) == 1)
		return -1;
	return WEXITSTATUS(status) - 2;
}

/*
 * A reader who may not write the directory (another user's log, a
 * read-only mount) still reads it, and leaves nothing behind. The -wal
 * and -shm files stay between writers and are made with the database's
 * mode: a log made readable to others after them (chmod) is readable
 * once its next writer has given them the database's mode. As root, the
 * reading is done by a child that became nobody.
 */
void case_open_readonly_dir(void)
{
	char *dir = t_tmpdir(), *sub = t_path(dir, "d"), *db, *wal, *shm;
	char msg[512];
	struct stat st;
	int rows;

	db = t_path(sub, "events.db");
	wal = t_printf("%s-wal", db);
	shm = t_printf("%s-shm", db);
	/* Made, its WAL emptied, then written. */
	put_events(db, 1);
	empty_wal(db);
	put_events(db, 2);
	/* Kept, and holding the two commits (no checkpoint at close). */
	ASSERT(file_size(wal) > 0 && access(shm, F_OK) == 0);
	ASSERT_SYS(stat(wal, &st));
	ASSERT_EQ(st.st_mode & 0777, 0600);
	ASSERT_SYS(chmod(dir, 0755));
	ASSERT_SYS(chmod(sub, 0555));
	ASSERT_SYS(chmod(db, 0644));
	if (getuid() == 0) {
		/* Its companions are still the writer's alone: said. */
		rows = rows_as_reader(db, msg, sizeof(msg));
		if (rows == -77) {
			ASSERT_SYS(chmod(sub, 0700));
			SKIP("cannot become nobody to test a read-only directory");
		}
		ASSERT_EQ(rows, -1);
		ASSERT(strstr(msg, db) != NULL);
	}
	/* The next writer gives them the database's mode. */
	put_events(db, 1);
	ASSERT_SYS(stat(wal, &st));
	ASSERT_EQ(st.st_mode & 0777, 0644);
	ASSERT_SYS(stat(shm, &st));
	ASSERT_EQ(st.st_mode & 0777, 0644);
	rows = rows_as_reader(db, msg, sizeof(msg));
	ASSERT_SYS(chmod(sub, 0700));
	if (rows == -77)
		SKIP("cannot become nobody to test a read-only directory");
	if (rows < 0)
		FAIL("%s", msg);
	ASSERT_EQ(rows, 4);
	free(db);
	free(wal);
	free(shm);
	free(sub);
}

static void put_commandfinish(struct bgrun_store *s)
{
	struct bgrun_event ev;

	bgrun_event_init(&ev, "commandfinish", "bgrun");
	ASSERT_EQ(bgrun_store_put(s, &ev), 1);
}

/*
 * A close that leaves a long WAL checkpoints it and empties it (the file
 * stays); a short one is left, its commits in it.
 */
void case_close_checkpoint(void)
{
	char *dir = t_tmpdir(), *db = t_path(dir, "events.db");
	char *wal = t_printf("%s-wal", db);
	struct bgrun_store *s;
	off_t db_size;
	int n = 0;

	put_events(db, 1);
	ASSERT(file_size(wal) > 0);
	db_size = file_size(db);
	/* Past 32 pages of 4 KiB, with their frame headers. */
	ASSERT_OK(t_open(db, 0, &s));
	while (file_size(wal) < 32 + 33 * (4096 + 24)) {
		put_commandfinish(s);
		n++;
		ASSERT(n < 1000);
	}
	bgrun_store_close(s);
	ASSERT_EQ(file_size(wal), 0);
	ASSERT(file_size(db) >= db_size);
	ASSERT_EQ(rows_in(db), n + 1);
	free(wal);
	free(db);
}

/*
 * A writer that stays open (the daemon, a Python Sink) has its WAL
 * checkpointed by the store's thread as it goes: the database file takes
 * the pages and the WAL stays bounded. The thread's connection had read
 * nothing, so SQLite had not opened its WAL and each checkpoint did
 * nothing: the daemon's WAL grew by about 30 KiB an event, for ever,
 * and each put fdatasync'd it.
 */
#define LONG_PUTS_MAX 4000
#define LONG_WAL_MAX (16 << 20) /* 8 times the threshold's 500 pages */
void case_long_writer_checkpoints(void)
{
	char *db = t_path(t_tmpdir(), "events.db"), *wal = t_printf("%s-wal", db);
	struct bgrun_store *s;
	int puts = 0;
	off_t first;

	ASSERT_OK(t_open(db, 0, &s));
	first = file_size(db);
	/* Until a checkpoint has copied pages into the database. */
	while (file_size(db) <= first) {
		put_commandfinish(s);
		if (++puts == LONG_PUTS_MAX)
			FAIL("%d puts and no checkpoint: the WAL is %lld bytes", puts,
			     (long long)file_size(wal));
	}
	/* And again and again, the WAL never past a few checkpoints' worth. */
	for (int i = 0; i < 3000; i++, puts++) {
		put_commandfinish(s);
		if (file_size(wal) > LONG_WAL_MAX)
			FAIL("the WAL is %lld bytes after %d puts", (long long)file_size(wal),
			     puts + 1);
	}
	bgrun_store_close(s);
	ASSERT_EQ(rows_in(db), puts);
	free(wal);
	free(db);
}

/*
 * A fork while the store's checkpointer thread is inside a checkpoint
 * (its lock taken, SQLite's state of it half-made) waits until the
 * thread is out: the child would otherwise inherit SQLite's record of
 * the thread's locks. The thread is held inside by the test-control
 * hook; a thread of ours forks; the fork must not return while the
 * thread is held (watched for FORK_WINDOW_MS), and the child's image of
 * memory must show the thread out. Without the guard the fork returned
 * at once, its child seeing the thread inside.
 */
#define FORK_WINDOW_MS 500

static int ckpt_in[2] = { -1, -1 }, ckpt_out[2] = { -1, -1 };
static _Atomic int ckpt_calls, ckpt_inside;

static void held_checkpoint(void)
{
	char c = 1;

	/* The first checkpoint only: later ones pass. */
	if (atomic_fetch_add(&ckpt_calls, 1) != 0)
		return;
	atomic_store(&ckpt_inside, 1);
	(void)!write(ckpt_in[1], &c, 1);
	while (read(ckpt_out[0], &c, 1) < 0 && errno == EINTR)
		;
	atomic_store(&ckpt_inside, 0);
}

/*
 * Opens db in *ret_store, with the checkpointer's first checkpoint to be
 * held inside by held_checkpoint, and puts until it is; returns the puts.
 */
static int put_until_checkpoint_held(const char *db,
				     struct bgrun_store **ret_store)
{
	struct pollfd in = { .events = POLLIN };
	int puts = 0;

	atomic_store(&ckpt_calls, 0);
	ASSERT_SYS(pipe(ckpt_in));
	ASSERT_SYS(pipe(ckpt_out));
	ASSERT_OK(bgrun__test_control(BGRUN__TEST_STORE_CHECKPOINT_HOOK,
				      held_checkpoint));
	ASSERT_OK(t_open(db, 0, ret_store));
	in.fd = ckpt_in[0];
	while (poll(&in, 1, 0) == 0) {
		put_commandfinish(*ret_store);
		if (++puts == LONG_PUTS_MAX)
			FAIL("%d puts and no checkpoint on the thread", puts);
	}
	return puts;
}

/* The pipes of held_checkpoint, closed. */
static void held_checkpoint_done(void)
{
	for (int i = 0; i < 2; i++) {
		(void)close(ckpt_in[i]);
		(void)close(ckpt_out[i]);
	}
}

struct forker {
	int done;    /* written once fork() returned in the parent */
	pid_t child;
};

static void *fork_now(void *arg)
{
	struct forker *f = arg;
	char c = 1;

	f->child = fork();
	if (f->child == 0)
		_exit(atomic_load(&ckpt_inside) ? 1 : 0);
	(void)!write(f->done, &c, 1);
	return NULL;
}

void case_fork_waits_for_checkpointer(void)
{
	char *db = t_path(t_tmpdir(), "events.db");
	struct pollfd done = { .events = POLLIN };
	struct forker f;
	struct bgrun_store *s;
	int pipe_done[2], status, puts, forked;
	pthread_t t;
	char c = 1;

	ASSERT_SYS(pipe(pipe_done));
	/* Until the thread's first checkpoint is held inside. */
	puts = put_until_checkpoint_held(db, &s);
	f.done = pipe_done[1];
	ASSERT_EQ(pthread_create(&t, NULL, fork_now, &f), 0);
	done.fd = pipe_done[0];
	forked = poll(&done, 1, FORK_WINDOW_MS);
	ASSERT_SYS(write(ckpt_out[1], &c, 1));
	ASSERT_EQ(pthread_join(t, NULL), 0);
	ASSERT_SYS(f.child);
	ASSERT_EQ(waitpid(f.child, &status, 0), f.child);
	ASSERT_OK(bgrun__test_control(BGRUN__TEST_STORE_CHECKPOINT_HOOK, NULL));
	if (forked != 0)
		FAIL("fork() returned while the checkpointer was held inside");
	ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* The log goes on: the held checkpoint ended, the next ones pass. */
	put_commandfinish(s);
	bgrun_store_close(s);
	ASSERT_EQ(rows_in(db), puts + 1);
	held_checkpoint_done();
	for (int i = 0; i < 2; i++)
		(void)close(pipe_done[i]);
	free(db);
}

/*
 * A checkpointer thread that falls behind (no CPU for it, or its flush
 * waiting for a disk other programs keep busy) does not leave the WAL to
 * grow: past its bound the committing writer checkpoints in line. The
 * thread is held after its first checkpoint by the test-control hook, and
 * the writer goes on; without the bound the WAL grew by 7 pages a put
 * (about 86 MiB here), which a busy disk had shown as a 16 MiB WAL in
 * case_long_writer_checkpoints.
 */
void case_long_writer_thread_behind(void)
{
	char *db = t_path(t_tmpdir(), "events.db"), *wal = t_printf("%s-wal", db);
	struct bgrun_store *s;
	off_t most = 0;
	int puts = put_until_checkpoint_held(db, &s);
	char c = 1;

	/* The thread is held: 3000 puts, about 21,000 pages. */
	for (int i = 0; i < 3000; i++, puts++) {
		put_commandfinish(s);
		if (file_size(wal) > most)
			most = file_size(wal);
	}
	ASSERT_SYS(write(ckpt_out[1], &c, 1));
	if (most > LONG_WAL_MAX)
		FAIL("the thread held, the WAL reached %lld bytes", (long long)most);
	bgrun_store_close(s);
	ASSERT_OK(bgrun__test_control(BGRUN__TEST_STORE_CHECKPOINT_HOOK, NULL));
	ASSERT_EQ(rows_in(db), puts);
	held_checkpoint_done();
	free(wal);
	free(db);
}

/*
 * A log removed without its -wal and -shm files (rm events.db), which
 * stay between writers, then made again: the old rows do not come back
 * from the old WAL (SQLite deletes a WAL found beside an empty database).
 */
void case_stale_companions(void)
{
	char *dir = t_tmpdir(), *db = t_path(dir, "events.db");
	char *wal = t_printf("%s-wal", db);

	put_events(db, 1);
	empty_wal(db);
	put_events(db, 2);
	ASSERT(file_size(wal) > 0);
	ASSERT_SYS(unlink(db));
	put_events(db, 1);
	ASSERT_EQ(rows_in(db), 1);
	free(wal);
	free(db);
}

/*
 * A log on read-only media (a snapshot, a backup, a ro mount), where no
 * file can be made: with its -wal and -shm files, read as SQLite reads a
 * WAL database it may not write; with neither (a copy of the database
 * file alone, whose WAL was empty), read as immutable. In a mount
 * namespace of a child of ours: a tmpfs, a log written on it, then the
 * tmpfs remounted read-only.
 */
void case_open_readonly_media(void)
{
	char *dir = t_tmpdir(), *mnt = t_path(dir, "m"), *db;
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct bgrun_event ev;
	struct bgrun_store *s;
	int status, rows;
	pid_t pid;

	db = t_path(mnt, "events.db");
	ASSERT_SYS(mkdir(mnt, 0700));
	pid = fork();
	ASSERT_SYS(pid);
	if (pid == 0) {
		char *wal = t_printf("%s-wal", db), *shm = t_printf("%s-shm", db);

		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", mnt, "tmpfs", 0, "size=4m") < 0)
			_exit(77);
		/* Made, its WAL emptied, then written. */
		if (bgrun_store_new(&s) < 0 || bgrun_store_open(s, db, 0) < 0 ||
		    bgrun_store_prune(s, 1, NULL) < 0)
			_exit(1);
		bgrun_store_close(s);
		if (bgrun_store_new(&s) < 0 || bgrun_store_open(s, db, 0) < 0)
			_exit(1);
		for (int i = 0; i < 3; i++) {
			bgrun_event_init(&ev, "commandfinish", "bgrun");
			if (bgrun_store_put(s, &ev) != 1)
				_exit(1);
		}
		bgrun_store_close(s);
		if (file_size(wal) <= 0 ||
		    mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY, NULL) < 0)
			_exit(1);
		for (int pass = 0; pass < 2; pass++) {
			rows = 0;
			if (bgrun_store_new(&s) < 0)
				_exit(1);
			if (bgrun_store_open(s, db, BGRUN_STORE_READONLY) < 0) {
				fprintf(stderr, "%s\n", bgrun_store_errmsg(s));
				_exit(3);
			}
			if (bgrun_store_query(s, &q, count_rows, &rows) < 0)
				_exit(4);
			bgrun_store_close(s);
			if (rows != 3)
				_exit(2);
			if (pass == 1)
				break;
			/* The WAL emptied into the database, the -shm gone. */
			if (mount(NULL, mnt, NULL, MS_REMOUNT, NULL) < 0 ||
			    bgrun_store_new(&s) < 0 ||
			    bgrun_store_open(s, db, 0) < 0 ||
			    bgrun_store_prune(s, 1, NULL) < 0)
				_exit(5);
			bgrun_store_close(s);
			if (file_size(wal) != 0 || unlink(shm) < 0 ||
			    mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY,
				  NULL) < 0)
				_exit(6);
		}
		_exit(0);
	}
	ASSERT_SYS(waitpid(pid, &status, 0));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		SKIP("cannot mount a tmpfs in a mount namespace of our own");
	ASSERT(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	free(db);
	free(mnt);
}

void case_open_not_ours(void)
{
	static const char text[] = "this is not a database, not at all.\n";
	char *dir = t_tmpdir(), *db, *msg, *back;
	sqlite3 *raw;

	/* A text file. */
	db = t_path(dir, "text.db");
	t_write_file(db, text, sizeof(text) - 1);
	for (unsigned flags = 0; flags <= BGRUN_STORE_READONLY; flags++) {
		msg = t_open_error(db, flags, -EBADMSG);
		ASSERT(strstr(msg, db) != NULL);
		ASSERT(strstr(msg, "not a bgrun event database (not an SQLite file)") != NULL);
		free(msg);
	}
	back = t_read_file(db);
	ASSERT_STR_EQ(back, text);
	free(back);
	free(db);

	/* Another application's database, and one with a foreign id. */
	db = t_path(dir, "other.db");
	raw = t_sql_open_rw(db);
	t_sql_exec(raw, "CREATE TABLE things(x); INSERT INTO things VALUES(1)");
	sqlite3_close(raw);
	for (unsigned flags = 0; flags <= BGRUN_STORE_READONLY; flags++) {
		msg = t_open_error(db, flags, -EBADMSG);
		ASSERT(strstr(msg, "not a bgrun event database (an SQLite database of another program") != NULL);
		free(msg);
	}
	free(db);
	db = t_path(dir, "foreign-id.db");
	raw = t_sql_open_rw(db);
	t_sql_exec(raw, "PRAGMA application_id = 305419896");
	sqlite3_close(raw);
	msg = t_open_error(db, 0, -EBADMSG);
	ASSERT(strstr(msg, "0x12345678") != NULL);
	free(msg);
	free(db);

	/* A store of a future schema. */
	db = t_path(dir, "future.db");
	raw = t_sql_open_rw(db);
	t_sql_exec(raw, "PRAGMA application_id = 1650946677;"
			"CREATE TABLE events(id);"
			"PRAGMA user_version = 99");
	sqlite3_close(raw);
	msg = t_open_error(db, 0, -EPROTO);
	ASSERT(strstr(msg, "newer") != NULL);
	free(msg);
	free(t_open_error(db, BGRUN_STORE_READONLY, -EPROTO));
	free(db);
}

/*
 * The constructor convention (bgrun.h): a store whose open failed still
 * says why, stays usable (it opens on a good path afterwards), and calls
 * on a store that is not open fail with a message instead of crashing.
 */
void case_open_two_steps(void)
{
	char *dir = t_tmpdir(), *db = t_path(dir, "events.db");
	char *missing = t_path(dir, "missing.db");
	struct bgrun_store *s = NULL;
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct bgrun_event ev;

	ASSERT_OK(bgrun_store_new(&s));
	ASSERT_STR_EQ(bgrun_store_errmsg(s), "");
	bgrun_event_init(&ev, "x", "test");
	ASSERT_EQ(bgrun_store_put(s, &ev), -EINVAL);
	ASSERT(strstr(bgrun_store_errmsg(s), "not open") != NULL);
	ASSERT_EQ(bgrun_store_query(s, &q, count_rows, NULL), -EINVAL);
	ASSERT_EQ(bgrun_store_mark_lost(s, NULL), -EINVAL);

	ASSERT_EQ(bgrun_store_open(s, missing, BGRUN_STORE_READONLY), -ENOENT);
	ASSERT(strstr(bgrun_store_errmsg(s), missing) != NULL);
	ASSERT_EQ(bgrun_store_open(s, "", 0), -EINVAL);
	ASSERT_OK(bgrun_store_open(s, db, 0));
	ASSERT_STR_EQ(bgrun_store_errmsg(s), "");
	ASSERT_EQ(bgrun_store_open(s, db, 0), -EINVAL);
	ASSERT(strstr(bgrun_store_errmsg(s), "open already") != NULL);
	ASSERT_EQ(bgrun_store_put(s, &ev), 1);
	bgrun_store_close(s);
	free(db);
	free(missing);
}

int main(int argc, char **argv)
{
#define UNIT(name)
#define STORE(name) { #name, case_##name },
#define SINK(name)
	static const struct t_case cases[] = {
#include "cases.def"
	};
#undef UNIT
#undef STORE
#undef SINK

	return t_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}

/*
 * A database path that is a symbolic link is refused for writing, as
 * SQLite refuses one for the -wal and -shm files: a link to an empty
 * file would make that file a database. Reading through one is fine.
 */
void case_open_symlink(void)
{
	char *dir = t_tmpdir(), *target = t_path(dir, "notes.txt");
	char *db = t_path(dir, "events.db"), *real = t_path(dir, "real.db");
	char *lock;
	struct bgrun_event ev;
	struct bgrun_store *s;
	struct stat st;
	char *msg;
	int fd;

	fd = open(target, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	ASSERT_SYS(fd);
	(void)close(fd);
	ASSERT_SYS(symlink(target, db));
	msg = t_open_error(db, 0, -ELOOP);
	ASSERT(strstr(msg, "is a symbolic link") != NULL);
	free(msg);
	ASSERT_SYS(stat(target, &st));
	ASSERT_EQ(st.st_size, 0);
	lock = t_printf("%s-lock", target);
	ASSERT(access(lock, F_OK) < 0);
	free(lock);
	/* A link to a real log: read, not written. */
	ASSERT_OK(t_open(real, 0, &s));
	bgrun_event_init(&ev, "commandfinish", "bgrun");
	ASSERT_EQ(bgrun_store_put(s, &ev), 1);
	bgrun_store_close(s);
	ASSERT_SYS(unlink(db));
	ASSERT_SYS(symlink(real, db));
	ASSERT_OK(t_open(db, BGRUN_STORE_READONLY, &s));
	bgrun_store_close(s);
	free(t_open_error(db, 0, -ELOOP));
	free(real);
	free(db);
	free(target);
}
