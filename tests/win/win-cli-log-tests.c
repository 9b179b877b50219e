/* SPDX-License-Identifier: MIT */
/* win-cli-log-tests.c: bgrun's logged mode on Windows (run under wine in CI): bgrun-supervise.exe, its report, its records in the store. */

/*
 * Each case points BGRUN_DB (inherited by bgrun and its supervisor) at a
 * log of its own and reads what was recorded back with the store's
 * reader; a record that comes after bgrun's answer is polled for, with a
 * deadline.
 */

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "win-tests.h"

#include <sqlite3.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEADLINE_MS 60000

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
 * The supervisor ended while the command runs: its `running` row stays
 * `running` while the command lives, and is reported `lost` once it has
 * ended too (the supervisor's pid and start time no longer name a live
 * process, nor the command's pid and start).
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
	/* While its command lives, it is running (bgrun/store.h: lost rows). */
	ASSERT(get_event(db, id, NULL, &g));
	ASSERT_STR(g.result, "running");
	/* The command itself is not the supervisor's to end: it still runs. */
	ASSERT_INT(WaitForSingleObject(cmd, 0), ==, WAIT_TIMEOUT);
	ASSERT(TerminateProcess(cmd, 1));
	ASSERT_INT(WaitForSingleObject(cmd, DEADLINE_MS), ==, WAIT_OBJECT_0);
	CloseHandle(cmd);
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
	ASSERT(strstr(err, "cannot be recorded; it goes to the spool ") !=
	       NULL);
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

/* --- The spool and the dropped count (src/win/sink.c) --- */

/* bgrun's first line of stdout (--print-id), without its newline. */
static char *first_line(char *out)
{
	out[strcspn(out, "\r\n")] = '\0';
	return out;
}

/*
 * A log that cannot take a record (its path is a directory): the command
 * still runs, bgrun -w says the record was kept in the spool, `logsink
 * query` warns while it waits there, and the next launch that can write
 * stores it (running, then its finish) and empties the spool.
 */
void case_cli_logged_spool(void)
{
	char *db = tmp_path("events.db"), *mark = tmp_path("ran");
	char *out, *err, *id;
	struct bgrun_store *store;
	struct got g = { .found = false };
	int64_t waiting = -1, bad = -1;

	set_env("BGRUN_DB", db);
	ASSERT(CreateDirectoryW(wide(db), NULL));
	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", "--print-id", "-o",
						   mark, helper, "echo", "ran",
						   NULL }, &out, &err), ==, 0);
	id = first_line(out);
	ASSERT_STR(slurp(mark, NULL), "ran");
	ASSERT(strstr(err, "kept in the spool") != NULL);
	ASSERT(strstr(err, id) != NULL);
	ASSERT_INT(bgrun_sink_spool_count(db, &waiting, &bad), ==, 0);
	ASSERT_INT(waiting, ==, 1);
	ASSERT_INT(bad, ==, 0);

	/* A log there now (made without the sink: nothing replayed). */
	ASSERT(RemoveDirectoryW(wide(db)));
	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	ASSERT_INT(bgrun_store_open(store, db, 0), ==, 0);
	bgrun_store_close(store);
	ASSERT_INT(run_logsink((const char *[]){ "--db", db, "query", NULL },
			       &out, &err), ==, 0);
	ASSERT(strstr(err, "1 events wait in the spool") != NULL);
	ASSERT(!get_event(db, id, NULL, &g));

	/* The next writer drains it. */
	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", "--tag=next", helper,
						   "exit", "0", NULL },
				 &out, &err), ==, 0);
	ASSERT_STR(err, "");
	ASSERT(get_event(db, id, NULL, &g));
	ASSERT_STR(g.result, "success");
	ASSERT_INT(g.exit_code, ==, 0);
	ASSERT(get_event(db, NULL, "next", &g));
	ASSERT_INT(bgrun_sink_spool_count(db, &waiting, &bad), ==, 0);
	ASSERT_INT(waiting, ==, 0);
	ASSERT_INT(run_logsink((const char *[]){ "--db", db, "query", NULL },
			       &out, &err), ==, 0);
	ASSERT_STR(err, "");
	got_free(&g);
}

/*
 * Why events wait, kept beside them as on POSIX (the spool's .reason):
 * a log damaged past its header (pages 1 and 2 overwritten after the
 * 100-byte header) passes the check before a launch, and only SQLite's
 * write finds it. The recorder then keeps the event in the spool with
 * that reason: bgrun_sink_spool_reason gives it, logsink status prints
 * it, and the check of the log says the last write failed while the file
 * is the same. A new file in its place makes the reason void; the launch
 * that stores what waited removes the reason with the spool's last
 * event. Windows used to keep no reason: status said events waited, not
 * why.
 */
void case_cli_logged_spool_reason(void)
{
	char *db = tmp_path("events.db"), *damaged = tmp_path("damaged.db");
	char *reason = tmp_path("events.db.spool\\.reason");
	char *out, *err, why[600], *page;
	struct bgrun_store *store;
	int64_t waiting = -1;
	sqlite3 *sq;
	FILE *f;

	set_env("BGRUN_DB", db);
	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", helper, "exit", "0",
						   NULL }, &out, &err), ==, 0);
	ASSERT_STR(err, "");
	/* Its pages in the database file, none left in a WAL. */
	ASSERT_INT(sqlite3_open(db, &sq), ==, SQLITE_OK);
	ASSERT_INT(sqlite3_exec(sq, "PRAGMA wal_checkpoint(TRUNCATE)", NULL,
				NULL, NULL), ==, SQLITE_OK);
	ASSERT_INT(sqlite3_close(sq), ==, SQLITE_OK);
	page = malloc(8192);
	ASSERT(page != NULL);
	memset(page, 0xff, 8192);
	f = fopen(db, "r+b");
	ASSERT(f != NULL);
	ASSERT(fseek(f, 100, SEEK_SET) == 0);
	ASSERT(fwrite(page, 1, 8192, f) == 8192);
	ASSERT(fclose(f) == 0);
	free(page);

	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", helper, "exit", "0",
						   NULL }, &out, &err), ==, 0);
	ASSERT_INT(bgrun_sink_spool_count(db, &waiting, NULL), ==, 0);
	ASSERT_INT(waiting, ==, 1);
	ASSERT_INT(bgrun_sink_spool_reason(db, why, sizeof(why)), ==, -EBADMSG);
	if (strstr(why, "malformed") == NULL)
		FAIL("the spool's reason is \"%s\", not SQLite's", why);
	ASSERT_INT(bgrun_sink_check_log(db, why, sizeof(why)), ==, -EBADMSG);
	ASSERT(strstr(why, "(the last write failed)") != NULL);
	ASSERT_INT(run_logsink((const char *[]){ "--db", db, "status", NULL },
			       &out, &err), ==, 1);
	if (strstr(out, "reason:   ") == NULL ||
	    strstr(strstr(out, "reason:   "), "malformed") == NULL)
		FAIL("logsink status says no reason: %s", out);

	/* Another file in its place: the reason no longer holds for it. */
	ASSERT(MoveFileExW(wide(db), wide(damaged), 0));
	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	ASSERT_INT(bgrun_store_open(store, db, 0), ==, 0);
	bgrun_store_close(store);
	ASSERT_INT(bgrun_sink_check_log(db, why, sizeof(why)), ==, 0);
	ASSERT(GetFileAttributesW(wide(reason)) != INVALID_FILE_ATTRIBUTES);

	/* The next launch stores what waited; the reason goes with it. */
	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", helper, "exit", "0",
						   NULL }, &out, &err), ==, 0);
	ASSERT_STR(err, "");
	ASSERT_INT(bgrun_sink_spool_count(db, &waiting, NULL), ==, 0);
	ASSERT_INT(waiting, ==, 0);
	ASSERT_INT(bgrun_sink_spool_reason(db, why, sizeof(why)), ==, 0);
	ASSERT_STR(why, "");
	if (GetFileAttributesW(wide(reason)) != INVALID_FILE_ATTRIBUTES)
		FAIL("the spool is empty and its reason is still there");
}

/*
 * Neither the log nor its spool can be written (both would be under a
 * file): the command runs, bgrun -w says the record was not kept, and
 * the event is counted in the dropped-events file, once for its two
 * writes.
 */
void case_cli_logged_dropped(void)
{
	char *file = tmp_path("file"), *mark = tmp_path("ran");
	char *db = tmp_path("file\\sub\\events.db"), *out, *err, *path = NULL;
	int64_t dropped = -1;

	spit(file, "not a directory");
	set_env("BGRUN_DB", db);
	set_env("XDG_RUNTIME_DIR", tmpdir);
	ASSERT_INT(run_bgrun_out((const char *[]){ "-w", "-o", mark, helper,
						   "echo", "ran", NULL },
				 &out, &err), ==, 0);
	ASSERT_STR(slurp(mark, NULL), "ran");
	ASSERT(strstr(err, "not kept in the spool") != NULL);
	ASSERT(strstr(err, "(dropped, counted by logsink status)") != NULL);
	ASSERT_INT(bgrun_sink_dropped_path(NULL, &path), ==, 0);
	ASSERT_STR(path, tmp_path("bgrun\\dropped"));
	ASSERT_INT(bgrun_sink_dropped_count(NULL, db, &dropped), ==, 0);
	ASSERT_INT(dropped, ==, 1);
	free(path);
}
