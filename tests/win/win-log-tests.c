/* SPDX-License-Identifier: MIT */
/* win-log-tests.c: the event log's cases on Windows (run under wine in CI): the store written by several processes, its lock, its default path, the log tool. */

/*
 * The writers are real processes, launched with the primitive: this
 * program again, as `win-tests --log-writer DB TAG N` (N events tagged
 * TAG into DB, "-" for the default path) or `--log-hold LOCKFILE` (the
 * store's lock taken as a writer takes it, then kept until stdin ends).
 */

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "win-tests.h"
#include "bgrun/test-control.h"

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIGKILL_ 9
#define DEADLINE_MS 60000
#define WRITERS 4
#define EACH 25

/* The child modes: exit 0, or 1 after one line on stderr. */
static int child_writer(const char *db, const char *tag, int n)
{
	struct bgrun_store *store = NULL;
	char *path = NULL;
	int r;

	if (strcmp(db, "-") == 0) {
		r = bgrun_store_default_path(&path);
		if (r < 0) {
			fprintf(stderr, "writer: no default path: %s\n",
				bgrun_strerror(r));
			return 1;
		}
		db = path;
	}
	r = bgrun_store_new(&store);
	if (r >= 0)
		r = bgrun_store_open(store, db, 0);
	for (int i = 0; r >= 0 && i < n; i++) {
		struct bgrun_event ev;
		char display[64];

		bgrun_event_init(&ev, "commandfinish", "win-tests");
		(void)snprintf(display, sizeof(display), "writer %s %d", tag, i);
		ev.display = display;
		ev.tag = tag;
		ev.result = BGRUN_RESULT_SUCCESS;
		ev.exit_code = i % 3;
		ev.result = i % 3 == 0 ? BGRUN_RESULT_SUCCESS : BGRUN_RESULT_FAILED;
		ev.start_ns = bgrun_clock_ns(BGRUN_CLOCK_REALTIME) - 1000000;
		ev.end_ns = bgrun_clock_ns(BGRUN_CLOCK_REALTIME);
		ev.duration_ns = 1000000 * (i + 1);
		r = bgrun_store_put(store, &ev);
	}
	if (r < 0)
		fprintf(stderr, "writer %s: %s\n", tag, bgrun_store_errmsg(store));
	bgrun_store_close(store);
	free(path);
	return r < 0 ? 1 : 0;
}

static int child_hold(const char *lock_path)
{
	int fd = _open(lock_path, _O_RDWR | _O_BINARY | _O_NOINHERIT);
	char c;
	int r;

	if (fd < 0) {
		fprintf(stderr, "hold: cannot open %s\n", lock_path);
		return 1;
	}
	r = bgrun__test_control(BGRUN__TEST_FILELOCK, fd,
				(int64_t)DEADLINE_MS * 1000000);
	if (r < 0) {
		fprintf(stderr, "hold: %s\n", bgrun_strerror(r));
		return 1;
	}
	(void)_setmode(_fileno(stdout), _O_BINARY);
	printf("held\n");
	fflush(stdout);
	/* Held until the case ends us (or closes our stdin). */
	while (fread(&c, 1, 1, stdin) == 1)
		;
	return 0;
}

int win_log_child(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "--log-writer") == 0)
		return child_writer(argv[2], argv[3], atoi(argv[4]));
	if (argc == 3 && strcmp(argv[1], "--log-hold") == 0)
		return child_hold(argv[2]);
	fprintf(stderr, "win-tests: bad child mode '%s'\n", argv[1]);
	return 2;
}

/* This program, for its child modes. */
static char *self_path(void)
{
	WCHAR w[MAX_PATH];
	char *u = malloc(MAX_PATH * 3);

	if (GetModuleFileNameW(NULL, w, MAX_PATH) == 0 || u == NULL ||
	    WideCharToMultiByte(CP_UTF8, 0, w, -1, u, MAX_PATH * 3, NULL,
				NULL) <= 0)
		FAIL("GetModuleFileNameW");
	return u;
}

/* The events of db, counted, and how many carry tag (NULL: any). */
struct count {
	const char *tag;
	int all, tagged, failed;
};

static int count_row(void *data, const struct bgrun_event_row *row)
{
	struct count *c = data;

	c->all++;
	if (c->tag != NULL && row->ev.tag != NULL &&
	    strcmp(row->ev.tag, c->tag) == 0)
		c->tagged++;
	if (row->ev.result != NULL && strcmp(row->ev.result, "failed") == 0)
		c->failed++;
	return 0;
}

static struct count count_events(const char *db, const char *tag)
{
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct count c = { .tag = tag };
	struct bgrun_store *store;
	int r;

	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	r = bgrun_store_open(store, db, BGRUN_STORE_READONLY);
	if (r < 0)
		FAIL("opening %s: %s", db, bgrun_store_errmsg(store));
	ASSERT_INT(bgrun_store_query(store, &q, count_row, &c), ==, 0);
	bgrun_store_close(store);
	return c;
}

/*
 * WRITERS processes write EACH events each into one log at once, every
 * write under the store's lock (LockFileEx): all of them are there, each
 * writer's own, and the log reads back whole.
 */
void case_store_writers(void)
{
	char *db = tmp_path("log\\events.db"), *self = self_path();
	struct bgrun_child *c[WRITERS];
	char tags[WRITERS][16], each[16];

	(void)snprintf(each, sizeof(each), "%d", EACH);
	for (int i = 0; i < WRITERS; i++) {
		struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;

		(void)snprintf(tags[i], sizeof(tags[i]), "w%d", i);
		o.argv = (const char *[]){ self, "--log-writer", db, tags[i],
					   each, NULL };
		o.err.kind = BGRUN_STDIO_INHERIT;
		(void)spawn_or_fail(&o, &c[i]);
	}
	for (int i = 0; i < WRITERS; i++) {
		struct bgrun_status st;
		int r = bgrun_child_wait(c[i], DEADLINE_MS, &st);

		if (r < 0)
			FAIL("writer %d: %s%s", i, bgrun_strerror(r),
			     win_detail(r));
		ASSERT(st.exited);
		ASSERT_INT(st.exit_code, ==, 0);
		bgrun_child_free(c[i]);
	}
	for (int i = 0; i < WRITERS; i++) {
		struct count n = count_events(db, tags[i]);

		ASSERT_INT(n.all, ==, WRITERS * EACH);
		ASSERT_INT(n.tagged, ==, EACH);
	}
}

/* Reads a line from h (the holder's stdout) into buf. */
static void read_line(HANDLE h, char *buf, size_t size)
{
	size_t len = 0;
	DWORD n;

	while (len + 1 < size && ReadFile(h, buf + len, 1, &n, NULL) && n == 1)
		if (buf[len++] == '\n')
			break;
	buf[len] = '\0';
}

/*
 * A writer that holds the lock and does not let go (stopped, stuck):
 * the next writer waits $BGRUN_LOCK_TIMEOUT, then fails and says why,
 * never waits without limit; once the holder is gone (killed: Windows
 * drops its lock with its process) the next write goes through.
 */
void case_store_lock_bounded(void)
{
	char *db = tmp_path("events.db"), *lock = tmp_path("events.db-lock");
	char *self = self_path(), line[64];
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	HANDLE in_r, in_w, out_r, out_w;
	struct bgrun_store *store;
	struct bgrun_child *holder;
	struct bgrun_status st;
	struct bgrun_event ev;
	ULONGLONG t0;
	int r;

	/* The log and its lock file exist, as after any first write. */
	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	ASSERT_INT(bgrun_store_open(store, db, 0), ==, 0);
	bgrun_store_close(store);
	ASSERT(CreatePipe(&in_r, &in_w, NULL, 0));
	ASSERT(CreatePipe(&out_r, &out_w, NULL, 0));
	o.argv = (const char *[]){ self, "--log-hold", lock, NULL };
	o.in.kind = BGRUN_STDIO_FD;
	o.in.fd = in_r;
	o.out.kind = BGRUN_STDIO_FD;
	o.out.fd = out_w;
	o.err.kind = BGRUN_STDIO_INHERIT;
	(void)spawn_or_fail(&o, &holder);
	CloseHandle(in_r);
	CloseHandle(out_w);
	read_line(out_r, line, sizeof(line));
	ASSERT_STR(line, "held\n");

	ASSERT_INT(_putenv_s("BGRUN_LOCK_TIMEOUT", "0.3"), ==, 0);
	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	t0 = GetTickCount64();
	r = bgrun_store_open(store, db, 0);
	ASSERT_INT(r, ==, -ETIMEDOUT);
	ASSERT(strstr(bgrun_store_errmsg(store), "held the log's lock") != NULL);
	/* Not a timing check: a wait without limit would never get here. */
	ASSERT(GetTickCount64() - t0 < DEADLINE_MS);
	bgrun_store_close(store);

	ASSERT_INT(bgrun_child_kill(holder, SIGKILL_), ==, 0);
	ASSERT_INT(bgrun_child_wait(holder, DEADLINE_MS, &st), ==, 0);
	bgrun_child_free(holder);
	CloseHandle(in_w);
	CloseHandle(out_r);
	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	r = bgrun_store_open(store, db, 0);
	if (r < 0)
		FAIL("after the holder: %s", bgrun_store_errmsg(store));
	bgrun_event_init(&ev, "commandfinish", "win-tests");
	ev.tag = "after";
	ASSERT_INT(bgrun_store_put(store, &ev), >=, 0);
	bgrun_store_close(store);
	ASSERT_INT(count_events(db, "after").tagged, ==, 1);
}

/* Sets (or with NULL removes) a variable of ours, which children inherit. */
void set_env(const char *name, const char *value)
{
	ASSERT(SetEnvironmentVariableA(name, value));
	ASSERT_INT(_putenv_s(name, value != NULL ? value : ""), ==, 0);
}

/*
 * With neither BGRUN_DB nor an absolute XDG_STATE_HOME, the log is
 * %LOCALAPPDATA%\bgrun\events.db, made with its directory by the first
 * writer.
 */
void case_store_default_path(void)
{
	char *self = self_path(), *path = NULL;
	char *expect = tmp_path("bgrun\\events.db");
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;

	set_env("BGRUN_DB", NULL);
	set_env("XDG_STATE_HOME", NULL);
	set_env("LOCALAPPDATA", tmpdir);
	ASSERT_INT(bgrun_store_default_path(&path), ==, 0);
	ASSERT_STR(path, expect);
	o.argv = (const char *[]){ self, "--log-writer", "-", "default", "3",
				   NULL };
	o.err.kind = BGRUN_STDIO_INHERIT;
	ASSERT_INT(run(&o, NULL), ==, 0);
	ASSERT_INT(count_events(expect, "default").tagged, ==, 3);
	/* An absolute XDG_STATE_HOME is taken as on POSIX. */
	set_env("XDG_STATE_HOME", tmp_path("xdg"));
	free(path);
	ASSERT_INT(bgrun_store_default_path(&path), ==, 0);
	ASSERT_STR(path, tmp_path("xdg\\bgrun\\events.db"));
}

/* The build's logsink.exe, beside bgrun.exe (a longer name: a new string). */
char *logsink_path(void)
{
	char *p = bgrun_path(), *r;

	r = dup_printf("%.*slogsink.exe", (int)(strstr(p, "bgrun.exe") - p), p);
	free(p);
	return r;
}

/* Runs logsink with args: its exit code; *ret_out and *ret_err what it wrote. */
int run_logsink(const char *const *args, char **ret_out, char **ret_err)
{
	const char *argv[32] = { NULL };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	char *out = tmp_path("logsink-stdout"), *err = tmp_path("logsink-stderr");
	size_t k = 0;
	int code;

	argv[k++] = logsink_path();
	for (size_t i = 0; args[i] != NULL && k + 1 < 32; i++)
		argv[k++] = args[i];
	o.argv = argv;
	o.out.kind = BGRUN_STDIO_FILE;
	o.out.path = out;
	o.err.kind = BGRUN_STDIO_FILE;
	o.err.path = err;
	code = run(&o, NULL);
	*ret_out = slurp(out, NULL);
	*ret_err = slurp(err, NULL);
	ASSERT(*ret_out != NULL && *ret_err != NULL);
	return code;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

/*
 * logsink's readers on a log that two processes wrote: query (JSON and
 * CSV, with filters), show of one event, stats; a missing default log
 * is an empty answer; what this build lacks is said, exit 1.
 */
void case_logsink_verbs(void)
{
	char *db = tmp_path("events.db"), *self = self_path(), *out, *err;
	char *dbarg = dup_printf("--db=%s", db);
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	char id[BGRUN_EVENT_ID_MAX + 1];

	o.err.kind = BGRUN_STDIO_INHERIT;
	o.argv = (const char *[]){ self, "--log-writer", db, "alpha", "6", NULL };
	ASSERT_INT(run(&o, NULL), ==, 0);
	o.argv = (const char *[]){ self, "--log-writer", db, "beta", "4", NULL };
	ASSERT_INT(run(&o, NULL), ==, 0);

	ASSERT_INT(run_logsink((const char *[]){ dbarg, "query", "--json", NULL },
			       &out, &err), ==, 0);
	ASSERT_STR(err, "");
	ASSERT_INT(count_lines(out), ==, 10);
	ASSERT(strstr(out, "\"display\":\"writer beta 3\"") != NULL);
	ASSERT_INT(run_logsink((const char *[]){ dbarg, "query", "--csv",
						 "--tag=alpha", NULL },
			       &out, &err), ==, 0);
	ASSERT_INT(count_lines(out), ==, 1 + 6);
	ASSERT(strstr(out, "writer beta") == NULL);
	ASSERT_INT(run_logsink((const char *[]){ dbarg, "query", "--json",
						 "--failed", "--limit=2", NULL },
			       &out, &err), ==, 0);
	ASSERT_INT(count_lines(out), ==, 2);
	ASSERT(strstr(out, "\"result\":\"failed\"") != NULL);

	/* show: one event by (a part of) its id, taken from the query. */
	{
		const char *p = strstr(out, "\"id\":\"");

		ASSERT(p != NULL);
		p += 6;
		(void)snprintf(id, sizeof(id), "%.*s",
			       (int)strcspn(p, "\""), p);
	}
	ASSERT_INT(run_logsink((const char *[]){ dbarg, "show", id, NULL },
			       &out, &err), ==, 0);
	ASSERT(strstr(out, id) != NULL);
	ASSERT(strstr(out, "failed") != NULL);
	ASSERT_INT(run_logsink((const char *[]){ dbarg, "show", "no-such-id",
						 NULL }, &out, &err), ==, 1);
	ASSERT(err[0] != '\0');

	ASSERT_INT(run_logsink((const char *[]){ dbarg, "stats", "--by=tag",
						 NULL }, &out, &err), ==, 0);
	ASSERT(strstr(out, "alpha") != NULL && strstr(out, "beta") != NULL);

	/* No log at the default path yet: nothing to show, not an error. */
	set_env("BGRUN_DB", NULL);
	set_env("XDG_STATE_HOME", NULL);
	set_env("LOCALAPPDATA", tmp_path("empty"));
	ASSERT_INT(run_logsink((const char *[]){ "query", "--json", NULL },
			       &out, &err), ==, 0);
	ASSERT_STR(out, "");

	ASSERT_INT(run_logsink((const char *[]){ "pg-init", NULL }, &out, &err),
		   ==, 1);
	ASSERT(strstr(err, "not available in the Windows build") != NULL);
}


/*
 * A log that is a symbolic link (a reparse point) is refused for
 * writing, in the POSIX build's words, and the file it leads to is left
 * alone; read-only opens still follow it. Made with CreateSymbolicLinkW
 * where the system lets this user (wine does; Windows wants developer
 * mode or the privilege): otherwise, or where the link does not show as
 * a reparse point, the case says so and skips.
 */
void case_store_reparse_point(void)
{
	char *target = tmp_path("real.db"), *link = tmp_path("link.db");
	struct bgrun_store *store;
	DWORD attr;
	int r;

	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	ASSERT_INT(bgrun_store_open(store, target, 0), ==, 0);
	bgrun_store_close(store);
	/* 2: SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE (developer mode). */
	if (!CreateSymbolicLinkW(wide(link), wide(target), 2) &&
	    !CreateSymbolicLinkW(wide(link), wide(target), 0))
		SKIP("CreateSymbolicLinkW: error %lu: no symbolic link can be "
		     "made here, the refusal is not checked",
		     (unsigned long)GetLastError());
	attr = GetFileAttributesW(wide(link));
	if (attr == INVALID_FILE_ATTRIBUTES ||
	    !(attr & FILE_ATTRIBUTE_REPARSE_POINT))
		SKIP("the link made does not show as a reparse point%s%s: the "
		     "refusal is not checked",
		     wine_version() != NULL ? " under wine " : "",
		     wine_version() != NULL ? wine_version() : "");
	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	r = bgrun_store_open(store, link, 0);
	if (r != -ELOOP)
		FAIL("opening a log that is a symbolic link for writing: %d (%s)",
		     r, bgrun_store_errmsg(store));
	if (strstr(bgrun_store_errmsg(store),
		   "is a symbolic link: refused for writing") == NULL)
		FAIL("the refusal said '%s'", bgrun_store_errmsg(store));
	bgrun_store_close(store);
	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	ASSERT_INT(bgrun_store_open(store, link, BGRUN_STORE_READONLY), ==, 0);
	bgrun_store_close(store);
}

/* --- The spool's replay (src/win/sink.c) --- */

/* Writes n events tagged tag into db's spool, as a put that failed. */
static void spool_events(const char *db, const char *tag, int n)
{
	for (int i = 0; i < n; i++) {
		struct bgrun_event ev;

		bgrun_event_init(&ev, "commandfinish", "win-tests");
		ev.tag = tag;
		ASSERT_INT(bgrun__test_control(BGRUN__TEST_SPOOL_WRITE, db, &ev),
			   ==, 0);
	}
}

static int64_t spool_waiting(const char *db)
{
	int64_t waiting = -1;

	ASSERT_INT(bgrun_sink_spool_count(db, &waiting, NULL), ==, 0);
	return waiting;
}

/*
 * Opens path (made if missing) and locks all of it, exclusively, so
 * that whichever byte a replay locks is held: the handle, or
 * INVALID_HANDLE_VALUE with the Windows error in *ret_error.
 */
static HANDLE lock_whole(const char *path, DWORD flags, DWORD *ret_error)
{
	OVERLAPPED ov = { .Offset = 0 };
	HANDLE h = CreateFileW(wide(path), GENERIC_READ,
			       FILE_SHARE_READ | FILE_SHARE_WRITE |
				       FILE_SHARE_DELETE,
			       NULL, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL | flags,
			       NULL);

	*ret_error = 0;
	if (h == INVALID_HANDLE_VALUE) {
		*ret_error = GetLastError();
		return h;
	}
	if (!LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY,
			0, MAXDWORD, MAXDWORD, &ov)) {
		*ret_error = GetLastError();
		CloseHandle(h);
		return INVALID_HANDLE_VALUE;
	}
	return h;
}

/* Replays db's spool with store; fails unless it stored want events. */
static void replay_stores(struct bgrun_store *store, const char *db,
			  int64_t want, const char *what)
{
	int64_t count = -1;

	ASSERT_INT(bgrun_sink_replay(store, db, &count), ==, 0);
	if (count != want)
		FAIL("%s stored %lld events, not %lld", what,
		     (long long)count, (long long)want);
}

/*
 * One replay of a spool at a time, as on POSIX: while another replay
 * holds the spool's lock (its file .replay-lock, held here as a replay
 * holds it), a replay returns 0 at once with a count of 0 and leaves
 * the files to that one; once the lock is let go, the next replay
 * stores them all, and the lock file is never taken for an event.
 * Every writer of a burst used to replay the same files again, under
 * the store's lock.
 */
void case_store_spool_one_replay(void)
{
	char *db = tmp_path("events.db");
	char *lock_path = tmp_path("events.db.spool\\.replay-lock");
	struct bgrun_store *store;
	int64_t count = -1, bad = -1;
	DWORD error;
	HANDLE lock;

	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	ASSERT_INT(bgrun_store_open(store, db, 0), ==, 0);
	spool_events(db, "spooled", 2);
	ASSERT_INT(spool_waiting(db), ==, 2);

	lock = lock_whole(lock_path, 0, &error);
	if (lock == INVALID_HANDLE_VALUE)
		FAIL("locking %s: Windows error %lu", lock_path,
		     (unsigned long)error);
	replay_stores(store, db, 0,
		      "a replay while another holds the spool's lock (the "
		      "holder stores them)");
	ASSERT_INT(spool_waiting(db), ==, 2);
	ASSERT_INT(count_events(db, "spooled").tagged, ==, 0);
	ASSERT(CloseHandle(lock));

	replay_stores(store, db, 2, "a replay once the lock is free");
	ASSERT_INT(bgrun_sink_spool_count(db, &count, &bad), ==, 0);
	ASSERT_INT(count, ==, 0);
	ASSERT_INT(bad, ==, 0);
	ASSERT(GetFileAttributesW(wide(lock_path)) != INVALID_FILE_ATTRIBUTES);
	bgrun_store_close(store);
	ASSERT_INT(count_events(db, "spooled").tagged, ==, 2);
}

/* path made (empty), written hours_ago hours ago. */
static void make_aged(const char *path, int hours_ago)
{
	ULARGE_INTEGER t;
	FILETIME ft;
	HANDLE h = CreateFileW(wide(path), GENERIC_WRITE, 0, NULL, CREATE_NEW,
			       FILE_ATTRIBUTE_NORMAL, NULL);

	ASSERT(h != INVALID_HANDLE_VALUE);
	GetSystemTimeAsFileTime(&ft);
	t.LowPart = ft.dwLowDateTime;
	t.HighPart = ft.dwHighDateTime;
	t.QuadPart -= (ULONGLONG)hours_ago * 3600 * 10000000;
	ft.dwLowDateTime = t.LowPart;
	ft.dwHighDateTime = t.HighPart;
	ASSERT(SetFileTime(h, NULL, NULL, &ft));
	ASSERT(CloseHandle(h));
}

/*
 * A writer that died between its temporary file and the rename left it
 * behind: a replay removes one over an hour old, never a fresh one (a
 * writer may be at work on it), as src/sink/replay.c does.
 */
void case_store_spool_stale_tmp(void)
{
	char *db = tmp_path("events.db");
	char *dead = tmp_path("events.db.spool\\.tmp-1-0-dead");
	char *fresh = tmp_path("events.db.spool\\.tmp-2-0-fresh");
	struct bgrun_store *store;

	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	ASSERT_INT(bgrun_store_open(store, db, 0), ==, 0);
	spool_events(db, "spooled", 1);
	make_aged(dead, 2);
	make_aged(fresh, 0);
	replay_stores(store, db, 1, "a replay");
	bgrun_store_close(store);
	if (GetFileAttributesW(wide(dead)) != INVALID_FILE_ATTRIBUTES)
		FAIL("a temporary file 2 hours old is still in the spool");
	ASSERT(GetFileAttributesW(wide(fresh)) != INVALID_FILE_ATTRIBUTES);
}

static const char *hook_db, *hook_reason;

/* A writer spools while a replay runs: its event... */
static void spool_meanwhile(void)
{
	spool_events(hook_db, "meanwhile", 1);
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
	if (where != 1)
		return;
	spool_meanwhile();
	spit(hook_reason, "5\t0\t0\t0\tthe newer reason\n");
}

/* ...or after the replay's first pass, which the next pass stores. */
static void spool_after_first_pass(int where)
{
	static int once;

	if (where == 0 && !once) {
		once = 1;
		spool_meanwhile();
	}
}

/*
 * Writers spool while a replay runs, as SINK(client_spool_replay_meanwhile)
 * checks on POSIX. What came during a pass, the next pass stores. A
 * replay that empties the spool removes its reason, but an event spooled
 * meanwhile keeps one: the old reason when its writer has not noted its
 * own yet (without the put-back this fails: "an event waits and the old
 * reason is gone"), its own when it has. Nothing is left aside.
 */
void case_store_spool_replay_meanwhile(void)
{
	char *db = tmp_path("events.db");
	char *spool = tmp_path("events.db.spool");
	const char *old = "22\t0\t0\t0\tthe old reason\n";
	struct bgrun_store *store;
	WIN32_FIND_DATAW fd;
	HANDLE h;

	hook_db = db;
	hook_reason = tmp_path("events.db.spool\\.reason");
	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	ASSERT_INT(bgrun_store_open(store, db, 0), ==, 0);
	spool_events(db, "spooled", 1);
	spit(hook_reason, old);

	/* An event came, its reason not yet: the old one is kept. */
	ASSERT_INT(bgrun__test_control(BGRUN__TEST_REPLAY_HOOK,
				       spool_when_emptied), ==, 0);
	replay_stores(store, db, 1, "a replay (an event came after it)");
	ASSERT_INT(spool_waiting(db), ==, 1);
	if (slurp(hook_reason, NULL) == NULL ||
	    strcmp(slurp(hook_reason, NULL), old) != 0)
		FAIL("an event waits and the old reason is gone");

	/* An event and its writer's reason came: that reason stays. */
	ASSERT_INT(bgrun__test_control(BGRUN__TEST_REPLAY_HOOK,
				       spool_and_note_when_emptied), ==, 0);
	replay_stores(store, db, 1, "a replay (an event and its reason came)");
	ASSERT_INT(spool_waiting(db), ==, 1);
	ASSERT_STR(slurp(hook_reason, NULL), "5\t0\t0\t0\tthe newer reason\n");

	/* One came during the first pass: stored by the next; all gone. */
	ASSERT_INT(bgrun__test_control(BGRUN__TEST_REPLAY_HOOK,
				       spool_after_first_pass), ==, 0);
	replay_stores(store, db, 2, "a replay (an event came during a pass)");
	ASSERT_INT(bgrun__test_control(BGRUN__TEST_REPLAY_HOOK,
				       (void (*)(int))NULL), ==, 0);
	ASSERT_INT(spool_waiting(db), ==, 0);
	if (GetFileAttributesW(wide(hook_reason)) != INVALID_FILE_ATTRIBUTES)
		FAIL("the spool is empty and its reason is still there");
	/* Nothing but the replays' lock file is left in the spool. */
	h = FindFirstFileW(wide(dup_printf("%s\\*", spool)), &fd);
	ASSERT(h != INVALID_HANDLE_VALUE);
	do {
		if (wcscmp(fd.cFileName, L".") != 0 &&
		    wcscmp(fd.cFileName, L"..") != 0 &&
		    wcscmp(fd.cFileName, L".replay-lock") != 0)
			FAIL("left in the spool: %ls", fd.cFileName);
	} while (FindNextFileW(h, &fd));
	(void)FindClose(h);
	bgrun_store_close(store);
	ASSERT_INT(count_events(db, "meanwhile").tagged, ==, 3);
	ASSERT_INT(count_events(db, "spooled").tagged, ==, 1);
}

/*
 * A spool whose .replay-lock is a symbolic link to a file elsewhere: a
 * replay takes no lock through it (a lock on that file, held here, does
 * not stop it), and does the replay without one, as where there are no
 * locks. Skipped where no symbolic link can be made, or where it does
 * not open as a reparse point with FILE_FLAG_OPEN_REPARSE_POINT.
 */
void case_store_spool_replay_lock_link(void)
{
	char *db = tmp_path("events.db"), *target = tmp_path("elsewhere");
	char *link = tmp_path("events.db.spool\\.replay-lock");
	BY_HANDLE_FILE_INFORMATION info;
	struct bgrun_store *store;
	DWORD error;
	HANDLE lock, h;

	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	ASSERT_INT(bgrun_store_open(store, db, 0), ==, 0);
	spool_events(db, "spooled", 2);
	lock = lock_whole(target, 0, &error);
	if (lock == INVALID_HANDLE_VALUE)
		FAIL("locking %s: Windows error %lu", target,
		     (unsigned long)error);
	/* 2: SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE (developer mode). */
	if (!CreateSymbolicLinkW(wide(link), wide(target), 2) &&
	    !CreateSymbolicLinkW(wide(link), wide(target), 0))
		SKIP("CreateSymbolicLinkW: error %lu: no symbolic link can be "
		     "made here, the refusal is not checked",
		     (unsigned long)GetLastError());
	h = CreateFileW(wide(link), GENERIC_READ,
			FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			NULL, OPEN_EXISTING,
			FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
	if (h == INVALID_HANDLE_VALUE || !GetFileInformationByHandle(h, &info) ||
	    !(info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT))
		SKIP("the link made does not open as a reparse point%s%s: the "
		     "refusal is not checked",
		     wine_version() != NULL ? " under wine " : "",
		     wine_version() != NULL ? wine_version() : "");
	CloseHandle(h);

	replay_stores(store, db, 2,
		      "a replay with a link for its lock (no lock through the "
		      "link, so none held)");
	ASSERT_INT(spool_waiting(db), ==, 0);
	ASSERT(CloseHandle(lock));
	bgrun_store_close(store);
	ASSERT_INT(count_events(db, "spooled").tagged, ==, 2);
}
