/* SPDX-License-Identifier: MIT */
/* test-store-query.c: store-tests cases for migrations, queries, statistics, pruning and concurrent writers. */

#include "test-store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MS INT64_C(1000000)
#define SEC INT64_C(1000000000)
#define T0 INT64_C(1700000000000000000)

/* The schema of version 1, frozen as it was released. */
static const char v1_schema[] =
	"CREATE TABLE events ("
	"id TEXT PRIMARY KEY NOT NULL, "
	"event TEXT NOT NULL, source TEXT, host TEXT, uid INTEGER, "
	"user TEXT, boot_id TEXT, pid INTEGER, supervisor_pid INTEGER, "
	"argv TEXT, display TEXT, cwd TEXT, tag TEXT, "
	"start_ns INTEGER, end_ns INTEGER, duration_ns INTEGER, "
	"exit_code INTEGER, signal INTEGER, core_dumped INTEGER, "
	"result TEXT, stdout_path TEXT, stderr_path TEXT, message TEXT, "
	"recorded_ns INTEGER NOT NULL, "
	"time_ns INTEGER GENERATED ALWAYS AS "
	"(coalesce(start_ns, recorded_ns)) VIRTUAL"
	") STRICT;"
	"PRAGMA application_id = 1650946677;"
	"PRAGMA user_version = 1;";

void case_migrate_v1(void)
{
	static const char *const want_argv[] = { "ls", "-l", "\xff", NULL };
	char *db = t_path(t_tmpdir(), "events.db");
	struct t_rows rows = { 0 };
	struct bgrun_store *s = NULL;
	struct bgrun_event ev;
	sqlite3 *raw;

	raw = t_sql_open_rw(db);
	t_sql_exec(raw, v1_schema);
	t_sql_exec(raw, "INSERT INTO events(id, event, source, uid, argv, "
			"display, cwd, start_ns, duration_ns, exit_code, result, "
			"recorded_ns) VALUES('11111111-2222-4333-8444-555555555555',"
			" 'commandfinish', 'bgrun', 1000, "
			"'[\"ls\",\"-l\",{\"hex\":\"FF\"}]', 'ls -l', '/old', "
			"1000, 20, 0, 'success', 2000)");
	sqlite3_close(raw);

	/* Read-only never migrates: it says so. */
	free(t_open_error(db, BGRUN_STORE_READONLY, -EPROTO));
	ASSERT_OK(t_open(db, 0, &s));
	t_get(s, "11111111", &rows);
	ASSERT_STR_EQ(rows.ev[0].id, "11111111-2222-4333-8444-555555555555");
	ASSERT_STR_EQ(rows.ev[0].display, "ls -l");
	ASSERT_STR_EQ(rows.ev[0].cwd, "/old");
	ASSERT_EQ(rows.ev[0].uid, 1000);
	ASSERT_EQ(rows.ev[0].start_ns, 1000);
	ASSERT_EQ(rows.ev[0].duration_ns, 20);
	ASSERT_EQ(rows.ev[0].exit_code, 0);
	ASSERT_EQ(rows.ev[0].supervisor_start, BGRUN_NULL);
	ASSERT_EQ(rows.ev[0].max_rss_kb, BGRUN_NULL);
	ASSERT(rows.ev[0].options_json == NULL);
	ASSERT_EQ(rows.recorded_ns[0], 2000);
	check_argv(rows.ev[0].argv, want_argv);
	t_rows_free(&rows);

	/* The migrated store takes new events with the new columns. */
	bgrun_event_init(&ev, "commandfinish", "bgrun");
	ev.supervisor_start = 5;
	ev.max_rss_kb = 6;
	ev.options_json = "{}";
	ASSERT_EQ(bgrun_store_put(s, &ev), 1);
	bgrun_store_close(s);

	raw = t_sql_open(db);
	ASSERT_EQ(t_sql_int(raw, "PRAGMA user_version", NULL), 3);
	ASSERT_EQ(t_sql_int(raw, "PRAGMA application_id", NULL), 0x62677275);
	ASSERT_STR_EQ(t_sql_text(raw, "PRAGMA journal_mode"), "wal");
	ASSERT_EQ(t_sql_int(raw, "SELECT count(*) FROM events", NULL), 2);
	ASSERT_EQ(t_sql_int(raw, "SELECT count(*) FROM sqlite_schema WHERE "
				 "type = 'index' AND name LIKE 'events_%'",
			    NULL), 6);
	/* The old row was numbered for forwarding, before the new one. */
	ASSERT_EQ(t_sql_int(raw, "SELECT count(DISTINCT changed_seq) FROM "
				 "events WHERE changed_seq > 0", NULL), 2);
	ASSERT_EQ(t_sql_int(raw, "SELECT changed_seq FROM events WHERE id = "
				 "'11111111-2222-4333-8444-555555555555'",
			    NULL), 1);
	ASSERT_EQ(t_sql_int(raw, "SELECT value FROM counters", NULL), 2);
	ASSERT_STR_EQ(t_sql_text(raw, "PRAGMA integrity_check"), "ok");
	sqlite3_close(raw);
	ASSERT_OK(t_open(db, BGRUN_STORE_READONLY, &s));
	bgrun_store_close(s);
	free(db);
}

/*
 * Fails unless the events table of db has a column for each field of the
 * event-field table (src/event-fields.h), declared as the table says, and
 * no column besides those and the store's own (recorded_ns, time_ns): the
 * schema's migrations are literal SQL, and this is what catches drift.
 */
static void check_columns(const char *db)
{
	sqlite3 *raw = t_sql_open(db);
	const char *name, *column, *sql;
	sqlite3_stmt *stmt = NULL;
	size_t i;

	ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT type, \"notnull\", pk "
				     "FROM pragma_table_xinfo('events') "
				     "WHERE name = ?1", -1, &stmt, NULL),
		  SQLITE_OK);
	for (i = 0; bgrun__test_control(BGRUN__TEST_EVENT_FIELD, i, &name,
					&column, &sql) == 0; i++) {
		const char *type;
		size_t n;

		(void)sqlite3_bind_text(stmt, 1, column, -1, SQLITE_STATIC);
		if (sqlite3_step(stmt) != SQLITE_ROW)
			FAIL("%s: no column %s for the field %s", db, column,
			     name);
		type = (const char *)sqlite3_column_text(stmt, 0);
		n = strcspn(sql, " ");
		if (type == NULL || strlen(type) != n ||
		    strncmp(type, sql, n) != 0)
			FAIL("%s: column %s is %s, the field table says %s",
			     db, column, type ? type : "(none)", sql);
		ASSERT_EQ(sqlite3_column_int(stmt, 1) != 0,
			  strstr(sql, "NOT NULL") != NULL);
		ASSERT_EQ(sqlite3_column_int(stmt, 2) != 0,
			  strstr(sql, "PRIMARY KEY") != NULL);
		(void)sqlite3_reset(stmt);
	}
	ASSERT_EQ(i, bgrun_wire_n_fields);
	sqlite3_finalize(stmt);

	ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT name FROM "
				     "pragma_table_xinfo('events')", -1,
				     &stmt, NULL), SQLITE_OK);
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		const char *have = (const char *)sqlite3_column_text(stmt, 0);
		/* The store's own columns, not fields of an event. */
		bool known = strcmp(have, "recorded_ns") == 0 ||
			     strcmp(have, "time_ns") == 0 ||
			     strcmp(have, "changed_seq") == 0;

		for (i = 0; !known &&
			    bgrun__test_control(BGRUN__TEST_EVENT_FIELD, i,
						&name, &column, &sql) == 0; i++)
			known = strcmp(have, column) == 0;
		if (!known)
			FAIL("%s: column %s is in no field of the field table",
			     db, have);
	}
	sqlite3_finalize(stmt);
	sqlite3_close(raw);
}

void case_schema_columns(void)
{
	char *dir = t_tmpdir();
	char *fresh = t_path(dir, "fresh.db"), *old = t_path(dir, "old.db");
	struct bgrun_store *s = NULL;
	sqlite3 *raw;

	ASSERT_OK(t_open(fresh, 0, &s));
	bgrun_store_close(s);
	check_columns(fresh);

	raw = t_sql_open_rw(old);
	t_sql_exec(raw, v1_schema);
	sqlite3_close(raw);
	ASSERT_OK(t_open(old, 0, &s));
	bgrun_store_close(s);
	check_columns(old);
	free(fresh);
	free(old);
}

/* The message fields ("e0" ...) of the rows q selects, in order. */
static char *names(struct bgrun_store *s, const struct bgrun_query *q)
{
	struct t_rows rows = { 0 };
	char buf[256] = "";
	size_t used = 0;
	int r;

	r = bgrun_store_query(s, q, t_collect, &rows);
	if (r < 0)
		FAIL("query: %s (%s)", bgrun_strerror(r), bgrun_store_errmsg(s));
	for (size_t i = 0; i < rows.n; i++)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s",
					 i ? " " : "", rows.ev[i].message);
	t_rows_free(&rows);
	return t_printf("%s", buf);
}

#define ASSERT_NAMES(q, want) \
	do { \
		char *got_ = names(s, q); \
		ASSERT_STR_EQ(got_, want); \
		free(got_); \
	} while (0)

void case_query_filters(void)
{
	static const char *const pull[] = { "hg", "pull", NULL };
	static const char *const push[] = { "hg", "push", NULL };
	static const char *const make[] = { "make", "all", NULL };
	static const char *const sleep10[] = { "sleep", "10", NULL };
	static const char *const ok[] = { "true", NULL };
	static const struct {
		const char *const *argv;
		const char *event, *source, *tag, *cwd, *result;
		int64_t start;
	} spec[] = {
		{ pull, "commandfinish", "bgrun", "a", "/r1", "success", T0 },
		{ pull, "commandfinish", "bgrun", "a", "/r2", "failed", T0 + SEC },
		{ push, "commandfinish", "hg", "b", "/r1", "success", T0 + 2 * SEC },
		{ make, "commandfinish", "bgrun", NULL, "/r1", "signaled", T0 + 3 * SEC },
		{ NULL, "develwarn", "hg", NULL, NULL, NULL, BGRUN_NULL },
		{ sleep10, "commandfinish", "bgrun", NULL, "/r3", "running", T0 + 5 * SEC },
		{ ok, "commandfinish", "bgrun", NULL, "/r3", "success", T0 },
	};
	static const char *const msg[] = { "e0", "e1", "e2", "e3", "e4", "e5", "e6" };
	char *db = t_path(t_tmpdir(), "events.db");
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct t_rows rows = { 0 };
	struct bgrun_store *s;
	struct bgrun_event ev;

	ASSERT_OK(t_open(db, 0, &s));
	for (size_t i = 0; i < sizeof(spec) / sizeof(spec[0]); i++) {
		bgrun_event_init(&ev, spec[i].event, spec[i].source);
		ev.argv = spec[i].argv;
		ev.tag = spec[i].tag;
		ev.cwd = spec[i].cwd;
		ev.result = spec[i].result;
		ev.start_ns = spec[i].start;
		ev.message = msg[i];
		ev.supervisor_pid = getpid();
		ev.supervisor_start = bgrun_proc_starttime(getpid());
		ASSERT_EQ(bgrun_store_put(s, &ev), 1);
	}
	/* e4 has no start time: its time is now, the newest. e6 and e0
	 * share a time: the later written comes first. */
	ASSERT_NAMES(&q, "e4 e5 e3 e2 e1 e6 e0");
	q.since_ns = T0 + SEC;
	q.until_ns = T0 + 3 * SEC;
	ASSERT_NAMES(&q, "e2 e1");
	q.until_ns = BGRUN_NULL;
	q.since_ns = T0 + 2 * SEC;
	ASSERT_NAMES(&q, "e4 e5 e3 e2");
	q.since_ns = BGRUN_NULL;
	q.until_ns = T0 + SEC;
	ASSERT_NAMES(&q, "e6 e0");
	q = (struct bgrun_query)BGRUN_QUERY_INIT;
	q.failed = true;
	ASSERT_NAMES(&q, "e3 e1");
	q.tag = "a";
	ASSERT_NAMES(&q, "e1");
	q = (struct bgrun_query)BGRUN_QUERY_INIT;
	q.result = "success";
	ASSERT_NAMES(&q, "e2 e6 e0");
	q.result = "running";
	ASSERT_NAMES(&q, "e5");
	q.result = "lost";
	ASSERT_NAMES(&q, "");
	q = (struct bgrun_query)BGRUN_QUERY_INIT;
	q.cmd_glob = "hg p*";
	ASSERT_NAMES(&q, "e2 e1 e0");
	q.cmd_glob = "make*";
	ASSERT_NAMES(&q, "e3");
	q.cmd_glob = "*PULL*";
	ASSERT_NAMES(&q, "");
	q = (struct bgrun_query)BGRUN_QUERY_INIT;
	q.tag = "a";
	ASSERT_NAMES(&q, "e1 e0");
	q.tag = NULL;
	q.cwd = "/r1";
	ASSERT_NAMES(&q, "e3 e2 e0");
	q.cwd = NULL;
	q.source = "hg";
	ASSERT_NAMES(&q, "e4 e2");
	q.event = "commandfinish";
	ASSERT_NAMES(&q, "e2");
	q.source = NULL;
	q.event = "develwarn";
	ASSERT_NAMES(&q, "e4");
	q = (struct bgrun_query)BGRUN_QUERY_INIT;
	q.limit = 2;
	ASSERT_NAMES(&q, "e4 e5");
	q.failed = true;
	q.limit = 1;
	ASSERT_NAMES(&q, "e3");
	q = (struct bgrun_query)BGRUN_QUERY_INIT;
	q.limit = -1;
	ASSERT_EQ(bgrun_store_query(s, &q, t_collect, &rows), -EINVAL);
	/* A callback's non-zero value stops the read and is returned. */
	q.limit = 0;
	rows.stop_at = 2;
	ASSERT_EQ(bgrun_store_query(s, &q, t_collect, &rows), 7);
	ASSERT_EQ(rows.n, 2);
	t_rows_free(&rows);
	bgrun_store_close(s);

	/* The same through a read-only store. */
	ASSERT_OK(t_open(db, BGRUN_STORE_READONLY, &s));
	q.source = "hg";
	ASSERT_NAMES(&q, "e4 e2");
	bgrun_store_close(s);
	free(db);
}

void case_get_prefix(void)
{
	/* Not ids a UUID could hold a part of: letters past hex digits. */
	static const char *const ids[] = { "pqr-1", "pqr-2", "pqz", "x" };
	char *db = t_path(t_tmpdir(), "events.db");
	struct t_rows rows = { 0 };
	struct bgrun_store *s;
	struct bgrun_event ev, uuid;
	char prefix[9];

	ASSERT_OK(t_open(db, 0, &s));
	for (size_t i = 0; i < 4; i++) {
		bgrun_event_init(&ev, "exthook", "clone-hook");
		strcpy(ev.id, ids[i]);
		ASSERT_EQ(bgrun_store_put(s, &ev), 1);
	}
	bgrun_event_init(&uuid, "exthook", "clone-hook");
	ASSERT_EQ(bgrun_store_put(s, &uuid), 1);
	memcpy(prefix, uuid.id + 28, 8);
	prefix[8] = '\0';
	/* Its end, as logsink query shows it; its start is its time. */
	t_get(s, prefix, &rows);
	ASSERT_STR_EQ(rows.ev[0].id, uuid.id);
	/* Any part of it: the start of the short id, the middle of the id. */
	prefix[4] = '\0';
	t_get(s, prefix, &rows);
	ASSERT_STR_EQ(rows.ev[0].id, uuid.id);
	memcpy(prefix, uuid.id + 19, 4);
	t_get(s, prefix, &rows);
	ASSERT_STR_EQ(rows.ev[0].id, uuid.id);
	t_get(s, "r-2", &rows);
	ASSERT_STR_EQ(rows.ev[0].id, "pqr-2");
	t_get(s, "qr-2", &rows);
	ASSERT_STR_EQ(rows.ev[0].id, "pqr-2");
	t_get(s, "pqz", &rows);
	ASSERT_STR_EQ(rows.ev[0].id, "pqz");
	t_get(s, "pqr-2", &rows);
	ASSERT_STR_EQ(rows.ev[0].id, "pqr-2");
	t_rows_free(&rows);
	ASSERT_EQ(bgrun_store_get(s, "pqr", t_collect, &rows), -EEXIST);
	ASSERT(strstr(bgrun_store_errmsg(s), "ambiguous") != NULL);
	ASSERT_EQ(bgrun_store_get(s, "pq", t_collect, &rows), -EEXIST);
	/* Both pqr-1 and pqr-2 hold "r-" (and no UUID does). */
	ASSERT_EQ(bgrun_store_get(s, "r-", t_collect, &rows), -EEXIST);
	ASSERT_EQ(bgrun_store_get(s, "zz", t_collect, &rows), -ENOENT);
	ASSERT_EQ(bgrun_store_get(s, "a*", t_collect, &rows), -EINVAL);
	ASSERT_EQ(bgrun_store_get(s, "a?", t_collect, &rows), -EINVAL);
	ASSERT_EQ(bgrun_store_get(s, "", t_collect, &rows), -EINVAL);
	ASSERT_EQ(rows.n, 0);
	/* An exact id wins over longer ids that contain it. */
	bgrun_event_init(&ev, "exthook", "clone-hook");
	strcpy(ev.id, "pq");
	ASSERT_EQ(bgrun_store_put(s, &ev), 1);
	t_get(s, "pq", &rows);
	ASSERT_STR_EQ(rows.ev[0].id, "pq");
	t_rows_free(&rows);
	bgrun_store_close(s);
	free(db);
}

struct stats_seen {
	int n;
	int stop_at;
	char display[4][32];
	struct bgrun_stats_row row[4];
};

static int collect_stats(void *data, const struct bgrun_stats_row *row)
{
	struct stats_seen *seen = data;

	if (++seen->n == seen->stop_at)
		return 5;
	if (seen->n > 4)
		FAIL("too many stats rows");
	seen->row[seen->n - 1] = *row;
	(void)snprintf(seen->display[seen->n - 1], 32, "%s",
		       row->display ? row->display : "(null)");
	return 0;
}

static void check_stats(const struct stats_seen *seen, int i,
			const char *display, int64_t runs, int64_t failures,
			int64_t p50, int64_t p95, int64_t max)
{
	ASSERT_STR_EQ(seen->display[i], display);
	ASSERT_EQ(seen->row[i].runs, runs);
	ASSERT_EQ(seen->row[i].failures, failures);
	ASSERT_EQ(seen->row[i].p50_ns, p50);
	ASSERT_EQ(seen->row[i].p95_ns, p95);
	ASSERT_EQ(seen->row[i].max_ns, max);
}

void case_stats(void)
{
	static const char *const build[] = { "build", NULL };
	static const char *const test[] = { "test", NULL };
	static const int64_t test_ms[] = { 5, 1, 3 };
	char *db = t_path(t_tmpdir(), "events.db");
	struct bgrun_query q = BGRUN_QUERY_INIT;
	struct bgrun_event evs[106];
	struct stats_seen seen = { 0 };
	struct bgrun_store *s;
	size_t n = 0;

	ASSERT_OK(t_open(db, 0, &s));
	/* build: durations 1..100 ms (written in a shuffled order), every
	 * tenth run failed. */
	for (int i = 1; i <= 100; i++) {
		int k = (i * 37) % 101; /* a permutation of 1..100 */

		bgrun_event_init(&evs[n], "commandfinish", "bgrun");
		evs[n].argv = build;
		evs[n].start_ns = T0 + k * SEC;
		evs[n].duration_ns = k * MS;
		evs[n].result = k % 10 == 0 ? "failed" : "success";
		n++;
	}
	/* build, still running: not counted; lost: a failure without time. */
	bgrun_event_init(&evs[n], "commandfinish", "bgrun");
	evs[n].argv = build;
	evs[n].start_ns = T0;
	evs[n].result = "running";
	evs[n].supervisor_pid = getpid();
	evs[n].supervisor_start = bgrun_proc_starttime(getpid());
	n++;
	bgrun_event_init(&evs[n], "commandfinish", "bgrun");
	evs[n].argv = build;
	evs[n].start_ns = T0;
	evs[n].result = "running";
	evs[n].boot_id = "another boot";
	n++;
	for (int i = 0; i < 3; i++) {
		bgrun_event_init(&evs[n], "commandfinish", "bgrun");
		evs[n].argv = test;
		evs[n].start_ns = T0 + 100 * SEC;
		evs[n].duration_ns = test_ms[i] * MS;
		evs[n].result = "success";
		n++;
	}
	bgrun_event_init(&evs[n], "develwarn", "hg");
	evs[n].start_ns = T0 + 100 * SEC;
	n++;
	ASSERT_EQ(bgrun_store_put_batch(s, evs, n), (int)n);

	ASSERT_OK(bgrun_store_stats(s, &q, collect_stats, &seen));
	ASSERT_EQ(seen.n, 3);
	check_stats(&seen, 0, "(null)", 1, 0, BGRUN_NULL, BGRUN_NULL, BGRUN_NULL);
	check_stats(&seen, 1, "build", 101, 11, 50 * MS, 95 * MS, 100 * MS);
	check_stats(&seen, 2, "test", 3, 0, 3 * MS, 5 * MS, 5 * MS);

	/* Over a window: build runs 51..100. */
	memset(&seen, 0, sizeof(seen));
	q.since_ns = T0 + 51 * SEC;
	q.event = "commandfinish";
	q.cmd_glob = "b*";
	ASSERT_OK(bgrun_store_stats(s, &q, collect_stats, &seen));
	ASSERT_EQ(seen.n, 1);
	check_stats(&seen, 0, "build", 50, 5, 75 * MS, 98 * MS, 100 * MS);

	memset(&seen, 0, sizeof(seen));
	seen.stop_at = 2;
	q = (struct bgrun_query)BGRUN_QUERY_INIT;
	ASSERT_EQ(bgrun_store_stats(s, &q, collect_stats, &seen), 5);
	bgrun_store_close(s);
	free(db);
}

void case_prune(void)
{
	static const int64_t starts[] = { -10, -5, 0, 5 };
	char *db = t_path(t_tmpdir(), "events.db");
	struct bgrun_event evs[7];
	struct bgrun_status st;
	struct bgrun_store *s;
	int64_t deleted = -1, dead_start;
	pid_t dead;
	sqlite3 *raw;

	t_spawn_exited(&dead, &dead_start, &st);
	ASSERT_OK(t_open(db, 0, &s));
	for (int i = 0; i < 4; i++) {
		bgrun_event_init(&evs[i], "commandfinish", "bgrun");
		evs[i].start_ns = T0 + starts[i] * SEC;
		evs[i].result = "success";
	}
	/* Old but running (alive): kept. Old and lost: deleted. */
	bgrun_event_init(&evs[4], "commandfinish", "bgrun");
	evs[4].start_ns = T0 - 20 * SEC;
	evs[4].result = "running";
	evs[4].supervisor_pid = getpid();
	evs[4].supervisor_start = bgrun_proc_starttime(getpid());
	bgrun_event_init(&evs[5], "commandfinish", "bgrun");
	evs[5].start_ns = T0 - 20 * SEC;
	evs[5].result = "running";
	evs[5].supervisor_pid = dead;
	evs[5].supervisor_start = dead_start;
	/* No start time: its time is when it was written (now). */
	bgrun_event_init(&evs[6], "uiblocked", "hg");
	ASSERT_EQ(bgrun_store_put_batch(s, evs, 7), 7);

	ASSERT_OK(bgrun_store_prune(s, T0, &deleted));
	ASSERT_EQ(deleted, 3);
	ASSERT_OK(bgrun_store_prune(s, T0, &deleted));
	ASSERT_EQ(deleted, 0);
	ASSERT_EQ(bgrun_store_prune(s, BGRUN_NULL, &deleted), -EINVAL);
	bgrun_store_close(s);

	raw = t_sql_open(db);
	ASSERT_EQ(t_sql_int(raw, "SELECT count(*) FROM events", NULL), 4);
	ASSERT_EQ(t_sql_int(raw, "SELECT count(*) FROM events WHERE id = ?1",
			    evs[4].id), 1);
	ASSERT_EQ(t_sql_int(raw, "SELECT count(*) FROM events WHERE id = ?1",
			    evs[6].id), 1);
	ASSERT_EQ(t_sql_int(raw, "SELECT min(start_ns) FROM events WHERE "
				 "result = 'success'", NULL), T0);
	sqlite3_close(raw);
	free(db);
}

#define WRITERS 16
#define PUTS 100

void case_concurrent_writers(void)
{
	char *dir = t_tmpdir(), *db = t_printf("%s/new/events.db", dir);
	char count[16];
	const char *argv[] = { t_self(), "writer", db, count, NULL };
	struct bgrun_child *children[WRITERS];
	struct bgrun_status st;
	int fds[2];
	sqlite3 *raw;

	(void)snprintf(count, sizeof(count), "%d", PUTS);
	ASSERT_SYS(pipe2(fds, O_CLOEXEC));
	for (int i = 0; i < WRITERS; i++) {
		struct bgrun_spawn_opts opts = BGRUN_SPAWN_OPTS_INIT;

		opts.argv = argv;
		opts.in.kind = BGRUN_STDIO_FD;
		opts.in.fd = fds[0];
		opts.err.kind = BGRUN_STDIO_INHERIT;
		ASSERT_OK(bgrun_spawn(&opts, &children[i]));
	}
	/* All start at once, on a database that does not exist yet. */
	ASSERT_SYS(close(fds[0]));
	ASSERT_SYS(close(fds[1]));
	for (int i = 0; i < WRITERS; i++) {
		ASSERT_OK(bgrun_child_wait(children[i], 120000, &st));
		if (!st.exited || st.exit_code != 0)
			FAIL("writer %d: exit %d signal %d", i, st.exit_code,
			     st.signal);
		bgrun_child_free(children[i]);
	}
	raw = t_sql_open(db);
	ASSERT_EQ(t_sql_int(raw, "SELECT count(*) FROM events", NULL),
		  WRITERS * PUTS);
	ASSERT_EQ(t_sql_int(raw, "SELECT count(DISTINCT supervisor_pid) "
				 "FROM events", NULL), WRITERS);
	ASSERT_EQ(t_sql_int(raw, "PRAGMA user_version", NULL), 3);
	ASSERT_STR_EQ(t_sql_text(raw, "PRAGMA integrity_check"), "ok");
	sqlite3_close(raw);
	free(db);
}

struct t_changes {
	int64_t seq[16];
	char id[16][BGRUN_EVENT_ID_MAX + 1];
	char result[16][16];
	char argv[16][64];
	size_t n;
};

static int collect_change(void *data, const struct bgrun_store_change *c)
{
	struct t_changes *ch = data;

	ASSERT(ch->n < 16);
	ch->seq[ch->n] = c->seq;
	(void)snprintf(ch->id[ch->n], sizeof(ch->id[0]), "%s", c->ev.id);
	(void)snprintf(ch->result[ch->n], sizeof(ch->result[0]), "%s",
		       c->ev.result != NULL ? c->ev.result : "null");
	ASSERT(c->ev.argv == NULL);
	(void)snprintf(ch->argv[ch->n], sizeof(ch->argv[0]), "%s",
		       c->argv_json != NULL ? c->argv_json : "null");
	ASSERT(c->recorded_ns > 0 && c->time_ns > 0);
	ch->n++;
	return 0;
}

static struct t_changes changes_after(struct bgrun_store *s, int64_t after)
{
	struct t_changes ch = { .n = 0 };

	ASSERT_OK(bgrun_store_changes(s, after, 0, collect_change, &ch));
	for (size_t i = 1; i < ch.n; i++)
		ASSERT(ch.seq[i] > ch.seq[i - 1]);
	return ch;
}

void case_changes(void)
{
	char *db = t_path(t_tmpdir(), "events.db");
	struct bgrun_event evs[3], late;
	struct bgrun_store *s, *ro;
	struct t_changes ch;
	int64_t last = -1, cur = -1, deleted = 0, mark;

	ASSERT_OK(t_open(db, 0, &s));
	ASSERT_OK(bgrun_store_last_change(s, &last));
	ASSERT_EQ(last, 0);
	for (int i = 0; i < 3; i++) {
		bgrun_event_init(&evs[i], "commandfinish", "bgrun");
		evs[i].start_ns = T0 + i * SEC;
		evs[i].result = i == 0 ? BGRUN_RESULT_RUNNING : BGRUN_RESULT_SUCCESS;
	}
	evs[2].argv = (const char *const[]){ "ls", "\xff", NULL };
	ASSERT_EQ(bgrun_store_put_batch(s, evs, 3), 3);
	ch = changes_after(s, 0);
	ASSERT_EQ(ch.n, 3);
	for (int i = 0; i < 3; i++)
		ASSERT_STR_EQ(ch.id[i], evs[i].id);
	ASSERT_STR_EQ(ch.result[0], "running");
	ASSERT_STR_EQ(ch.argv[0], "null");
	ASSERT_STR_EQ(ch.argv[2], "[\"ls\",{\"hex\":\"FF\"}]");
	ASSERT_OK(bgrun_store_last_change(s, &last));
	ASSERT_EQ(last, ch.seq[2]);
	mark = last;

	/* A write that changes nothing is no change; one that does is. */
	ASSERT_EQ(bgrun_store_put(s, &evs[1]), 0);
	ASSERT_EQ(changes_after(s, mark).n, 0);
	evs[0].result = BGRUN_RESULT_FAILED;
	evs[0].exit_code = 3;
	{
		/*
		 * The change, then a write that changes nothing, in one
		 * batch (a spool replayed with events stored already): the
		 * counter is the change's number, where a reader of changes
		 * that read them all stands.
		 */
		struct bgrun_event two[2] = { evs[0], evs[1] };

		ASSERT_EQ(bgrun_store_put_batch(s, two, 2), 1);
	}
	ch = changes_after(s, mark);
	ASSERT_EQ(ch.n, 1);
	ASSERT_STR_EQ(ch.id[0], evs[0].id);
	ASSERT_STR_EQ(ch.result[0], "failed");
	ASSERT_OK(bgrun_store_last_change(s, &last));
	ASSERT_EQ(last, ch.seq[0]);
	ASSERT_EQ(ch.seq[0], mark + 1);
	/* It moved: after 0, it now comes last, once. */
	ch = changes_after(s, 0);
	ASSERT_EQ(ch.n, 3);
	ASSERT_STR_EQ(ch.id[2], evs[0].id);
	/* A limit takes the first ones. */
	{
		struct t_changes two = { .n = 0 };

		ASSERT_OK(bgrun_store_changes(s, 0, 2, collect_change, &two));
		ASSERT_EQ(two.n, 2);
		ASSERT_STR_EQ(two.id[0], evs[1].id);
	}

	/* Marking lost is a change, of the stored result. */
	bgrun_event_init(&late, "commandfinish", "bgrun");
	late.result = BGRUN_RESULT_RUNNING;
	late.start_ns = T0 - 100 * SEC; /* old: the first to prune */
	late.boot_id = "00000000-0000-4000-8000-000000000000";
	ASSERT_EQ(bgrun_store_put(s, &late), 1);
	ASSERT_OK(bgrun_store_last_change(s, &mark));
	ASSERT_OK(bgrun_store_mark_lost(s, &cur));
	ASSERT_EQ(cur, 1);
	ch = changes_after(s, mark);
	ASSERT_EQ(ch.n, 1);
	ASSERT_STR_EQ(ch.id[0], late.id);
	ASSERT_STR_EQ(ch.result[0], "lost");

	/* Pruning the latest change takes no number back. */
	ASSERT_OK(bgrun_store_last_change(s, &last));
	ASSERT_OK(bgrun_store_prune(s, T0 - 50 * SEC, &deleted));
	ASSERT_EQ(deleted, 1);
	bgrun_event_init(&late, "commandfinish", "bgrun");
	ASSERT_EQ(bgrun_store_put(s, &late), 1);
	ch = changes_after(s, last);
	ASSERT_EQ(ch.n, 1);
	ASSERT(ch.seq[0] > last);

	/* Cursors: 0 until set; kept; another store reads them. */
	ASSERT_OK(bgrun_store_cursor_get(s, "pg", &cur));
	ASSERT_EQ(cur, 0);
	ASSERT_OK(bgrun_store_cursor_set(s, "pg", 7));
	ASSERT_OK(bgrun_store_cursor_set(s, "pg", 9));
	ASSERT_OK(bgrun_store_cursor_set(s, "other", 2));
	ASSERT_OK(t_open(db, BGRUN_STORE_READONLY, &ro));
	ASSERT_OK(bgrun_store_cursor_get(ro, "pg", &cur));
	ASSERT_EQ(cur, 9);
	ASSERT_EQ(bgrun_store_cursor_set(ro, "pg", 1), -EROFS);
	ASSERT_EQ(bgrun_store_cursor_get(ro, "", &cur), -EINVAL);
	ASSERT_EQ(changes_after(ro, 0).n, 4);
	bgrun_store_close(ro);
	bgrun_store_close(s);
	free(db);
}
