/* SPDX-License-Identifier: MIT */
/* win-daemon-tests.c: the sink daemon of the Windows build (run under wine in CI): logsink serve on its named pipe, send, status, --stop, one daemon per pipe, the pipe's DACL, logged launches through it. */

/*
 * Each case serves a pipe of its own (\\.\pipe\bgrun-test-CASE-PID, in
 * BGRUN_SOCKET, which logsink and bgrun's supervisor inherit) and a log
 * of its own. The daemon runs as a child of the case; that it listens is
 * polled for (its HELLO through the sink, with a deadline), not slept on.
 * What wine cannot show is said, and skipped, never passed.
 */

#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <aclapi.h>
#include <sddl.h>

#include "win-tests.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEADLINE_MS 60000

/* This case's pipe, set as BGRUN_SOCKET. */
static char *case_pipe(void)
{
	char *p = dup_printf("\\\\.\\pipe\\bgrun-test-%s-%lu", case_name,
			     (unsigned long)GetCurrentProcessId());

	set_env("BGRUN_SOCKET", p);
	return p;
}

/* The daemon's HELLO, through a sink as every client sees it: 0 or -errno. */
static int hello(const char *db, const char *pipe,
		 struct bgrun_sink_daemon_status *st, char *why, size_t size)
{
	struct bgrun_sink_opts so = BGRUN_SINK_OPTS_INIT;
	struct bgrun_sink *sink;
	int r;

	so.mode = BGRUN_SINK_DAEMON;
	so.db = db;
	so.socket = pipe;
	ASSERT_INT(bgrun_sink_new(&sink), ==, 0);
	r = bgrun_sink_open(sink, &so);
	if (r >= 0)
		r = bgrun_sink_daemon_status(sink, st);
	if (why != NULL)
		(void)snprintf(why, size, "%s", bgrun_sink_errmsg(sink));
	bgrun_sink_close(sink);
	return r;
}

/* Starts `logsink serve` on pipe for db, its stderr in log; returns once it answers. */
static struct bgrun_child *start_serve(const char *db, const char *pipe,
				       const char *log)
{
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_sink_daemon_status st;
	struct bgrun_child *c = NULL;
	struct bgrun_status ended;
	ULONGLONG t0 = GetTickCount64();
	char why[512];
	int r;

	o.argv = (const char *[]){ logsink_path(), "--db", db, "serve",
				   "--socket", pipe, NULL };
	o.out.kind = BGRUN_STDIO_FILE;
	o.out.path = log;
	o.err.kind = BGRUN_STDIO_STDOUT;
	(void)spawn_or_fail(&o, &c);
	/* A condition polled with a deadline: the daemon's HELLO. */
	for (;;) {
		r = hello(db, pipe, &st, why, sizeof(why));
		if (r >= 0)
			break;
		if (bgrun_child_wait(c, 0, &ended) >= 0)
			FAIL("logsink serve exited (%d) before listening: %s",
			     ended.exit_code, slurp(log, NULL));
		if (GetTickCount64() - t0 > DEADLINE_MS)
			FAIL("logsink serve did not answer within %d ms: %s",
			     DEADLINE_MS, why);
		Sleep(10);
	}
	ASSERT_INT(st.pid, ==, (int64_t)bgrun_child_pid(c));
	return c;
}

/* serve --stop, then the daemon's own exit: 0, and its last word in log. */
static void stop_serve(struct bgrun_child *c, const char *db, const char *pipe,
		       const char *log)
{
	struct bgrun_status st;
	char *out, *err, *expect;

	ASSERT_INT(run_logsink((const char *[]){ "--db", db, "serve", "--stop",
						 "--socket", pipe, NULL },
			       &out, &err), ==, 0);
	expect = dup_printf("stopped the daemon (pid %lld) serving '%s'",
			    (long long)bgrun_child_pid(c), pipe);
	if (strstr(out, expect) == NULL)
		FAIL("serve --stop said '%s' (stderr '%s'), not '%s'", out,
		     err, expect);
	ASSERT_INT(bgrun_child_wait(c, DEADLINE_MS, &st), ==, 0);
	ASSERT(st.exited);
	ASSERT_INT(st.exit_code, ==, 0);
	ASSERT(strstr(slurp(log, NULL), "stopped: ") != NULL);
	bgrun_child_free(c);
}

/* The events of db: how many, and whether one has id. */
struct rows {
	const char *id;
	int n;
	bool found;
	char event[64];
};

static int row_cb(void *data, const struct bgrun_event_row *row)
{
	struct rows *r = data;

	r->n++;
	if (r->id != NULL && strcmp(row->ev.id, r->id) == 0) {
		r->found = true;
		(void)snprintf(r->event, sizeof(r->event), "%s",
			       row->ev.event != NULL ? row->ev.event : "");
	}
	return 0;
}

static struct rows db_rows(const char *db, const char *id)
{
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct bgrun_store *store;
	struct rows r = { .id = id };

	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	ASSERT_INT(bgrun_store_open(store, db, BGRUN_STORE_READONLY), ==, 0);
	ASSERT_INT(bgrun_store_query(store, &q, row_cb, &r), ==, 0);
	bgrun_store_close(store);
	return r;
}

/* The first line of s, cut there. */
static char *line1(char *s)
{
	s[strcspn(s, "\r\n")] = '\0';
	return s;
}

/* A log made beforehand, so that status and the daemon find one. */
static char *case_log(void)
{
	char *db = tmp_path("events.db");
	struct bgrun_store *store;

	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	ASSERT_INT(bgrun_store_open(store, db, 0), ==, 0);
	bgrun_store_close(store);
	set_env("BGRUN_DB", db);
	return db;
}

/*
 * The default pipe is the user's, by SID; send → serve → a row in the
 * store; status shows the daemon; --stop stops it; then send with
 * BGRUN_SINK=daemon spools, as on POSIX with no daemon.
 */
void case_daemon_send_status_stop(void)
{
	char *db = case_log(), *log = tmp_path("serve.log");
	char *pipe, *dflt = NULL, *out, *err, *id, *line;
	struct bgrun_sink_daemon_status st;
	struct bgrun_child *c;
	int64_t waiting = -1;
	struct rows rows;

	set_env("BGRUN_SOCKET", NULL);
	ASSERT_INT(bgrun_sink_default_socket(&dflt), ==, 0);
	if (strncmp(dflt, "\\\\.\\pipe\\bgrun-sink-S-1-", 23) != 0)
		FAIL("the default pipe is '%s', not \\\\.\\pipe\\bgrun-sink-SID",
		     dflt);
	set_env("BGRUN_SOCKET", "C:\\not-a-pipe");
	ASSERT_INT(bgrun_sink_default_socket(&dflt), ==, -EINVAL);
	pipe = case_pipe();

	ASSERT_INT(run_logsink((const char *[]){ "status", NULL }, &out, &err),
		   ==, 0);
	line = dup_printf("daemon:   not running (%s)", pipe);
	if (strstr(out, line) == NULL)
		FAIL("status without a daemon: '%s'", out);

	c = start_serve(db, pipe, log);
	set_env("BGRUN_SINK", "daemon");
	ASSERT_INT(run_logsink((const char *[]){ "send", "--event=hello",
						 "--message=through the pipe",
						 "--print-id", NULL },
			       &out, &err), ==, 0);
	ASSERT_STR(err, "");
	id = line1(out);
	rows = db_rows(db, id);
	ASSERT(rows.found);
	ASSERT_STR(rows.event, "hello");
	ASSERT_INT(rows.n, ==, 1);
	/* The daemon's own count: it wrote the row, nothing spooled. */
	ASSERT_INT(hello(db, pipe, &st, NULL, 0), ==, 0);
	ASSERT_INT(st.events, ==, 1);
	ASSERT_INT(bgrun_sink_spool_count(db, &waiting, NULL), ==, 0);
	ASSERT_INT(waiting, ==, 0);

	ASSERT_INT(run_logsink((const char *[]){ "status", NULL }, &out, &err),
		   ==, 0);
	line = dup_printf("daemon:   answers, pid %lld (%s)",
			  (long long)bgrun_child_pid(c), pipe);
	if (strstr(out, line) == NULL)
		FAIL("status with the daemon: '%s', not '%s'", out, line);

	stop_serve(c, db, pipe, log);
	ASSERT_INT(run_logsink((const char *[]){ "serve", "--stop", NULL },
			       &out, &err), ==, 0);
	ASSERT(strstr(out, "no daemon is serving") != NULL);

	/* No daemon: BGRUN_SINK=daemon keeps it in the spool (exit 1). */
	ASSERT_INT(run_logsink((const char *[]){ "send", "--event=later", NULL },
			       &out, &err), ==, 1);
	if (strstr(err, "kept in the spool") == NULL)
		FAIL("send without the daemon said '%s'", err);
	ASSERT_INT(bgrun_sink_spool_count(db, &waiting, NULL), ==, 0);
	ASSERT_INT(waiting, ==, 1);
	/* The default (try): the store, which drains the spool too. */
	set_env("BGRUN_SINK", NULL);
	ASSERT_INT(run_logsink((const char *[]){ "send", "--event=direct", NULL },
			       &out, &err), ==, 0);
	ASSERT_INT(db_rows(db, NULL).n, ==, 3);
}

/*
 * One daemon per pipe: a second serve is refused (its lock, a named
 * mutex, which wine keeps as Windows does). The pipe's own guard,
 * FILE_FLAG_FIRST_PIPE_INSTANCE, is looked at too: wine does not
 * enforce it, and that check is then said to be skipped.
 */
void case_daemon_second_serve(void)
{
	char *db = case_log(), *log = tmp_path("serve.log"), *pipe = case_pipe();
	char *out, *err;
	struct bgrun_child *c = start_serve(db, pipe, log);
	HANDLE h;

	ASSERT_INT(run_logsink((const char *[]){ "serve", "--socket", pipe,
						 NULL },
			       &out, &err), ==, 1);
	if (strstr(err, "another logsink serve is already serving") == NULL)
		FAIL("a second serve said '%s'", err);

	h = CreateNamedPipeW(wide(pipe),
			     PIPE_ACCESS_DUPLEX | FILE_FLAG_FIRST_PIPE_INSTANCE,
			     PIPE_TYPE_BYTE, PIPE_UNLIMITED_INSTANCES, 4096,
			     4096, 0, NULL);
	if (h != INVALID_HANDLE_VALUE) {
		(void)CloseHandle(h);
		if (wine_version() == NULL)
			FAIL("FILE_FLAG_FIRST_PIPE_INSTANCE made a second "
			     "server of a served pipe");
		fprintf(stderr, "%s: FILE_FLAG_FIRST_PIPE_INSTANCE: not "
			"checked: wine %s does not enforce it (a second server "
			"of the pipe was made); the lock refused the second "
			"serve\n", case_name, wine_version());
	}
	stop_serve(c, db, pipe, log);
}

/*
 * The pipe lets our user alone in: its DACL, read back through several
 * connections at once (more than libuv's 4 first instances, so that
 * instances made later are read too), is one ACE granting our SID.
 */
void case_daemon_dacl(void)
{
	char *db = case_log(), *log = tmp_path("serve.log"), *pipe = case_pipe();
	struct bgrun_child *c = start_serve(db, pipe, log);
	union {
		TOKEN_USER user;
		BYTE bytes[SECURITY_MAX_SID_SIZE + sizeof(TOKEN_USER)];
	} me;
	HANDLE token, h[6];
	DWORD len;

	ASSERT(OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token));
	ASSERT(GetTokenInformation(token, TokenUser, &me, sizeof(me), &len));
	(void)CloseHandle(token);
	for (int i = 0; i < 6; i++) {
		ULONGLONG t0 = GetTickCount64();

		/* Busy while the daemon makes the next instance: wait for it. */
		for (;;) {
			h[i] = CreateFileW(wide(pipe),
					   GENERIC_READ | GENERIC_WRITE |
						   READ_CONTROL,
					   0, NULL, OPEN_EXISTING, 0, NULL);
			if (h[i] != INVALID_HANDLE_VALUE ||
			    GetLastError() != ERROR_PIPE_BUSY)
				break;
			if (GetTickCount64() - t0 > DEADLINE_MS)
				FAIL("connection %d: the pipe stayed busy", i);
			(void)WaitNamedPipeW(wide(pipe), 1000);
		}
		if (h[i] == INVALID_HANDLE_VALUE)
			FAIL("connection %d: error %lu", i,
			     (unsigned long)GetLastError());
	}
	for (int i = 0; i < 6; i++) {
		PSECURITY_DESCRIPTOR sd = NULL;
		ACL_SIZE_INFORMATION info;
		ACCESS_ALLOWED_ACE *ace;
		PACL dacl = NULL;
		DWORD e;

		e = GetSecurityInfo(h[i], SE_KERNEL_OBJECT,
				    DACL_SECURITY_INFORMATION, NULL, NULL,
				    &dacl, NULL, &sd);
		if (e != ERROR_SUCCESS)
			FAIL("connection %d: GetSecurityInfo: error %lu", i,
			     (unsigned long)e);
		if (dacl == NULL)
			FAIL("connection %d: the pipe has no DACL (anyone may "
			     "open it)", i);
		ASSERT(GetAclInformation(dacl, &info, sizeof(info),
					 AclSizeInformation));
		ASSERT_INT(info.AceCount, ==, 1);
		ASSERT(GetAce(dacl, 0, (void **)&ace));
		ASSERT_INT(ace->Header.AceType, ==, ACCESS_ALLOWED_ACE_TYPE);
		ASSERT(EqualSid((PSID)&ace->SidStart, me.user.User.Sid));
		(void)LocalFree(sd);
	}
	for (int i = 0; i < 6; i++)
		(void)CloseHandle(h[i]);
	stop_serve(c, db, pipe, log);
}

/*
 * Another user's client is refused by the daemon, and another user's
 * daemon by the client (each checks the other's token): that needs a
 * second account's process, which this test cannot make.
 */
void case_daemon_other_user(void)
{
	if (wine_version() != NULL)
		SKIP("a process of another user cannot be made under wine "
		     "(wine %s runs every process as one user): the daemon's "
		     "refusal of another user's client and the client's "
		     "refusal of another user's daemon are not checked",
		     wine_version());
	SKIP("needs a second account's process (LogonUser with its "
	     "password): the refusals of another user are not checked");
}

/*
 * bgrun's logged launches with BGRUN_SINK=daemon: the supervisor's
 * records go through the daemon (its count grows, nothing is spooled);
 * a client's check of the database: a daemon writing another log is
 * not used.
 */
void case_daemon_supervised(void)
{
	char *db = case_log(), *log = tmp_path("serve.log"), *pipe = case_pipe();
	char *other = tmp_path("other.db"), *why = NULL;
	const char *bgrun_args[] = { bgrun_path(), "-w", "--print-id", helper,
				     "exit", "3", NULL };
	struct bgrun_spawn_opts o = BGRUN_SPAWN_OPTS_INIT;
	struct bgrun_sink_daemon_status st;
	struct bgrun_child *c = start_serve(db, pipe, log);
	char *out = tmp_path("bgrun-out"), *err = tmp_path("bgrun-err"), *id;
	struct bgrun_store *store;
	int64_t waiting = -1;
	struct rows rows;
	char msg[512];

	set_env("BGRUN_SINK", "daemon");
	o.argv = bgrun_args;
	o.out.kind = BGRUN_STDIO_FILE;
	o.out.path = out;
	o.err.kind = BGRUN_STDIO_FILE;
	o.err.path = err;
	ASSERT_INT(run(&o, NULL), ==, 3);
	why = slurp(err, NULL);
	ASSERT_STR(why, "");
	id = line1(slurp(out, NULL));
	rows = db_rows(db, id);
	ASSERT(rows.found);
	ASSERT_INT(hello(db, pipe, &st, NULL, 0), ==, 0);
	if (st.events < 1)
		FAIL("the daemon stored %lld events", (long long)st.events);
	ASSERT_INT(bgrun_sink_spool_count(db, &waiting, NULL), ==, 0);
	ASSERT_INT(waiting, ==, 0);

	/* A client of another log does not use this daemon. */
	ASSERT_INT(bgrun_store_new(&store), ==, 0);
	ASSERT_INT(bgrun_store_open(store, other, 0), ==, 0);
	bgrun_store_close(store);
	ASSERT_INT(hello(other, pipe, &st, msg, sizeof(msg)), ==, -EXDEV);
	if (strstr(msg, "the daemon writes") == NULL)
		FAIL("another log's client was told '%s'", msg);
	set_env("BGRUN_SINK", NULL);
	stop_serve(c, db, pipe, log);
}
