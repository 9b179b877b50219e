/* SPDX-License-Identifier: MIT */
/* win-log-tests.c: the logged mode's cases on Windows (run under wine in CI): the store written by several processes, its lock, the log tool. */

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
static void set_env(const char *name, const char *value)
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

/* The build's logsink.exe, beside bgrun.exe. */
static char *logsink_path(void)
{
	char *p = bgrun_path();

	strcpy(strstr(p, "bgrun.exe"), "logsink.exe");
	return p;
}

/* Runs logsink with args: its exit code; *ret_out and *ret_err what it wrote. */
static int run_logsink(const char *const *args, char **ret_out, char **ret_err)
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

	ASSERT_INT(run_logsink((const char *[]){ "serve", NULL }, &out, &err),
		   ==, 1);
	ASSERT(strstr(err, "not available in the Windows build") != NULL);
}

/* --- bgrun's logged mode: bgrun-supervise.exe and the store --- */

/* One event as the test reads it back (copied out of the row). */
struct got {
	bool found;
	char id[BGRUN_EVENT_ID_MAX + 1];
	char result[32], tag[32], display[256];
	int64_t exit_code, duration_ns, pid, supervisor_pid, start_ns, end_ns;
	int64_t user_cpu_ns, max_rss_kb, vol_ctxsw;
	size_t argc;
	char *argv[64];
};

static void got_free(struct got *g)
{
	for (size_t i = 0; i < g->argc && i < 64; i++)
		free(g->argv[i]);
	*g = (struct got){ .found = false };
}

static int got_row(void *data, const struct bgrun_event_row *row)
{
	struct got *g = data;

	got_free(g);
	g->found = true;
	(void)snprintf(g->id, sizeof(g->id), "%s", row->ev.id);
	(void)snprintf(g->result, sizeof(g->result), "%s",
		       row->ev.result != NULL ? row->ev.result : "");
	(void)snprintf(g->tag, sizeof(g->tag), "%s",
		       row->ev.tag != NULL ? row->ev.tag : "");
	(void)snprintf(g->display, sizeof(g->display), "%s",
		       row->ev.display != NULL ? row->ev.display : "");
	g->exit_code = row->ev.exit_code;
	g->duration_ns = row->ev.duration_ns;
	g->pid = row->ev.pid;
	g->supervisor_pid = row->ev.supervisor_pid;
	g->start_ns = row->ev.start_ns;
	g->end_ns = row->ev.end_ns;
	g->user_cpu_ns = row->ev.user_cpu_ns;
	g->max_rss_kb = row->ev.max_rss_kb;
	g->vol_ctxsw = row->ev.vol_ctxsw;
	g->argc = row->argc;
	for (size_t i = 0; i < row->argc && i < 64; i++)
		g->argv[i] = strdup(row->ev.argv[i]);
	return 0;
}

/* The event id (or the only one tagged tag, id NULL), if it is in db. */
static bool get_event(const char *db, const char *id, const char *tag,
		      struct got *g)
{
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct bgrun_store *store;
	bool found;

	got_free(g);
	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	if (bgrun_store_open(store, db, BGRUN_STORE_READONLY) < 0) {
		bgrun_store_close(store);
		return false;
	}
	if (id != NULL) {
		(void)bgrun_store_get(store, id, got_row, g);
	} else {
		q.tag = tag;
		ASSERT_INT(bgrun_store_query(store, &q, got_row, g), ==, 0);
	}
	bgrun_store_close(store);
	found = g->found;
	return found;
}

/*
 * Polls db (a condition with a deadline, not a sleep as synchronisation)
 * until the event has a result other than `skip` (NULL: any result).
 */
static void wait_event(const char *db, const char *id, const char *tag,
		       const char *skip, struct got *g)
{
	ULONGLONG t0 = GetTickCount64();

	for (;;) {
		if (get_event(db, id, tag, g) &&
		    (skip == NULL || strcmp(g->result, skip) != 0))
			return;
		if (GetTickCount64() - t0 > DEADLINE_MS)
			FAIL("event %s: %s after %d ms", id != NULL ? id : tag,
			     g->found ? g->result : "not in the log",
			     DEADLINE_MS);
		Sleep(10);
	}
}

/* Runs bgrun with args and stdout in a file: its exit code; *ret_out. */
static int run_bgrun_out(const char *const *args, char **ret_out,
			 char **ret_err)
{
	const char *argv[96] = { NULL };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	char *out = tmp_path("bgrun-stdout"), *err = tmp_path("bgrun-stderr");
	size_t k = 0;
	int code;

	argv[k++] = bgrun_path();
	for (size_t i = 0; args[i] != NULL && k + 1 < 96; i++)
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

/* The log of this case: BGRUN_DB, inherited by bgrun and its supervisor. */
static char *case_db(void)
{
	char *db = tmp_path("events.db");

	set_env("BGRUN_DB", db);
	return db;
}

/*
 * bgrun -w: the command's exit code comes back through the supervisor,
 * and its finish is in the log: exit code, result, duration, start and
 * end, the exact argv, the tag, the supervisor's pid.
 */
void case_cli_logged_wait(void)
{
	char *db = case_db(), *out, *err;
	struct got g = { .found = false };

	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", "--tag=t42", helper,
						   "exit", "42", NULL },
				 &out, &err), ==, 42);
	ASSERT_STR(err, "");
	ASSERT(get_event(db, NULL, "t42", &g));
	ASSERT_STR(g.result, "failed");
	ASSERT_INT(g.exit_code, ==, 42);
	ASSERT_INT(g.duration_ns, >, 0);
	ASSERT(g.start_ns > 0 && g.end_ns >= g.start_ns);
	ASSERT(g.pid > 0 && g.supervisor_pid > 0 && g.pid != g.supervisor_pid);
	ASSERT_INT(g.argc, ==, 3);
	ASSERT_STR(g.argv[0], helper);
	ASSERT_STR(g.argv[1], "exit");
	ASSERT_STR(g.argv[2], "42");

	/* Success, and the shell's exit code through -w. */
	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", "--tag=t0", helper,
						   "exit", "0", NULL },
				 &out, &err), ==, 0);
	ASSERT(get_event(db, NULL, "t0", &g));
	ASSERT_STR(g.result, "success");
	ASSERT_INT(g.exit_code, ==, 0);
	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", "--tag=sh", "-s",
						   "exit 3", NULL },
				 &out, &err), ==, 3);
	ASSERT(get_event(db, NULL, "sh", &g));
	ASSERT_INT(g.exit_code, ==, 3);
	/* Output files, opened by the supervisor for the command. */
	{
		char *o = tmp_path("out");

		ASSERT_INT(run_bgrun_out((const char *[]){ "-w", "-o", o,
							   helper, "echo",
							   "logged", NULL },
					 &out, &err), ==, 0);
		ASSERT_STR(slurp(o, NULL), "logged");
	}
	got_free(&g);
}

/*
 * Without -w: bgrun returns once the command runs (ensurestart), the
 * log says `running` with the command's pid, and the finish replaces it
 * when the command ends (here: ended from outside).
 */
void case_cli_logged_running(void)
{
	char *db = case_db(), *out, *err, id[BGRUN_EVENT_ID_MAX + 1];
	struct got g = { .found = false };
	HANDLE p;

	ASSERT_INT(run_bgrun_out((const char *[]){ "--print-id", helper,
						   "sleep", NULL },
				 &out, &err), ==, 0);
	ASSERT_STR(err, "");
	ASSERT(strlen(out) > 1 && strlen(out) <= BGRUN_EVENT_ID_MAX + 2);
	(void)snprintf(id, sizeof(id), "%.*s", (int)strcspn(out, "\r\n"), out);
	wait_event(db, id, NULL, NULL, &g);
	ASSERT_STR(g.result, "running");
	ASSERT_INT(g.pid, >, 0);
	p = OpenProcess(PROCESS_TERMINATE | SYNCHRONIZE, FALSE, (DWORD)g.pid);
	ASSERT(p != NULL);
	ASSERT_INT(WaitForSingleObject(p, 0), ==, WAIT_TIMEOUT);
	ASSERT(TerminateProcess(p, 7));
	ASSERT_INT(WaitForSingleObject(p, DEADLINE_MS), ==, WAIT_OBJECT_0);
	CloseHandle(p);
	wait_event(db, id, NULL, "running", &g);
	ASSERT_STR(g.result, "failed");
	ASSERT_INT(g.exit_code, ==, 7);
	got_free(&g);
}

/*
 * The supervisor ended while the command runs: its `running` row is
 * reported `lost` (the supervisor's pid and start time no longer name a
 * live process).
 */
void case_cli_logged_lost(void)
{
	char *db = case_db(), *out, *err, id[BGRUN_EVENT_ID_MAX + 1];
	struct got g = { .found = false };
	HANDLE sup, cmd;

	ASSERT_INT(run_bgrun_out((const char *[]){ "--print-id", helper,
						   "sleep", NULL },
				 &out, &err), ==, 0);
	(void)snprintf(id, sizeof(id), "%.*s", (int)strcspn(out, "\r\n"), out);
	wait_event(db, id, NULL, NULL, &g);
	ASSERT_STR(g.result, "running");
	sup = OpenProcess(PROCESS_TERMINATE | SYNCHRONIZE, FALSE,
			  (DWORD)g.supervisor_pid);
	cmd = OpenProcess(PROCESS_TERMINATE | SYNCHRONIZE, FALSE, (DWORD)g.pid);
	ASSERT(sup != NULL && cmd != NULL);
	ASSERT(TerminateProcess(sup, 1));
	ASSERT_INT(WaitForSingleObject(sup, DEADLINE_MS), ==, WAIT_OBJECT_0);
	CloseHandle(sup);
	ASSERT(get_event(db, id, NULL, &g));
	ASSERT_STR(g.result, "lost");
	/* logsink mark-lost stores it so: one row. */
	{
		char *dbarg = dup_printf("--db=%s", db), *lo, *le;

		ASSERT_INT(run_logsink((const char *[]){ dbarg, "mark-lost",
							 NULL }, &lo, &le),
			   ==, 0);
		ASSERT_STR(lo, "1\n");
		ASSERT_INT(run_logsink((const char *[]){ dbarg, "mark-lost",
							 NULL }, &lo, &le),
			   ==, 0);
		ASSERT_STR(lo, "0\n");
	}
	/* The command itself is not the supervisor's to end: it still runs. */
	ASSERT_INT(WaitForSingleObject(cmd, 0), ==, WAIT_TIMEOUT);
	ASSERT(TerminateProcess(cmd, 1));
	CloseHandle(cmd);
	got_free(&g);
}

/*
 * A command that cannot start: bgrun says so with its exit code (127 not
 * found, 126 not executable), and the log has its spawn_failed row.
 */
void case_cli_logged_failures(void)
{
	char *db = case_db(), *out, *err;
	struct got g = { .found = false };

	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", "--tag=nf",
						   "bgrun-no-such-program",
						   NULL }, &out, &err), ==, 127);
	ASSERT_STR(err, "bgrun: bgrun-no-such-program: command not found\n");
	ASSERT(get_event(db, NULL, "nf", &g));
	ASSERT_STR(g.result, "spawn_failed");
	/* Without -w, the record comes after bgrun's answer. */
	ASSERT_INT(run_bgrun_out((const char *[]){ "--tag=dir", tmpdir, NULL },
				 &out, &err), ==, 126);
	ASSERT(strstr(err, "cannot execute: Permission denied") != NULL);
	wait_event(db, NULL, "dir", NULL, &g);
	ASSERT_STR(g.result, "spawn_failed");
	got_free(&g);
}

/*
 * The awkward arguments through bgrun's logged mode: three quotings
 * (bgrun's command line, the supervisor's, the command's) lose nothing,
 * and the log keeps the argv exactly.
 */
void case_cli_logged_awkward_args(void)
{
	char *db = case_db(), *out = tmp_path("args");
	const char *args[64] = { "-w", "--tag=awk", helper, "args", out };
	struct got g = { .found = false };
	size_t k = 5;

	for (size_t i = 0; awkward[i] != NULL; i++)
		args[k++] = awkward[i];
	args[k] = NULL;
	ASSERT_INT(run_bgrun(args, NULL), ==, 0);
	check_args(out, awkward, 3);
	ASSERT(get_event(db, NULL, "awk", &g));
	ASSERT_INT(g.argc, ==, k - 2);
	for (size_t i = 0; awkward[i] != NULL; i++)
		if (strcmp(g.argv[3 + i], awkward[i]) != 0)
			FAIL("logged argument %d: \"%s\", want \"%s\"", (int)i,
			     g.argv[3 + i], awkward[i]);
	got_free(&g);
}

/*
 * The command's resource use in its finish: what Windows gives
 * (GetProcessTimes, the peak working set) is recorded, what it has no
 * counter for (context switches) stays unknown (NULL, never 0).
 */
void case_cli_logged_rusage(void)
{
	char *db = case_db(), *out, *err;
	struct got g = { .found = false };
	const char *wine = wine_version();

	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", "--tag=spin", helper,
						   "spin", "200", NULL },
				 &out, &err), ==, 0);
	ASSERT(get_event(db, NULL, "spin", &g));
	ASSERT_STR(g.result, "success");
	ASSERT_INT(g.vol_ctxsw, ==, BGRUN_NULL);
	/* The child measured 200 ms of its own user time before it exited. */
	if (wine != NULL && (g.user_cpu_ns == BGRUN_NULL ||
			     g.user_cpu_ns < 200 * 1000000LL))
		SKIP("wine %s gives no or partial times for another process "
		     "(recorded: %lld ns of user time, where the child counted "
		     "200 ms)", wine, (long long)g.user_cpu_ns);
	ASSERT_INT(g.user_cpu_ns, >=, 200 * 1000000LL);
	ASSERT_INT(g.max_rss_kb, >, 0);
	ASSERT_INT(g.duration_ns, >=, g.user_cpu_ns / 2);
	got_free(&g);
}

/*
 * --timeout: the supervisor ends the command's tree when the time is up
 * and records `timeout`; --print-pid prints the command's pid, the one
 * in the log. -w exits 128+15, as for a command SIGTERM ended on POSIX.
 */
void case_cli_logged_timeout(void)
{
	char *db = case_db(), *out, *err;
	struct got g = { .found = false };

	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", "--timeout=1s",
						   "--print-pid", "--tag=to",
						   helper, "sleep", NULL },
				 &out, &err), ==, 128 + 15);
	ASSERT_STR(err, "");
	ASSERT(get_event(db, NULL, "to", &g));
	ASSERT_STR(g.result, "timeout");
	ASSERT_INT(g.pid, ==, atoll(out));
	got_free(&g);
}

/*
 * A log that cannot be written (its directory would be under a file):
 * said before the launch, with the reason; the command still runs, or,
 * with --strict-log (or BGRUN_STRICT_LOG), does not (125).
 */
void case_cli_logged_unwritable(void)
{
	char *file = tmp_path("file"), *mark = tmp_path("ran"), *out, *err;

	spit(file, "not a directory");
	set_env("BGRUN_DB", tmp_path("file\\sub\\events.db"));
	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", "--strict-log",
						   helper, "echo", "x",
						   NULL }, &out, &err), ==, 125);
	ASSERT(strstr(err, "cannot be recorded; not launched (--strict-log)") !=
	       NULL);
	set_env("BGRUN_STRICT_LOG", "yes");
	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", "-o", mark, helper,
						   "echo", "x", NULL },
				 &out, &err), ==, 125);
	ASSERT(slurp(mark, NULL) == NULL);
	set_env("BGRUN_STRICT_LOG", NULL);
	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", "-o", mark, helper,
						   "echo", "ran", NULL },
				 &out, &err), ==, 0);
	ASSERT_STR(slurp(mark, NULL), "ran");
	ASSERT(strstr(err, "cannot be recorded\n") != NULL);
}

/*
 * The configuration file, %LOCALAPPDATA%\bgrun\config on Windows: its
 * [log] db is where a logged launch is recorded (BGRUN_DB unset); a
 * broken file is a usage error (2) before anything runs.
 */
void case_cli_logged_config(void)
{
	char *db = tmp_path("from-config.db"), *out, *err;
	char *text = dup_printf("[log]\ndb = %s\n", db);
	struct got g = { .found = false };

	set_env("BGRUN_DB", NULL);
	set_env("BGRUN_CONFIG", NULL);
	set_env("XDG_CONFIG_HOME", NULL);
	set_env("LOCALAPPDATA", tmpdir);
	ASSERT(CreateDirectoryW(wide(tmp_path("bgrun")), NULL));
	spit(tmp_path("bgrun\\config"), text);
	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", "--tag=cfg", helper,
						   "exit", "0", NULL },
				 &out, &err), ==, 0);
	ASSERT_STR(err, "");
	ASSERT(get_event(db, NULL, "cfg", &g));
	ASSERT_STR(g.result, "success");
	spit(tmp_path("bgrun\\config"), "[log\n");
	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", helper, "exit", "0",
						   NULL }, &out, &err), ==, 2);
	ASSERT(strstr(err, "config") != NULL);
	got_free(&g);
}
